"""``python -m headroom_pipeline`` and ``spark-submit .../headroom_pipeline/__main__.py``: the command line (installed,
also the console script ``headroom-pipeline``)."""

import sys

from headroom_pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main())
