"""--snapshots kafka://BOOTSTRAP/TOPIC reads the compacted snapshot topic up to the end offsets seen at start."""

import json

import pytest
import yaml

from headroom_pipeline import ingest, sources
from headroom_pipeline.config import ConfigError


def snapshot(broker_id, at, consumed):
    return {
        "SnapshotAt": at,
        "HardLimit": {"type": "MinFreeBytes", "level": 100},
        "SoftLimit": {"type": "MinFreeBytes", "level": 200},
        "Volumes": [{"VolumeName": "/data/0", "Capacity": 1000, "Consumed": consumed}],
        "BrokerId": broker_id,
        "ClusterId": "c1",
    }


def test_the_snapshot_topic_is_read_with_its_history_and_bad_records_rejected(spark, kafka_cluster):
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter

    adapter = KafkaAdapter(kafka_cluster.info["bootstrap_servers"])
    try:
        adapter.ensure_topic("__volume_usage", partitions=2, configs={"cleanup.policy": "compact"})
        records = [
            (str(b).encode(), json.dumps(snapshot(b, f"2026-11-22T04:0{m}:00Z", 100 * m)).encode())
            for m in range(3)
            for b in (1, 2)
        ]
        records.append((b"3", b"{broken"))
        records.append((b"2", json.dumps(snapshot(1, "2026-11-22T04:09:00Z", 5)).encode()))  # key and BrokerId disagree
        adapter.produce("__volume_usage", records)
    finally:
        adapter.close()
    url = f"kafka://{kafka_cluster.info['bootstrap_servers']}/__volume_usage"
    result = ingest.load_snapshots(spark, url)
    assert result.read == 8
    rows = result.rows.orderBy("broker_id", "at").collect()
    assert [(row.broker_id, row.volumes[0].usable_bytes) for row in rows] == [
        (1, 1000),
        (1, 900),
        (1, 800),
        (2, 1000),
        (2, 900),
        (2, 800),
    ]
    rejected = {row.reason: row.source for row in result.rejected.collect()}
    assert set(rejected) == {"not a JSON object in the usage snapshot schema", "BrokerId does not match the record key"}
    assert all(source.startswith("kafka://") and "__volume_usage" in source for source in rejected.values())


def test_a_missing_topic_reads_nothing_and_an_unreachable_cluster_fails_clearly(spark, kafka_cluster):
    assert ingest.load_snapshots(spark, f"kafka://{kafka_cluster.info['bootstrap_servers']}/absent").read == 0
    with pytest.raises(sources.SourceUnavailable, match="cannot read topic 'snapshots'"):
        sources.read_kafka_records("kafka://127.0.0.1:1/snapshots?request_timeout=2")


@pytest.mark.parametrize(
    "url, message",
    [
        ("kafka://", "must look like kafka://host:port"),
        ("kafka://host:9092", "must look like kafka://host:port"),
        ("kafka://host:9092/topic?sasl_password=x", "unknown parameter 'sasl_password'"),
        ("kafka://alice:s3cret@host:9092/topic", "takes no credentials before the host"),
        ("kafka://alice:s3cret@host:9092", "takes no credentials before the host"),
        (
            "kafka://host:9092/topic?security_protocol=SSL&ssl_cafile=/nonexistent/ca.pem",
            "ssl_cafile in the kafka:// URL is not a file here",
        ),
        (
            "kafka://host:9092/topic?request_timeout=-1",
            "request_timeout in the kafka:// URL must be a number of seconds greater than 0",
        ),
    ],
)
def test_bad_kafka_urls_are_refused_before_anything_is_read(url, message):
    with pytest.raises(ConfigError, match=message) as refused:
        sources.parse_kafka_url(url)
    assert "s3cret" not in str(refused.value)


def test_the_url_takes_every_connection_option_of_the_modules_but_the_servers_and_passwords():
    """site.yml turns kafka_connection into URL parameters by name: both sides must know the same options."""
    from ansible_collections.headroom.kafka.plugins.doc_fragments.connection import ModuleDocFragment

    options = set(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"])
    assert set(sources.KAFKA_OPTIONS) == options - {"bootstrap_servers"} - set(sources.SECRET_ENVIRONMENT)
