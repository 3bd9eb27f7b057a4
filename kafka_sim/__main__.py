"""``python -m kafka_sim``: see :mod:`kafka_sim.cli`."""

import sys

from kafka_sim.cli import main

sys.exit(main())
