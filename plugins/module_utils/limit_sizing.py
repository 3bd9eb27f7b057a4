# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How much free space a limit must keep so that the throttle holds before the volume fills, with no I/O.

A limit is a promise only when it covers every byte that can still arrive once the volume's free space crosses it.
From that moment, writers go on at the volume's fill rate until the throttle acts, and some bytes arrive after it:

    reaction_seconds  = check_interval + observation_seconds + propagation_seconds
    least_limit_bytes = peak_fill_rate * reaction_seconds + in_flight_bytes + replication_bytes

- ``check_interval``: the throttle's period (the plugin's ``storage.check-interval``, the guard's ``--interval``). In
  the worst case the limit is crossed just after a check, so a whole interval passes before the next one sees it.
- ``observation_seconds``: from the start of a check to its decision (DescribeLogDirs to every broker).
- ``propagation_seconds``: from the decision to every broker enforcing it (none for the plugin, which decides on each
  broker; the guard's AlterClientQuotas through the controller's metadata log to every broker).
- ``in_flight_bytes``: produce requests already sent when the throttle starts: Kafka appends a request and only then
  computes its throttle time, so what is in flight lands anyway.
- ``replication_bytes``: what leaders accepted before the throttle and followers have not fetched yet: client quotas
  never throttle replication, so a follower's volume receives it afterwards.

