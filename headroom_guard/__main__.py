"""``python -m headroom_guard``: the command line (installed, also the console script ``headroom-guard``)."""

import sys

from headroom_guard.cli import main

if __name__ == "__main__":
    sys.exit(main())
