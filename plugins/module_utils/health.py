# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is the cluster healthy enough to restart the next broker? Pure judgement over what Kafka reported."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Callable, Dict, Iterable, List, Optional


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


# How many partitions a problem names before it counts the rest: a message a person reads, not a listing.
NAMED_PARTITIONS = 5


def _named(partitions: List[Dict[str, Any]], describe: Callable[[Dict[str, Any]], str]) -> str:
    shown = ", ".join(describe(p) for p in partitions[:NAMED_PARTITIONS])
    more = len(partitions) - NAMED_PARTITIONS
    return shown + (" and {0} more".format(more) if more > 0 else "")


def in_sync_partitions(partitions: List[Dict[str, Any]], broker_id: int) -> List[Dict[str, Any]]:
    """The partitions whose ISR holds ``broker_id``, as {topic, partition}: what the broker must rejoin after its
    restart."""
    return [{"topic": p["topic"], "partition": p["partition"]} for p in partitions if broker_id in p["isr"]]


def below_min_isr_without(
    partitions: List[Dict[str, Any]], min_insync_replicas: Dict[str, int], broker_id: int
) -> List[Dict[str, Any]]:
    """The partitions whose ISR would be smaller than their topic's min.insync.replicas once ``broker_id`` stops:
    producers with acks=all would be refused on them (NotEnoughReplicas), and a partition whose only in-sync replica
    is that broker would go offline. A partition the broker is not in sync for loses nothing by its stop; one whose
    topic's setting is unknown counts with Kafka's default, 1."""
    at_risk = []
    for p in partitions:
        if broker_id not in p["isr"]:
            continue
        remaining = [b for b in p["isr"] if b != broker_id]
        required = min_insync_replicas.get(p["topic"], 1)
        if len(remaining) < required:
            at_risk.append(
                {
                    "topic": p["topic"],
                    "partition": p["partition"],
                    "isr": list(p["isr"]),
                    "isr_without_broker": remaining,
                    "min_insync_replicas": required,
                }
            )
    return at_risk


def _problem(
    lead: str, partitions: List[Dict[str, Any]], tail: str, describe: Callable[[Dict[str, Any]], str]
) -> Optional[str]:
    """The sentence LEAD N partitions TAIL: the first of them; None when there are none."""
    if not partitions:
        return None
    return "{0} {1} partitions {2}: {3}".format(lead, len(partitions), tail, _named(partitions, describe))


def stopping_problem(broker_id: int, at_risk: List[Dict[str, Any]]) -> Optional[str]:
    """One sentence for below_min_isr_without's result, None when nothing is at risk."""
    return _problem(
        "stopping broker {0} would leave".format(broker_id),
        at_risk,
        "below min.insync.replicas",
        lambda p: "{0}-{1} (isr {2}, min.insync.replicas {3})".format(
            p["topic"], p["partition"], p["isr"], p["min_insync_replicas"]
        ),
    )


def not_rejoined(
    partitions: List[Dict[str, Any]], broker_id: int, rejoin: Iterable[Dict[str, Any]]
) -> List[Dict[str, Any]]:
    """The partitions of ``rejoin`` ({topic, partition}) whose ISR does not hold ``broker_id`` yet, with their ISR. A
    partition that no longer exists (its topic was deleted meanwhile) has nothing to rejoin."""
    current = {(p["topic"], p["partition"]): p for p in partitions}
    lagging = []
    for wanted in rejoin:
        found = current.get((wanted["topic"], int(wanted["partition"])))
        if found is not None and broker_id not in found["isr"]:
            lagging.append({"topic": found["topic"], "partition": found["partition"], "isr": list(found["isr"])})
    return lagging


def rejoin_problem(broker_id: int, lagging: List[Dict[str, Any]]) -> Optional[str]:
    """One sentence for not_rejoined's result, None when the broker is back in every ISR."""
    return _problem(
        "broker {0} is not back in the ISR of".format(broker_id),
        lagging,
        "it was in sync for",
        lambda p: "{0}-{1} (isr {2})".format(p["topic"], p["partition"], p["isr"]),
    )
