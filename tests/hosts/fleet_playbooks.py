"""How the fleet tests run Ansible: from this machine, as a user's control node, against the fleet's inventory.

A module of its own (not conftest): test files of several directories import helpers by module name, and only one
module can be called conftest.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
SITE = os.path.join(ROOT, "playbooks", "site.yml")
ROLL = os.path.join(ROOT, "playbooks", "rolling_restart.yml")
RELIEVE = os.path.join(ROOT, "playbooks", "relieve.yml")


def ansible_env(**extra):
    return dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="True",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **extra,
    )


def run_playbook(inventories, playbook=SITE, *args, timeout=1200):
    """ansible-playbook as a user runs it from the control node, with one inventory or several layered; its timeout
    is under the longest test's own (LONG_TESTS)."""
    inventories = [inventories] if isinstance(inventories, str) else inventories
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook")]
    for inventory in inventories:
        command += ["-i", inventory]
    command += [playbook, *args]
    return subprocess.run(command, env=ansible_env(), capture_output=True, text=True, timeout=timeout, check=False)


def run_ansible(inventory, pattern, module, args="", *options):
    command = [os.path.join(os.path.dirname(sys.executable), "ansible"), "-i", inventory, pattern, "-m", module]
    if args:
        command += ["-a", args]
    return subprocess.run(
        [*command, *options], env=ansible_env(), capture_output=True, text=True, timeout=300, check=False
    )
