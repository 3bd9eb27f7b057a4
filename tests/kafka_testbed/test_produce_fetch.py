"""Conformance: Produce, Fetch and ListOffsets with confluent-kafka and kafka-python, and across the two.

- JSON values with keys and headers come back from Fetch as produced, at consecutive offsets from 0, whichever client
  produced and whichever consumed them (manual partition assignment, no consumer group).
- acks=0, 1 and all store the records; acks=0 gets no offsets back.
- ListOffsets: earliest 0, latest = end offset, by timestamp the first *record* at or after it (not its batch), and
  max-timestamp the record with the largest timestamp; a timestamp after every record finds nothing.
- A compacted topic refuses a batch holding a keyless record with INVALID_RECORD (87) and accepts keyed records.
- acks=all with fewer in-sync replicas than min.insync.replicas fails with NOT_ENOUGH_REPLICAS (19); acks=1 still works.
"""
# pylint: disable=missing-function-docstring

import json
import time
import uuid

import pytest
from clients import RawClient, confluent_config, kafka_python_config
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from kafka_testbed.model.broker import wait_for

CLIENTS = ("confluent", "kafka-python")
INVALID_RECORD, NOT_ENOUGH_REPLICAS = 87, 19


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(cluster, name, partitions=1, replication_factor=3, config=None):
    admin = AdminClient(confluent_config(cluster))
    futures = admin.create_topics(
        [NewTopic(name, partitions, replication_factor, config=config or {})], operation_timeout=10
    )
    futures[name].result(timeout=15)
    return name


def record(index, key=True, headers=True, timestamp=None):
    return {
        "key": f"key-{index}".encode() if key else None,
        "value": {"index": index, "text": f"record {index}"},
        "headers": [("source", b"conformance"), ("index", str(index).encode())] if headers else [],
        "timestamp": timestamp,
    }


def produce(cluster, client, topic, records, partition=0, acks="all", linger_ms=0, retries=None):
    """Produce ``records`` in order; one result per record: ("ok", offset) or ("error", Kafka error code)."""
    if client == "confluent":
        config = {"acks": str(acks), "linger.ms": linger_ms}
        if retries is not None:
            config["retries"] = retries
        producer = Producer(confluent_config(cluster, **config))
        results = [None] * len(records)

        def delivered(position):
            def callback(err, msg):
                results[position] = ("error", err.code()) if err else ("ok", msg.offset())

            return callback

        for position, item in enumerate(records):
            extra = {"timestamp": item["timestamp"]} if item["timestamp"] is not None else {}
            producer.produce(
                topic,
                value=json.dumps(item["value"]).encode(),
                key=item["key"],
                headers=item["headers"] or None,
                partition=partition,
                on_delivery=delivered(position),
                **extra,
            )
        assert producer.flush(20) == 0
        return results
    config = {"acks": acks if acks == "all" else int(acks), "linger_ms": linger_ms}
    if acks != "all" or retries is not None:
        config.update(enable_idempotence=False, retries=retries or 0)
    producer = KafkaProducer(**kafka_python_config(cluster, **config))
    try:
        futures = [
            producer.send(
                topic,
                value=json.dumps(item["value"]).encode(),
                key=item["key"],
                headers=item["headers"],
                partition=partition,
                timestamp_ms=item["timestamp"],
            )
            for item in records
        ]
        producer.flush(20)
        results = []
        for future in futures:
            try:
                results.append(("ok", future.get(timeout=20).offset))
            except KafkaError as exc:
                results.append(("error", exc.errno))
        return results
    finally:
        producer.close(5)


def consume(cluster, client, topic, count, partition=0, offset=0, timeout=15):
    """Read ``count`` records from ``offset`` with a manually assigned consumer: [(offset, key, value, headers,
    timestamp)]."""
    got = []
    if client == "confluent":
        consumer = Consumer(confluent_config(cluster, **{"group.id": unique("g"), "enable.auto.commit": False}))
        try:
            consumer.assign([ConfluentPartition(topic, partition, offset)])
            deadline = time.monotonic() + timeout
            while len(got) < count and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                assert msg.error() is None, msg.error()
                got.append(
                    (msg.offset(), msg.key(), json.loads(msg.value()), list(msg.headers() or []), msg.timestamp()[1])
                )
        finally:
            consumer.close()
        return got
    consumer = KafkaConsumer(**kafka_python_config(cluster, enable_auto_commit=False))
    try:
        partition_ = TopicPartition(topic, partition)
        consumer.assign([partition_])
        consumer.seek(partition_, offset)
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            for msg in consumer.poll(timeout_ms=500).get(partition_, []):
                got.append((msg.offset, msg.key, json.loads(msg.value), list(msg.headers), msg.timestamp))
    finally:
        consumer.close()
    return got


