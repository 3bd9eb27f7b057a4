"""usage_snapshot_info run as Ansible runs it, on a snapshot file and a fake topic; and usage_snapshot's deprecated
state=read, which must keep returning the same results with a deprecation naming the new module."""

import datetime
import json

import pytest
from ansible.module_utils import basic
from module_runner import run_module

from ansible_collections.headroom.kafka.plugins.module_utils import snapshots
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter
from ansible_collections.headroom.kafka.plugins.modules import usage_snapshot, usage_snapshot_info

SERVERS = ["kafka-1:9092"]
LIMIT = {"type": "MinFreeBytes", "level": 100}


def message(broker, seconds_ago, consumed=10, cluster_id="cluster-a"):
    stamp = snapshots.now_utc() - datetime.timedelta(seconds=seconds_ago)
    return {
        "SnapshotAt": snapshots.format_timestamp(stamp),
        "HardLimit": LIMIT,
        "SoftLimit": dict(LIMIT, level=200),
        "Volumes": [{"VolumeName": "/data-{0}".format(broker), "Capacity": 1000, "Consumed": consumed}],
        "BrokerId": broker,
        "ClusterId": cluster_id,
    }


class SnapshotKafka:
    """The two requests reading snapshots makes: the active brokers, and every record of a topic. Anything else the
    module asked for would be an AttributeError; every request is recorded."""

    def __init__(self, brokers, topics):
        self.brokers, self.topics, self.requests = brokers, topics, []
        self.where = "kafka-1:9092"

    def describe_cluster(self):
        self.requests.append(("describe_cluster",))
        return {
            "cluster_id": "cluster-a",
            "controller": None,
            "brokers": [{"id": b} for b in self.brokers],
            "fenced_brokers": [],
        }

    def read_all(self, topic):
        self.requests.append(("read_all", topic))
        return [(str(m["BrokerId"]).encode(), json.dumps(m).encode(), 0) for m in self.topics.get(topic, [])]

    def close(self):
        self.requests.append(("close",))


@pytest.fixture
def kafka(monkeypatch):
    fake = SnapshotKafka([1, 2, 3], {"usage": [message(1, 30), message(2, 20, consumed=5), message(2, 10)]})
    monkeypatch.setattr(KafkaAdapter, "from_module_params", classmethod(lambda cls, params: fake))
    return fake


@pytest.fixture
def recorded(monkeypatch):
    """Warnings and deprecations where the module gives them: once the controller's code is imported in this process
    (another test may have), ansible-core routes them to its display instead of the result."""
    found = {"warnings": [], "deprecations": []}
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda module, text: found["warnings"].append(text))
    monkeypatch.setattr(
        basic.AnsibleModule,
        "deprecate",
        lambda module, msg, version=None, date=None, collection_name=None, **kw: found["deprecations"].append(
            {"msg": msg, "version": version, "collection_name": collection_name}
        ),
    )
    return found


