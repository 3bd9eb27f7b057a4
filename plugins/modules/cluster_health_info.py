#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: cluster_health_info
short_description: Broker membership and partition replication of a Kafka cluster
version_added: 1.0.0
description:
  - Reads the cluster's brokers (DescribeCluster, fenced ones included) and every partition (Metadata) and judges
    whether the cluster is healthy enough for the next step of a rolling restart.
  - Healthy means every expected broker is active, no partition is under-replicated (ISR smaller than its replicas)
    and every partition has a leader.
  - With O(stopping_broker) it also judges whether that broker can stop without leaving any partition with fewer
    in-sync replicas than its topic's C(min.insync.replicas) (producers with C(acks=all) would be refused there); with
    O(rejoining_broker) whether that broker is back in the ISR of every partition of O(rejoin_partitions). A rolling
    restart asks the first before it stops a broker and waits for the second after it started it again.
  - The module only reports; poll it with C(until) to wait for a restarted broker to catch up.
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.connection
  - headroom.kafka.attributes.read_only
options:
  expected_brokers:
    description:
      - Broker ids that must be active, each once, from V(0) to V(2147483647). Brokers registered but fenced are always
        expected.
    type: list
    elements: int
  wait_timeout:
    description:
      - Seconds to wait for the cluster to become healthy, polling every O(wait_interval) seconds; V(0) reports at once.
      - From V(0) to V(86400) (a day). The module returns within O(wait_timeout) plus the time of one poll (at most
        O(request_timeout) per broker it asks).
      - The module fails with the remaining problems when the cluster is not healthy in time.
    type: float
    default: 0
  wait_interval:
    description:
      - Seconds between two polls while waiting, from V(0.05) to V(3600);
        the last sleep is cut short at O(wait_timeout).
    type: float
    default: 0.5
  wait_consecutive:
    description:
      - How many polls in a row must find the cluster healthy while waiting, so a broker that flaps is not taken for
        a recovered one. From V(1) to V(1000).
      - A O(wait_timeout) shorter than (O(wait_consecutive) - 1) times O(wait_interval) is refused, as it could never
        see enough polls.
    type: int
    default: 3
  stopping_broker:
    description:
      - The broker about to stop. The cluster is healthy only when every partition this broker is in sync for keeps at
        least its topic's C(min.insync.replicas) in-sync replicas without it (a partition whose only in-sync replica
        it is would go offline).
      - Returns RV(in_sync_partitions), what the broker must rejoin after its restart, and
        RV(below_min_insync_partitions).
      - From V(0) to V(2147483647).
    type: int
  rejoining_broker:
    description:
      - The broker just restarted. The cluster is healthy only when it is back in the ISR of every partition of
        O(rejoin_partitions) that still exists; the ones it is not back in are RV(lagging_partitions).
      - From V(0) to V(2147483647).
    type: int
  rejoin_partitions:
    description:
      - The partitions O(rejoining_broker) was in sync for before it stopped, as RV(in_sync_partitions) returned them.
    type: list
    elements: dict
    suboptions:
      topic:
        description: The topic.
        type: str
        required: true
      partition:
        description: The partition number, from V(0) to V(2147483647).
        type: int
        required: true
seealso:
  - module: headroom.kafka.log_dirs_info
"""

EXAMPLES = r"""
- name: Wait until broker 2 is back and every partition is fully replicated
  headroom.kafka.cluster_health_info:
    bootstrap_servers: [kafka-1:9092]
    expected_brokers: [1, 2, 3]
  register: health
  until: health.healthy
  retries: 60
  delay: 2

- name: The same, polled inside the module, healthy three polls in a row
  headroom.kafka.cluster_health_info:
    bootstrap_servers: [kafka-1:9092]
    expected_brokers: [1, 2, 3]
    wait_timeout: 120

- name: Before stopping broker 2, check that no partition would fall below its min.insync.replicas
  headroom.kafka.cluster_health_info:
    bootstrap_servers: [kafka-1:9092]
    expected_brokers: [1, 2, 3]
    stopping_broker: 2
  register: before_stop
  failed_when: not before_stop.healthy

- name: After its restart, wait until broker 2 is back in every ISR it was in
  headroom.kafka.cluster_health_info:
    bootstrap_servers: [kafka-1:9092]
    expected_brokers: [1, 2, 3]
    rejoining_broker: 2
    rejoin_partitions: "{{ before_stop.in_sync_partitions }}"
    wait_timeout: 300
"""

RETURN = r"""
cluster_id:
  description: The cluster's id.
  returned: always
  type: str
healthy:
  description: Every expected broker active, no under-replicated partition, every partition led.
  returned: always
  type: bool
problems:
  description: Why the cluster is not healthy, one sentence per problem.
  returned: always
  type: list
  elements: str
active_brokers:
  description: Ids of active (unfenced) brokers.
  returned: always
  type: list
  elements: int
fenced_brokers:
  description: Ids of brokers registered but fenced.
  returned: always
  type: list
  elements: int
missing_brokers:
  description: Expected brokers that are not active.
  returned: always
  type: list
  elements: int
under_replicated_partitions:
  description: Partitions whose ISR is smaller than their replica set.
  returned: always
  type: list
  elements: dict
offline_partitions:
  description: Partitions without a leader.
  returned: always
  type: list
  elements: dict
partition_count:
  description: Number of partitions in the cluster.
  returned: always
  type: int
active_controller:
  description:
    - Node id of the active KRaft controller (DescribeQuorum), null when the cluster cannot tell.
  returned: when the cluster is healthy
  type: int
