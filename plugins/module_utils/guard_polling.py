# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long the guard waits before its next decision, with no I/O: its interval, shortened while a volume nears the
limit at which producers are paused.

Each volume's fill rate is the free space it lost between the last two observations, per second, and its time to the
limit is what it has above the limit over that rate. The guard then waits half of the shortest time to the limit, never
less than its fastest interval and never more than its interval: the waits halve as the volume closes in, so the guard
observes the crossing at most one fastest interval after it happens (at the same rate), where a fixed interval may
leave a whole interval. A volume already at its limit, one that does not fill and one seen once only leave the
interval as it is: the throttle holds, or nothing is coming.

Sizing (limit_sizing): with a volume whose fill began at least one interval before it reaches its limit, the check
interval of the rule is the fastest interval.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, Iterable, Optional, Tuple

from ansible_collections.headroom.kafka.plugins.module_utils import limit_sizing, volume_limits

# The shortest wait the guard is allowed by default. A decision (DescribeClientQuotas, DescribeCluster, DescribeLogDirs
# to every broker, and AlterClientQuotas when the factor changes) took 40 to 60 ms from start to end on 3 brokers of
# real Kafka (bench/alert_latency_bench.py), so a decision a second keeps the guard busy at most 6 % of the time and
# sends 2 requests and one per broker a second, for as long as a volume closes in on its limit.
FASTEST_INTERVAL = 1.0


def fastest_interval(interval: float, fastest: Optional[float] = None) -> float:
    """The shortest wait the guard allows itself: ``fastest`` when given, else FASTEST_INTERVAL, never more than the
    interval."""
    return min(FASTEST_INTERVAL, interval) if fastest is None else fastest


class PollingError(ValueError):
    """An invalid interval; the message names it, its value and what is allowed."""


def pause_limit_bytes(policy: Any, volume: Dict[str, Any]) -> float:
    """The free bytes at which the guard's ``policy`` (disk_guard.Policy) pauses producers on ``volume``."""
    if policy.name == "graded":
        return limit_sizing.limit_bytes_of(volume, hard_limit=policy.hard_limit)
    return limit_sizing.limit_bytes_of(volume, policy.min_available_bytes, policy.min_available_ratio)


def next_wait(
    policy: Any,
    earlier: Optional[Tuple[float, Iterable[Dict[str, Any]]]],
    later: Tuple[float, Iterable[Dict[str, Any]]],
    interval: float,
    fastest: float = FASTEST_INTERVAL,
) -> Tuple[float, Optional[Dict[str, Any]]]:
    """(seconds to wait, the volume that shortened it or None). ``earlier`` and ``later``: (seconds, volumes) of two
    observations (``earlier`` None at the first); ``interval`` and ``fastest``: the longest and shortest waits."""
    if not 0 < fastest <= interval:
        raise PollingError(
            "the fastest interval must be greater than 0 and at most the interval {0:g} s (got {1!r})".format(
                interval, fastest
            )
        )
    if earlier is None or later[0] <= earlier[0]:
        return interval, None
    later_volumes = list(later[1])
    rates = limit_sizing.fill_rates(earlier[1], later_volumes, later[0] - earlier[0])
    shortest = None  # type: Optional[Dict[str, Any]]
    for volume in later_volumes:
        rate = rates.get(volume_limits.volume_key(volume))
        if not rate:
            continue
        above = volume["usable_bytes"] - pause_limit_bytes(policy, volume)
        if above <= 0:
            continue
        seconds = above / rate
        if shortest is None or seconds < shortest["seconds_to_limit"]:
            shortest = {
                "broker_id": volume["broker_id"],
                "log_dir": volume["log_dir"],
                "fill_rate": rate,
                "seconds_to_limit": seconds,
            }
    if shortest is None or shortest["seconds_to_limit"] / 2.0 >= interval:
        return interval, None
    return max(shortest["seconds_to_limit"] / 2.0, fastest), shortest
