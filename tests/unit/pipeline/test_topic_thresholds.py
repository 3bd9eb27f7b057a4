"""Topic threshold rules against the shared vectors (tests/vectors/topic_thresholds.json), plus the rules on their
own."""

import datetime
import math

import pytest
import vector_cases

from headroom_pipeline import topic_thresholds

DOCUMENT = vector_cases.load("topic_thresholds.json")
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def micros(text):
    return (datetime.datetime.fromisoformat(text.replace("Z", "+00:00")) - EPOCH) // datetime.timedelta(microseconds=1)


def iso(value):
    return (EPOCH + datetime.timedelta(microseconds=value)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("case", DOCUMENT["meters"], ids=[case["id"] for case in DOCUMENT["meters"]])
def test_meter_vector(case):
    assert topic_thresholds.meter_update(case["previous"], case["rate"], case["seconds"]) == pytest.approx(
        case["expected"], rel=1e-12
    )


@pytest.mark.parametrize("case", DOCUMENT["plans"], ids=[case["id"] for case in DOCUMENT["plans"]])
def test_plan_vector(case):
    if case.get("valid"):
        plan = topic_thresholds.validate_plan(case["plan"])
        assert topic_thresholds.validate_plan(plan) == plan  # a validated plan validates to itself
    else:
        with pytest.raises(topic_thresholds.TopicThresholdError) as caught:
            topic_thresholds.validate_plan(case["plan"])
        assert case["error"] in str(caught.value)


@pytest.mark.parametrize("case", DOCUMENT["analyses"], ids=[case["id"] for case in DOCUMENT["analyses"]])
def test_analysis_vector(case):
    rows = [dict(row, ts_us=micros(row["ts"])) for row in case["traffic"]]
    thresholds, windows = topic_thresholds.topic_analysis(rows, case["plan"])
    for window in windows:
        window["ts"] = iso(window.pop("ts_us"))
    expected = case["expected"]
    if "thresholds" in expected:
        vector_cases.assert_rows(thresholds, expected["thresholds"], "thresholds")
    vector_cases.assert_rows(windows, expected["windows"], "windows")
    if "ewma_at" in expected:
        (broker,) = {row["broker_id"] for row in rows}
        instants = {}
        for row in rows:
            instants[row["ts_us"]] = instants.get(row["ts_us"], 0) + row["bytes_in"]
        rates = topic_thresholds.meter_series(instants, topic_thresholds.interval_starts(instants))
        assert [rates[instant] for instant in sorted(rates)] == pytest.approx(expected["ewma_at"]["total"], rel=1e-9), (
            broker
        )


def test_alpha_is_the_meters():
    assert topic_thresholds.ALPHA == pytest.approx(1 - math.exp(-5 / 60))
    assert topic_thresholds.meter_update(100.0, 0.0, 5) == pytest.approx(100.0 * (1 - topic_thresholds.ALPHA))


def test_broker_plan_merges_overrides():
    plan = topic_thresholds.validate_plan(
        {
            "total_bytes_in_per_sec_threshold": 1000,
            "topics": {"a": 600, "b": 100},
            "brokers": {"02": {"topics": {"a": 300}}, "3": {"total_bytes_in_per_sec_threshold": 800}},
        }
    )
    assert sorted(plan["brokers"]) == ["2", "3"]
    assert topic_thresholds.broker_plan(plan, 2) == (1000.0, {"a": 300.0, "b": 100.0})
    assert topic_thresholds.broker_plan(plan, 3) == (800.0, {"a": 600.0, "b": 100.0})
    assert topic_thresholds.broker_plan(plan, 9) == (1000.0, {"a": 600.0, "b": 100.0})


def test_duplicate_broker_ids():
    with pytest.raises(topic_thresholds.TopicThresholdError, match="brokers.01: broker 1 is listed twice"):
        topic_thresholds.validate_plan({"total_bytes_in_per_sec_threshold": 1, "brokers": {"1": {}, "01": {}}})


@pytest.mark.parametrize(
    "total, explicit, topics, expected",
    [
        (1000.0, {"a": 600.0}, ["a", "b", "c"], 200.0),
        (1000.0, {"a": 600.0}, ["a"], None),
        (1000.0, {}, ["x"], 1000.0),
        (1000.0, {"a": 600.0, "gone": 400.0}, ["a", "b"], 0.0),
    ],
)
def test_implicit_threshold(total, explicit, topics, expected):
    """Explicit thresholds reserve their share on every broker, whether or not their topic has traffic there."""
    assert topic_thresholds.implicit_threshold(total, explicit, topics) == expected


@pytest.mark.parametrize(
    "total, topic, expected", [(1001.0, 601.0, True), (1000.0, 601.0, False), (1001.0, 600.0, False)]
)
def test_rejects_needs_both_over(total, topic, expected):
    assert topic_thresholds.rejects(total, 1000.0, topic, 600.0) is expected


def test_interval_starts():
    assert topic_thresholds.interval_starts([100, 130, 190]) == {100: 70, 130: 100, 190: 130}
    assert topic_thresholds.interval_starts([5]) == {}
