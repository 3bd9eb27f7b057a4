"""Table tests: the test broker's configuration knowledge answers as a Kafka 4.3 broker does."""

import pytest

from kafka_testbed.model import kafka_configs

TOPIC_SEGMENT_MIN = "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"
THROTTLED_FORMAT = (
    "must be the literal '*' or a list of replicas in the following format: "
    "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
)


def test_table_sizes():
    """Every documented Kafka 4.3 broker config, all 33 topic configs, 28 of them with a broker synonym."""
    assert len(kafka_configs.BROKER_CONFIGS) == 343
    assert len(kafka_configs.TOPIC_CONFIGS) == 33
    assert len(kafka_configs.TOPIC_BROKER_SYNONYMS) == 28


@pytest.mark.parametrize(
    "name, config_type, default, mode",
    [
        ("node.id", "INT", None, kafka_configs.READ_ONLY),
        ("process.roles", "LIST", None, kafka_configs.READ_ONLY),
        ("controller.listener.names", "LIST", None, kafka_configs.READ_ONLY),
        ("controller.quorum.bootstrap.servers", "LIST", "", kafka_configs.READ_ONLY),
        ("metadata.log.dir", "STRING", None, kafka_configs.READ_ONLY),
        ("log.dirs", "LIST", None, kafka_configs.READ_ONLY),
        ("listeners", "LIST", "PLAINTEXT://:9092", kafka_configs.PER_BROKER),
        ("advertised.listeners", "LIST", None, kafka_configs.READ_ONLY),
        (
            "listener.security.protocol.map",
            "STRING",
            "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
            kafka_configs.PER_BROKER,
        ),
        ("auto.create.topics.enable", "BOOLEAN", "true", kafka_configs.READ_ONLY),
        ("default.replication.factor", "INT", "1", kafka_configs.READ_ONLY),
        ("num.partitions", "INT", "1", kafka_configs.READ_ONLY),
        ("min.insync.replicas", "INT", "1", kafka_configs.CLUSTER_WIDE),
        ("message.max.bytes", "INT", "1048588", kafka_configs.CLUSTER_WIDE),
        ("log.retention.ms", "LONG", None, kafka_configs.CLUSTER_WIDE),
        ("log.retention.hours", "INT", "168", kafka_configs.READ_ONLY),
        ("log.retention.bytes", "LONG", "-1", kafka_configs.CLUSTER_WIDE),
        ("log.segment.bytes", "INT", "1073741824", kafka_configs.CLUSTER_WIDE),
        ("log.cleanup.policy", "LIST", "delete", kafka_configs.CLUSTER_WIDE),
        ("num.io.threads", "INT", "8", kafka_configs.CLUSTER_WIDE),
        ("num.network.threads", "INT", "3", kafka_configs.CLUSTER_WIDE),
        ("num.recovery.threads.per.data.dir", "INT", "2", kafka_configs.CLUSTER_WIDE),
        ("num.replica.fetchers", "INT", "1", kafka_configs.CLUSTER_WIDE),
        ("quota.window.num", "INT", "11", kafka_configs.READ_ONLY),
        ("quota.window.size.seconds", "INT", "1", kafka_configs.READ_ONLY),
        ("client.quota.callback.class", "CLASS", None, kafka_configs.READ_ONLY),
        ("authorizer.class.name", "STRING", "", kafka_configs.READ_ONLY),
        ("offsets.topic.replication.factor", "SHORT", "3", kafka_configs.READ_ONLY),
        ("ssl.keystore.password", "PASSWORD", None, kafka_configs.PER_BROKER),
        ("ssl.enabled.protocols", "LIST", "TLSv1.2,TLSv1.3", kafka_configs.PER_BROKER),
        ("sasl.enabled.mechanisms", "LIST", "GSSAPI", kafka_configs.PER_BROKER),
        ("sasl.mechanism.inter.broker.protocol", "STRING", "GSSAPI", kafka_configs.PER_BROKER),
        ("log.cleaner.io.max.bytes.per.second", "DOUBLE", "1.7976931348623157E308", kafka_configs.CLUSTER_WIDE),
        ("group.consumer.assignors", "LIST", "uniform,range", kafka_configs.READ_ONLY),
        ("leader.replication.throttled.rate", "LONG", "9223372036854775807", kafka_configs.CLUSTER_WIDE),
        ("metric.reporters", "LIST", "org.apache.kafka.common.metrics.JmxReporter", kafka_configs.CLUSTER_WIDE),
    ],
)
def test_broker_definitions(name, config_type, default, mode):
    """Type, default (as DescribeConfigs renders it) and update mode of the keys a server.properties sets."""
    definition = kafka_configs.BROKER_CONFIGS[name]
    assert (definition.type, definition.default, definition.update_mode) == (config_type, default, mode)


