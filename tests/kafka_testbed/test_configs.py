"""DescribeConfigs (32) and IncrementalAlterConfigs (44) pinned to Kafka 4.x.

DescribeConfigs follows Kafka's ConfigHelper: a BROKER resource named after the answering broker lists its whole
config (every key Kafka defines plus every key configured; keys Kafka does not know are sensitive with a null value),
``""`` lists only the dynamic cluster-wide defaults, any other id is INVALID_REQUEST; a TOPIC lists every topic config
with the broker config that supplies its default as synonym. An empty key list means all keys.

IncrementalAlterConfigs runs in Kafka's two steps: the receiving broker validates the request and BROKER resources
(ConfigAdminManager.preprocess: duplicate keys, null values, broker id, DynamicBrokerConfig rules, all INVALID_REQUEST;
APPEND/SUBTRACT on a non-list key INVALID_CONFIG), then the controller applies TOPIC operations, validates the topic's
whole config (INVALID_CONFIG) and only then checks that the topic exists.

Both clients are used where their APIs reach (neither targets the cluster-wide default ``""``, confluent refuses
duplicate keys itself); the raw client covers the rest at exact versions.
"""

import uuid

import pytest
from clients import RawClient, metadata_barrier, segment_bytes
from confluent_kafka import KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, NewTopic, ResourceType
from confluent_kafka.admin import ConfigResource as ConfluentResource
from kafka import errors as kafka_errors
from kafka.admin import ConfigResource as KafkaPythonResource
from kafka.protocol.admin.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest

from kafka_testbed import properties
from kafka_testbed.model import kafka_configs, wire
from kafka_testbed.testing import ClusterFactory

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC, INVALID_CONFIG, INVALID_REQUEST = 0, 3, 17, 40, 42
TOPIC_SOURCE, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5
# Every new Kafka 4.x cluster has eligible leader replicas (KIP-966): the controller records the static
# min.insync.replicas as a dynamic cluster-wide default.
CLUSTER_DEFAULTS = {"min.insync.replicas": "1"}
STATIC_PROPERTIES = {
    "log.retention.ms": "7200000",
    "client.quota.callback.static.produce": "1048576",
    "super.users": "User:ops",
}


@pytest.fixture(scope="module")
def cluster(kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root)
    yield factory(3, extra_properties=STATIC_PROPERTIES)
    factory.close()


@pytest.fixture
def topic(cluster, confluent_admin):
    name = f"configs-{uuid.uuid4().hex[:10]}"
    confluent_admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)
    metadata_barrier(cluster)  # every broker knows the topic before a test asks any of them
    return name


def describe_raw(cluster, resources, node_id=1, version=4, include_synonyms=True):
    """[(resource type, name, keys or None)] -> [(error code, message, {name: entry dict})]."""
    request = wire.build(
        DescribeConfigsRequest,
        version,
        {
            "include_synonyms": include_synonyms,
            "include_documentation": False,
            "resources": [
                {"resource_type": t, "resource_name": n, "configuration_keys": keys} for t, n, keys in resources
            ],
        },
    )
    with RawClient.to_broker(cluster, node_id) as client:
        response = client.request(request, version)
    return [(r.error_code, r.error_message, {c.name: c.to_dict() for c in r.configs}) for r in response.results]


def alter_raw(cluster, resources, validate_only=False, node_id=1, version=1):
    """[(resource type, name, [(key, op, value)])] -> [(error code, message)] in request order."""
    request = wire.build(
        IncrementalAlterConfigsRequest,
        version,
        {
            "validate_only": validate_only,
            "resources": [
                {
                    "resource_type": t,
                    "resource_name": n,
                    "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
                }
                for t, n, ops in resources
            ],
        },
    )
    with RawClient.to_broker(cluster, node_id) as client:
        response = client.request(request, version)
    if not validate_only:
        metadata_barrier(cluster)
    return [(r.error_code, r.error_message) for r in response.responses]


def synonyms_of(entry):
    return [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]]


