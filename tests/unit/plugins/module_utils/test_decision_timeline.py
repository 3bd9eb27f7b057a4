"""The decision timeline against the shared vectors, plus parameter checks and the shape of the rows."""

import datetime

import decision_timeline_reference as dt
import pytest
import vector_cases

from ansible_collections.headroom.kafka.plugins.module_utils import volume_limits
from ansible_collections.headroom.kafka.plugins.module_utils.snapshots import parse_timestamp

CASES = vector_cases.load("decision_timeline.json")["cases"]

UTC = datetime.timezone.utc
START = datetime.datetime(2026, 11, 20, tzinfo=UTC)
SOFT = {"type": "min_free_bytes", "level": 200}
HARD = {"type": "min_free_bytes", "level": 100}


def vector_messages(case, cluster="vector"):
    return [dict(message, cluster=cluster, at=parse_timestamp(message["at"])) for message in case["messages"]]


def message(broker_id, seconds, usable, cluster="c1"):
    return {
        "cluster": cluster,
        "broker_id": broker_id,
        "at": START + datetime.timedelta(seconds=seconds),
        "soft_limit": SOFT,
        "hard_limit": HARD,
        "volumes": [{"log_dir": "/data/a", "total_bytes": 1000, "usable_bytes": usable}],
    }


def test_vectors_cover_what_they_promise():
    assert len(CASES) >= 20
    assert len({case["id"] for case in CASES}) == len(CASES)
    assert {case["params"]["policy"] for case in CASES} == {"strimzi", "graded"}
    fallbacks = {case["params"]["fallback"] for case in CASES if case["params"]["policy"] == "strimzi"}
    assert {0.0, 0.5, 1.0} <= fallbacks


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_vector(case):
    rows = dt.decision_timeline(vector_messages(case), **case["params"])
    expected = case["expected"]
    assert [row["at"] for row in rows] == [parse_timestamp(row["at"]) for row in expected]
    for row, wanted in zip(rows, expected, strict=True):
        assert row["throttle_factor"] == pytest.approx(wanted["throttle_factor"], abs=1e-9), row["at"]
        assert (row["state"], row["fallback_applied"], row["violations"]) == (
            wanted["state"],
            wanted["fallback_applied"],
            wanted["violations"],
        ), row["at"]


def test_rows_carry_every_column_and_clusters_are_separate():
    messages = [message(1, 30, 500, "c2"), message(1, 30, 50, "c1"), message(1, 150, 50, "c1")]
    rows = dt.decision_timeline(messages, "strimzi", 60, min_available_bytes=100)
    assert [(row["cluster"], row["at"]) for row in rows] == [
        ("c1", START + datetime.timedelta(seconds=60)),
        ("c1", START + datetime.timedelta(seconds=120)),
        ("c1", START + datetime.timedelta(seconds=180)),
        ("c2", START + datetime.timedelta(seconds=60)),
    ]
    first = rows[0]
    assert first == {
        "cluster": "c1",
        "at": START + datetime.timedelta(seconds=60),
        "policy": "strimzi",
        "throttle_factor": 0.0,
        "state": volume_limits.PAUSE,
        "fallback_applied": False,
        "observed": True,
        "violations": [[1, "/data/a"]],
        "volumes_considered": 1,
        "brokers_considered": 1,
    }
    assert rows[1]["observed"] is False and rows[1]["brokers_considered"] == 0 and rows[1]["throttle_factor"] == 0.0
    assert rows[3]["state"] == volume_limits.OPEN, "c1's full volume does not throttle c2"
    assert first["at"].tzinfo is not None


def test_graded_counts_fresh_brokers_and_judged_volumes():
    unjudged = dict(message(2, 30, 10), soft_limit=None)
    rows = dt.decision_timeline([message(1, 30, 150), unjudged, message(1, 90, 150)], "graded", 60, freshness=60)
    assert [
        (row["brokers_considered"], row["volumes_considered"], row["observed"], row["fallback_applied"]) for row in rows
    ] == [(2, 1, True, False), (1, 1, True, True)]


def test_naive_datetimes_count_as_utc_and_input_is_left_alone():
    aware = message(1, 30, 500)
    naive = dict(aware, at=aware["at"].replace(tzinfo=None))
    before = dict(naive)
    assert dt.decision_timeline([naive], "graded", 60) == dt.decision_timeline([aware], "graded", 60)
    assert naive == before


def test_freshness_defaults_to_three_intervals():
    rows = dt.decision_timeline([message(1, 0, 500), message(2, 0, 500), message(1, 300, 500)], "graded", 60)
    assert [row["fallback_applied"] for row in rows] == [False, False, False, False, True, True]


@pytest.mark.parametrize(
    "kwargs, error, text",
    [
        ({"policy": "soft"}, dt.TimelineError, "policy must be one of strimzi, graded (got 'soft')"),
        ({"check_interval": 0}, dt.TimelineError, "check_interval must be a positive number of seconds"),
        ({"check_interval": 1e-9}, dt.TimelineError, "at least one microsecond"),
        ({"validity": -1}, dt.TimelineError, "validity must be a positive number of seconds"),
        ({"freshness": True}, dt.TimelineError, "freshness must be a positive number of seconds"),
        ({"fallback": 1.5}, dt.TimelineError, "fallback must be between 0.0 and 1.0 inclusive (got 1.5)"),
        (
            {"min_available_bytes": None},
            volume_limits.LimitError,
            "one of min_available_bytes or min_available_ratio is required",
        ),
        ({"min_available_ratio": 0.1}, volume_limits.LimitError, "mutually exclusive"),
        (
            {"policy": "graded", "missing_data_action": "wait"},
            dt.TimelineError,
            "missing_data_action must be one of pause, open (got 'wait')",
        ),
    ],
)
def test_parameter_errors(kwargs, error, text):
    arguments = {"policy": "strimzi", "check_interval": 60, "min_available_bytes": 100}
    arguments.update(kwargs)
    with pytest.raises(error) as raised:
        dt.decision_timeline([message(1, 30, 500)], **arguments)
    assert text in str(raised.value)


def test_no_messages_no_rows():
    assert dt.decision_timeline([], "strimzi", 60, min_available_ratio=0.1) == []