@pytest.mark.parametrize(
    "name",
    [
        "log.message.format.version",
        "message.downconversion.enable",
        "zookeeper.connect",
        "super.users",
        "broker.id.generation.enable",
    ],
)
def test_keys_kafka_4_does_not_define(name):
    """Keys removed in Kafka 4 or defined outside KafkaConfig are unknown."""
    assert name not in kafka_configs.BROKER_CONFIGS
    assert name not in kafka_configs.TOPIC_CONFIGS


@pytest.mark.parametrize(
    "topic_key, broker_key",
    [
        ("retention.ms", "log.retention.ms"),
        ("retention.bytes", "log.retention.bytes"),
        ("segment.bytes", "log.segment.bytes"),
        ("segment.ms", "log.roll.ms"),
        ("segment.jitter.ms", "log.roll.jitter.ms"),
        ("segment.index.bytes", "log.index.size.max.bytes"),
        ("cleanup.policy", "log.cleanup.policy"),
        ("max.message.bytes", "message.max.bytes"),
        ("min.insync.replicas", "min.insync.replicas"),
        ("compression.type", "compression.type"),
        ("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"),
        ("file.delete.delay.ms", "log.segment.delete.delay.ms"),
        ("flush.messages", "log.flush.interval.messages"),
        ("flush.ms", "log.flush.interval.ms"),
        ("delete.retention.ms", "log.cleaner.delete.retention.ms"),
        ("local.retention.ms", "log.local.retention.ms"),
        ("unclean.leader.election.enable", "unclean.leader.election.enable"),
    ],
)
def test_topic_broker_synonyms(topic_key, broker_key):
    """ServerTopicConfigSynonyms: the broker key that gives a topic config its default."""
    assert kafka_configs.TOPIC_BROKER_SYNONYMS[topic_key] == broker_key
    assert kafka_configs.TOPIC_CONFIGS[topic_key].synonym == broker_key


@pytest.mark.parametrize(
    "topic_key",
    [
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
        "remote.storage.enable",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
    ],
)
def test_topic_configs_without_broker_synonym(topic_key):
    """Topic-only keys have no server default property."""
    assert topic_key not in kafka_configs.TOPIC_BROKER_SYNONYMS


@pytest.mark.parametrize("topic_key, broker_key", sorted(kafka_configs.TOPIC_BROKER_SYNONYMS.items()))
def test_every_synonym_is_a_cluster_wide_broker_config_of_the_same_type(topic_key, broker_key):
    """DynamicLogConfig makes exactly the synonyms' broker keys reconfigurable."""
    assert kafka_configs.BROKER_CONFIGS[broker_key].update_mode == kafka_configs.CLUSTER_WIDE
    assert kafka_configs.BROKER_CONFIGS[broker_key].type == kafka_configs.TOPIC_CONFIGS[topic_key].type


@pytest.mark.parametrize("topic_key", sorted(kafka_configs.TOPIC_CONFIGS))
def test_topic_default_is_what_an_unconfigured_broker_gives(topic_key):
    """LogConfig's defaults equal what KafkaConfig's defaults give a topic through the synonyms."""
    assert kafka_configs.TOPIC_CONFIGS[topic_key].update_mode == kafka_configs.TOPIC
    assert kafka_configs.topic_default_from_broker(topic_key) == kafka_configs.TOPIC_CONFIGS[topic_key].default


