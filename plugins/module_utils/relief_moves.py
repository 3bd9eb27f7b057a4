# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What applying a relief plan asks of Kafka, and how far it got, with no I/O.

- Moves inside a broker become AlterReplicaLogDirs entries; moves across brokers become AlterPartitionReassignments
  targets (the partition's replica list with the destination in the source's place, so the preferred leader only
  changes when the leader itself moves).
- A cross-broker move copies under Kafka's replication throttle (KIP-73), set as ``kafka-reassign-partitions
  --throttle`` sets it: the topic's ``leader.replication.throttled.replicas`` lists every current replica of a moving
  partition, its ``follower.replication.throttled.replicas`` the new ones, and every broker involved gets
  ``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate``. The values before are kept, so
  that the end of the run puts back exactly what was there.
- A cross-broker move names its destination log dir before its reassignment starts: AlterReplicaLogDirs for a replica
  the destination broker does not hold yet records the log dir it will create the replica in (Kafka answers
  REPLICA_NOT_AVAILABLE, having recorded it); without it the broker picks the log dir with the fewest partitions.
- A move inside a broker copies the replica at disk speed, beside the producers' own writes; with a log dir rate, the
  broker gets ``replica.alter.log.dirs.io.max.bytes.per.second`` before its moves start (KIP-113), recorded and put
  back the same way.
- Progress is read from DescribeLogDirs (future replicas, replica sizes, log dirs) and ListPartitionReassignments.
- A reassignment in progress that the run did not start is someone else's: the run refuses to start beside it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.headroom.kafka.plugins.module_utils import relief_plan

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
TOPIC_THROTTLE_KEYS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
BROKER_THROTTLE_KEYS = (LEADER_RATE, FOLLOWER_RATE)
# The rate of the copies inside a broker (KIP-113), as kafka-reassign-partitions --replica-alter-log-dirs-throttle sets
# it: unbounded unless set.
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
EVERY_REPLICA = "*"  # a topic whose every replica is throttled already

DONE, MOVING, NOT_STARTED = "done", "moving", "not started"
# A cross-broker move whose reassignment ended with the new replica in another log dir than the planned one (the
# broker lost the recorded log dir, restarting): a move inside that broker puts it where it was planned.
ELSEWHERE = "in another log dir"

# Kafka's per-item answers that the run reads.
NO_REASSIGNMENT_IN_PROGRESS = "NO_REASSIGNMENT_IN_PROGRESS"  # a cancel of a reassignment that is not running
REPLICA_NOT_AVAILABLE = "REPLICA_NOT_AVAILABLE"  # AlterReplicaLogDirs for a replica the broker does not hold yet
KAFKA_STORAGE_ERROR = "KAFKA_STORAGE_ERROR"  # a log dir the broker counts offline; Kafka marks it retriable
UNANSWERED = "UNANSWERED"  # an item the answer left out: Kafka may or may not have acted on it

PartitionKey = Tuple[str, int]


class MovesError(ValueError):
    """Input that cannot describe moves of this collection; the message names the field, the value and what is
    allowed."""


def _key(item: Dict[str, Any]) -> PartitionKey:
    return (item["topic"], item["partition"])


def _replicas_now(partitions: Iterable[Dict[str, Any]]) -> Dict[PartitionKey, List[int]]:
    """Each partition's replicas (broker ids) as Metadata gives them."""
    return {_key(p): list(p["replicas"]) for p in partitions}


