"""What the benchmarks' ``ansible-playbook`` runs share: the link that makes the repository the installed collection,
the environment they run in and the command of a play on localhost."""

import os
import sys

PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def ensure_collection_link(root, collections):
    """Link ``root`` as collections/ansible_collections/headroom/kafka unless that link exists: with ``collections`` as
    Ansible's collections path (or on sys.path) the repository is the collection headroom.kafka."""
    namespace = os.path.join(collections, "ansible_collections", "headroom")
    os.makedirs(namespace, exist_ok=True)
    link = os.path.join(namespace, "kafka")
    if not os.path.islink(link):
        os.symlink(root, link)


def playbook_environment(collections, **extra):
    """os.environ with ``collections`` as Ansible's collections path, no colour or localhost warnings, no
    ANSIBLE_CONFIG of the caller's, and ``extra``."""
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=collections,
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        ANSIBLE_NOCOLOR="1",
        **extra,
    )
    env.pop("ANSIBLE_CONFIG", None)
    return env


def localhost_play(playbook):
    """The command that runs ``playbook`` on localhost, with this Python as the modules' interpreter."""
    return [PLAYBOOK, "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable, playbook]
