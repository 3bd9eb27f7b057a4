"""Usage snapshot messages: building, parsing, freshness, latest per broker, conversion to volumes."""

import datetime
import json

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import snapshots, volume_limits

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 11, 22, 4, 7, 9, 123000, tzinfo=UTC)
SOFT = {"type": "min_free_bytes", "level": 50}
HARD = {"type": "min_free_bytes", "level": 10}
ROWS = [
    {
        "broker_id": 2,
        "log_dir": "/data/b",
        "total_bytes": 100,
        "usable_bytes": 40,
        "used_bytes": 60,
        "available_ratio": 0.4,
        "error": None,
    },
    {"broker_id": 1, "log_dir": "/data/b", "total_bytes": 1000, "usable_bytes": 900, "error": None},
    {"broker_id": 1, "log_dir": "/data/a", "total_bytes": 100, "usable_bytes": 5, "error": None},
    {"broker_id": 3, "log_dir": "/data/a", "total_bytes": None, "usable_bytes": None, "error": "KAFKA_STORAGE_ERROR"},
    {"broker_id": 2, "log_dir": "/data/c", "total_bytes": -1, "usable_bytes": -1, "error": None},
]


def message(broker_id, at, volumes=None, cluster_id="c1"):
    return {
        "SnapshotAt": at,
        "HardLimit": {"type": "MinFreeBytes", "level": 10},
        "SoftLimit": {"type": "MinFreeBytes", "level": 50},
        "Volumes": volumes if volumes is not None else [{"VolumeName": "/data/a", "Capacity": 100, "Consumed": 30}],
        "BrokerId": broker_id,
        "ClusterId": cluster_id,
    }


def record(broker_id, at, **kwargs):
    value = snapshots.encode_message(message(broker_id, at, **kwargs)).encode()
    return ("r", str(broker_id).encode(), value)


# -- timestamps ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-11-22T04:07:09.123Z", NOW),
        ("2026-11-22T04:07:09.123000000Z", NOW),
        ("2026-11-22T04:07:09.123456789Z", NOW.replace(microsecond=123456)),
        ("2026-11-22T05:07:09.123+01:00", NOW),
        ("2026-11-22T03:07:09.123-0100", NOW),
        ("2026-11-22t04:07:09,123z", NOW),
        ("2026-11-22T04:07Z", NOW.replace(second=0, microsecond=0)),
        ("2026-11-22 04:07:09.123Z", NOW),
    ],
)
def test_parse_timestamp(text, expected):
    assert snapshots.parse_timestamp(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-22T04:07:09",
        "2026-11-22",
        "yesterday",
        "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        1795322212,
        None,
    ],
)
def test_parse_timestamp_invalid(text):
    with pytest.raises(snapshots.SnapshotError, match="snapshot_at"):
        snapshots.parse_timestamp(text, "snapshot_at")


def test_format_timestamp():
    assert snapshots.format_timestamp(NOW) == "2026-11-22T04:07:09.123Z"
    assert (
        snapshots.format_timestamp(NOW.astimezone(datetime.timezone(datetime.timedelta(hours=2))))
        == "2026-11-22T04:07:09.123Z"
    )
    assert snapshots.format_timestamp(NOW.replace(tzinfo=None)) == "2026-11-22T04:07:09.123Z"


# -- log dir rows ----------------------------------------------------------------------------------------------------
def test_normalize_log_dirs():
    rows = snapshots.normalize_log_dirs(
        [{"broker_id": "1", "log_dir": "/a", "total_bytes": 100.0, "usable_bytes": -1, "extra": True}]
    )
    assert rows == [{"broker_id": 1, "log_dir": "/a", "total_bytes": 100, "usable_bytes": None, "error": None}]