def expected_rows(records, first_offset=0):
    return [(first_offset + i, item["key"], item["value"], list(item["headers"])) for i, item in enumerate(records)]


@pytest.mark.parametrize("consumer_client", CLIENTS)
@pytest.mark.parametrize("producer_client", CLIENTS)
def test_json_records_round_trip(kafka_cluster, producer_client, consumer_client):
    topic = create_topic(kafka_cluster, unique("json"), partitions=2)
    records = [record(i) for i in range(5)]
    assert produce(kafka_cluster, producer_client, topic, records, partition=1) == [("ok", i) for i in range(5)]
    got = consume(kafka_cluster, consumer_client, topic, 5, partition=1)
    assert [row[:4] for row in got] == expected_rows(records)
    assert all(abs(row[4] / 1000.0 - time.time()) < 60 for row in got)
    # A consumer starting in the middle gets the rest; partition 0 stayed empty.
    assert [row[0] for row in consume(kafka_cluster, consumer_client, topic, 2, partition=1, offset=3)] == [3, 4]
    assert consume(kafka_cluster, consumer_client, topic, 1, partition=0, timeout=1) == []


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_acks(kafka_cluster, client, acks):
    topic = create_topic(kafka_cluster, unique(f"acks{acks}"))
    # A broker learns that it leads a new partition a moment after the controller says so; an acks=0 record sent to
    # it before then is dropped without an answer, so the test starts once the leader serves the partition.
    assert wait_for(lambda: leader_serves(kafka_cluster, topic), 15, 0.1), f"no leader serves {topic}-0"
    records = [record(i, headers=False) for i in range(3)]
    results = produce(kafka_cluster, client, topic, records, acks=acks)
    if acks == 0:
        assert [status for status, _offset in results] == [
            "ok"
        ] * 3  # no response, so the offsets are the client's guess
    else:
        assert results == [("ok", 0), ("ok", 1), ("ok", 2)]
    other = CLIENTS[1 - CLIENTS.index(client)]
    assert [row[:4] for row in consume(kafka_cluster, other, topic, 3)] == expected_rows(records)


def test_acks_0_produce_gets_no_response(kafka_cluster):
    topic = create_topic(kafka_cluster, unique("acks0raw"), replication_factor=1)
    # Kafka answers an acks=0 produce's error by closing the connection: a leader that has not yet read the new
    # topic's metadata would close it, and this test would read that as the produce's answer.
    assert wait_for(lambda: leader_serves(kafka_cluster, topic), 15, 0.1), f"no leader serves {topic}-0"
    (leader,) = [
        p.leader
        for p in AdminClient(confluent_config(kafka_cluster))
        .list_topics(topic, timeout=10)
        .topics[topic]
        .partitions.values()
    ]
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16)
    builder.append(timestamp=None, key=b"k", value=json.dumps({"acks": 0}).encode(), headers=[])
    builder.close()
    partition = {"index": 0, "records": bytes(builder.buffer())}
    request = ProduceRequest(
        transactional_id=None,
        acks=0,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic, partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(**partition)]
            )
        ],
    )
    with RawClient.to_broker(kafka_cluster, leader) as raw:
        raw.correlation_id += 1
        request.with_header(correlation_id=raw.correlation_id, client_id="conformance")
        raw.send_frame(bytes(request.encode(version=9, header=True)))
        # The next frame on the connection answers the next request: the produce itself got none.
        answer = raw.request(ApiVersionsRequest(client_software_name="conformance", client_software_version="1.0"), 3)
        assert answer.header.correlation_id == raw.correlation_id
    assert [row[:3] for row in consume(kafka_cluster, "kafka-python", topic, 1)] == [(0, b"k", {"acks": 0})]


def leader_serves(cluster, topic, partition=0):
    """Whether the partition's leader answers ListOffsets for it (latest offset) without an error."""
    try:
        list_offsets(cluster, "confluent", topic, -1, partition)
    except KafkaException:
        return False
    return True


