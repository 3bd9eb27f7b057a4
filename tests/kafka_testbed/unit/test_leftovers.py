"""What a test run leaves behind (kafka_testbed/leftovers.py): a process of a kind the tests start that carries the
run's id in its environment and appeared during the run is a leftover and is removed; one started by another run (a
test that runs pytest inside this one, a developer's cluster beside it) is not; tmpfs mounts count when they are named
after the run."""

import os
import subprocess
import sys
import time

import pytest

from kafka_testbed import leftovers, test_run

MOUNTS = """\
proc /proc proc rw,nosuid 0 0
tmpfs /run tmpfs rw,nosuid 0 0
headroom-test-run-abc /tmp/kafka-sim-x/cluster-1/broker-1/logdir-0 tmpfs rw,size=65536k 0 0
headroom-test-run-abc /tmp/pytest-of-root/with\\040space tmpfs rw 0 0
headroom-test-run-other /tmp/kafka-sim-y/cluster-1/broker-1/logdir-0 tmpfs rw 0 0
headroom-test-run-abc /tmp/kafka-sim-x/disk ext4 rw 0 0
"""


def test_the_run_s_tmpfs_volumes_only():
    assert leftovers.tmpfs_mounts(MOUNTS, test_run.mount_source("abc")) == {
        "/tmp/kafka-sim-x/cluster-1/broker-1/logdir-0",
        "/tmp/pytest-of-root/with space",
    }
    assert test_run.mount_source("abc") == "headroom-test-run-abc"


def census(processes=(), mounts=(), containers=(), networks=()):
    return leftovers.Census("abc", dict(processes), set(mounts), dict(containers), dict(networks))


def test_a_fleet_network_left_without_containers_is_a_leftover():
    before = census(networks={"n1": "headroom-old"})
    after = census(networks={"n1": "headroom-old", "n2": "headroom-new"})
    assert after.since(before).describe() == ["network headroom-new (n2)"]
    assert not after.since(after)


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
    assert after.since(before).describe() == [
        "container headroom-new-broker-1 (c2)",
        "a Kafka node (pid 10): java kafka.Kafka reused pid",
        "a Spark JVM (pid 11): java org.apache.spark.deploy.SparkSubmit",
        "tmpfs mount /tmp/b",
    ]
    assert after.since(after).describe() == []


def sleeper(run_id):
    """A process that looks like a Kafka node (its command line names kafka.Kafka), of the run ``run_id``."""
    environment = {"PATH": os.environ.get("PATH", "")}
    if run_id:
        environment[test_run.VARIABLE] = run_id
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", "kafka.Kafka", "server.properties"],
        env=environment,
        start_new_session=True,
    )


@pytest.fixture
def processes():
    started = []
    yield lambda run_id: started.append(sleeper(run_id)) or started[-1]
    for process in started:
        process.kill()
        process.wait()


def test_a_node_of_the_run_is_found_and_removed_and_one_of_another_run_is_not(processes):
    before = leftovers.Census.take("this-run")
    mine = processes("this-run")
    other_run = processes("another-run")
    no_run = processes(None)
    now = leftovers.Census.take("this-run")
    left = now.since(before)
    assert left.describe() == [
        f"a Kafka node (pid {mine.pid}): {sys.executable} -c import time; time.sleep(120) kafka.Kafka server.properties"
    ]
    left.remove()
    deadline = time.monotonic() + 10
    while mine.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mine.returncode is not None, "the leftover was killed"
    assert other_run.poll() is None and no_run.poll() is None, "what the run did not start is left alone"
