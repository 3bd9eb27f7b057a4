"""Seed 000 on real Kafka, for the publishers that are not a SASL user: the guard's snapshot publisher keeps
publishing while every other producer is held at 1 byte/s.

* As User:ANONYMOUS (PLAINTEXT) the guard excludes its publisher's client id under the <default> user, not the user:
  another unauthenticated producer, with another client id, stays held.
* With a client certificate the guard refuses to start, before it changes anything on the cluster, until it is told
  the principal the brokers make of the certificate; then it excludes that principal.

The limits pause the cluster from the first decision: a hard limit of a pebibyte free, which no volume here has."""

import json
import subprocess
import time

import pytest
from guard_processes import start_guard, stop_guard
from held_quotas import held_quotas
from test_integration_targets import connection_options

from ansible_collections.headroom.kafka.plugins.module_utils.internal_principals import PUBLISHER_CLIENT_ID
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter
from kafka_testbed.nodes import principal_of
from kafka_testbed.testing import ClusterFactory
from kafka_testbed.traffic import assert_at_floor, create_topic, produce, wait_until

SNAPSHOT_TOPIC = "__headroom_volume_usage"
TOPIC = "held"
BASE_RATE = 256 << 10
UNLIMITED = 9223372036854775807
PEBIBYTE = 1 << 50
PAUSED = {
    "policy": "graded",
    "soft_limit": {"type": "min_free_bytes", "level": 2 * PEBIBYTE},
    "hard_limit": {"type": "min_free_bytes", "level": PEBIBYTE},
    "missing_data_action": "pause",
    "default_producer_byte_rate": BASE_RATE,
    "expected_brokers": [1],
}
PUBLISHING_SECONDS = 12  # a dozen decisions at the guard's interval of 1 s
FLOOR_SECONDS = 5  # at 1 byte/s, one batch is all that gets through in this time
UNTHROTTLED_BYTES = 4 << 20  # what the publisher's identity offers as fast as the broker takes it; a quarter must pass
DEFAULT_USER = "user=<default>"


@pytest.fixture(params=["anonymous", "certificate"])
def paused_cluster(request, kafka_cluster_root, tmp_path):
    """One broker, PLAINTEXT or mutual TLS, with a topic for a producer to be held on and a guard configuration."""
    factory = ClusterFactory(kafka_cluster_root, engine="kafka")
    try:
        cluster = factory(1, tls=request.param == "certificate")
        create_topic(cluster, TOPIC, replicas_on=1)
        config = tmp_path / "guard.json"
        config.write_text(json.dumps(dict(connection_options(cluster.info), **PAUSED)), encoding="utf-8")
        yield request.param, cluster, str(config)
    finally:
        factory.close()


def held(cluster):
    return held_quotas(None, connection_options(cluster.info))


def snapshot_count(cluster):
    adapter = KafkaAdapter.from_module_params(connection_options(cluster.info))
    try:
        return len(adapter.read_all(SNAPSHOT_TOPIC))
    finally:
        adapter.close()


def topics(cluster):
    adapter = KafkaAdapter.from_module_params(connection_options(cluster.info))
    try:
        return {partition["topic"] for partition in adapter.partitions()}
    finally:
        adapter.close()


def guard_arguments(config, *args):
    return ["--config", config, "--snapshot-topic", SNAPSHOT_TOPIC, *args]


def test_the_publisher_keeps_publishing_while_every_other_producer_is_held(paused_cluster):
    kind, cluster, config = paused_cluster
    extra = []
    if kind == "certificate":
        # Refused before anything changes: no quota, no snapshot topic.
        refused = start_guard(*guard_arguments(config, "--once"), stdout=subprocess.PIPE)
        _out, said_refused = refused.communicate(timeout=120)
        assert refused.returncode == 2, said_refused
        assert "--snapshot-publisher-principal is required with snapshot topic" in said_refused
        assert held(cluster) == {} and SNAPSHOT_TOPIC not in topics(cluster)
        principal = principal_of(cluster.info["tls"]["cert"])
        extra = ["--snapshot-publisher-principal", principal]
        publisher_entity = "user=" + principal[len("User:") :]
    else:
        publisher_entity = f"user=<default>,client_id={PUBLISHER_CLIENT_ID}"
    process = start_guard(*guard_arguments(config, "--interval", "1", *extra))
    try:
        wait_until(lambda: held(cluster).get(DEFAULT_USER) == {"producer_byte_rate": 1}, 90, what="the cluster held")
        wait_until(lambda: snapshot_count(cluster), 60, what="the first snapshot published")
        started, publishing_since = snapshot_count(cluster), time.monotonic()
        # What the broker does with the publisher's identity (its principal and client id): no throttle at all,
        # where another unauthenticated producer, under a client id of its own, is held at the floor.
        publisher_like = produce(
            cluster, TOPIC, seconds=FLOOR_SECONDS, max_bytes=UNTHROTTLED_BYTES, **{"client.id": PUBLISHER_CLIENT_ID}
        )
        if kind == "anonymous":
            assert_at_floor(
                produce(cluster, TOPIC, seconds=FLOOR_SECONDS, **{"client.id": "another-anonymous-producer"}),
                "another unauthenticated producer",
            )
        time.sleep(max(PUBLISHING_SECONDS - (time.monotonic() - publishing_since), 0))
        published = snapshot_count(cluster) - started
        holding = held(cluster)
    finally:
        said = stop_guard(process)
    print(f"{kind}: {published} snapshot records in {PUBLISHING_SECONDS} s while every other producer is held")
    assert holding[DEFAULT_USER] == {"producer_byte_rate": 1}
    assert holding[publisher_entity] == {"producer_byte_rate": UNLIMITED}
    throttle_ms = max(publisher_like.throttles_ms, default=0)
    print(f"{kind}: the publisher's identity got {publisher_like.acked} bytes through, throttle {throttle_ms:.0f} ms")
    assert throttle_ms == 0 and publisher_like.acked >= UNTHROTTLED_BYTES // 4
    assert "excluded from the throttle" in said and "not published" not in said, said
    # Every decision's observation reaches the topic (the guard publishes through a connection per publication).
    assert published >= PUBLISHING_SECONDS // 2
