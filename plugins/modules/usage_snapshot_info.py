#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: usage_snapshot_info
short_description: Read the latest fresh volume usage snapshot of every broker
version_added: 1.0.0
description:
  - The consumer of the first cluster-wide volume-usage proposal for the Strimzi quota plugin; the messages are the
    ones M(headroom.kafka.usage_snapshot) publishes.
  - Reads O(topic) and/or O(path) and keeps the latest message per broker (by C(SnapshotAt)), ignoring messages older
    than O(max_age). It asks the cluster for its active brokers and returns the fresh RV(snapshots), the
    RV(stale_brokers), the active brokers without a fresh snapshot and whether the data is RV(complete) - ready for
    M(headroom.kafka.volume_limits) with O(headroom.kafka.volume_limits#module:policy=graded).
  - Replaces O(headroom.kafka.usage_snapshot#module:state=read), which is deprecated.
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.connection
  - headroom.kafka.attributes.read_only
options:
  path:
    description:
      - A JSON-lines file of snapshot messages, one per line, as M(headroom.kafka.usage_snapshot) appends them. A file
        that does not exist yet holds no snapshots (with a warning).
      - An empty path, a directory, or a path inside a directory that does not exist fails the task.
      - At least one of O(path) and O(topic) is required. When both are given, both are read and the latest message
        per broker across them is kept.
    type: path
  topic:
    description:
      - The topic the messages are on, keyed by broker id (as text). A topic that does not exist holds no snapshots.
      - A name Kafka accepts (1 to 249 of letters, digits, V(.), V(_) and V(-); not V(.) or V(..)).
    type: str
  max_age:
    description:
      - Messages whose C(SnapshotAt) is older than this, relative to now, are stale and ignored.
      - An ISO 8601 duration as C(java.time.Duration) parses it (V(PT5M), V(PT30S), V(PT0.5S), V(P1D),
        V(PT1H30M)), or a number of seconds. V(PT5M) when not given.
    type: str
  expected_brokers:
    description:
      - Ids of brokers that must have a fresh snapshot besides the active ones (for example a broker that is stopped
        for maintenance); each once, from V(0) to V(2147483647).
    type: list
    elements: int
notes:
  - Freshness is judged on C(SnapshotAt), not on the record's timestamp, as the proposal asks.
  - Snapshots of brokers that are not active are still returned while fresh, so a restarting broker's full disk keeps
    counting.
  - A tombstone (a record with a null value) on O(topic) removes its broker's earlier snapshots.
seealso:
  - module: headroom.kafka.usage_snapshot
  - module: headroom.kafka.volume_limits
"""

EXAMPLES = r"""
- name: Read the latest snapshot of every broker, at most five minutes old
  headroom.kafka.usage_snapshot_info:
    bootstrap_servers: [kafka-1:9092, kafka-2:9092, kafka-3:9092]
    topic: __headroom_volume_usage
    max_age: PT5M
  register: usage

- name: Throttle decision from the snapshots (pauses when a broker has no fresh snapshot)
  headroom.kafka.volume_limits:
    bootstrap_servers: [kafka-1:9092, kafka-2:9092, kafka-3:9092]
    policy: graded
    snapshots: "{{ usage.snapshots }}"
    soft_limit: {type: min_free_percentage, level: 20}
    hard_limit: {type: min_free_percentage, level: 5}

- name: Read a local log and the topic together; broker 3 is stopped for maintenance but must have a fresh snapshot
  headroom.kafka.usage_snapshot_info:
    bootstrap_servers: [kafka-1:9092, kafka-2:9092]
    topic: __headroom_volume_usage
    path: /var/log/kafka-volume-usage.jsonl
    max_age: PT15M
    expected_brokers: [3]
  register: usage

- name: Stop when a broker has no fresh snapshot
  ansible.builtin.assert:
    that: usage.complete
    fail_msg: "No fresh snapshot from brokers {{ usage.brokers_without_snapshot }}"
"""

RETURN = r"""
snapshots:
  description:
    - The latest fresh message of each broker, in the published schema, ordered by broker id.
    - Messages whose C(ClusterId) is set and names another cluster are ignored.
  returned: always
  type: list
  elements: dict
  sample:
    - SnapshotAt: "2026-11-22T04:07:09.123Z"
      HardLimit: {type: MinFreePercentage, level: 5}
      SoftLimit: {type: MinFreePercentage, level: 20}
      Volumes: [{VolumeName: /var/lib/kafka/data-0, Capacity: 107374182400, Consumed: 53687091200}]
      BrokerId: 1
      ClusterId: q1Sh-9_ISia_zwGINzRvyQ
stale_brokers:
  description: Brokers whose latest message is older than O(max_age).
  returned: always
  type: list
  elements: int
  sample: [3]
brokers_without_snapshot:
  description: Active brokers (and O(expected_brokers)) that have no fresh snapshot.
  returned: always
  type: list
  elements: int
  sample: [3]
active_brokers:
  description: The cluster's active brokers.
  returned: always
  type: list
  elements: int
  sample: [1, 2, 3]
complete:
  description: Whether every active (and expected) broker has a fresh snapshot.
  returned: always
  type: bool
invalid_messages:
  description: Messages that do not fit the schema and were ignored, with where they are and why.
  returned: always
  type: list
  elements: str
messages_read:
  description: How many records and lines were read.
  returned: always
  type: int
other_cluster_messages:
  description: How many messages were ignored because they belong to another cluster.
  returned: always
  type: int
cluster_id:
  description: The queried cluster's id.
  returned: always
  type: str
  sample: q1Sh-9_ISia_zwGINzRvyQ
max_age:
  description: The freshness limit applied, in ISO 8601.
  returned: always
  type: str
  sample: PT5M
read_at:
  description: The moment freshness was judged against, ISO 8601 in UTC.
  returned: always
  type: str
  sample: "2026-11-22T04:08:00.000Z"
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils import connection, snapshot_reading

ARGUMENT_SPEC = connection.argument_spec(**snapshot_reading.ARGUMENT_SPEC)
OPTION_RANGES = snapshot_reading.OPTION_RANGES


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_one_of=[["path", "topic"]],
        required_if=connection.CONNECTION_REQUIRED_IF,
        required_together=connection.CONNECTION_REQUIRED_TOGETHER,
        supports_check_mode=True,
    )
    connection.check(module, OPTION_RANGES)
    snapshot_reading.check_options(module)
    module.exit_json(changed=False, **snapshot_reading.read(module))


if __name__ == "__main__":
    main()
