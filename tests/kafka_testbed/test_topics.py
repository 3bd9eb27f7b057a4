"""CreateTopics (19) and topic auto-creation through Metadata (3), pinned to Kafka 4.x.

Kafka's controller checks a CreateTopics entry in this order (ControllerApis.createTopics,
ReplicationControlManager.createTopics/createTopic): duplicate names in the request (one INVALID_REQUEST entry),
name validity (INVALID_TOPIC_EXCEPTION 17), existence (TOPIC_ALREADY_EXISTS 36), configs (INVALID_CONFIG 40), then
either the manual assignment (INVALID_REQUEST 42 when mixed with counts, INVALID_REPLICA_ASSIGNMENT 39) or the
replication factor (INVALID_REPLICATION_FACTOR 38) before the partition count (INVALID_PARTITIONS 37). validate_only
runs all of it and creates nothing. From v5 a result carries the partition count, replication factor and configs.

A broker auto-creates an unknown topic named in a Metadata request when the request allows it (v4+, always before)
and ``auto.create.topics.enable`` is true, answering UNKNOWN_TOPIC_OR_PARTITION while the controller creates it.
"""

import uuid

import pytest
from clients import RawClient, confluent_config, kafka_python_config, segment_bytes, settled
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from kafka_testbed.model import kafka_configs, wire
from kafka_testbed.testing import ClusterFactory

NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC = 0, 3, 17
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT = 36, 37, 38, 39
INVALID_CONFIG, INVALID_REQUEST = 40, 42
DYNAMIC_TOPIC, DYNAMIC_DEFAULT, STATIC, DEFAULT = 1, 3, 4, 5
DEFAULTS = {"num.partitions": "2", "default.replication.factor": "2"}


@pytest.fixture(scope="module")
def cluster(kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root)
    yield factory(3, extra_properties=DEFAULTS)
    factory.close()


def unique(prefix="topics"):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def topic_spec(name, partitions=-1, replication_factor=-1, assignments=None, configs=None):
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": replication_factor,
        "assignments": [{"partition_index": i, "broker_ids": ids} for i, ids in (assignments or {}).items()],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def create_raw(cluster, specs, validate_only=False, version=7, node_id=1):
    request = wire.build(
        CreateTopicsRequest, version, {"timeout_ms": 10000, "validate_only": validate_only, "topics": specs}
    )
    with RawClient.to_broker(cluster, node_id) as client:
        return client.request(request, version)


def metadata_raw(cluster, names, version=12, allow_auto_creation=False, node_id=1):
    """{topic: (error code, partition count, replication factor of partition 0 or None)}"""
    values = {"topics": [{"name": name} for name in names]}
    if version >= 4:
        values["allow_auto_topic_creation"] = allow_auto_creation
    with RawClient.to_broker(cluster, node_id) as client:
        response = client.request(wire.build(MetadataRequest, version, values), version)
    return {
        t.name: (t.error_code, len(t.partitions), len(t.partitions[0].replica_nodes) if t.partitions else None)
        for t in response.topics
    }


def exists(cluster, name):
    return metadata_raw(cluster, [name])[name][0] == NONE


# CreateTopics answers once the controller has committed the topic; brokers learn of it when their metadata catches
# up, so what a broker says right after is polled for.
def assert_created(cluster, name):
    assert settled(lambda: exists(cluster, name), True), f"{name} did not show up in Metadata"


def assert_metadata(cluster, name, expected, node_id=1):
    assert settled(lambda: metadata_raw(cluster, [name], node_id=node_id)[name], expected) == expected


class Confluent:
    def __init__(self, admin):
        self.admin = admin

    def create(self, name, partitions=-1, replication_factor=-1, assignments=None, configs=None, validate_only=False):
        """(error code, message); assignments is a list of replica lists, partition i = position i."""
        if assignments is not None:
            topic = NewTopic(name, len(assignments), replica_assignment=assignments, config=configs or {})
        else:
            topic = NewTopic(name, partitions, replication_factor, config=configs or {})
        try:
            self.admin.create_topics([topic], validate_only=validate_only)[name].result(15)
        except KafkaException as exc:
            return exc.args[0].code(), exc.args[0].str()
        return NONE, None


