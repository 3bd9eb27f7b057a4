"""The synthetic fleet: deterministic, consistent across its files, and with a client over its per-broker quota."""

import json

import pytest

from headroom_pipeline import generate


def over_quota(rows, interval=60):
    """(broker_id, ts) of the rows where 'ingest' produced above its quota on that broker (quotas apply per broker)."""
    return [
        (row["broker_id"], row["ts"])
        for row in rows
        if row["user"] == "ingest" and row["bytes_in"] / interval > generate.INGEST_PRODUCER_QUOTA
    ]


@pytest.mark.parametrize("brokers, hours, seed", [(3, 6, 11), (2, 1, 1), (1, 0.5, 99), (6, 2, 5)])
def test_ingest_exceeds_its_per_broker_quota_whatever_the_seed_and_fleet(brokers, hours, seed):
    rows = generate.traffic(brokers=brokers, hours=hours, seed=seed)
    over = over_quota(rows)
    assert {broker for broker, unused_ts in over} == set(range(1, brokers + 1)), "every broker sees the surge"
    minutes = min(int(hours * 60), generate.SURGE_MINUTES - 1)  # the first hour's surge starts at minute 1
    assert len(over) >= minutes * brokers


def test_the_files_are_deterministic_and_cover_the_same_brokers(tmp_path):
    first = generate.write(str(tmp_path / "a"), clusters=2, brokers=2, hours=3)
    second = generate.write(str(tmp_path / "b"), clusters=2, brokers=2, hours=3)
    for name, path in first.items():
        with open(path, encoding="utf-8") as one, open(second[name], encoding="utf-8") as other:
            assert one.read() == other.read(), name
    with open(first["traffic.jsonl"], encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    assert {row["broker_id"] for row in rows} == {1, 2}
    assert max(row["ts"] for row in rows) == "2026-11-20T03:00:00.000Z", "traffic within the snapshots' 3 hours"
    assert over_quota(rows)
    with open(first["quotas.json"], encoding="utf-8") as handle:
        quotas = json.load(handle)["quotas"]
    assert {
        "entity": {"user": "ingest"},
        "quota_values": {"producer_byte_rate": generate.INGEST_PRODUCER_QUOTA},
    } in quotas
