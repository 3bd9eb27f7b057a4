"""Make the collection importable as ``ansible_collections.headroom.kafka`` and the test cluster package importable."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")


def _link_collection():
    namespace = os.path.join(COLLECTIONS, "ansible_collections", "headroom")
    link = os.path.join(namespace, "kafka")
    os.makedirs(namespace, exist_ok=True)
    if not os.path.islink(link):
        try:
            os.symlink(ROOT, link)
        except FileExistsError:
            pass
    for path in (COLLECTIONS, ROOT):
        if path not in sys.path:
            sys.path.insert(0, path)


_link_collection()