class KafkaPython:
    def __init__(self, admin):
        self.admin = admin
        self.last = None

    def create(self, name, partitions=-1, replication_factor=-1, assignments=None, configs=None, validate_only=False):
        spec = {"num_partitions": partitions, "replication_factor": replication_factor, "configs": configs or {}}
        if assignments is not None:
            spec["assignments"] = dict(enumerate(assignments))
        self.last = self.admin.create_topics({name: spec}, validate_only=validate_only, raise_errors=False)["topics"][0]
        return self.last["error_code"], self.last["error_message"]


@pytest.fixture(params=["confluent", "kafka-python"])
def client(request, confluent_admin, kafka_python_admin):
    return Confluent(confluent_admin) if request.param == "confluent" else KafkaPython(kafka_python_admin)


# -- CreateTopics validation ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["", ".", "..", "x" * 250, "bad name", "bad/name", "caf\u00e9", "star*", "trailing-newline\n"]
)
def test_invalid_names(cluster, client, name):
    """INVALID_TOPIC_EXCEPTION; the message names the topic (its wording changed within Kafka 4.x, so only that is
    pinned)."""
    code, message = client.create(name, 1, 1)
    assert code == INVALID_TOPIC
    assert message and (name in message or name == "")


def test_longest_legal_name(cluster, client):
    name = unique("long").ljust(249, "x")
    assert client.create(name, 1, 1) == (NONE, None)
    assert_created(cluster, name)