def inside(moves: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [move for move in moves if move["kind"] == relief_plan.INSIDE]


def across(moves: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [move for move in moves if move["kind"] == relief_plan.ACROSS]


def _to_log_dirs(moves: Iterable[Dict[str, Any]]) -> Dict[Tuple[str, int, int], str]:
    """AlterReplicaLogDirs entries sending each move's replica to its destination log dir: {(topic, partition,
    destination broker): destination log dir}."""
    return {(m["topic"], m["partition"], m["to_broker"]): m["to_log_dir"] for m in moves}


def log_dir_assignments(moves: Iterable[Dict[str, Any]]) -> Dict[Tuple[str, int, int], str]:
    """AlterReplicaLogDirs entries of the moves inside a broker."""
    return _to_log_dirs(inside(moves))


def destination_log_dirs(moves: Iterable[Dict[str, Any]]) -> Dict[Tuple[str, int, int], str]:
    """AlterReplicaLogDirs entries naming where each cross-broker move's new replica is created."""
    return _to_log_dirs(across(moves))


def misplaced(report: Iterable[Dict[str, Any]]) -> Dict[Tuple[str, int, int], str]:
    """AlterReplicaLogDirs entries that move the replicas of ``report`` (progress) in another log dir to theirs."""
    return _to_log_dirs(m for m in report if m["state"] == ELSEWHERE)


def partition_keys(moves: Iterable[Dict[str, Any]]) -> List[PartitionKey]:
    """The (topic, partition) of the moves, each once, in order."""
    return sorted({_key(move) for move in moves})


def answers_for(keys: Iterable[Any], answered: Dict[Any, Optional[str]]) -> Dict[Any, Optional[str]]:
    """Kafka's per-item answer for each of ``keys`` (None: done), UNANSWERED for an item the answer left out."""
    return {key: answered.get(key, UNANSWERED) for key in keys}


def reassignment_targets(
    moves: Iterable[Dict[str, Any]], partitions: Iterable[Dict[str, Any]]
) -> Dict[PartitionKey, List[int]]:
    """AlterPartitionReassignments targets: {(topic, partition): replicas}, the destination in the source's place."""
    current = _replicas_now(partitions)
    targets: Dict[PartitionKey, List[int]] = {}
    for move in across(moves):
        key = _key(move)
        if key not in current:
            raise MovesError("moves: partition {0}-{1} is not in the cluster's metadata".format(*key))
        replicas = targets.get(key, current[key])
        if move["from_broker"] not in replicas:
            raise MovesError(
                "moves: broker {0} holds no replica of {1}-{2} (its replicas: {3})".format(
                    move["from_broker"], key[0], key[1], replicas
                )
            )
        targets[key] = [move["to_broker"] if broker == move["from_broker"] else broker for broker in replicas]
    return targets


def _entries(value: Optional[str]) -> List[str]:
    return [entry.strip() for entry in (value or "").split(",") if entry.strip()]


def _with(value: Optional[str], added: Iterable[str]) -> Optional[str]:
    """A throttled-replicas value with ``added`` entries in it (``*`` already covers them)."""
    entries = _entries(value)
    if EVERY_REPLICA in entries:
        return value
    merged = sorted(set(entries) | set(added), key=_entry_order)
    return ",".join(merged) if merged else value


def _entry_order(entry: str) -> Tuple[int, int, str]:
    partition, _colon, broker = entry.partition(":")
    try:
        return (int(partition), int(broker), entry)
    except ValueError:
        return (-1, -1, entry)


def throttled_replicas(
    targets: Dict[PartitionKey, List[int]], partitions: Iterable[Dict[str, Any]]
) -> Dict[str, Dict[str, List[str]]]:
    """{topic: {leader key: ["partition:broker" of the current replicas], follower key: [... of the new ones]}}."""
    current = _replicas_now(partitions)
    wanted: Dict[str, Dict[str, List[str]]] = {}
    for (topic, number), replicas in sorted(targets.items()):
        keys = wanted.setdefault(topic, {LEADER_REPLICAS: [], FOLLOWER_REPLICAS: []})
        keys[LEADER_REPLICAS] += ["{0}:{1}".format(number, b) for b in current[(topic, number)]]
        keys[FOLLOWER_REPLICAS] += ["{0}:{1}".format(number, b) for b in replicas if b not in current[(topic, number)]]
    return wanted


def involved_brokers(targets: Dict[PartitionKey, List[int]], partitions: Iterable[Dict[str, Any]]) -> List[int]:
    """Every broker that sends or receives a moving partition's data: its current replicas and its new ones."""
    current = _replicas_now(partitions)
    brokers = set()
    for key, replicas in targets.items():
        brokers |= set(current[key]) | set(replicas)
    return sorted(brokers)


def throttle_settings(
    targets: Dict[PartitionKey, List[int]],
    partitions: Iterable[Dict[str, Any]],
    rate: int,
    topic_configs: Dict[str, Dict[str, Optional[str]]],
) -> Dict[str, Dict[str, Dict[str, Optional[str]]]]:
    """The configs to set for the moves: {"topics": {topic: {key: value}}, "brokers": {broker id as str: {key:
    value}}}, only the values that change; ``topic_configs`` holds each moving topic's throttled-replicas values
    now (None: not set)."""
    partitions = list(partitions)
    topics = {}
    for topic, wanted in throttled_replicas(targets, partitions).items():
        now = topic_configs.get(topic, {})
        changes = {}
        for key in TOPIC_THROTTLE_KEYS:
            value = _with(now.get(key), wanted[key])
            if value != now.get(key):
                changes[key] = value
        if changes:
            topics[topic] = changes
    brokers: Dict[str, Dict[str, Optional[str]]] = {
        str(b): {key: str(rate) for key in BROKER_THROTTLE_KEYS} for b in involved_brokers(targets, partitions)
    }
    return {"topics": topics, "brokers": brokers}


def log_dir_throttle(moves: Iterable[Dict[str, Any]], rate: Optional[int]) -> Dict[str, Dict[str, Optional[str]]]:
    """{broker id as str: {LOG_DIR_RATE: rate}} for every broker with a move inside it; none without a rate."""
    if rate is None:
        return {}
    return {str(broker): {LOG_DIR_RATE: str(rate)} for broker in sorted({m["to_broker"] for m in inside(moves)})}


def restore_settings(
    before: Dict[str, Dict[str, Dict[str, Optional[str]]]],
) -> Dict[str, Dict[str, Dict[str, Optional[str]]]]:
    """``before`` as recorded when the throttle was set, with both kinds present: set_configs puts it back as it is
    (None deletes a key that was not set)."""
    return {
        kind: {name: dict(values) for name, values in before.get(kind, {}).items()} for kind in ("topics", "brokers")
    }


def recorded_before(
    settings: Dict[str, Dict[str, Dict[str, Optional[str]]]],
    topic_configs: Dict[str, Dict[str, Optional[str]]],
    broker_configs: Dict[str, Dict[str, Optional[str]]],
) -> Dict[str, Dict[str, Dict[str, Optional[str]]]]:
    """What each key that ``settings`` changes held before (None: not set as a dynamic config)."""
    return {
        "topics": {
            name: {key: topic_configs.get(name, {}).get(key) for key in values}
            for name, values in settings["topics"].items()
        },
        "brokers": {
            name: {key: broker_configs.get(name, {}).get(key) for key in values}
            for name, values in settings["brokers"].items()
        },
    }


def foreign_reassignments(
    reassignments: Iterable[Dict[str, Any]], own: Iterable[Dict[str, Any]] = ()
) -> List[Dict[str, Any]]:
    """The reassignments in progress that none of ``own`` (moves a run started) explains."""
    mine = {_key(m) for m in across(own)}
    return [r for r in reassignments if _key(r) not in mine]


def describe_reassignment(reassignment: Dict[str, Any]) -> str:
    return "{0}-{1} (replicas {2}, adding {3}, removing {4})".format(
        reassignment["topic"],
        reassignment["partition"],
        reassignment.get("replicas"),
        reassignment.get("adding_replicas"),
        reassignment.get("removing_replicas"),
    )


def _replicas_by_place(log_dirs: Iterable[Dict[str, Any]]) -> Dict[Tuple[str, int, int], List[Dict[str, Any]]]:
    places: Dict[Tuple[str, int, int], List[Dict[str, Any]]] = {}
    for row in log_dirs:
        for replica in row.get("replicas") or []:
            places.setdefault((replica["topic"], replica["partition"], row["broker_id"]), []).append(
                dict(replica, log_dir=row["log_dir"])
            )
    return places


def progress(
    moves: Iterable[Dict[str, Any]],
    log_dirs: Iterable[Dict[str, Any]],
    partitions: Iterable[Dict[str, Any]],
    reassignments: Iterable[Dict[str, Any]],
) -> List[Dict[str, Any]]:
    """Each move with its ``state`` (done, moving, in another log dir, not started) and ``copied_bytes``: the bytes in
    the destination log dir so far (a future replica's, else the replica's). A move is done when the destination
    broker holds the replica in the destination log dir, not as a future replica."""
    log_dirs = list(log_dirs)
    places = _replicas_by_place(log_dirs)
    answered = {row["broker_id"] for row in log_dirs}
    replicas_now = {key: set(brokers) for key, brokers in _replicas_now(partitions).items()}
    ongoing = {_key(r) for r in reassignments}
    report = []
    for move in moves:
        key = _key(move)
        at_destination = places.get((move["topic"], move["partition"], move["to_broker"]), [])
        in_place = [r for r in at_destination if r["log_dir"] == move["to_log_dir"]]
        future = [r for r in in_place if r["is_future"]]
        settled = [r for r in in_place if not r["is_future"]]
        if move["kind"] == relief_plan.INSIDE:
            if move["to_broker"] not in answered:
                state = MOVING  # the broker did not answer DescribeLogDirs: nothing says the move is not running
            else:
                state = MOVING if future else DONE if settled else NOT_STARTED
        else:
            state = _across_state(move, key in ongoing, replicas_now.get(key, set()), at_destination, future, settled)
        copied = (future or settled or [{"size_bytes": 0}])[0]["size_bytes"] or 0
        report.append(
            dict(move, state=state, copied_bytes=min(copied, move["bytes"]) if state != DONE else move["bytes"])
        )
    return report


def _across_state(move, reassigning, replicas, at_destination, future, settled):
    """A cross-broker move's state from the controller (``reassigning``), Metadata (``replicas``) and the
    destination broker's log dirs (its replicas of the partition, those in the destination log dir)."""
    if reassigning or {move["to_broker"], move["from_broker"]} <= replicas:
        # Until a reassignment ends, Metadata lists the old replicas and the new together; a broker's Metadata may
        # still do so a moment after the controller ended it.
        return MOVING
    if move["to_broker"] not in replicas:
        return NOT_STARTED  # never started, or cancelled: the partition is where it was
    if settled:
        return DONE
    if future or not at_destination:
        # Moving into the destination log dir inside the broker; or the broker did not answer, or not yet.
        return MOVING
    return ELSEWHERE


def unfinished(report: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [move for move in report if move["state"] != DONE]


def running(report: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The moves still to wait for: copying, or to be put in their log dir. A move not started (its reassignment
    refused or cancelled) never ends by itself, and is not waited for."""
    return [move for move in report if move["state"] in (MOVING, ELSEWHERE)]


def validate_pending(pending: Any) -> Optional[Dict[str, Any]]:
    """An earlier run's RV(pending): {"moves": [...], "throttles_before": {...}}; None when not given."""
    if pending is None:
        return None
    if not isinstance(pending, dict) or not isinstance(pending.get("moves"), list):
        raise MovesError(
            "pending must be an earlier run's pending result, a dict with a list of moves (got {0!r})".format(pending)
        )
    fields = ("topic", "partition", "from_broker", "from_log_dir", "to_broker", "to_log_dir", "bytes", "kind")
    for index, move in enumerate(pending["moves"]):
        missing = [f for f in fields if not isinstance(move, dict) or f not in move]
        if missing:
            raise MovesError(
                "pending.moves[{0}] lacks {1}: each move is as the module returns it, with {2}".format(
                    index, ", ".join(missing), ", ".join(fields)
                )
            )
        if move["kind"] not in (relief_plan.INSIDE, relief_plan.ACROSS):
            raise MovesError(
                "pending.moves[{0}].kind must be {1} or {2} (got {3!r})".format(
                    index, relief_plan.INSIDE, relief_plan.ACROSS, move["kind"]
                )
            )
    before = pending.get("throttles_before") or {}
    if not isinstance(before, dict) or set(before) - {"topics", "brokers"}:
        raise MovesError(
            "pending.throttles_before must be a dict with topics and brokers, as the module returns it "
            "(got {0!r})".format(before)
        )
    return {"moves": list(pending["moves"]), "throttles_before": restore_settings(before)}


def usage_diff(
    volumes: Iterable[Dict[str, Any]], moves: Iterable[Dict[str, Any]]
) -> Dict[str, Dict[str, Dict[str, int]]]:
    """Ansible's diff: each touched log dir's used bytes before and after the moves, keyed "broker N LOG_DIR"."""
    used = {
        (v["broker_id"], v["log_dir"]): v["total_bytes"] - v["usable_bytes"]
        for v in volumes
        if v.get("total_bytes") is not None and v.get("usable_bytes") is not None
    }
    after = dict(used)
    touched = set()
    for move in moves:
        source, destination = (move["from_broker"], move["from_log_dir"]), (move["to_broker"], move["to_log_dir"])
        after[source] = after.get(source, 0) - move["bytes"]
        after[destination] = after.get(destination, 0) + move["bytes"]
        touched |= {source, destination}
    name = "broker {0} {1}".format
    return {
        "before": {name(*key): {"used_bytes": used.get(key, 0)} for key in sorted(touched)},
        "after": {name(*key): {"used_bytes": after[key]} for key in sorted(touched)},
    }
