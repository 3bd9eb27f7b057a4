"""What a test run leaves behind (kafka_testbed/leftovers.py): a process of a kind the tests start, with the test run's
variables in its environment, that appeared during the run is a leftover and is removed; one started outside the run
(a developer's cluster beside it) is not; tmpfs mounts count below the roots the clusters mount in."""

import os
import subprocess
import sys
import time

import pytest

from kafka_testbed import leftovers

MOUNTS = """\
proc /proc proc rw,nosuid 0 0
tmpfs /run tmpfs rw,nosuid 0 0
tmpfs /tmp/kafka-sim-x/cluster-1/broker-1/logdir-0 tmpfs rw,size=65536k 0 0
tmpfs /tmp/pytest-of-root/with\\040space tmpfs rw 0 0
/dev/vda /tmp/kafka-sim-x/disk ext4 rw 0 0
tmpfs /tmpother/logdir tmpfs rw 0 0
"""


def test_tmpfs_mounts_below_the_roots_only():
    assert leftovers.tmpfs_mounts(MOUNTS, ["/tmp"]) == {
        "/tmp/kafka-sim-x/cluster-1/broker-1/logdir-0",
        "/tmp/pytest-of-root/with space",
    }
    assert leftovers.tmpfs_mounts(MOUNTS, ["/tmp/pytest-of-root/"]) == {"/tmp/pytest-of-root/with space"}


def census(processes=(), mounts=(), containers=()):
    taken = leftovers.Census(["/tmp"])
    taken.processes = dict(processes)
    taken.mounts = set(mounts)
    taken.containers = dict(containers)
    return taken


def test_only_what_is_new_is_left_over():
    before = census(
        processes={(10, "1"): ("a Kafka node", "java kafka.Kafka old")},
        mounts={"/tmp/a"},
        containers={"c1": "headroom-old-broker-1"},
    )
    after = census(
        processes={
            (10, "1"): ("a Kafka node", "java kafka.Kafka old"),
            (10, "9"): ("a Kafka node", "java kafka.Kafka reused pid"),
            (11, "2"): ("a Spark JVM", "java org.apache.spark.deploy.SparkSubmit"),
        },
        mounts={"/tmp/a", "/tmp/b"},
        containers={"c1": "headroom-old-broker-1", "c2": "headroom-new-broker-1"},
    )
    assert after.leftovers(before) == [
        "container headroom-new-broker-1 (c2)",
        "a Kafka node (pid 10): java kafka.Kafka reused pid",
        "a Spark JVM (pid 11): java org.apache.spark.deploy.SparkSubmit",
        "tmpfs mount /tmp/b",
    ]
    assert after.leftovers(after) == []


def sleeper(environment):
    """A process that looks like a Kafka node (its command line names kafka.Kafka)."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "kafka.Kafka", "server.properties"],
        env=environment,
        start_new_session=True,
    )


@pytest.fixture
def processes():
    started = []
    yield lambda environment: started.append(sleeper(environment)) or started[-1]
    for process in started:
        process.kill()
        process.wait()


def test_a_node_the_run_started_is_found_and_removed_and_one_started_beside_it_is_not(processes):
    before = leftovers.Census.take()
    mine = processes({"PATH": os.environ.get("PATH", ""), "HEADROOM_TEST_LANE": "integration"})
    theirs = processes({"PATH": os.environ.get("PATH", "")})
    now = leftovers.Census.take()
    found = now.leftovers(before)
    assert [line for line in found if f"(pid {mine.pid})" in line] == [
        f"a Kafka node (pid {mine.pid}): {sys.executable} -c import time; time.sleep(120) kafka.Kafka server.properties"
    ]
    assert not [line for line in found if f"(pid {theirs.pid})" in line]
    # Only this test's process is removed: the other worker of a full run may have started clusters meanwhile.
    now.processes = {key: value for key, value in now.processes.items() if key[0] == mine.pid}
    now.containers, now.mounts = before.containers, before.mounts
    leftovers.remove_leftovers(before, now)
    deadline = time.monotonic() + 10
    while mine.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mine.returncode is not None, "the leftover was killed"
    assert theirs.poll() is None, "what the run did not start is left alone"
