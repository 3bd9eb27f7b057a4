"""The running guard against the shared decision timeline vectors (tests/vectors/decision_timeline.json).

Each case is replayed through Guard.decide, the step the guard process runs every interval: configured from a
configuration file as the process is, driven at the case's check instants, asking a fake cluster that shows what
vector_cases.check_observations says the cluster showed at that instant, and reading back the client quotas it
applied the check before (the factor it keeps while an observation fails is the one Kafka holds). No Kafka.
"""

import io
import json

import pytest
import vector_cases
from fake_kafka import FakeAdapter

from ansible_collections.headroom.kafka.plugins.module_utils import disk_guard
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError
from ansible_collections.headroom.kafka.plugins.module_utils.snapshots import parse_timestamp
from headroom_guard import config
from headroom_guard.guard import Guard

CASES = vector_cases.load("decision_timeline.json")["cases"]
DEFAULT_RATE = 1000000  # the <default> user's produce rate: every factor of the vectors reads back exactly


class CheckedCluster(FakeAdapter):
    """The cluster at one check: the brokers in its view with their log dirs, or a broker's failure to answer.
    Its client quotas stay from one check to the next."""

    def show(self, observation):
        self.log_dirs = {
            broker: [dict(volume, error=None, partitions=0, partition_bytes=0) for volume in volumes]
            for broker, volumes in observation["answers"].items()
        }
        for broker in observation["silent"]:
            self.log_dirs[broker] = KafkaAdapterError(f"broker {broker} did not answer", broker=broker)

    def default_user_rate(self):
        return self.store[disk_guard.DEFAULT_USER][1][disk_guard.PRODUCE]


def guard_options(case):
    """The disk_guard options a case's params stand for; None when the guard cannot be configured for the case."""
    params = case["params"]
    options = {
        "bootstrap_servers": ["127.0.0.1:9092"],
        "default_producer_byte_rate": DEFAULT_RATE,
        "policy": params["policy"],
    }
    if params["policy"] == "strimzi":
        options.update(
            throttle_factor_fallback=params["fallback"],
            throttle_factor_validity=str(params["validity"]),
            **{name: params[name] for name in ("min_available_bytes", "min_available_ratio") if name in params},
        )
        return options
    limits = vector_cases.shared_graded_limits(case)
    if limits is None:
        return None
    options.update(soft_limit=limits[0], hard_limit=limits[1], missing_data_action=params["missing_data_action"])
    if "factor_step" in params:
        options["throttle_factor_step"] = params["factor_step"]
    return options


def configured_guard(tmp_path, options):
    path = tmp_path / "guard.json"
    path.write_text(json.dumps(options), encoding="utf-8")
    params, settings = config.load(str(path))
    stream = io.StringIO()
    return Guard(params, settings, stream=stream), stream


def decisions_of(case, tmp_path):
    """The guard's result at each check instant of the case."""
    guard, stream = configured_guard(tmp_path, guard_options(case))
    cluster = CheckedCluster()
    guard.adapter = cluster  # the connection the guard keeps between decisions
    results = []
    for observation in vector_cases.check_observations(case):
        cluster.show(observation)
        result = guard.decide(observation["at"])
        assert result is not None, stream.getvalue()
        assert cluster.default_user_rate() == disk_guard.scaled_rate(DEFAULT_RATE, result["throttle_factor"]), (
            "Kafka holds the quotas of the factor decided"
        )
        results.append(result)
    return results


# The graded vectors whose messages carry limits of their own (the proposal lets each broker publish its soft and hard
# limit) are not the guard's to replay: it judges every volume with the one pair its configuration gives.
REPLAYABLE = [case for case in CASES if guard_options(case) is not None]


def test_only_vectors_with_per_message_limits_are_left_to_the_pipeline():
    left = [case for case in CASES if case not in REPLAYABLE]
    assert all(case["params"]["policy"] == "graded" for case in left)
    assert len(left) <= 4, "the guard replays every vector it can judge with one pair of limits"


@pytest.mark.parametrize("case", REPLAYABLE, ids=[case["id"] for case in REPLAYABLE])
def test_vector(case, tmp_path):
    # The graded rules' fallback is their missing-data action, which the guard reports as missing_data_applied.
    fallback = "missing_data_applied" if case["params"]["policy"] == "graded" else "fallback_applied"
    for result, wanted in zip(decisions_of(case, tmp_path), case["expected"], strict=True):
        where = f"{wanted['at']}: {result['reason']}"
        assert result["decided_at"] == parse_timestamp(wanted["at"]).timestamp(), where
        assert result["throttle_factor"] == pytest.approx(wanted["throttle_factor"], abs=1e-9), where
        assert (result["state"], result[fallback]) == (wanted["state"], wanted["fallback_applied"]), where
        assert [[violation["broker_id"], violation["log_dir"]] for violation in result["violations"]] == wanted[
            "violations"
        ], where


def test_every_strimzi_case_and_most_graded_ones_replay():
    strimzi = [case for case in CASES if case["params"]["policy"] == "strimzi"]
    graded = [case for case in CASES if case["params"]["policy"] == "graded"]
    assert strimzi and all(guard_options(case) for case in strimzi)
    assert sum(guard_options(case) is not None for case in graded) >= 2 * len(graded) // 3
