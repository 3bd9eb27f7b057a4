"""log_dirs.build_view: the rows log_dirs_info returns, with each log dir's replicas when asked."""

from ansible_collections.headroom.kafka.plugins.module_utils import log_dirs

CLUSTER = {"cluster_id": "c", "brokers": [{"id": 1}, {"id": 2}], "fenced_brokers": []}
REPLICAS = [
    {"topic": "a", "partition": 0, "size_bytes": 100, "offset_lag": 0, "is_future": False},
    {"topic": "a", "partition": 0, "size_bytes": -1, "offset_lag": -1, "is_future": True},
]
ANSWERS = {
    1: [{"log_dir": "/d0", "error": None, "total_bytes": 1000, "usable_bytes": 400, "replicas": REPLICAS}],
    2: [{"log_dir": "/d0", "error": "KAFKA_STORAGE_ERROR", "total_bytes": -1, "usable_bytes": -1, "replicas": []}],
}


def test_replicas_are_returned_only_when_asked_with_unknown_sizes_as_null():
    plain = log_dirs.build_view(CLUSTER, ANSWERS, "t")
    assert [sorted(row) for row in plain["log_dirs"]][0] == sorted(
        ["broker_id", "log_dir", "total_bytes", "usable_bytes", "used_bytes", "available_ratio", "error"]
    )
    rows = log_dirs.build_view(CLUSTER, ANSWERS, "t", replicas=True)["log_dirs"]
    assert rows[0]["replicas"] == [
        {"topic": "a", "partition": 0, "size_bytes": 100, "offset_lag": 0, "is_future": False},
        {"topic": "a", "partition": 0, "size_bytes": None, "offset_lag": None, "is_future": True},
    ]
    assert rows[1]["replicas"] == [] and rows[1]["error"] == "KAFKA_STORAGE_ERROR"


def test_a_broker_that_did_not_answer_is_missing_with_its_reason():
    view = log_dirs.build_view(CLUSTER, {1: ANSWERS[1], 2: RuntimeError("broker 2 did not answer")}, "t", True)
    assert view["missing_brokers"] == [2] and view["failures"] == ["broker 2 did not answer"]
    assert not view["complete"] and [row["broker_id"] for row in view["log_dirs"]] == [1]
