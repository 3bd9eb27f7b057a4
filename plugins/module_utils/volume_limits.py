# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Disk limits and throttle factors, with no I/O.

Two policies share the volume model (one entry per broker and log dir, sizes in bytes, unknown sizes as None):

* ``strimzi``: exactly the shipped quota plugin (io.strimzi.kafka.quotas.StaticQuotaCallback): a binary factor,
  inclusive comparisons, ratio 0 for zero-capacity volumes, unknown sizes skipped, no volumes -> 1.0.
* ``graded``: the first volume-usage proposal: soft and hard limits, a factor that falls linearly from 1.0 at the
  soft limit to 0.0 at the hard limit, and the OPEN / THROTTLE / PAUSE states.

The same rules run in the Spark pipeline; both implementations pass the vectors in tests/vectors/.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, cast

if TYPE_CHECKING:
    from typing import TypeGuard  # Python 3.10+; only type checkers read it

OPEN = "OPEN"
THROTTLE = "THROTTLE"
PAUSE = "PAUSE"
LIMIT_TYPES = ("min_free_bytes", "min_free_percentage", "consumed_space")
FREE_TYPES = ("min_free_bytes", "min_free_percentage")
MISSING_DATA_ACTIONS = ("pause", "open")
# The proposal's names for the limit types, as they appear in usage snapshot messages.
SNAPSHOT_LIMIT_NAMES = {
    "consumed_space": "ConsumedSpace",
    "min_free_bytes": "MinFreeBytes",
    "min_free_percentage": "MinFreePercentage",
}


class LimitError(ValueError):
    """Invalid limits; the message names the option, the value and what is allowed."""