@pytest.fixture
def snapshot_file(tmp_path):
    path = tmp_path / "usage.jsonl"
    lines = [message(3, 40), message(1, 5, consumed=50), {"BrokerId": 9, "SnapshotAt": "yesterday", "Volumes": []}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_reads_the_file_and_the_topic_and_keeps_the_latest_fresh_snapshot_per_broker(kafka, snapshot_file, recorded):
    run = run_module(
        "usage_snapshot_info", {"bootstrap_servers": SERVERS, "topic": "usage", "path": str(snapshot_file)}
    )
    assert not run.failed, run.msg
    result = run.result
    assert result["changed"] is False
    assert [(m["BrokerId"], m["Volumes"][0]["Consumed"]) for m in result["snapshots"]] == [(1, 50), (2, 10), (3, 10)]
    assert result["complete"] is True and result["brokers_without_snapshot"] == [] and result["stale_brokers"] == []
    assert result["active_brokers"] == [1, 2, 3] and result["cluster_id"] == "cluster-a"
    assert result["messages_read"] == 6 and result["max_age"] == "PT5M"
    assert len(result["invalid_messages"]) == 1 and "usage.jsonl line 3" in result["invalid_messages"][0]
    assert recorded["warnings"] == [
        "1 messages do not fit the snapshot schema and were ignored, e.g. " + result["invalid_messages"][0]
    ]
    assert recorded["deprecations"] == []
    assert kafka.requests == [("describe_cluster",), ("read_all", "usage"), ("close",)]


def test_check_mode_reads_the_same_and_only_reads(kafka, snapshot_file):
    args = {"bootstrap_servers": SERVERS, "topic": "usage", "path": str(snapshot_file)}
    normal = run_module("usage_snapshot_info", args)
    checked = run_module("usage_snapshot_info", args, check_mode=True)
    assert not checked.failed and checked.result["changed"] is False
    assert checked.result["snapshots"] == normal.result["snapshots"]
    assert {request[0] for request in kafka.requests} == {"describe_cluster", "read_all", "close"}


def test_stale_and_expected_brokers(kafka):
    run = run_module(
        "usage_snapshot_info",
        {"bootstrap_servers": SERVERS, "topic": "usage", "max_age": "15", "expected_brokers": [4]},
    )
    assert not run.failed, run.msg
    assert [m["BrokerId"] for m in run.result["snapshots"]] == [2]
    assert run.result["stale_brokers"] == [1]
    assert run.result["brokers_without_snapshot"] == [1, 3, 4]
    assert run.result["complete"] is False and run.result["max_age"] == "PT15S"


def test_a_file_that_does_not_exist_yet_holds_no_snapshots(kafka, tmp_path, recorded):
    path = tmp_path / "later.jsonl"
    run = run_module("usage_snapshot_info", {"bootstrap_servers": SERVERS, "path": str(path)})
    assert not run.failed, run.msg
    assert run.result["snapshots"] == [] and run.result["brokers_without_snapshot"] == [1, 2, 3]
    assert recorded["warnings"] == ["{0} does not exist; it holds no snapshots".format(path)]
    assert kafka.requests == [("describe_cluster",), ("close",)]


@pytest.mark.parametrize(
    "args, expected",
    [
        ({}, "one of the following is required: path, topic"),
        ({"path": ""}, "path must name a file (got '')"),
        ({"path": "/"}, "path must be a file, not a directory (got '/')"),
        ({"path": "/nonexistent-dir/usage.jsonl"}, "path is inside a directory that does not exist"),
        ({"topic": ""}, "topic must be a topic name Kafka accepts"),
        ({"topic": "usage", "max_age": "5 minutes"}, "max_age must be an ISO 8601 duration"),
        ({"topic": "usage", "expected_brokers": [-4]}, "expected_brokers[0] must be a broker id"),
        ({"topic": "usage", "expected_brokers": [1, 1]}, "expected_brokers lists 1 twice"),
        ({"topic": "usage", "state": "read"}, "Unsupported parameters"),
        ({"topic": "usage", "soft_limit": {"type": "min_free_bytes", "level": 1}}, "Unsupported parameters"),
    ],
)
def test_what_can_never_work_fails_naming_the_option_before_kafka_is_asked(kafka, args, expected):
    run = run_module("usage_snapshot_info", dict({"bootstrap_servers": SERVERS}, **args))
    assert run.failed and expected in run.msg, run.msg
    assert kafka.requests == []


def test_reading_without_bootstrap_servers_says_why_they_are_needed(kafka):
    run = run_module("usage_snapshot_info", {"topic": "usage"})
    assert run.failed
    assert run.msg.startswith("bootstrap_servers is required: this task talks to Kafka to read its active brokers")


def test_the_options_are_the_read_options_of_usage_snapshot():
    read_options = set(usage_snapshot.ARGUMENT_SPEC) - set(usage_snapshot.PUBLISH_ONLY) - {"state"}
    assert set(usage_snapshot_info.ARGUMENT_SPEC) == read_options
    for name in read_options:
        assert usage_snapshot_info.ARGUMENT_SPEC[name] == usage_snapshot.ARGUMENT_SPEC[name], name


def test_the_deprecated_state_read_returns_the_same_with_a_deprecation_naming_the_new_module(
    kafka, snapshot_file, recorded
):
    args = {"bootstrap_servers": SERVERS, "topic": "usage", "path": str(snapshot_file), "expected_brokers": [4]}
    new = run_module("usage_snapshot_info", args)
    assert recorded["deprecations"] == []
    old = run_module("usage_snapshot", dict(args, state="read"))
    assert not old.failed, old.msg
    differ = {"read_at", "invocation"}  # the moment of the read, and the arguments as given
    assert {key: value for key, value in old.result.items() if key not in differ} == {
        key: value for key, value in new.result.items() if key not in differ
    }
    [deprecation] = recorded["deprecations"]
    assert deprecation["version"] == "2.0.0" and deprecation["collection_name"] == "headroom.kafka"
    assert "state=read is deprecated" in deprecation["msg"]
    assert "headroom.kafka.usage_snapshot_info" in deprecation["msg"]


def test_the_deprecation_comes_with_a_refusal_too_and_publishing_is_not_deprecated(kafka, tmp_path, recorded):
    refused = run_module("usage_snapshot", {"bootstrap_servers": SERVERS, "state": "read", "path": "/"})
    assert refused.failed and "path must be a file, not a directory" in refused.msg
    assert len(recorded["deprecations"]) == 1
    published = run_module(
        "usage_snapshot",
        {
            "path": str(tmp_path / "out.jsonl"),
            "log_dirs": [{"broker_id": 1, "log_dir": "/d", "total_bytes": 1000, "usable_bytes": 500}],
            "soft_limit": {"type": "min_free_bytes", "level": 200},
            "hard_limit": {"type": "min_free_bytes", "level": 100},
        },
    )
    assert not published.failed, published.msg
    assert len(recorded["deprecations"]) == 1