def list_offsets(cluster, client, topic, timestamp, partition=0):
    """(offset, timestamp) that ListOffsets finds for ``timestamp`` (-2 earliest, -1 latest, -3 max timestamp);
    offset -1 when nothing is found. confluent-kafka through its admin client, kafka-python through its consumer."""
    if client == "confluent":
        spec = {-2: OffsetSpec.earliest(), -1: OffsetSpec.latest(), -3: OffsetSpec.max_timestamp()}.get(timestamp)
        spec = spec or OffsetSpec.for_timestamp(timestamp)
        admin = AdminClient(confluent_config(cluster))
        part = ConfluentPartition(topic, partition)
        info = admin.list_offsets({part: spec}, request_timeout=10)[part].result(timeout=15)
        return info.offset, info.timestamp
    consumer = KafkaConsumer(**kafka_python_config(cluster, enable_auto_commit=False))
    part = TopicPartition(topic, partition)
    try:
        if timestamp == -2:
            return consumer.beginning_offsets([part])[part], -1
        if timestamp == -1:
            return consumer.end_offsets([part])[part], -1
        assert timestamp >= 0, "kafka-python's consumer has no max-timestamp lookup"
        found = consumer.offsets_for_times({part: timestamp})[part]
        return (found.offset, found.timestamp) if found is not None else (-1, -1)
    finally:
        consumer.close()


@pytest.mark.parametrize("producer_client", CLIENTS)
def test_list_offsets(kafka_cluster, producer_client):
    topic = create_topic(kafka_cluster, unique("offsets"))
    base = int(time.time() * 1000) - 60_000
    # One batch (linger) of three records whose timestamps are not in offset order, then one more batch.
    first = [record(i, timestamp=base + ts) for i, ts in enumerate((1000, 3000, 2000))]
    assert produce(kafka_cluster, producer_client, topic, first, linger_ms=500) == [("ok", 0), ("ok", 1), ("ok", 2)]
    assert produce(kafka_cluster, producer_client, topic, [record(3, timestamp=base + 2500)]) == [("ok", 3)]
    for client in CLIENTS:
        assert list_offsets(kafka_cluster, client, topic, -2)[0] == 0, client
        assert list_offsets(kafka_cluster, client, topic, -1)[0] == 4, client
        assert list_offsets(kafka_cluster, client, topic, base) == (0, base + 1000), client
        assert list_offsets(kafka_cluster, client, topic, base + 1000) == (0, base + 1000), client
        assert list_offsets(kafka_cluster, client, topic, base + 1001) == (1, base + 3000), client
        assert list_offsets(kafka_cluster, client, topic, base + 2600) == (1, base + 3000), client
        assert list_offsets(kafka_cluster, client, topic, base + 3001)[0] == -1, client
    assert list_offsets(kafka_cluster, "confluent", topic, -3) == (1, base + 3000)


@pytest.mark.parametrize("client", CLIENTS)
def test_compacted_topic_refuses_keyless_records(kafka_cluster, client):
    topic = create_topic(kafka_cluster, unique("compact"), config={"cleanup.policy": "compact"})
    assert produce(kafka_cluster, client, topic, [record(0, key=False)], retries=0) == [("error", INVALID_RECORD)]
    keyed = [record(i) for i in range(2)]
    assert produce(kafka_cluster, client, topic, keyed) == [("ok", 0), ("ok", 1)]
    assert [row[:4] for row in consume(kafka_cluster, client, topic, 2)] == expected_rows(keyed)


def test_min_insync_replicas(kafka_cluster_factory):
    cluster = kafka_cluster_factory(2, catch_up_ms=1000)
    topic = create_topic(cluster, "guarded", replication_factor=2, config={"min.insync.replicas": "2"})
    for client in CLIENTS:
        assert produce(cluster, client, topic, [record(0)], retries=0)[0][0] == "ok", client
    cluster.stop(2)
    for client in CLIENTS:
        assert produce(cluster, client, topic, [record(1)], retries=0) == [("error", NOT_ENOUGH_REPLICAS)], client
        assert produce(cluster, client, topic, [record(1)], acks=1)[0][0] == "ok", client
    cluster.start(2)

    def accepted():
        return all(produce(cluster, client, topic, [record(2)], retries=0)[0][0] == "ok" for client in CLIENTS)

    assert wait_for(accepted, 10, 0.2), "acks=all still refused after the replica caught up"
    assert [row[0] for row in consume(cluster, "kafka-python", topic, 6)] == [0, 1, 2, 3, 4, 5]
