"""The limit sizing rule (plugins/module_utils/limit_sizing.py): the least free space a limit must keep for a volume's
peak fill rate and the throttle's reaction, the longest check interval a limit covers, fill rates from observations,
and the volumes whose limit does not cover their rate. The shared vectors (tests/vectors/limit_sizing.json) first."""

import pytest
import vector_cases

from ansible_collections.headroom.kafka.plugins.module_utils import limit_sizing

VECTORS = vector_cases.load("limit_sizing.json")
MIB = 1 << 20


@pytest.mark.parametrize("case", VECTORS["least_limit"], ids=lambda case: case["name"])
def test_least_limit_vectors(case):
    assert limit_sizing.least_limit_bytes(**case["input"]) == case["least_limit_bytes"]
    covering = case["longest_check_interval_for"]
    parts = {key: value for key, value in case["input"].items() if key not in ("check_interval",)}
    assert limit_sizing.longest_check_interval(covering["limit_bytes"], **parts) == covering["longest_check_interval"]


@pytest.mark.parametrize("case", VECTORS["peak_fill_rate"], ids=lambda case: case["name"])
def test_peak_fill_rate_vectors(case):
    observations = [tuple(observation) for observation in case["observations"]]
    assert limit_sizing.peak_fill_rate(observations) == case["peak_fill_rate"]


