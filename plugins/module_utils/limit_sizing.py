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


# The Strimzi plugin's reaction beside its check interval, from bench/race_bench.py (writers at full speed on real
# Kafka, 3 brokers, a topic of 3 replicas; the performance guide's race section): a check took up to 0.5 s from the
# crossing to the plugin's decision, produce responses carried the throttle up to 0.6 s later, and what still landed
# afterwards (requests in flight, then replication, which client quotas never throttle) was up to 5.8 s of the fill:
# on two busy cores at 65 to 75 MB/s the followers fell seconds behind their leaders (1.8 s on one core at a third of
# that rate). Each is rounded up.
PLUGIN_OBSERVATION_SECONDS = 1.0
PLUGIN_PROPAGATION_SECONDS = 0.6
PLUGIN_AFTER_THROTTLE_SECONDS = 6.0


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


def plugin_parts(peak_fill_rate: float) -> Dict[str, float]:
    """The plugin's measured parts of the reaction for a volume filling at ``peak_fill_rate`` bytes/s (what lands after
    the throttle grows with the rate)."""
    rate = _number("peak_fill_rate", peak_fill_rate)
    return {
        "observation_seconds": PLUGIN_OBSERVATION_SECONDS,
        "propagation_seconds": PLUGIN_PROPAGATION_SECONDS,
        "replication_bytes": rate * PLUGIN_AFTER_THROTTLE_SECONDS,
    }


def measured_margin_seconds() -> float:
    """The seconds of fill beyond the check interval that a limit must cover: the check, the throttle reaching the
    producers, and what lands after it (the plugin's measured parts; the guard's were within them)."""
    return PLUGIN_OBSERVATION_SECONDS + PLUGIN_PROPAGATION_SECONDS + PLUGIN_AFTER_THROTTLE_SECONDS


def limit_bytes_of(
    volume: Dict[str, Any],
    min_available_bytes: Optional[int] = None,
    min_available_ratio: Optional[float] = None,
    hard_limit: Optional[Dict[str, Any]] = None,
) -> float:
    """The free space, in bytes, at which producers are paused on this volume: the plugin's per-volume limit
    (``min_available_bytes`` or ``min_available_ratio``), or the graded policy's ``hard_limit`` (the soft limit only
    slows writers down; the hard limit is the one that must hold)."""
    if hard_limit is not None:
        level = float(hard_limit["level"])
        if hard_limit["type"] == "min_free_bytes":
            return level
        if hard_limit["type"] == "min_free_percentage":
            return level / 100.0 * volume["total_bytes"]
        return max(volume["total_bytes"] - level, 0.0)  # consumed_space: paused once this much is used
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


def _sized_volumes(  # pylint: disable=too-many-arguments
    volumes: Iterable[Dict[str, Any]],
    fill_rate_by_volume: Dict[Tuple[int, str], float],
    check_interval: float,
    min_available_bytes: Optional[int],
    min_available_ratio: Optional[float],
    hard_limit: Optional[Dict[str, Any]],
    parts: Dict[str, float],
) -> List[Dict[str, Any]]:
    """Each volume with a fill rate that can be judged, with its limit, its least limit and whether it is covered; the
    limits are checked first."""
    if hard_limit is None:
        volume_limits.validate_strimzi_limits(min_available_bytes, min_available_ratio)
    else:
        volume_limits.validate_limit("hard_limit", hard_limit)
    rows = []
    for volume in volumes:
        rate = fill_rate_by_volume.get(volume_limits.volume_key(volume))
        if rate is None or volume_limits.volume_problem(volume) is not None:
            continue
        limit = limit_bytes_of(volume, min_available_bytes, min_available_ratio, hard_limit)
        least = least_limit_bytes(rate, check_interval, **parts)
        rows.append(
            {
                "broker_id": volume["broker_id"],
                "log_dir": volume["log_dir"],
                "fill_rate": rate,
                "limit_bytes": int(limit),
                "least_limit_bytes": least,
                "covered": limit >= least,
                "limit": limit,
            }
        )
    return rows


