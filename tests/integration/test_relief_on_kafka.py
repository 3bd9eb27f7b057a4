"""Relief on real brokers with two log dirs each, one cluster for both ways users run it.

- playbooks/relieve.yml, alone and as site.yml's tag relieve: check mode shows the plan and moves nothing, a run moves
  the replica off broker 2's filling log dir into its other one, and a run after it finds nothing to relieve. A missing
  kafka_relief stops the play before the cluster is read.
- The disk guard's relieve option, as the guard service runs it: broker 3's first log dir passes relieve_at, the guard
  moves its replica into the broker's other log dir over its next decisions, and the factor never leaves 1 (the
  metrics the guard serves at every decision say so).
- A refusal on Kafka's own answers: broker 1's filling log dir whose replica could only leave for another broker, where
  its partition could fall below min.insync.replicas while it copies, is reported blocked and nothing moves."""

import os
import re
import signal
import subprocess
import sys

import pytest
import yaml
from ansible_plays import ROOT, changed_counts, run_play, run_site, write_inventory
from ansible_run import run_module
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from relief_setup_runs import MIB, free_bytes, holds, setup

from kafka_testbed.client_config import confluent_config
from kafka_testbed.testing import module_cluster, skip_without_own_volumes
from kafka_testbed.traffic import wait_until

RELIEVE = os.path.join(ROOT, "playbooks", "relieve.yml")
TOPIC = "relieve-play"
RELIEVE_TASKS = {
    "Check kafka_relief before the cluster is read",
    "Move replicas off every log dir at its relief threshold",
    "Show each move",
    "Show why a log dir could not reach its target",
}


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


def metric(text, name):
    """The value of an unlabelled sample, or of the sum of a labelled family's samples (None when absent)."""
    values = [float(v) for v in re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)]
    return sum(values) if values else None


def test_the_guard_relieves_a_filling_log_dir_inside_its_broker_and_never_throttles(relief_cluster, tmp_path):
    cluster = relief_cluster
    skip_without_own_volumes(cluster)
    first, second = sorted(next(b for b in cluster.info["brokers"] if b["id"] == 3)["log_dirs"])
    # 3 MiB more than broker 2's first log dir holds in the playbook's test: its thresholds never reach this one.
    setup("place", cluster.info["bootstrap_servers"], "guard-relief", 3, first, 6)
    setup("fill", first, 17)
    free = free_bytes(first)
    config = tmp_path / "guard.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "bootstrap_servers": cluster.info["bootstrap_servers"].split(","),
                "min_available_bytes": MIB,
                "default_producer_byte_rate": 104857600,
                "relieve": {
                    "relieve_at": {"type": "min_free_bytes", "level": free + MIB},
                    "relieve_to": {"type": "min_free_bytes", "level": free + 4 * MIB},
                    "settle_time": "PT5S",
                },
            }
        ),
        encoding="utf-8",
    )
    metrics = tmp_path / "guard.prom"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headroom_guard",
            "--config",
            str(config),
            "--interval",
            "1",
            "--metrics-file",
            str(metrics),
            "--state-file",
            str(tmp_path / "state.json"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    factors = []

    def settled():
        text = metrics.read_text(encoding="utf-8") if metrics.exists() else ""
        if metric(text, "headroom_guard_throttle_factor") is not None:
            factors.append(metric(text, "headroom_guard_throttle_factor"))
        finished = metric(text, 'headroom_guard_relief_steps_total{action="finished"}') or 0
        idle = metric(text, 'headroom_guard_relief_steps_total{action="idle"}') or 0
        return text if finished >= 1 and idle >= 2 else None

    try:
        text = wait_until(settled, 180, interval=0.2, what="the guard's relief to finish and find nothing left")
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err[-5000:]
    assert "relief started 1 move(s)" in err and f"guard-relief-0 broker 3 {first} -> broker 3 {second}" in err, err
    assert "relief finished" in err, err
    assert holds(second, "guard-relief") and not holds(first, "guard-relief")
    assert metric(text, 'headroom_guard_relief_steps_total{action="started"}') == 1, "one plan, started once"
    assert metric(text, "headroom_guard_relief_moved_bytes_total") >= 6 * MIB
    assert metric(text, "headroom_guard_relief_moving_bytes") == 0
    assert factors and set(factors) == {1.0}, f"the factor left 1 while relief ran: {sorted(set(factors))}"


def test_a_move_that_could_break_min_insync_replicas_is_refused_and_nothing_changes(relief_cluster, tmp_path):
    """Broker 1's first log dir past relieve_at, its second without room: the replica could only go to another
    broker, and its partition (2 replicas, min.insync.replicas 2) would then depend on one follower catching up."""
    cluster = relief_cluster
    skip_without_own_volumes(cluster)
    first, second = sorted(next(b for b in cluster.info["brokers"] if b["id"] == 1)["log_dirs"])
    setup("place", cluster.info["bootstrap_servers"], "min-isr", "1,2", first, 4)
    client = AdminClient(confluent_config(cluster))  # kept referenced until the result
    resource = ConfigResource(
        ResourceType.TOPIC,
        "min-isr",
        incremental_configs=[ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET)],
    )
    client.incremental_alter_configs([resource])[resource].result(30)
    setup("fill", first, 16)
    setup("leave", second, 3)
    free = free_bytes(first)
    result = run_module(
        "log_dir_relief",
        {
            "bootstrap_servers": cluster.info["bootstrap_servers"].split(","),
            "relieve_at": {"type": "min_free_bytes", "level": free + MIB},
            "relieve_to": {"type": "min_free_bytes", "level": free + 3 * MIB},
        },
        str(tmp_path),
    )
    assert result["changed"] is False and result["moves"] == [], result
    (blocked,) = [item for item in result["plan"]["blocked"] if item["log_dir"] == first]
    assert "min.insync.replicas" in blocked["reason"], blocked
    assert holds(first, "min-isr"), "the replica stayed where it was"
