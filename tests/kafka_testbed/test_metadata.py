"""Conformance: Metadata and DescribeCluster as both client libraries see them, and brokers leaving and rejoining.

- Metadata (confluent-kafka ``list_topics``, kafka-python ``describe_topics``/``ClusterMetadata``) and DescribeCluster
  (kafka-python ``describe_cluster``, raw v0-v2) name every broker with its advertised host and port, the cluster id
  of cluster.json, a live broker as controller, and per partition its leader, replicas and ISR.
- A stopped broker (controlled shutdown) leaves Metadata and DescribeCluster at once; it stays registered as fenced
  (DescribeCluster v2 ``include_fenced_brokers``), as a KRaft controller fences a broker that completed its shutdown.
- A killed (SIGKILL) or paused (SIGSTOP) broker leaves after the session timeout (3 s), not at once, and rejoins after
  start or SIGCONT.
- After a restart the broker's replicas are out of the ISR (under-replicated partitions visible in Metadata) until the
  catch-up time has passed.
"""
# pylint: disable=missing-function-docstring

import signal
import time
import uuid

import pytest
from clients import RawClient, confluent_config, kafka_python_config, metadata_barrier
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.protocol.admin.cluster import DescribeClusterRequest

from kafka_testbed.model.broker import wait_for
from kafka_testbed.testing import ClusterFactory

CLIENTS = ("confluent", "kafka-python")
SESSION_TIMEOUT_S = 3.0
CATCH_UP_MS = 1500


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(cluster, name, partitions=3, replication_factor=3, config=None):
    admin = AdminClient(confluent_config(cluster))
    futures = admin.create_topics(
        [NewTopic(name, partitions, replication_factor, config=config or {})], operation_timeout=10
    )
    futures[name].result(timeout=15)
    # Kafka answers once the controller committed the topic; each broker learns it when its metadata catches up.
    metadata_barrier(cluster)
    return name


def bootstrap_of(cluster, node_id):
    entry = cluster.broker(node_id)
    return f"{entry['host']}:{entry['port']}"


def view(cluster, client, topic, via=1):
    """What a fresh client bootstrapped from broker ``via`` sees: {brokers, fenced, cluster_id, controller_id,
    partitions}.

    ``partitions`` maps each partition to (leader, replicas, sorted ISR, offline replicas or None when the client
    does not expose them)."""
    if client == "confluent":
        admin = AdminClient(confluent_config(cluster, **{"bootstrap.servers": bootstrap_of(cluster, via)}))
        metadata = admin.list_topics(topic, timeout=5)
        partitions = {
            index: (part.leader, list(part.replicas), sorted(part.isrs), None)
            for index, part in metadata.topics[topic].partitions.items()
        }
        return {
            "brokers": {node_id: (b.host, b.port) for node_id, b in metadata.brokers.items()},
            "fenced": None,
            "cluster_id": metadata.cluster_id,
            "controller_id": metadata.controller_id,
            "partitions": partitions,
        }
    admin = KafkaAdminClient(
        **kafka_python_config(cluster, bootstrap_servers=bootstrap_of(cluster, via), request_timeout_ms=5000)
    )
    try:
        # kafka-python sends the requests below to its least loaded node, preferring an idle open connection: asking
        # broker ``via`` by id first opens that connection, so they go to ``via`` rather than to a random broker.
        admin.describe_log_dirs(brokers=[via])
        described = admin.describe_cluster()  # DescribeCluster v2, include_fenced_brokers=True
        topics = admin.describe_topics([topic])
    finally:
        admin.close()
    (entry,) = topics
    partitions = {
        p["partition_index"]: (
            p["leader_id"],
            list(p["replica_nodes"]),
            sorted(p["isr_nodes"]),
            sorted(p["offline_replicas"]),
        )
        for p in entry["partitions"]
    }
    return {
        "brokers": {b["broker_id"]: (b["host"], b["port"]) for b in described["brokers"] if not b["is_fenced"]},
        "fenced": sorted(b["broker_id"] for b in described["brokers"] if b["is_fenced"]),
        "cluster_id": described["cluster_id"],
        "controller_id": described["controller_id"],
        "partitions": partitions,
    }


def describe_cluster_raw(cluster, version=2, include_fenced=True, via=1):
    request = DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=1, include_fenced_brokers=include_fenced
    )
    with RawClient.to_broker(cluster, via) as raw:
        return raw.request(request, version)


def healthy(cluster, topic, client="confluent", via=1):
    ids = sorted(b["id"] for b in cluster.broker_nodes)
    seen = view(cluster, client, topic, via)
    return sorted(seen["brokers"]) == ids and all(
        isr == sorted(replicas) for _l, replicas, isr, _o in seen["partitions"].values()
    )


