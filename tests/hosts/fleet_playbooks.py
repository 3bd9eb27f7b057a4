"""How the fleet tests run Ansible: from this machine, as a user's control node, against the fleet's inventory, with
the collection installed from its Galaxy artifact.

A module of its own (not conftest): test files of several directories import helpers by module name, and only one
module can be called conftest.
"""

import atexit
import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
# The collection's playbooks as its users run them once it is installed: by name, from the collections path.
SITE = "headroom.kafka.site"
ROLL = "headroom.kafka.rolling_restart"
RELIEVE = "headroom.kafka.relieve"
_QUIET = {"capture_output": True, "text": True, "timeout": 300}


@functools.cache
def galaxy_artifact():
    """This checkout's Galaxy artifact, built with ansible-galaxy once per test process (removed at its end)."""
    work = tempfile.mkdtemp(prefix="collection-artifact-")
    atexit.register(shutil.rmtree, work, True)
    galaxy = os.path.join(BIN, "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", ROOT, "--output-path", work], check=True, **_QUIET)
    (artifact,) = glob.glob(os.path.join(work, "headroom-kafka-*.tar.gz"))
    return artifact


@functools.cache
def installed_collections():
    """A collections path that holds the collection as its users install it: the Galaxy artifact installed with
    ansible-galaxy into an empty path (once per test process, removed at its end). The fleet tests run the playbooks
    and roles from there, not from the checkout, so what the artifact leaves out fails them."""
    work = tempfile.mkdtemp(prefix="installed-collection-")
    atexit.register(shutil.rmtree, work, True)
    path = os.path.join(work, "collections")
    galaxy = os.path.join(BIN, "ansible-galaxy")
    environment = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=path)
    install = [galaxy, "collection", "install", galaxy_artifact(), "-p", path]
    subprocess.run(install, env=environment, check=True, **_QUIET)
    return path


def ansible_env(**extra):
    return dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=installed_collections(),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="True",
        **extra,
    )


def changed_counts(stdout):
    """{host: changed=} of a playbook's recap."""
    return {host: int(changed) for host, changed in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", stdout, re.M)}


def run_playbook(inventories, playbook=SITE, *args, timeout=1200):
    """ansible-playbook as a user runs it from the control node, with one inventory or several layered; its timeout
    is under the longest test's own (LONG_TESTS)."""
    command = playbook_command(os.path.join(BIN, "ansible-playbook"), inventories, playbook, *args)
    return subprocess.run(command, env=ansible_env(), capture_output=True, text=True, timeout=timeout, check=False)


def playbook_command(ansible_playbook, inventories, playbook=SITE, *args):
    """``ansible_playbook`` (this venv's, or the one on an execution environment's PATH) with one inventory or
    several layered."""
    inventories = [inventories] if isinstance(inventories, str) else inventories
    return [ansible_playbook, *(option for inventory in inventories for option in ("-i", inventory)), playbook, *args]


def run_ansible(inventory, pattern, module, args="", *options):
    command = [os.path.join(BIN, "ansible"), "-i", inventory, pattern, "-m", module]
    if args:
        command += ["-a", args]
    return subprocess.run(
        [*command, *options], env=ansible_env(), capture_output=True, text=True, timeout=300, check=False
    )
