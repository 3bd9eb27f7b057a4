#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: log_dir_relief
short_description: Move replicas off filling Kafka log dirs, inside a broker first, then to other brokers
version_added: 1.0.0
description:
  - Relieves every log dir whose free space is at or below O(relieve_at) by moving replicas off it until its free
    space reaches O(relieve_to), so that producers keep writing instead of being throttled.
  - "The plan prefers another log dir of the same broker (C(AlterReplicaLogDirs), no network traffic), then another
    broker (C(AlterPartitionReassignments)). It moves as few bytes as reach the target; never fills a destination to
    its own O(relieve_at), nor past O(limit); never puts two replicas of a partition on one broker, and keeps replicas
    on distinct racks where they were; never moves a replica of an under-replicated partition, one already moving,
    nor, across brokers, one whose partition could fall below C(min.insync.replicas) while it copies; and stops at
    O(max_bytes) and O(max_partitions). When a log dir's target cannot be reached, RV(plan) says why in C(blocked)."
  - Moves across brokers copy under Kafka's replication throttle (KIP-73) at O(throttle_rate), set as
    C(kafka-reassign-partitions --throttle) sets it, before the first move starts; when the moves end, the throttle
    configs are put back exactly as they were.
  - Before a cross-broker move starts, its destination broker is told the log dir of the planned replica
    (C(AlterReplicaLogDirs)), which it creates the replica in; left alone, it would pick the log dir with the fewest
    partitions. A move counts as done once the destination broker holds the replica in that log dir; one that arrived
    in another log dir (the broker restarted meanwhile) is moved there inside the broker.
  - "With O(wait=true) the module waits for every move, polling their progress; at O(timeout) it cancels the
    cross-broker moves still copying, puts the throttles back and fails, saying what finished. With O(wait=false) it
    returns once the moves started, with RV(pending): give it to a later run as O(pending), which checks the moves,
    waits for them when O(wait=true), and puts the throttles back once they all ended; the run after it relieves
    again."
  - "When a request fails while the module starts or follows the moves (a partial throttle, a start request that timed
    out, a failed read while waiting), it cancels the cross-broker moves it may have started and puts the throttles
    back, then fails saying what it did. When a cancel or the throttles' restore fails too, the failure returns
    RV(pending) (the moves that may still run, the throttles to put back): give it to a later run as O(pending)."
  - A moved replica's old files leave its source volume C(file.delete.delay.ms) after the move ends (Kafka's default
    is 60 seconds); until then DescribeLogDirs counts them as used. Run the module again no sooner than that, or it
    plans to free space that is about to come back.
  - The module refuses to start while a partition reassignment that it did not start is in progress (one started by
    C(kafka-reassign-partitions), Cruise Control or another run), and changes nothing then.
  - Thresholds, bounds and O(pending) are checked before the cluster is contacted; a bad value fails naming the
    option, the value and what is allowed.
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.connection
attributes:
  check_mode:
    support: full
    description: Reads the cluster and returns the plan (RV(moves), RV(plan)); nothing is moved and no config changes.
  diff_mode:
    support: full
    description: Shows the used bytes of every log dir the moves touch, before and after them.
options:
  relieve_at:
    description:
      - A log dir is relieved when its free space is at or below this level.
    type: dict
    required: true
    suboptions:
      type:
        description: How the level measures free space.
        type: str
        required: true
        choices: [min_free_bytes, min_free_percentage]
      level:
        description: Bytes, or percent (0 to 100) of the volume's capacity for V(min_free_percentage). Must be >= 0.
        type: float
        required: true
  relieve_to:
    description:
      - The free space a relieved log dir ends with; the same type as O(relieve_at), with a greater level.
    type: dict
    required: true
    suboptions:
      type:
        description: How the level measures free space.
        type: str
        required: true
        choices: [min_free_bytes, min_free_percentage]
      level:
        description: Bytes, or percent (0 to 100) of the volume's capacity for V(min_free_percentage). Must be >= 0.
        type: float
        required: true
  limit:
    description:
      - The free-space limit where the throttle starts (the quota plugin's or the disk guard's). No move fills a
        destination to it, when it is larger than O(relieve_at).
    type: dict
    suboptions:
      type:
        description: How the level measures free space.
        type: str
        required: true
        choices: [min_free_bytes, min_free_percentage]
      level:
        description: Bytes, or percent (0 to 100) of the volume's capacity for V(min_free_percentage). Must be >= 0.
        type: float
        required: true
  max_bytes:
    description: The most bytes one run moves (all moves together); no bound when not given.
    type: int
  max_partitions:
    description: The most partitions one run moves; no bound when not given.
    type: int
  throttle_rate:
    description:
      - The replication throttle of cross-broker moves, in bytes per second, set as C(leader.replication.throttled.rate)
        and C(follower.replication.throttled.rate) on every broker a move involves.
    type: int
    default: 10485760
  log_dir_throttle_rate:
    description:
      - The rate of moves inside a broker, in bytes per second, set as
        C(replica.alter.log.dirs.io.max.bytes.per.second) on each broker with such a move before it starts (as
        C(kafka-reassign-partitions --replica-alter-log-dirs-throttle) sets it), and put back as it was when the moves
        end. Without it, Kafka copies at disk speed, beside the producers' own writes.
    type: int
  wait:
    description: Wait for every move to end (V(true)), or return once they started, with RV(pending) (V(false)).
    type: bool
    default: true
  timeout:
    description: With O(wait=true), the seconds to wait for the moves before cancelling the cross-broker ones.
    type: float
    default: 600
  poll_interval:
    description: With O(wait=true), the seconds between two reads of the moves' progress.
    type: float
    default: 2
  pending:
    description:
      - RV(pending) of an earlier run that returned before its moves ended, or that failed leaving a move or a
        throttle behind. Its reassignments count as this module's own; once none of its moves runs any more, the
        throttles it recorded are put back, and the run ends there (it plans no new moves). A move that is not running
        and never started (cancelled, or not taken by the controller) is not waited for.
    type: dict
