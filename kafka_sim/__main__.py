"""``python -m kafka_sim``: the same command line as ``python -m kafka_testbed``, under its former name."""

import sys

from kafka_testbed.cli import main

if __name__ == "__main__":
    sys.exit(main())
