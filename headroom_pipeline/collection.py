"""Make the collection's module_utils importable as ``ansible_collections.headroom.kafka``.

The pipeline ships inside the collection and applies the same rules as the modules (one implementation of each
rule in plugins/module_utils, shared test vectors). Installed, the collection already sits under
``.../ansible_collections/headroom/kafka`` and only that directory's grandparent's parent must be on sys.path; in a
source checkout the package is registered under that name without touching the file system.
"""

import importlib
import os
import sys
import types

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = "ansible_collections.headroom.kafka.plugins.module_utils.volume_limits"


def _package(name, path):
    """The package ``name`` (created when missing) with ``path`` on its search path."""
    module = sys.modules.get(name)
    if module is None:
        try:
            module = importlib.import_module(name)
        except ImportError:
            module = types.ModuleType(name)
            module.__path__ = []
            sys.modules[name] = module
    if path is not None and path not in list(module.__path__):
        module.__path__.append(path)
    parent, _dot, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


def ensure_importable() -> None:
    """Import-path setup for module_utils; idempotent and cheap after the first call."""
    try:
        importlib.import_module(PROBE)
        return
    except ImportError:
        pass
    parts = COLLECTION_ROOT.split(os.sep)
    if len(parts) > 3 and parts[-3] == "ansible_collections":
        sys.path.insert(0, os.sep.join(parts[:-3]))
    else:
        _package("ansible_collections", None)
        _package("ansible_collections.headroom", None)
        _package("ansible_collections.headroom.kafka", COLLECTION_ROOT)
    importlib.import_module(PROBE)