# -- The two clients behind one interface ---------------------------------------------------------------------------

_CONFLUENT_OPS = {
    SET: AlterConfigOpType.SET,
    DELETE: AlterConfigOpType.DELETE,
    APPEND: AlterConfigOpType.APPEND,
    SUBTRACT: AlterConfigOpType.SUBTRACT,
}
_KAFKA_PYTHON_SOURCES = {
    "DYNAMIC_TOPIC_CONFIG": 1,
    "DYNAMIC_BROKER_CONFIG": 2,
    "DYNAMIC_DEFAULT_BROKER_CONFIG": 3,
    "STATIC_BROKER_CONFIG": 4,
    "DEFAULT_CONFIG": 5,
}


class Confluent:
    def __init__(self, admin, cluster):
        self.admin = admin
        self.cluster = cluster

    def alter(self, resource_type, name, ops, validate_only=False):
        entries = [ConfigEntry(k, v, incremental_operation=_CONFLUENT_OPS[op]) for k, op, v in ops]
        resource = ConfluentResource(ResourceType(resource_type), name, incremental_configs=entries)
        try:
            self.admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(15)
        except KafkaException as exc:
            return exc.args[0].code(), exc.args[0].str()
        if not validate_only:
            metadata_barrier(self.cluster)
        return NONE, None

    def describe(self, resource_type, name):
        """{name: (value, source, read_only, sensitive)}"""
        resource = ConfluentResource(ResourceType(resource_type), name)
        entries = self.admin.describe_configs([resource])[resource].result(15)
        return {k: (e.value, int(e.source), e.is_read_only, e.is_sensitive) for k, e in entries.items()}


class KafkaPython:
    def __init__(self, admin, cluster):
        self.admin = admin
        self.cluster = cluster

    def alter(self, resource_type, name, ops, validate_only=False):
        resource = KafkaPythonResource(
            "TOPIC" if resource_type == TOPIC else "BROKER", name, {k: (op, v) for k, op, v in ops}
        )
        result = self.admin.alter_configs(
            [resource], validate_only=validate_only, raise_on_unknown=False, incremental=True
        )
        if not validate_only:
            metadata_barrier(self.cluster)
        return result["topic" if resource_type == TOPIC else "broker"][name]

    def describe(self, resource_type, name):
        resource = KafkaPythonResource("TOPIC" if resource_type == TOPIC else "BROKER", name)
        result = self.admin.describe_configs([resource], config_filter="all")[
            "topic" if resource_type == TOPIC else "broker"
        ][name]
        return {
            k: (e["value"], _KAFKA_PYTHON_SOURCES[e["config_source"]], e["read_only"], e["is_sensitive"])
            for k, e in result.items()
        }


# How Kafka 4.3 words a change its log cleaner refuses (the reason wrapped in a ConfigException's "Invalid value").
CLEANER_REFUSAL = (
    "Invalid value org.apache.kafka.common.config.ConfigException: {} for configuration Invalid dynamic configuration"
)


def outcome(client, code, message=None):
    """What ``client.alter`` returns for an error code and message."""
    if isinstance(client, KafkaPython):
        return "OK" if code == NONE else str(kafka_errors.for_code(code)(message))
    return code, message


@pytest.fixture(params=["confluent", "kafka-python"])
def client(request, cluster, confluent_admin, kafka_python_admin):
    return (
        Confluent(confluent_admin, cluster)
        if request.param == "confluent"
        else KafkaPython(kafka_python_admin, cluster)
    )


# -- DescribeConfigs: BROKER ----------------------------------------------------------------------------------------


