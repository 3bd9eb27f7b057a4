"""What a Kafka 4.x broker knows about configuration: keys, types, defaults, update modes and validation.

The tables mirror the Apache Kafka 4.3 documentation ("Broker Configs" with their Update Mode, "Topic Configs"
with their Server Default Property); the behaviour mirrors Kafka's own code:

- ``ConfigDef.parseType`` / ``convertToString`` and the validators ``Range``, ``ValidString``,
  ``CaseInsensitiveValidString``, ``ValidList`` (KIP-1161 rules), ``NonEmptyString``; the compression-level
  validators of ``CompressionType``; ``ThrottledReplicaListValidator``;
- ``LogConfig.validate`` (unknown names, value parsing, ``validateValues``, the remote-storage checks) as the
  controller runs it for CreateTopics and IncrementalAlterConfigs (``ControllerConfigurationValidator``); the
  controller answers a ``ConfigException`` with INVALID_CONFIG (``errors.INVALID_CONFIG``, 40);
- ``DynamicBrokerConfig.validateConfigs`` as the forwarding broker runs it for BROKER resources
  (``ConfigAdminManager``), which answers a failure with INVALID_REQUEST (``errors.INVALID_REQUEST``, 42; KAFKA-13609);
  a null value (SET without value) is INVALID_REQUEST on every resource type;
- ``ConfigHelper`` (DescribeConfigs): ``KafkaConfig.configType`` with listener-prefix synonyms,
  ``KafkaConfig.maybeSensitive`` (unknown type or PASSWORD), ``read_only`` = not a dynamic broker config;
- ``ServerTopicConfigSynonyms`` and ``DynamicBrokerConfig.brokerConfigSynonyms``.

Values are strings exactly as DescribeConfigs renders them: booleans ``true``/``false``, lists comma-joined
without spaces, doubles in Java's ``Double.toString`` form, a null default as ``None``.
"""

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

# Dynamic broker configs that KafkaConfig's own ConfigDef does not define (DynamicConfig.Broker adds them): a broker's
# DescribeConfigs lists them only once they are set.
UNLISTED_UNLESS_SET = frozenset(
    {
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
        "replica.alter.log.dirs.io.max.bytes.per.second",
    }
)

# DescribeConfigs v3+ ``ConfigType`` codes (DescribeConfigsResponse.ConfigType).
CONFIG_TYPES = {
    "UNKNOWN": 0,
    "BOOLEAN": 1,
    "STRING": 2,
    "INT": 3,
    "SHORT": 4,
    "LONG": 5,
    "DOUBLE": 6,
    "LIST": 7,
    "CLASS": 8,
    "PASSWORD": 9,
}

# DescribeConfigs ``ConfigSource`` codes (DescribeConfigsResponse.ConfigSource; Kafka's Java name of 1 is TOPIC_CONFIG).
SOURCE_UNKNOWN = 0
SOURCE_DYNAMIC_TOPIC_CONFIG = 1
SOURCE_DYNAMIC_BROKER_CONFIG = 2
SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG = 3
SOURCE_STATIC_BROKER_CONFIG = 4
SOURCE_DEFAULT_CONFIG = 5
SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG = 6
SOURCE_CLIENT_METRICS_CONFIG = 7
SOURCE_GROUP_CONFIG = 8

READ_ONLY = "read-only"
PER_BROKER = "per-broker"
CLUSTER_WIDE = "cluster-wide"
TOPIC = "topic"


@dataclass(frozen=True)
class ConfigDef:
    """One configuration key as Kafka defines it.

    ``valid`` is Kafka's "Valid Values" text (the validator's ``toString``); validation is derived from it.
    ``synonym`` is, for a topic config, the broker config that supplies its default (None if there is none).
    """

    name: str
    type: str
    default: str | None
    update_mode: str
    valid: str = ""
    synonym: str | None = None


_RO, _PB, _CW = READ_ONLY, PER_BROKER, CLUSTER_WIDE
_KAFKA_LOG_DIR_DEFAULT = "/".join(
    ("", "tmp", "kafka-logs")
)  # Kafka's built-in log.dir default (ServerLogConfigs.LOG_DIR_DEFAULT)
_TOPIC_BASED_RLMM = "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"
_THROTTLED_REPLICAS = "[partitionId]:[brokerId],[partitionId]:[brokerId],..."