The same rule runs in the Spark pipeline (peak fill rates over the fleet's history); both pass
tests/vectors/limit_sizing.json.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.headroom.kafka.plugins.module_utils import volume_limits

# A volume that does not fill is covered by any interval: the longest the plugin takes (storage.check-interval is a
# Java int).
LONGEST_INTERVAL = 2**31 - 1


class SizingError(ValueError):
    """An invalid input of the rule; the message names it, its value and what is allowed."""


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise SizingError("{0} must be a finite number >= 0 (got {1!r})".format(name, value))
    return float(value)


def reaction_seconds(
    check_interval: float, observation_seconds: float = 0.0, propagation_seconds: float = 0.0
) -> float:
    """The longest time from a volume crossing its limit to every broker throttling."""
    return (
        _number("check_interval", check_interval)
        + _number("observation_seconds", observation_seconds)
        + _number("propagation_seconds", propagation_seconds)
    )


def _arriving_after(in_flight_bytes: float, replication_bytes: float) -> float:
    """The bytes that land once the throttle holds: requests in flight and what followers still fetch."""
    return _number("in_flight_bytes", in_flight_bytes) + _number("replication_bytes", replication_bytes)


def least_limit_bytes(
    peak_fill_rate: float,
    check_interval: float,
    observation_seconds: float = 0.0,
    propagation_seconds: float = 0.0,
    in_flight_bytes: float = 0,
    replication_bytes: float = 0,
) -> int:
    """The least free space, in bytes, a limit must keep for a volume that fills at ``peak_fill_rate`` bytes/s."""
    seconds = reaction_seconds(check_interval, observation_seconds, propagation_seconds)
    rate = _number("peak_fill_rate", peak_fill_rate)
    return int(math.ceil(rate * seconds + _arriving_after(in_flight_bytes, replication_bytes)))


def longest_check_interval(
    limit_bytes: float,
    peak_fill_rate: float,
    observation_seconds: float = 0.0,
    propagation_seconds: float = 0.0,
    in_flight_bytes: float = 0,
    replication_bytes: float = 0,
) -> Optional[int]:
    """The longest whole-second check interval whose least limit ``limit_bytes`` still covers at that fill rate, or
    None when even a one-second interval does not (the limit is too small for the rate); any interval covers a
    volume that does not fill."""
    limit = _number("limit_bytes", limit_bytes)
    rate = _number("peak_fill_rate", peak_fill_rate)
    fixed = reaction_seconds(0, observation_seconds, propagation_seconds)  # the reaction less the interval
    after = _arriving_after(in_flight_bytes, replication_bytes)
    if rate == 0:
        return None if after > limit else LONGEST_INTERVAL
    seconds = int(math.floor((limit - after) / rate - fixed))
    return seconds if seconds >= 1 else None


def limit_bytes_of(
    volume: Dict[str, Any], min_available_bytes: Optional[int] = None, min_available_ratio: Optional[float] = None
) -> float:
    """The free space, in bytes, at which the plugin's per-volume limit trips on this volume."""
    if min_available_bytes is not None:
        return float(min_available_bytes)
    if min_available_ratio is None:
        raise SizingError("one of min_available_bytes or min_available_ratio is required (got neither)")
    return float(min_available_ratio) * volume["total_bytes"]


def fill_rates(
    earlier: Iterable[Dict[str, Any]], later: Iterable[Dict[str, Any]], seconds: float
) -> Dict[Tuple[int, str], float]:
    """Each volume's fill rate, in bytes/s, between two observations ``seconds`` apart (log_dirs_info's rows): the
    free space it lost per second, 0 for one that gained space. A volume missing from either, one that cannot be
    judged (volume_limits.volume_problem) or one whose size changed (another filesystem) has no rate."""
    elapsed = _number("seconds", seconds)
    if elapsed == 0:
        raise SizingError("seconds between two observations must be > 0 (got {0!r})".format(seconds))
    before = {volume_limits.volume_key(v): v for v in earlier if volume_limits.volume_problem(v) is None}
    rates = {}
    for volume in later:
        key = volume_limits.volume_key(volume)
        previous = before.get(key)
        if previous is None or volume_limits.volume_problem(volume) is not None:
            continue
        if previous["total_bytes"] != volume["total_bytes"]:
            continue
        rates[key] = max(previous["usable_bytes"] - volume["usable_bytes"], 0) / elapsed
    return rates


def peak_fill_rate(observations: Iterable[Tuple[float, float, float]]) -> Optional[float]:
    """One volume's highest fill rate, in bytes/s, over its history: ``observations`` are (seconds, usable bytes, total
    bytes), in any order; the rate between two successive observations is the free space lost per second (0 when it
    gained space). Successive observations at one instant, or of different sizes (another filesystem), give no rate;
    None when no pair gives one."""
    ordered = sorted(observations)
    peak = None  # type: Optional[float]
    for (at, usable, total), (next_at, next_usable, next_total) in zip(ordered, ordered[1:]):
        if next_at <= at or next_total != total:
            continue
        rate = max(usable - next_usable, 0) / float(next_at - at)
        peak = rate if peak is None else max(peak, rate)
    return peak


def uncovered_limits(  # pylint: disable=too-many-arguments
    volumes: Iterable[Dict[str, Any]],
    fill_rate_by_volume: Dict[Tuple[int, str], float],
    check_interval: float,
    min_available_bytes: Optional[int] = None,
    min_available_ratio: Optional[float] = None,
    observation_seconds: float = 0.0,
    propagation_seconds: float = 0.0,
    in_flight_bytes: float = 0,
    replication_bytes: float = 0,
) -> List[Dict[str, Any]]:
    """The volumes whose limit is smaller than the rule's least limit at their fill rate, the largest shortfall first:
    each with its limit, its least limit, its fill rate and the longest check interval that its limit would cover."""
    volume_limits.validate_strimzi_limits(min_available_bytes, min_available_ratio)
    found = []
    for volume in volumes:
        key = volume_limits.volume_key(volume)
        rate = fill_rate_by_volume.get(key)
        if rate is None or volume_limits.volume_problem(volume) is not None:
            continue
        limit = limit_bytes_of(volume, min_available_bytes, min_available_ratio)
        least = least_limit_bytes(
            rate, check_interval, observation_seconds, propagation_seconds, in_flight_bytes, replication_bytes
        )
        if limit < least:
            found.append(
                {
                    "broker_id": volume["broker_id"],
                    "log_dir": volume["log_dir"],
                    "limit_bytes": int(limit),
                    "least_limit_bytes": least,
                    "fill_rate": rate,
                    "covering_check_interval": longest_check_interval(
                        limit, rate, observation_seconds, propagation_seconds, in_flight_bytes, replication_bytes
                    ),
                }
            )
    found.sort(key=lambda item: (item["limit_bytes"] - item["least_limit_bytes"], item["broker_id"], item["log_dir"]))
    return found


def uncovered_warning(item: Dict[str, Any], check_interval: float) -> str:
    """One sentence for a volume whose limit does not cover its fill rate."""
    covering = item["covering_check_interval"]
    remedy = (
        "a check interval of at most {0} s would".format(covering)
        if covering is not None
        else "no check interval would at this rate: raise the limit"
    )
    return (
        "broker {0} log dir {1}: the limit keeps {2} bytes free, but at {3:.0f} bytes/s the volume needs at least {4} "
        "bytes to hold until the throttle acts with a {5:g} s check interval; {6}".format(
            item["broker_id"],
            item["log_dir"],
            item["limit_bytes"],
            item["fill_rate"],
            item["least_limit_bytes"],
            check_interval,
            remedy,
        )
    )
