"""Conformance: injected faults as clients see them.

- Latency injection delays every response of one broker by at least the configured time, and only that broker's.
- Killing the leader of a partition with three replicas moves leadership to an in-sync follower within the session
  timeout; what was acknowledged with acks=all before is still there, and producing goes on at the next offset.
"""
# pylint: disable=missing-function-docstring

import json
import time

import pytest
from clients import RawClient, confluent_config, kafka_python_config
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaConnectionError
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from kafka_testbed.model.broker import wait_for

CLIENTS = ("confluent", "kafka-python")
LATENCY_MS = 400


def round_trip(cluster, node_id):
    with RawClient.to_broker(cluster, node_id) as raw:
        started = time.monotonic()
        assert (
            raw.request(
                ApiVersionsRequest(client_software_name="conformance", client_software_version="1.0"), 3
            ).error_code
            == 0
        )
        return time.monotonic() - started


def produce_one(cluster, client, topic, value, bootstrap=None):
    """Produce one record with acks=all; (offset, seconds from send to acknowledgement)."""
    overrides = (
        {} if bootstrap is None else {"bootstrap.servers" if client == "confluent" else "bootstrap_servers": bootstrap}
    )
    if client == "confluent":
        producer = Producer(confluent_config(cluster, acks="all", **overrides))
        producer.list_topics(topic, timeout=10)  # metadata first, so only the produce is timed
        result = []
        started = time.monotonic()
        producer.produce(
            topic,
            value=json.dumps(value).encode(),
            partition=0,
            on_delivery=lambda err, msg: result.append((err, msg.offset(), time.monotonic())),
        )
        assert producer.flush(20) == 0
        ((err, offset, acknowledged),) = result
        assert err is None, err
        return offset, acknowledged - started
    producer = KafkaProducer(**kafka_python_config(cluster, acks="all", **overrides))
    try:
        producer.partitions_for(topic)
        started = time.monotonic()
        metadata = producer.send(topic, value=json.dumps(value).encode(), partition=0).get(timeout=20)
        return metadata.offset, time.monotonic() - started
    finally:
        producer.close(5)


@pytest.fixture
def slow_broker(kafka_cluster):
    kafka_cluster.state.set_fault(1, "latency_ms", LATENCY_MS)
    try:
        yield kafka_cluster
    finally:
        kafka_cluster.state.set_fault(1, "latency_ms", None)


@pytest.mark.model_only("added response latency")
def test_latency_delays_responses_of_that_broker_only(slow_broker):
    assert round_trip(slow_broker, 1) >= LATENCY_MS / 1000.0
    assert round_trip(slow_broker, 2) < LATENCY_MS / 1000.0
    topic = f"slow-{time.monotonic_ns()}"
    admin = AdminClient(confluent_config(slow_broker))
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1]])], operation_timeout=10)[topic].result(timeout=15)
    for client in CLIENTS:
        _offset, seconds = produce_one(slow_broker, client, topic, {"client": client})
        assert seconds >= LATENCY_MS / 1000.0, f"{client}: acknowledged after {seconds:.3f}s"
    slow_broker.state.set_fault(1, "latency_ms", None)
    assert wait_for(lambda: round_trip(slow_broker, 1) < LATENCY_MS / 1000.0, 5)


def leader(cluster, client, topic, via):
    entry = cluster.broker(via)
    bootstrap = f"{entry['host']}:{entry['port']}"
    if client == "confluent":
        metadata = AdminClient(confluent_config(cluster, **{"bootstrap.servers": bootstrap})).list_topics(
            topic, timeout=5
        )
        return metadata.topics[topic].partitions[0].leader
    admin = KafkaAdminClient(**kafka_python_config(cluster, bootstrap_servers=bootstrap))
    try:
        (described,) = admin.describe_topics([topic])
    except KafkaConnectionError:
        return None  # kafka-python sent it to a broker it still knew of, the killed one: not known yet, ask again
    finally:
        admin.close()
    return described["partitions"][0]["leader_id"]


def read_all(cluster, client, topic, count, bootstrap):
    values = []
    if client == "confluent":
        consumer = Consumer(
            confluent_config(
                cluster,
                **{"bootstrap.servers": bootstrap, "group.id": f"g-{time.monotonic_ns()}", "enable.auto.commit": False},
            )
        )
        consumer.assign([ConfluentPartition(topic, 0, 0)])
        deadline = time.monotonic() + 15
        while len(values) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append((msg.offset(), json.loads(msg.value())))
        consumer.close()
        return values
    consumer = KafkaConsumer(**kafka_python_config(cluster, bootstrap_servers=bootstrap, enable_auto_commit=False))
    part = TopicPartition(topic, 0)
    consumer.assign([part])
    consumer.seek(part, 0)
    deadline = time.monotonic() + 15
    while len(values) < count and time.monotonic() < deadline:
        values += [(msg.offset, json.loads(msg.value)) for msg in consumer.poll(timeout_ms=500).get(part, [])]
    consumer.close()
    return values


def test_killing_the_leader_moves_leadership(kafka_cluster_factory):
    cluster = kafka_cluster_factory(3)
    topic = "failover"
    admin = AdminClient(confluent_config(cluster))
    admin.create_topics([NewTopic(topic, 1, 3)], operation_timeout=10)[topic].result(timeout=15)
    before = [produce_one(cluster, client, topic, {"before": client})[0] for client in CLIENTS]
    assert before == [0, 1]
    old = leader(cluster, "confluent", topic, 1)
    survivors = [b["id"] for b in cluster.broker_nodes if b["id"] != old]
    cluster.kill(old)
    killed = time.monotonic()
    for client in CLIENTS:
        moved = wait_for(lambda c=client: leader(cluster, c, topic, survivors[0]) in survivors, 8, 0.1)
        assert moved, f"{client}: leadership did not move from the killed broker {old}"
        assert time.monotonic() - killed < 6.0
    bootstrap = ",".join(f"{cluster.broker(node)['host']}:{cluster.broker(node)['port']}" for node in survivors)
    after = [produce_one(cluster, client, topic, {"after": client}, bootstrap)[0] for client in CLIENTS]
    assert after == [2, 3]
    expected = [
        (0, {"before": "confluent"}),
        (1, {"before": "kafka-python"}),
        (2, {"after": "confluent"}),
        (3, {"after": "kafka-python"}),
    ]
    for client in CLIENTS:
        assert read_all(cluster, client, topic, 4, bootstrap) == expected, client
