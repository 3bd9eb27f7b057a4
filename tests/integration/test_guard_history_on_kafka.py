"""The guard's history on real Kafka: while it decides every second and a volume fills and empties, it records each
decision and each complete observation in its history directory and publishes the observations to the compacted
snapshot topic; with --observe-only it decides and records but never touches the client quotas."""

import gzip
import json
import os
import subprocess
import sys

import pytest
import yaml
from confluent_kafka.admin import ConfigResource
from guard_processes import start_guard, stop_guard
from held_quotas import held_quotas

from ansible_collections.headroom.kafka.plugins.module_utils import snapshots
from ansible_collections.headroom.kafka.plugins.module_utils.internal_principals import PUBLISHER_CLIENT_ID
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter
from kafka_testbed.log_dir_probe import fill_volume
from kafka_testbed.testing import own_volume_cluster
from kafka_testbed.traffic import admin, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB = 1 << 20
VOLUME_SIZE = 64 * MIB
TOPIC = "__headroom_volume_usage"
# The publisher, as User:ANONYMOUS, kept out of the throttle at Kafka's unbounded rate (not a rate the guard scales).
PUBLISHER_ENTITY = {"user": "<default>", "client_id": PUBLISHER_CLIENT_ID}
GRADED = {
    "policy": "graded",
    "soft_limit": {"type": "min_free_bytes", "level": 32 * MIB},
    "hard_limit": {"type": "min_free_bytes", "level": 8 * MIB},
}


@pytest.fixture(scope="module")
def cluster(kafka_cluster_root):
    yield from own_volume_cluster(kafka_cluster_root, 2, VOLUME_SIZE)


@pytest.fixture
def filled(cluster):
    """Fill broker 2's first log dir to leave a given number of bytes; emptied again after the test."""
    volume = cluster.broker(2)["log_dirs"][0]
    filler = os.path.join(volume, "filler.bin")

    def fill(leave):
        if os.path.exists(filler):
            os.remove(filler)
        fill_volume(volume, leave=leave)

    try:
        yield fill
    finally:
        if os.path.exists(filler):
            os.remove(filler)


