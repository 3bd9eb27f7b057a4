#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: disk_guard
short_description: Throttle Kafka producers through client quotas when log dirs fill up, without a broker plugin
version_added: 1.0.0
description:
  - Observes every log dir of the cluster (or the volumes given), decides a throttle factor with the shipped Strimzi
    plugin's binary rule (O(policy=strimzi)) or the graded soft and hard limits (O(policy=graded)), and makes the
    cluster's client quotas hold the declared produce rates scaled by that factor. Kafka enforces them on every
    broker; no jar is needed on the brokers.
  - The declared set is O(quotas) (as M(headroom.kafka.client_quota) takes them) and the produce rate of every client
    no declared entity covers, O(default_producer_byte_rate), set on the C(<default>) user. At factor F each
    declared C(producer_byte_rate) and the C(<default>) user's become C(max(floor(rate * F), 1)) bytes per second;
    other keys stay as declared. The principals of O(excluded_principals) are never scaled - each gets a
    C(user=<name>) entity at its declared rate, or at O(excluded_producer_byte_rate), so the C(<default>) user's rate
    never reaches them.
  - The module manages the cluster's whole client quota set - at factor 1 the cluster holds exactly the declared
    set, the C(<default>) user and the excluded principals' entities; quotas of any other entity are removed, since an
    entity nobody declared would keep its own unscaled rate while the disks fill.
  - Stateless and idempotent - the applied quotas are the state. The same volumes and declaration change nothing, and
    no request is sent beyond the reads. One AlterClientQuotas request with C(validate_only) checks every change
    before one request applies them; if Kafka refuses any, nothing is applied.
  - "Missing data: with O(policy=strimzi), an observation in which some broker did not answer keeps the factor found
    applied while it is valid (O(throttle_factor_validity) since the last complete observation, kept in
    O(state_file)), then applies O(throttle_factor_fallback), as the plugin does; a broker that leaves the cluster is
    remembered with its volumes for the validity. With O(policy=graded), O(missing_data_action) applies.
    RV(reason) says which."
  - "With O(relieve), each run first relieves the log dirs whose free space is at or below O(relieve.relieve_at):
    it starts the moves of M(headroom.kafka.log_dir_relief)'s plan (another log dir of the same broker first, then
    another broker under Kafka's replication throttle) without waiting for them, keeps them in O(state_file), and
    follows them on the next runs until they end, then puts the replication throttle back. The factor is decided on
    the volumes as observed, so producers are throttled only while a volume still reaches the limit. RV(relief) says
    what the step did; a step that fails is reported there and never stops the decision."
  - Everything that can be checked without Kafka is checked first; bad input fails naming the option, the value and
    what is allowed, before any request.
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.connection
  - headroom.kafka.graded_limits
attributes:
  check_mode:
    support: full
    description:
      - Reads, decides and sends the AlterClientQuotas request with C(validate_only) only; O(state_file) is not written.
  diff_mode:
    support: full
    description: Shows the quotas of every entity the factor changes, before and after,
                 keyed by entity (for example C(user=alice)).