def test_describe_own_broker_lists_every_config(cluster, client):
    described = client.describe(BROKER, "1")
    static = properties.load(cluster.broker(1)["properties"])
    assert set(kafka_configs.BROKER_CONFIGS) - kafka_configs.UNLISTED_UNLESS_SET <= set(described)
    assert not kafka_configs.UNLISTED_UNLESS_SET & set(described)
    assert set(static) <= set(described)
    for name, value in static.items():
        entry = described[name]
        assert entry[1] == (DYNAMIC_DEFAULT if name in CLUSTER_DEFAULTS else STATIC), name
        if name in kafka_configs.BROKER_CONFIGS:
            assert entry[0] == CLUSTER_DEFAULTS.get(name, value) and entry[3] is False, name
    assert described["num.partitions"] == ("1", STATIC, True, False)
    assert described["log.retention.ms"] == ("7200000", STATIC, False, False)
    assert described["background.threads"] == ("10", DEFAULT, False, False)
    assert described["auto.create.topics.enable"] == ("true", DEFAULT, True, False)
    assert described["log.retention.minutes"] == (None, DEFAULT, True, False)


@pytest.mark.parametrize("name", ["client.quota.callback.static.produce", "super.users"])
def test_keys_unknown_to_kafka_are_sensitive(cluster, client, name):
    """KafkaConfig.maybeSensitive: a key of unknown type is reported sensitive, its value null."""
    assert client.describe(BROKER, "1")[name] == (None, STATIC, True, True)
    entry = describe_raw(cluster, [(BROKER, "1", [name])])[0][2][name]
    assert entry["config_type"] == 0
    assert synonyms_of(entry) == [(name, None, STATIC)]