@pytest.mark.parametrize(
    "rows, message",
    [
        ("x", "log_dirs must be a list"),
        ([{"broker_id": 1, "log_dir": "/a", "total_bytes": 1}], r"log_dirs\[0\] lacks usable_bytes"),
        (
            [{"broker_id": 1, "log_dir": "/a", "total_bytes": 1, "usable_bytes": 1}, {"log_dir": "/a"}],
            r"log_dirs\[1\] lacks broker_id, total_bytes, usable_bytes",
        ),
        (
            [{"broker_id": True, "log_dir": "/a", "total_bytes": 1, "usable_bytes": 1}],
            r"log_dirs\[0\].broker_id must be a broker id",
        ),
        (
            [{"broker_id": 1, "log_dir": "", "total_bytes": 1, "usable_bytes": 1}],
            r"log_dirs\[0\].log_dir must be the log dir's path",
        ),
        (
            [{"broker_id": 1, "log_dir": "/a", "total_bytes": "lots", "usable_bytes": 1}],
            r"log_dirs\[0\].total_bytes must be a whole number",
        ),
        (
            [{"broker_id": 1, "log_dir": "/a", "total_bytes": 1.5, "usable_bytes": 1}],
            r"log_dirs\[0\].total_bytes must be a whole number",
        ),
        (["/a"], r"log_dirs\[0\] must be a dict"),
    ],
)
def test_normalize_log_dirs_errors(rows, message):
    with pytest.raises(snapshots.SnapshotError, match=message):
        snapshots.normalize_log_dirs(rows)


# -- building --------------------------------------------------------------------------------------------------------
def test_build_messages_schema():
    messages, skipped = snapshots.build_messages(ROWS, SOFT, HARD, "2026-11-22T05:07:09.123+01:00", "c1")
    assert [m["BrokerId"] for m in messages] == [1, 2, 3]
    first = messages[0]
    assert list(first) == ["SnapshotAt", "HardLimit", "SoftLimit", "Volumes", "BrokerId", "ClusterId"]
    assert first == {
        "SnapshotAt": "2026-11-22T04:07:09.123Z",
        "HardLimit": {"type": "MinFreeBytes", "level": 10},
        "SoftLimit": {"type": "MinFreeBytes", "level": 50},
        "Volumes": [
            {"VolumeName": "/data/a", "Capacity": 100, "Consumed": 95},
            {"VolumeName": "/data/b", "Capacity": 1000, "Consumed": 100},
        ],
        "BrokerId": 1,
        "ClusterId": "c1",
    }
    assert messages[1]["Volumes"] == [{"VolumeName": "/data/b", "Capacity": 100, "Consumed": 60}]
    assert messages[2]["Volumes"] == []
    assert skipped == [
        {"broker_id": 2, "log_dir": "/data/c", "error": None, "reason": "size unknown"},
        {
            "broker_id": 3,
            "log_dir": "/data/a",
            "error": "KAFKA_STORAGE_ERROR",
            "reason": "log dir error KAFKA_STORAGE_ERROR",
        },
    ]


@pytest.mark.parametrize("limit_type, name", sorted(volume_limits.SNAPSHOT_LIMIT_NAMES.items()))
def test_limit_names(limit_type, name):
    soft, hard = {"type": limit_type, "level": 20}, {"type": limit_type, "level": 5}
    if limit_type == "consumed_space":
        soft, hard = hard, soft
    messages = snapshots.build_messages(ROWS[:1], soft, hard, NOW)[0]
    assert messages[0]["SoftLimit"] == {"type": name, "level": soft["level"]}
    assert snapshots.graded_limit(messages[0]["HardLimit"], "HardLimit") == hard


def test_build_messages_usable_above_total_is_skipped():
    messages, skipped = snapshots.build_messages(
        [{"broker_id": 1, "log_dir": "/a", "total_bytes": 10, "usable_bytes": 11}], SOFT, HARD, NOW
    )
    assert messages[0]["Volumes"] == [] and skipped[0]["reason"] == "usable bytes exceed total bytes"


