"""Run every molecule scenario of the collection (extensions/molecule/) with ``molecule test`` and expect success.

A scenario that starts a fleet of test hosts (its create step runs ``kafka_testbed hosts up``) takes turns with the
other fleets (kafka_testbed.lanes.scheduling_group). A scenario that runs past its time is stopped with everything it
started (molecule runs in a process group of its own), and ``molecule destroy`` removes its cluster or fleet, so that
a timeout leaves nothing behind."""

import os
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MOLECULE_DIR = os.path.join(ROOT, "extensions", "molecule")
SCENARIOS = sorted(
    name for name in os.listdir(MOLECULE_DIR) if os.path.isfile(os.path.join(MOLECULE_DIR, name, "molecule.yml"))
)
# molecule test of one scenario, at most: 2.5 times what it took in make test-fresh on two cores (hosts 207 s; on
# 2026-12-03, beside the fleet's first site.yml on the other worker, disk_guard 234 s and default 216 s, and default ran
# past 300 s the day after), and for the fleet of scenario hosts more: on one core (make test-one-core) it ran past
# 540 s, as its four containers' JVMs, sshd and Ansible share that core with the other worker. The test's own timeout
# (tests/conftest.py) leaves room for the destroy after it.
SCENARIO_SECONDS = {"hosts": 900}
DEFAULT_SCENARIO_SECONDS = 600
DESTROY_SECONDS = 120


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


def molecule(action, scenario, timeout):
    """``molecule ACTION -s SCENARIO`` in a process group of its own: (exit status, output), or (None, output) when
    it ran past ``timeout`` and was killed with everything it started."""
    command = [os.path.join(os.path.dirname(sys.executable), "molecule"), action, "-s", scenario]
    with subprocess.Popen(
        command,
        cwd=ROOT,
        env=molecule_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            output = process.communicate(timeout=timeout)[0]
            return process.returncode, output
        except BaseException as error:  # the timeout, or pytest's own timeout interrupting the wait
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            output = process.communicate()[0]
            if action != "destroy":
                molecule("destroy", scenario, DESTROY_SECONDS)
            if not isinstance(error, subprocess.TimeoutExpired):
                raise
            return None, output


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario):
    seconds = SCENARIO_SECONDS.get(scenario, DEFAULT_SCENARIO_SECONDS)
    status, output = molecule("test", scenario, seconds)
    assert status is not None, f"molecule test -s {scenario} ran past {seconds} s (destroyed):\n{output[-20000:]}"
    assert status == 0, output[-20000:]