options:
  policy:
    description:
      - V(strimzi) - the shipped Strimzi quota plugin's binary rule with O(min_available_bytes) or
        O(min_available_ratio).
      - V(graded) - the soft and hard limits of the first volume-usage proposal,
        with a factor that falls linearly between them.
    type: str
    choices: [strimzi, graded]
    default: strimzi
  min_available_bytes:
    description:
      - With O(policy=strimzi) - a volume violates when its usable bytes are at or below this (>= 0).
      - Exactly one of O(min_available_bytes) and O(min_available_ratio) is required with O(policy=strimzi).
    type: int
  min_available_ratio:
    description:
      - With O(policy=strimzi) - a volume violates when usable/total is at or below this (0.0 to 1.0 inclusive).
    type: float
  throttle_factor_fallback:
    description:
      - With O(policy=strimzi) - the factor applied once the factor found applied is no longer valid and the cluster
        still cannot be observed completely (0.0 to 1.0, the plugin's C(throttle.factor.fallback)).
    type: float
    default: 1.0
  throttle_factor_validity:
    description:
      - With O(policy=strimzi) - how long a factor stays valid after the last complete observation (ISO 8601 duration
        such as V(PT5M), or a number of seconds; the plugin's C(throttle.factor.validity.duration)).
    type: str
    default: PT5M
  throttle_factor_step:
    description:
      - With O(policy=graded) - the factor moves in steps of this size, so that the quotas are written again only when
        the throttle really changes, not at every decision while a volume moves at all.
      - The factor falls at once to the highest step at or below the exact graded factor, and rises only to the highest
        step at or below the exact factor less half a step - free space that comes back by less than that leaves the
        quotas as they are. It is never above the exact factor.
      - A share of 1 that divides it (V(0.05) is 20 steps, V(0.1) 10); V(0) follows the exact factor, writing every
        quota entity at every decision in which a volume between the limits moved.
    type: float
    default: 0.05
  missing_data_action:
    description:
      - With O(policy=graded) - what incomplete data does; V(pause) holds producers at the floor (factor 0.0), V(open)
        decides from the volumes seen.
    type: str
    choices: [pause, open]
    default: pause
  quotas:
    description:
      - The declared client quota set at factor 1, as M(headroom.kafka.client_quota) takes it
        (O(headroom.kafka.client_quota#module:quotas)). O(quotas[].state=absent) is not allowed - leave the entity out.
      - Declared C(client_id)-only produce rates never apply while the C(<default>) user has one (Kafka's precedence
        puts every user entity first); RV(declaration_warnings) names them.
    type: list
    elements: dict
    default: []
    suboptions:
      entity:
        description:
          - The quota entity - O(quotas[].entity.user) and/or O(quotas[].entity.client_id),
            or O(quotas[].entity.ip) alone.
          - C(<default>) is the default entity of that type.
        type: dict
        required: true
        suboptions:
          user:
            description: User principal name, or C(<default>).
            type: str
          client_id:
            description: Client id, or C(<default>).
            type: str
          ip:
            description: IP address, or C(<default>).
            type: str
      producer_byte_rate:
        description: Produce bandwidth at factor 1, bytes per second per broker (scaled by the factor).
        type: float
      consumer_byte_rate:
        description: Fetch bandwidth in bytes per second per broker (never scaled).
        type: float
      request_percentage:
        description: Share of request handler and network thread time, in percent (never scaled).
        type: float
      controller_mutation_rate:
        description: Partition mutations per second (never scaled).
        type: float
      connection_creation_rate:
        description: New connections per second, IP entities only (never scaled).
        type: float
      state:
        description: Only V(present); the guard holds the whole set.
        type: str
        choices: [present, absent]
        default: present
  default_producer_byte_rate:
    description:
      - The produce rate at factor 1 of every client no declared entity covers, set on the C(<default>) user; a whole
        number of bytes per second from 1.
      - Required unless O(quotas) holds the C(<default>) user with a C(producer_byte_rate) (then they must agree).
    type: float
  excluded_principals:
    description:
      - Principals never throttled, as C(User:<name>) (like the plugin's C(excluded.principal.name.list)); typically the
        brokers' own principal and Cruise Control's.
    type: list
    elements: str
    default: []
  excluded_producer_byte_rate:
    description:
      - The produce rate of an excluded principal without a declared one. By default Kafka's own unbounded rate,
        V(9223372036854775807) (Long.MAX_VALUE).
    type: float
  log_dirs:
    description:
      - Judge these volumes instead of querying the cluster, as RV(headroom.kafka.log_dirs_info#module:log_dirs)
        returns them. Mutually exclusive with O(snapshots).
    type: list
    elements: dict
  snapshots:
    description:
      - Judge the latest of these usage snapshot messages per broker, as
        RV(headroom.kafka.usage_snapshot_info#module:snapshots) returns them; an active broker without one makes the
        data incomplete.
    type: list
    elements: dict
  max_age:
    description: With O(snapshots), ignore snapshots older than this (ISO 8601 duration or seconds).
    type: str
  expected_brokers:
    description:
      - Ids of the brokers the cluster should have; one listed without data makes the data incomplete even when it
        is not active (a cleanly stopped broker leaves the list of active brokers).
    type: list
    elements: int
  relieve:
    description:
      - Relieve filling log dirs before throttling - move replicas off every log dir at or below O(relieve.relieve_at)
        until it reaches O(relieve.relieve_to), as M(headroom.kafka.log_dir_relief) plans them; no destination is
        filled to its own O(relieve.relieve_at), nor past the throttle's limit (O(min_available_bytes),
        O(min_available_ratio) or a free-space O(soft_limit)).
      - Set O(state_file) with it - the moves a run starts are followed by the next runs through that file, and only
        a run that finds them ended puts the replication throttle back.
    type: dict
    suboptions:
      relieve_at:
        description:
          - A log dir is relieved when its free space is at or below this level; it must ask for more free space than
            the throttle's limit of the same type, so that relief starts first.
        type: dict
        required: true
        suboptions:
          type:
            description: How the level measures free space.
            type: str
            required: true
            choices: [min_free_bytes, min_free_percentage]
          level:
            description: Bytes, or percent (0 to 100) of the volume's capacity for V(min_free_percentage).
            type: float
            required: true
      relieve_to:
        description:
          - The free space a relieved log dir ends with; the same type as O(relieve.relieve_at), with a greater level.
        type: dict
        required: true
        suboptions:
          type:
            description: How the level measures free space.
            type: str
            required: true
            choices: [min_free_bytes, min_free_percentage]
          level:
            description: Bytes, or percent (0 to 100) of the volume's capacity for V(min_free_percentage).
            type: float
            required: true
      max_bytes:
        description: The most bytes one run starts moving; no bound when not given.
        type: int
      max_partitions:
        description: The most partitions one run starts moving; no bound when not given.
        type: int
      throttle_rate:
        description: The replication throttle of cross-broker moves, in bytes per second.
        type: int
        default: 10485760
      log_dir_throttle_rate:
        description:
          - The rate of moves inside a broker, in bytes per second (C(replica.alter.log.dirs.io.max.bytes.per.second),
            put back as it was when the moves end); without it, Kafka copies at disk speed.
        type: int
      settle_time:
        description:
          - After moves end, how long no new plan is made (ISO 8601 duration or seconds). A moved replica's old files
            stay on its source volume for C(file.delete.delay.ms) (60 s by default); a plan made sooner would move more
            to free space that is about to come back.
        type: str
        default: PT90S
  state_file:
    description:
      - A JSON file on the host the module runs on, where the time and the volumes of the last complete observation
        are kept between runs (O(policy=strimzi)), with the factor the module last applied and the one it is about to
        apply (written before the request that applies it); written atomically whenever it changes.
      - Without it, an incomplete observation has no valid factor to keep and applies O(throttle_factor_fallback) at
        once.
      - With it, a factor stricter than the decision that another writer (a second guard) made Kafka hold is kept for
        at most O(throttle_factor_validity), so that two guards remembering different brokers do not flap the quotas.
    type: path
notes:
  - Needs C(DESCRIBE) on the cluster (DescribeCluster, DescribeLogDirs), C(DESCRIBE_CONFIGS) and C(ALTER_CONFIGS)
    on the cluster resource (client quotas).
  - While a client quota callback such as the Strimzi quota plugin is active, Kafka stores these quotas but does not
    enforce them; use the guard instead of the plugin, not beside it.
  - Run it every check interval (or run the guard service the C(headroom.kafka.disk_guard) role installs);
    a single run decides once.
seealso:
  - module: headroom.kafka.volume_limits
  - module: headroom.kafka.client_quota
  - name: Kafka quotas
    description: Kafka documentation of client quotas and their precedence.
    link: https://kafka.apache.org/documentation/#design_quotas
"""

EXAMPLES = r"""
- name: Slow every producer down to nothing while any log dir has 10 % or less free, as the Strimzi plugin would
  headroom.kafka.disk_guard:
    bootstrap_servers: ["kafka1:9092"]
    policy: strimzi
    min_available_ratio: 0.1
    default_producer_byte_rate: 10485760
    quotas:
      - entity: {user: billing}
        producer_byte_rate: 52428800
    excluded_principals: ["User:kafka-broker", "User:cruise-control"]
    state_file: /var/lib/headroom/disk-guard-prod.json

- name: Graded - full speed above 50 GiB free, held at 1 byte/s at 10 GiB, linearly in between; pause when blind
  headroom.kafka.disk_guard:
    bootstrap_servers: ["kafka1:9092"]
    policy: graded
    soft_limit: {type: min_free_bytes, level: 53687091200}
    hard_limit: {type: min_free_bytes, level: 10737418240}
    missing_data_action: pause
    default_producer_byte_rate: 10485760
    expected_brokers: [1, 2, 3]
  check_mode: true
  diff: true
  register: guard

- name: What the factor does
  ansible.builtin.debug:
    msg: "{{ guard.throttle_factor }} ({{ guard.state }}): {{ guard.reason }}"
"""

RETURN = r"""
throttle_factor:
  description:
    - The factor applied to the declared produce rates (0.0 to 1.0); with O(policy=graded), in steps of
      O(throttle_factor_step).
  returned: always
  type: float
  sample: 0.5
exact_throttle_factor:
  description:
    - With O(policy=graded) - the factor the volumes give before it is held in steps (RV(throttle_factor) is at most
      this).
  returned: when O(policy=graded) and no missing-data pause applies
  type: float
  sample: 0.49992
state:
  description: V(OPEN) (1.0), V(THROTTLE) (between) or V(PAUSE) (0.0).
  returned: always
  type: str
  sample: THROTTLE
reason:
  description: Why this factor - V(observed), the factor kept while valid, the fallback, or the missing-data action.
  returned: always
  type: str
  sample: observed
policy:
  description: The policy that decided.
  returned: always
  type: str
observed:
  description: Whether every broker that should have answered did.
  returned: always
  type: bool
fallback_applied:
  description: Whether O(throttle_factor_fallback) applies (O(policy=strimzi)).
  returned: always
  type: bool
missing_data_applied:
  description: Whether the factor is 0.0 because of incomplete data (O(policy=graded), O(missing_data_action=pause)).
  returned: always
  type: bool
violations:
  description: The volumes past a limit, worst first (as M(headroom.kafka.volume_limits) returns them).
  returned: always
  type: list
  elements: dict
least_headroom:
  description: The volume with the least headroom, or null.
  returned: always
  type: dict
skipped_volumes:
  description: Volumes that could not be judged, with the reason.
  returned: always
  type: list
  elements: dict
missing_brokers:
  description: Active or expected brokers without data.
  returned: always
  type: list
  elements: int
source:
  description: Where the volumes came from - V(cluster), V(log_dirs) or V(snapshots).
  returned: always
  type: str
changes:
  description: The entities whose quotas changed (or would change in check mode), with C(before) and C(after).
  returned: always
  type: list
  elements: dict
  sample: [{"entity": {"user": "<default>"},
            "before": {"producer_byte_rate": 10485760}, "after": {"producer_byte_rate": 5242880}}]
quotas:
  description: Every client quota of the cluster after the run (in check mode, what it would be).
  returned: always
  type: list
  elements: dict
relief:
  description:
    - With O(relieve), what the relief step did - C(action) (V(idle), V(started), V(planned) in check mode, V(moving),
      V(finished), V(settling), V(blocked) or V(failed)), C(moves) (started, or followed with their C(state)),
      C(planned_bytes), C(moving_bytes), C(moved_bytes), C(blocked) (the log dirs whose target no move reaches, with
      why) and C(error).
  returned: when O(relieve) is set
  type: dict
  sample: {"action": "started", "planned_bytes": 73400320, "moving_bytes": 73400320, "moved_bytes": 0,
           "moves": [{"topic": "orders", "partition": 3, "from_broker": 2, "from_log_dir": "/data/1",
                      "to_broker": 2, "to_log_dir": "/data/2", "bytes": 73400320, "kind": "log_dir"}],
           "blocked": [], "error": null}
declaration_warnings:
  description:
    - What the declaration cannot do on Kafka (client_id-only produce rates shadowed by the C(<default>) user); each
      is also shown as a warning.
  returned: always
  type: list
  elements: str
"""

import datetime

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils import (
    connection,
    disk_guard,
    guard_memory,
    guard_options,
    guard_run,
)
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError
from ansible_collections.headroom.kafka.plugins.module_utils.quota_apply import QuotaApplyError

ARGUMENT_SPEC = dict(guard_options.ARGUMENT_SPEC, state_file=dict(type="path"))
PUBLIC_KEYS = (
    "throttle_factor",
    "exact_throttle_factor",
    "state",
    "reason",
    "policy",
    "observed",
    "fallback_applied",
    "missing_data_applied",
    "violations",
    "least_headroom",
    "skipped_volumes",
    "missing_brokers",
    "stale_brokers",
    "source",
    "changes",
    "quotas",
    "diff",
    "declaration_warnings",
    "remembered_brokers",
    "relief",
)


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=guard_options.MUTUALLY_EXCLUSIVE,
        required_if=guard_options.REQUIRED_IF,
        required_together=guard_options.REQUIRED_TOGETHER,
        # The moves a run starts are followed, and their throttle put back, by the runs after it: through this file.
        required_by={"relieve": ["state_file"]},
        supports_check_mode=True,
    )
    params = module.params
    try:
        settings = guard_options.settings(params)
    except disk_guard.GuardError as exc:
        module.fail_json(msg=str(exc))
    state_file = params["state_file"]
    problem = guard_memory.path_problem("state_file", state_file) if state_file else None
    if problem:
        module.fail_json(msg=problem)
    adapter = connection.connect(module, "to read every log dir and to read and set its client quotas")
    try:
        before = guard_memory.load_memory(state_file)
        result, memory = guard_run.guard_once(
            adapter,
            settings,
            before,
            datetime.datetime.now(datetime.timezone.utc),
            check_mode=module.check_mode,
            before_apply=(lambda ahead: guard_memory.save_memory(state_file, ahead)) if state_file else None,
        )
    except QuotaApplyError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    except KafkaAdapterError as exc:
        module.fail_json(msg="{0}; no quota was changed".format(exc))
    finally:
        adapter.close()
    for warning in result["declaration_warnings"]:
        module.warn(warning)
    if state_file and not module.check_mode and memory.to_json() != before.to_json():
        guard_memory.save_memory(state_file, memory)
    module.exit_json(changed=result["changed"], **dict((key, result[key]) for key in PUBLIC_KEYS if key in result))


if __name__ == "__main__":
    main()
