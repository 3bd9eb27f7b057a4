"""The guard's wait before its next decision (plugins/module_utils/guard_polling.py): the interval, halved towards the
limit while a volume closes in on it, never under the fastest interval."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import disk_guard, guard_polling

MIB = 1 << 20
STRIMZI = disk_guard.Policy("strimzi", min_available_bytes=64 * MIB)
GRADED = disk_guard.Policy(
    "graded",
    soft_limit={"type": "min_free_percentage", "level": 50},
    hard_limit={"type": "min_free_percentage", "level": 25},
)


def volumes(*usable, total=512 * MIB):
    return [
        {"broker_id": broker, "log_dir": "/data-0", "total_bytes": total, "usable_bytes": free}
        for broker, free in enumerate(usable, start=1)
    ]


@pytest.mark.parametrize(
    ("earlier", "later", "expected"),
    [
        # 10 MiB/s, 96 MiB above the limit: 9.6 s to it, so 4.8 s
        ((0, volumes(170 * MIB, 300 * MIB)), (1, volumes(160 * MIB, 300 * MIB)), 4.8),
        # 1 s from the limit: the fastest interval
        ((0, volumes(84 * MIB)), (1, volumes(74 * MIB)), 1.0),
        # half the time to the limit beyond the interval: the interval
        ((0, volumes(500 * MIB)), (1, volumes(499 * MIB)), 30),
        # past the limit: the throttle holds, the interval
        ((0, volumes(70 * MIB)), (1, volumes(60 * MIB)), 30),
        # gaining space, or the same: the interval
        ((0, volumes(100 * MIB)), (2, volumes(120 * MIB)), 30),
        # the first observation, or two at one instant: the interval
        (None, (1, volumes(65 * MIB)), 30),
        ((1, volumes(100 * MIB)), (1, volumes(65 * MIB)), 30),
    ],
)
def test_the_wait_halves_the_time_to_the_limit_between_the_fastest_and_the_interval(earlier, later, expected):
    wait, _closing = guard_polling.next_wait(STRIMZI, earlier, later, interval=30, fastest=1)
    assert wait == pytest.approx(expected)


def test_the_closest_volume_is_named_with_its_rate_and_time():
    wait, closing = guard_polling.next_wait(
        STRIMZI, (10, volumes(200 * MIB, 100 * MIB)), (12, volumes(180 * MIB, 90 * MIB)), interval=30
    )
    # broker 1: 116 MiB above at 10 MiB/s (11.6 s); broker 2: 26 MiB above at 5 MiB/s (5.2 s)
    assert closing == {"broker_id": 2, "log_dir": "/data-0", "fill_rate": 5 * MIB, "seconds_to_limit": 5.2}
    assert wait == pytest.approx(2.6)


def test_the_graded_policy_closes_in_on_its_hard_limit():
    # hard limit 25 % of 512 MiB = 128 MiB free; 32 MiB above it at 8 MiB/s: 4 s
    wait, closing = guard_polling.next_wait(GRADED, (0, volumes(168 * MIB)), (1, volumes(160 * MIB)), interval=30)
    assert closing["seconds_to_limit"] == 4 and wait == 2


def test_polling_converges_on_the_crossing_at_a_steady_rate():
    """At a steady 16 MiB/s from 1 GiB above the limit, each decision halves the time left: the one that sees the
    crossing comes at most one fastest interval after it."""
    rate, limit, free, now = 16 * MIB, 64 * MIB, 64 * MIB + 1024 * MIB, 0.0
    earlier = (now - 30, volumes(free + 30 * rate, total=4096 * MIB))
    crossing = (free - limit) / rate
    while True:
        later = (now, volumes(free - rate * now, total=4096 * MIB))
        if later[1][0]["usable_bytes"] <= limit:
            break
        wait, _closing = guard_polling.next_wait(STRIMZI, earlier, later, interval=30, fastest=0.5)
        earlier, now = later, now + wait
    assert crossing <= now <= crossing + 0.5


@pytest.mark.parametrize("fastest", [0, -1, 31])
def test_a_fastest_interval_out_of_range_is_refused_naming_it(fastest):
    with pytest.raises(guard_polling.PollingError, match="the fastest interval must be greater than 0 and at most"):
        guard_polling.next_wait(STRIMZI, None, (0, []), interval=30, fastest=fastest)