# Every broker config of Kafka 4.3's KafkaConfig (the documented, non-internal ones): (name, type, default, update mode,
# valid values).
_BROKER_TABLE = (
    ("add.partitions.to.txn.retry.backoff.max.ms", "INT", "100", _RO, "[0,...]"),
    ("add.partitions.to.txn.retry.backoff.ms", "INT", "20", _RO, "[1,...]"),
    ("advertised.listeners", "LIST", None, _RO),
    ("alter.config.policy.class.name", "CLASS", None, _RO),
    ("alter.log.dirs.replication.quota.window.num", "INT", "11", _RO, "[1,...]"),
    ("alter.log.dirs.replication.quota.window.size.seconds", "INT", "1", _RO, "[1,...]"),
    ("authorizer.class.name", "STRING", "", _RO, "non-null string"),
    ("auto.create.topics.enable", "BOOLEAN", "true", _RO),
    ("auto.leader.rebalance.enable", "BOOLEAN", "true", _RO),
    ("background.threads", "INT", "10", _CW, "[1,...]"),
    ("broker.heartbeat.interval.ms", "INT", "2000", _RO),
    ("broker.id", "INT", "-1", _RO),
    ("broker.rack", "STRING", None, _RO),
    ("broker.session.timeout.ms", "INT", "9000", _RO),
    ("client.quota.callback.class", "CLASS", None, _RO),
    ("compression.gzip.level", "INT", "-1", _CW, "[1,...,9] or -1"),
    ("compression.lz4.level", "INT", "9", _CW, "[1,...,17]"),
    ("compression.type", "STRING", "producer", _CW, "[uncompressed, zstd, lz4, snappy, gzip, producer]"),
    ("compression.zstd.level", "INT", "3", _CW, "[-131072,...,22]"),
    ("config.providers", "LIST", "", _CW),
    ("connection.failed.authentication.delay.ms", "INT", "100", _RO, "[0,...]"),
    ("connections.max.idle.ms", "LONG", "600000", _RO),
    ("connections.max.reauth.ms", "LONG", "0", _RO),
    ("controlled.shutdown.enable", "BOOLEAN", "true", _RO),
    ("controller.listener.names", "LIST", None, _RO),
    ("controller.quorum.append.linger.ms", "INT", "25", _RO, "[0,...]"),
    ("controller.quorum.auto.join.enable", "BOOLEAN", "false", _RO),
    ("controller.quorum.bootstrap.servers", "LIST", "", _RO, "non-empty list"),
    ("controller.quorum.election.backoff.max.ms", "INT", "1000", _RO, "[0,...]"),
    ("controller.quorum.election.timeout.ms", "INT", "1000", _RO, "[0,...]"),
    ("controller.quorum.fetch.max.bytes", "INT", "1048576", _RO, "[1,...]"),
    ("controller.quorum.fetch.snapshot.max.bytes", "INT", "1048576", _RO, "[1,...]"),
    ("controller.quorum.fetch.timeout.ms", "INT", "2000", _RO, "[0,...]"),
    ("controller.quorum.request.timeout.ms", "INT", "2000", _RO, "[0,...]"),
    ("controller.quorum.retry.backoff.ms", "INT", "20", _RO, "[0,...]"),
    ("controller.quorum.voters", "LIST", "", _RO, "non-empty list"),
    ("controller.quota.window.num", "INT", "11", _RO, "[1,...]"),
    ("controller.quota.window.size.seconds", "INT", "1", _RO, "[1,...]"),
    ("controller.socket.timeout.ms", "INT", "30000", _RO),
    ("cordoned.log.dirs", "LIST", "", _PB),
    ("create.topic.policy.class.name", "CLASS", None, _RO),
    ("default.replication.factor", "INT", "1", _RO),
    ("delegation.token.expiry.check.interval.ms", "LONG", "3600000", _RO, "[1,...]"),
    ("delegation.token.expiry.time.ms", "LONG", "86400000", _RO, "[1,...]"),
    ("delegation.token.max.lifetime.ms", "LONG", "604800000", _RO, "[1,...]"),
    ("delegation.token.secret.key", "PASSWORD", None, _RO),
    ("delete.records.purgatory.purge.interval.requests", "INT", "1", _RO),
    ("delete.topic.enable", "BOOLEAN", "true", _RO),
    ("early.start.listeners", "LIST", None, _RO),
    ("fetch.max.bytes", "INT", "57671680", _RO, "[1024,...]"),
    ("fetch.purgatory.purge.interval.requests", "INT", "1000", _RO),
    ("follower.fetch.last.tiered.offset.enable", "BOOLEAN", "false", _CW),
    ("follower.replication.throttled.rate", "LONG", "9223372036854775807", _CW, "[0,...]"),
    ("group.consumer.assignment.interval.ms", "INT", "1000", _CW, "[0,...]"),
    ("group.consumer.assignors", "LIST", "uniform,range", _RO),
    ("group.consumer.heartbeat.interval.ms", "INT", "5000", _RO, "[1,...]"),
    ("group.consumer.max.assignment.interval.ms", "INT", "15000", _RO, "[0,...]"),
    ("group.consumer.max.heartbeat.interval.ms", "INT", "15000", _RO, "[1,...]"),
    ("group.consumer.max.session.timeout.ms", "INT", "60000", _RO, "[1,...]"),
    ("group.consumer.max.size", "INT", "2147483647", _RO, "[1,...]"),
    (
        "group.consumer.migration.policy",
        "STRING",
        "bidirectional",
        _RO,
        "(case insensitive) [DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL]",
    ),
    ("group.consumer.min.assignment.interval.ms", "INT", "0", _RO, "[0,...]"),
    ("group.consumer.min.heartbeat.interval.ms", "INT", "5000", _RO, "[1,...]"),
    ("group.consumer.min.session.timeout.ms", "INT", "45000", _RO, "[1,...]"),
    ("group.consumer.session.timeout.ms", "INT", "45000", _RO, "[1,...]"),
    ("group.coordinator.append.linger.ms", "INT", "-1", _RO, "[-1,...]"),
    ("group.coordinator.background.threads", "INT", "2", _RO, "[1,...]"),
    ("group.coordinator.cached.buffer.max.bytes", "INT", "1048588", _CW, "[524288,...]"),
    (
        "group.coordinator.rebalance.protocols",
        "LIST",
        "classic,consumer,streams",
        _RO,
        "[consumer, classic, share, streams]",
    ),
    ("group.coordinator.threads", "INT", "4", _RO, "[1,...]"),
    ("group.initial.rebalance.delay.ms", "INT", "3000", _RO),
    ("group.max.session.timeout.ms", "INT", "1800000", _RO),
    ("group.max.size", "INT", "2147483647", _RO, "[1,...]"),
    ("group.min.session.timeout.ms", "INT", "6000", _RO),
    ("group.share.assignment.interval.ms", "INT", "1000", _CW, "[0,...]"),
    ("group.share.assignors", "LIST", "simple", _RO),
    ("group.share.delivery.count.limit", "INT", "5", _RO, "[2,...,10]"),
    ("group.share.heartbeat.interval.ms", "INT", "5000", _RO, "[1,...]"),
    ("group.share.max.assignment.interval.ms", "INT", "15000", _RO, "[0,...]"),
    ("group.share.max.delivery.count.limit", "INT", "10", _RO, "[5,...,25]"),
    ("group.share.max.heartbeat.interval.ms", "INT", "15000", _RO, "[1,...]"),
    ("group.share.max.partition.max.record.locks", "INT", "4000", _RO, "[2000,...,10000]"),
    ("group.share.max.record.lock.duration.ms", "INT", "60000", _RO, "[30000,...,3600000]"),
    ("group.share.max.session.timeout.ms", "INT", "60000", _RO, "[1,...]"),
    ("group.share.max.share.sessions", "INT", "2000", _RO, "[1,...]"),
    ("group.share.max.size", "INT", "200", _RO, "[1,...,1000]"),
    ("group.share.min.assignment.interval.ms", "INT", "0", _RO, "[0,...]"),
    ("group.share.min.delivery.count.limit", "INT", "2", _RO, "[2,...,5]"),
    ("group.share.min.heartbeat.interval.ms", "INT", "5000", _RO, "[1,...]"),
    ("group.share.min.partition.max.record.locks", "INT", "100", _RO, "[100,...,2000]"),
    ("group.share.min.record.lock.duration.ms", "INT", "15000", _RO, "[1000,...,30000]"),
    ("group.share.min.session.timeout.ms", "INT", "45000", _RO, "[1,...]"),
    ("group.share.partition.max.record.locks", "INT", "2000", _RO, "[100,...,10000]"),
    ("group.share.record.lock.duration.ms", "INT", "30000", _RO, "[1000,...,3600000]"),
    ("group.share.session.timeout.ms", "INT", "45000", _RO, "[1,...]"),
    ("group.streams.assignment.interval.ms", "INT", "1000", _CW, "[0,...]"),
    ("group.streams.heartbeat.interval.ms", "INT", "5000", _RO, "[1,...]"),
    ("group.streams.initial.rebalance.delay.ms", "INT", "3000", _RO, "[0,...]"),
    ("group.streams.max.assignment.interval.ms", "INT", "15000", _RO, "[0,...]"),
    ("group.streams.max.heartbeat.interval.ms", "INT", "15000", _RO, "[1,...]"),
    ("group.streams.max.session.timeout.ms", "INT", "60000", _RO, "[1,...]"),
    ("group.streams.max.size", "INT", "2147483647", _RO, "[1,...]"),
    ("group.streams.max.standby.replicas", "INT", "2", _RO, "[0,...]"),
    ("group.streams.min.assignment.interval.ms", "INT", "0", _RO, "[0,...]"),
    ("group.streams.min.heartbeat.interval.ms", "INT", "5000", _RO, "[1,...]"),
    ("group.streams.min.session.timeout.ms", "INT", "45000", _RO, "[1,...]"),
    ("group.streams.num.standby.replicas", "INT", "0", _RO, "[0,...]"),
    ("group.streams.session.timeout.ms", "INT", "45000", _RO, "[1,...]"),
    ("initial.broker.registration.timeout.ms", "INT", "60000", _RO),
    ("inter.broker.listener.name", "STRING", None, _RO),
    ("kafka.metrics.polling.interval.secs", "INT", "10", _RO, "[1,...]"),
    ("kafka.metrics.reporters", "LIST", "", _RO),
    ("leader.imbalance.check.interval.seconds", "LONG", "300", _RO, "[1,...]"),
    ("leader.replication.throttled.rate", "LONG", "9223372036854775807", _CW, "[0,...]"),
    (
        "listener.security.protocol.map",
        "STRING",
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
        _PB,
    ),
    ("listeners", "LIST", "PLAINTEXT://:9092", _PB),
    ("log.cleaner.backoff.ms", "LONG", "15000", _CW, "[0,...]"),
    ("log.cleaner.dedupe.buffer.size", "LONG", "134217728", _CW),
    ("log.cleaner.delete.retention.ms", "LONG", "86400000", _CW, "[0,...]"),
    ("log.cleaner.enable", "BOOLEAN", "true", _RO),
    ("log.cleaner.io.buffer.load.factor", "DOUBLE", "0.9", _CW),
    ("log.cleaner.io.buffer.size", "INT", "524288", _CW, "[0,...]"),
    ("log.cleaner.io.max.bytes.per.second", "DOUBLE", "1.7976931348623157E308", _CW),
    ("log.cleaner.max.compaction.lag.ms", "LONG", "9223372036854775807", _CW, "[1,...]"),
    ("log.cleaner.min.cleanable.ratio", "DOUBLE", "0.5", _CW, "[0,...,1]"),
    ("log.cleaner.min.compaction.lag.ms", "LONG", "0", _CW, "[0,...]"),
    ("log.cleaner.threads", "INT", "1", _CW, "[0,...]"),
    ("log.cleanup.policy", "LIST", "delete", _CW, "[compact, delete]"),
    ("log.dir", "LIST", _KAFKA_LOG_DIR_DEFAULT, _RO),
    ("log.dir.failure.timeout.ms", "LONG", "30000", _RO, "[1,...]"),
    ("log.dirs", "LIST", None, _RO),
    ("log.flush.interval.messages", "LONG", "9223372036854775807", _CW, "[1,...]"),
    ("log.flush.interval.ms", "LONG", None, _CW),
    ("log.flush.offset.checkpoint.interval.ms", "INT", "60000", _RO, "[0,...]"),
    ("log.flush.scheduler.interval.ms", "LONG", "9223372036854775807", _RO),
    ("log.flush.start.offset.checkpoint.interval.ms", "INT", "60000", _RO, "[0,...]"),
    ("log.index.interval.bytes", "INT", "4096", _CW, "[0,...]"),
    ("log.index.size.max.bytes", "INT", "10485760", _CW, "[4,...]"),
    ("log.local.retention.bytes", "LONG", "-2", _CW, "[-2,...]"),
    ("log.local.retention.ms", "LONG", "-2", _CW, "[-2,...]"),
    ("log.message.timestamp.after.max.ms", "LONG", "3600000", _CW, "[0,...]"),
    ("log.message.timestamp.before.max.ms", "LONG", "9223372036854775807", _CW, "[0,...]"),
    ("log.message.timestamp.type", "STRING", "CreateTime", _CW, "[CreateTime, LogAppendTime]"),
    ("log.preallocate", "BOOLEAN", "false", _CW),
    ("log.retention.bytes", "LONG", "-1", _CW),
    ("log.retention.check.interval.ms", "LONG", "300000", _RO, "[1,...]"),
    ("log.retention.hours", "INT", "168", _RO),
    ("log.retention.minutes", "INT", None, _RO),
    ("log.retention.ms", "LONG", None, _CW),
    ("log.roll.hours", "INT", "168", _RO, "[1,...]"),
    ("log.roll.jitter.hours", "INT", "0", _RO, "[0,...]"),
    ("log.roll.jitter.ms", "LONG", None, _CW),
    ("log.roll.ms", "LONG", None, _CW),
    ("log.segment.bytes", "INT", "1073741824", _CW, "[1048576,...]"),
    ("log.segment.delete.delay.ms", "LONG", "60000", _CW, "[0,...]"),
    ("max.connection.creation.rate", "INT", "2147483647", _CW, "[0,...]"),
    ("max.connections", "INT", "2147483647", _CW, "[0,...]"),
    ("max.connections.per.ip", "INT", "2147483647", _CW, "[0,...]"),
    ("max.connections.per.ip.overrides", "STRING", "", _CW),
    ("max.incremental.fetch.session.cache.slots", "INT", "1000", _RO, "[0,...]"),
    ("max.request.partition.size.limit", "INT", "2000", _RO, "[1,...]"),
    ("message.max.bytes", "INT", "1048588", _CW, "[0,...]"),
    ("metadata.log.dir", "STRING", None, _RO),
    ("metadata.log.max.record.bytes.between.snapshots", "LONG", "20971520", _RO, "[1,...]"),
    ("metadata.log.max.snapshot.interval.ms", "LONG", "3600000", _RO, "[0,...]"),
    ("metadata.log.segment.bytes", "INT", "1073741824", _RO, "[8388608,...]"),
    ("metadata.log.segment.ms", "LONG", "604800000", _RO),
    ("metadata.max.idle.interval.ms", "INT", "500", _RO, "[0,...]"),
    ("metadata.max.retention.bytes", "LONG", "104857600", _RO),
    ("metadata.max.retention.ms", "LONG", "604800000", _RO),
    ("metric.reporters", "LIST", "org.apache.kafka.common.metrics.JmxReporter", _CW),
    ("metrics.num.samples", "INT", "2", _RO, "[1,...]"),
    ("metrics.recording.level", "STRING", "INFO", _RO),
    ("metrics.sample.window.ms", "LONG", "30000", _RO, "[1,...]"),
    ("min.insync.replicas", "INT", "1", _CW, "[1,...]"),
    ("node.id", "INT", None, _RO, "[0,...]"),
    ("num.io.threads", "INT", "8", _CW, "[1,...]"),
    ("num.network.threads", "INT", "3", _CW, "[1,...]"),
    ("num.partitions", "INT", "1", _RO, "[1,...]"),
    ("num.recovery.threads.per.data.dir", "INT", "2", _CW, "[1,...]"),
    ("num.replica.alter.log.dirs.threads", "INT", None, _RO),
    ("num.replica.fetchers", "INT", "1", _CW, "[1,...]"),
    ("offset.metadata.max.bytes", "INT", "4096", _RO),
    ("offsets.commit.timeout.ms", "INT", "5000", _RO, "[1,...]"),
    ("offsets.load.buffer.size", "INT", "5242880", _RO, "[1,...]"),
    ("offsets.retention.check.interval.ms", "LONG", "600000", _RO, "[1,...]"),
    ("offsets.retention.minutes", "INT", "10080", _RO, "[1,...]"),
    ("offsets.topic.compression.codec", "INT", "0", _RO),
    ("offsets.topic.num.partitions", "INT", "50", _RO, "[1,...]"),
    ("offsets.topic.replication.factor", "SHORT", "3", _RO, "[1,...]"),
    ("offsets.topic.segment.bytes", "INT", "104857600", _RO, "[1,...]"),
    (
        "principal.builder.class",
        "CLASS",
        "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
        _PB,
    ),
    ("process.roles", "LIST", None, _RO, "[broker, controller]"),
    ("producer.id.expiration.ms", "INT", "86400000", _CW, "[1,...]"),
    ("producer.purgatory.purge.interval.requests", "INT", "1000", _RO),
    ("queued.max.request.bytes", "LONG", "-1", _RO),
    ("queued.max.requests", "INT", "500", _RO, "[1,...]"),
    ("quota.window.num", "INT", "11", _RO, "[1,...]"),
    ("quota.window.size.seconds", "INT", "1", _RO, "[1,...]"),
    ("remote.fetch.max.wait.ms", "INT", "500", _CW, "[1,...]"),
    ("remote.list.offsets.request.timeout.ms", "LONG", "30000", _CW, "[1,...]"),
    ("remote.log.index.file.cache.total.size.bytes", "LONG", "1073741824", _CW, "[1,...]"),
    ("remote.log.manager.copier.thread.pool.size", "INT", "10", _CW, "[1,...]"),
    ("remote.log.manager.copy.max.bytes.per.second", "LONG", "9223372036854775807", _CW, "[1,...]"),
    ("remote.log.manager.copy.quota.window.num", "INT", "11", _RO, "[1,...]"),
    ("remote.log.manager.copy.quota.window.size.seconds", "INT", "1", _RO, "[1,...]"),
    ("remote.log.manager.expiration.thread.pool.size", "INT", "10", _CW, "[1,...]"),
    ("remote.log.manager.fetch.max.bytes.per.second", "LONG", "9223372036854775807", _CW, "[1,...]"),
    ("remote.log.manager.fetch.quota.window.num", "INT", "11", _RO, "[1,...]"),
    ("remote.log.manager.fetch.quota.window.size.seconds", "INT", "1", _RO, "[1,...]"),
    ("remote.log.manager.follower.thread.pool.size", "INT", "2", _CW, "[1,...]"),
    ("remote.log.manager.task.interval.ms", "LONG", "30000", _RO, "[1,...]"),
    ("remote.log.manager.thread.pool.size", "INT", "2", _RO, "[1,...]"),
    ("remote.log.metadata.custom.metadata.max.bytes", "INT", "128", _RO, "[0,...]"),
    ("remote.log.metadata.manager.class.name", "STRING", _TOPIC_BASED_RLMM, _RO, "non-empty string"),
    ("remote.log.metadata.manager.class.path", "STRING", None, _RO),
    ("remote.log.metadata.manager.impl.prefix", "STRING", "rlmm.config.", _RO, "non-empty string"),
    ("remote.log.metadata.manager.listener.name", "STRING", None, _RO, "non-empty string"),
    ("remote.log.reader.max.pending.tasks", "INT", "100", _RO, "[1,...]"),
    ("remote.log.reader.threads", "INT", "10", _CW, "[1,...]"),
    ("remote.log.storage.manager.class.name", "STRING", None, _RO, "non-empty string"),
    ("remote.log.storage.manager.class.path", "STRING", None, _RO),
    ("remote.log.storage.manager.impl.prefix", "STRING", "rsm.config.", _RO, "non-empty string"),
    ("remote.log.storage.system.enable", "BOOLEAN", "false", _RO),
    ("replica.alter.log.dirs.io.max.bytes.per.second", "LONG", "9223372036854775807", _CW, "[0,...]"),
    ("replica.fetch.backoff.ms", "INT", "1000", _RO, "[0,...]"),
    ("replica.fetch.max.bytes", "INT", "1048576", _RO, "[0,...]"),
    ("replica.fetch.min.bytes", "INT", "1", _RO),
    ("replica.fetch.response.max.bytes", "INT", "10485760", _RO, "[0,...]"),
    ("replica.fetch.wait.max.ms", "INT", "500", _RO),
    ("replica.high.watermark.checkpoint.interval.ms", "LONG", "5000", _RO),
    ("replica.lag.time.max.ms", "LONG", "30000", _RO),
    ("replica.selector.class", "STRING", None, _RO),
    ("replica.socket.receive.buffer.bytes", "INT", "65536", _RO),
    ("replica.socket.timeout.ms", "INT", "30000", _RO),
    ("replication.quota.window.num", "INT", "11", _RO, "[1,...]"),
    ("replication.quota.window.size.seconds", "INT", "1", _RO, "[1,...]"),
    ("request.timeout.ms", "INT", "30000", _RO),
    ("sasl.client.callback.handler.class", "CLASS", None, _RO),
    ("sasl.enabled.mechanisms", "LIST", "GSSAPI", _PB),
    ("sasl.jaas.config", "PASSWORD", None, _PB),
    ("sasl.kerberos.kinit.cmd", "STRING", "/usr/bin/kinit", _PB),
    ("sasl.kerberos.min.time.before.relogin", "LONG", "60000", _PB),
    ("sasl.kerberos.principal.to.local.rules", "LIST", "DEFAULT", _PB),
    ("sasl.kerberos.service.name", "STRING", None, _PB),
    ("sasl.kerberos.ticket.renew.jitter", "DOUBLE", "0.05", _PB),
    ("sasl.kerberos.ticket.renew.window.factor", "DOUBLE", "0.8", _PB),
    ("sasl.login.callback.handler.class", "CLASS", None, _RO),
    ("sasl.login.class", "CLASS", None, _RO),
    ("sasl.login.connect.timeout.ms", "INT", None, _RO),
    ("sasl.login.read.timeout.ms", "INT", None, _RO),
    ("sasl.login.refresh.buffer.seconds", "SHORT", "300", _PB),
    ("sasl.login.refresh.min.period.seconds", "SHORT", "60", _PB),
    ("sasl.login.refresh.window.factor", "DOUBLE", "0.8", _PB),
    ("sasl.login.refresh.window.jitter", "DOUBLE", "0.05", _PB),
    ("sasl.login.retry.backoff.max.ms", "LONG", "10000", _RO),
    ("sasl.login.retry.backoff.ms", "LONG", "100", _RO),
    ("sasl.mechanism.controller.protocol", "STRING", "GSSAPI", _RO),
    ("sasl.mechanism.inter.broker.protocol", "STRING", "GSSAPI", _PB),
    ("sasl.oauthbearer.assertion.algorithm", "STRING", "RS256", _RO, "(case insensitive) [ES256, RS256]"),
    ("sasl.oauthbearer.assertion.claim.aud", "STRING", None, _RO),
    ("sasl.oauthbearer.assertion.claim.exp.seconds", "INT", "300", _RO, "[0,...,86400]"),
    ("sasl.oauthbearer.assertion.claim.iss", "STRING", None, _RO),
    ("sasl.oauthbearer.assertion.claim.jti.include", "BOOLEAN", "false", _RO),
    ("sasl.oauthbearer.assertion.claim.nbf.seconds", "INT", "60", _RO, "[0,...,3600]"),
    ("sasl.oauthbearer.assertion.claim.sub", "STRING", None, _RO),
    ("sasl.oauthbearer.assertion.file", "STRING", None, _RO),
    ("sasl.oauthbearer.assertion.private.key.file", "STRING", None, _RO),
    ("sasl.oauthbearer.assertion.private.key.passphrase", "PASSWORD", None, _RO),
    ("sasl.oauthbearer.assertion.template.file", "STRING", None, _RO),
    ("sasl.oauthbearer.client.credentials.client.id", "STRING", None, _RO),
    ("sasl.oauthbearer.client.credentials.client.secret", "PASSWORD", None, _RO),
    ("sasl.oauthbearer.clock.skew.seconds", "INT", "30", _RO),
    ("sasl.oauthbearer.expected.audience", "LIST", "", _RO),
    ("sasl.oauthbearer.expected.issuer", "STRING", None, _RO),
    ("sasl.oauthbearer.jwks.endpoint.refresh.ms", "LONG", "3600000", _RO),
    ("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "LONG", "10000", _RO),
    ("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "LONG", "100", _RO),
    ("sasl.oauthbearer.jwks.endpoint.url", "STRING", None, _RO),
    (
        "sasl.oauthbearer.jwt.retriever.class",
        "CLASS",
        "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
        _RO,
    ),
    (
        "sasl.oauthbearer.jwt.validator.class",
        "CLASS",
        "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator",
        _RO,
    ),
    ("sasl.oauthbearer.scope", "STRING", None, _RO),
    ("sasl.oauthbearer.scope.claim.name", "STRING", "scope", _RO),
    ("sasl.oauthbearer.sub.claim.name", "STRING", "sub", _RO),
    ("sasl.oauthbearer.token.endpoint.url", "STRING", None, _RO),
    ("sasl.server.callback.handler.class", "CLASS", None, _RO),
    ("sasl.server.max.receive.size", "INT", "524288", _RO),
    ("security.inter.broker.protocol", "STRING", "PLAINTEXT", _RO, "[PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL]"),
    ("security.providers", "STRING", None, _RO),
    ("share.coordinator.append.linger.ms", "INT", "-1", _RO, "[-1,...]"),
    ("share.coordinator.cached.buffer.max.bytes", "INT", "1048588", _CW, "[524288,...]"),
    ("share.coordinator.load.buffer.size", "INT", "5242880", _RO, "[1,...]"),
    ("share.coordinator.snapshot.update.records.per.snapshot", "INT", "500", _RO, "[0,...,500]"),
    ("share.coordinator.state.topic.compression.codec", "INT", "0", _RO),
    ("share.coordinator.state.topic.min.isr", "SHORT", "2", _RO, "[1,...]"),
    ("share.coordinator.state.topic.num.partitions", "INT", "50", _RO, "[1,...]"),
    ("share.coordinator.state.topic.replication.factor", "SHORT", "3", _RO, "[1,...]"),
    ("share.coordinator.state.topic.segment.bytes", "INT", "104857600", _RO, "[1,...]"),
    ("share.coordinator.threads", "INT", "1", _RO, "[1,...]"),
    ("share.coordinator.write.timeout.ms", "INT", "5000", _RO, "[1,...]"),
    ("share.fetch.purgatory.purge.interval.requests", "INT", "1000", _RO),
    ("socket.connection.setup.timeout.max.ms", "LONG", "30000", _RO),
    ("socket.connection.setup.timeout.ms", "LONG", "10000", _RO),
    ("socket.listen.backlog.size", "INT", "50", _RO, "[1,...]"),
    ("socket.receive.buffer.bytes", "INT", "102400", _RO),
    ("socket.request.max.bytes", "INT", "104857600", _RO, "[1,...]"),
    ("socket.send.buffer.bytes", "INT", "102400", _RO),
    ("ssl.allow.dn.changes", "BOOLEAN", "false", _RO),
    ("ssl.allow.san.changes", "BOOLEAN", "false", _RO),
    ("ssl.cipher.suites", "LIST", "", _PB),
    ("ssl.client.auth", "STRING", "none", _PB, "[required, requested, none]"),
    ("ssl.enabled.protocols", "LIST", "TLSv1.2,TLSv1.3", _PB),
    ("ssl.endpoint.identification.algorithm", "STRING", "https", _PB),
    ("ssl.engine.factory.class", "CLASS", None, _PB),
    ("ssl.key.password", "PASSWORD", None, _PB),
    ("ssl.keymanager.algorithm", "STRING", "SunX509", _PB),
    ("ssl.keystore.certificate.chain", "PASSWORD", None, _PB),
    ("ssl.keystore.key", "PASSWORD", None, _PB),
    ("ssl.keystore.location", "STRING", None, _PB),
    ("ssl.keystore.password", "PASSWORD", None, _PB),
    ("ssl.keystore.type", "STRING", "JKS", _PB),
    ("ssl.principal.mapping.rules", "STRING", "DEFAULT", _RO),
    ("ssl.protocol", "STRING", "TLSv1.3", _PB),
    ("ssl.provider", "STRING", None, _PB),
    ("ssl.secure.random.implementation", "STRING", None, _PB),
    ("ssl.trustmanager.algorithm", "STRING", "PKIX", _PB),
    ("ssl.truststore.certificates", "PASSWORD", None, _PB),
    ("ssl.truststore.location", "STRING", None, _PB),
    ("ssl.truststore.password", "PASSWORD", None, _PB),
    ("ssl.truststore.type", "STRING", "JKS", _PB),
    ("telemetry.max.bytes", "INT", "1048576", _RO, "[1,...]"),
    ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "INT", "10000", _RO, "[1,...]"),
    ("transaction.max.timeout.ms", "INT", "900000", _RO, "[1,...]"),
    ("transaction.partition.verification.enable", "BOOLEAN", "true", _CW),
    ("transaction.remove.expired.transaction.cleanup.interval.ms", "INT", "3600000", _RO, "[1,...]"),
    ("transaction.state.log.load.buffer.size", "INT", "5242880", _RO, "[1,...]"),
    ("transaction.state.log.min.isr", "INT", "2", _RO, "[1,...]"),
    ("transaction.state.log.num.partitions", "INT", "50", _RO, "[1,...]"),
    ("transaction.state.log.replication.factor", "SHORT", "3", _RO, "[1,...]"),
    ("transaction.state.log.segment.bytes", "INT", "104857600", _RO, "[1,...]"),
    ("transaction.two.phase.commit.enable", "BOOLEAN", "false", _RO),
    ("transactional.id.expiration.ms", "INT", "604800000", _RO, "[1,...]"),
    ("unclean.leader.election.enable", "BOOLEAN", "false", _CW),
)

BROKER_CONFIGS: dict[str, ConfigDef] = {
    row[0]: ConfigDef(row[0], row[1], row[2], row[3], row[4] if len(row) > 4 else "") for row in _BROKER_TABLE
}

# The broker keys Kafka requires and gives no default (DescribeConfigs always shows the configured value).
REQUIRED_BROKER_CONFIGS = frozenset({"controller.listener.names", "node.id", "process.roles"})

# Every Kafka 4.3 topic config, in LogConfig's definition order (the order ConfigDef.parse reports the first bad value):
# (name, type, default, valid values, broker synonym).
_TOPIC_TABLE = (
    ("segment.bytes", "INT", "1073741824", "[1048576,...]", "log.segment.bytes"),
    ("segment.ms", "LONG", "604800000", "[1,...]", "log.roll.ms"),
    ("segment.jitter.ms", "LONG", "0", "[0,...]", "log.roll.jitter.ms"),
    ("segment.index.bytes", "INT", "10485760", "[4,...]", "log.index.size.max.bytes"),
    ("flush.messages", "LONG", "9223372036854775807", "[1,...]", "log.flush.interval.messages"),
    ("flush.ms", "LONG", "9223372036854775807", "[0,...]", "log.flush.interval.ms"),
    ("retention.bytes", "LONG", "-1", "", "log.retention.bytes"),
    ("retention.ms", "LONG", "604800000", "[-1,...]", "log.retention.ms"),
    ("max.message.bytes", "INT", "1048588", "[0,...]", "message.max.bytes"),
    ("index.interval.bytes", "INT", "4096", "[0,...]", "log.index.interval.bytes"),
    ("delete.retention.ms", "LONG", "86400000", "[0,...]", "log.cleaner.delete.retention.ms"),
    ("min.compaction.lag.ms", "LONG", "0", "[0,...]", "log.cleaner.min.compaction.lag.ms"),
    ("max.compaction.lag.ms", "LONG", "9223372036854775807", "[1,...]", "log.cleaner.max.compaction.lag.ms"),
    ("file.delete.delay.ms", "LONG", "60000", "[0,...]", "log.segment.delete.delay.ms"),
    ("min.cleanable.dirty.ratio", "DOUBLE", "0.5", "[0,...,1]", "log.cleaner.min.cleanable.ratio"),
    ("cleanup.policy", "LIST", "delete", "[compact, delete]", "log.cleanup.policy"),
    ("unclean.leader.election.enable", "BOOLEAN", "false", "", "unclean.leader.election.enable"),
    ("min.insync.replicas", "INT", "1", "[1,...]", "min.insync.replicas"),
    ("compression.type", "STRING", "producer", "[uncompressed, zstd, lz4, snappy, gzip, producer]", "compression.type"),
    ("compression.gzip.level", "INT", "-1", "[1,...,9] or -1", "compression.gzip.level"),
    ("compression.lz4.level", "INT", "9", "[1,...,17]", "compression.lz4.level"),
    ("compression.zstd.level", "INT", "3", "[-131072,...,22]", "compression.zstd.level"),
    ("preallocate", "BOOLEAN", "false", "", "log.preallocate"),
    ("message.timestamp.type", "STRING", "CreateTime", "[CreateTime, LogAppendTime]", "log.message.timestamp.type"),
    (
        "message.timestamp.before.max.ms",
        "LONG",
        "9223372036854775807",
        "[0,...]",
        "log.message.timestamp.before.max.ms",
    ),
    ("message.timestamp.after.max.ms", "LONG", "3600000", "[0,...]", "log.message.timestamp.after.max.ms"),
    ("leader.replication.throttled.replicas", "LIST", "", _THROTTLED_REPLICAS, None),
    ("follower.replication.throttled.replicas", "LIST", "", _THROTTLED_REPLICAS, None),
    ("remote.storage.enable", "BOOLEAN", "false", "", None),
    ("local.retention.ms", "LONG", "-2", "[-2,...]", "log.local.retention.ms"),
    ("local.retention.bytes", "LONG", "-2", "[-2,...]", "log.local.retention.bytes"),
    ("remote.log.copy.disable", "BOOLEAN", "false", "", None),
    ("remote.log.delete.on.disable", "BOOLEAN", "false", "", None),
)

TOPIC_CONFIGS: dict[str, ConfigDef] = {
    row[0]: ConfigDef(row[0], row[1], row[2], TOPIC, row[3], row[4]) for row in _TOPIC_TABLE
}

# ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS: topic key -> the broker key that supplies its default.
TOPIC_BROKER_SYNONYMS: dict[str, str] = {name: d.synonym for name, d in TOPIC_CONFIGS.items() if d.synonym}

# LogConfig also defines this internal (undocumented, never described) key, so topic validation accepts it.
_INTERNAL_TOPIC_CONFIGS = {"internal.segment.bytes": ConfigDef("internal.segment.bytes", "INT", None, TOPIC)}

# ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS where a topic key has more than one broker synonym:
# (broker key, factor to milliseconds), first set wins.
_TOPIC_SYNONYM_CHAINS = {
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", 3_600_000)),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000)),
    "flush.ms": (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
    "retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
}

# Read by StandardAuthorizer, not defined by KafkaConfig: DescribeConfigs reports them as UNKNOWN type, sensitive
# (value null), and a dynamic update of them is accepted like any custom key.
AUTHORIZER_CONFIG_KEYS = frozenset({"super.users", "allow.everyone.if.no.acl.found"})

# SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only with a listener prefix (listener.name.<listener>.<key>).
DYNAMIC_SECURITY_CONFIGS = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
)
# DynamicBrokerConfig.CLUSTER_LEVEL_LISTENER_CONFIGS: listener-prefixed forms of these may be set cluster-wide.
_CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
# DynamicBrokerConfig.LISTENER_MECHANISM_CONFIGS: set as listener.name.<listener>.<mechanism>.<key>.
_LISTENER_MECHANISM_CONFIGS = (
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
)
_LISTENER_CONFIG_RE = re.compile(r"listener\.name\.[^.]*\.(.*)", re.DOTALL)

_DYNAMIC_BROKER_CONFIGS = frozenset(name for name, d in BROKER_CONFIGS.items() if d.update_mode != READ_ONLY)
_PER_BROKER_CONFIGS = frozenset(name for name, d in BROKER_CONFIGS.items() if d.update_mode == PER_BROKER)

_INT_RANGES = {"SHORT": (-(2**15), 2**15 - 1), "INT": (-(2**31), 2**31 - 1), "LONG": (-(2**63), 2**63 - 1)}
_INTEGER_RE = re.compile(r"[+-]?[0-9]+")
_DOUBLE_RE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_CLASS_NAME_RE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_RANGE_RE = re.compile(r"\[([^,\]]+),\.\.\.(?:,([^\]]+))?\]")
_JAVA_WHITESPACE = "".join(chr(c) for c in range(0x21))


class _ConfigError(Exception):
    """A ConfigException: its message is what Kafka puts in the error response."""


def _invalid(name: str, value: object, message: str) -> _ConfigError:
    """``new ConfigException(name, value, message)``."""
    return _ConfigError(f"Invalid value {_java_str(value)} for configuration {name}: {message}")


def java_double_str(value: float) -> str:
    """Render a double as Java's ``Double.toString`` does (``0.5``, ``1.0E7``, ``1.7976931348623157E308``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        return repr(value)  # Python's shortest form, which in this range is decimal like Java's
    digits_tuple, exponent = Decimal(repr(value)).as_tuple()[1:]
    digits = "".join(map(str, digits_tuple)).rstrip("0") or "0"
    sci_exponent = len(digits_tuple) - 1 + exponent
    return f"{'-' if value < 0 else ''}{digits[0]}.{digits[1:] or '0'}E{sci_exponent}"


def _java_str(value: object) -> str:
    """``String.valueOf`` of a parsed config value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_str(value)
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return str(value)


def _java_trim(value: str) -> str:
    """``String.trim()``: strips characters up to U+0020 only."""
    return value.strip(_JAVA_WHITESPACE)


def parse_bool(value: str) -> bool:
    """A BOOLEAN config value as Kafka parses it (``true``/``false`` in any case, surrounding blanks ignored)."""
    trimmed = _java_trim(value).lower()
    if trimmed not in ("true", "false"):
        raise ValueError(f"Expected value to be either true or false: {value!r}")
    return trimmed == "true"


def parse_list(value: str) -> list[str]:
    """A LIST config value as Kafka parses it: empty string -> [], else split on commas with their blanks."""
    trimmed = _java_trim(value)
    return re.split(r"\s*,\s*", trimmed) if trimmed else []


def _parse(name: str, value: str, config_type: str) -> object:
    """``ConfigDef.parseType`` for a string value."""
    trimmed = _java_trim(value)
    if config_type == "BOOLEAN":
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise _invalid(name, value, "Expected value to be either true or false")
    if config_type in _INT_RANGES:
        low, high = _INT_RANGES[config_type]
        if _INTEGER_RE.fullmatch(trimmed) and low <= int(trimmed) <= high:
            return int(trimmed)
        raise _invalid(name, value, f"Not a number of type {config_type}")
    if config_type == "DOUBLE":
        if _DOUBLE_RE.fullmatch(trimmed):
            return float(trimmed[:-1] if trimmed[-1] in "fFdD" else trimmed)
        raise _invalid(name, value, "Not a number of type DOUBLE")
    if config_type == "LIST":
        return parse_list(value)
    if config_type == "CLASS" and not _CLASS_NAME_RE.fullmatch(trimmed):
        # Kafka loads the class; a test broker can only refuse names that cannot be class names.
        raise _invalid(name, value, f"Class {value} could not be found.")
    return trimmed


def _check_range(name: str, parsed: object, low: str, high: str | None) -> None:
    """``ConfigDef.Range``: the bounds print as Kafka prints them, which is how the valid-values text shows them."""
    number = float(parsed)
    if number < float(low):
        raise _invalid(name, parsed, f"Value must be at least {low}")
    if high is not None and number > float(high):
        raise _invalid(name, parsed, f"Value must be no more than {high}")


def _check_list(name: str, parsed: list[str], valid: list[str]) -> None:
    """``ConfigDef.ValidList.in(...)`` (KIP-1161): empty allowed, no duplicates, no empty entries, each entry valid."""
    if len(set(parsed)) != len(parsed):
        raise _ConfigError(f"Configuration '{name}' values must not be duplicated.")
    for entry in parsed:
        if not entry:
            raise _ConfigError(f"Configuration '{name}' values must not be empty.")
        if entry not in valid:
            raise _invalid(name, entry, "String must be one of: " + ", ".join(valid))


def _check_throttled_replicas(name: str, parsed: list[str]) -> None:
    """``ThrottledReplicaListValidator``: ``*`` or ``partition:broker`` pairs (trailing empty entries tolerated)."""
    proposed = [_java_trim(entry) for entry in parsed]
    if proposed == ["*"]:
        return
    seen_empty = False
    for replica in proposed:
        if not replica:
            seen_empty = True
            continue
        pair = replica.split(":")
        if seen_empty or len(pair) != 2 or not all(re.fullmatch(r"[0-9]+", p) and int(p) < 2**31 for p in pair):
            raise _invalid(
                name,
                parsed,
                f"{name} must be the literal '*' or a list of replicas in the following format: {_THROTTLED_REPLICAS}",
            )


def _check_valid(name: str, parsed: object, config_type: str, valid: str) -> None:
    """Apply the validator whose ``toString`` is ``valid``."""
    if not valid or valid in ("non-null string", "non-empty list"):
        return
    if valid == _THROTTLED_REPLICAS:
        _check_throttled_replicas(name, parsed)
    elif valid == "non-empty string":
        if parsed == "":
            raise _invalid(name, parsed, "String must be non-empty")
    elif valid.endswith("] or -1"):  # CompressionType.GZIP.levelValidator()
        low, high = _RANGE_RE.fullmatch(valid[: -len(" or -1")]).groups()
        if parsed > int(high) or (parsed < int(low) and parsed != -1):
            raise _invalid(name, parsed, f"Value must be between {low} and {high} or equal to -1")
    elif valid.startswith("(case insensitive) ["):
        choices = valid[len("(case insensitive) [") : -1].split(", ")
        if parsed.upper() not in choices:
            raise _invalid(name, parsed, "String must be one of (case insensitive): " + ", ".join(choices))
    elif (match := _RANGE_RE.fullmatch(valid)) is not None:
        _check_range(name, parsed, match.group(1), match.group(2))
    elif valid.startswith("["):
        choices = valid[1:-1].split(", ")
        if config_type == "LIST":
            _check_list(name, parsed, choices)
        elif parsed not in choices:
            raise _invalid(name, parsed, "String must be one of: " + ", ".join(choices))


def _validate_value(definition: ConfigDef, value: str) -> object:
    """Parse and validate ``value`` for ``definition``; raises _ConfigError with Kafka's message."""
    parsed = _parse(definition.name, value, definition.type)
    _check_valid(definition.name, parsed, definition.type, definition.valid)
    return parsed


def to_config_string(value: object, config_type: str | None) -> str | None:
    """``ConfigDef.convertToString``: how DescribeConfigs renders a parsed value (None stays None)."""
    if value is None:
        return None
    if config_type == "LIST" and isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return _java_str(value)


def normalize_value(name: str, value: str, *, topic: bool = False) -> str:
    """The string Kafka would describe for a valid configured ``value`` (e.g. ``" a , b "`` -> ``"a,b"``,
    ``"TRUE"`` -> ``"true"``).

    Values of unknown keys and of PASSWORD keys come back unchanged.
    """
    definition = (TOPIC_CONFIGS if topic else BROKER_CONFIGS).get(name)
    if definition is None or definition.type == "PASSWORD":
        return value
    try:
        return to_config_string(_parse(name, value, definition.type), definition.type)
    except _ConfigError:
        return value


def broker_config_synonyms(name: str, match_listener_override: bool = True) -> list[str]:
    """``DynamicBrokerConfig.brokerConfigSynonyms``: the keys, highest priority first, that feed broker config
    ``name``."""
    for group in (("log.roll.ms", "log.roll.hours"), ("log.roll.jitter.ms", "log.roll.jitter.hours")):
        if name in group:
            return list(group)
    if name == "log.flush.interval.ms":
        return ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    if name in ("log.retention.ms", "log.retention.minutes", "log.retention.hours"):
        return ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
    if match_listener_override and (match := _LISTENER_CONFIG_RE.fullmatch(name)) is not None:
        base = match.group(1)
        mechanism = next((c for c in _LISTENER_MECHANISM_CONFIGS if base.endswith(c)), None)
        return [name, mechanism or base]
    return [name]


def broker_config_type(name: str) -> str | None:
    """``KafkaConfig.configType``: the key's type, else that of its synonyms (listener overrides); None if Kafka does
    not know it."""
    if name in BROKER_CONFIGS:
        return BROKER_CONFIGS[name].type
    return next((BROKER_CONFIGS[s].type for s in broker_config_synonyms(name) if s in BROKER_CONFIGS), None)


def _config_type(name: str, topic: bool) -> str | None:
    if topic:
        definition = TOPIC_CONFIGS.get(name)
        return definition.type if definition else None
    return broker_config_type(name)


def type_code(name: str, *, topic: bool = False) -> int:
    """DescribeConfigs v3+ ``ConfigType`` of ``name`` (0 = UNKNOWN for keys Kafka does not know)."""
    return CONFIG_TYPES[_config_type(name, topic) or "UNKNOWN"]


def is_sensitive(name: str, *, topic: bool = False) -> bool:
    """``KafkaConfig.maybeSensitive``: a key of unknown type or of type PASSWORD is sensitive (its value is described as
    null)."""
    config_type = _config_type(name, topic)
    return config_type is None or config_type == "PASSWORD"


def is_read_only(name: str) -> bool:
    """The ``read_only`` flag DescribeConfigs gives a broker config: true unless the exact key is dynamically
    updatable."""
    return name not in _DYNAMIC_BROKER_CONFIGS


def topic_default_from_broker(name: str, broker_values: Mapping[str, str] | None = None) -> str | None:
    """The value a topic without an override gets for ``name`` (``KafkaConfig.extractLogConfigMap``).

    ``broker_values`` holds the broker configs explicitly set (dynamic per-broker, dynamic default or static,
    already resolved by precedence); unset ones take Kafka's broker defaults. Hours and minutes synonyms are
    converted to milliseconds, a negative retention is -1. Keys without a broker synonym give the topic default.
    """
    broker_values = broker_values or {}
    definition = TOPIC_CONFIGS[name]
    if definition.synonym is None:
        return definition.default
    chain = _TOPIC_SYNONYM_CHAINS.get(name, ((definition.synonym, 1),))
    chosen = next(((k, f, broker_values[k]) for k, f in chain if broker_values.get(k) is not None), None)
    if chosen is None:
        chosen = next(
            ((k, f, BROKER_CONFIGS[k].default) for k, f in chain if BROKER_CONFIGS[k].default is not None), None
        )
    if chosen is None:
        return definition.default
    key, factor, raw = chosen
    if factor == 1 and len(chain) == 1:
        return normalize_value(key, raw)
    millis = int(_java_trim(raw)) * factor
    return str(-1 if name == "retention.ms" and millis < 0 else millis)


def _topic_definition(name: str) -> ConfigDef | None:
    return TOPIC_CONFIGS.get(name) or _INTERNAL_TOPIC_CONFIGS.get(name)


def validate_topic_config(name: str, value: str | None) -> str | None:
    """None if ``name=value`` is an acceptable topic config, else Kafka's INVALID_CONFIG message for it."""
    return validate_topic_configs({name: value})


def validate_topic_configs(
    configs: Mapping[str, str | None],
    *,
    defaults: Mapping[str, str] | None = None,
    existing: Mapping[str, str] | None = None,
    remote_storage_system_enabled: bool = False,
) -> str | None:
    """Validate a topic's configs as the controller does for CreateTopics and IncrementalAlterConfigs; None if valid.

    ``configs`` are all the topic's overrides after the change; ``defaults`` the topic-level defaults the broker
    configs give (``topic_default_from_broker``), Kafka's topic defaults when omitted; ``existing`` the overrides
    before the change (turning remote storage off is checked against them). Returns the first failure's message,
    in Kafka's order: null values, unknown names, values in LogConfig order, cross-key and remote-storage rules.
    All are INVALID_CONFIG, except that IncrementalAlterConfigs never gets a null value this far: the broker
    refuses it first with ``"Null value not supported for : <names>"`` and INVALID_REQUEST.
    """
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        return "Null value not supported for topic configs: " + ",".join(nulls)
    for name in configs:
        if _topic_definition(name) is None:
            return f"Unknown topic config name: {name}"
    merged = {name: d.default for name, d in TOPIC_CONFIGS.items()}
    merged.update(defaults or {})
    merged.update(configs)
    parsed = {}
    try:
        for name, definition in (*TOPIC_CONFIGS.items(), *_INTERNAL_TOPIC_CONFIGS.items()):
            if merged.get(name) is not None:
                parsed[name] = _validate_value(definition, merged[name])
        _validate_topic_values(parsed, existing or {}, remote_storage_system_enabled)
    except _ConfigError as error:
        return str(error)
    return None


def _validate_topic_values(parsed: dict[str, object], existing: Mapping[str, str], remote_system_enabled: bool) -> None:
    """``LogConfig.validateValues`` and, as the controller runs it, ``validateTopicLogConfigValues``."""
    min_lag, max_lag = parsed["min.compaction.lag.ms"], parsed["max.compaction.lag.ms"]
    if min_lag > max_lag:
        raise _ConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > max.compaction.lag.ms ({max_lag})"
        )
    if not parsed["remote.storage.enable"]:
        if parse_bool(existing.get("remote.storage.enable", "false")) and not parsed["remote.log.delete.on.disable"]:
            raise _ConfigError(
                "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote "
                "data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If "
                "you want to disable remote storage and delete all remote data, please set "
                "`remote.storage.enable=false,remote.log.delete.on.disable=true`."
            )
        return
    if not remote_system_enabled:
        raise _ConfigError(
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log "
            "storage."
        )
    if parsed["cleanup.policy"] not in ([], ["delete"]):
        raise _ConfigError(
            "Remote log storage only supports topics with cleanup.policy=delete or cleanup.policy being an empty list."
        )
    for total_key, local_key, limited in (
        ("retention.bytes", "local.retention.bytes", parsed["retention.bytes"] > -1),
        ("retention.ms", "local.retention.ms", parsed["retention.ms"] != -1),
    ):
        total, local = parsed[total_key], parsed[local_key]
        if limited and local != -2:
            if local == -1:
                raise _invalid(local_key, local, f"Value must not be -1 as {total_key} value is set as {total}.")
            if local > total:
                raise _invalid(local_key, local, f"Value must not be more than {total_key} property value: {total}")
    if parsed["remote.log.copy.disable"]:
        for total_key, local_key in (
            ("retention.bytes", "local.retention.bytes"),
            ("retention.ms", "local.retention.ms"),
        ):
            if parsed[local_key] not in (-2, parsed[total_key]):
                raise _ConfigError(
                    f"When `remote.log.copy.disable` is set to true, the `{local_key}` and `{total_key}` must be set "
                    "to the identical value because there will be no more logs copied to the remote storage."
                )


