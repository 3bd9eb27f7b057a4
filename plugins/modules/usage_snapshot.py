#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: usage_snapshot
short_description: Publish per-broker volume usage snapshots (the volume-usage proposal's messages)
version_added: 1.0.0
description:
  - The data publisher of the first cluster-wide volume-usage proposal for the Strimzi quota plugin;
    M(headroom.kafka.usage_snapshot_info) reads the messages back.
  - O(state=publish) builds one JSON message per broker from O(log_dirs), or from a fresh query of the cluster,
    with the proposal's schema - C(SnapshotAt) (ISO 8601, UTC), C(HardLimit) and C(SoftLimit) (C({type, level})
    with the proposal's type names C(ConsumedSpace), C(MinFreeBytes) and C(MinFreePercentage)) and C(Volumes)
    (C(VolumeName), the log dir; C(Capacity) and C(Consumed) in bytes) - plus C(BrokerId) and C(ClusterId). It
    appends them to the JSON-lines file O(path) and/or produces them to O(topic) keyed by broker id, creating the
    topic compacted when it does not exist.
  - A log dir with an error or an unknown size is left out of its broker's C(Volumes) and listed in
    RV(skipped_log_dirs). Publication errors do not fail the task; they are counted in RV(publish_errors) and
    described in RV(publish_error_messages).
  - O(state=read) is deprecated and will be removed in 2.0.0; use M(headroom.kafka.usage_snapshot_info), which takes
    the same O(path), O(topic), O(max_age) and O(expected_brokers) and returns the same results. Until then
    O(state=read) does exactly what that module does, with a deprecation warning.
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.connection
attributes:
  check_mode:
    support: full
    description:
      - With O(state=publish), check mode writes nothing and returns the messages that would be written.
      - O(state=read) (deprecated) only reads.
  diff_mode:
    support: none
    description: Messages are appended; there is no before and after to compare.
options:
  state:
    description:
      - V(publish) - build the messages and write them.
      - V(read) - deprecated, use M(headroom.kafka.usage_snapshot_info) - read the latest fresh message per broker.
    type: str
    choices: [publish, read]
    default: publish
  path:
    description:
      - A JSON-lines file, one message per line. O(state=publish) appends to it (creating the file, not its
        directory); the deprecated O(state=read) reads it as M(headroom.kafka.usage_snapshot_info) does.
      - An empty path, a directory, or a path inside a directory that does not exist fails the task.
      - At least one of O(path) and O(topic) is required.
    type: path
  topic:
    description:
      - The topic the messages go to, keyed by broker id (as text). O(state=publish) creates it with one partition
        and C(cleanup.policy=compact) when it does not exist.
      - A name Kafka accepts (1 to 249 of letters, digits, V(.), V(_) and V(-); not V(.) or V(..)).
    type: str
  replication_factor:
    description:
      - With O(state=publish) and O(topic), the replication factor of O(topic) when it is created; V(-1) (the
        default) takes the brokers' default, otherwise from V(1) to the number of brokers in the cluster.
    type: int
  log_dirs:
    description:
      - With O(state=publish), the log dirs to publish, as RV(headroom.kafka.log_dirs_info#module:log_dirs) returns them
        (each item needs C(broker_id), C(log_dir), C(total_bytes) and C(usable_bytes)). One message per broker that
        appears in the list.
      - When omitted, the module queries the cluster (DescribeLogDirs on every active broker).
    type: list
    elements: dict
  cluster_id:
    description:
      - With O(state=publish) and O(log_dirs), the C(ClusterId) written in the messages (null when not given).
      - Refused without O(log_dirs), since a fresh query writes the cluster's own id.
    type: str
  snapshot_at:
    description:
      - With O(state=publish) and O(log_dirs), when the log dirs were read (for example
        RV(headroom.kafka.log_dirs_info#module:snapshot_at)); ISO 8601 with a time zone, from 1970 to 9999.
        Defaults to now.
      - Refused without O(log_dirs), since a fresh query writes the moment of the query.
    type: str
  soft_limit:
    description:
      - With O(state=publish) (required), the limit where this cluster throttles producers, written as the
        messages' C(SoftLimit) in the proposal's names. Same form as
        O(headroom.kafka.volume_limits#module:soft_limit).
    type: dict
    suboptions:
      type:
        description: What the level measures.
        type: str
        required: true
        choices: [min_free_bytes, min_free_percentage, consumed_space]
      level:
        description: Bytes, or percent (0 to 100) for V(min_free_percentage). Must be >= 0.
        type: float
        required: true
  hard_limit:
    description:
      - With O(state=publish) (required), the limit where this cluster pauses producers, written as C(HardLimit).
    type: dict
    suboptions:
      type:
        description: What the level measures; the same type as O(soft_limit).
        type: str
        required: true
        choices: [min_free_bytes, min_free_percentage, consumed_space]
      level:
        description: Bytes, or percent (0 to 100) for V(min_free_percentage). Must be >= 0.
        type: float
        required: true
  max_age:
    description:
      - With the deprecated O(state=read), as O(headroom.kafka.usage_snapshot_info#module:max_age).
    type: str
  expected_brokers:
    description:
      - With the deprecated O(state=read), as O(headroom.kafka.usage_snapshot_info#module:expected_brokers).
    type: list
    elements: int
notes:
  - A reader judges freshness on C(SnapshotAt), not on the record's timestamp, as the proposal asks; a tombstone (a
    record with a null value) on O(topic) removes its broker's earlier snapshots.
seealso:
  - module: headroom.kafka.usage_snapshot_info
  - module: headroom.kafka.log_dirs_info
  - module: headroom.kafka.volume_limits
"""

EXAMPLES = r"""
- name: Publish every broker's volume usage to a compacted topic and to a local log
  headroom.kafka.usage_snapshot:
    bootstrap_servers: [kafka-1:9092, kafka-2:9092, kafka-3:9092]
    topic: __headroom_volume_usage
    replication_factor: 3
    path: /var/log/kafka-volume-usage.jsonl
    soft_limit: {type: min_free_percentage, level: 20}
    hard_limit: {type: min_free_percentage, level: 5}
  register: published

- name: Warn about publication errors
  ansible.builtin.debug:
    msg: "{{ published.publish_errors }} messages not written: {{ published.publish_error_messages }}"
  when: published.publish_errors > 0

- name: Publish log dirs that were already read
  headroom.kafka.usage_snapshot:
    topic: __headroom_volume_usage
    log_dirs: "{{ cluster_disks.log_dirs }}"
    cluster_id: "{{ cluster_disks.cluster_id }}"
    snapshot_at: "{{ cluster_disks.snapshot_at }}"
    soft_limit: {type: min_free_bytes, level: 53687091200}
    hard_limit: {type: min_free_bytes, level: 10737418240}

- name: Read them back (see headroom.kafka.usage_snapshot_info for what it returns)
  headroom.kafka.usage_snapshot_info:
    topic: __headroom_volume_usage
    max_age: PT5M
  register: usage
"""

RETURN = r"""
messages:
  description:
    - With O(state=publish), the messages built, one per broker - written, or in check mode the ones that would be.
  returned: state is publish
  type: list
  elements: dict
  sample:
    - SnapshotAt: "2026-11-22T04:07:09.123Z"
      HardLimit: {type: MinFreePercentage, level: 5}
      SoftLimit: {type: MinFreePercentage, level: 20}
      Volumes: [{VolumeName: /var/lib/kafka/data-0, Capacity: 107374182400, Consumed: 53687091200}]
      BrokerId: 1
      ClusterId: q1Sh-9_ISia_zwGINzRvyQ
skipped_log_dirs:
  description: With O(state=publish), log dirs left out of the messages (an error or an unknown size).
  returned: state is publish
  type: list
  elements: dict
  sample: [{"broker_id": 1, "log_dir": "/var/lib/kafka/data-0", "error": "KAFKA_STORAGE_ERROR", "reason":
          "log dir error KAFKA_STORAGE_ERROR"}]
published_to_path:
  description: With O(state=publish), lines appended to O(path) (0 in check mode).
  returned: state is publish
  type: int
published_to_topic:
  description: With O(state=publish), messages the brokers acknowledged on O(topic) (0 in check mode).
  returned: state is publish
  type: int
topic_created:
  description: With O(state=publish), whether O(topic) was created.
  returned: state is publish
  type: bool
publish_errors:
  description: With O(state=publish), the number of messages that could not be written, counted per destination.
  returned: state is publish
  type: int
  sample: 0
publish_error_messages:
  description: With O(state=publish), why messages could not be written (each reason once).
  returned: state is publish
  type: list
  elements: str
missing_brokers:
  description: With O(state=publish) and a fresh query, active brokers that did not describe their log dirs
               (no message).
  returned: state is publish
  type: list
  elements: int
snapshot_at:
  description: With O(state=publish), the messages' C(SnapshotAt).
  returned: state is publish
  type: str
  sample: "2026-11-22T04:07:09.123Z"
cluster_id:
  description:
    - With O(state=publish) the messages' C(ClusterId); with the deprecated O(state=read) the queried cluster's.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.headroom.kafka.plugins.module_utils import (
    connection,
    limit_options,
    log_dirs,
    option_checks,
    snapshot_reading,
    snapshots,
    volume_limits,
)
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError

PUBLISH_ONLY = ("log_dirs", "cluster_id", "snapshot_at", "soft_limit", "hard_limit", "replication_factor")
READ_ONLY = ("max_age", "expected_brokers")
DEFAULT_REPLICATION_FACTOR = -1


def _unique(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


class Publication:
    """The messages' way to the file and the topic; failures are collected, never raised."""

    def __init__(self, module, messages):
        self.module = module
        self.messages = messages
        self.errors = 0
        self.reasons = []
        self.to_path = 0
        self.to_topic = 0
        self.topic_created = False

    def fail(self, count, reason):
        self.errors += count
        self.reasons.append(reason)

    def write_path(self, path):
        lines = "".join(snapshots.encode_message(m) + "\n" for m in self.messages)
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(lines)
        except (IOError, OSError) as exc:
            self.fail(len(self.messages), "cannot append to {0}: {1}".format(path, to_native(exc)))
            return
        self.to_path = len(self.messages)

    def produce(self, adapter, topic, replication_factor):
        try:
            self.topic_created = adapter.ensure_topic(
                topic, partitions=1, replication_factor=replication_factor, configs=snapshots.COMPACTED_TOPIC_CONFIGS
            )
        except KafkaAdapterError as exc:
            self.fail(len(self.messages), str(exc))
            return
        except Exception as exc:  # pylint: disable=broad-except  # a publication error is reported, not raised
            self.fail(
                len(self.messages), "cannot create topic {0} via {1}: {2}".format(topic, adapter.where, to_native(exc))
            )
            return
        try:
            failures = adapter.produce(
                topic, [(snapshots.message_key(m), snapshots.encode_message(m).encode("utf-8")) for m in self.messages]
            )
        except Exception as exc:  # pylint: disable=broad-except
            self.fail(
                len(self.messages),
                "cannot produce to topic {0} via {1}: {2}".format(topic, adapter.where, to_native(exc)),
            )
            return
        for failure in failures:
            self.fail(1, "topic {0}: {1}".format(topic, failure))
        self.to_topic = len(self.messages) - len(failures)


def check_static(module):
    """Settings that can never work fail the task, naming the option, before anything is read or written."""
    params = module.params
    mode = params["state"]
    wrong_mode = [name for name in (READ_ONLY if mode == "publish" else PUBLISH_ONLY) if params[name] is not None]
    if wrong_mode:
        module.fail_json(
            msg="{0} belong(s) to state {1}; state {2} takes {3}".format(
                ", ".join(wrong_mode),
                "read" if mode == "publish" else "publish",
                mode,
                "path and/or topic, max_age and expected_brokers"
                if mode == "read"
                else "path and/or topic, soft_limit, hard_limit, and with log_dirs cluster_id and snapshot_at; "
                "replication_factor with topic",
            )
        )
    if mode == "publish" and params["log_dirs"] is None:
        fresh_only = [name for name in ("cluster_id", "snapshot_at") if params[name] is not None]
        if fresh_only:
            module.fail_json(
                msg="{0} go(es) with log_dirs; a fresh query writes the cluster's own id and the moment of the "
                "query".format(" and ".join(fresh_only))
            )
    if params["replication_factor"] is not None and params["topic"] is None:
        module.fail_json(msg="replication_factor applies to topic; give topic or leave replication_factor out")
    snapshot_reading.check_options(module)
    try:
        option_checks.check_replication_factor("replication_factor", params["replication_factor"])
    except option_checks.OptionError as exc:
        module.fail_json(msg=str(exc))


def check_replication_against_cluster(module, adapter, cluster=None):
    """A replication factor above the number of brokers can never create the topic: fail before anything is written.

    ``cluster``: the brokers and fenced brokers the module already read (a fresh log dir query), else asked here."""
    wanted = module.params["replication_factor"]
    if wanted is None or wanted <= 0:
        return
    try:
        cluster = cluster or adapter.describe_cluster()
    except KafkaAdapterError as exc:
        module.fail_json(msg=str(exc))
    brokers = len(cluster["brokers"]) + len(cluster.get("fenced_brokers", []))
    if wanted > brokers:
        module.fail_json(
            msg="replication_factor must be from 1 to the number of brokers, {0} (got {1})".format(brokers, wanted)
        )


def publish(module):
    params = module.params
    if params["soft_limit"] is None or params["hard_limit"] is None:
        module.fail_json(msg="state publish requires soft_limit and hard_limit (written in every message)")
    soft, hard = limit_options.graded_limit(params["soft_limit"]), limit_options.graded_limit(params["hard_limit"])
    try:
        volume_limits.validate_graded_limits(soft, hard)
        rows = snapshots.normalize_log_dirs(params["log_dirs"]) if params["log_dirs"] is not None else None
        stamp = params["snapshot_at"]
        if stamp is not None:
            stamp = snapshots.format_timestamp(snapshots.parse_timestamp(stamp, "snapshot_at"))
    except (volume_limits.LimitError, snapshots.SnapshotError) as exc:
        module.fail_json(msg=str(exc))
    needs_kafka = rows is None or params["topic"] is not None
    purpose = (
        "to read every log dir (give log_dirs to publish without reading the cluster)"
        if rows is None
        else "to publish to topic"
    )
    adapter = connection.connect(module, purpose, need_confluent=params["topic"] is not None) if needs_kafka else None
    try:
        cluster_id, missing, view = params["cluster_id"], [], None
        if rows is None:
            try:
                view = log_dirs.collect(adapter)
            except KafkaAdapterError as exc:
                module.fail_json(msg=str(exc))
            rows, missing = view["log_dirs"], view["missing_brokers"]
            cluster_id, stamp = view["cluster_id"], view["snapshot_at"]
        if params["topic"] is not None:
            check_replication_against_cluster(module, adapter, view)
        stamp = stamp or snapshots.format_timestamp(snapshots.now_utc())
        messages, skipped = snapshots.build_messages(rows, soft, hard, stamp, cluster_id)
        publication = Publication(module, messages)
        if messages and not module.check_mode:
            if params["path"]:
                publication.write_path(params["path"])
            if params["topic"]:
                replication_factor = params["replication_factor"]
                publication.produce(
                    adapter,
                    params["topic"],
                    DEFAULT_REPLICATION_FACTOR if replication_factor is None else replication_factor,
                )
    finally:
        if adapter is not None:
            adapter.close()
    if publication.errors:
        module.warn(
            "{0} snapshot messages were not written: {1}".format(
                publication.errors, "; ".join(_unique(publication.reasons))
            )
        )
    written = publication.to_path + publication.to_topic > 0 or publication.topic_created
    module.exit_json(
        changed=bool(messages) if module.check_mode else written,
        messages=messages,
        skipped_log_dirs=skipped,
        published_to_path=publication.to_path,
        published_to_topic=publication.to_topic,
        topic_created=publication.topic_created,
        publish_errors=publication.errors,
        publish_error_messages=_unique(publication.reasons),
        missing_brokers=missing,
        snapshot_at=stamp,
        cluster_id=cluster_id,
    )


ARGUMENT_SPEC = connection.argument_spec(
    state=dict(type="str", default="publish", choices=["publish", "read"]),
    replication_factor=dict(type="int"),
    log_dirs=dict(type="list", elements="dict"),
    cluster_id=dict(type="str"),
    snapshot_at=dict(type="str"),
    **snapshot_reading.ARGUMENT_SPEC,
    **limit_options.GRADED_ARGUMENT_SPEC,
)
OPTION_RANGES = dict(limit_options.GRADED_RANGES, **snapshot_reading.OPTION_RANGES)
READ_DEPRECATION = (
    "usage_snapshot with state=read is deprecated: read the snapshots with headroom.kafka.usage_snapshot_info, "
    "which takes the same path, topic, max_age and expected_brokers and returns the same results"
)


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_if=[
            ["state", "publish", ["path", "topic"], True],
            ["state", "read", ["path", "topic"], True],
            ["state", "publish", ["soft_limit", "hard_limit"]],
        ]
        + connection.CONNECTION_REQUIRED_IF,
        required_together=connection.CONNECTION_REQUIRED_TOGETHER,
        supports_check_mode=True,
    )
    if module.params["state"] == "read":
        module.deprecate(READ_DEPRECATION, version="2.0.0", collection_name="headroom.kafka")
    connection.check(module, OPTION_RANGES)
    check_static(module)
    if module.params["state"] == "publish":
        publish(module)
    else:
        module.exit_json(changed=False, **snapshot_reading.read(module))


if __name__ == "__main__":
    main()