# -- a healthy cluster ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("client", CLIENTS)
def test_metadata_names_brokers_cluster_and_partitions(kafka_cluster, client):
    topic = create_topic(kafka_cluster, unique("meta"))
    expected_brokers = {b["id"]: (b["host"], b["port"]) for b in kafka_cluster.broker_nodes}
    seen = view(kafka_cluster, client, topic)
    assert seen["brokers"] == expected_brokers
    assert seen["cluster_id"] == kafka_cluster.info["cluster_id"]
    assert seen["controller_id"] in expected_brokers
    assert sorted(seen["partitions"]) == [0, 1, 2]
    for leader, replicas, isr, offline in seen["partitions"].values():
        assert sorted(replicas) == sorted(expected_brokers)
        assert leader == replicas[0]  # the preferred replica leads when every replica is in sync
        assert isr == sorted(replicas)
        assert offline in (None, [])
    # Replica lists start on different brokers, so leadership is spread over the cluster.
    assert {leader for leader, _r, _i, _o in seen["partitions"].values()} == set(expected_brokers)
    if client == "kafka-python":
        assert seen["fenced"] == []


def test_kafka_python_cluster_metadata(kafka_cluster):
    topic = create_topic(kafka_cluster, unique("meta"))
    consumer = KafkaConsumer(**kafka_python_config(kafka_cluster))
    try:
        assert consumer.partitions_for_topic(topic) == {0, 1, 2}
        cluster = consumer._client.cluster  # pylint: disable=protected-access  # kafka-python's ClusterMetadata
        assert sorted(b.node_id for b in cluster.brokers()) == [1, 2, 3]
        assert cluster.cluster_id == kafka_cluster.info["cluster_id"]
        assert cluster.controller.node_id in (1, 2, 3)
        leaders = {cluster.leader_for_partition(TopicPartition(topic, index)) for index in range(3)}
        assert leaders == {1, 2, 3}
    finally:
        consumer.close()


@pytest.mark.parametrize("version", [0, 1, 2])
@pytest.mark.parametrize("include_fenced", [False, True])
def test_describe_cluster_versions(kafka_cluster, version, include_fenced):
    response = describe_cluster_raw(kafka_cluster, version, include_fenced)
    assert response.error_code == 0
    assert response.cluster_id == kafka_cluster.info["cluster_id"]
    assert response.controller_id in (1, 2, 3)
    assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [
        (b["id"], b["host"], b["port"]) for b in kafka_cluster.broker_nodes
    ]
    if version >= 2:
        assert [b.is_fenced for b in response.brokers] == [False, False, False]


@pytest.mark.parametrize(
    "endpoint_type, code, message",
    [
        (2, 114, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"),
        (0, 115, "Unsupported endpoint type 0"),
    ],
    ids=["controller-type", "unknown-type"],
)
def test_describe_cluster_for_another_endpoint_type_is_refused(kafka_cluster, endpoint_type, code, message):
    request = DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=endpoint_type, include_fenced_brokers=False
    )
    with RawClient.to_broker(kafka_cluster, 1) as raw:
        response = raw.request(request, 1)
    # MISMATCHED_ENDPOINT_TYPE / UNSUPPORTED_ENDPOINT_TYPE in a bare response: no cluster id, the default endpoint type.
    assert (
        response.error_code,
        response.error_message,
        response.endpoint_type,
        response.cluster_id,
        response.controller_id,
        response.brokers,
    ) == (code, message, 1, "", -1, [])


# -- brokers leaving and rejoining ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def churn_cluster(kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root)
    try:
        cluster = factory(3, catch_up_ms=CATCH_UP_MS)
        cluster.topic = create_topic(cluster, "churn")
        yield cluster
    finally:
        factory.close()


@pytest.fixture
def churn(churn_cluster):
    """The churn cluster, healthy again (every broker in, every replica in sync) before each test."""
    assert wait_for(lambda: healthy(churn_cluster, churn_cluster.topic), 15), "the churn cluster did not heal"
    return churn_cluster


def _membership(cluster, clients, via=1):
    """Live broker ids as each client sees them, plus the fenced ones of DescribeCluster v2 (include_fenced_brokers)."""
    result = {}
    for client in clients:
        try:
            result[client] = sorted(view(cluster, client, cluster.topic, via)["brokers"])
        except Exception as exc:  # pylint: disable=broad-except  # a client that cannot answer right now has no view
            result[client] = f"no answer: {exc!r}"
    result["fenced"] = sorted(b.broker_id for b in describe_cluster_raw(cluster, via=via).brokers if b.is_fenced)
    return result


