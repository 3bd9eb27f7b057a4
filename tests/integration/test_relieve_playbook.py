"""playbooks/relieve.yml, alone and as site.yml's tag relieve, on real brokers with two log dirs each: check mode shows
the plan and moves nothing, a run moves the replica off the filling log dir into the broker's other one, and a run
after it finds nothing to relieve. A missing kafka_relief stops the play before the cluster is read."""

import json
import os
import re
import subprocess
import sys

import pytest
from ansible_plays import ROOT, changed_counts, run_play, run_site, write_inventory

from kafka_testbed.testing import module_cluster, skip_without_own_volumes
from kafka_testbed.traffic import wait_until

SETUP = os.path.join(ROOT, "tests", "integration", "targets", "log_dir_relief", "files", "relief_setup.py")
RELIEVE = os.path.join(ROOT, "playbooks", "relieve.yml")
MIB = 1 << 20
TOPIC = "relieve-play"
RELIEVE_TASKS = {
    "Check kafka_relief before the cluster is read",
    "Move replicas off every log dir at its relief threshold",
    "Show each move",
    "Show why a log dir could not reach its target",
}


def setup(*args):
    done = subprocess.run(
        [sys.executable, SETUP, *map(str, args)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def free_bytes(path):
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def holds(log_dir, topic):
    """True when ``log_dir`` holds the partition's directory (not a future or deleted one)."""
    return os.path.isdir(os.path.join(log_dir, f"{topic}-0"))


@pytest.fixture(scope="module")
def relief_cluster(kafka_cluster_root):
    # The old replica's files go 1 s after a move (Kafka's default is 60 s), so that the freed space shows at once.
    yield from module_cluster(
        kafka_cluster_root,
        3,
        engine="kafka",
        log_dirs_per_broker=2,
        volume_size="32M",
        extra_properties={"log.segment.delete.delay.ms": 1000},
    )


@pytest.fixture(scope="module")
def filling(relief_cluster):
    """Broker 2's first log dir holds a 6 MiB replica of TOPIC and 14 MiB of other data; its second log dir is empty."""
    cluster = relief_cluster
    skip_without_own_volumes(cluster)
    first, second = sorted(next(b for b in cluster.info["brokers"] if b["id"] == 2)["log_dirs"])
    setup("place", cluster.info["bootstrap_servers"], TOPIC, 2, first, 6)
    setup("fill", first, 14)
    free = free_bytes(first)
    relief = {
        "relieve_at": {"type": "min_free_bytes", "level": free + MIB},
        "relieve_to": {"type": "min_free_bytes", "level": free + 4 * MIB},
        "timeout": 240,
    }
    return {"cluster": cluster, "first": first, "second": second, "relief": relief}


def run_relieve(inventory, *args):
    return run_play(inventory, RELIEVE, *args)


def test_the_relieve_tag_moves_the_replica_off_the_filling_log_dir_and_a_second_run_changes_nothing(filling, tmp_path):
    cluster, first, second = filling["cluster"], filling["first"], filling["second"]
    inventory = write_inventory(cluster, tmp_path, {"kafka_relief": filling["relief"]})

    preview = run_site(inventory, "--tags", "relieve", "--check", "--diff")
    assert preview.returncode == 0, preview.stdout[-10000:]
    assert f"{TOPIC}-0: " in preview.stdout and "(planned only: check mode)" in preview.stdout, preview.stdout[-5000:]
    assert f"to broker 2 {second}" in preview.stdout, preview.stdout[-5000:]
    # Ansible checks each role's arguments whatever the tags (those tasks carry the tag always); nothing else runs.
    tasks = {
        task
        for task in re.findall(r"^TASK \[([^\]]+)\]", preview.stdout, re.M)
        if "Validating arguments against arg spec" not in task
    }
    assert tasks == RELIEVE_TASKS, f"the tag runs relief alone: {sorted(tasks)}"
    assert holds(first, TOPIC) and not holds(second, TOPIC), "check mode moved nothing"

    relieved = run_site(inventory, "--tags", "relieve")
    assert relieved.returncode == 0, relieved.stdout[-10000:]
    assert sum(changed_counts(relieved.stdout).values()) == 1, relieved.stdout[-5000:]
    assert holds(second, TOPIC) and not holds(first, TOPIC), relieved.stdout[-5000:]
    target = filling["relief"]["relieve_to"]["level"]
    wait_until(
        lambda: free_bytes(first) >= target,
        60,
        what=f"{first} back above {target} bytes free once the old replica's files are deleted",
    )

    again = run_relieve(inventory)
    assert again.returncode == 0, again.stdout[-10000:]
    assert set(changed_counts(again.stdout).values()) == {0}, again.stdout[-5000:]


def test_a_play_without_kafka_relief_stops_before_the_cluster_is_read(filling, tmp_path):
    inventory = write_inventory(
        filling["cluster"], tmp_path, {"kafka_connection": {"bootstrap_servers": ["nowhere:1"]}}
    )
    refused = run_relieve(inventory)
    assert refused.returncode != 0
    assert "kafka_relief must be a mapping with relieve_at and relieve_to" in refused.stdout, refused.stdout[-5000:]
    assert "Nothing was changed" in refused.stdout
