"""Run every molecule scenario of the collection (extensions/molecule/) with ``molecule test`` and expect success."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIOS = sorted(
    name
    for name in os.listdir(os.path.join(ROOT, "extensions", "molecule"))
    if os.path.isfile(os.path.join(ROOT, "extensions", "molecule", name, "molecule.yml"))
)


def molecule_env():
    bin_dir = os.path.dirname(sys.executable)
    collections = os.path.join(ROOT, "build", "pytest-collections")
    return dict(
        os.environ,
        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
        ANSIBLE_COLLECTIONS_PATH=collections,
        PYTHONPATH=os.pathsep.join([ROOT, collections]),
        ANSIBLE_NOCOLOR="1",
        NO_COLOR="1",
        ANSIBLE_FORCE_COLOR="0",
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario):
    command = [os.path.join(os.path.dirname(sys.executable), "molecule"), "test", "-s", scenario]
    result = subprocess.run(
        command, cwd=ROOT, env=molecule_env(), capture_output=True, text=True, timeout=300, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