def _finite(value):
    """A real number: int or float, not NaN or infinite (NaN and infinity would pass every range check)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _known(value: Optional[float]) -> "TypeGuard[float]":
    return value is not None and value >= 0


def volume_key(volume: Dict[str, Any]) -> Tuple[int, str]:
    return (volume["broker_id"], volume["log_dir"])


def volume_problem(volume: Dict[str, Any]) -> Optional[str]:
    """Why a volume cannot be judged, or None: every module and the pipeline skip such a volume with this reason.

    An error (an offline log dir), an unknown size (null or Kafka's -1), or usable bytes above the total (sizes
    that contradict each other, such as a snapshot's Consumed above its Capacity: its used bytes would be negative).
    """
    if volume.get("error"):
        return "log dir error {0}".format(volume["error"])
    total, usable = volume.get("total_bytes"), volume.get("usable_bytes")
    if not (_known(total) and _known(usable)):
        return "size unknown"
    if usable > total:
        return "usable bytes exceed total bytes"
    return None


def usable_volumes(volumes: Iterable[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Split volumes into those that can be judged and those skipped (volume_problem says why)."""
    known, skipped = [], []
    for volume in volumes:
        if volume_problem(volume) is None:
            known.append(volume)
        else:
            skipped.append(volume)
    return known, skipped


def available_ratio(volume: Dict[str, Any]) -> float:
    """usable / total; a volume with no capacity has ratio 0 (the plugin treats it as full)."""
    total = volume["total_bytes"]
    return 0.0 if total == 0 else volume["usable_bytes"] / total


# -- the shipped plugin ------------------------------------------------------------------------------------------
def validate_strimzi_limits(
    min_available_bytes: Optional[int] = None, min_available_ratio: Optional[float] = None
) -> None:
    if min_available_bytes is None and min_available_ratio is None:
        raise LimitError(
            "one of min_available_bytes or min_available_ratio is required with policy strimzi (got neither)"
        )
    if min_available_bytes is not None and min_available_ratio is not None:
        raise LimitError(
            "min_available_bytes and min_available_ratio are mutually exclusive: the quota plugin refuses to start "
            "with both (got min_available_bytes={0}, min_available_ratio={1})".format(
                min_available_bytes, min_available_ratio
            )
        )
    if min_available_bytes is not None and (
        isinstance(min_available_bytes, bool) or not _finite(min_available_bytes) or min_available_bytes < 0
    ):
        raise LimitError("min_available_bytes must be an integer >= 0 (got {0})".format(min_available_bytes))
    if min_available_ratio is not None and (
        isinstance(min_available_ratio, bool)
        or not _finite(min_available_ratio)
        or not 0.0 <= min_available_ratio <= 1.0
    ):
        raise LimitError(
            "min_available_ratio must be between 0.0 and 1.0 inclusive (got {0})".format(min_available_ratio)
        )


def strimzi_violates(
    volume: Dict[str, Any], min_available_bytes: Optional[int] = None, min_available_ratio: Optional[float] = None
) -> bool:
    """The plugin's per-volume rule: usable <= bytes limit, or usable/total <= ratio limit (both inclusive)."""
    if min_available_bytes is not None:
        return volume["usable_bytes"] <= min_available_bytes
    return available_ratio(volume) <= cast(float, min_available_ratio)  # one of the two limits is set


def strimzi_decision(
    volumes: Iterable[Dict[str, Any]],
    min_available_bytes: Optional[int] = None,
    min_available_ratio: Optional[float] = None,
) -> Dict[str, Any]:
    """Throttle factor 0.0 if any known volume violates the limit, else 1.0 (also with no volumes at all)."""
    validate_strimzi_limits(min_available_bytes, min_available_ratio)
    known, skipped = usable_volumes(volumes)
    known.sort(
        key=lambda v: (available_ratio(v) if min_available_ratio is not None else v["usable_bytes"], volume_key(v))
    )
    violations = []
    for volume in known:
        if strimzi_violates(volume, min_available_bytes, min_available_ratio):
            violations.append(
                _figures(
                    volume,
                    limit_type="min_available_bytes" if min_available_bytes is not None else "min_available_ratio",
                    level=min_available_bytes if min_available_bytes is not None else min_available_ratio,
                )
            )
    factor = 0.0 if violations else 1.0
    least = known[0] if known else None
    return {
        "policy": "strimzi",
        "throttle_factor": factor,
        "state": OPEN if factor == 1.0 else PAUSE,
        "violations": violations,
        "least_headroom": _figures(least) if least else None,
        "skipped_volumes": [_figures(v, reason=volume_problem(v)) for v in skipped],
    }


def effective_produce_quota(produce_byte_rate: float, throttle_factor: float) -> float:
    """The produce quota the plugin enforces: never below 1 byte/s."""
    return max(produce_byte_rate * throttle_factor, 1.0)


# -- the graded proposal -----------------------------------------------------------------------------------------
def validate_limit(name: str, limit: object) -> None:
    if not isinstance(limit, dict):
        raise LimitError("{0} must be a dict with keys type and level (got {1!r})".format(name, limit))
    limit_type, level = limit.get("type"), limit.get("level")
    if limit_type not in LIMIT_TYPES:
        raise LimitError("{0}.type must be one of {1} (got {2!r})".format(name, ", ".join(LIMIT_TYPES), limit_type))
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        raise LimitError("{0}.level must be a number (got {1!r})".format(name, level))
    if not _finite(level):
        raise LimitError("{0}.level must be a finite number (got {1!r})".format(name, level))
    if level < 0:
        raise LimitError("{0}.level must be >= 0 (got {1})".format(name, level))
    if limit_type == "min_free_percentage" and level > 100:
        raise LimitError(
            "{0}.level is a percentage for min_free_percentage and must be between 0 and 100 (got {1})".format(
                name, level
            )
        )


def validate_graded_limits(soft_limit: Any, hard_limit: Any) -> None:
    validate_limit("soft_limit", soft_limit)
    validate_limit("hard_limit", hard_limit)
    if soft_limit["type"] != hard_limit["type"]:
        raise LimitError(
            "soft_limit.type and hard_limit.type must be the same so the factor can fall from one to the other "
            "(got {0} and {1})".format(soft_limit["type"], hard_limit["type"])
        )
    soft, hard = soft_limit["level"], hard_limit["level"]
    if soft_limit["type"] in FREE_TYPES and not soft > hard:
        raise LimitError(
            "soft_limit.level must be greater than hard_limit.level for {0}: the soft limit must trip first "
            "(got soft {1}, hard {2})".format(soft_limit["type"], soft, hard)
        )
    if soft_limit["type"] == "consumed_space" and not soft < hard:
        raise LimitError(
            "soft_limit.level must be less than hard_limit.level for consumed_space: the soft limit must trip first "
            "(got soft {0}, hard {1})".format(soft, hard)
        )


def _measure(volume, limit_type):
    """The figure a limit type compares: free bytes, free percent (0 for zero capacity) or consumed bytes."""
    if limit_type == "min_free_bytes":
        return volume["usable_bytes"]
    if limit_type == "min_free_percentage":
        return available_ratio(volume) * 100.0
    return volume["total_bytes"] - volume["usable_bytes"]


def breaches(volume: Dict[str, Any], limit: Dict[str, Any]) -> bool:
    value = _measure(volume, limit["type"])
    if limit["type"] in FREE_TYPES:
        return value <= limit["level"]
    return value >= limit["level"]


def graded_position(volume: Dict[str, Any], soft_limit: Dict[str, Any], hard_limit: Dict[str, Any]) -> float:
    """Where the volume stands between its limits: 1.0 at the soft limit, 0.0 at the hard limit, the share of the
    soft-to-hard distance left in between, and beyond them on either side (above 1 short of the soft limit, at most 0
    past the hard limit). factor_steps holds the factor's steps on it."""
    value = _measure(volume, soft_limit["type"])
    soft, hard = float(soft_limit["level"]), float(hard_limit["level"])
    if soft_limit["type"] in FREE_TYPES:
        position = (value - hard) / (soft - hard)
    else:
        position = (hard - value) / (hard - soft)
    return min(position, 0.0) if breaches(volume, hard_limit) else position


def graded_volume_factor(volume: Dict[str, Any], soft_limit: Dict[str, Any], hard_limit: Dict[str, Any]) -> float:
    """1.0 short of the soft limit, 0.0 at or past the hard limit, else the share of the soft-to-hard distance left."""
    if breaches(volume, hard_limit):
        return 0.0
    if not breaches(volume, soft_limit):
        return 1.0
    return min(max(graded_position(volume, soft_limit, hard_limit), 0.0), 1.0)


def state_of(factor: float) -> str:
    if factor >= 1.0:
        return OPEN
    if factor <= 0.0:
        return PAUSE
    return THROTTLE


def graded_decision(
    volumes: Iterable[Dict[str, Any]],
    soft_limit: Any,
    hard_limit: Any,
    complete: bool = True,
    missing_data_action: str = "pause",
) -> Dict[str, Any]:
    """Cluster factor = the smallest volume factor; incomplete data -> the missing-data action
    (pause is the fail-safe)."""
    validate_graded_limits(soft_limit, hard_limit)
    if missing_data_action not in MISSING_DATA_ACTIONS:
        raise LimitError(
            "missing_data_action must be one of {0} (got {1!r})".format(
                ", ".join(MISSING_DATA_ACTIONS), missing_data_action
            )
        )
    known, skipped = usable_volumes(volumes)
    scored = sorted(
        ((graded_volume_factor(v, soft_limit, hard_limit), v) for v in known),
        key=lambda item: (item[0], _measure(item[1], "min_free_bytes"), volume_key(item[1])),
    )
    violations = []
    for factor, volume in scored:
        if breaches(volume, soft_limit):
            limit = hard_limit if breaches(volume, hard_limit) else soft_limit
            violations.append(
                _figures(
                    volume,
                    limit_type=limit["type"],
                    level=limit["level"],
                    limit="hard" if limit is hard_limit else "soft",
                    volume_factor=factor,
                )
            )
    factor = scored[0][0] if scored else 1.0
    position = min((graded_position(v, soft_limit, hard_limit) for v in known), default=None)
    missing_data_applied = False
    if not complete and missing_data_action == "pause":
        factor = 0.0
        missing_data_applied = True
    return {
        "policy": "graded",
        "throttle_factor": factor,
        "position": position,
        "state": state_of(factor),
        "violations": violations,
        "least_headroom": _figures(scored[0][1], volume_factor=scored[0][0]) if scored else None,
        "skipped_volumes": [_figures(v, reason=volume_problem(v)) for v in skipped],
        "complete": bool(complete),
        "missing_data_applied": missing_data_applied,
    }


def _figures(volume, **extra):
    total, usable = volume.get("total_bytes"), volume.get("usable_bytes")
    figures = {
        "broker_id": volume["broker_id"],
        "log_dir": volume["log_dir"],
        "total_bytes": total,
        "usable_bytes": usable,
    }
    if _known(total) and _known(usable) and usable <= total:
        figures["used_bytes"] = total - usable
        figures["available_ratio"] = available_ratio(volume)
    figures.update(extra)
    return figures