def _java_hash_set_order(names: Iterable[str]) -> list[str]:
    """The iteration order of a ``java.util.HashSet`` of these strings (buckets of String.hashCode; ties keep insertion
    order)."""
    names = list(dict.fromkeys(names))
    capacity = 16
    while len(names) > capacity * 0.75:
        capacity *= 2

    def bucket(text: str) -> int:
        data, code = text.encode("utf-16-be"), 0
        for i in range(0, len(data), 2):
            code = (31 * code + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
        return (code ^ (code >> 16)) & (capacity - 1)

    return sorted(names, key=bucket)


def _java_set_str(names: Iterable[str]) -> str:
    return "[" + ", ".join(_java_hash_set_order(names)) + "]"


def _listener_base(name: str) -> str | None:
    match = _LISTENER_CONFIG_RE.fullmatch(name)
    return match.group(1) if match else None


def validate_dynamic_broker_updates(configs: Mapping[str, str | None], *, per_broker: bool) -> str | None:
    """Validate dynamic broker config updates as the broker does for IncrementalAlterConfigs on a BROKER resource.

    ``configs`` are the keys being set (a DELETE needs no check), ``per_broker`` is true for resource name ``<node id>``
    and false for ``""`` (the cluster-wide default). Returns None if accepted, else the INVALID_REQUEST message, in
    Kafka's order: null values, keys that are not dynamic, security keys without a listener prefix, value types and
    ranges, per-broker keys at the cluster-wide level. Keys Kafka does not know (plugin and custom configs) pass.
    """
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        return "Null value not supported for : " + ", ".join(nulls)
    non_dynamic = [name for name in configs if name in BROKER_CONFIGS and name not in _DYNAMIC_BROKER_CONFIGS]
    if non_dynamic:
        return "Cannot update these configs dynamically: " + _java_set_str(non_dynamic)
    unprefixed_security = [name for name in configs if name in DYNAMIC_SECURITY_CONFIGS]
    if unprefixed_security:
        return (
            "These security configs can be dynamically updated only per-listener using the listener prefix: "
            + _java_set_str(unprefixed_security)
        )
    for name, value in configs.items():
        base = _listener_base(name) or name
        if base in _DYNAMIC_BROKER_CONFIGS:
            try:
                _validate_value(BROKER_CONFIGS[base], value)
            except _ConfigError as error:
                return str(error)
    if not per_broker:
        per_broker_only = [
            name
            for name in configs
            if name in _PER_BROKER_CONFIGS
            or (_listener_base(name) is not None and _listener_base(name) not in _CLUSTER_LEVEL_LISTENER_CONFIGS)
        ]
        if per_broker_only:
            return (
                "Cannot update these configs at default cluster level, broker id must be specified: "
                + _java_set_str(per_broker_only)
            )
    return None


def validate_reconfiguration(current: Mapping[str, str], new: Mapping[str, str]) -> str | None:
    """What a broker's reconfigurable components refuse when its effective config goes from ``current`` to ``new``
    (DynamicBrokerConfig.processReconfiguration, validate only): None, or the INVALID_REQUEST message Kafka 4.3 sends.

    Of those components only the log cleaner refuses values its ConfigDef accepts (LogCleaner.validateReconfiguration):
    ``log.cleaner.threads`` may at most double or halve (integer half) in one change, and 0 fails in its arithmetic.
    """
    name = "log.cleaner.threads"
    before, after = int(current[name]), int(new[name])
    if before == after:
        return None
    if after == 0:
        return "/ by zero"
    if after < before // 2:
        reason = f"Log cleaner threads cannot be reduced to less than half the current value {before}"
    elif after > before * 2:
        reason = f"Log cleaner threads cannot be increased to more than double the current value {before}"
    else:
        return None
    # processReconfiguration wraps the reason as ConfigException(name="Invalid dynamic configuration", value=cause).
    return (
        f"Invalid value org.apache.kafka.common.config.ConfigException: {reason} for configuration Invalid dynamic "
        "configuration"
    )


def validate_dynamic_broker_update(name: str, value: str | None, *, per_broker: bool) -> str | None:
    """``validate_dynamic_broker_updates`` for one key: None if Kafka accepts ``name=value`` dynamically, else its
    message."""
    return validate_dynamic_broker_updates({name: value}, per_broker=per_broker)


def validate_list_op(name: str, op: str, *, topic: bool) -> str | None:
    """Whether IncrementalAlterConfigs may APPEND/SUBTRACT on ``name`` (other ops pass): None, or Kafka's message.

    Topic resources are checked by the controller (INVALID_CONFIG); broker resources by the broker (INVALID_REQUEST;
    for a key Kafka does not know at all, the real broker fails with UNKNOWN_SERVER_ERROR instead).
    """
    op = op.upper()
    if op not in ("APPEND", "SUBTRACT"):
        return None
    if topic:
        definition = TOPIC_CONFIGS.get(name)
        return (
            None
            if definition and definition.type == "LIST"
            else f"Can't {op} to key {name} because its type is not LIST."
        )
    if BROKER_CONFIGS.get(name) and BROKER_CONFIGS[name].type == "LIST":
        return None
    return f"Config value {op.lower()} is not allowed for config key: {name}"