def write_config(path, cluster, **options):
    config = {
        "bootstrap_servers": cluster.info["bootstrap_servers"].split(","),
        "default_producer_byte_rate": 1 << 20,
        "quotas": [{"entity": {"user": "alice"}, "producer_byte_rate": 4 << 20}],
        **options,
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


def records(directory, kind):
    """Every record of the ``kind`` files, hour by hour: the hours already over (compressed) and the current one (a run
    that crosses an hour reads both)."""
    found = []
    for name in sorted(os.listdir(directory) if os.path.isdir(directory) else []):
        if name.startswith(kind + "-") and name.endswith((".jsonl", ".jsonl.gz")):
            opener = gzip.open if name.endswith(".gz") else open
            with opener(os.path.join(directory, name), "rt", encoding="utf-8") as handle:
                found.extend(json.loads(line) for line in handle if line.strip())
    return found


def states(directory):
    return [record["State"] for record in records(directory, "decisions")]


def test_the_guard_records_every_decision_and_observation_and_publishes_the_observations(cluster, filled, tmp_path):
    history = tmp_path / "history"
    config = write_config(tmp_path / "guard.yml", cluster, **GRADED)
    process = start_guard(
        "--config", config, "--interval", "1", "--history-dir", str(history), "--snapshot-topic", TOPIC
    )
    try:
        wait_until(lambda: states(history).count("OPEN") >= 3, 60, what="three OPEN decisions recorded")
        filled(20 * MIB)  # between the soft (32 MiB) and the hard (8 MiB) limit
        wait_until(lambda: states(history)[-3:] == ["THROTTLE"] * 3, 60, what="THROTTLE decisions recorded")
        filled(4 * MIB)  # past the hard limit
        wait_until(lambda: states(history)[-2:] == ["PAUSE"] * 2, 60, what="PAUSE decisions recorded")
        filled(VOLUME_SIZE)  # emptied again (fill_volume writes nothing when more than this is free)
        # The run ends here: every state and each change between them is in the history the pipeline reads below
        # (which is what its replay compares), so running on for minutes would add only more of the same decisions.
        wait_until(lambda: states(history)[-2:] == ["OPEN"] * 2, 60, what="OPEN decisions recorded again")
    finally:
        err = stop_guard(process)
    assert process.returncode == 0, err[-3000:]

    decisions = records(history, "decisions")
    observations = records(history, "snapshots")
    assert {record["Mode"] for record in decisions} == {"enforce"}
    assert all(record["Policy"] == "graded" and record["Complete"] for record in decisions)
    assert [d["State"] for d in decisions].index("THROTTLE") > 0
    changed = [d for d in decisions if d["QuotaChanges"]]
    scaled = [change for d in changed for change in d["QuotaChanges"] if change["entity"] != PUBLISHER_ENTITY]
    assert scaled and all(change["after"].get("producer_byte_rate", 0) <= 4 << 20 for change in scaled), (
        "the quota changes the guard made are recorded with their values"
    )
    # One snapshot message per broker and decision, in the schema the pipeline and usage_snapshot read.
    parsed = [snapshots.parse_message(json.dumps(message)) for message in observations]
    assert len(parsed) == 2 * len(decisions)
    assert {message["BrokerId"] for message in parsed} == {1, 2}
    assert {message["SnapshotAt"] for message in observations} == {d["DecidedAt"] for d in decisions}
    assert observations[0]["SoftLimit"] == {"type": "MinFreeBytes", "level": 32 * MIB}
    fullest = min(
        (message for message in observations if message["BrokerId"] == 2),
        key=lambda message: min(v["Capacity"] - v["Consumed"] for v in message["Volumes"]),
    )
    assert min(v["Capacity"] - v["Consumed"] for v in fullest["Volumes"]) <= 4 * MIB

    # The compacted topic holds the same observations, keyed by broker id.
    adapter = KafkaAdapter(cluster.info["bootstrap_servers"])
    try:
        published = adapter.read_all(TOPIC)
    finally:
        adapter.close()
    keys = {key for key, _value, _timestamp in published}
    assert keys == {b"1", b"2"}
    last_by_broker = {key: json.loads(value) for key, value, _timestamp in published}
    assert last_by_broker[b"2"] == [m for m in observations if m["BrokerId"] == 2][-1]

    # The pipeline reads the directory as the guard left it: nothing rejected, and its replay of the rules at the
    # guard's interval decides what the guard decided, instant by instant.
    summary = run_pipeline(history, tmp_path / "pipeline")
    assert summary["rows_rejected"] == 0, summary["inputs"]
    comparison = summary["stages"]["guard_comparison"]
    assert comparison["decisions"] == len(decisions)
    assert comparison["compared"] >= len(decisions) - 3 and comparison["differences"] == 0, comparison

    # A guard killed in the middle of a line costs that one record: tests/pipeline/test_guard_history.py, on a history
    # written as this one (a whole run of the job's command line less here).


def run_pipeline(history, out):
    job = subprocess.run(
        [sys.executable, "-m", "headroom_pipeline", "run", "--snapshots", str(history), "--out", str(out)]
        + ["--check-interval", "1", "--no-report", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert job.returncode == 0, job.stderr[-5000:]
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def test_observe_only_decides_and_records_but_never_touches_the_quotas(cluster, filled, tmp_path):
    before = held_quotas(cluster.info["bootstrap_servers"])
    filled(4 * MIB)
    history = tmp_path / "history"
    config = write_config(tmp_path / "guard.yml", cluster, **GRADED)
    process = start_guard("--config", config, "--once", "--observe-only", "--history-dir", str(history))
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "factor 0 PAUSE (graded, observed): quotas unchanged" in err
    (decision,) = records(history, "decisions")
    assert (decision["Mode"], decision["State"], decision["QuotaChanges"]) == ("observe_only", "PAUSE", [])
    assert len(records(history, "snapshots")) == 2
    assert held_quotas(cluster.info["bootstrap_servers"]) == before, "observe-only changed client quotas"


# The guard as its host runs it: the disk_guard role installs the wheel headroom-guard with kafka-python only, so the
# snapshot topic is created and written without confluent-kafka.
WITHOUT_CONFLUENT_KAFKA = (
    "import runpy, sys; sys.modules['confluent_kafka'] = None; sys.argv[0] = 'headroom_guard'; "
    "runpy.run_module('headroom_guard', run_name='__main__', alter_sys=True)"
)


def test_without_confluent_kafka_the_guard_creates_and_publishes_to_the_snapshot_topic(cluster, tmp_path):
    topic = "__headroom_volume_usage_kafka_python"
    config = write_config(tmp_path / "guard.yml", cluster, **GRADED)
    for _decision in range(2):  # the topic created by the first, found by the second
        guard = subprocess.run(
            [sys.executable, "-c", WITHOUT_CONFLUENT_KAFKA, "--config", config, "--once", "--snapshot-topic", topic],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert guard.returncode == 0, guard.stderr[-3000:]
        assert "warning" not in guard.stderr, guard.stderr[-3000:]
    adapter = KafkaAdapter(cluster.info["bootstrap_servers"])
    try:
        published = adapter.read_all(topic)
    finally:
        adapter.close()
    assert sorted(key for key, _value, _timestamp in published) == [b"1", b"1", b"2", b"2"], "one per broker, twice"
    assert {snapshots.parse_message(value.decode())["BrokerId"] for _key, value, _ts in published} == {1, 2}
    resource = ConfigResource("topic", topic)
    client = admin(cluster)  # kept referenced until the result: a collected client cancels its requests
    (configs,) = client.describe_configs([resource]).values()
    assert configs.result(30)["cleanup.policy"].value == "compact", "created compacted"
