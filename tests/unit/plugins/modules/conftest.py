import os
import sys

# module_runner sits beside the tests that use it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
