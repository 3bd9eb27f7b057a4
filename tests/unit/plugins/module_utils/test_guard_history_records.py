"""What the guard records of a decision, and the plan for its history directory (hour files, compression, retention)."""

import datetime

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.disk_guard import Policy
from ansible_collections.headroom.kafka.plugins.module_utils.guard_history import (
    decision_record,
    file_name,
    history_limits,
    hour_end,
    hour_of,
    housekeeping,
    parse_name,
    snapshot_messages,
)

# 2026-11-28T04:30:00Z
AT = datetime.datetime(2026, 11, 28, 4, 30, tzinfo=datetime.timezone.utc).timestamp()
HOUR = 3600.0


def test_hour_files_are_named_by_the_utc_hour_of_the_instant():
    assert hour_of(AT) == "2026-11-28T04"
    assert hour_of(AT + 1800) == "2026-11-28T05"
    assert file_name("snapshots", "2026-11-28T04") == "snapshots-2026-11-28T04.jsonl"
    assert file_name("decisions", "2026-11-28T04", compressed=True) == "decisions-2026-11-28T04.jsonl.gz"
    assert hour_end("2026-11-28T04") == AT + 1800
    assert parse_name("decisions-2026-11-28T04.jsonl.gz") == ("decisions", "2026-11-28T04", True)
    for other in ("snapshots-2026-11-28.jsonl", ".snapshots-2026-11-28T04.jsonl.gz.partial", "notes.txt"):
        assert parse_name(other) is None


@pytest.mark.parametrize(
    "now, remove, compress",
    [
        # Within the hour of 04: nothing is over.
        (AT, [], []),
        # The hour of 04 is over: its plain files are compressed, the compressed one stays.
        (AT + 1800, [], ["decisions-2026-11-28T04.jsonl", "snapshots-2026-11-28T04.jsonl"]),
        # A day after 04's end: with a retention of one day, 04's files go (also the one not yet compressed).
        (
            AT + 1800 + 24 * HOUR,
            ["decisions-2026-11-28T04.jsonl", "snapshots-2026-11-28T03.jsonl.gz", "snapshots-2026-11-28T04.jsonl"],
            [],
        ),
    ],
    ids=["current-hour", "hour-over", "retention-passed"],
)
def test_housekeeping(now, remove, compress):
    names = [
        "snapshots-2026-11-28T03.jsonl.gz",
        "snapshots-2026-11-28T04.jsonl",
        "decisions-2026-11-28T04.jsonl",
        "README",
    ]
    plan = housekeeping(names, now, retention=24 * HOUR)
    assert plan == {"remove": remove, "compress": compress}


@pytest.mark.parametrize(
    "policy, limits",
    [
        (
            Policy(
                "graded",
                soft_limit={"type": "min_free_percentage", "level": 20},
                hard_limit={"type": "min_free_percentage", "level": 5},
            ),
            ({"type": "min_free_percentage", "level": 20}, {"type": "min_free_percentage", "level": 5}),
        ),
        (Policy("strimzi", min_available_bytes=1 << 30), ({"type": "min_free_bytes", "level": 1 << 30},) * 2),
        (Policy("strimzi", min_available_ratio=0.15), ({"type": "min_free_percentage", "level": 15.0},) * 2),
    ],
    ids=["graded", "strimzi-bytes", "strimzi-ratio"],
)
def test_the_limits_in_force_are_recorded_in_the_snapshot_schema(policy, limits):
    assert history_limits(policy) == limits


def result(**changes):
    base = {
        "decided_at": AT,
        "cluster_id": "c1",
        "policy": "strimzi",
        "throttle_factor": 0.0,
        "state": "PAUSE",
        "reason": "observed",
        "observed": True,
        "complete": True,
        "fallback_applied": False,
        "missing_data_applied": False,
        "missing_brokers": [],
        "changes": [
            {"entity": {"user": "<default>"}, "before": {"producer_byte_rate": 10}, "after": {"producer_byte_rate": 1}}
        ],
        "volumes": [
            {"broker_id": 2, "log_dir": "/d", "total_bytes": 100, "usable_bytes": 5, "error": None},
            {"broker_id": 1, "log_dir": "/d", "total_bytes": 100, "usable_bytes": 50, "error": None},
            {
                "broker_id": 1,
                "log_dir": "/e",
                "total_bytes": None,
                "usable_bytes": None,
                "error": "KAFKA_STORAGE_ERROR",
            },
        ],
    }
    base.update(changes)
    return base


def test_a_complete_observation_is_one_snapshot_message_per_broker():
    messages = snapshot_messages(result(), Policy("strimzi", min_available_ratio=0.1))
    assert messages == [
        {
            "SnapshotAt": "2026-11-28T04:30:00.000Z",
            "HardLimit": {"type": "MinFreePercentage", "level": 10.0},
            "SoftLimit": {"type": "MinFreePercentage", "level": 10.0},
            "Volumes": [{"VolumeName": "/d", "Capacity": 100, "Consumed": 50}],
            "BrokerId": 1,
            "ClusterId": "c1",
        },
        {
            "SnapshotAt": "2026-11-28T04:30:00.000Z",
            "HardLimit": {"type": "MinFreePercentage", "level": 10.0},
            "SoftLimit": {"type": "MinFreePercentage", "level": 10.0},
            "Volumes": [{"VolumeName": "/d", "Capacity": 100, "Consumed": 95}],
            "BrokerId": 2,
            "ClusterId": "c1",
        },
    ]


def test_an_incomplete_observation_is_no_snapshot():
    """A partial observation would read, to the pipeline, as the missing brokers gone quiet."""
    assert (
        snapshot_messages(result(complete=False, missing_brokers=[2]), Policy("strimzi", min_available_ratio=0.1)) == []
    )


def test_the_decision_record():
    assert decision_record(result(), "enforce") == {
        "DecidedAt": "2026-11-28T04:30:00.000Z",
        "ClusterId": "c1",
        "Policy": "strimzi",
        "ThrottleFactor": 0.0,
        "State": "PAUSE",
        "Reason": "observed",
        "Observed": True,
        "Complete": True,
        "FallbackApplied": False,
        "MissingDataApplied": False,
        "MissingBrokers": [],
        "Mode": "enforce",
        "QuotaChanges": [
            {"entity": {"user": "<default>"}, "before": {"producer_byte_rate": 10}, "after": {"producer_byte_rate": 1}}
        ],
    }
