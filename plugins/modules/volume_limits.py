#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: volume_limits
short_description: Evaluate Kafka log dirs against disk limits and compute the produce throttle factor
version_added: 1.0.0
description:
  - Evaluates every volume (one per broker and log dir) against disk limits and returns the throttle factor a quota
    plugin would apply to producers, the OPEN, THROTTLE or PAUSE state, the volumes past a limit and the volume
    with the least headroom.
  - The volumes come from O(log_dirs) (for example RV(headroom.kafka.log_dirs_info#module:log_dirs)), from
    O(snapshots) (RV(headroom.kafka.usage_snapshot_info#module:snapshots)),
    or, when neither is given, from a fresh query of the cluster (DescribeLogDirs on every active broker).
  - O(policy=strimzi) applies exactly the rules of the shipped Strimzi quota plugin
    (C(io.strimzi.kafka.quotas.StaticQuotaCallback)) with one per-volume limit, O(min_available_bytes) or
    O(min_available_ratio) - a volume violates when its usable bytes (or usable/total) are at or below the limit,
    a volume with no capacity has ratio 0, volumes of unknown size (offline log dirs) are skipped, and the factor
    is binary, 0.0 when any volume violates, else 1.0 (also with no volumes at all).
  - O(policy=graded) applies the first volume-usage proposal - a O(soft_limit) and a O(hard_limit); a volume's
    factor is 1.0 short of the soft limit, 0.0 at or past the hard limit and in between the share of the
    soft-to-hard distance that remains. The cluster's factor is the smallest volume factor. When the data is
    incomplete O(missing_data_action) decides.
  - The module only reads. With O(fail_on) it becomes a gate that fails the task when producers would be
    throttled or paused, naming the worst volume and its figures.
  - Invalid limits fail with a message naming the option and the allowed values, before Kafka is contacted.
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.connection
  - headroom.kafka.graded_limits
attributes:
  check_mode:
    support: full
    description: The module only reads; check mode returns the same result.
  diff_mode:
    support: none
    description: The module changes nothing.
options:
  log_dirs:
    description:
      - The volumes to evaluate, one item per broker and log dir, as RV(headroom.kafka.log_dirs_info#module:log_dirs)
        returns them. Each item needs C(broker_id), C(log_dir), C(total_bytes) and C(usable_bytes); a size that is
        null or negative is unknown and the volume is skipped, as is a volume whose usable bytes exceed its total
        (RV(skipped_volumes) says why). C(broker_id) is a broker id (V(0) to V(2147483647)); each log dir of a broker
        appears once. Other keys are ignored except C(error) (a log dir with an error is skipped).
      - When given, Kafka is not contacted.
      - When neither O(log_dirs) nor O(snapshots) is given, the module queries the cluster.
      - Mutually exclusive with O(snapshots).
    type: list
    elements: dict
  complete:
    description:
      - Whether O(log_dirs) covers every broker (for example RV(headroom.kafka.log_dirs_info#module:complete)).
      - The module's own findings can only make the data incomplete - brokers that did not answer a fresh query,
        active brokers without a fresh snapshot, brokers of O(expected_brokers) without volumes.
    type: bool
    default: true
  expected_brokers:
    description:
      - Ids of the brokers the cluster should have, for example every broker of the inventory; each once, from V(0)
        to V(2147483647).
      - A broker listed here without data makes the data incomplete even when it is not active. A cleanly stopped
        broker leaves the cluster's list of active brokers, so without this option its absence goes unnoticed.
    type: list
    elements: int
  snapshots:
    description:
      - Usage snapshot messages, as RV(headroom.kafka.usage_snapshot_info#module:snapshots) returns them; the volumes
        come from the latest snapshot of each broker (C(Capacity) and C(Consumed); usable = Capacity - Consumed).
      - The module asks the cluster for its active brokers; an active broker without a snapshot makes the data
        incomplete. Snapshots of brokers that are not active still count, like the quota plugin remembers the
        volumes of a broker that restarts.
      - Mutually exclusive with O(log_dirs).
    type: list
    elements: dict
  max_age:
    description:
      - With O(snapshots), ignore snapshots whose C(SnapshotAt) is older than this, relative to now (ISO 8601
        duration such as V(PT5M), V(PT30S) or V(P1D), or a number of seconds). By default the snapshots are
        taken as they are (usage_snapshot_info already checked their freshness when it read them).
    type: str
  policy:
    description:
      - V(strimzi) - the shipped quota plugin's binary rule with O(min_available_bytes) or O(min_available_ratio).
      - V(graded) - the proposal's soft and hard limits with a factor that falls linearly between them.
    type: str
    choices: [strimzi, graded]
    default: strimzi
  min_available_bytes:
    description:
      - With O(policy=strimzi) - a volume violates when its usable bytes are at or below this (>= 0), like
        C(client.quota.callback.static.storage.per.volume.limit.min.available.bytes).
      - Exactly one of O(min_available_bytes) and O(min_available_ratio) is required with O(policy=strimzi).
    type: int
  min_available_ratio:
    description:
      - With O(policy=strimzi) - a volume violates when usable/total is at or below this (0.0 to 1.0 inclusive),
        like C(client.quota.callback.static.storage.per.volume.limit.min.available.ratio).
    type: float
  produce_byte_rate:
    description:
      - The produce quota in bytes per second (the plugin's C(client.quota.callback.static.produce)). When given,
        RV(effective_produce_byte_rate) is C(max(produce_byte_rate * throttle_factor, 1)), the quota producers get.
      - Greater than V(0), up to V(9223372036854775807) (a Java long, as the plugin reads it).
    type: float
  missing_data_action:
    description:
      - With O(policy=graded), what incomplete data means.
      - V(pause) - the factor is 0.0 (the fail-safe).
      - V(open) - the factor comes from the volumes that are known.
      - The strimzi policy has no such action; the shipped plugin evaluates the volumes it sees.
    type: str
    choices: [pause, open]
    default: pause
  fail_on:
    description:
      - V(never) - always succeed and return the evaluation.
      - V(throttle) - fail when the throttle factor is below 1.0 (THROTTLE or PAUSE).
      - V(pause) - fail when the throttle factor is 0.0 (PAUSE).
      - The failure message names the volume with the least headroom and its figures; the result is returned too.
    type: str
    choices: [never, throttle, pause]
    default: never
  sizing:
    description:
      - Checks that each volume's limit covers every byte that can arrive before the throttle acts, by the sizing rule
        C(least limit = fill rate * (check_interval + observation_seconds + propagation_seconds) + in_flight_bytes +
        replication_bytes). The limit is the plugin's per-volume limit (O(policy=strimzi)) or the free space at the
        O(hard_limit) (O(policy=graded)).
      - A limit smaller than its volume's least limit is a warning, or fails the task with O(sizing.on_uncovered=fail),
        naming the volume, the rate, the least limit and the longest check interval the limit would cover. The figures
        are in RV(sizing).
      - The fill rate is O(sizing.peak_fill_rate) for every volume, or each volume's own fill between
        O(sizing.earlier_log_dirs) and the volumes evaluated now, O(sizing.seconds_between) apart.
      - The performance guide's race section has the parts measured on real Kafka with writers at full speed.
    type: dict
    suboptions:
      check_interval:
        description:
          - The throttle's period in seconds - the plugin's C(storage.check-interval), or the guard's interval.
        type: float
        required: true
      peak_fill_rate:
        description: The highest rate, in bytes per second, at which any volume can fill (writes and replication).
        type: float
      earlier_log_dirs:
        description:
          - An earlier observation of the same volumes, as RV(headroom.kafka.log_dirs_info#module:log_dirs) returns
            them; each volume's rate is the free space it lost since, per second. A volume missing from it, or of
            another size now, has no rate and is not checked.
        type: list
        elements: dict
      seconds_between:
        description: The seconds between O(sizing.earlier_log_dirs) and the volumes evaluated now.
        type: float
      observation_seconds:
        description: Seconds from the start of a check to its decision (reading every log dir).
        type: float
        default: 0
      propagation_seconds:
        description:
          - Seconds from the decision to every broker enforcing it - none for the plugin, which decides on each
            broker; for the guard, its quota write through the controller to every broker.
        type: float
        default: 0
      in_flight_bytes:
        description: Bytes of produce requests already sent when the throttle starts; Kafka appends them anyway.
        type: int
        default: 0
      replication_bytes:
        description:
          - Bytes the leaders accepted before the throttle that followers have not fetched yet; client quotas never
            throttle replication, so they arrive afterwards.
        type: int
        default: 0
      on_uncovered:
        description:
          - V(warn) - a warning per volume whose limit does not cover its rate.
          - V(fail) - fail the task instead (after evaluating the limits, whose result is returned too).
        type: str
        choices: [warn, fail]
        default: warn
notes:
  - Volumes are keyed by broker and log dir; several log dirs on one filesystem count separately, as in the plugin.
  - The proposal's message-level limits in O(snapshots) (C(SoftLimit), C(HardLimit)) are informational; the limits
    given to this module apply.
seealso:
  - module: headroom.kafka.log_dirs_info
  - module: headroom.kafka.usage_snapshot_info
  - name: Strimzi Kafka quotas plugin
    description: The quota plugin whose rules O(policy=strimzi) reproduces.
    link: https://github.com/strimzi/kafka-quotas-plugin
"""

EXAMPLES = r"""
- name: Would the Strimzi quota plugin pause producers right now? (queries the cluster)
  headroom.kafka.volume_limits:
    bootstrap_servers: [kafka-1:9092, kafka-2:9092, kafka-3:9092]
    min_available_ratio: 0.1
    produce_byte_rate: 10485760
  register: disk

- name: Show the verdict
  ansible.builtin.debug:
    msg: >-
      {{ disk.state }} (factor {{ disk.throttle_factor }}), producers get {{ disk.effective_produce_byte_rate }} B/s;
      least headroom on broker {{ disk.least_headroom.broker_id }} {{ disk.least_headroom.log_dir }}

- name: Gate a rolling change on free disk space, with the connection options set once
  module_defaults:
    group/headroom.kafka.kafka:
      bootstrap_servers: "{{ kafka_bootstrap_servers }}"
      security_protocol: SSL
      ssl_cafile: /etc/kafka/tls/ca.crt
      ssl_certfile: /etc/kafka/tls/admin.crt
      ssl_keyfile: /etc/kafka/tls/admin.key
  block:
    - name: Read the log dirs once
      headroom.kafka.log_dirs_info:
      register: cluster_disks

    - name: Refuse to continue while any volume has 10 GiB or less free
      headroom.kafka.volume_limits:
        log_dirs: "{{ cluster_disks.log_dirs }}"
        complete: "{{ cluster_disks.complete }}"
        expected_brokers: "{{ groups['kafka'] | map('extract', hostvars, 'kafka_node_id') | list }}"
        min_available_bytes: 10737418240
        fail_on: pause

- name: Graded limits - throttle below 20% free, pause at 5% free
  headroom.kafka.volume_limits:
    policy: graded
    soft_limit: {type: min_free_percentage, level: 20}
    hard_limit: {type: min_free_percentage, level: 5}
    fail_on: throttle

- name: Evaluate shared usage snapshots (see headroom.kafka.usage_snapshot_info)
  block:
    - name: Latest fresh snapshot per broker
      headroom.kafka.usage_snapshot_info:
        topic: __headroom_volume_usage
        max_age: PT5M
      register: usage

    - name: Graded evaluation; a broker without a fresh snapshot opens instead of pausing
      headroom.kafka.volume_limits:
        policy: graded
        snapshots: "{{ usage.snapshots }}"
        soft_limit: {type: min_free_bytes, level: 53687091200}
        hard_limit: {type: min_free_bytes, level: 10737418240}
        missing_data_action: open

- name: Does each limit cover the fill rate seen over the last 10 seconds, with the plugin checking every 2 s?
  block:
    - name: Read the log dirs once
      headroom.kafka.log_dirs_info:
      register: before

    - name: Wait between the two observations
      ansible.builtin.wait_for:
        timeout: 10

    - name: Fail when a limit does not cover the bytes that arrive before the throttle acts
      headroom.kafka.volume_limits:
        min_available_bytes: 1073741824
        sizing:
          check_interval: 2
          earlier_log_dirs: "{{ before.log_dirs }}"
          seconds_between: 10
          observation_seconds: 1
          replication_bytes: 67108864
          on_uncovered: fail
"""

RETURN = r"""
policy:
  description: The policy applied.
  returned: always
  type: str
  sample: strimzi
throttle_factor:
  description: The factor producers' quota would be multiplied by, 0.0 to 1.0 (only 0.0 or 1.0 with O(policy=strimzi)).
  returned: always
  type: float
  sample: 0.0
state:
  description: V(OPEN) at 1.0, V(PAUSE) at 0.0, V(THROTTLE) in between.
  returned: always
  type: str
  sample: PAUSE
violations:
  description: Every volume past a limit, least headroom first.
  returned: always
  type: list
  elements: dict
  contains:
    broker_id: {description: Broker id., type: int}
    log_dir: {description: Path of the log dir., type: str}
    total_bytes: {description: Capacity in bytes., type: int}
    usable_bytes: {description: Free bytes the broker may still use., type: int}
    used_bytes: {description: total_bytes - usable_bytes., type: int}
    available_ratio: {description: usable_bytes / total_bytes (0.0 for zero capacity)., type: float}
    limit_type:
      description: >-
        The limit passed - V(min_available_bytes) or V(min_available_ratio) (strimzi), or V(min_free_bytes),
        V(min_free_percentage) or V(consumed_space) (graded).
      type: str
    level: {description: The limit's level., type: float}
    limit:
      description: With O(policy=graded), V(soft) or V(hard).
      type: str
    volume_factor:
      description: With O(policy=graded), this volume's own factor.
      type: float
  sample: [{"broker_id": 1, "log_dir": "/var/lib/kafka/data-0", "total_bytes": 16777216, "usable_bytes": 6283264,
            "used_bytes": 10493952, "available_ratio": 0.3745, "limit_type": "min_available_bytes", "level": 8388608}]
least_headroom:
  description:
    - The volume with the least headroom (the smallest factor, then the fewest free bytes; with O(policy=strimzi)
      the smallest usable bytes or ratio, whichever the limit compares), with the figures of RV(violations).
    - Null when no volume has a known size.
  returned: always
  type: dict
  sample: {"broker_id": 1, "log_dir": "/var/lib/kafka/data-0", "total_bytes": 16777216, "usable_bytes": 6283264,
           "used_bytes": 10493952, "available_ratio": 0.3745}
skipped_volumes:
  description:
    - Volumes that were not evaluated, each with its C(reason) - V(size unknown) (offline log dirs, or brokers
      answering without sizes), V(log dir error ...), or V(usable bytes exceed total bytes) (sizes that contradict
      each other). Every module of the collection and the pipeline skip the same volumes.
    - Named so that Ansible's own C(skipped) keeps meaning that the task did not run.
  returned: always
  type: list
  elements: dict
  sample: [{"broker_id": 1, "log_dir": "/var/lib/kafka/data-0", "total_bytes": null, "usable_bytes": null, "reason":
          "size unknown"}]
complete:
  description: Whether there was data from every broker (see O(complete), O(expected_brokers) and O(snapshots)).
  returned: always
  type: bool
missing_brokers:
  description: Active or expected brokers without data (did not answer, or have no fresh snapshot).
  returned: always
  type: list
  elements: int
  sample: [2]
stale_brokers:
  description: With O(snapshots) and O(max_age), brokers whose latest snapshot was too old to be used.
  returned: always
  type: list
  elements: int
missing_data_applied:
  description: Whether the factor is 0.0 because of incomplete data (O(policy=graded), O(missing_data_action=pause)).
  returned: always
  type: bool
source:
  description: Where the volumes came from - V(log_dirs), V(snapshots) or V(cluster) (a fresh query).
  returned: always
  type: str
  sample: cluster
effective_produce_byte_rate:
  description: C(max(produce_byte_rate * throttle_factor, 1)), the produce quota in bytes per second.
  returned: when O(produce_byte_rate) is given
  type: float
  sample: 1.0
sizing:
  description: The sizing rule applied to every volume with a fill rate (see O(sizing)).
  returned: when O(sizing) is given
  type: dict
  contains:
    check_interval: {description: The throttle's period in seconds., type: float}
    reaction_seconds:
      description: C(check_interval + observation_seconds + propagation_seconds).
      type: float
    volumes:
      description: Each volume with a fill rate, by broker and log dir.
      type: list
      elements: dict
      contains:
        broker_id: {description: Broker id., type: int}
        log_dir: {description: Path of the log dir., type: str}
        fill_rate: {description: Bytes per second., type: float}
        limit_bytes: {description: The free space at which producers are paused on this volume., type: int}
        least_limit_bytes: {description: The least limit the rule asks for at this rate., type: int}
        covered: {description: Whether the limit is at least the least limit., type: bool}
    uncovered:
      description:
        - The volumes whose limit is smaller than their least limit, the largest shortfall first, each with
          C(covering_check_interval), the longest whole-second check interval the limit would cover (null when not
          even one second would).
      type: list
      elements: dict
    warnings:
      description: One sentence per uncovered volume.
      type: list
      elements: str
  sample: {"check_interval": 2.0, "reaction_seconds": 2.0, "volumes": [{"broker_id": 1, "log_dir": "/data-0",
           "fill_rate": 96468992.0, "limit_bytes": 100663296, "least_limit_bytes": 192937984, "covered": false}],
           "uncovered": [{"broker_id": 1, "log_dir": "/data-0", "fill_rate": 96468992.0, "limit_bytes": 100663296,
           "least_limit_bytes": 192937984, "covering_check_interval": null}],
           "warnings": ["broker 1 log dir /data-0: the limit keeps 100663296 bytes free, but ..."]}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils import (
    connection,
    limit_options,
    limit_sizing,
    option_checks,
    snapshots,
    volume_limits,
    volume_sources,
)
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError


def check_options(module):
    """Everything that can be wrong without Kafka; fails the module with the option named."""
    params = module.params
    problem = limit_options.policy_problem(params)
    if problem:
        module.fail_json(msg=problem)
    sizing = params["sizing"]
    if sizing is not None and sizing["earlier_log_dirs"] is not None:
        try:
            sizing["earlier_log_dirs"] = snapshots.normalize_log_dirs(
                sizing["earlier_log_dirs"], "sizing.earlier_log_dirs"
            )
        except snapshots.SnapshotError as exc:
            module.fail_json(msg=str(exc))
    try:
        return volume_sources.given(params["log_dirs"], params["snapshots"], params["max_age"])
    except volume_sources.VolumeSourceError as exc:
        module.fail_json(msg=str(exc))


def gather(module, source):
    """volume_sources.gather's answer; contacts Kafka unless log_dirs were given."""
    purpose = (
        "to read every log dir (give log_dirs to judge volumes without a cluster)"
        if source.messages is None
        else "to read its active brokers, whose snapshots must be there (give log_dirs to judge volumes without a "
        "cluster)"
    )
    adapter = connection.connect(module, purpose) if source.needs_kafka else None
    try:
        return volume_sources.gather(adapter, source, module.params["expected_brokers"])
    except KafkaAdapterError as exc:
        module.fail_json(msg=str(exc))
    finally:
        if adapter is not None:
            adapter.close()


def _describe_volume(volume):
    free_percent = (
        "{0:.1f}%".format(volume["available_ratio"] * 100.0) if volume.get("available_ratio") is not None else "unknown"
    )
    return "broker {0} log dir {1} has {2} of {3} bytes free ({4}, {5} bytes used)".format(
        volume["broker_id"],
        volume["log_dir"],
        volume["usable_bytes"],
        volume["total_bytes"],
        free_percent,
        volume.get("used_bytes"),
    )


def failure_message(result):
    parts = [
        "throttle factor {0} ({1}) with policy {2}".format(result["throttle_factor"], result["state"], result["policy"])
    ]
    violations = result["violations"]
    if violations:
        worst = violations[0]
        limit = worst.get("limit")
        compared = "at or above" if worst["limit_type"] == "consumed_space" else "at or below"
        parts.append(
            "{0}, {1} {2}{3} {4}".format(
                _describe_volume(worst),
                compared,
                (limit + " limit ") if limit else "",
                worst["limit_type"],
                worst["level"],
            )
        )
        if worst.get("volume_factor") is not None:
            parts.append("volume factor {0:.4f}".format(worst["volume_factor"]))
        if len(violations) > 1:
            parts.append("{0} volumes past a limit in all".format(len(violations)))
    elif result["least_headroom"]:
        parts.append("least headroom: {0}".format(_describe_volume(result["least_headroom"])))
    if result.get("missing_data_applied"):
        parts.append(
            "data incomplete (no data from brokers {0}), missing_data_action pause".format(
                ", ".join(str(b) for b in result["missing_brokers"]) or "unknown"
            )
        )
    return "; ".join(parts)


def size_limits(module, volumes):
    """limit_sizing's rule for every volume with a fill rate (sizing option)."""
    params, sizing = module.params, module.params["sizing"]
    try:
        rates = limit_sizing.fill_rates_of(
            volumes, sizing["peak_fill_rate"], sizing["earlier_log_dirs"], sizing["seconds_between"]
        )
        return limit_sizing.sizing_check(
            volumes,
            rates,
            sizing["check_interval"],
            parts=dict((name, sizing[name]) for name in limit_sizing.REACTION_PARTS),
            min_available_bytes=params["min_available_bytes"] if params["policy"] == "strimzi" else None,
            min_available_ratio=params["min_available_ratio"] if params["policy"] == "strimzi" else None,
            hard_limit=limit_options.graded_limit(params["hard_limit"]) if params["policy"] == "graded" else None,
        )
    except limit_sizing.SizingError as exc:
        module.fail_json(msg="sizing: {0}".format(exc))


ARGUMENT_SPEC = connection.argument_spec(
    log_dirs=dict(type="list", elements="dict"),
    complete=dict(type="bool", default=True),
    expected_brokers=dict(type="list", elements="int"),
    snapshots=dict(type="list", elements="dict"),
    max_age=dict(type="str"),
    produce_byte_rate=dict(type="float"),
    fail_on=dict(type="str", default="never", choices=["never", "throttle", "pause"]),
    sizing=dict(
        type="dict",
        options=dict(
            check_interval=dict(type="float", required=True),
            peak_fill_rate=dict(type="float"),
            earlier_log_dirs=dict(type="list", elements="dict"),
            seconds_between=dict(type="float"),
            observation_seconds=dict(type="float", default=0.0),
            propagation_seconds=dict(type="float", default=0.0),
            in_flight_bytes=dict(type="int", default=0),
            replication_bytes=dict(type="int", default=0),
            on_uncovered=dict(type="str", default="warn", choices=["warn", "fail"]),
        ),
        mutually_exclusive=[["peak_fill_rate", "earlier_log_dirs"]],
        required_one_of=[["peak_fill_rate", "earlier_log_dirs"]],
        required_together=[["earlier_log_dirs", "seconds_between"]],
    ),
    **limit_options.POLICY_ARGUMENT_SPEC,
)
OPTION_RANGES = dict(
    limit_options.POLICY_RANGES,
    **{
        "expected_brokers": option_checks.BROKER_IDS,
        "produce_byte_rate": option_checks.Number(0, option_checks.LONG_MAX, unit="bytes per second", above=True),
        "sizing.check_interval": option_checks.seconds(0, option_checks.LONG_MAX, above=True),
        "sizing.peak_fill_rate": option_checks.Number(0, option_checks.LONG_MAX, unit="bytes per second"),
        "sizing.seconds_between": option_checks.seconds(0, option_checks.LONG_MAX, above=True),
        "sizing.observation_seconds": option_checks.seconds(0, option_checks.LONG_MAX),
        "sizing.propagation_seconds": option_checks.seconds(0, option_checks.LONG_MAX),
        "sizing.in_flight_bytes": option_checks.BYTES,
        "sizing.replication_bytes": option_checks.BYTES,
    },
)


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=limit_options.POLICY_MUTUALLY_EXCLUSIVE + [["log_dirs", "snapshots"]],
        required_if=limit_options.POLICY_REQUIRED_IF + connection.CONNECTION_REQUIRED_IF,
        required_together=connection.CONNECTION_REQUIRED_TOGETHER,
        supports_check_mode=True,
    )
    connection.check(module, OPTION_RANGES)
    params = module.params
    found = gather(module, check_options(module))
    volumes, missing = found["volumes"], found["missing_brokers"]
    complete = bool(params["complete"]) and not missing
    if params["policy"] == "strimzi":
        result = volume_limits.strimzi_decision(
            volumes,
            min_available_bytes=params["min_available_bytes"],
            min_available_ratio=params["min_available_ratio"],
        )
        result.update(complete=complete, missing_data_applied=False)
    else:
        result = volume_limits.graded_decision(
            volumes,
            limit_options.graded_limit(params["soft_limit"]),
            limit_options.graded_limit(params["hard_limit"]),
            complete=complete,
            missing_data_action=params["missing_data_action"],
        )
        del result["position"]  # what the disk guard's steps hold on; this module reports the exact factor
    result.update(missing_brokers=missing, stale_brokers=found["stale_brokers"], source=found["source"])
    if params["produce_byte_rate"] is not None:
        result["effective_produce_byte_rate"] = volume_limits.effective_produce_quota(
            params["produce_byte_rate"], result["throttle_factor"]
        )
    uncovered_failure = None
    if params["sizing"] is not None:
        result["sizing"] = size_limits(module, volumes)
        for warning in result["sizing"]["warnings"]:
            if params["sizing"]["on_uncovered"] == "fail":
                uncovered_failure = uncovered_failure or warning
            else:
                module.warn(warning)
    fail_on = params["fail_on"]
    if uncovered_failure:
        count = len(result["sizing"]["uncovered"])
        module.fail_json(
            msg="{0} limit{1} cannot hold at the fill rate: {2}".format(
                count, "s" if count > 1 else "", uncovered_failure
            ),
            changed=False,
            **result,
        )
    if (fail_on == "throttle" and result["throttle_factor"] < 1.0) or (
        fail_on == "pause" and result["throttle_factor"] <= 0.0
    ):
        module.fail_json(msg=failure_message(result), changed=False, **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
