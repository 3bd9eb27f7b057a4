"""The Docker engine the fleet runs on: found running, or started here and stopped again by the same caller.

A fresh machine has Debian's ``docker.io`` (client and ``dockerd``) but no daemon running and no registry to pull
from; the fleet only imports and builds its own images.
"""

import os
import shutil
import subprocess
import time

from kafka_testbed.nodes import ClusterError, process_alive

DAEMON_START_TIMEOUT = 60.0
# A daemon this package started records its pid here, so that whoever stops the last fleet can stop it too.
_STARTED_FILE = "dockerd.pid"
# Set by a caller that runs several fleets at once (the test suite's workers): a fleet's down then leaves the daemon
# to that caller, which stops it once at the end ('hosts stop-daemon'); otherwise one worker could stop it while
# another starts a fleet.
KEEP_VARIABLE = "HEADROOM_KEEP_DOCKERD"
# A Docker store of its own for the daemon started here (images, containers, its state and socket below it), as on a
# machine that never built an image: 'make test-fresh' sets it, with DOCKER_HOST on the socket below it.
ROOT_VARIABLE = "HEADROOM_DOCKER_ROOT"


def client_environment():
    """The environment of a docker client here, ours or one a tool runs (ansible-builder): Docker's classic builder,
    which every image of the tests is built with."""
    return dict(os.environ, DOCKER_BUILDKIT="0")


def docker(*args, check=True, input_text=None, timeout=300.0):
    """Run ``docker ARGS``; returns its standard output. A failure raises ClusterError with docker's message."""
    try:
        result = subprocess.run(
            ["docker", *args],
            input=input_text,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=client_environment(),
        )
    except subprocess.TimeoutExpired as error:
        raise ClusterError(f"docker {' '.join(args[:3])} did not finish within {timeout:.0f}s") from error
    if check and result.returncode != 0:
        raise ClusterError(f"docker {' '.join(args[:3])} failed: {(result.stderr or result.stdout).strip()[-2000:]}")
    return result.stdout


def daemon_running():
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0


def ensure_daemon(state_dir):
    """A running Docker daemon; starts ``dockerd`` when none answers and records that it did (in ``state_dir``)."""
    if daemon_running():
        return
    dockerd = shutil.which("dockerd") or ("/usr/sbin/dockerd" if os.path.exists("/usr/sbin/dockerd") else None)
    if not shutil.which("docker") or not dockerd:
        raise ClusterError(
            "no Docker engine: the test hosts need Debian's docker.io package (apt-get install docker.io); "
            "'make hosts-prerequisites' installs it"
        )
    os.makedirs(state_dir, exist_ok=True)
    log_path = os.path.join(state_dir, "dockerd.log")
    with open(log_path, "ab") as log:
        process = subprocess.Popen(  # pylint: disable=consider-using-with  # the daemon outlives this call
            daemon_command(dockerd),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + DAEMON_START_TIMEOUT
    while not daemon_running():
        if process.poll() is not None or time.monotonic() > deadline:
            with open(log_path, encoding="utf-8", errors="replace") as handle:
                last = handle.read()[-2000:]
            raise ClusterError(f"dockerd did not start (log {log_path}):\n{last}")
        time.sleep(0.2)
    with open(os.path.join(state_dir, _STARTED_FILE), "w", encoding="utf-8") as handle:
        handle.write(str(process.pid))


def daemon_command(dockerd):
    """dockerd's command line: the machine's default store, or the one below ``HEADROOM_DOCKER_ROOT``."""
    root = os.environ.get(ROOT_VARIABLE)
    if not root:
        return [dockerd]
    host = os.environ.get("DOCKER_HOST", "")
    if not host.startswith("unix://"):
        raise ClusterError(f"{ROOT_VARIABLE}={root} needs DOCKER_HOST set to a unix:// socket for the daemon's clients")
    paths = {"data": os.path.join(root, "data"), "exec": os.path.join(root, "exec")}
    for path in paths.values():
        os.makedirs(path, exist_ok=True)
    return [
        dockerd,
        "--data-root",
        paths["data"],
        "--exec-root",
        paths["exec"],
        "--pidfile",
        os.path.join(root, "dockerd.pid"),
        "--host",
        host,
    ]


def started_daemon_pid(state_dir):
    """The pid of the daemon ``ensure_daemon`` started with this ``state_dir``, or None when it started none."""
    try:
        with open(os.path.join(state_dir, _STARTED_FILE), encoding="utf-8") as handle:
            return int(handle.read().strip() or 0)
    except (FileNotFoundError, ValueError):
        return None


def stop_daemon_if_started(state_dir, force=False):
    """Stop the daemon ``ensure_daemon`` started with this ``state_dir``, once no container of ours is left (unless
    ``HEADROOM_KEEP_DOCKERD`` leaves that to the caller and ``force`` is false)."""
    path = os.path.join(state_dir, _STARTED_FILE)
    pid = started_daemon_pid(state_dir)
    if pid is None or (os.environ.get(KEEP_VARIABLE) and not force):
        return False
    if docker("ps", "-q", "--filter", "label=headroom.fleet", check=False).strip():
        return False
    os.remove(path)
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
            if handle.read().strip() != "dockerd":
                return False  # that daemon is gone and its pid belongs to another process now
        os.kill(pid, 15)
    except FileNotFoundError:
        return False
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + 30
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if process_alive(pid):
        os.kill(pid, 9)
    return True
