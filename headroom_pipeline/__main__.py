"""``python -m headroom_pipeline`` and ``spark-submit .../headroom_pipeline/__main__.py``: the command line."""

import os
import sys

if not __package__:
    # Run as a script (spark-submit): make the package importable from its parent directory.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from headroom_pipeline.cli import main  # noqa: E402  pylint: disable=wrong-import-position

if __name__ == "__main__":
    sys.exit(main())
