"""What a test run leaves behind: the processes, tmpfs mounts and containers its tests started and did not remove.

``Census.take(run_id)`` lists what belongs to the run ``run_id`` (``kafka_testbed.test_run``): processes of the kinds
the tests start whose environment carries the run's id, the test clusters' tmpfs volumes named after it, the fleets'
containers labelled with it. The run's controller takes one census when the run starts and one when every worker is
done (tests/conftest.py); whatever is new is removed and fails the run, by name: a fixture that failed or timed out in
its setup must still clean up, and a leak found only by the next run on the same machine is found too late. What
another run started (a test that runs pytest inside the run, a developer's cluster beside it) is never counted, and
never removed.
"""

import os
import signal
import subprocess
import time

from kafka_testbed import test_run
from kafka_testbed.hosts.docker import daemon_running, docker, started_daemon_pid, stop_daemon_if_started
from kafka_testbed.hosts.image import IMAGE_DIR

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
# How long what is still stopping (a worker's Spark session, a node's controlled shutdown) may take to go
# (HEADROOM_LEFTOVER_GRACE sets another, for the test of this check).
GRACE_SECONDS = float(os.environ.get("HEADROOM_LEFTOVER_GRACE", "30"))


def belongs_to(pid, run_id):
    """True when the process ``pid`` was started in the test run ``run_id`` (its environment says so)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environment = handle.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    return test_run.environment_marker(run_id) in environment.split(b"\0")


def _processes(run_id):
    """{(pid, start time): (kind, command line)} of every process of a kind above that belongs to the run."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            with open(f"/proc/{name}/stat", encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
            continue
        kind = next((kind for kind, piece in PROCESS_KINDS if piece in command), None)
        if kind and fields[0] != "Z" and belongs_to(name, run_id):
            found[(int(name), fields[19])] = (kind, command)
    return found


def tmpfs_mounts(mounts_text, source):
    """The mount points of the tmpfs filesystems named ``source``, from the text of /proc/self/mounts."""
    mounts = set()
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[0] == source and fields[2] == "tmpfs":
            mounts.add(fields[1].replace("\\040", " "))
    return mounts


def _tmpfs_mounts(run_id):
    with open("/proc/self/mounts", encoding="utf-8") as handle:
        return tmpfs_mounts(handle.read(), test_run.mount_source(run_id))


def _labelled(run_id, name_field, *listing):
    """{id: name} of the Docker objects ``docker LISTING`` lists with the run's label (none when no daemon answers)."""
    if not daemon_running():
        return {}
    label = f"label={test_run.CONTAINER_LABEL}={run_id}"
    text = docker(*listing, "--filter", label, "--format", f"{{{{.ID}}}} {{{{.{name_field}}}}}", check=False)
    return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)


def _containers(run_id):
    """{container id: name} of the run's fleet containers."""
    return _labelled(run_id, "Names", "ps", "-a")


def _networks(run_id):
    """{network id: name} of the run's fleet networks."""
    return _labelled(run_id, "Name", "network", "ls")


class Census:
    """The processes, mounts and containers of one test run at one moment."""

    def __init__(self, run_id, processes=None, mounts=None, containers=None, networks=None):  # pylint: disable=too-many-arguments
        self.run_id = run_id
        self.processes = processes or {}
        self.mounts = mounts or set()
        self.containers = containers or {}
        self.networks = networks or {}

    @classmethod
    def take(cls, run_id):
        return cls(run_id, _processes(run_id), _tmpfs_mounts(run_id), _containers(run_id), _networks(run_id))

    def since(self, before):
        """What this census has that ``before`` had not."""
        return Census(
            self.run_id,
            {key: value for key, value in self.processes.items() if key not in before.processes},
            self.mounts - before.mounts,
            {cid: name for cid, name in self.containers.items() if cid not in before.containers},
            {nid: name for nid, name in self.networks.items() if nid not in before.networks},
        )

    def __bool__(self):
        return bool(self.processes or self.mounts or self.containers or self.networks)

    def describe(self):
        """Each thing of the census, as a sentence."""
        found = [f"container {name.strip()} ({cid})" for cid, name in sorted(self.containers.items())]
        found += [f"network {name.strip()} ({nid})" for nid, name in sorted(self.networks.items())]
        found += [
            f"{kind} (pid {pid}): {command[:200]}"
            for (pid, _started), (kind, command) in sorted(self.processes.items())
        ]
        return found + [f"tmpfs mount {path}" for path in sorted(self.mounts)]

    def remove(self):
        """Remove every thing of the census: containers and their networks, then processes (SIGKILL), then mounts."""
        if self.containers:
            docker("rm", "-f", "-v", *self.containers, check=False, timeout=180)
        if self.networks:
            docker("network", "rm", *self.networks, check=False)
        for pid, _started in self.processes:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for path in sorted(self.mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", path], capture_output=True, check=False)


def stop_fleet_daemon(run_id):
    """Stop the Docker daemon the run's fleets started (they leave it to the run's end: HEADROOM_KEEP_DOCKERD), once
    no container of theirs is left; a daemon another run started is left alone."""
    pid = started_daemon_pid(IMAGE_DIR)
    if pid is not None and belongs_to(pid, run_id):
        stop_daemon_if_started(IMAGE_DIR, force=True)


def collect_leftovers(before, grace=GRACE_SECONDS):
    """What the run left that ``before`` had not (a Census), after ``grace`` seconds for what is still stopping; the
    run's Docker daemon is stopped first, once no container is left."""
    deadline = time.monotonic() + grace
    while True:
        now = Census.take(before.run_id)
        if not now.containers:
            stop_fleet_daemon(before.run_id)
            now = Census.take(before.run_id)
        left = now.since(before)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(1.0)
