"""What a test run leaves behind: the processes, tmpfs mounts and containers the tests started and did not remove.

``Census.take()`` lists them when the run starts; ``Census.leftovers(before)`` lists what is new at its end, once every
worker is done. The test run's plugin (``kafka_testbed.testing``) removes what is left (containers, processes,
mounts, the Docker daemon the fleets started) and fails the run, naming each thing: a fixture that failed or timed out
in its setup must still clean up, and a leak found only by the next run on the same machine is found too late.
"""

import os
import signal
import subprocess
import tempfile
import time

from kafka_testbed.hosts.docker import daemon_running, docker, stop_daemon_if_started
from kafka_testbed.hosts.fleet import LABEL
from kafka_testbed.hosts.image import IMAGE_DIR
from kafka_testbed.nodes import process_alive

# What the tests start, by a piece of its command line (a JVM by its main class).
PROCESS_KINDS = (
    ("a Kafka node", "kafka.Kafka"),
    ("a ZooKeeper node", "org.apache.zookeeper.server.quorum.QuorumPeerMain"),
    ("a Spark JVM", "org.apache.spark.deploy."),
    ("a Prometheus server", "prometheus --config.file="),
    ("the disk guard", "headroom_guard"),
    ("the disk guard", "headroom-guard"),
    ("a molecule run", "bin/molecule"),
    ("an Ansible play", "bin/ansible-playbook"),
    ("a Docker daemon", "dockerd"),
)
# A process the tests started has the test run's variables in its environment (the conftest sets the lane while a
# test runs, and every launcher inherits it): a cluster a developer starts by hand beside the run is not the run's.
TEST_MARKERS = (b"HEADROOM_TEST_LANE=", b"PYTEST_CURRENT_TEST=", b"PYTEST_XDIST_WORKER=")
# How long what is still stopping (a worker's Spark session, a node's controlled shutdown) may take to go
# (HEADROOM_LEFTOVER_GRACE sets another, for the test of this check).
GRACE_SECONDS = float(os.environ.get("HEADROOM_LEFTOVER_GRACE", "30"))


def _started_by_tests(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environment = handle.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    return any(b"\0" + marker in b"\0" + environment for marker in TEST_MARKERS)


def _processes():
    """{(pid, start time): (kind, command line)} of every process of a kind above that the tests started."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            with open(f"/proc/{name}/stat", encoding="utf-8") as handle:
                started = handle.read().rsplit(")", 1)[1].split()[19]
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
            continue
        kind = next((kind for kind, piece in PROCESS_KINDS if piece in command), None)
        if kind and process_alive(int(name)) and _started_by_tests(name):
            found[(int(name), started)] = (kind, command)
    return found


def tmpfs_mounts(mounts_text, roots):
    """The mount points of tmpfs filesystems below one of ``roots`` (where the test clusters mount their volumes), from
    the text of /proc/self/mounts."""
    mounts = set()
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "tmpfs":
            path = fields[1].replace("\\040", " ")
            if any(path.startswith(root.rstrip("/") + "/") for root in roots):
                mounts.add(path)
    return mounts


def _tmpfs_mounts(roots):
    with open("/proc/self/mounts", encoding="utf-8") as handle:
        return tmpfs_mounts(handle.read(), roots)


def _containers():
    """{container id: name} of the fleets' containers (none when no Docker daemon answers)."""
    if not daemon_running():
        return {}
    text = docker("ps", "-a", "--filter", f"label={LABEL}", "--format", "{{.ID}} {{.Names}}", check=False)
    return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)


class Census:
    """The processes, mounts and containers of the kinds the tests start, at one moment."""

    def __init__(self, roots):
        self.roots = tuple(roots)
        self.processes = {}
        self.mounts = set()
        self.containers = {}

    @classmethod
    def take(cls, roots=None):
        census = cls(roots or (tempfile.gettempdir(),))
        census.processes = _processes()
        census.mounts = _tmpfs_mounts(census.roots)
        census.containers = _containers()
        return census

    def leftovers(self, before):
        """What this census has that ``before`` had not, as sentences."""
        found = [
            f"container {name.strip()} ({cid})"
            for cid, name in sorted(self.containers.items())
            if cid not in before.containers
        ]
        found += [
            f"{kind} (pid {pid}): {command[:200]}"
            for (pid, started), (kind, command) in sorted(self.processes.items())
            if (pid, started) not in before.processes
        ]
        found += [f"tmpfs mount {path}" for path in sorted(self.mounts - before.mounts)]
        return found

    def new_processes(self, before):
        return [key for key in self.processes if key not in before.processes]


def collect_leftovers(before, grace=GRACE_SECONDS):
    """What the run left that ``before`` had not, after ``grace`` seconds for what is still stopping; the fleets'
    Docker daemon (started by the tests, kept for the whole run) is stopped first, once no container is left."""
    deadline = time.monotonic() + grace
    while True:
        now = Census.take(before.roots)
        if not now.containers:
            stop_fleet_daemon()
            now = Census.take(before.roots)
        found = now.leftovers(before)
        if not found or time.monotonic() >= deadline:
            return now, found
        time.sleep(1.0)


def stop_fleet_daemon():
    """Stop the Docker daemon the fleets started for the run, once no container of theirs is left."""
    stop_daemon_if_started(IMAGE_DIR, force=True)


def remove_leftovers(before, now):
    """Remove what ``now`` has that ``before`` had not: containers, then processes (SIGKILL), then mounts."""
    removed = [cid for cid in now.containers if cid not in before.containers]
    if removed:
        docker("rm", "-f", "-v", *removed, check=False, timeout=180)
    for pid, _started in now.new_processes(before):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for path in sorted(now.mounts - before.mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", path], capture_output=True, check=False)
