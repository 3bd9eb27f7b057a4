# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is the cluster healthy enough to restart the next broker? Pure judgement over what Kafka reported."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, Iterable, List, Optional


def judge(
    cluster: Dict[str, Any], partitions: List[Dict[str, Any]], expected_brokers: Optional[Iterable[int]] = None
) -> Dict[str, Any]:
    """Summarise broker membership and partition replication; ``healthy`` means every expected broker is active,
    no partition is under-replicated and every partition has a leader."""
    active = sorted(b["id"] for b in cluster["brokers"])
    expected = sorted(set(expected_brokers or []) | set(active) | set(cluster.get("fenced_brokers", [])))
    missing = [b for b in expected if b not in active]
    under_replicated = [p for p in partitions if len(p["isr"]) < len(p["replicas"])]
    offline = [p for p in partitions if p["leader"] < 0]
    problems = []
    if missing:
        # An expected broker the cluster has never registered is more likely a wrong id than a broker down.
        fenced = set(cluster.get("fenced_brokers", []))
        unregistered = [b for b in missing if b not in fenced]
        problems.append(
            "brokers not active: {0}{1}".format(
                ", ".join(str(b) for b in missing),
                " (expected_brokers {0} not registered with the cluster)".format(
                    ", ".join(str(b) for b in unregistered)
                )
                if unregistered
                else "",
            )
        )
    if under_replicated:
        problems.append(
            "{0} under-replicated partitions (first: {1}-{2}, isr {3} of replicas {4})".format(
                len(under_replicated),
                under_replicated[0]["topic"],
                under_replicated[0]["partition"],
                under_replicated[0]["isr"],
                under_replicated[0]["replicas"],
            )
        )
    if offline:
        problems.append(
            "{0} partitions without a leader (first: {1}-{2})".format(
                len(offline), offline[0]["topic"], offline[0]["partition"]
            )
        )
    return {
        "active_brokers": active,
        "fenced_brokers": sorted(cluster.get("fenced_brokers", [])),
        "missing_brokers": missing,
        "under_replicated_partitions": [
            {"topic": p["topic"], "partition": p["partition"], "isr": p["isr"], "replicas": p["replicas"]}
            for p in under_replicated
        ],
        "offline_partitions": [{"topic": p["topic"], "partition": p["partition"]} for p in offline],
        "partition_count": len(partitions),
        "healthy": not problems,
        "problems": problems,
    }