@pytest.mark.parametrize(
    "topic_key, broker_values, expected",
    [
        ("retention.ms", {"log.retention.hours": "1"}, "3600000"),
        ("retention.ms", {"log.retention.minutes": "5", "log.retention.hours": "1"}, "300000"),
        ("retention.ms", {"log.retention.ms": "1000", "log.retention.minutes": "5"}, "1000"),
        ("retention.ms", {"log.retention.ms": "-5"}, "-1"),
        ("segment.ms", {"log.roll.hours": "2"}, "7200000"),
        ("segment.jitter.ms", {"log.roll.jitter.hours": "1"}, "3600000"),
        ("flush.ms", {"log.flush.scheduler.interval.ms": "2000"}, "2000"),
        ("cleanup.policy", {"log.cleanup.policy": " compact , delete "}, "compact,delete"),
        ("unclean.leader.election.enable", {"unclean.leader.election.enable": "TRUE"}, "true"),
        ("min.insync.replicas", {"min.insync.replicas": "2"}, "2"),
        ("remote.storage.enable", {"remote.log.storage.system.enable": "true"}, "false"),
    ],
)
def test_topic_default_from_broker_values(topic_key, broker_values, expected):
    """Broker values reach topics through synonyms, hours and minutes converted to milliseconds."""
    assert kafka_configs.topic_default_from_broker(topic_key, broker_values) == expected


@pytest.mark.parametrize(
    "name, topic, sensitive",
    [
        ("ssl.keystore.password", False, True),
        ("ssl.key.password", False, True),
        ("sasl.jaas.config", False, True),
        ("delegation.token.secret.key", False, True),
        ("listener.name.external.ssl.keystore.password", False, True),
        ("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", False, True),
        ("listener.name.external.ssl.keystore.location", False, False),
        ("super.users", False, True),
        ("client.quota.callback.static.produce", False, True),
        ("client.quota.callback.class", False, False),
        ("num.io.threads", False, False),
        ("log.dirs", False, False),
        ("retention.ms", True, False),
        ("cleanup.policy", True, False),
        ("log.retention.ms", True, True),
        ("no.such.topic.key", True, True),
    ],
)
def test_is_sensitive(name, topic, sensitive):
    """Unknown keys and PASSWORD keys are sensitive; listener overrides take their base key's type."""
    assert kafka_configs.is_sensitive(name, topic=topic) is sensitive


@pytest.mark.parametrize(
    "name, topic, code",
    [
        ("auto.create.topics.enable", False, 1),
        ("metadata.log.dir", False, 2),
        ("node.id", False, 3),
        ("offsets.topic.replication.factor", False, 4),
        ("log.retention.bytes", False, 5),
        ("log.cleaner.min.cleanable.ratio", False, 6),
        ("log.dirs", False, 7),
        ("client.quota.callback.class", False, 8),
        ("ssl.truststore.password", False, 9),
        ("super.users", False, 0),
        ("listener.name.internal.ssl.truststore.password", False, 9),
        ("listener.name.internal.max.connections", False, 3),
        ("preallocate", True, 1),
        ("compression.type", True, 2),
        ("segment.bytes", True, 3),
        ("retention.ms", True, 5),
        ("min.cleanable.dirty.ratio", True, 6),
        ("cleanup.policy", True, 7),
        ("message.max.bytes", True, 0),
    ],
)
def test_type_code(name, topic, code):
    """DescribeConfigs v3+ ConfigType codes, UNKNOWN for keys Kafka does not define."""
    assert kafka_configs.type_code(name, topic=topic) == code


@pytest.mark.parametrize(
    "name, read_only",
    [
        ("node.id", True),
        ("log.dirs", True),
        ("log.retention.hours", True),
        ("auto.create.topics.enable", True),
        ("quota.window.num", True),
        ("log.retention.ms", False),
        ("num.io.threads", False),
        ("listeners", False),
        ("ssl.keystore.location", False),
        ("listener.name.external.ssl.keystore.location", True),
        ("client.quota.callback.static.produce", True),
    ],
)
def test_is_read_only(name, read_only):
    """read_only is false only for the exact keys that are dynamically updatable."""
    assert kafka_configs.is_read_only(name) is read_only


