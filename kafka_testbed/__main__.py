"""``python -m kafka_testbed``: see :mod:`kafka_testbed.cli`."""

import sys

from kafka_testbed.cli import main

sys.exit(main())
