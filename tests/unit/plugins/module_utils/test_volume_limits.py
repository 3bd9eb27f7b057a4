"""The disk-limit rules against the shared vectors, plus validation messages."""

import pytest
import vector_cases

from ansible_collections.headroom.kafka.plugins.module_utils import volume_limits

CASES = vector_cases.load("volume_limits.json")["cases"]


def _decide(case):
    params = dict(case["params"])
    if case["policy"] == "strimzi":
        return volume_limits.strimzi_decision(case["volumes"], **params)
    return volume_limits.graded_decision(case["volumes"], params.pop("soft_limit"), params.pop("hard_limit"), **params)


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_vector(case):
    result = _decide(case)
    expected = case["expected"]
    assert result["throttle_factor"] == pytest.approx(expected["throttle_factor"])
    assert result["state"] == expected["state"]
    assert [[v["broker_id"], v["log_dir"]] for v in result["violations"]] == expected["violations"]
    least = result["least_headroom"]
    assert ([least["broker_id"], least["log_dir"]] if least else None) == expected["least_headroom"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "one of min_available_bytes or min_available_ratio is required"),
        ({"min_available_bytes": 1, "min_available_ratio": 0.1}, "mutually exclusive"),
        ({"min_available_bytes": -1}, "min_available_bytes must be an integer >= 0 (got -1)"),
        ({"min_available_ratio": 1.5}, "min_available_ratio must be between 0.0 and 1.0 inclusive (got 1.5)"),
        ({"min_available_ratio": -0.1}, "between 0.0 and 1.0"),
    ],
)
def test_strimzi_limit_errors(kwargs, message):
    with pytest.raises(volume_limits.LimitError, match=message.replace("(", r"\(").replace(")", r"\)")):
        volume_limits.strimzi_decision([], **kwargs)


@pytest.mark.parametrize(
    "soft, hard, message",
    [
        (
            {"type": "min_free_bytes", "level": 100},
            {"type": "min_free_bytes", "level": 200},
            "soft_limit.level must be greater than hard_limit.level",
        ),
        (
            {"type": "consumed_space", "level": 900},
            {"type": "consumed_space", "level": 800},
            "soft_limit.level must be less than hard_limit.level",
        ),
        ({"type": "min_free_bytes", "level": 100}, {"type": "consumed_space", "level": 200}, "must be the same"),
        ({"type": "free", "level": 1}, {"type": "min_free_bytes", "level": 0}, "soft_limit.type must be one of"),
        (
            {"type": "min_free_percentage", "level": 120},
            {"type": "min_free_percentage", "level": 10},
            "between 0 and 100",
        ),
        (
            {"type": "min_free_bytes", "level": -5},
            {"type": "min_free_bytes", "level": -10},
            "soft_limit.level must be >= 0",
        ),
        (
            {"type": "min_free_bytes", "level": "x"},
            {"type": "min_free_bytes", "level": 0},
            "soft_limit.level must be a number",
        ),
        ("PT1M", {"type": "min_free_bytes", "level": 0}, "soft_limit must be a dict"),
    ],
)
def test_graded_limit_errors(soft, hard, message):
    with pytest.raises(volume_limits.LimitError, match=message):
        volume_limits.graded_decision([], soft, hard)


def test_missing_data_action_error():
    with pytest.raises(volume_limits.LimitError, match="missing_data_action must be one of pause, open"):
        volume_limits.graded_decision(
            [],
            {"type": "min_free_bytes", "level": 2},
            {"type": "min_free_bytes", "level": 1},
            missing_data_action="wait",
        )


@pytest.mark.parametrize(
    "rate, factor, expected", [(1000.0, 1.0, 1000.0), (1000.0, 0.0, 1.0), (0.5, 1.0, 1.0), (1e9, 0.5, 5e8)]
)
def test_effective_produce_quota(rate, factor, expected):
    assert volume_limits.effective_produce_quota(rate, factor) == expected
