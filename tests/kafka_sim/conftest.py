"""Conformance tests of the test cluster: the helper modules next to this file (``clients``) are importable by name."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
