# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The disk guard's ``relieve`` option: before a decision can lower the factor, move replicas off the log dirs at or
below ``relieve_at`` (relief_apply), so that the throttle fires only when a volume still reaches its limit.

The guard never waits for moves: each decision takes one step. A step either starts the plan's moves (their
``pending`` goes into the guard's memory), or checks the moves an earlier step started and, once none runs, puts the
replication throttle back as it was; a step with nothing pending and no log dir at ``relieve_at`` sends no request.
After moves end, the guard plans again no sooner than ``settle_time``: a moved replica's old files stay on its source
volume for ``file.delete.delay.ms`` (60 s by default), and a plan made before they go would move more to free space
that is about to come back. A step that fails, whatever the failure, is reported and counted; it never stops the
decision that follows (the throttle is the last line, and relief must not take it down)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.headroom.kafka.plugins.module_utils import (
    durations,
    limit_options,
    option_checks,
    relief_apply,
    relief_moves,
    relief_plan,
    volume_limits,
)

if TYPE_CHECKING:
    from ansible_collections.headroom.kafka.plugins.module_utils.disk_guard import Policy
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter

DEFAULT_SETTLE_TIME = "PT90S"
RELIEF_OPTIONS: Dict[str, Dict[str, Any]] = dict(
    relief_apply.PLAN_OPTIONS, settle_time=dict(type="str", default=DEFAULT_SETTLE_TIME)
)
RELIEF_RANGES: Dict[str, option_checks.Range] = {
    "relieve." + name: numbers for name, numbers in relief_apply.PLAN_RANGES.items()
}

# What a step did (the result's relief.action).
IDLE = "idle"  # no log dir at relieve_at and nothing pending: no request sent
STARTED = "started"  # the plan's moves started
PLANNED = "planned"  # check mode, or observe-only: the moves a step would start
MOVING = "moving"  # moves started earlier still run
FINISHED = "finished"  # the moves started earlier ended; the throttle is back as it was
SETTLING = "settling"  # a log dir is at relieve_at, but the last moves ended less than settle_time ago
BLOCKED = "blocked"  # a log dir is at relieve_at and the plan has no move for it (plan.blocked says why)
FAILED = "failed"  # a request failed, or Kafka refused (error says what was done)
ACTIONS = (IDLE, STARTED, PLANNED, MOVING, FINISHED, SETTLING, BLOCKED, FAILED)
# The steps that change the cluster (check mode: would change it): moves started, or the throttle put back.
CHANGING = (STARTED, PLANNED, FINISHED)


class ReliefSettings(object):
    """The validated ``relieve`` option: relief_apply's options (never waiting) and the settle time in seconds."""

    def __init__(self, options: Dict[str, Any], settle_seconds: float) -> None:
        self.options, self.settle_seconds = options, settle_seconds


def throttle_limit(policy: "Policy") -> Optional[Dict[str, Any]]:
    """The free-space limit where the policy starts to throttle, as relief_plan takes ``limit`` (no destination is
    filled past it): the plugin's per-volume limit, or the graded policy's soft limit when it measures free space."""
    if policy.name == "strimzi":
        if policy.min_available_bytes is not None:
            return {"type": "min_free_bytes", "level": policy.min_available_bytes}
        if policy.min_available_ratio is not None:
            return {"type": "min_free_percentage", "level": policy.min_available_ratio * 100.0}
        return None
    soft = policy.soft_limit
    return soft if soft is not None and soft["type"] in volume_limits.FREE_TYPES else None


def relief_settings(value: Optional[Dict[str, Any]], policy: "Policy") -> Optional[ReliefSettings]:
    """ReliefSettings from the validated ``relieve`` option (None: the guard does not relieve). Raises ValueError naming
    the option: thresholds of two types, relieve_to not above relieve_at, or relieve_at at or below the throttle's own
    limit of the same type (the throttle would fire before relief starts)."""
    if value is None:
        return None
    option_checks.check_params({"relieve": value}, RELIEF_RANGES)
    settle = durations.parse_duration(value["settle_time"], "relieve.settle_time").total_seconds()
    # Required sub-options: never None here.
    relieve_at: Dict[str, Any] = limit_options.graded_limit(value["relieve_at"]) or {}
    relieve_to: Dict[str, Any] = limit_options.graded_limit(value["relieve_to"]) or {}
    limit = throttle_limit(policy)
    try:
        relief_plan.validate_thresholds(relieve_at, relieve_to, limit)
    except ValueError as exc:
        raise relief_plan.PlanError("relieve.{0}".format(exc)) from exc
    if limit is not None and limit["type"] == relieve_at["type"] and not relieve_at["level"] > limit["level"]:
        raise relief_plan.PlanError(
            "relieve.relieve_at.level must ask for more free space than the throttle's limit ({0} {1}): relief has to "
            "start before producers are throttled (got {2})".format(limit["type"], limit["level"], relieve_at["level"])
        )
    options = dict(
        relieve_at=relieve_at,
        relieve_to=relieve_to,
        limit=limit,
        max_bytes=value["max_bytes"],
        max_partitions=value["max_partitions"],
        throttle_rate=value["throttle_rate"],
        log_dir_throttle_rate=value["log_dir_throttle_rate"],
        wait=False,
        timeout=0.0,
        poll_interval=1.0,
        pending=None,
    )
    return ReliefSettings(options, settle)