def _uncovered(rows: List[Dict[str, Any]], parts: Dict[str, float]) -> List[Dict[str, Any]]:
    """The rows whose limit is short, the largest shortfall first, each with the longest check interval it covers."""
    found = [
        {
            "broker_id": row["broker_id"],
            "log_dir": row["log_dir"],
            "limit_bytes": row["limit_bytes"],
            "least_limit_bytes": row["least_limit_bytes"],
            "fill_rate": row["fill_rate"],
            "covering_check_interval": longest_check_interval(row["limit"], row["fill_rate"], **parts),
        }
        for row in rows
        if not row["covered"]
    ]
    found.sort(key=lambda item: (item["limit_bytes"] - item["least_limit_bytes"], item["broker_id"], item["log_dir"]))
    return found


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
    hard_limit: Optional[Dict[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """The volumes whose limit is smaller than the rule's least limit at their fill rate, the largest shortfall first:
    each with its limit, its least limit, its fill rate and the longest check interval that its limit would cover.
    The limit is the plugin's (``min_available_bytes`` or ``min_available_ratio``) or the graded ``hard_limit``."""
    parts = {
        "observation_seconds": observation_seconds,
        "propagation_seconds": propagation_seconds,
        "in_flight_bytes": in_flight_bytes,
        "replication_bytes": replication_bytes,
    }
    rows = _sized_volumes(
        volumes, fill_rate_by_volume, check_interval, min_available_bytes, min_available_ratio, hard_limit, parts
    )
    return _uncovered(rows, parts)


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


# The parts of the reaction a caller may give (volume_limits' sizing option), each a number >= 0.
REACTION_PARTS = ("observation_seconds", "propagation_seconds", "in_flight_bytes", "replication_bytes")


def fill_rates_of(
    volumes: Iterable[Dict[str, Any]],
    peak_fill_rate: Optional[float] = None,
    earlier_volumes: Optional[Iterable[Dict[str, Any]]] = None,
    seconds_between: Optional[float] = None,
) -> Dict[Tuple[int, str], float]:
    """Each volume's fill rate: ``peak_fill_rate`` for every volume that can be judged, or the fill between
    ``earlier_volumes`` and ``volumes``, ``seconds_between`` apart."""
    if peak_fill_rate is not None:
        rate = _number("peak_fill_rate", peak_fill_rate)
        return {volume_limits.volume_key(v): rate for v in volumes if volume_limits.volume_problem(v) is None}
    if earlier_volumes is None or seconds_between is None:
        raise SizingError("a fill rate needs peak_fill_rate, or earlier volumes with the seconds between (got neither)")
    return fill_rates(earlier_volumes, volumes, seconds_between)


def sizing_check(  # pylint: disable=too-many-arguments
    volumes: List[Dict[str, Any]],
    fill_rate_by_volume: Dict[Tuple[int, str], float],
    check_interval: float,
    parts: Optional[Dict[str, float]] = None,
    min_available_bytes: Optional[int] = None,
    min_available_ratio: Optional[float] = None,
    hard_limit: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """The rule applied to every volume with a fill rate: the reaction in seconds, each volume's figures (``covered``
    when its limit is at least its least limit), the uncovered ones largest shortfall first, and one warning for each
    of those."""
    given = dict((name, value) for name, value in (parts or {}).items() if value is not None)
    unknown = sorted(set(given) - set(REACTION_PARTS))
    if unknown:
        raise SizingError(
            "unknown parts of the reaction: {0} (allowed: {1})".format(unknown, ", ".join(REACTION_PARTS))
        )
    sized = _sized_volumes(
        volumes, fill_rate_by_volume, check_interval, min_available_bytes, min_available_ratio, hard_limit, given
    )
    uncovered = _uncovered(sized, given)
    rows = [dict((key, value) for key, value in row.items() if key != "limit") for row in sized]
    rows.sort(key=lambda row: (row["broker_id"], row["log_dir"]))
    return {
        "check_interval": check_interval,
        "reaction_seconds": reaction_seconds(
            check_interval, given.get("observation_seconds", 0.0), given.get("propagation_seconds", 0.0)
        ),
        "volumes": rows,
        "uncovered": uncovered,
        "warnings": [uncovered_warning(item, check_interval) for item in uncovered],
    }
