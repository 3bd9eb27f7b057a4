#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: log_dirs_info
short_description: Free space of every log dir in a Kafka cluster
version_added: 1.0.0
description:
  - Lists the active brokers of the cluster and asks every one of them, in parallel, to describe its log dirs
    (DescribeLogDirs with the total and usable bytes of KIP-827, Kafka 3.3 and later).
  - Returns one row per broker and log dir with total, usable and used bytes and the available ratio, the figures
    the Strimzi quota plugin compares with its per-volume limits.
  - Brokers that are active but do not answer are listed in RV(missing_brokers) and RV(complete) is false; the
    module still succeeds so that a play can decide what incomplete data means.
  - DescribeLogDirs says nothing of C(metadata.log.dir) or of a controller-only node's disks, and a full metadata
    disk stops the KRaft quorum. Give the rows M(headroom.kafka.node_volumes_info) read on the hosts as
    O(node_volumes) and they are returned beside Kafka's own in RV(log_dirs), so that one list goes to
    M(headroom.kafka.volume_limits).
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.connection
  - headroom.kafka.attributes.read_only
options:
  fail_on_missing:
    description: Fail when a broker is fenced or does not answer, instead of returning RV(complete=false).
    type: bool
    default: false
  replicas:
    description:
      - Also return, in each log dir of RV(log_dirs), the replicas it holds (C(replicas)) with their size, their lag
        behind the partition's log end and whether each is a future replica (one being moved into that log dir), and
        the partition reassignments in progress between brokers (RV(reassignments), from ListPartitionReassignments),
        so that a play sees what fills each log dir and what is moving.
    type: bool
    default: false
  node_volumes:
    description:
      - Rows read on the nodes' hosts by M(headroom.kafka.node_volumes_info)
        (RV(headroom.kafka.node_volumes_info#module:volumes) of every host), returned in RV(log_dirs) beside the log
        dirs Kafka describes, with their C(kind).
      - Every row needs C(broker_id), C(log_dir), C(total_bytes) and C(usable_bytes) (null when unknown); C(kind) is
        one of V(metadata), V(log_dir) or V(path). A row Kafka describes too (a broker's metadata dir that is also a
        data log dir) is returned once, as Kafka describes it.
      - Checked before Kafka is asked; a wrong row fails the task naming its index and field.
    type: list
    elements: dict
    default: []
notes:
  - Fails with a clear message when a broker only speaks DescribeLogDirs below v4 (Kafka older than 3.3).
  - Controller-only KRaft nodes are not brokers and are not described (as with the quota plugin itself).
seealso:
  - module: headroom.kafka.volume_limits
  - module: headroom.kafka.usage_snapshot
"""

EXAMPLES = r"""
- name: Read every log dir of the cluster
  headroom.kafka.log_dirs_info:
    bootstrap_servers: [kafka-1:9093, kafka-2:9093]
    security_protocol: SSL
    ssl_cafile: /etc/kafka/tls/ca.crt
    ssl_certfile: /etc/kafka/tls/admin.crt
    ssl_keyfile: /etc/kafka/tls/admin.key
  register: cluster_disks

- name: Read the disks Kafka does not report, on every node
  headroom.kafka.node_volumes_info:
    node_id: "{{ kafka_node_id }}"
    metadata_log_dir: /var/lib/kafka/metadata
    log_dirs: "{{ kafka_log_dirs }}"
    process_roles: "{{ kafka_process_roles }}"
  register: node_disks

- name: Every disk of the cluster, Kafka's log dirs and the metadata disks, in one list
  headroom.kafka.log_dirs_info:
    bootstrap_servers: [kafka-1:9093, kafka-2:9093]
    node_volumes: >-
      {{ ansible_play_hosts | map('extract', hostvars, 'node_disks') | map(attribute='volumes') | flatten }}
  run_once: true
  delegate_to: localhost
  register: every_disk

- name: What fills each log dir, and what is moving
  headroom.kafka.log_dirs_info:
    bootstrap_servers: [kafka-1:9093, kafka-2:9093]
    replicas: true
  register: placement

- name: The five largest replicas of the cluster
  ansible.builtin.debug:
    msg: >-
      {{ placement.log_dirs | selectattr('replicas', 'defined') | map(attribute='replicas') | flatten
         | sort(attribute='size_bytes', reverse=true) | list | batch(5) | first }}

- name: Show the fullest log dir
  ansible.builtin.debug:
    msg: >-
      {{ cluster_disks.log_dirs | rejectattr('available_ratio', 'none') | sort(attribute='available_ratio')
         | first }}

- name: Connection options set once for the whole play
  module_defaults:
    group/headroom.kafka.kafka:
      bootstrap_servers: "{{ groups['kafka'] | map('regex_replace', '$', ':9092') | list }}"
  block:
    - name: Log dirs
      headroom.kafka.log_dirs_info:
        fail_on_missing: true
"""

RETURN = r"""
cluster_id:
  description: The cluster's id.
  returned: always
  type: str
  sample: q1Sh-9_ISia_zwGINzRvyQ
brokers:
  description: The active (unfenced) brokers.
  returned: always
  type: list
  elements: dict
  sample: [{"id": 1, "host": "kafka-1", "port": 9093, "rack": null}]
log_dirs:
  description: One entry per broker and log dir, ordered by broker id and path. Unknown sizes are null.
  returned: always
  type: list
  elements: dict
  contains:
    broker_id:
      description: Broker id.
      type: int
    log_dir:
      description: Absolute path of the log dir on the broker.
      type: str
    total_bytes:
      description: Capacity of the log dir's filesystem; null when unknown.
      type: int
    usable_bytes:
      description: Bytes the broker may still write (statvfs f_bavail); null when unknown.
      type: int
    used_bytes:
      description: Total bytes minus usable bytes; null when unknown.
      type: int
    available_ratio:
      description: Usable bytes divided by total bytes (0.0 for zero capacity); null when unknown.
      type: float
    error:
      description: Kafka's error name for the log dir (for example C(KAFKA_STORAGE_ERROR));
                   null when the log dir is online.
      type: str
    kind:
      description:
        - Only on rows from O(node_volumes) - V(metadata) (a C(metadata.log.dir)), V(log_dir) (a controller-only
          node's log dir) or V(path).
      type: str
      returned: for rows from O(node_volumes)
    replicas:
      description:
        - The replicas in the log dir, ordered by topic and partition (none when the log dir is offline).
      type: list
      elements: dict
      returned: with O(replicas=true), on the rows Kafka describes
      contains:
        topic:
          description: The replica's topic.
          type: str
        partition:
          description: The replica's partition.
          type: int
        size_bytes:
          description: The bytes of the replica's log segments in this log dir; null when unknown.
          type: int
        offset_lag:
          description:
            - In messages, how far the replica's log end is behind the partition's high watermark (0 for a leader);
              for a future replica, how far it is behind the broker's current replica. Null when unknown.
          type: int
        is_future:
          description: Whether this is a future replica, being copied into this log dir from another of the broker's.
          type: bool
reassignments:
  description: The partition reassignments between brokers in progress, ordered by topic and partition.
  returned: with O(replicas=true)
  type: list
  elements: dict
  contains:
    topic:
      description: The partition's topic.
      type: str
    partition:
      description: The partition.
      type: int
    replicas:
      description: The brokers of the partition's replicas during the reassignment.
      type: list
      elements: int
    adding_replicas:
      description: The brokers receiving a replica.
      type: list
      elements: int
    removing_replicas:
      description: The brokers giving up a replica once the new ones are in sync.
      type: list
      elements: int
missing_brokers:
  description: Ids of active brokers that did not answer.
  returned: always
  type: list
  elements: int
fenced_brokers:
  description:
    - Ids of brokers registered in the cluster but fenced (stopped, or not heartbeating), whose log dirs cannot be read.
    - Their volumes still hold data and fill up again when they return, so they make the view incomplete.
  returned: always
  type: list
  elements: int
complete:
  description: Whether every registered broker is active and answered.
  returned: always
  type: bool
snapshot_at:
  description: When the cluster was read, ISO 8601 in UTC.
  returned: always
  type: str
  sample: "2026-11-22T04:07:09.123Z"
failures:
  description: Why each missing broker is missing.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils import connection, log_dirs, node_volumes
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError

ARGUMENT_SPEC = connection.argument_spec(
    fail_on_missing=dict(type="bool", default=False),
    replicas=dict(type="bool", default=False),
    node_volumes=dict(type="list", elements="dict", default=[]),
)
OPTION_RANGES = {}


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_together=connection.CONNECTION_REQUIRED_TOGETHER,
        required_if=connection.CONNECTION_REQUIRED_IF,
        supports_check_mode=True,
    )
    connection.check(module, OPTION_RANGES)
    # The given rows are checked before Kafka is asked: a wrong row fails without contacting the cluster.
    empty = {"log_dirs": []}
    try:
        node_volumes.with_node_volumes(empty, module.params["node_volumes"])
    except node_volumes.NodeVolumesError as exc:
        module.fail_json(msg=str(exc))
    adapter = connection.connect(module, "to read every log dir")
    try:
        view = node_volumes.with_node_volumes(
            log_dirs.collect(adapter, replicas=module.params["replicas"]), module.params["node_volumes"]
        )
    except KafkaAdapterError as exc:
        module.fail_json(msg=str(exc))
    finally:
        adapter.close()
    if module.params["fail_on_missing"] and not view["complete"]:
        reasons = list(view["failures"]) + [
            "broker {0} is fenced (stopped or not heartbeating)".format(b) for b in view["fenced_brokers"]
        ]
        module.fail_json(
            msg="log dirs of brokers {0} are unknown: {1}".format(
                ", ".join(str(b) for b in sorted(view["missing_brokers"] + view["fenced_brokers"])), "; ".join(reasons)
            ),
            **view,
        )
    module.exit_json(changed=False, **view)


if __name__ == "__main__":
    main()
