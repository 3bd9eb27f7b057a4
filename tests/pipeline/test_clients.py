"""Stage 3 on Spark: the shared client quota vectors, and the same results as the pure rules on generated traffic."""

import datetime
import random

import pytest
import vector_cases
from pyspark.sql import functions as F

from headroom_pipeline import client_quota_math, clients, schemas
from headroom_pipeline.config import PipelineConfig

CASES = vector_cases.load("client_quotas.json")["cases"]
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
TIME_COLUMNS = ("window_start", "window_end")


def parse(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def iso(value):
    moment = EPOCH + datetime.timedelta(microseconds=value)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{moment.microsecond:06d}" if moment.microsecond else "") + "Z"


def config(**settings):
    return PipelineConfig(snapshots="unused", out="unused", **settings)


def traffic_frame(spark, rows):
    return spark.createDataFrame(
        [
            (
                parse(row["ts"]) if isinstance(row["ts"], str) else row["ts"],
                row["broker_id"],
                row["user"],
                row["client_id"],
                row.get("topic"),
                row["bytes_in"],
                row["bytes_out"],
            )
            for row in rows
        ],
        schemas.TRAFFIC_ROWS,
    )


def collect(frame, keys):
    """Rows as dicts in key order (nulls first), timestamps as microseconds since the epoch."""
    columns = [F.unix_micros(name).alias(name) if name in TIME_COLUMNS else name for name in frame.columns]
    return [row.asDict() for row in frame.select(*columns).orderBy(*keys).collect()]


def run(spark, rows, quotas, proposed=None, **settings):
    windows, recommendations = clients.client_analysis(traffic_frame(spark, rows), quotas, proposed, config(**settings))
    windows.cache()  # recommendations are computed from the same windows
    try:
        return collect(windows, ["user", "client_id", "broker_id", "window_start"]), collect(
            recommendations, ["user", "client_id"]
        )
    finally:
        windows.unpersist()


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_vector(spark, case):
    windows, recommendations = run(
        spark, case["traffic"], case["quotas"], case.get("proposed"), **case.get("config", {})
    )
    for window in windows:
        window.update({name: iso(window[name]) for name in TIME_COLUMNS})
    if "windows" in case["expected"]:
        vector_cases.assert_rows(windows, case["expected"]["windows"], "windows")
    if "recommendations" in case["expected"]:
        vector_cases.assert_rows(recommendations, case["expected"]["recommendations"], "recommendations")


def generated_traffic(seed=7, instants=90):
    """A few thousand rows: users with several client ids, unauthenticated and anonymous clients, irregular instants."""
    rng = random.Random(seed)
    start = datetime.datetime(2026, 11, 22, tzinfo=datetime.timezone.utc)
    people = [
        ("alice", "a1"),
        ("alice", "a2"),
        ("alice", None),
        ("bob", "shared"),
        ("carol", "shared"),
        (None, "shared"),
        (None, "legacy"),
        ("ANONYMOUS", "web"),
        ("dave", "etl"),
        ("erin", "etl-2"),
        (None, None),
    ]
    rows, moment = [], start
    for _step in range(instants):
        moment += datetime.timedelta(seconds=rng.choice([15, 20, 30, 45.5]))
        for broker in (1, 2, 3):
            for user, client_id in people:
                if rng.random() < 0.8:
                    rows.append(
                        {
                            "ts": moment,
                            "broker_id": broker,
                            "user": user,
                            "client_id": client_id,
                            "topic": "t",
                            "bytes_in": rng.randrange(0, 90_000),
                            "bytes_out": rng.randrange(0, 160_000),
                        }
                    )
    return rows


GENERATED_QUOTAS = [
    {"entity": {"user": "alice", "client_id": "a1"}, "quota_values": {"producer_byte_rate": 900.0}},
    {"entity": {"user": "alice"}, "quota_values": {"producer_byte_rate": 1500.0, "consumer_byte_rate": 2500.0}},
    {"entity": {"user": "<default>", "client_id": "etl"}, "quota_values": {"consumer_byte_rate": 1800.0}},
    {"entity": {"user": "<default>"}, "quota_values": {"producer_byte_rate": 1200.0}},
    {"entity": {"client_id": "shared"}, "quota_values": {"producer_byte_rate": 2000.0, "consumer_byte_rate": 3000.0}},
    {"entity": {"client_id": "<default>"}, "quota_values": {"consumer_byte_rate": 2200.0}},
]
GENERATED_PROPOSED = [
    {
        "entity": {"user": "<default>", "client_id": "<default>"},
        "quota_values": {"producer_byte_rate": 1400.0, "consumer_byte_rate": 2600.0},
    },
    {"entity": {"client_id": "legacy"}, "quota_values": {"producer_byte_rate": 800.0}},
]


def test_generated_traffic_matches_the_pure_rules(spark):
    rows = generated_traffic()
    settings = {
        "client_window": 60.0,
        "quota_window_num": 11,
        "quota_window_size": 1.0,
        "recommend_percentile": 0.95,
        "recommend_headroom": 1.3,
    }
    windows, recommendations = run(spark, rows, GENERATED_QUOTAS, GENERATED_PROPOSED, **settings)
    pure_rows = [dict(row, ts_us=(row["ts"] - EPOCH) // datetime.timedelta(microseconds=1)) for row in rows]
    expected_windows = client_quota_math.client_windows(
        pure_rows,
        GENERATED_QUOTAS,
        GENERATED_PROPOSED,
        settings["client_window"],
        settings["quota_window_num"],
        settings["quota_window_size"],
    )
    expected_recommendations = client_quota_math.client_recommendations(
        expected_windows, settings["recommend_percentile"], settings["recommend_headroom"]
    )
    assert len(rows) > 2000
    assert set(windows[0]) == set(expected_windows[0])
    vector_cases.assert_rows(windows, expected_windows, "windows")
    vector_cases.assert_rows(recommendations, expected_recommendations, "recommendations")
    assert any(window["throttle_time_ms"] > 0 for window in windows) and any(
        window["proposed_fetch_throttle_time_ms"] > 0 for window in windows
    )


def test_columns_without_proposed_quotas(spark):
    rows = [
        {"ts": "2026-11-22T00:00:10Z", "broker_id": 1, "user": "u", "client_id": "c", "bytes_in": 10, "bytes_out": 0}
    ]
    windows, recommendations = clients.client_analysis(traffic_frame(spark, rows), [], None, config())
    assert not [name for name in windows.columns + recommendations.columns if name.startswith("proposed_")]
    assert {
        "user",
        "client_id",
        "broker_id",
        "window_start",
        "window_end",
        "produce_bytes_per_sec",
        "producer_byte_rate",
        "quota_entity",
        "quota_used_fraction",
        "throttle_time_ms",
        "throttle_time_ms_kip13",
        "fetch_bytes_per_sec",
        "consumer_byte_rate",
        "fetch_quota_used_fraction",
        "fetch_throttle_time_ms",
    } <= set(windows.columns)
    assert {
        "user",
        "client_id",
        "recommended_producer_byte_rate",
        "recommended_consumer_byte_rate",
        "producer_byte_rate",
        "consumer_byte_rate",
        "windows_over_quota",
    } <= set(recommendations.columns)