in_sync_partitions:
  description: The partitions whose ISR holds O(stopping_broker), as C(topic) and C(partition).
  returned: when O(stopping_broker) is given and the cluster could be read
  type: list
  elements: dict
below_min_insync_partitions:
  description:
    - The partitions that would be left with fewer in-sync replicas than their topic's C(min.insync.replicas) once
      O(stopping_broker) stops, with C(topic), C(partition), C(isr), C(isr_without_broker) and
      C(min_insync_replicas).
  returned: when O(stopping_broker) is given and the cluster could be read
  type: list
  elements: dict
lagging_partitions:
  description: The partitions of O(rejoin_partitions) whose ISR does not hold O(rejoining_broker) yet, with C(isr).
  returned: when O(rejoining_broker) is given and the cluster could be read
  type: list
  elements: dict
waited:
  description: Seconds spent waiting for the cluster to become healthy.
  returned: always
  type: float
polls:
  description: How many times the cluster was read.
  returned: always
  type: int
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils import connection, health, option_checks
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError

ARGUMENT_SPEC = connection.argument_spec(
    expected_brokers=dict(type="list", elements="int"),
    wait_timeout=dict(type="float", default=0),
    wait_interval=dict(type="float", default=0.5),
    wait_consecutive=dict(type="int", default=3),
    stopping_broker=dict(type="int"),
    rejoining_broker=dict(type="int"),
    rejoin_partitions=dict(
        type="list",
        elements="dict",
        options=dict(topic=dict(type="str", required=True), partition=dict(type="int", required=True)),
    ),
)
OPTION_RANGES = {
    "expected_brokers": option_checks.BROKER_IDS,
    "wait_timeout": option_checks.seconds(0, 86400),
    "wait_interval": option_checks.seconds(0.05, 3600),
    "wait_consecutive": option_checks.Number(1, 1000, integer=True),
    "stopping_broker": option_checks.BROKER_ID,
    "rejoining_broker": option_checks.BROKER_ID,
    "rejoin_partitions[].partition": option_checks.Number(0, option_checks.KAFKA_ID_MAX, integer=True),
}


def _broker_checks(adapter, partitions, params):
    """The results of stopping_broker's and rejoining_broker's checks, and the problems they found."""
    checked = {}
    extra = []
    stopping = params["stopping_broker"]
    if stopping is not None:
        in_sync = health.in_sync_partitions(partitions, stopping)
        settings = adapter.min_insync_replicas(p["topic"] for p in in_sync)
        at_risk = health.below_min_isr_without(partitions, settings, stopping)
        checked.update(in_sync_partitions=in_sync, below_min_insync_partitions=at_risk)
        extra.append(health.stopping_problem(stopping, at_risk))
    rejoining = params["rejoining_broker"]
    if rejoining is not None:
        lagging = health.not_rejoined(partitions, rejoining, params["rejoin_partitions"] or [])
        checked["lagging_partitions"] = lagging
        extra.append(health.rejoin_problem(rejoining, lagging))
    return checked, [problem for problem in extra if problem]


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_together=connection.CONNECTION_REQUIRED_TOGETHER + [["rejoining_broker", "rejoin_partitions"]],
        mutually_exclusive=[["stopping_broker", "rejoining_broker"]],
        required_if=connection.CONNECTION_REQUIRED_IF,
        supports_check_mode=True,
    )
    connection.check(module, OPTION_RANGES)
    params = module.params
    needed = (params["wait_consecutive"] - 1) * params["wait_interval"]
    if 0 < params["wait_timeout"] < needed:
        module.fail_json(
            msg="wait_timeout {0} is shorter than the {1} s that wait_consecutive {2} polls wait_interval {3} s apart "
            "take; the wait could never succeed".format(
                params["wait_timeout"], needed, params["wait_consecutive"], params["wait_interval"]
            )
        )
    adapter = connection.connect(module, "to read the brokers, partitions and controller")
    started = time.monotonic()
    deadline = started + max(params["wait_timeout"], 0)
    polls, streak = 0, 0
    try:
        while True:
            polls += 1
            try:
                cluster = adapter.describe_cluster()
                partitions = adapter.partitions()
                result = health.judge(cluster, partitions, params["expected_brokers"])
                checked, problems = _broker_checks(adapter, partitions, params)
                result.update(checked)
                result["problems"] += problems
                result["healthy"] = not result["problems"]
                result["cluster_id"] = cluster["cluster_id"]
            except KafkaAdapterError as exc:
                if params["wait_timeout"] <= 0:
                    raise
                adapter.close()  # reconnect on the next poll: the broker we were talking to may be the one restarting
                result = {"healthy": False, "problems": [str(exc)]}
            streak = streak + 1 if result["healthy"] else 0
            if params["wait_timeout"] <= 0 or streak >= params["wait_consecutive"] or time.monotonic() >= deadline:
                if result["healthy"]:
                    result["active_controller"] = adapter.active_controller()  # on the open connection, once
                break
            time.sleep(max(min(params["wait_interval"], deadline - time.monotonic()), 0))
    except KafkaAdapterError as exc:
        module.fail_json(msg=str(exc), healthy=False, problems=[str(exc)])
    finally:
        adapter.close()
    result.update(waited=round(time.monotonic() - started, 3), polls=polls)
    if params["wait_timeout"] > 0 and streak < params["wait_consecutive"]:
        module.fail_json(
            msg="the cluster was not healthy {0} polls in a row within {1}s: {2}".format(
                params["wait_consecutive"],
                params["wait_timeout"],
                "; ".join(result["problems"]) or "it was healthy too briefly",
            ),
            **result,
        )
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