def test_exists(cluster, client):
    name = unique()
    assert client.create(name, 1, 1) == (NONE, None)
    assert client.create(name, 3, 2) == (TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    assert_metadata(cluster, name, (NONE, 1, 1))


PARTITIONS_MESSAGE = "Number of partitions was set to an invalid non-positive value."
REPLICATION_MESSAGE = "Replication factor must be larger than 0, or -1 to use the default value."


@pytest.mark.parametrize(
    "partitions, replication_factor, code, message",
    [
        pytest.param(0, 1, INVALID_PARTITIONS, PARTITIONS_MESSAGE, id="zero-partitions"),
        pytest.param(-2, 1, INVALID_PARTITIONS, PARTITIONS_MESSAGE, id="negative-partitions"),
        pytest.param(1, 0, INVALID_REPLICATION_FACTOR, REPLICATION_MESSAGE, id="zero-replication"),
        pytest.param(1, -2, INVALID_REPLICATION_FACTOR, REPLICATION_MESSAGE, id="negative-replication"),
        pytest.param(0, 0, INVALID_REPLICATION_FACTOR, REPLICATION_MESSAGE, id="replication-checked-first"),
        pytest.param(
            1,
            4,
            INVALID_REPLICATION_FACTOR,
            "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached "
            "because only 3 broker(s) are registered or some brokers have all their log directories cordoned.",
            id="more-than-brokers",
        ),
        pytest.param(
            -1,
            4,
            INVALID_REPLICATION_FACTOR,
            "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached "
            "because only 3 broker(s) are registered or some brokers have all their log directories cordoned.",
            id="default-partitions-more-than-brokers",
        ),
    ],
)
def test_partition_and_replication_counts(cluster, client, partitions, replication_factor, code, message):
    name = unique()
    if isinstance(client, Confluent) and min(partitions, replication_factor) < -1:
        with pytest.raises(ValueError):  # librdkafka refuses counts below -1 before sending
            client.create(name, partitions, replication_factor)
        return
    assert client.create(name, partitions, replication_factor) == (code, message)
    assert not exists(cluster, name)


@pytest.mark.parametrize(
    "partitions, configs, message",
    [
        pytest.param(1, {"bogus.key": "1"}, "Unknown topic config name: bogus.key", id="unknown"),
        pytest.param(
            1,
            {"retention.ms": "soon"},
            "Invalid value soon for configuration retention.ms: Not a number of type LONG",
            id="bad-value",
        ),
        pytest.param(
            1,
            {"cleanup.policy": "compact,shred"},
            "Invalid value shred for configuration cleanup.policy: String must be one of: compact, delete",
            id="bad-list-entry",
        ),
        pytest.param(
            0, {"bogus.key": "1"}, "Unknown topic config name: bogus.key", id="configs-checked-before-partitions"
        ),
    ],
)
def test_config_errors(cluster, client, partitions, configs, message):
    name = unique()
    assert client.create(name, partitions, 1, configs=configs) == (INVALID_CONFIG, message)
    assert not exists(cluster, name)


def test_null_config_value(cluster):
    name = unique()
    response = create_raw(cluster, [topic_spec(name, 1, 1, configs={"retention.ms": None, "segment.ms": None})])
    result = response.topics[0]
    assert (result.error_code, result.error_message) == (
        INVALID_CONFIG,
        "Null value not supported for topic configs: retention.ms,segment.ms",
    )


def test_defaults_come_from_the_broker(cluster, client):
    name = unique()
    assert client.create(name) == (NONE, None)
    assert_metadata(cluster, name, (NONE, 2, 2))


# -- Manual assignments ---------------------------------------------------------------------------------------------


def test_manual_assignment(cluster, client, confluent_admin):
    name = unique()
    assert client.create(name, assignments=[[1, 2], [2, 3], [3, 1]]) == (NONE, None)
    expected = {0: [1, 2], 1: [2, 3], 2: [3, 1]}

    def replicas():
        partitions = confluent_admin.list_topics(name, timeout=10).topics[name].partitions
        return {index: list(p.replicas) for index, p in partitions.items()}

    assert settled(replicas, expected) == expected


@pytest.mark.parametrize(
    "assignments, code, message",
    [
        pytest.param(
            [[1, 9]],
            INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 9, but no such broker is registered.",
            id="unknown-broker",
        ),
        pytest.param(
            [[2, 2]],
            INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes the broker 2 more than once.",
            id="broker-twice",
        ),
        pytest.param(
            [[1, 2], [3]],
            INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes a partition with 1 replica(s), "
            "but this is not consistent with previous partitions, which have 2 replica(s).",
            id="uneven-replication",
        ),
    ],
)
def test_manual_assignment_errors(cluster, client, assignments, code, message):
    name = unique()
    assert client.create(name, assignments=assignments) == (code, message)
    assert not exists(cluster, name)


@pytest.mark.parametrize(
    "spec, code, message",
    [
        pytest.param(
            {"assignments": {0: [1], 2: [2]}},
            INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
            id="gap",
        ),
        pytest.param(
            {"assignments": {0: []}},
            INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
            id="empty-replicas",
        ),
        pytest.param(
            {"assignments": {0: [1]}, "partitions": 1},
            INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
            id="with-partitions",
        ),
        pytest.param(
            {"assignments": {0: [1]}, "replication_factor": 1},
            INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set to -1.",
            id="with-replication",
        ),
    ],
)
def test_manual_assignment_request_errors(cluster, spec, code, message):
    name = unique()
    result = create_raw(cluster, [topic_spec(name, **spec)]).topics[0]
    assert (result.error_code, result.error_message) == (code, message)
    assert not exists(cluster, name)


# -- validate_only and the response ---------------------------------------------------------------------------------


def test_validate_only_creates_nothing(cluster, client):
    name = unique()
    assert client.create(name, 3, 2, configs={"cleanup.policy": "compact"}, validate_only=True) == (NONE, None)
    assert not exists(cluster, name)
    assert client.create(name, 0, 2, validate_only=True) == (INVALID_PARTITIONS, PARTITIONS_MESSAGE)
    if isinstance(client, KafkaPython):
        created = client.create(name, 3, 2, configs={"cleanup.policy": "compact"}, validate_only=True)
        assert created == (NONE, None)
        assert (client.last["num_partitions"], client.last["replication_factor"]) == (3, 2)
        assert client.last["configs"]["cleanup.policy"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert not exists(cluster, name)


@pytest.mark.parametrize("version", [5, 6, 7])
def test_response_carries_counts_and_configs(cluster, version):
    name = unique()
    result = create_raw(
        cluster,
        [topic_spec(name, 3, 2, configs={"cleanup.policy": "compact", "retention.ms": "60000"})],
        version=version,
    ).topics[0]
    assert (result.error_code, result.error_message, result.num_partitions, result.replication_factor) == (
        NONE,
        None,
        3,
        2,
    )
    configs = {c.name: (c.value, c.config_source, c.read_only, c.is_sensitive) for c in result.configs}
    assert [c.name for c in result.configs] == sorted(kafka_configs.TOPIC_CONFIGS)
    assert configs["cleanup.policy"] == ("compact", DYNAMIC_TOPIC, False, False)
    assert configs["retention.ms"] == ("60000", DYNAMIC_TOPIC, False, False)
    assert configs["segment.bytes"] == segment_bytes(cluster) + (False, False)
    assert configs["min.insync.replicas"] == ("1", DYNAMIC_DEFAULT, False, False)  # KIP-966 records it cluster-wide
    if version >= 7:
        assert result.topic_id.int != 0
    assert_metadata(cluster, name, (NONE, 3, 2))


@pytest.mark.parametrize("version", [2, 3, 4])
def test_response_before_v5_has_no_counts(cluster, version):
    name = unique()
    result = create_raw(cluster, [topic_spec(name, 1, 1)], version=version).topics[0]
    assert result.to_dict() == {"name": name, "error_code": NONE, "error_message": None}
    assert_created(cluster, name)


def test_validate_only_response(cluster):
    name = unique()
    result = create_raw(cluster, [topic_spec(name, 4, 3)], validate_only=True).topics[0]
    assert (result.error_code, result.num_partitions, result.replication_factor) == (NONE, 4, 3)
    assert len(result.configs) == len(kafka_configs.TOPIC_CONFIGS)
    assert not exists(cluster, name)


def test_duplicate_names_and_reserved_topic(cluster):
    dup, fine = unique(), unique()
    response = create_raw(
        cluster,
        [topic_spec(dup, 1, 1), topic_spec(fine, 1, 1), topic_spec(dup, 2, 1), topic_spec("__cluster_metadata", 1, 1)],
    )
    results = {t.name: (t.error_code, t.error_message) for t in response.topics}
    assert len(response.topics) == 3
    assert results == {
        fine: (NONE, None),
        dup: (INVALID_REQUEST, "Duplicate topic name."),
        "__cluster_metadata": (INVALID_REQUEST, "Creation of internal topic __cluster_metadata is prohibited."),
    }
    assert_created(cluster, fine)
    assert not exists(cluster, dup) and not exists(cluster, "__cluster_metadata")


# -- Auto-creation through Metadata ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 9, 12])
def test_metadata_auto_creates_when_allowed(cluster, version):
    name = unique("auto")
    # Kafka 4.x answers the request that triggers the creation with UNKNOWN_TOPIC_OR_PARTITION; the topic follows.
    assert (
        metadata_raw(cluster, [name], version=version, allow_auto_creation=True)[name][0] == UNKNOWN_TOPIC_OR_PARTITION
    )
    assert_metadata(cluster, name, (NONE, 2, 2), node_id=2)


@pytest.mark.parametrize("version", [1, 3])
def test_metadata_before_v4_always_auto_creates(cluster, version):
    name = unique("auto")
    assert metadata_raw(cluster, [name], version=version)[name][0] == UNKNOWN_TOPIC_OR_PARTITION
    assert_created(cluster, name)


def test_metadata_does_not_auto_create_when_not_allowed(cluster):
    name = unique("auto")
    assert metadata_raw(cluster, [name], allow_auto_creation=False)[name][0] == UNKNOWN_TOPIC_OR_PARTITION
    assert metadata_raw(cluster, ["bad name"], allow_auto_creation=True)["bad name"][0] == INVALID_TOPIC
    assert not exists(cluster, name)


def test_clients_auto_create(cluster):
    """A confluent producer and a kafka-python producer auto-create; a confluent consumer
    (allow.auto.create.topics=false) does not."""
    consumer_topic, confluent_topic, kafka_python_topic = unique("auto"), unique("auto"), unique("auto")
    consumer = Consumer(confluent_config(cluster, **{"group.id": "topics-test", "allow.auto.create.topics": False}))
    try:
        assert (
            consumer.list_topics(consumer_topic, timeout=10).topics[consumer_topic].error.code()
            == UNKNOWN_TOPIC_OR_PARTITION
        )
    finally:
        consumer.close()
    assert not exists(cluster, consumer_topic)
    producer = Producer(confluent_config(cluster))
    producer.list_topics(confluent_topic, timeout=10)
    producer.flush(5)
    kafka_python_producer = KafkaProducer(**kafka_python_config(cluster))
    try:
        assert kafka_python_producer.partitions_for(kafka_python_topic) == {0, 1}
    finally:
        kafka_python_producer.close()
    assert metadata_raw(cluster, [confluent_topic, kafka_python_topic]) == {
        confluent_topic: (NONE, 2, 2),
        kafka_python_topic: (NONE, 2, 2),
    }


def test_auto_creation_disabled(kafka_cluster_factory):
    cluster = kafka_cluster_factory(brokers=1, extra_properties={"auto.create.topics.enable": "false"})
    name, confluent_topic = unique("auto"), unique("auto")
    assert metadata_raw(cluster, [name], allow_auto_creation=True)[name][0] == UNKNOWN_TOPIC_OR_PARTITION
    assert metadata_raw(cluster, [name], version=1)[name][0] == UNKNOWN_TOPIC_OR_PARTITION
    producer = Producer(confluent_config(cluster))
    assert (
        producer.list_topics(confluent_topic, timeout=10).topics[confluent_topic].error.code()
        == UNKNOWN_TOPIC_OR_PARTITION
    )
    producer.flush(5)
    assert not exists(cluster, name) and not exists(cluster, confluent_topic)
    assert Confluent(AdminClient(confluent_config(cluster))).create(name, 1, 1) == (NONE, None)
    assert_created(cluster, name)


def test_manual_assignment_with_fenced_brokers(kafka_cluster_factory):
    """ReplicationControlManager: a stopped (fenced) broker may hold a replica while another replica is active; a
    partition whose replicas are all fenced is refused; an unregistered broker id is refused."""
    cluster = kafka_cluster_factory(3)
    cluster.stop(3)
    mixed = create_raw(cluster, [topic_spec(unique("fenced"), assignments={0: [1, 3]})]).topics[0]
    assert (mixed.error_code, mixed.error_message) == (NONE, None)
    only_fenced = create_raw(cluster, [topic_spec(unique("fenced"), assignments={0: [3]})]).topics[0]
    assert only_fenced.error_code == INVALID_REPLICA_ASSIGNMENT
    assert only_fenced.error_message == (
        "All brokers specified in the manual partition assignment for partition 0 are fenced or in controlled shutdown."
    )
    unknown = create_raw(cluster, [topic_spec(unique("fenced"), assignments={0: [1, 9]})]).topics[0]
    assert unknown.error_code == INVALID_REPLICA_ASSIGNMENT
