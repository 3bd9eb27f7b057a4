"""Reading snapshots and traffic: accepted rows, rejected rows with reasons, and nothing lost."""

import json

from headroom_pipeline import ingest


def message(broker_id=1, at="2026-11-22T04:00:00Z", volumes=None, **extra):
    value = {
        "SnapshotAt": at,
        "HardLimit": {"type": "MinFreeBytes", "level": 100},
        "SoftLimit": {"type": "MinFreeBytes", "level": 200},
        "Volumes": volumes if volumes is not None else [{"VolumeName": "/data/0", "Capacity": 1000, "Consumed": 400}],
        "BrokerId": broker_id,
        "ClusterId": "c1",
    }
    value.update(extra)
    return value


def write_lines(path, lines):
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(path)


def test_snapshot_records_are_accepted_or_rejected_with_a_reason(spark, tmp_path):
    lines = [
        message(),
        message(broker_id=2, at="2026-11-22T04:00:00.123456789+01:00"),
        "{not json",
        message(at="yesterday"),
        message(volumes=[{"VolumeName": "/data/0", "Capacity": 1000, "Consumed": -1}]),
        message(volumes=[{"VolumeName": "/data/0", "Capacity": 1000, "Consumed": 2000}]),
        message(SnapshotAt=None),
        message(HardLimit={"type": "MinFreePercentage", "level": 120}),
        message(broker_id=-3),
        "",
    ]
    result = ingest.load_snapshots(spark, write_lines(tmp_path / "snapshots.jsonl", lines))
    rows = result.rows.orderBy("broker_id").collect()
    reasons = sorted(row.reason for row in result.rejected.collect())
    assert result.read == 9, "blank lines are not records"
    assert len(rows) + len(reasons) == result.read
    assert [(r.cluster, r.broker_id, r.soft_type, r.hard_level) for r in rows] == [
        ("c1", 1, "min_free_bytes", 100.0),
        ("c1", 2, "min_free_bytes", 100.0),
    ]
    assert rows[0].volumes[0].asDict() == {"log_dir": "/data/0", "total_bytes": 1000, "usable_bytes": 600}
    assert rows[1].at.isoformat() == "2026-11-22T03:00:00.123456"
    assert reasons == sorted(
        [
            "not a JSON object in the usage snapshot schema",
            "SnapshotAt must be an ISO 8601 date-time with a time zone, such as 2026-11-22T04:07:09.123Z",
            "a volume has a negative size",
            "a volume's Consumed exceeds its Capacity",
            "SnapshotAt is missing",
            "HardLimit.level is a percentage for MinFreePercentage and must be between 0 and 100",
            "BrokerId must be a broker id, a whole number from 0 to 2147483647",
        ]
    )


def test_traffic_rows_and_rejections(spark, tmp_path):
    good = {
        "ts": "2026-11-22T04:00:00Z",
        "broker_id": 1,
        "user": "alice",
        "client_id": "app",
        "topic": "t",
        "bytes_in": 10,
        "bytes_out": 0,
    }
    lines = [good, dict(good, bytes_in=-5), dict(good, ts=None), dict(good, broker_id="one")]
    result = ingest.load_traffic(spark, write_lines(tmp_path / "traffic.jsonl", lines))
    assert result.read == 4
    assert [row.bytes_in for row in result.rows.collect()] == [10]
    assert sorted(row.reason for row in result.rejected.collect()) == sorted(
        ["bytes_in and bytes_out must be >= 0", "ts is missing", "broker_id is missing (or not a whole number)"]
    )


def test_parquet_snapshots_with_a_timestamp_column_keep_their_instant_and_render_rejected_records(spark, tmp_path):
    import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    def row(broker_id, consumed):
        return {
            "SnapshotAt": datetime.datetime(2026, 11, 22, 4, 0, 0, 123456, tzinfo=datetime.timezone.utc),
            "BrokerId": broker_id,
            "ClusterId": "c1",
            "HardLimit": None,
            "SoftLimit": None,
            "Volumes": [{"VolumeName": "/data/0", "Capacity": 1000, "Consumed": consumed}],
        }

    volume = pa.struct([("VolumeName", pa.string()), ("Capacity", pa.int64()), ("Consumed", pa.int64())])
    limit = pa.struct([("type", pa.string()), ("level", pa.float64())])
    schema = pa.schema(
        [
            ("SnapshotAt", pa.timestamp("us", tz="UTC")),
            ("BrokerId", pa.int64()),
            ("ClusterId", pa.string()),
            ("HardLimit", limit),
            ("SoftLimit", limit),
            ("Volumes", pa.list_(volume)),
        ]
    )
    path = tmp_path / "snapshots.parquet"
    pq.write_table(pa.Table.from_pylist([row(1, 400), row(2, -1)], schema=schema), path)

    result = ingest.load_snapshots(spark, str(path))
    accepted = result.rows.collect()
    rejected = result.rejected.collect()
    assert result.read == 2
    assert [(r.broker_id, r.at.isoformat(), r.volumes[0].usable_bytes) for r in accepted] == [
        (1, "2026-11-22T04:00:00.123456", 600)
    ]
    assert [r.reason for r in rejected] == ["a volume has a negative size"]
    record = json.loads(rejected[0].record)
    assert record["SnapshotAt"] == "2026-11-22T04:00:00.123456Z" and record["BrokerId"] == 2
