"""``python -m headroom_guard``: the command line."""

import sys

from headroom_guard.cli import main

if __name__ == "__main__":
    sys.exit(main())