notes:
  - Needs C(DESCRIBE) and C(ALTER) on the cluster resource (reassignments, log dir moves), C(DESCRIBE_CONFIGS) and
    C(ALTER_CONFIGS) on the moving topics and the cluster (throttles).
  - Moves inside a broker need more than one log dir on it (JBOD, KIP-112), and Kafka 3.7 or later in KRaft mode.
seealso:
  - module: headroom.kafka.log_dirs_info
  - name: Kafka replication throttling
    description: Kafka documentation of the throttles that limit reassignment traffic.
    link: https://kafka.apache.org/documentation/#rep-throttle
"""

EXAMPLES = r"""
- name: Relieve every log dir with 20 percent free or less, until it has 30 percent
  headroom.kafka.log_dir_relief:
    bootstrap_servers: [kafka-1:9092, kafka-2:9092, kafka-3:9092]
    relieve_at: {type: min_free_percentage, level: 20}
    relieve_to: {type: min_free_percentage, level: 30}
    limit: {type: min_free_percentage, level: 10}
    max_bytes: 53687091200
    throttle_rate: 52428800
    timeout: 3600
  diff: true
  register: relief

- name: What moved, and what could not
  ansible.builtin.debug:
    msg: "{{ relief.moves | length }} moves, {{ relief.plan.blocked | map(attribute='reason') | list }}"

- name: Start the moves and return; a later run checks them and puts the throttles back
  headroom.kafka.log_dir_relief:
    relieve_at: {type: min_free_bytes, level: 10737418240}
    relieve_to: {type: min_free_bytes, level: 21474836480}
    wait: false
  register: started

- name: Later - finish what the first run started and put the throttle back
  headroom.kafka.log_dir_relief:
    relieve_at: {type: min_free_bytes, level: 10737418240}
    relieve_to: {type: min_free_bytes, level: 21474836480}
    pending: "{{ started.pending }}"
