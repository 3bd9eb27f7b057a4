"""The decision timeline against the shared vectors, plus parameter checks and the shape of the rows."""

import datetime
from typing import NamedTuple

import decision_timeline_reference as dt
import pytest
import vector_cases
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

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


# -- checkpoints: a timeline resumed after any instant gives the rows of the whole history --------------------------
def resumed_after_every_instant(messages, params):
    """For each instant of the whole history's timeline but its last, a Resumed."""
    full = dt.decision_timeline(messages, **params)
    for row in full[:-1]:
        instant = dt.to_micros(row["at"])
        states = dt.checkpoints(messages, instant, **params)
        later = [message for message in messages if dt.to_micros(message["at"]) > instant]
        resumed = dt.decision_timeline(later, checkpoints=states, **params)
        yield Resumed([after for after in full if after["at"] > row["at"]], resumed, states)


class Resumed(NamedTuple):
    whole: list  # the whole history's rows after the instant
    resumed: list  # the rows from the checkpoints and the messages after the instant
    checkpoints: dict


@pytest.mark.parametrize(
    "case", [case for case in CASES if len(case["expected"]) > 1], ids=lambda case: case["id"]
)  # one row: nothing follows its instant
def test_a_timeline_resumed_after_any_instant_gives_the_whole_historys_rows(case):
    for step in resumed_after_every_instant(vector_messages(case), case["params"]):
        assert step.resumed == step.whole


def test_a_checkpoint_keeps_of_a_broker_gone_quiet_only_that_it_is_known():
    messages = [message(1, 30, 500), message(2, 30, 500)] + [message(1, 30 + 60 * n, 500) for n in range(1, 12)]
    params = {"policy": "graded", "check_interval": 60, "validity": 300}
    steps = list(resumed_after_every_instant(messages, params))
    assert all(step.resumed == step.whole for step in steps)
    last_states = steps[-1].checkpoints["c1"]
    assert last_states.latest[2] == {"broker_id": 2, "at_micros": dt.to_micros(START) + 30_000_000, "volumes": []}
    assert last_states.latest[1]["volumes"], "broker 1 still reports"
    assert all(row["fallback_applied"] for row in steps[-1].whole), (
        "broker 2, known and stale, keeps the data incomplete"
    )


def test_a_message_at_or_before_the_checkpoint_is_refused():
    messages = [message(1, 30, 500), message(1, 90, 500), message(1, 150, 500)]
    instant = dt.to_micros(START) + 120_000_000
    states = dt.checkpoints(messages, instant, "strimzi", 60, min_available_bytes=100)
    with pytest.raises(dt.TimelineError, match="at or before the checkpoint's instant"):
        dt.decision_timeline(messages[1:], "strimzi", 60, min_available_bytes=100, checkpoints=states)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reports=st.lists(
        st.tuples(st.integers(1, 3), st.integers(0, 40), st.integers(0, 59), st.integers(0, 1000)), max_size=40
    ),
    policy=st.sampled_from(["strimzi", "graded"]),
    fallback=st.sampled_from([0.0, 0.5, 1.0]),
    missing_data_action=st.sampled_from(["pause", "open"]),
)
def test_generated_histories_resumed_after_any_instant_give_the_whole_historys_rows(
    reports, policy, fallback, missing_data_action
):
    """Brokers that report now and then (gaps longer than V and F included), copies and rival messages at one instant,
    volumes on either side of the limits."""
    messages = [message(broker, minute * 60 + second, usable) for broker, minute, second, usable in reports]
    params = {"policy": policy, "check_interval": 60, "validity": 180, "fallback": fallback, "freshness": 150}
    params.update({"min_available_bytes": 300} if policy == "strimzi" else {"missing_data_action": missing_data_action})
    steps = list(resumed_after_every_instant(messages, params))
    assume(steps)  # a history of one instant has nothing to resume
    for step in steps:
        assert step.resumed == step.whole
