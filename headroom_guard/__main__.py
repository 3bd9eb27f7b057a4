"""``python -m headroom_guard``: the command line (the wheel's entry point is ``headroom-guard``)."""

import importlib
import sys

from headroom_guard.cli import main

# Installed, the wheel holds the collection's module_utils under their own name; in a source checkout of the collection
# (the repository root is the collection root) they are importable only through the pipeline's shim, which registers
# the checkout under that name. Never used when the import works: an installed guard has no headroom_pipeline.
try:
    importlib.import_module("ansible_collections.headroom.kafka.plugins.module_utils.guard_options")
except ImportError:
    try:
        from headroom_pipeline.collection import ensure_importable
    except ImportError:
        pass  # neither installed nor a checkout: main() says what cannot be imported
    else:
        ensure_importable()

if __name__ == "__main__":
    sys.exit(main())
