"""volume_limits' sizing option: each limit checked against the bytes that can arrive before the throttle acts, from
a peak rate given or from two observations, as a warning or a failure; bad sizing input refused before Kafka."""

import pytest
from ansible.module_utils import basic
from module_runner import run_module

MIB = 1 << 20
NOWHERE = ["127.0.0.1:1"]


def row(broker, usable, total=256 * MIB, log_dir="/data-0"):
    return {"broker_id": broker, "log_dir": log_dir, "total_bytes": total, "usable_bytes": usable}


NOW = [row(1, 150 * MIB), row(2, 250 * MIB)]


@pytest.fixture(name="warned")
def warned_fixture(monkeypatch):
    """What the module warns (Ansible's own record of warnings is kept across modules run in one process)."""
    found = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda module, text: found.append(text))
    return found


def test_the_issue_s_race_a_96_mib_limit_checked_every_2_s_at_92_mib_per_second_is_a_warning_naming_the_volume(warned):
    run = run_module(
        "volume_limits",
        {
            "log_dirs": NOW,
            "min_available_bytes": 96 * MIB,
            "sizing": {"check_interval": 2, "peak_fill_rate": 92 * MIB, "observation_seconds": 0.5},
        },
    )
    assert not run.failed, run.msg
    sizing = run.result["sizing"]
    assert sizing["reaction_seconds"] == 2.5
    assert [(v["broker_id"], v["least_limit_bytes"], v["covered"]) for v in sizing["volumes"]] == [
        (1, 230 * MIB, False),
        (2, 230 * MIB, False),
    ]
    assert [item["covering_check_interval"] for item in sizing["uncovered"]] == [None, None]
    warnings = sizing["warnings"]
    assert warned == warnings
    assert len(warnings) == 2 and warnings[0].startswith("broker 1 log dir /data-0: the limit keeps 100663296 bytes")
    assert "no check interval would at this rate: raise the limit" in warnings[0]
    assert run.result["throttle_factor"] == 1.0  # the verdict itself is unchanged


def test_on_uncovered_fail_fails_the_task_with_the_figures_and_the_evaluation():
    run = run_module(
        "volume_limits",
        {
            "log_dirs": NOW,
            "min_available_bytes": 96 * MIB,
            "sizing": {"check_interval": 120, "peak_fill_rate": MIB, "on_uncovered": "fail"},
        },
    )
    assert run.failed
    assert run.msg.startswith("2 limits cannot hold at the fill rate: broker 1 log dir /data-0")
    assert "the volume needs at least 125829120 bytes" in run.msg
    assert run.msg.endswith("a check interval of at most 96 s would")  # 96 MiB at 1 MiB/s
    assert run.result["throttle_factor"] == 1.0 and "sizing" in run.result


def test_a_limit_that_covers_the_rate_is_silent(warned):
    run = run_module(
        "volume_limits",
        {
            "log_dirs": NOW,
            "min_available_bytes": 96 * MIB,
            "sizing": {"check_interval": 10, "peak_fill_rate": MIB, "in_flight_bytes": MIB, "on_uncovered": "fail"},
        },
    )
    assert not run.failed, run.msg
    assert warned == [] and run.result["sizing"]["warnings"] == []
    assert [v["covered"] for v in run.result["sizing"]["volumes"]] == [True, True]
    assert run.result["sizing"]["uncovered"] == []


def test_rates_from_two_observations_check_only_the_volume_that_fills():
    earlier = [row(1, 250 * MIB), row(2, 250 * MIB), row(3, 250 * MIB)]
    run = run_module(
        "volume_limits",
        {
            "log_dirs": NOW,
            "min_available_ratio": 0.25,  # 64 MiB of 256 MiB
            "sizing": {"check_interval": 2, "earlier_log_dirs": earlier, "seconds_between": 4},
        },
    )
    assert not run.failed, run.msg
    sizing = run.result["sizing"]
    # broker 1 lost 100 MiB in 4 s (25 MiB/s: needs 50 MiB, has 64); broker 2 did not fill; broker 3 is not seen now.
    assert [(v["broker_id"], v["fill_rate"], v["covered"]) for v in sizing["volumes"]] == [
        (1, 25.0 * MIB, True),
        (2, 0.0, True),
    ]


def test_the_graded_policy_is_sized_at_its_hard_limit():
    run = run_module(
        "volume_limits",
        {
            "log_dirs": NOW,
            "policy": "graded",
            "soft_limit": {"type": "min_free_percentage", "level": 50},
            "hard_limit": {"type": "min_free_percentage", "level": 10},
            "sizing": {"check_interval": 30, "peak_fill_rate": MIB},
        },
    )
    assert not run.failed, run.msg
    volume = run.result["sizing"]["volumes"][0]
    assert volume["limit_bytes"] == int(0.1 * 256 * MIB) and volume["least_limit_bytes"] == 30 * MIB
    assert volume["covered"] is False
    assert "a check interval of at most 25 s would" in run.result["sizing"]["warnings"][0]


@pytest.mark.parametrize(
    ("sizing", "expected"),
    [
        ({"peak_fill_rate": MIB}, "missing required arguments: check_interval found in sizing"),
        ({"check_interval": 2}, "one of the following is required: peak_fill_rate, earlier_log_dirs found in sizing"),
        (
            {"check_interval": 2, "peak_fill_rate": MIB, "earlier_log_dirs": NOW, "seconds_between": 1},
            "parameters are mutually exclusive: peak_fill_rate|earlier_log_dirs found in sizing",
        ),
        (
            {"check_interval": 2, "earlier_log_dirs": NOW},
            "parameters are required together: earlier_log_dirs, seconds_between found in sizing",
        ),
        (
            {"check_interval": 0, "peak_fill_rate": MIB},
            "sizing.check_interval must be a number of seconds greater than 0",
        ),
        ({"check_interval": 2, "peak_fill_rate": -1}, "sizing.peak_fill_rate must be a number of bytes per second"),
        (
            {"check_interval": 2, "earlier_log_dirs": [{"broker_id": 1}], "seconds_between": 1},
            "sizing.earlier_log_dirs[0] lacks log_dir, total_bytes, usable_bytes",
        ),
        (
            {"check_interval": 2, "earlier_log_dirs": NOW, "seconds_between": 0},
            "sizing.seconds_between must be a number of seconds greater than 0",
        ),
        ({"check_interval": 2, "peak_fill_rate": MIB, "replication_bytes": -1}, "sizing.replication_bytes must be"),
        (
            {"check_interval": 2, "peak_fill_rate": MIB, "on_uncovered": "refuse"},
            "value of on_uncovered must be one of: warn, fail, got: refuse found in sizing",
        ),
    ],
)
def test_bad_sizing_input_is_refused_before_kafka_naming_the_field(sizing, expected):
    run = run_module("volume_limits", {"bootstrap_servers": NOWHERE, "min_available_bytes": 1, "sizing": sizing})
    assert run.failed
    assert expected in run.msg, run.msg
    assert "Unable to bootstrap" not in run.msg and run.elapsed < 1.0