def at_relieve_at(volumes: List[Dict[str, Any]], relieve_at: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The volumes of known size whose free space is at or below ``relieve_at``."""
    usable, _skipped = volume_limits.usable_volumes(volumes)
    return [v for v in usable if v["usable_bytes"] <= relief_plan.required_free_bytes(v, relieve_at)]


def new_memory(pending: Optional[Dict[str, Any]] = None, settled_at: Optional[float] = None) -> Dict[str, Any]:
    """The relief part of the guard's memory: the moves still to follow and when the last ones ended."""
    return {"pending": pending, "settled_at": settled_at}


def memory_from_json(document: Any) -> Dict[str, Any]:
    """The relief memory from its JSON form; anything else is none (moves left running are then found as someone
    else's reassignments, and the next steps wait for them to end)."""
    if not isinstance(document, dict):
        return new_memory()
    try:
        pending = relief_moves.validate_pending(document.get("pending"))
        settled_at = document.get("settled_at")
        return new_memory(pending, None if settled_at is None else float(settled_at))
    except (relief_moves.MovesError, TypeError, ValueError):
        return new_memory()


def _bytes(moves: List[Dict[str, Any]]) -> int:
    return sum(int(move.get("bytes") or 0) for move in moves)


def _report(action: str, **figures: Any) -> Dict[str, Any]:
    report: Dict[str, Any] = {
        "action": action,
        "moves": [],
        "planned_bytes": 0,
        "moving_bytes": 0,
        "moved_bytes": 0,
        "blocked": [],
        "error": None,
    }
    report.update(figures)
    return report


def step(
    adapter: "KafkaAdapter",
    settings: ReliefSettings,
    memory: Dict[str, Any],
    volumes: List[Dict[str, Any]],
    now: float,
    check_mode: bool = False,
    relieve: Optional[Callable[..., Dict[str, Any]]] = None,
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """One relief step of a decision: (report, relief memory for the next decision). ``volumes``: what the decision
    observed; ``now``: epoch seconds. In check mode the step reads and plans, and changes nothing. ``relieve``:
    relief_apply.relieve unless given."""
    relieve = relieve or relief_apply.relieve
    pending = memory.get("pending")
    if pending:
        return _follow(adapter, settings, memory, now, check_mode, relieve)
    if not at_relieve_at(volumes, settings.options["relieve_at"]):
        return _report(IDLE), memory
    settled_at = memory.get("settled_at")
    if settled_at is not None and now < settled_at + settings.settle_seconds:
        return _report(SETTLING, settles_at=settled_at + settings.settle_seconds), memory
    try:
        result = relieve(adapter, dict(settings.options), check_mode=check_mode)
    except relief_apply.ReliefError as exc:
        left = exc.result.get("pending")
        return (
            _report(FAILED, error=str(exc), moves=exc.result.get("moves", [])),
            new_memory(left, settled_at) if left else memory,
        )
    except Exception as exc:  # pylint: disable=broad-except  # relief never stops the decision that follows
        return _report(FAILED, error=relief_apply.failure_text(exc)), memory
    moves = result["moves"]
    blocked = result.get("plan", {}).get("blocked", [])
    if not moves:
        return _report(BLOCKED if blocked else IDLE, blocked=blocked), memory
    planned = _bytes(moves)
    if check_mode:
        return _report(PLANNED, moves=moves, planned_bytes=planned, blocked=blocked), memory
    return (
        _report(STARTED, moves=moves, planned_bytes=planned, moving_bytes=planned, blocked=blocked),
        new_memory(result.get("pending"), settled_at),
    )


def _follow(adapter, settings, memory, now, check_mode, relieve):
    """Check the moves an earlier step started; once none runs, the throttle goes back and the settle time starts."""
    pending = memory["pending"]
    try:
        result = relieve(adapter, dict(settings.options, pending=pending), check_mode=check_mode)
    except relief_apply.ReliefError as exc:
        left = exc.result.get("pending", pending)
        return _report(FAILED, error=str(exc)), new_memory(left, memory.get("settled_at"))
    except Exception as exc:  # pylint: disable=broad-except  # relief never stops the decision that follows
        return _report(FAILED, error=relief_apply.failure_text(exc)), memory
    verified = result.get("verified") or []
    moving = [m for m in verified if m.get("state") != relief_moves.DONE]
    if result.get("pending"):
        return _report(MOVING, moves=verified, moving_bytes=_bytes(moving)), memory
    done = [m for m in verified if m.get("state") == relief_moves.DONE]
    return _report(FINISHED, moves=verified, moved_bytes=_bytes(done)), memory if check_mode else new_memory(None, now)
