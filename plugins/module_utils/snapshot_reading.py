# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading usage snapshots back from a JSON-lines file and/or a topic: the job of usage_snapshot_info, shared with
usage_snapshot's deprecated state=read until that is removed. The rules (latest per broker, freshness, the schema)
are in snapshots.py; this is their I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from typing import TYPE_CHECKING, Any, Dict, List

from ansible_collections.headroom.kafka.plugins.module_utils import (
    connection,
    durations,
    option_checks,
    snapshot_file,
    snapshots,
)
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError

if TYPE_CHECKING:
    from ansible.module_utils.basic import AnsibleModule

ARGUMENT_SPEC: Dict[str, Dict[str, Any]] = dict(
    path=dict(type="path"),
    topic=dict(type="str"),
    max_age=dict(type="str"),
    expected_brokers=dict(type="list", elements="int"),
)
OPTION_RANGES = {"expected_brokers": option_checks.BROKER_IDS}
DEFAULT_MAX_AGE = "PT5M"


def check_options(module: "AnsibleModule") -> None:
    """A topic name Kafka refuses or a path that can never be a file fails the task, naming the option, before
    anything is read or written (publishing checks its destinations with it too)."""
    params = module.params
    if params["topic"] is not None:
        try:
            option_checks.check_topic_name("topic", params["topic"])
        except option_checks.OptionError as exc:
            module.fail_json(msg=str(exc))
    if params["path"] is not None:
        problem = snapshot_file.path_problem(params["path"])
        if problem:
            module.fail_json(msg="path {0}".format(problem))


def read_path(module: "AnsibleModule", path: str) -> List[snapshots.Record]:
    """(where, key, value) per non-blank line; a missing file holds no snapshots (with a warning)."""
    if not os.path.exists(path):
        module.warn("{0} does not exist; it holds no snapshots".format(path))
        return []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return [
                ("{0} line {1}".format(path, number), None, line)
                for number, line in enumerate(handle, 1)
                if line.strip()
            ]
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read {0}: {1}".format(path, exc))
    return []


def read(module: "AnsibleModule") -> Dict[str, Any]:
    """The latest fresh snapshot per broker from the module's path and/or topic, judged against the cluster's active
    brokers: the result both modules return (without ``changed``)."""
    params = module.params
    try:
        max_age = durations.parse_positive_duration(params["max_age"] or DEFAULT_MAX_AGE, "max_age")
    except durations.DurationError as exc:
        module.fail_json(msg=str(exc))
    records = read_path(module, params["path"]) if params["path"] else []
    adapter = connection.connect(
        module, "to read its active brokers, whose snapshots must be fresh", need_confluent=params["topic"] is not None
    )
    try:
        cluster = adapter.describe_cluster()
        if params["topic"]:
            topic = params["topic"]
            try:
                found = adapter.read_all(topic)
            except KafkaAdapterError:
                raise
            except Exception as exc:  # pylint: disable=broad-except  # any client failure becomes one clear error
                module.fail_json(msg="cannot read topic {0} via {1}: {2}".format(topic, adapter.where, exc))
            records.extend(
                ("topic {0} record {1}".format(topic, index), record[0], record[1])
                for index, record in enumerate(found)
            )
    except KafkaAdapterError as exc:
        module.fail_json(msg=str(exc))
    finally:
        adapter.close()
    now = snapshots.now_utc()
    result = snapshots.read_result(
        records,
        now,
        max_age,
        [b["id"] for b in cluster["brokers"]],
        params["expected_brokers"] or [],
        cluster_id=cluster["cluster_id"],
    )
    if result["invalid_messages"]:
        module.warn(
            "{0} messages do not fit the snapshot schema and were ignored, e.g. {1}".format(
                len(result["invalid_messages"]), result["invalid_messages"][0]
            )
        )
    result.update(
        cluster_id=cluster["cluster_id"],
        max_age=durations.format_duration(max_age),
        read_at=snapshots.format_timestamp(now),
    )
    return result
