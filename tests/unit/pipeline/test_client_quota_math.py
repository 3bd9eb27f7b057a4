"""Client quota rules against the shared vectors (tests/vectors/client_quotas.json), plus the formulas on their own."""

import datetime

import pytest
import vector_cases

from headroom_pipeline import client_quota_math

CASES = vector_cases.load("client_quotas.json")["cases"]
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
DEFAULTS = {
    "client_window": 60.0,
    "quota_window_num": 11,
    "quota_window_size": 1.0,
    "recommend_percentile": 0.99,
    "recommend_headroom": 1.2,
}


def micros(text):
    return (datetime.datetime.fromisoformat(text.replace("Z", "+00:00")) - EPOCH) // datetime.timedelta(microseconds=1)


def iso(value):
    moment = EPOCH + datetime.timedelta(microseconds=value)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{moment.microsecond:06d}" if moment.microsecond else "") + "Z"


def run_case(case):
    settings = dict(DEFAULTS, **case.get("config", {}))
    rows = [dict(row, ts_us=micros(row["ts"])) for row in case["traffic"]]
    windows = client_quota_math.client_windows(
        rows,
        case["quotas"],
        case.get("proposed"),
        settings["client_window"],
        settings["quota_window_num"],
        settings["quota_window_size"],
    )
    recommendations = client_quota_math.client_recommendations(
        windows, settings["recommend_percentile"], settings["recommend_headroom"]
    )
    for window in windows:
        window["window_start"], window["window_end"] = iso(window["window_start"]), iso(window["window_end"])
    return windows, recommendations


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_vector(case):
    windows, recommendations = run_case(case)
    if "windows" in case["expected"]:
        vector_cases.assert_rows(windows, case["expected"]["windows"], "windows")
    if "recommendations" in case["expected"]:
        vector_cases.assert_rows(recommendations, case["expected"]["recommendations"], "recommendations")


@pytest.mark.parametrize(
    "entity, level",
    [
        ({"user": "a", "client_id": "c"}, 1),
        ({"user": "a", "client_id": "<default>"}, 2),
        ({"user": "a"}, 3),
        ({"user": "<default>", "client_id": "c"}, 4),
        ({"user": "<default>", "client_id": "<default>"}, 5),
        ({"user": "<default>"}, 6),
        ({"client_id": "c"}, 7),
        ({"client_id": "<default>"}, 8),
        ({"ip": "10.0.0.1"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_entity_level(entity, level):
    assert client_quota_math.entity_level(entity) == level


def test_resolution_counts_only_entities_that_set_the_key():
    entries = [
        {"entity": {"user": "a", "client_id": "c"}, "quota_values": {"consumer_byte_rate": 5.0}},
        {"entity": {"user": "<default>"}, "quota_values": {"producer_byte_rate": 9.0}},
    ]
    produce = client_quota_math.resolve_quota(entries, "a", "c", "producer_byte_rate")
    assert (produce["value"], produce["quota_entity"], produce["level"], produce["quota_group"]) == (
        9.0,
        "user=<default>",
        6,
        "user=a",
    )
    fetch = client_quota_math.resolve_quota(entries, "a", "c", "consumer_byte_rate")
    assert (fetch["value"], fetch["quota_entity"], fetch["quota_group"]) == (
        5.0,
        "user=a,client_id=c",
        "user=a,client_id=c",
    )
    assert client_quota_math.resolve_quota(entries, None, "c", "producer_byte_rate") is None
    assert client_quota_math.resolve_quota([], "a", "c", "producer_byte_rate") is None


def test_empty_names_count_as_absent():
    entries = [{"entity": {"user": "<default>", "client_id": "<default>"}, "quota_values": {"producer_byte_rate": 1.0}}]
    assert client_quota_math.resolve_quota(entries, "", "c", "producer_byte_rate") is None
    assert client_quota_math.resolve_quota(entries, "a", "", "producer_byte_rate") is None
    assert client_quota_math.resolve_quota(entries, "a", "c", "producer_byte_rate")["value"] == 1.0


@pytest.mark.parametrize(
    "rate, quota, window_ms, expected",
    [
        (1500.0, 1000.0, 11000, 5500),
        (1000.0, 1000.0, 11000, 0),
        (999.0, 1000.0, 11000, 0),
        (1000.5, 1000.0, 11000, 6),
        (1030.25, 1024.0, 2048, 13),
        (2e9, 1.0, 11000, 21999999989000),
        (10.0, None, 11000, 0),
    ],
)
def test_kafka_throttle_time(rate, quota, window_ms, expected):
    """No upper bound for byte-rate quotas: Kafka caps only request-percentage and controller-mutation throttle
    times."""
    assert client_quota_math.kafka_throttle_time_ms(rate, quota, window_ms) == expected


@pytest.mark.parametrize(
    "window_bytes, quota, window_seconds, expected",
    [
        (60, 5.0, 10.0, 2000),
        (50, 5.0, 10.0, 0),
        (65936, 1024.0, 64.0, 391),
        (1, None, 10.0, 0),
    ],
)
def test_kip13_throttle_time(window_bytes, quota, window_seconds, expected):
    """KIP-13's own example: 60 bytes against a 5 bytes/s quota over 10 s -> (60 - 50) / 5 = 2 s."""
    assert client_quota_math.kip13_throttle_time_ms(window_bytes, quota, window_seconds) == expected


@pytest.mark.parametrize("num, size, expected", [(11, 1.0, 11000), (2, 1.024, 2048), (30, 0.5, 15000)])
def test_kafka_window(num, size, expected):
    assert client_quota_math.kafka_window_ms(num, size) == expected


@pytest.mark.parametrize(
    "ts_us, window_us, expected",
    [
        (0, 60_000_000, 0),
        (1, 60_000_000, 60_000_000),
        (60_000_000, 60_000_000, 60_000_000),
        (60_000_001, 60_000_000, 120_000_000),
        (-1, 60_000_000, 0),
    ],
)
def test_window_end(ts_us, window_us, expected):
    assert client_quota_math.window_end_us(ts_us, window_us) == expected


@pytest.mark.parametrize(
    "values, fraction, expected",
    [
        ([1.0, 2.0, 3.0, 4.0, 100.0], 0.5, 3.0),
        ([1.0, 2.0, 3.0, 4.0, 100.0], 0.9, 61.6),
        ([5.0], 0.99, 5.0),
        ([2.0, 1.0], 1.0, 2.0),
        ([0.1, 0.1, 0.1], 0.37, 0.1),
        ([], 0.5, None),
    ],
)
def test_percentile(values, fraction, expected):
    result = client_quota_math.percentile(values, fraction)
    assert result == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(
    "rates, expected", [([0.0, 0.0], None), ([], None), ([0.1], 1024), ([1024.0], 2048), ([853.3], 1024)]
)
def test_recommended_quota(rates, expected):
    assert client_quota_math.recommended_quota(rates, 0.99, 1.2) == expected
