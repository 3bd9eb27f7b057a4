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
version_added: 0.1.0
description:
  - Reads the cluster's brokers (DescribeCluster, fenced ones included) and every partition (Metadata) and judges
    whether the cluster is healthy enough for the next step of a rolling restart.
  - Healthy means every expected broker is active, no partition is under-replicated (ISR smaller than its replicas)
    and every partition has a leader.
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
)
OPTION_RANGES = {
    "expected_brokers": option_checks.BROKER_IDS,
    "wait_timeout": option_checks.seconds(0, 86400),
    "wait_interval": option_checks.seconds(0.05, 3600),
    "wait_consecutive": option_checks.Number(1, 1000, integer=True),
}


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_together=connection.CONNECTION_REQUIRED_TOGETHER,
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
                result = health.judge(cluster, adapter.partitions(), params["expected_brokers"])
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
