"""The shared test vectors (tests/vectors/): loading them and comparing result rows with a vector's expected rows.

module_utils, the disk guard and the Spark stages are held to the same vectors; this is the one place their tests read
and compare them, so every side judges a vector the same way. check_observations turns a decision timeline case's
snapshot history into what a decider that asks the cluster at each check (the guard) sees.
"""

import json
import os

import decision_timeline_reference as reference
import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.snapshots import parse_timestamp

VECTORS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors")


def load(name):
    """The parsed vector document ``name`` (such as ``topic_thresholds.json``)."""
    with open(os.path.join(VECTORS_DIR, name), encoding="utf-8") as handle:
        return json.load(handle)


def assert_rows(actual, expected, what):
    """Each expected row against the actual row at its position: only the keys it gives, numbers with tolerance
    (JSON does not tell 5 from 5.0, so an integer expected against a float result is compared as a number)."""
    assert len(actual) == len(expected), f"{what}: {len(actual)} rows, expected {len(expected)}: {actual}"
    for index, (got, wanted) in enumerate(zip(actual, expected, strict=True)):
        for key, value in wanted.items():
            where = f"{what}[{index}].{key}"
            if isinstance(value, float) or (isinstance(value, int) and isinstance(got[key], float)):
                assert got[key] == pytest.approx(value, rel=1e-9), where
            else:
                assert got[key] == value, where


def check_observations(case):
    """What the cluster shows at each check instant of a decision_timeline case (its expected rows' ``at``), for a
    decider that asks the cluster at every check instead of reading a snapshot history, as the disk guard does:
    [{"at": aware datetime, "answers": {broker_id: [volume, ...]}, "silent": [broker_id, ...]}].

    A broker in ``answers`` answered with the volumes of its latest message (at <= t; duplicates resolved by the
    vectors' rule); a broker in ``silent`` is in the cluster's view but did not answer; any other broker has left the
    view. Policy strimzi: the brokers with a message since the previous instant (t - I < at <= t) answer, and when
    none did the observation failed: every broker seen so far is silent. Policy graded: every broker seen so far is in
    the view, the fresh ones (t - at <= freshness, three intervals unless given) answer and the stale ones are silent.
    """
    params = case["params"]
    interval = reference.duration_micros(params["check_interval"])
    freshness = params.get("freshness")
    freshness = 3 * interval if freshness is None else reference.duration_micros(freshness)
    messages = reference.deduplicate(
        dict(message, cluster="vector", at=parse_timestamp(message["at"])) for message in case["messages"]
    )
    messages.sort(key=lambda message: message["at_micros"])
    observations = []
    for row in case["expected"]:
        at = parse_timestamp(row["at"])
        instant = reference.to_micros(at)
        latest = {message["broker_id"]: message for message in messages if message["at_micros"] <= instant}
        if params["policy"] == "strimzi":
            answering = {broker for broker, message in latest.items() if message["at_micros"] > instant - interval}
            silent = set() if answering else set(latest)
        else:
            answering = {broker for broker, message in latest.items() if instant - message["at_micros"] <= freshness}
            silent = set(latest) - answering
        observations.append(
            {
                "at": at,
                "answers": {broker: latest[broker]["volumes"] for broker in sorted(answering)},
                "silent": sorted(silent),
            }
        )
    return observations


def shared_graded_limits(case):
    """(soft_limit, hard_limit) that every message of a case carries, or None when the messages' limits differ or some
    message has none: a decider configured with one pair of limits, as the disk guard is, can replay only such
    cases."""
    pairs = {json.dumps([message["soft_limit"], message["hard_limit"]], sort_keys=True) for message in case["messages"]}
    if len(pairs) != 1:
        return None
    soft_limit, hard_limit = json.loads(pairs.pop())
    if soft_limit is None or hard_limit is None:
        return None
    return soft_limit, hard_limit