def test_build_messages_checks_limits_and_time():
    with pytest.raises(volume_limits.LimitError, match="soft_limit.level must be greater than hard_limit.level"):
        snapshots.build_messages(ROWS, HARD, SOFT, NOW)
    with pytest.raises(snapshots.SnapshotError, match="snapshot_at must be an ISO 8601 date-time with a time zone"):
        snapshots.build_messages(ROWS, SOFT, HARD, "2026-11-22T04:07:09")


def test_no_rows_no_messages():
    assert snapshots.build_messages([], SOFT, HARD, NOW) == ([], [])


def test_encoding_round_trip():
    messages = snapshots.build_messages(ROWS, SOFT, HARD, NOW, "c1")[0]
    for original in messages:
        key, value = snapshots.message_key(original), snapshots.encode_message(original)
        assert key == str(original["BrokerId"]).encode()
        assert "\n" not in value and " " not in value
        assert snapshots.parse_message(value.encode(), key) == original
        assert json.loads(value) == original


# -- parsing ---------------------------------------------------------------------------------------------------------
def test_broker_id_from_key():
    value = message(7, "2026-11-22T04:07:09.123Z")
    del value["BrokerId"]
    assert snapshots.parse_message(json.dumps(value), b"7")["BrokerId"] == 7


def test_limits_optional_and_unknown_sizes():
    parsed = snapshots.parse_message(
        {
            "SnapshotAt": "2026-11-22T04:07:09Z",
            "BrokerId": 1,
            "Volumes": [{"VolumeName": "/a", "Capacity": -1, "Consumed": None}],
        }
    )
    assert parsed == {
        "SnapshotAt": "2026-11-22T04:07:09Z",
        "Volumes": [{"VolumeName": "/a", "Capacity": None, "Consumed": None}],
        "BrokerId": 1,
        "ClusterId": None,
    }


@pytest.mark.parametrize(
    "value, key, error",
    [
        (b"\xff", None, "not UTF-8"),
        ("{", None, "not JSON"),
        ("[1]", None, "must be a JSON object"),
        (json.dumps(dict(message(1, "2026-11-22T04:07:09Z"), BrokerId=None)), None, "BrokerId is missing"),
        (json.dumps(dict(message(1, "2026-11-22T04:07:09Z"), BrokerId=None)), b"one", "BrokerId must be a broker id"),
        (json.dumps(dict(message(1, "2026-11-22T04:07:09Z"), BrokerId=-2)), None, "BrokerId must be a broker id"),
        (json.dumps(message(1, "2026-11-22T04:07:09Z")), b"2", "BrokerId 1 does not match the record key"),
        (json.dumps({"BrokerId": 1, "Volumes": []}), None, "SnapshotAt is missing"),
        (json.dumps(message(1, "now")), None, "SnapshotAt must be an ISO 8601 date-time"),
        (json.dumps(dict(message(1, "2026-11-22T04:07:09Z"), Volumes={"/a": 1})), None, "Volumes must be a list"),
        (json.dumps(message(1, "2026-11-22T04:07:09Z", volumes=[{"Capacity": 1}])), None, r"Volumes\[0\] must be"),
        (
            json.dumps(message(1, "2026-11-22T04:07:09Z", volumes=[{"VolumeName": "/a", "Capacity": "big"}])),
            None,
            r"Volumes\[0\].Capacity must be a whole number",
        ),
        (
            json.dumps(dict(message(1, "2026-11-22T04:07:09Z"), HardLimit={"type": "MinFree", "level": 1})),
            None,
            "HardLimit must be {type, level} with type one of ConsumedSpace, MinFreeBytes, MinFreePercentage",
        ),
        (
            json.dumps(dict(message(1, "2026-11-22T04:07:09Z"), SoftLimit={"type": "MinFreePercentage", "level": 101})),
            None,
            "SoftLimit.level is a percentage",
        ),
        (
            json.dumps(dict(message(1, "2026-11-22T04:07:09Z"), SoftLimit={"type": "MinFreeBytes", "level": -1})),
            None,
            "SoftLimit.level must be >= 0",
        ),
        (
            '{"SnapshotAt": "2026-11-22T04:07:09Z", "BrokerId": 1, "Volumes": [], '
            '"HardLimit": {"type": "MinFreeBytes", "level": Infinity}}',
            None,
            "HardLimit.level must be a finite number",
        ),
    ],
)
def test_parse_errors(value, key, error):
    with pytest.raises(snapshots.SnapshotError, match=error):
        snapshots.parse_message(value, key)