@pytest.mark.parametrize("case", VECTORS["least_limit"], ids=lambda case: case["name"])
def test_the_longest_interval_a_limit_covers_is_covered_and_one_second_more_is_not(case):
    parts = {key: value for key, value in case["input"].items() if key not in ("check_interval",)}
    for limit in (case["least_limit_bytes"], 2 * case["least_limit_bytes"] + 1, 64 * MIB):
        longest = limit_sizing.longest_check_interval(limit, **parts)
        if longest is None:
            assert limit_sizing.least_limit_bytes(check_interval=1, **parts) > limit
        elif longest < limit_sizing.LONGEST_INTERVAL:
            assert limit_sizing.least_limit_bytes(check_interval=longest, **parts) <= limit
            assert limit_sizing.least_limit_bytes(check_interval=longest + 1, **parts) > limit


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"peak_fill_rate": -1, "check_interval": 1}, "peak_fill_rate must be a finite number >= 0 (got -1)"),
        (
            {"peak_fill_rate": 1, "check_interval": float("nan")},
            "check_interval must be a finite number >= 0 (got nan)",
        ),
        ({"peak_fill_rate": 1, "check_interval": 1, "observation_seconds": True}, "observation_seconds must be"),
        ({"peak_fill_rate": 1, "check_interval": 1, "in_flight_bytes": "1"}, "in_flight_bytes must be a finite"),
        (
            {"peak_fill_rate": float("inf"), "check_interval": 1},
            "peak_fill_rate must be a finite number >= 0 (got inf)",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_field_the_value_and_what_is_allowed(arguments, message):
    with pytest.raises(limit_sizing.SizingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        limit_sizing.least_limit_bytes(**arguments)


def volume(broker, usable, total=256 * MIB, log_dir="/data-0", **extra):
    return {"broker_id": broker, "log_dir": log_dir, "total_bytes": total, "usable_bytes": usable, **extra}


def test_fill_rates_between_two_observations():
    earlier = [volume(1, 200 * MIB), volume(2, 100 * MIB), volume(3, 50 * MIB), volume(4, 10 * MIB)]
    later = [
        volume(1, 100 * MIB),  # lost 100 MiB in 2 s
        volume(2, 120 * MIB),  # gained space
        volume(3, 40 * MIB, total=512 * MIB),  # another filesystem now
        volume(4, None),  # size unknown
        volume(5, 10 * MIB),  # not observed before
    ]
    assert limit_sizing.fill_rates(earlier, later, 2.0) == {(1, "/data-0"): 50 * MIB, (2, "/data-0"): 0.0}
    with pytest.raises(limit_sizing.SizingError, match=r"seconds between two observations must be > 0 \(got 0\)"):
        limit_sizing.fill_rates(earlier, later, 0)


def test_the_issue_s_case_a_96_mib_limit_at_92_mib_per_second_and_2_s_is_not_covered():
    """The plugin on 256 MiB volumes, 96 MiB free per volume, checked every 2 s, a volume filling at 92 MiB/s: the
    whole volume filled before the throttle held. The rule says so, and which interval would have covered it (none)."""
    volumes = [volume(1, 150 * MIB), volume(2, 250 * MIB)]
    rates = {(1, "/data-0"): 92.0 * MIB, (2, "/data-0"): 1.0 * MIB}
    uncovered = limit_sizing.uncovered_limits(volumes, rates, 2, min_available_bytes=96 * MIB, observation_seconds=0.5)
    assert [(item["broker_id"], item["least_limit_bytes"], item["covering_check_interval"]) for item in uncovered] == [
        (1, 230 * MIB, None)
    ]
    warning = limit_sizing.uncovered_warning(uncovered[0], 2)
    assert warning.startswith(
        "broker 1 log dir /data-0: the limit keeps 100663296 bytes free, but at 96468992 bytes/s the volume needs at "
        "least 241172480 bytes to hold until the throttle acts with a 2 s check interval"
    )
    assert warning.endswith("no check interval would at this rate: raise the limit")


def test_a_ratio_limit_is_sized_by_each_volume_s_total():
    volumes = [volume(1, 900 * MIB, total=1024 * MIB), volume(2, 900 * MIB, total=4096 * MIB)]
    rates = {(1, "/data-0"): 1.0 * MIB, (2, "/data-0"): 1.0 * MIB}
    uncovered = limit_sizing.uncovered_limits(volumes, rates, 60, min_available_ratio=0.05)
    # 5 % of 1 GiB is 51.2 MiB, short of 60 MiB; 5 % of 4 GiB (204.8 MiB) covers it.
    assert [(item["broker_id"], item["limit_bytes"], item["covering_check_interval"]) for item in uncovered] == [
        (1, int(0.05 * 1024 * MIB), 51)
    ]
    assert "a check interval of at most 51 s would" in limit_sizing.uncovered_warning(uncovered[0], 60)


def test_uncovered_volumes_come_largest_shortfall_first_and_need_one_limit():
    volumes = [volume(1, 1), volume(2, 1), volume(3, 1, log_dir="/data-1", error="KafkaStorageException")]
    rates = {(1, "/data-0"): 1.0 * MIB, (2, "/data-0"): 2.0 * MIB, (3, "/data-1"): 9.0 * MIB}
    uncovered = limit_sizing.uncovered_limits(volumes, rates, 10, min_available_bytes=MIB)
    assert [item["broker_id"] for item in uncovered] == [2, 1]
    with pytest.raises(ValueError, match="one of min_available_bytes or min_available_ratio is required"):
        limit_sizing.uncovered_limits(volumes, rates, 10)


@pytest.mark.parametrize(
    ("hard_limit", "limit_bytes"),
    [
        ({"type": "min_free_bytes", "level": 10 * MIB}, 10 * MIB),
        ({"type": "min_free_percentage", "level": 25}, 64 * MIB),
        ({"type": "consumed_space", "level": 200 * MIB}, 56 * MIB),
        ({"type": "consumed_space", "level": 300 * MIB}, 0),  # past the volume's size: nothing is kept free
    ],
)
def test_the_graded_policy_s_limit_is_the_free_space_at_its_hard_limit(hard_limit, limit_bytes):
    assert limit_sizing.limit_bytes_of(volume(1, 100 * MIB), hard_limit=hard_limit) == limit_bytes


def test_sizing_check_gives_every_volume_with_a_rate_and_the_uncovered_ones_with_a_warning_each():
    volumes = [volume(2, 100 * MIB), volume(1, 100 * MIB), volume(3, None)]
    rates = limit_sizing.fill_rates_of(volumes, peak_fill_rate=4 * MIB)
    assert rates == {(2, "/data-0"): 4 * MIB, (1, "/data-0"): 4 * MIB}
    checked = limit_sizing.sizing_check(
        volumes, {**rates, (1, "/data-0"): MIB}, 10, {"observation_seconds": 1}, min_available_bytes=32 * MIB
    )
    assert checked["reaction_seconds"] == 11
    assert [(v["broker_id"], v["least_limit_bytes"], v["covered"]) for v in checked["volumes"]] == [
        (1, 11 * MIB, True),
        (2, 44 * MIB, False),
    ]
    assert [item["broker_id"] for item in checked["uncovered"]] == [2] and len(checked["warnings"]) == 1
    with pytest.raises(limit_sizing.SizingError, match=r"unknown parts of the reaction: \['interval'\]"):
        limit_sizing.sizing_check(volumes, rates, 10, {"interval": 1}, min_available_bytes=1)
    with pytest.raises(limit_sizing.SizingError, match="a fill rate needs peak_fill_rate"):
        limit_sizing.fill_rates_of(volumes)