"""

RETURN = r"""
moves:
  description: The moves this run started (in check mode, would start), in the order of the plan.
  returned: always
  type: list
  elements: dict
  contains:
    topic: {description: The topic., type: str}
    partition: {description: The partition., type: int}
    from_broker: {description: The broker the replica leaves., type: int}
    from_log_dir: {description: The log dir the replica leaves., type: str}
    to_broker: {description: The broker the replica goes to (the same for a move inside a broker)., type: int}
    to_log_dir: {description: The log dir the replica goes to., type: str}
    bytes: {description: The replica's size when planned., type: int}
    kind: {description: V(log_dir) inside a broker or V(broker) across brokers., type: str}
  sample: [{"topic": "orders", "partition": 3, "from_broker": 2, "from_log_dir": "/data/1", "to_broker": 2,
            "to_log_dir": "/data/2", "bytes": 73400320, "kind": "log_dir"}]
plan:
  description:
    - The plan - RV(moves), the bytes they move, each relieved log dir (free bytes before and after, its target, and
      whether it reaches it), the log dirs whose target cannot be reached with why (C(blocked)), and the log dirs left
      out (C(skipped), offline or of unknown size).
  returned: when the run planned
  type: dict
  sample: {"moves": [], "bytes": 0, "volumes": [{"broker_id": 2, "log_dir": "/data/1", "free_before": 1048576,
           "free_after": 1048576, "relieve_to_bytes": 4194304, "reached": false}],
           "blocked": [{"broker_id": 2, "log_dir": "/data/1", "short_bytes": 3145728,
           "reason": "broker 2 log dir /data/1 - 3145728 bytes short of its relieve_to target - no log dir has room"}],
           "skipped": []}
verified:
  description:
    - Each move with its C(state) and C(copied_bytes) (the bytes in its destination log dir), when last read - V(done),
      V(moving), V(in another log dir) (a cross-broker move whose replica arrived elsewhere on its broker, being sent
      to its log dir) or V(not started).
  returned: when the run waited, or checked O(pending)
  type: list
  elements: dict
progress:
  description: Samples of the wait - C(seconds) since it began, C(copied_bytes) and C(moves_done).
  returned: when the run waited
  type: list
  elements: dict
pending:
  description:
    - The moves still running and the throttles to put back after them; give it to a later run as O(pending).
    - On a failure, the cross-broker moves the run could not cancel and the throttles it may not have put back.
  returned: when moves are still running at the end of the run, or a failed run could not cancel a move or put the
    throttles back
  type: dict
throttles_before:
  description:
    - The throttle configs the run set (the replication throttle of cross-broker moves and, with
      O(log_dir_throttle_rate), the log dir throttle of moves inside a broker), with their values before it (null - not
      set), as C(topics) and C(brokers); they were put back when the moves ended. For a run given O(pending), the ones
      it puts back.
  returned: always, on failure too
  type: dict
  sample: {"topics": {"orders": {"leader.replication.throttled.replicas": null}},
           "brokers": {"2": {"leader.replication.throttled.rate": null}}}
cancelled:
  description:
    - The partitions whose cross-broker move Kafka cancelled at the run's request (a timeout, a failed request, or
      Kafka refusing another move).
  returned: always
  type: list
  elements: dict
cancel_failed:
  description:
    - The partitions whose cross-broker move the run could not cancel, with C(error) (Kafka's answer, or why the
      request failed); they may still run, and are in RV(pending).
  returned: when a cancel failed
  type: list
  elements: dict
foreign_reassignments:
  description: The reassignments in progress that the module did not start, when it refused to run.
  returned: when the module refused to run
  type: list
  elements: dict
missing_brokers:
  description: Brokers that did not answer; their log dirs were neither relieved nor used as destinations.
  returned: always
  type: list
  elements: int
fenced_brokers:
  description: Brokers fenced by the controller; their log dirs were neither relieved nor used as destinations.
  returned: always
  type: list
  elements: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils import (
    connection,
    limit_options,
    option_checks,
    relief_apply,
    relief_moves,
    relief_plan,
)
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError

# The shared limit options, narrowed to free space: relief is about free space.
MODULE_OPTIONS = dict(
    relief_apply.PLAN_OPTIONS,
    limit=dict(type="dict", options=limit_options.FREE_LIMIT_OPTIONS),
    wait=dict(type="bool", default=True),
    timeout=dict(type="float", default=600),
    poll_interval=dict(type="float", default=2),
    pending=dict(type="dict"),
)
ARGUMENT_SPEC = connection.argument_spec(**MODULE_OPTIONS)
OPTION_RANGES = dict(
    relief_apply.PLAN_RANGES,
    **{
        "limit.level": limit_options.LIMIT_LEVEL,
        "timeout": option_checks.seconds(0, 86400, above=True),
        "poll_interval": option_checks.seconds(0.1, 3600),
    },
)


def _options(params):
    """The module's options as relief_apply takes them; a bad combination fails here, before Kafka is asked."""
    options = {
        name: params[name]
        for name in ("max_bytes", "max_partitions", "throttle_rate", "log_dir_throttle_rate", "wait", "timeout")
    }
    options.update(
        relieve_at=limit_options.graded_limit(params["relieve_at"]),
        relieve_to=limit_options.graded_limit(params["relieve_to"]),
        limit=limit_options.graded_limit(params["limit"]),
        poll_interval=params["poll_interval"],
    )
    relief_plan.validate_thresholds(options["relieve_at"], options["relieve_to"], options["limit"])
    options["pending"] = relief_moves.validate_pending(params["pending"])
    return options


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
        required_together=connection.CONNECTION_REQUIRED_TOGETHER,
        required_if=connection.CONNECTION_REQUIRED_IF,
    )
    connection.check(module, OPTION_RANGES)
    try:
        options = _options(module.params)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    adapter = connection.connect(module, "to read its log dirs and move replicas")
    try:
        result = relief_apply.relieve(adapter, options, check_mode=module.check_mode)
    except relief_apply.ReliefError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    except KafkaAdapterError as exc:
        module.fail_json(msg=str(exc))
    finally:
        adapter.close()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