@pytest.mark.parametrize(
    "name, value, error",
    [
        ("retention.ms", "86400000", None),
        ("retention.ms", "-1", None),
        ("retention.ms", " 1000 ", None),
        ("retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
        ("retention.ms", "abc", "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
        ("retention.ms", "1.5", "Invalid value 1.5 for configuration retention.ms: Not a number of type LONG"),
        ("retention.ms", "1_000", "Invalid value 1_000 for configuration retention.ms: Not a number of type LONG"),
        (
            "retention.ms",
            "9223372036854775808",
            "Invalid value 9223372036854775808 for configuration retention.ms: Not a number of type LONG",
        ),
        ("retention.bytes", "-100", None),
        ("segment.bytes", "1048576", None),
        ("segment.bytes", "1000", TOPIC_SEGMENT_MIN),
        (
            "segment.bytes",
            "2147483648",
            "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT",
        ),
        ("min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
        ("max.message.bytes", "-1", "Invalid value -1 for configuration max.message.bytes: Value must be at least 0"),
        ("cleanup.policy", "compact", None),
        ("cleanup.policy", "compact,delete", None),
        ("cleanup.policy", "delete, compact", None),
        ("cleanup.policy", "", None),
        (
            "cleanup.policy",
            "foo",
            "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete",
        ),
        (
            "cleanup.policy",
            "Delete",
            "Invalid value Delete for configuration cleanup.policy: String must be one of: compact, delete",
        ),
        ("cleanup.policy", "delete,delete", "Configuration 'cleanup.policy' values must not be duplicated."),
        ("cleanup.policy", "delete,", "Configuration 'cleanup.policy' values must not be empty."),
        ("compression.type", "zstd", None),
        (
            "compression.type",
            "none",
            "Invalid value none for configuration compression.type: String must be one of: uncompressed, zstd, lz4, "
            "snappy, gzip, producer",
        ),
        ("compression.gzip.level", "-1", None),
        ("compression.gzip.level", "9", None),
        (
            "compression.gzip.level",
            "0",
            "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1",
        ),
        (
            "compression.lz4.level",
            "18",
            "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17",
        ),
        (
            "compression.zstd.level",
            "-131073",
            "Invalid value -131073 for configuration compression.zstd.level: Value must be at least -131072",
        ),
        ("message.timestamp.type", "LogAppendTime", None),
        (
            "message.timestamp.type",
            "logappendtime",
            "Invalid value logappendtime for configuration message.timestamp.type: String must be one of: CreateTime, "
            "LogAppendTime",
        ),
        ("min.cleanable.dirty.ratio", "0.1", None),
        ("min.cleanable.dirty.ratio", "1", None),
        (
            "min.cleanable.dirty.ratio",
            "1.5",
            "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1",
        ),
        (
            "min.cleanable.dirty.ratio",
            "2",
            "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1",
        ),
        (
            "min.cleanable.dirty.ratio",
            "-0.5",
            "Invalid value -0.5 for configuration min.cleanable.dirty.ratio: Value must be at least 0",
        ),
        (
            "min.cleanable.dirty.ratio",
            "half",
            "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE",
        ),
        ("unclean.leader.election.enable", "TRUE", None),
        (
            "preallocate",
            "yes",
            "Invalid value yes for configuration preallocate: Expected value to be either true or false",
        ),
        ("leader.replication.throttled.replicas", "*", None),
        ("leader.replication.throttled.replicas", "0:1,1:2", None),
        ("leader.replication.throttled.replicas", "", None),
        (
            "follower.replication.throttled.replicas",
            "0-1",
            "Invalid value [0-1] for configuration follower.replication.throttled.replicas: "
            "follower.replication.throttled.replicas " + THROTTLED_FORMAT,
        ),
        ("local.retention.ms", "-2", None),
        (
            "local.retention.ms",
            "-3",
            "Invalid value -3 for configuration local.retention.ms: Value must be at least -2",
        ),
        (
            "max.compaction.lag.ms",
            "0",
            "Invalid value 0 for configuration max.compaction.lag.ms: Value must be at least 1",
        ),
        (
            "remote.storage.enable",
            "true",
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log "
            "storage.",
        ),
        ("retention.hours", "1", "Unknown topic config name: retention.hours"),
        ("log.retention.ms", "1", "Unknown topic config name: log.retention.ms"),
        ("message.format.version", "3.0", "Unknown topic config name: message.format.version"),
        ("retention.ms", None, "Null value not supported for topic configs: retention.ms"),
    ],
)
def test_validate_topic_config(name, value, error):
    """One topic key: Kafka's INVALID_CONFIG message, or None."""
    assert kafka_configs.validate_topic_config(name, value) == error


@pytest.mark.parametrize(
    "configs, kwargs, error",
    [
        (
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
            {},
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
        ({"foo": "1", "retention.ms": "x"}, {}, "Unknown topic config name: foo"),
        (
            {"retention.ms": "x", "segment.bytes": "1"},
            {},
            "Invalid value 1 for configuration segment.bytes: Value must be at least 1048576",
        ),
        ({"a": None, "b": None}, {}, "Null value not supported for topic configs: a,b"),
        ({"remote.storage.enable": "true"}, {"remote_storage_system_enabled": True}, None),
        (
            {"remote.storage.enable": "true", "cleanup.policy": "compact"},
            {"remote_storage_system_enabled": True},
            "Remote log storage only supports topics with cleanup.policy=delete or cleanup.policy being an empty list.",
        ),
        (
            {"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "200"},
            {"remote_storage_system_enabled": True},
            "Invalid value 200 for configuration local.retention.bytes: Value must not be more than retention.bytes "
            "property value: 100",
        ),
        (
            {"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "-1"},
            {"remote_storage_system_enabled": True},
            "Invalid value -1 for configuration local.retention.ms: Value must not be -1 as retention.ms value is set "
            "as 1000.",
        ),
        (
            {"remote.storage.enable": "false"},
            {"existing": {"remote.storage.enable": "true"}},
            "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote "
            "data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you "
            "want to disable remote storage and delete all remote data, please set "
            "`remote.storage.enable=false,remote.log.delete.on.disable=true`.",
        ),
        (
            {"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"},
            {"existing": {"remote.storage.enable": "true"}},
            None,
        ),
        (
            {"min.compaction.lag.ms": "10"},
            {"defaults": {"max.compaction.lag.ms": "5"}},
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
        ({"internal.segment.bytes": "1024"}, {}, None),
    ],
)
def test_validate_topic_configs(configs, kwargs, error):
    """Whole topic config sets: order of checks, cross-key rules, remote storage rules."""
    assert kafka_configs.validate_topic_configs(configs, **kwargs) == error


@pytest.mark.parametrize(
    "name, value, per_broker, error",
    [
        ("log.retention.ms", "86400000", False, None),
        ("log.retention.ms", "86400000", True, None),
        ("num.io.threads", "16", False, None),
        ("min.insync.replicas", "2", False, None),
        ("message.max.bytes", "2000000", False, None),
        ("log.cleanup.policy", "compact", False, None),
        ("log.retention.hours", "1", False, "Cannot update these configs dynamically: [log.retention.hours]"),
        (
            "auto.create.topics.enable",
            "false",
            True,
            "Cannot update these configs dynamically: [auto.create.topics.enable]",
        ),
        ("node.id", "3", True, "Cannot update these configs dynamically: [node.id]"),
        (
            "client.quota.callback.class",
            "x.Y",
            True,
            "Cannot update these configs dynamically: [client.quota.callback.class]",
        ),
        ("quota.window.num", "5", True, "Cannot update these configs dynamically: [quota.window.num]"),
        (
            "ssl.keystore.location",
            "ks.p12",
            True,
            "These security configs can be dynamically updated only per-listener using the listener prefix: "
            "[ssl.keystore.location]",
        ),
        ("listener.name.external.ssl.keystore.location", "ks.p12", True, None),
        (
            "listener.name.external.ssl.keystore.location",
            "ks.p12",
            False,
            "Cannot update these configs at default cluster level, broker id must be specified: "
            "[listener.name.external.ssl.keystore.location]",
        ),
        ("listener.name.external.max.connections", "100", False, None),
        (
            "listener.name.external.max.connections",
            "many",
            False,
            "Invalid value many for configuration max.connections: Not a number of type INT",
        ),
        (
            "listeners",
            "PLAINTEXT://:9092",
            False,
            "Cannot update these configs at default cluster level, broker id must be specified: [listeners]",
        ),
        ("sasl.enabled.mechanisms", "PLAIN", True, None),
        (
            "num.io.threads",
            "abc",
            False,
            "Invalid value abc for configuration num.io.threads: Not a number of type INT",
        ),
        ("num.io.threads", "0", True, "Invalid value 0 for configuration num.io.threads: Value must be at least 1"),
        (
            "log.segment.bytes",
            "1",
            False,
            "Invalid value 1 for configuration log.segment.bytes: Value must be at least 1048576",
        ),
        (
            "log.cleanup.policy",
            "foo",
            False,
            "Invalid value foo for configuration log.cleanup.policy: String must be one of: compact, delete",
        ),
        (
            "unclean.leader.election.enable",
            "maybe",
            False,
            "Invalid value maybe for configuration unclean.leader.election.enable: Expected value to be either true "
            "or false",
        ),
        (
            "log.cleaner.min.cleanable.ratio",
            "3",
            False,
            "Invalid value 3.0 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1",
        ),
        ("super.users", "User:admin", False, None),
        ("client.quota.callback.static.produce", "1000", True, None),
        ("my.plugin.setting", "x", False, None),
        ("num.io.threads", None, True, "Null value not supported for : num.io.threads"),
    ],
)
def test_validate_dynamic_broker_update(name, value, per_broker, error):
    """One broker key set through IncrementalAlterConfigs on a node id (per_broker) or on the cluster default."""
    assert kafka_configs.validate_dynamic_broker_update(name, value, per_broker=per_broker) == error


def test_dynamic_broker_update_order_of_checks():
    """Non-dynamic keys are reported before bad values, bad values before per-broker keys at cluster level."""
    assert (
        kafka_configs.validate_dynamic_broker_updates({"num.io.threads": "x", "log.dirs": "d"}, per_broker=True)
        == "Cannot update these configs dynamically: [log.dirs]"
    )
    assert (
        kafka_configs.validate_dynamic_broker_updates(
            {"listeners": "PLAINTEXT://:1", "num.io.threads": "x"}, per_broker=False
        )
        == "Invalid value x for configuration num.io.threads: Not a number of type INT"
    )


def test_dynamic_broker_update_lists_every_offending_key_in_java_set_order():
    """java.util.HashSet iteration order (by bucket of String.hashCode), as a JVM prints these sets."""
    assert (
        kafka_configs.validate_dynamic_broker_updates({"log.dirs": "d", "node.id": "1"}, per_broker=True)
        == "Cannot update these configs dynamically: [node.id, log.dirs]"
    )
    four = {"log.dirs": "d", "node.id": "1", "auto.create.topics.enable": "false", "quota.window.num": "3"}
    assert (
        kafka_configs.validate_dynamic_broker_updates(four, per_broker=True)
        == "Cannot update these configs dynamically: [node.id, quota.window.num, auto.create.topics.enable, log.dirs]"
    )


@pytest.mark.parametrize(
    "name, op, topic, error",
    [
        ("cleanup.policy", "APPEND", True, None),
        ("leader.replication.throttled.replicas", "subtract", True, None),
        ("retention.ms", "APPEND", True, "Can't APPEND to key retention.ms because its type is not LIST."),
        ("retention.ms", "SET", True, None),
        ("log.cleanup.policy", "APPEND", False, None),
        ("num.io.threads", "SUBTRACT", False, "Config value subtract is not allowed for config key: num.io.threads"),
        ("num.io.threads", "DELETE", False, None),
    ],
)
def test_validate_list_op(name, op, topic, error):
    """APPEND and SUBTRACT only on LIST keys."""
    assert kafka_configs.validate_list_op(name, op, topic=topic) == error


@pytest.mark.parametrize(
    "name, expected",
    [
        ("log.retention.hours", ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]),
        ("log.roll.ms", ["log.roll.ms", "log.roll.hours"]),
        ("log.flush.interval.ms", ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]),
        ("log.flush.scheduler.interval.ms", ["log.flush.scheduler.interval.ms"]),
        ("listener.name.external.ssl.keystore.type", ["listener.name.external.ssl.keystore.type", "ssl.keystore.type"]),
        (
            "listener.name.sasl_ssl.plain.sasl.jaas.config",
            ["listener.name.sasl_ssl.plain.sasl.jaas.config", "sasl.jaas.config"],
        ),
        ("num.io.threads", ["num.io.threads"]),
    ],
)
def test_broker_config_synonyms(name, expected):
    """DynamicBrokerConfig.brokerConfigSynonyms."""
    assert kafka_configs.broker_config_synonyms(name) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (0.5, "0.5"),
        (2.0, "2.0"),
        (0.001, "0.001"),
        (1234567.0, "1234567.0"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (1e-4, "1.0E-4"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (-0.0, "-0.0"),
        (float("inf"), "Infinity"),
        (float("nan"), "NaN"),
    ],
)
def test_java_double_str(value, expected):
    """Double.toString as a JVM prints it."""
    assert kafka_configs.java_double_str(value) == expected


@pytest.mark.parametrize(
    "name, value, topic, expected",
    [
        ("cleanup.policy", " compact , delete ", True, "compact,delete"),
        ("preallocate", "TRUE", True, "true"),
        ("min.cleanable.dirty.ratio", "1", True, "1.0"),
        ("retention.ms", " 100 ", True, "100"),
        ("retention.ms", "bad", True, "bad"),
        ("ssl.keystore.password", " secret ", False, " secret "),
        ("my.plugin.setting", " x ", False, " x "),
    ],
)
def test_normalize_value(name, value, topic, expected):
    """Configured values come back as Kafka describes them; unknown and password values unchanged."""
    assert kafka_configs.normalize_value(name, value, topic=topic) == expected


@pytest.mark.parametrize("value, expected", [("true", True), (" FALSE ", False), ("True", True)])
def test_parse_bool(value, expected):
    """BOOLEAN values ignore case and surrounding blanks."""
    assert kafka_configs.parse_bool(value) is expected


def test_parse_bool_refuses_other_words():
    """Only true and false are booleans."""
    with pytest.raises(ValueError):
        kafka_configs.parse_bool("yes")


@pytest.mark.parametrize(
    "value, expected", [("", []), ("  ", []), ("a", ["a"]), ("a , b,c", ["a", "b", "c"]), ("a,", ["a", ""])]
)
def test_parse_list(value, expected):
    """LIST values split on commas with their blanks; an empty string is an empty list."""
    assert kafka_configs.parse_list(value) == expected


def test_config_sources_and_types():
    """ConfigSource codes 0-8 and ConfigType codes 0-9; every table type has a code."""
    assert (
        kafka_configs.SOURCE_UNKNOWN,
        kafka_configs.SOURCE_DYNAMIC_TOPIC_CONFIG,
        kafka_configs.SOURCE_DYNAMIC_BROKER_CONFIG,
        kafka_configs.SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
        kafka_configs.SOURCE_STATIC_BROKER_CONFIG,
        kafka_configs.SOURCE_DEFAULT_CONFIG,
        kafka_configs.SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG,
        kafka_configs.SOURCE_CLIENT_METRICS_CONFIG,
        kafka_configs.SOURCE_GROUP_CONFIG,
    ) == tuple(range(9))
    assert sorted(kafka_configs.CONFIG_TYPES.values()) == list(range(10))
    assert {d.type for d in kafka_configs.BROKER_CONFIGS.values()} | {
        d.type for d in kafka_configs.TOPIC_CONFIGS.values()
    } <= set(kafka_configs.CONFIG_TYPES) - {"UNKNOWN"}


@pytest.mark.parametrize("name", sorted(kafka_configs.BROKER_CONFIGS))
def test_every_broker_default_passes_its_own_validation(name):
    """Kafka validates each default when it defines the key; so must the table."""
    definition = kafka_configs.BROKER_CONFIGS[name]
    if (
        definition.default is not None
        and definition.update_mode != kafka_configs.READ_ONLY
        and name not in kafka_configs.DYNAMIC_SECURITY_CONFIGS
    ):
        assert kafka_configs.validate_dynamic_broker_update(name, definition.default, per_broker=True) is None