def test_describe_broker_synonyms(cluster):
    """log.retention.ms lists its own static value, then log.retention.hours' default (DynamicBrokerConfig synonyms)."""
    code, message, configs = describe_raw(
        cluster, [(BROKER, "1", ["log.retention.ms", "num.partitions", "log.retention.hours"])]
    )[0]
    assert (code, message) == (NONE, "")
    assert set(configs) == {"log.retention.ms", "num.partitions", "log.retention.hours"}
    assert synonyms_of(configs["log.retention.ms"]) == [
        ("log.retention.ms", "7200000", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    ]
    assert synonyms_of(configs["num.partitions"]) == [("num.partitions", "1", STATIC), ("num.partitions", "1", DEFAULT)]
    assert synonyms_of(configs["log.retention.hours"]) == [("log.retention.hours", "168", DEFAULT)]
    assert configs["num.partitions"]["config_type"] == 3
    without = describe_raw(cluster, [(BROKER, "1", ["log.retention.ms"])], include_synonyms=False)[0][2]
    assert without["log.retention.ms"]["synonyms"] == [] and without["log.retention.ms"]["config_source"] == STATIC


def test_kafka_python_describe_synonyms(kafka_python_admin):
    result = kafka_python_admin.describe_configs(
        [KafkaPythonResource("BROKER", "2", ["log.retention.ms"])], include_synonyms=True, config_filter="all"
    )
    entry = result["broker"]["2"]["log.retention.ms"]
    assert (entry["value"], entry["config_source"], entry["config_type"]) == ("7200000", "STATIC_BROKER_CONFIG", "LONG")
    assert entry["synonyms"] == [
        {"name": "log.retention.ms", "value": "7200000", "source": "STATIC_BROKER_CONFIG"},
        {"name": "log.retention.hours", "value": "168", "source": "DEFAULT_CONFIG"},
    ]


@pytest.mark.parametrize(
    "keys, expected",
    [
        pytest.param(None, None, id="null-means-all"),
        pytest.param([], None, id="empty-means-all"),
        pytest.param(["num.partitions", "no.such.key"], {"num.partitions"}, id="selected"),
    ],
)
def test_configuration_keys(cluster, keys, expected):
    configs = describe_raw(cluster, [(BROKER, "1", keys)])[0][2]
    if expected is None:
        assert set(kafka_configs.BROKER_CONFIGS) - kafka_configs.UNLISTED_UNLESS_SET <= set(configs)
    else:
        assert set(configs) == expected


@pytest.mark.parametrize(
    "name, message",
    [
        pytest.param("2", "Unexpected broker id, expected 1 or empty string, but received 2", id="other-broker"),
        pytest.param("abc", "Broker id must be an integer, but it is: abc", id="not-an-id"),
    ],
)
@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_other_broker_id_is_invalid_request(cluster, name, message, version):
    results = describe_raw(cluster, [(BROKER, name, None), (BROKER, "1", ["num.partitions"])], version=version)
    assert results[0] == (INVALID_REQUEST, message, {})
    assert results[1][0] == NONE and set(results[1][2]) == {"num.partitions"}


def test_cluster_default_resource_and_precedence(cluster):
    """ "" holds only dynamic cluster-wide defaults; a per-broker value beats it; DELETE falls back. (Kafka lets
    log.cleaner.threads at most double or halve in one change: 1 -> 2 cluster-wide, then 1 on broker 1.)"""
    assert cluster_defaults(cluster) == CLUSTER_DEFAULTS
    try:
        assert alter_raw(cluster, [(BROKER, "", [("log.cleaner.threads", SET, "2")])]) == [(NONE, None)]
        assert alter_raw(cluster, [(BROKER, "1", [("log.cleaner.threads", SET, "1")])]) == [(NONE, None)]
        code, _ignored, defaults = describe_raw(cluster, [(BROKER, "", None)], node_id=3)[0]
        assert code == NONE and sorted(defaults) == sorted(["log.cleaner.threads", *CLUSTER_DEFAULTS])
        entry = defaults["log.cleaner.threads"]
        assert (entry["value"], entry["config_source"], entry["read_only"], entry["is_sensitive"]) == (
            "2",
            DYNAMIC_DEFAULT,
            False,
            False,
        )
        assert synonyms_of(entry) == [("log.cleaner.threads", "2", DYNAMIC_DEFAULT)]
        own = describe_raw(cluster, [(BROKER, "1", ["log.cleaner.threads"])])[0][2]["log.cleaner.threads"]
        assert (own["value"], own["config_source"]) == ("1", DYNAMIC_BROKER)
        assert synonyms_of(own) == [
            ("log.cleaner.threads", "1", DYNAMIC_BROKER),
            ("log.cleaner.threads", "2", DYNAMIC_DEFAULT),
            ("log.cleaner.threads", "1", DEFAULT),
        ]
        other = describe_raw(cluster, [(BROKER, "2", ["log.cleaner.threads"])], node_id=2)[0][2]["log.cleaner.threads"]
        assert (other["value"], other["config_source"]) == ("2", DYNAMIC_DEFAULT)
        assert alter_raw(cluster, [(BROKER, "1", [("log.cleaner.threads", DELETE, None)])]) == [(NONE, None)]
        own = describe_raw(cluster, [(BROKER, "1", ["log.cleaner.threads"])])[0][2]["log.cleaner.threads"]
        assert (own["value"], own["config_source"]) == ("2", DYNAMIC_DEFAULT)
    finally:
        alter_raw(cluster, [(BROKER, "", [("log.cleaner.threads", DELETE, None)])])
        alter_raw(cluster, [(BROKER, "1", [("log.cleaner.threads", DELETE, None)])])
    assert cluster_defaults(cluster) == CLUSTER_DEFAULTS


def cluster_defaults(cluster):
    code, message, entries = describe_raw(cluster, [(BROKER, "", None)])[0]
    assert (code, message) == (NONE, "")
    return {name: entry["value"] for name, entry in entries.items()}


# -- DescribeConfigs: TOPIC -----------------------------------------------------------------------------------------


def test_describe_topic_defaults_and_synonyms(cluster, client, confluent_admin):
    name = f"configs-{uuid.uuid4().hex[:10]}"
    confluent_admin.create_topics([NewTopic(name, 1, 1, config={"cleanup.policy": "compact"})])[name].result(10)
    metadata_barrier(cluster)
    described = client.describe(TOPIC, name)
    assert set(described) == set(kafka_configs.TOPIC_CONFIGS)
    assert described["cleanup.policy"] == ("compact", TOPIC_SOURCE, False, False)
    assert described["retention.ms"] == ("7200000", STATIC, False, False)
    assert described["min.insync.replicas"] == ("1", DYNAMIC_DEFAULT, False, False)
    segment = segment_bytes(cluster)
    assert described["segment.bytes"] == segment + (False, False)
    assert described["remote.storage.enable"] == ("false", DEFAULT, False, False)
    configs = describe_raw(cluster, [(TOPIC, name, None)])[0][2]
    assert synonyms_of(configs["cleanup.policy"]) == [
        ("cleanup.policy", "compact", TOPIC_SOURCE),
        ("log.cleanup.policy", "delete", DEFAULT),
    ]
    assert synonyms_of(configs["retention.ms"]) == [
        ("log.retention.ms", "7200000", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    ]
    assert synonyms_of(configs["min.insync.replicas"]) == [
        ("min.insync.replicas", "1", DYNAMIC_DEFAULT),
        ("min.insync.replicas", "1", STATIC),
        ("min.insync.replicas", "1", DEFAULT),
    ]
    assert synonyms_of(configs["segment.bytes"])[-1] == ("log.segment.bytes", "1073741824", DEFAULT)
    assert synonyms_of(configs["segment.bytes"])[0] == ("log.segment.bytes", *segment)
    assert synonyms_of(configs["remote.storage.enable"]) == []
    assert synonyms_of(configs["flush.ms"]) == [] and configs["flush.ms"]["config_source"] == DEFAULT
    assert configs["retention.ms"]["config_type"] == 5 and configs["cleanup.policy"]["config_type"] == 7


def test_describe_topic_errors(cluster, confluent_admin):
    missing = f"missing-{uuid.uuid4().hex[:10]}"
    results = describe_raw(cluster, [(TOPIC, missing, None), (TOPIC, "bad name", None)])
    assert results[0] == (UNKNOWN_TOPIC_OR_PARTITION, "", {})
    assert results[1][0] == INVALID_TOPIC and results[1][2] == {}
    resource = ConfluentResource(ResourceType.TOPIC, missing)
    with pytest.raises(KafkaException) as caught:
        confluent_admin.describe_configs([resource])[resource].result(15)
    assert caught.value.args[0].code() == UNKNOWN_TOPIC_OR_PARTITION


# -- IncrementalAlterConfigs: TOPIC ---------------------------------------------------------------------------------


def test_alter_topic_set_delete_append_subtract(client, topic):
    assert client.alter(TOPIC, topic, [("retention.ms", SET, "1000"), ("max.message.bytes", SET, "2048")]) == outcome(
        client, NONE
    )
    described = client.describe(TOPIC, topic)
    assert described["retention.ms"][:2] == ("1000", TOPIC_SOURCE)
    assert described["max.message.bytes"][:2] == ("2048", TOPIC_SOURCE)
    assert client.alter(TOPIC, topic, [("retention.ms", DELETE, None)]) == outcome(client, NONE)
    described = client.describe(TOPIC, topic)
    assert described["retention.ms"][:2] == ("7200000", STATIC)
    assert described["max.message.bytes"][:2] == ("2048", TOPIC_SOURCE)
    # APPEND starts from the config's default when the topic has no value (ConfigurationControlManager.getParts)
    assert client.alter(TOPIC, topic, [("cleanup.policy", APPEND, "compact")]) == outcome(client, NONE)
    assert client.describe(TOPIC, topic)["cleanup.policy"][:2] == ("delete,compact", TOPIC_SOURCE)
    assert client.alter(TOPIC, topic, [("cleanup.policy", SUBTRACT, "delete")]) == outcome(client, NONE)
    assert client.describe(TOPIC, topic)["cleanup.policy"][:2] == ("compact", TOPIC_SOURCE)
    assert client.alter(TOPIC, topic, [("leader.replication.throttled.replicas", APPEND, "0:1")]) == outcome(
        client, NONE
    )
    assert client.describe(TOPIC, topic)["leader.replication.throttled.replicas"][:2] == ("0:1", TOPIC_SOURCE)


def test_alter_topic_validate_only(client, topic):
    assert client.alter(TOPIC, topic, [("retention.ms", SET, "1000")], validate_only=True) == outcome(client, NONE)
    assert client.describe(TOPIC, topic)["retention.ms"][:2] == ("7200000", STATIC)
    expected = outcome(client, INVALID_CONFIG, "Unknown topic config name: bogus.key")
    assert client.alter(TOPIC, topic, [("bogus.key", SET, "1")], validate_only=True) == expected


@pytest.mark.parametrize(
    "ops, code, message",
    [
        pytest.param(
            [("bogus.key", SET, "1")], INVALID_CONFIG, "Unknown topic config name: bogus.key", id="unknown-config"
        ),
        pytest.param(
            [("retention.ms", SET, "abc")],
            INVALID_CONFIG,
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
            id="not-a-number",
        ),
        pytest.param(
            [("segment.bytes", SET, "1000")],
            INVALID_CONFIG,
            "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576",
            id="below-range",
        ),
        pytest.param(
            [("retention.ms", APPEND, "5")],
            INVALID_CONFIG,
            "Can't APPEND to key retention.ms because its type is not LIST.",
            id="append-non-list",
        ),
        pytest.param(
            [("min.compaction.lag.ms", SET, "10"), ("max.compaction.lag.ms", SET, "5")],
            INVALID_CONFIG,
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
            id="whole-config-checked",
        ),
    ],
)
def test_alter_topic_errors_leave_the_topic_unchanged(client, topic, ops, code, message):
    assert client.alter(TOPIC, topic, [("max.message.bytes", SET, "2048"), *ops]) == outcome(client, code, message)
    assert client.describe(TOPIC, topic)["max.message.bytes"][:2] == ("1048588", DEFAULT)


def test_alter_missing_topic(client):
    missing = f"missing-{uuid.uuid4().hex[:10]}"
    expected = outcome(client, UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{missing}' does not exist.")
    assert client.alter(TOPIC, missing, [("retention.ms", SET, "1000")]) == expected
    # the controller validates the config before it looks for the topic
    expected = outcome(client, INVALID_CONFIG, "Unknown topic config name: bogus.key")
    assert client.alter(TOPIC, missing, [("bogus.key", SET, "1")]) == expected


def test_alter_topic_request_shape_errors(cluster, topic):
    results = alter_raw(
        cluster,
        [
            (TOPIC, topic, [("retention.ms", SET, "1"), ("retention.ms", SET, "2")]),
            (TOPIC, "", [("retention.ms", SET, "1")]),
            (TOPIC, "bad name", [("retention.ms", SET, "1")]),
        ],
    )
    assert results[0] == (INVALID_REQUEST, "Error due to duplicate config keys")
    assert results[1] == (INVALID_REQUEST, "Default topic resources are not allowed.")
    assert results[2][0] == INVALID_TOPIC
    assert alter_raw(cluster, [(TOPIC, topic, [("retention.ms", SET, None), ("segment.ms", SET, None)])]) == [
        (INVALID_REQUEST, "Null value not supported for : retention.ms, segment.ms")
    ]
    assert (
        alter_raw(cluster, [(TOPIC, topic, [("retention.ms", SET, "1")]), (TOPIC, topic, [("segment.ms", SET, "1")])])
        == [(INVALID_REQUEST, "Each resource must appear at most once.")] * 2
    )
    assert (
        describe_raw(cluster, [(TOPIC, topic, ["retention.ms", "segment.ms"])])[0][2]["retention.ms"]["value"]
        == "7200000"
    )


@pytest.mark.parametrize("version", [0, 1])
def test_alter_raw_versions(cluster, topic, version):
    assert alter_raw(cluster, [(TOPIC, topic, [("retention.ms", SET, "4321")])], version=version) == [(NONE, None)]
    assert describe_raw(cluster, [(TOPIC, topic, ["retention.ms"])], version=1)[0][2]["retention.ms"]["value"] == "4321"


# -- IncrementalAlterConfigs: BROKER --------------------------------------------------------------------------------


def test_alter_own_broker(client, cluster):
    try:
        assert client.alter(BROKER, "2", [("log.cleaner.threads", SET, "2"), ("my.custom.key", SET, "x")]) == outcome(
            client, NONE
        )
        described = client.describe(BROKER, "2")
        assert described["log.cleaner.threads"] == ("2", DYNAMIC_BROKER, False, False)
        assert described["my.custom.key"] == (None, DYNAMIC_BROKER, True, True)
        assert client.describe(BROKER, "1")["log.cleaner.threads"] == ("1", DEFAULT, False, False)
        assert client.alter(BROKER, "2", [("log.cleaner.threads", SET, "4")], validate_only=True) == outcome(
            client, NONE
        )
        assert client.describe(BROKER, "2")["log.cleaner.threads"][:2] == ("2", DYNAMIC_BROKER)
        assert client.alter(
            BROKER, "2", [("log.cleaner.threads", DELETE, None), ("my.custom.key", DELETE, None)]
        ) == outcome(client, NONE)
        assert client.describe(BROKER, "2")["log.cleaner.threads"] == ("1", DEFAULT, False, False)
        assert "my.custom.key" not in client.describe(BROKER, "2")
    finally:
        alter_raw(
            cluster,
            [(BROKER, "2", [("log.cleaner.threads", DELETE, None), ("my.custom.key", DELETE, None)])],
            node_id=2,
        )


def test_alter_broker_list_configs(cluster):
    """APPEND/SUBTRACT on a broker LIST key start from Kafka's default
    (ConfigAdminManager.prepareIncrementalConfigs)."""
    try:
        assert alter_raw(cluster, [(BROKER, "", [("log.cleanup.policy", APPEND, "compact")])]) == [(NONE, None)]
        assert describe_raw(cluster, [(BROKER, "", None)])[0][2]["log.cleanup.policy"]["value"] == "delete,compact"
        assert alter_raw(cluster, [(BROKER, "", [("log.cleanup.policy", SUBTRACT, "delete")])]) == [(NONE, None)]
        assert describe_raw(cluster, [(BROKER, "", None)])[0][2]["log.cleanup.policy"]["value"] == "compact"
    finally:
        alter_raw(cluster, [(BROKER, "", [("log.cleanup.policy", DELETE, None)])])


def test_log_cleaner_threads_at_most_double_or_halve_per_change(cluster):
    """Checked by the receiving broker against its own effective value; a cluster-wide default counts where the broker
    has no value of its own."""
    threads = "log.cleaner.threads"
    try:
        assert alter_raw(cluster, [(BROKER, "1", [(threads, SET, "2")])]) == [(NONE, None)]
        assert alter_raw(cluster, [(BROKER, "1", [(threads, SET, "4")])]) == [(NONE, None)]
        assert alter_raw(cluster, [(BROKER, "1", [(threads, SET, "1")])]) == [
            (
                INVALID_REQUEST,
                CLEANER_REFUSAL.format("Log cleaner threads cannot be reduced to less than half the current value 4"),
            )
        ]
        # Back to the default 1 in one step is refused the same way (DELETE changes the effective value too).
        assert alter_raw(cluster, [(BROKER, "1", [(threads, DELETE, None)])]) == [
            (
                INVALID_REQUEST,
                CLEANER_REFUSAL.format("Log cleaner threads cannot be reduced to less than half the current value 4"),
            )
        ]
        assert alter_raw(cluster, [(BROKER, "1", [(threads, SET, "2")])]) == [(NONE, None)]
        assert alter_raw(cluster, [(BROKER, "", [(threads, SET, "0")])], node_id=2) == [(INVALID_REQUEST, "/ by zero")]
        assert alter_raw(cluster, [(BROKER, "", [(threads, SET, "3")])], node_id=2) == [
            (
                INVALID_REQUEST,
                CLEANER_REFUSAL.format(
                    "Log cleaner threads cannot be increased to more than double the current value 1"
                ),
            )
        ]
        assert describe_raw(cluster, [(BROKER, "1", [threads])])[0][2][threads]["value"] == "2"
    finally:
        alter_raw(cluster, [(BROKER, "1", [(threads, DELETE, None)])])
    assert describe_raw(cluster, [(BROKER, "1", [threads])])[0][2][threads]["value"] == "1"


@pytest.mark.parametrize(
    "ops, code, message",
    [
        pytest.param(
            [("num.partitions", SET, "3")],
            INVALID_REQUEST,
            "Cannot update these configs dynamically: [num.partitions]",
            id="read-only",
        ),
        pytest.param(
            [("log.cleaner.threads", SET, "-1")],
            INVALID_REQUEST,
            "Invalid value -1 for configuration log.cleaner.threads: Value must be at least 0",
            id="below-range",
        ),
        pytest.param(
            [("log.cleaner.threads", SET, "many")],
            INVALID_REQUEST,
            "Invalid value many for configuration log.cleaner.threads: Not a number of type INT",
            id="not-a-number",
        ),
        pytest.param(
            [("log.cleaner.threads", APPEND, "2")],
            INVALID_CONFIG,
            "Config value append is not allowed for config key: log.cleaner.threads",
            id="append-non-list",
        ),
        # In range for the ConfigDef, refused by the log cleaner (LogCleaner.validateReconfiguration) from the
        # current 1.
        pytest.param(
            [("log.cleaner.threads", SET, "3")],
            INVALID_REQUEST,
            CLEANER_REFUSAL.format("Log cleaner threads cannot be increased to more than double the current value 1"),
            id="cleaner-threads-tripled",
        ),
        pytest.param([("log.cleaner.threads", SET, "0")], INVALID_REQUEST, "/ by zero", id="no-cleaner-threads"),
    ],
)
def test_alter_broker_errors(client, ops, code, message):
    assert client.alter(BROKER, "1", [("background.threads", SET, "12"), *ops]) == outcome(client, code, message)
    assert client.describe(BROKER, "1")["background.threads"] == ("10", DEFAULT, False, False)


def test_alter_broker_request_shape_errors(cluster):
    results = alter_raw(
        cluster,
        [
            (BROKER, "2", [("log.cleaner.threads", SET, "2")]),
            (BROKER, "x", [("log.cleaner.threads", SET, "2")]),
            (BROKER, "1", [("log.cleaner.threads", SET, "2"), ("log.cleaner.threads", SET, "3")]),
            (BROKER, "", [("num.io.threads", SET, None)]),
        ],
    )
    assert results == [
        (INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2"),
        (INVALID_REQUEST, "Node id must be an integer, but it is: x"),
        (INVALID_REQUEST, "Error due to duplicate config keys"),
        (INVALID_REQUEST, "Null value not supported for : num.io.threads"),
    ]
    assert cluster_defaults(cluster) == CLUSTER_DEFAULTS
    assert (
        describe_raw(cluster, [(BROKER, "2", ["log.cleaner.threads"])], node_id=2)[0][2]["log.cleaner.threads"]["value"]
        == "1"
    )


def test_kafka_python_sends_duplicate_keys_raw(kafka_python_admin):
    """Duplicate keys through KafkaAdminClient's own connection (its alter_configs takes a dict, so it cannot send
    them)."""
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    config = resource.AlterableConfig
    request = IncrementalAlterConfigsRequest(
        validate_only=False,
        resources=[
            resource(
                resource_type=BROKER,
                resource_name="3",
                configs=[
                    config(name="background.threads", config_operation=SET, value="11"),
                    config(name="background.threads", config_operation=DELETE, value=None),
                ],
            )
        ],
    )

    async def send():
        return await kafka_python_admin._manager.send(request, node_id=3)  # pylint: disable=protected-access

    response = kafka_python_admin._manager.run(send)  # pylint: disable=protected-access
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (INVALID_REQUEST, "Error due to duplicate config keys")
    ]