def test_parse_snapshots_names_the_item():
    with pytest.raises(snapshots.SnapshotError, match=r"snapshots\[1\]: SnapshotAt is missing"):
        snapshots.parse_snapshots([message(1, "2026-11-22T04:07:09Z"), {"BrokerId": 2, "Volumes": []}])
    with pytest.raises(snapshots.SnapshotError, match="snapshots must be a list"):
        snapshots.parse_snapshots({"snapshots": []})


# -- freshness and latest per broker -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "at, fresh",
    [
        ("2026-11-22T04:02:09.123Z", True),  # exactly max_age old
        ("2026-11-22T04:02:09.122Z", False),  # one millisecond more
        ("2026-11-22T04:07:09.123Z", True),
        ("2026-11-22T05:00:00Z", True),  # from the future (clock skew)
    ],
)
def test_is_fresh(at, fresh):
    assert snapshots.is_fresh(message(1, at), NOW, datetime.timedelta(minutes=5)) is fresh


def test_latest_by_snapshot_at_not_log_order():
    records = [
        record(1, "2026-11-22T04:06:00Z", volumes=[{"VolumeName": "/new", "Capacity": 1, "Consumed": 0}]),
        record(1, "2026-11-22T04:05:00Z", volumes=[{"VolumeName": "/old", "Capacity": 1, "Consumed": 0}]),
        record(2, "2026-11-22T04:05:00Z", volumes=[{"VolumeName": "/first", "Capacity": 1, "Consumed": 0}]),
        record(2, "2026-11-22T04:05:00Z", volumes=[{"VolumeName": "/second", "Capacity": 1, "Consumed": 0}]),
    ]
    result = snapshots.select_latest(records, NOW, datetime.timedelta(minutes=5))
    assert [(m["BrokerId"], m["Volumes"][0]["VolumeName"]) for m in result["snapshots"]] == [
        (1, "/new"),
        (2, "/second"),
    ]
    assert result["messages_read"] == 4 and result["stale_brokers"] == [] and result["invalid_messages"] == []


def test_stale_invalid_tombstones_and_other_clusters():
    records = [
        record(1, "2026-11-22T04:00:00Z"),  # stale
        record(2, "2026-11-22T04:06:00Z"),
        ("line 3", None, "not json"),
        record(3, "2026-11-22T04:06:00Z"),
        ("tombstone", b"3", None),  # removes broker 3
        ("tombstone", b"x", None),
        record(4, "2026-11-22T04:06:00Z", cluster_id="other"),
        record(5, "2026-11-22T04:06:00Z", cluster_id=None),
    ]
    result = snapshots.select_latest(records, NOW, datetime.timedelta(minutes=5), cluster_id="c1")
    assert [m["BrokerId"] for m in result["snapshots"]] == [2, 5]
    assert result["stale_brokers"] == [1]
    assert result["other_cluster_messages"] == 1
    assert result["invalid_messages"][0].startswith("line 3: not JSON")
    assert "a tombstone whose key b'x' is not a broker id" in result["invalid_messages"][1]
    assert result["messages_read"] == 8


def test_without_max_age_everything_is_fresh():
    result = snapshots.select_latest([record(1, "2000-01-01T00:00:00Z")], NOW, None)
    assert [m["BrokerId"] for m in result["snapshots"]] == [1]


