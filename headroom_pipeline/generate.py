"""A synthetic fleet history for the demo and tests: snapshots, client traffic, quotas and a topic threshold plan.

Deterministic for a seed. Volumes follow retention's saw-tooth (segments deleted every few hours) with a growth
trend on some of them, so that the forecast has something to find; one broker stops reporting for a while, so the
decision timeline shows remembered volumes and the validity clock; one client ('ingest') surges above its per-broker
quota at the start of every hour, so the client analysis always has throttled windows.
"""

import datetime
import json
import math
import os
import random
from typing import Any

GIB = 1024**3
MIB = 1024**2
# Kafka's byte-rate quotas apply per broker. 'ingest' sends each broker twice its producer quota for the first
# SURGE_MINUTES of every hour, whatever the seed or broker count: with any client window up to SURGE_MINUTES long,
# some of its windows are over the quota (throttled) on every broker.
INGEST_PRODUCER_QUOTA = 1 * MIB
SURGE_MINUTES = 5
SURGE_BYTES_PER_SEC = 2 * INGEST_PRODUCER_QUOTA
EPOCH = datetime.datetime(2026, 11, 20, tzinfo=datetime.timezone.utc)


def _stamp(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def snapshots(
    clusters: int = 3,
    brokers: int = 3,
    log_dirs: int = 2,
    hours: float = 48,
    interval: float = 60,
    seed: int = 7,
    start: datetime.datetime = EPOCH,
) -> list[dict[str, Any]]:
    """Snapshot messages in time order (the usage_snapshot schema, ClusterId set)."""
    rng = random.Random(seed)
    volumes: list[dict[str, Any]] = []
    for cluster_index in range(clusters):
        for broker in range(1, brokers + 1):
            for index in range(log_dirs):
                capacity = rng.choice([50, 100, 200]) * GIB
                volumes.append(
                    {
                        "cluster": f"cluster-{cluster_index + 1}",
                        "broker": broker,
                        "dir": f"/var/lib/kafka/data-{index}",
                        "capacity": capacity,
                        "base": capacity * rng.uniform(0.35, 0.6),
                        "tooth": capacity * rng.uniform(0.05, 0.15),
                        "period": rng.choice([4, 6, 8]) * 3600,
                        "phase": rng.uniform(0, 1),
                        # a few volumes grow steadily: they are the ones the forecast should rank first
                        "growth": capacity * rng.uniform(0.004, 0.01) / 3600 if rng.random() < 0.3 else 0.0,
                    }
                )
    silent = (f"cluster-{clusters}", brokers)  # this broker stops reporting for 20 minutes mid-way
    messages = []
    steps = int(hours * 3600 / interval)
    for step in range(steps):
        moment = start + datetime.timedelta(seconds=step * interval)
        elapsed = step * interval
        by_broker: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for volume in volumes:
            if (volume["cluster"], volume["broker"]) == silent and hours * 1800 <= elapsed < hours * 1800 + 1200:
                continue
            cycle = ((elapsed / volume["period"]) + volume["phase"]) % 1.0
            consumed = volume["base"] + volume["tooth"] * cycle + volume["growth"] * elapsed
            consumed = min(int(consumed + rng.uniform(-1, 1) * volume["capacity"] * 0.001), volume["capacity"])
            key = (volume["cluster"], volume["broker"])
            by_broker.setdefault(key, []).append(
                {"VolumeName": volume["dir"], "Capacity": volume["capacity"], "Consumed": max(consumed, 0)}
            )
        for (cluster, broker), items in sorted(by_broker.items()):
            messages.append(
                {
                    "SnapshotAt": _stamp(moment + datetime.timedelta(milliseconds=rng.randint(0, 900))),
                    "HardLimit": {"type": "MinFreePercentage", "level": 5},
                    "SoftLimit": {"type": "MinFreePercentage", "level": 15},
                    "Volumes": items,
                    "BrokerId": broker,
                    "ClusterId": cluster,
                }
            )
    return messages


def traffic(
    brokers: int = 3, hours: float = 6, interval: float = 60, seed: int = 11, start: datetime.datetime = EPOCH
) -> list[dict[str, Any]]:
    """Client traffic rows: a few producers and consumers, rates spread over the brokers; 'ingest' bursts at random and
    surges above its per-broker quota (INGEST_PRODUCER_QUOTA) for the first SURGE_MINUTES of every hour."""
    rng = random.Random(seed)
    clients = [
        ("ingest", "ingest-app", "events", 900_000, 0.6),
        ("billing", "billing-1", "invoices", 200_000, 0.1),
        ("analytics", "spark-reader", "events", 0, 0.0),
        ("ops", "mirror", "audit", 50_000, 0.0),
    ]
    rows = []
    for step in range(1, int(hours * 3600 / interval) + 1):
        moment = start + datetime.timedelta(seconds=step * interval)
        for user, client_id, topic, rate, burst in clients:
            for broker in range(1, brokers + 1):
                wave = 1.0 + 0.5 * math.sin(step / 30.0) + (1.2 if rng.random() < burst * 0.2 else 0.0)
                produced = int(rate * wave * interval / brokers)
                if user == "ingest" and (step * interval) % 3600 < SURGE_MINUTES * 60:
                    produced = max(produced, int(SURGE_BYTES_PER_SEC * interval))
                fetched = (
                    int((rate or 1_500_000) * 1.5 * interval / brokers) if user == "analytics" else int(produced * 0.2)
                )
                rows.append(
                    {
                        "ts": _stamp(moment),
                        "broker_id": broker,
                        "user": user,
                        "client_id": client_id,
                        "topic": topic,
                        "bytes_in": produced,
                        "bytes_out": fetched,
                    }
                )
    return rows


QUOTAS = {
    "quotas": [
        {
            "entity": {"user": "<default>"},
            "quota_values": {"producer_byte_rate": 1048576, "consumer_byte_rate": 2097152},
        },
        {"entity": {"user": "ingest"}, "quota_values": {"producer_byte_rate": INGEST_PRODUCER_QUOTA}},
        {"entity": {"user": "analytics", "client_id": "spark-reader"}, "quota_values": {"consumer_byte_rate": 3145728}},
    ]
}
TOPIC_THRESHOLDS = {"total_bytes_in_per_sec_threshold": 600000, "topics": {"events": 400000}}


def write(directory: str, brokers: int = 3, hours: float = 48, **options: Any) -> dict[str, str]:
    """Write snapshots.jsonl, traffic.jsonl, quotas.json and topic-thresholds.json into ``directory``; return their
    paths.

    ``options`` go to snapshots(); the traffic covers the same brokers and the first hours of the history (at most 6).
    """
    os.makedirs(directory, exist_ok=True)
    paths = {
        name: os.path.join(directory, name)
        for name in ("snapshots.jsonl", "traffic.jsonl", "quotas.json", "topic-thresholds.json")
    }
    with open(paths["snapshots.jsonl"], "w", encoding="utf-8") as handle:
        for message in snapshots(brokers=brokers, hours=hours, **options):
            handle.write(json.dumps(message, separators=(",", ":")) + "\n")
    with open(paths["traffic.jsonl"], "w", encoding="utf-8") as handle:
        for row in traffic(brokers=brokers, hours=min(hours, 6)):
            handle.write(json.dumps(row, separators=(",", ":")) + "\n")
    for name, document in (("quotas.json", QUOTAS), ("topic-thresholds.json", TOPIC_THRESHOLDS)):
        with open(paths[name], "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
    return paths
