# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The disk limit options the modules share (volume_limits, usage_snapshot, disk_guard): their argument specs,
their ranges, and their conversion into the rules' form, with no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, Optional

from ansible_collections.headroom.kafka.plugins.module_utils import option_checks, volume_limits

# soft_limit / hard_limit: {type, level}.
LIMIT_OPTIONS = dict(
    type=dict(type="str", required=True, choices=list(volume_limits.LIMIT_TYPES)),
    level=dict(type="float", required=True),
)
# A free-space threshold: relief's relieve_at, relieve_to and limit (relief is about free space, never used space).
FREE_LIMIT_OPTIONS = dict(LIMIT_OPTIONS, type=dict(type="str", required=True, choices=list(volume_limits.FREE_TYPES)))
GRADED_ARGUMENT_SPEC = dict(
    soft_limit=dict(type="dict", options=LIMIT_OPTIONS), hard_limit=dict(type="dict", options=LIMIT_OPTIONS)
)
# Bytes or a percentage; the rules narrow percentages to 100 and order the two limits.
LIMIT_LEVEL = option_checks.Number(0, option_checks.LONG_MAX)
GRADED_RANGES = {"soft_limit.level": LIMIT_LEVEL, "hard_limit.level": LIMIT_LEVEL}
STRIMZI_ARGUMENT_SPEC = dict(min_available_bytes=dict(type="int"), min_available_ratio=dict(type="float"))
STRIMZI_RANGES = {"min_available_bytes": option_checks.BYTES, "min_available_ratio": option_checks.Number(0, 1)}
STRIMZI_OPTIONS = ("min_available_bytes", "min_available_ratio")
GRADED_OPTIONS = ("soft_limit", "hard_limit")
POLICY_ARGUMENT_SPEC: Dict[str, Dict[str, Any]] = dict(
    policy=dict(type="str", default="strimzi", choices=["strimzi", "graded"]),
    missing_data_action=dict(type="str", default="pause", choices=list(volume_limits.MISSING_DATA_ACTIONS)),
    **dict(STRIMZI_ARGUMENT_SPEC, **GRADED_ARGUMENT_SPEC),
)
POLICY_RANGES = dict(STRIMZI_RANGES, **GRADED_RANGES)
POLICY_MUTUALLY_EXCLUSIVE = [list(STRIMZI_OPTIONS)]
POLICY_REQUIRED_IF = [["policy", "strimzi", list(STRIMZI_OPTIONS), True], ["policy", "graded", list(GRADED_OPTIONS)]]


def graded_limit(limit: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """A soft_limit / hard_limit option as the rules take it (None stays None); whole-number levels as ints, so that
    figures read as bytes."""
    if limit is None:
        return None
    level = limit["level"]
    if isinstance(level, float) and level.is_integer():
        level = int(level)
    return {"type": limit["type"], "level": level}


def policy_problem(params: Dict[str, Any]) -> Optional[str]:
    """Why the policy options can never work, or None: options of the other policy, or limits the rules refuse."""
    policy = params["policy"]
    if policy == "graded":
        given = [name for name in STRIMZI_OPTIONS if params.get(name) is not None]
        if given:
            return "{0} {1} to policy strimzi; policy graded takes soft_limit and hard_limit".format(
                " and ".join(given), _belong(given)
            )
    else:
        given = [name for name in GRADED_OPTIONS if params.get(name) is not None]
        if given:
            return "{0} {1} to policy graded; policy strimzi takes min_available_bytes or min_available_ratio".format(
                " and ".join(given), _belong(given)
            )
    try:
        if policy == "strimzi":
            volume_limits.validate_strimzi_limits(params.get("min_available_bytes"), params.get("min_available_ratio"))
        else:
            volume_limits.validate_graded_limits(
                graded_limit(params.get("soft_limit")), graded_limit(params.get("hard_limit"))
            )
    except volume_limits.LimitError as exc:
        return str(exc)
    return None


def _belong(names):
    return "belongs" if len(names) == 1 else "belong"
