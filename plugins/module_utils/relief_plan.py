# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which replicas to move off a filling log dir, and where, with no I/O.

A volume whose free space is at or below ``relieve_at`` is relieved: replicas leave it until its free space reaches
``relieve_to``. Moving data is what keeps producers writing; throttling them is the last resort. The plan:

- prefers another log dir of the same broker (AlterReplicaLogDirs: no network traffic), then another broker
  (AlterPartitionReassignments);
- moves as few bytes as reach the target: no move of the plan could be left out with the target still reached;
- never fills a destination to its own ``relieve_at`` (nor past ``limit``, the throttle's, when it is larger), and
  never moves a replica onto a volume it relieves: what one move frees, another would take back;
- never puts two replicas of a partition on one broker, and keeps a partition's replicas on distinct racks where they
  were;
- never moves a replica of an under-replicated partition, one already moving (a future replica, a reassignment), nor,
  across brokers, one whose partition would have fewer in-sync replicas than ``min.insync.replicas`` if one follower
  fell behind while it moves;
- is bounded per run (``max_bytes``, ``max_partitions``) and is the same for the same input (every choice is ordered).

When a volume's target cannot be reached, ``blocked`` says why, naming the volume and what stands in the way.

Input: ``volumes`` as volume_limits has them (``broker_id``, ``log_dir``, ``total_bytes``, ``usable_bytes``,
``error``); ``replicas``, one per replica (``topic``, ``partition``, ``broker_id``, ``log_dir``, ``size_bytes``,
``is_future``); ``partitions``, one per partition (``topic``, ``partition``, ``replicas``: broker ids, ``isr``,
``min_insync_replicas``, ``reassigning``); ``racks``: broker id to ``broker.rack`` (absent or None: no rack).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from ansible_collections.headroom.kafka.plugins.module_utils import limit_sizing, volume_limits

INSIDE = "log_dir"  # a move to another log dir of the same broker
ACROSS = "broker"  # a move to another broker


class PlanError(ValueError):
    """Invalid input of the plan; the message names the field, the value and what is allowed."""


def required_free_bytes(volume: Dict[str, Any], limit: Optional[Dict[str, Any]]) -> int:
    """The free bytes a free-space limit asks of this volume, in whole bytes (0 without a limit)."""
    if limit is None:
        return 0
    return int(math.ceil(limit_sizing.limit_bytes_of(volume, hard_limit=limit)))


def validate_thresholds(relieve_at: Any, relieve_to: Any, limit: Any = None) -> None:
    """relieve_at and relieve_to are free-space limits of one type, relieve_to asking for more free space; limit, the
    throttle's, is optional and of either free-space type."""
    for name, value in (("relieve_at", relieve_at), ("relieve_to", relieve_to), ("limit", limit)):
        if value is None and name == "limit":
            continue
        volume_limits.validate_limit(name, value)
        if value["type"] not in volume_limits.FREE_TYPES:
            raise PlanError(
                "{0}.type must be one of {1}: relief is about free space (got {2!r})".format(
                    name, ", ".join(volume_limits.FREE_TYPES), value["type"]
                )
            )
    if relieve_at["type"] != relieve_to["type"]:
        raise PlanError(
            "relieve_at.type and relieve_to.type must be the same (got {0} and {1})".format(
                relieve_at["type"], relieve_to["type"]
            )
        )
    if not relieve_to["level"] > relieve_at["level"]:
        raise PlanError(
            "relieve_to.level must be greater than relieve_at.level: a relieved volume must end with more free space "
            "than the level that starts relief (got relieve_at {0}, relieve_to {1})".format(
                relieve_at["level"], relieve_to["level"]
            )
        )


def _bound(name: str, value: Any) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PlanError("{0} must be a whole number >= 1 or None for no bound (got {1!r})".format(name, value))
    return value


class _State:
    """The cluster as the plan leaves it so far: free bytes per volume, brokers per partition, moves made."""

    def __init__(self, volumes, replicas, partitions, racks):
        self.free = {volume_limits.volume_key(v): v["usable_bytes"] for v in volumes}
        self.volumes = {volume_limits.volume_key(v): v for v in volumes}
        self.partitions = {(p["topic"], p["partition"]): p for p in partitions}
        self.brokers = {key: set(p["replicas"]) for key, p in self.partitions.items()}
        self.racks = dict(racks)
        self.replicas = sorted(replicas, key=lambda r: (r["broker_id"], r["log_dir"], r["topic"], r["partition"]))
        self.moving = {(r["topic"], r["partition"]) for r in replicas if r.get("is_future")}
        self.moving |= {key for key, p in self.partitions.items() if p.get("reassigning")}
        self.moved: Set[Tuple[str, int]] = set()
        self.moves: List[Dict[str, Any]] = []
        self.relieved: Set[Tuple[int, str]] = set()  # the sources: they give replicas, they never take one


def _movable(state: _State, replica: Dict[str, Any]) -> Optional[str]:
    """Why a replica cannot move, or None."""
    key = (replica["topic"], replica["partition"])
    partition = state.partitions.get(key)
    if partition is None:
        return "its partition is not described"
    if replica.get("is_future") or key in state.moving or key in state.moved:
        return "it is already moving"
    if set(partition["isr"]) != set(partition["replicas"]):
        return "its partition is under-replicated"
    return None


def _rack_ok(state: _State, key: Tuple[str, int], source_broker: int, destination: int) -> bool:
    """Distinct racks stay distinct: with the replica on ``destination`` instead of ``source_broker``."""
    brokers = state.brokers[key]
    racks = [state.racks.get(b) for b in brokers]
    if None in racks or len(set(racks)) != len(racks):
        return True  # the replicas were not on distinct racks: nothing to keep
    others = {state.racks.get(b) for b in brokers if b != source_broker}
    return state.racks.get(destination) is not None and state.racks.get(destination) not in others


def _destinations(state, replica, floors):
    """The log dirs that can take the replica, best first: the same broker's (most free space first), then other
    brokers' (most free space first); each keeps its floor after the move."""
    key = (replica["topic"], replica["partition"])
    partition = state.partitions[key]
    source = (replica["broker_id"], replica["log_dir"])
    # A reassignment adds the new replica before it removes the old one, but its copying loads the brokers: a follower
    # that falls behind leaves the ISR. So a partition with followers moves across brokers only when it would still
    # have min.insync.replicas in sync with one fewer; the only replica of a partition is its leader, always in sync.
    followers = 1 if len(partition["replicas"]) > 1 else 0
    across_ok = len(partition["isr"]) - followers >= partition.get("min_insync_replicas", 1)
    inside, across = [], []
    for target in state.volumes:  # online volumes of known size only (usable_volumes)
        if target in state.relieved or state.free[target] - replica["size_bytes"] < floors[target]:
            continue
        if target[0] == source[0]:
            inside.append(target)
        elif across_ok and target[0] not in state.brokers[key] and _rack_ok(state, key, source[0], target[0]):
            across.append(target)
    order = sorted(inside, key=lambda t: (-state.free[t], t)) + sorted(across, key=lambda t: (-state.free[t], t))
    return order, across_ok


def _unplaceable(state: _State, replica: Dict[str, Any], floors: Dict[Tuple[int, str], int]) -> Optional[str]:
    """Why no log dir can take the replica now, or None."""
    destinations, across_ok = _destinations(state, replica, floors)
    if destinations:
        return None
    if across_ok:
        return "no log dir has room for it"
    return (
        "no other log dir of its broker has room, and moving it to another broker could leave fewer in-sync replicas "
        "than min.insync.replicas"
    )


def _choose(candidates: List[Dict[str, Any]], need: int) -> List[Dict[str, Any]]:
    """Replicas whose sizes reach ``need`` with few bytes: the smallest one that reaches what is left, else the
    largest below it, again; then any chosen replica the others reach without is left out."""
    left = sorted(candidates, key=lambda r: (r["size_bytes"], r["topic"], r["partition"]))
    chosen, remaining = [], need
    while remaining > 0 and left:
        reaching = [r for r in left if r["size_bytes"] >= remaining]
        pick = reaching[0] if reaching else left[-1]
        chosen.append(pick)
        left.remove(pick)
        remaining -= pick["size_bytes"]
    if remaining > 0:
        return chosen  # not enough: every candidate
    for replica in sorted(chosen, key=lambda r: (-r["size_bytes"], r["topic"], r["partition"])):
        if sum(r["size_bytes"] for r in chosen) - replica["size_bytes"] >= need:
            chosen.remove(replica)
    return chosen


def plan(  # pylint: disable=too-many-arguments,too-many-locals
    volumes: Iterable[Dict[str, Any]],
    replicas: Iterable[Dict[str, Any]],
    partitions: Iterable[Dict[str, Any]],
    relieve_at: Dict[str, Any],
    relieve_to: Dict[str, Any],
    limit: Optional[Dict[str, Any]] = None,
    racks: Optional[Dict[int, Optional[str]]] = None,
    max_bytes: Optional[int] = None,
    max_partitions: Optional[int] = None,
) -> Dict[str, Any]:
    """The moves that relieve every volume at or below ``relieve_at``; see the module's docstring."""
    validate_thresholds(relieve_at, relieve_to, limit)
    max_bytes, max_partitions = _bound("max_bytes", max_bytes), _bound("max_partitions", max_partitions)
    known, skipped = volume_limits.usable_volumes(volumes)
    state = _State(known, replicas, partitions, racks or {})
    floors = {
        key: max(required_free_bytes(v, relieve_at), required_free_bytes(v, limit)) + 1
        for key, v in state.volumes.items()
    }
    sources = sorted(
        (key for key, v in state.volumes.items() if state.free[key] <= required_free_bytes(v, relieve_at)),
        key=lambda key: (state.free[key] - required_free_bytes(state.volumes[key], relieve_to), key),
    )
    state.relieved.update(sources)
    planned_bytes, blocked, reports = 0, [], []
    for source in sources:
        volume = state.volumes[source]
        target = required_free_bytes(volume, relieve_to)
        need = target - state.free[source]
        reasons: Dict[str, List[int]] = {}  # why -> the sizes of the replicas it kept on the source
        candidates = []
        for replica in state.replicas:
            if (replica["broker_id"], replica["log_dir"]) != source:
                continue
            why = _movable(state, replica) or _unplaceable(state, replica, floors)
            if why is None:
                candidates.append(replica)
            else:
                reasons.setdefault(why, []).append(replica["size_bytes"])
        for replica in _choose(candidates, need):
            if max_partitions is not None and len(state.moves) >= max_partitions:
                reasons.setdefault("the run's bound of {0} partitions".format(max_partitions), [])
                break
            if max_bytes is not None and planned_bytes + replica["size_bytes"] > max_bytes:
                reasons.setdefault("the run's bound of {0} bytes".format(max_bytes), [])
                continue
            destinations = _destinations(state, replica, floors)[0]
            if not destinations:
                reasons.setdefault("no log dir has room for it", []).append(replica["size_bytes"])
                continue
            destination = destinations[0]
            key = (replica["topic"], replica["partition"])
            state.free[source] += replica["size_bytes"]
            state.free[destination] -= replica["size_bytes"]
            if destination[0] != source[0]:
                state.brokers[key] = (state.brokers[key] - {source[0]}) | {destination[0]}
            state.moved.add(key)
            planned_bytes += replica["size_bytes"]
            state.moves.append(
                {
                    "topic": replica["topic"],
                    "partition": replica["partition"],
                    "from_broker": source[0],
                    "from_log_dir": source[1],
                    "to_broker": destination[0],
                    "to_log_dir": destination[1],
                    "bytes": replica["size_bytes"],
                    "kind": INSIDE if destination[0] == source[0] else ACROSS,
                }
            )
        reached = state.free[source] >= target
        reports.append(
            {
                "broker_id": source[0],
                "log_dir": source[1],
                "free_before": volume["usable_bytes"],
                "free_after": state.free[source],
                "relieve_to_bytes": target,
                "reached": reached,
            }
        )
        if not reached:
            blocked.append(_blocked(source, target - state.free[source], reasons))
    return {
        "moves": state.moves,
        "bytes": planned_bytes,
        "volumes": reports,
        "blocked": blocked,
        "skipped": [
            {"broker_id": v["broker_id"], "log_dir": v["log_dir"], "reason": volume_limits.volume_problem(v)}
            for v in skipped
        ],
    }


def _blocked(source: Tuple[int, str], short: int, reasons: Dict[str, List[int]]) -> Dict[str, Any]:
    # The count beside the bytes: the bytes of several replicas read as one replica's size otherwise.
    held = "; ".join(
        "{0}{1}".format(
            why,
            " ({0} replica{1}, {2} bytes)".format(len(sizes), "" if len(sizes) == 1 else "s", sum(sizes))
            if sizes
            else "",
        )
        for why, sizes in sorted(reasons.items())
    )
    return {
        "broker_id": source[0],
        "log_dir": source[1],
        "short_bytes": short,
        "reason": "broker {0} log dir {1}: {2} bytes short of its relieve_to target: {3}".format(
            source[0], source[1], short, held or "no replica on it can move"
        ),
    }
