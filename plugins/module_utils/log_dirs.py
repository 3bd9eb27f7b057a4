# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster-wide view of log dirs that log_dirs_info returns and volume_limits and usage_snapshot consume."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
from typing import Any, Dict, List, Mapping, Optional, Union

from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter, KafkaAdapterError


def iso_utc(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _size(value):
    """Kafka reports -1 (or nothing, below DescribeLogDirs v4) for an unknown size; we say null."""
    return None if value is None or value < 0 else value


def log_dir_row(broker_id: int, entry: Dict[str, Any], replicas: bool = False) -> Dict[str, Any]:
    """One broker's log dir as the module returns it; with ``replicas``, the replicas in it too (an offline log dir
    has none)."""
    total, usable = _size(entry.get("total_bytes")), _size(entry.get("usable_bytes"))
    known = total is not None and usable is not None
    row = {
        "broker_id": broker_id,
        "log_dir": entry["log_dir"],
        "total_bytes": total,
        "usable_bytes": usable,
        "used_bytes": total - usable if known else None,
        "available_ratio": (0.0 if total == 0 else usable / total) if known else None,
        "error": entry.get("error"),
    }
    if replicas:
        row["replicas"] = [
            {
                "topic": replica["topic"],
                "partition": replica["partition"],
                "size_bytes": _size(replica["size_bytes"]),
                "offset_lag": _size(replica["offset_lag"]),
                "is_future": replica["is_future"],
            }
            for replica in entry.get("replicas", [])
        ]
    return row


def build_view(
    cluster: Dict[str, Any],
    answers: Mapping[int, Union[List[Dict[str, Any]], Exception, None]],
    snapshot_at: str,
    replicas: bool = False,
) -> Dict[str, Any]:
    """Combine DescribeCluster and the per-broker DescribeLogDirs answers (lists, or errors) into the module result."""
    rows: List[Dict[str, Any]]
    rows, missing, failures = [], [], []
    for broker in cluster["brokers"]:
        answer = answers.get(broker["id"])
        if answer is None or isinstance(answer, Exception):
            missing.append(broker["id"])
            failures.append(str(answer) if answer is not None else "broker {0} was not asked".format(broker["id"]))
            continue
        rows.extend(log_dir_row(broker["id"], entry, replicas) for entry in answer)
    rows.sort(key=lambda row: (row["broker_id"], row["log_dir"]))
    return {
        "cluster_id": cluster["cluster_id"],
        "brokers": cluster["brokers"],
        "log_dirs": rows,
        "missing_brokers": missing,
        "fenced_brokers": list(cluster.get("fenced_brokers", [])),
        "complete": not missing and not cluster.get("fenced_brokers"),
        "snapshot_at": snapshot_at,
        "failures": failures,
    }


def collect(adapter: KafkaAdapter, now: Optional[datetime.datetime] = None, replicas: bool = False) -> Dict[str, Any]:
    """Query the cluster: active brokers, then DescribeLogDirs on all of them in parallel; with ``replicas``, each log
    dir's replicas and the partition reassignments in progress too."""
    cluster = adapter.describe_cluster()
    answers = adapter.describe_log_dirs([broker["id"] for broker in cluster["brokers"]], replicas=replicas)
    unsupported = [a for a in answers.values() if isinstance(a, KafkaAdapterError) and "KIP-827" in str(a)]
    if unsupported:
        raise unsupported[0]
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    view = build_view(cluster, answers, iso_utc(moment), replicas)
    if replicas:
        view["reassignments"] = adapter.partition_reassignments()
    return view
