"""Which test run something belongs to: the run's controller sets ``HEADROOM_TEST_RUN_ID`` when it starts, every
worker and every process a test starts inherits it, the test clusters name their tmpfs volumes after it and the
fleets label their containers with it. So the end of a run can tell what it left behind from what another run on the
same machine (a test that runs pytest inside the run, a developer's run beside it) started."""

import os

VARIABLE = "HEADROOM_TEST_RUN_ID"
CONTAINER_LABEL = "headroom.test-run"
_MOUNT_PREFIX = "headroom-test-run-"


def current():
    """The id of the test run this process belongs to, or None outside a test run."""
    return os.environ.get(VARIABLE) or None


def mount_source(run_id=None):
    """The source name of a tmpfs volume a test cluster mounts (what /proc/mounts shows as its device)."""
    run_id = run_id or current()
    return _MOUNT_PREFIX + run_id if run_id else "tmpfs"


def container_labels():
    """docker run's label options that tie a container to the current test run (none outside one)."""
    run_id = current()
    return ["--label", f"{CONTAINER_LABEL}={run_id}"] if run_id else []


def environment_marker(run_id):
    """The bytes a process's /proc/PID/environ holds when it belongs to the run ``run_id``."""
    return f"{VARIABLE}={run_id}".encode()
