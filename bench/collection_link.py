"""The link that makes the repository an installed collection for the benchmarks' ``ansible-playbook`` runs."""

import os


def ensure_collection_link(root, collections):
    """Link ``root`` as collections/ansible_collections/headroom/kafka unless that link exists: with ``collections`` as
    Ansible's collections path (or on sys.path) the repository is the collection headroom.kafka."""
    namespace = os.path.join(collections, "ansible_collections", "headroom")
    os.makedirs(namespace, exist_ok=True)
    link = os.path.join(namespace, "kafka")
    if not os.path.islink(link):
        os.symlink(root, link)
