"""Stage 4 on Spark: the shared topic threshold vectors, the plan loader, and the same results as the pure rules."""

import datetime
import json
import random

import pytest
import vector_cases
from pyspark.sql import functions as F

from headroom_pipeline import schemas, topic_thresholds, topics
from headroom_pipeline.config import ConfigError

DOCUMENT = vector_cases.load("topic_thresholds.json")
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def parse(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def micros(moment):
    return (moment - EPOCH) // datetime.timedelta(microseconds=1)


def iso(value):
    return (EPOCH + datetime.timedelta(microseconds=value)).strftime("%Y-%m-%dT%H:%M:%SZ")


def traffic_frame(spark, rows):
    return spark.createDataFrame(
        [
            (
                parse(row["ts"]) if isinstance(row["ts"], str) else row["ts"],
                row["broker_id"],
                row.get("user"),
                row.get("client_id"),
                row["topic"],
                row["bytes_in"],
                row.get("bytes_out", 0),
            )
            for row in rows
        ],
        schemas.TRAFFIC_ROWS,
    )


def analyse(spark, rows, plan, chunk=topics.EWMA_CHUNK):
    thresholds, windows = topics.topic_analysis(traffic_frame(spark, rows), plan, None, chunk)
    thresholds = [row.asDict() for row in thresholds.orderBy("broker_id", "topic").collect()]
    windows = [
        row.asDict()
        for row in windows.select("*", F.unix_micros("ts").alias("ts_us"))
        .drop("ts")
        .orderBy("broker_id", "topic", "ts_us")
        .collect()
    ]
    return thresholds, windows


def test_meter_vectors(spark):
    """Each vector as one point of a meter: its previous rate as the state, the interval (0, seconds] with rate x
    seconds bytes."""
    cases = DOCUMENT["meters"]
    rows = [
        (case["id"], case["previous"], int(case["seconds"] * 1_000_000), int(case["rate"] * case["seconds"]))
        for case in cases
    ]
    frame = spark.createDataFrame(rows, "id string, previous double, ts_us long, bytes long")
    state = F.struct(F.col("previous").alias("rate"), F.lit(0).cast("long").alias("last_us"))
    point = F.struct("ts_us", F.lit(0).cast("long").alias("start_us"), "bytes")
    results = dict(frame.select("id", topics.meter_step(state, point)["rate"].alias("rate")).collect())
    for case in cases:
        assert results[case["id"]] == pytest.approx(case["expected"], rel=1e-12), case["id"]


@pytest.mark.parametrize("case", DOCUMENT["plans"], ids=[case["id"] for case in DOCUMENT["plans"]])
def test_plan_vectors_through_the_loader(tmp_path, case):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(case["plan"]))
    if case.get("valid"):
        assert topics.load_plan(str(path)) == topic_thresholds.validate_plan(case["plan"])
    else:
        with pytest.raises(ConfigError) as caught:
            topics.load_plan(str(path))
        assert str(caught.value).startswith("--topic-thresholds: ") and case["error"] in str(caught.value)


def chunk_sizes(case):
    """The burst case also folds in chunks of 2 points, so that its series carry the meter across chunks."""
    return [topics.EWMA_CHUNK, 2] if case["id"] == "burst" else [topics.EWMA_CHUNK]


@pytest.mark.parametrize(
    "case, chunk",
    [(case, chunk) for case in DOCUMENT["analyses"] for chunk in chunk_sizes(case)],
    ids=[f"{case['id']}-chunk{chunk}" for case in DOCUMENT["analyses"] for chunk in chunk_sizes(case)],
)
def test_analysis_vectors(spark, case, chunk):
    thresholds, windows = analyse(spark, case["traffic"], case["plan"], chunk)
    for window in windows:
        window["ts"] = iso(window["ts_us"])
    expected = case["expected"]
    if "thresholds" in expected:
        vector_cases.assert_rows(thresholds, expected["thresholds"], "thresholds")
    vector_cases.assert_rows(windows, expected["windows"], "windows")


def test_load_plan_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"--topic-thresholds: cannot read '.*missing.json'"):
        topics.load_plan(str(tmp_path / "missing.json"))
    broken = tmp_path / "broken.json"
    broken.write_text("{total: 1}")
    with pytest.raises(ConfigError, match=r"--plan: '.*broken.json' is not JSON"):
        topics.load_plan(str(broken), option="--plan")


def test_invalid_plan_fails_before_spark_work(spark):
    frame = traffic_frame(spark, [{"ts": "2026-11-22T00:00:10Z", "broker_id": 1, "topic": "t", "bytes_in": 1}])
    with pytest.raises(ConfigError, match="topics.t must be greater than 0"):
        topics.topic_analysis(frame, {"total_bytes_in_per_sec_threshold": 10, "topics": {"t": 0}})


def generated_traffic(seed=3):
    """A few thousand rows over 4 brokers: irregular instants, topics that come and go, rows without a topic, bursts."""
    rng = random.Random(seed)
    start = datetime.datetime(2026, 11, 22, tzinfo=datetime.timezone.utc)
    names = ["orders", "payments", "logs", "metrics", "audit", "clicks"]
    rows = []
    for broker in (1, 2, 3, 4):
        moment = start + datetime.timedelta(seconds=rng.randrange(0, 30))
        for _step in range(220):
            moment += datetime.timedelta(seconds=rng.choice([5, 10, 10, 30, 60, 240]))
            seconds = 10
            for name in names:
                if rng.random() < 0.55:
                    burst = 6.0 if rng.random() < 0.1 else 1.0
                    rows.append(
                        {
                            "ts": moment,
                            "broker_id": broker,
                            "topic": name,
                            "bytes_in": int(rng.uniform(20, 160) * burst * seconds),
                        }
                    )
            if rng.random() < 0.2:
                rows.append({"ts": moment, "broker_id": broker, "topic": None, "bytes_in": rng.randrange(0, 3000)})
    return rows


GENERATED_PLAN = {
    "total_bytes_in_per_sec_threshold": 450,
    "topics": {"orders": 100, "payments": 60},
    "brokers": {
        "3": {"total_bytes_in_per_sec_threshold": 300, "topics": {"logs": 40}},
        "4": {"topics": {"orders": 200}},
    },
}


def test_generated_traffic_matches_the_pure_rules(spark):
    rows = generated_traffic()
    thresholds, windows = analyse(spark, rows, GENERATED_PLAN, chunk=16)  # series of ~120 points: several chunks each
    expected_thresholds, expected_windows = topic_thresholds.topic_analysis(
        [dict(row, ts_us=micros(row["ts"])) for row in rows], GENERATED_PLAN
    )
    assert len(rows) > 2500
    vector_cases.assert_rows(thresholds, expected_thresholds, "thresholds")
    assert 100 < len(expected_windows) < len(rows) / 2, "the plan should trip now and then, not never or always"
    vector_cases.assert_rows(windows, expected_windows, "windows")