def test_read_result():
    records = [record(1, "2026-11-22T04:06:00Z"), record(2, "2026-11-22T03:00:00Z"), record(9, "2026-11-22T04:06:00Z")]
    result = snapshots.read_result(
        records, NOW, datetime.timedelta(minutes=5), active_brokers=[3, 1, 2], expected_brokers=[4]
    )
    assert [m["BrokerId"] for m in result["snapshots"]] == [1, 9]  # broker 9 is not active but its snapshot is fresh
    assert result["stale_brokers"] == [2]
    assert result["brokers_without_snapshot"] == [2, 3, 4]
    assert result["active_brokers"] == [1, 2, 3]
    assert result["complete"] is False
    complete = snapshots.read_result(records[:1], NOW, datetime.timedelta(minutes=5), active_brokers=[1])
    assert complete["complete"] is True and complete["brokers_without_snapshot"] == []


def test_missing_brokers():
    assert snapshots.missing_brokers([1, 2], [1, 2, 3], [4, 1]) == [3, 4]
    assert snapshots.missing_brokers([1], (), None) == []


# -- to volumes ------------------------------------------------------------------------------------------------------
def test_snapshot_volumes():
    volumes = [
        {"VolumeName": "/a", "Capacity": 100, "Consumed": 30},
        {"VolumeName": "/b", "Capacity": 100, "Consumed": 130},
        {"VolumeName": "/c", "Capacity": None, "Consumed": 1},
    ]
    messages = [message(1, "2026-11-22T04:06:00Z", volumes=volumes)]
    assert snapshots.snapshot_volumes(messages) == [
        {"broker_id": 1, "log_dir": "/a", "total_bytes": 100, "usable_bytes": 70},
        {"broker_id": 1, "log_dir": "/b", "total_bytes": None, "usable_bytes": None},
        {"broker_id": 1, "log_dir": "/c", "total_bytes": None, "usable_bytes": None},
    ]


@pytest.mark.parametrize(
    "soft, hard",
    [
        (SOFT, HARD),
        ({"type": "min_free_percentage", "level": 50}, {"type": "min_free_percentage", "level": 5}),
        ({"type": "consumed_space", "level": 50}, {"type": "consumed_space", "level": 99}),
    ],
)
def test_snapshots_decide_like_the_log_dirs(soft, hard):
    """Publishing then reading loses nothing the rules look at: the graded decision is the same."""
    messages = snapshots.build_messages(ROWS, soft, hard, NOW, "c1")[0]
    through = snapshots.parse_snapshots([json.loads(snapshots.encode_message(m)) for m in messages])
    direct = volume_limits.graded_decision(snapshots.normalize_log_dirs(ROWS), soft, hard)
    via = volume_limits.graded_decision(snapshots.snapshot_volumes(through), soft, hard)
    assert via["throttle_factor"] == pytest.approx(direct["throttle_factor"])
    assert via["state"] == direct["state"]
    assert via["violations"] == direct["violations"]
    assert via["least_headroom"] == direct["least_headroom"]


# -- limits the parser relies on -------------------------------------------------------------------------------------
@pytest.mark.parametrize("level", [float("inf"), float("nan")])
def test_graded_levels_must_be_finite(level):
    with pytest.raises(volume_limits.LimitError, match="soft_limit.level must be a finite number"):
        volume_limits.validate_graded_limits({"type": "min_free_bytes", "level": level}, HARD)


@pytest.mark.parametrize(
    "kwargs",
    [{"min_available_bytes": float("inf")}, {"min_available_ratio": float("nan")}, {"min_available_ratio": True}],
)
def test_strimzi_levels_must_be_finite(kwargs):
    with pytest.raises(volume_limits.LimitError, match="must be"):
        volume_limits.validate_strimzi_limits(**kwargs)