def _wait_membership(cluster, clients, expected, timeout):
    """Poll until every client sees exactly ``expected`` live brokers; the last membership seen, and the time it
    took."""
    started = time.monotonic()
    seen = {}

    def reached():
        seen.update(_membership(cluster, clients))
        return all(seen[client] == expected for client in clients)

    wait_for(reached, timeout, 0.1)
    return seen, time.monotonic() - started


def test_stopped_broker_leaves_at_once_and_stays_registered_fenced(churn):
    churn.stop(3)
    try:
        # No waiting: a controlled shutdown completes before the process exits.
        for client in CLIENTS:
            seen = view(churn, client, churn.topic)
            assert sorted(seen["brokers"]) == [1, 2], client
            for leader, replicas, isr, offline in seen["partitions"].values():
                assert leader in (1, 2) and leader != 3
                assert sorted(replicas) == [1, 2, 3]
                assert isr == [1, 2]
                assert offline in (None, [3])
            if client == "kafka-python":
                assert seen["fenced"] == [3]
        assert [b.broker_id for b in describe_cluster_raw(churn, include_fenced=False).brokers] == [1, 2]
        assert [(b.broker_id, b.is_fenced) for b in describe_cluster_raw(churn, include_fenced=True).brokers] == [
            (1, False),
            (2, False),
            (3, True),
        ]
    finally:
        churn.start(3)
    for client in CLIENTS:
        assert sorted(view(churn, client, churn.topic)["brokers"]) == [1, 2, 3], client


@pytest.mark.parametrize("how", ["kill", "pause"])
def test_unresponsive_broker_leaves_within_session_timeout(churn, how):
    victim = 3
    # A paused broker accepts connections but never answers, so departure is timed with clients that ask the bootstrap
    # broker (confluent-kafka, raw DescribeCluster); kafka-python may pick any known broker, so it looks once the paused
    # one has left Metadata (a SIGKILLed broker refuses connections, so kafka-python is timed too).
    timed = CLIENTS if how == "kill" else ("confluent",)
    if how == "kill":
        churn.kill(victim)
    else:
        churn.signal(victim, signal.SIGSTOP)
    try:
        # Not at once: until the session timeout the broker is still in the cluster.
        first, _elapsed = _wait_membership(churn, timed, [1, 2, 3], 1)
        assert all(first[client] == [1, 2, 3] for client in timed) and first["fenced"] == [], first
        gone, elapsed = _wait_membership(churn, timed, [1, 2], 10)
        assert all(gone[client] == [1, 2] for client in timed), gone
        assert gone["fenced"] == [victim]
        assert 1.5 < elapsed < 2 * SESSION_TIMEOUT_S, f"left after {elapsed:.1f}s"
        for client in CLIENTS:
            seen = view(churn, client, churn.topic)
            assert sorted(seen["brokers"]) == [1, 2], client
            assert all(victim not in isr and leader != victim for leader, _r, isr, _o in seen["partitions"].values()), (
                client
            )
            if client == "kafka-python":
                assert seen["fenced"] == [victim]
    finally:
        if how == "kill":
            churn.start(victim)
        else:
            churn.signal(victim, signal.SIGCONT)
    back, _elapsed = _wait_membership(churn, CLIENTS, [1, 2, 3], 5)
    assert all(back[client] == [1, 2, 3] for client in CLIENTS) and back["fenced"] == [], back


@pytest.mark.model_only(
    "--catch-up-ms holds a restarted broker's replicas out of the ISR; Kafka's catch up in milliseconds here"
)
def test_restarted_broker_is_under_replicated_until_caught_up(churn):
    churn.stop(2)
    churn.start(2)
    views = {client: view(churn, client, churn.topic) for client in CLIENTS}
    observed_ms = time.time() * 1000 - churn.state.registrations(3000)[2]["started_ms"]
    assert observed_ms < CATCH_UP_MS, (
        f"looked {observed_ms:.0f} ms after the broker started: too late to see it catching up"
    )
    for client, seen in views.items():
        assert sorted(seen["brokers"]) == [1, 2, 3], client
        for leader, replicas, isr, _offline in seen["partitions"].values():
            assert sorted(replicas) == [1, 2, 3]
            assert isr == [1, 3], f"{client}: ISR {isr} right after the restart"
            assert leader != 2
    for client in CLIENTS:
        assert wait_for(
            lambda c=client: all(
                isr == [1, 2, 3] for _l, _r, isr, _o in view(churn, c, churn.topic)["partitions"].values()
            ),
            CATCH_UP_MS / 1000.0 + 3,
            0.1,
        ), client
