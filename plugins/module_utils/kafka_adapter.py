# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place that talks to Kafka.

kafka-python carries what librdkafka lacks (DescribeLogDirs with KIP-827 sizes, client quotas, DescribeCluster);
confluent-kafka produces, consumes and manages topics. Every failure leaves here as a KafkaAdapterError whose
message names the broker or bootstrap servers involved and never contains a secret.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
import traceback

try:
    import kafka.errors as kafka_errors
    from kafka.admin import KafkaAdminClient
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
    from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeLogDirsRequest, DescribeQuorumRequest
    from kafka.protocol.metadata.metadata import MetadataRequest
    HAS_KAFKA_PYTHON = True
    KAFKA_PYTHON_IMPORT_ERROR = None
except ImportError:
    HAS_KAFKA_PYTHON = False
    KAFKA_PYTHON_IMPORT_ERROR = traceback.format_exc()

try:
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic
    HAS_CONFLUENT_KAFKA = True
    CONFLUENT_KAFKA_IMPORT_ERROR = None
except ImportError:
    HAS_CONFLUENT_KAFKA = False
    CONFLUENT_KAFKA_IMPORT_ERROR = traceback.format_exc()

DESCRIBE_LOG_DIRS_KEY = 35
KIP_827_VERSION = 4           # DescribeLogDirs v4 added TotalBytes and UsableBytes (Kafka 3.3)
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class KafkaAdapterError(Exception):
    """A failure talking to Kafka; ``broker`` names the broker (or bootstrap servers) involved."""

    def __init__(self, message, broker=None, error=None):
        super(KafkaAdapterError, self).__init__(message)
        self.broker = broker
        self.error = error


def kafka_error_name(code):
    """Kafka's name for an error code (``KAFKA_STORAGE_ERROR``), None for 0."""
    if not code:
        return None
    name = getattr(kafka_errors.for_code(code), "message", None) if HAS_KAFKA_PYTHON else None
    return name if name and name != "UNKNOWN" else "UNKNOWN_ERROR_{0}".format(code)


class KafkaAdapter:
    """A connection to one cluster, built from the collection's common connection options."""

    def __init__(self, bootstrap_servers, security_protocol="PLAINTEXT", ssl_cafile=None, ssl_certfile=None, ssl_keyfile=None,
                 ssl_password=None, ssl_check_hostname=True, sasl_mechanism=None, sasl_username=None, sasl_password=None,
                 request_timeout=30, client_id="headroom-kafka"):
        if isinstance(bootstrap_servers, str):
            bootstrap_servers = [s.strip() for s in bootstrap_servers.split(",") if s.strip()]
        self.bootstrap_servers = list(bootstrap_servers)
        self.security_protocol = security_protocol
        self.request_timeout_ms = int(request_timeout * 1000)
        self._kafka_python_config = {
            "bootstrap_servers": self.bootstrap_servers, "client_id": client_id, "security_protocol": security_protocol,
            "request_timeout_ms": self.request_timeout_ms, "bootstrap_timeout_ms": self.request_timeout_ms,
            "ssl_cafile": ssl_cafile, "ssl_certfile": ssl_certfile, "ssl_keyfile": ssl_keyfile, "ssl_password": ssl_password,
            "ssl_check_hostname": ssl_check_hostname,
        }
        if sasl_mechanism:
            self._kafka_python_config.update({"sasl_mechanism": sasl_mechanism, "sasl_plain_username": sasl_username,
                                              "sasl_plain_password": sasl_password})
        self._confluent_config = {"bootstrap.servers": ",".join(self.bootstrap_servers), "security.protocol": security_protocol,
                                  "client.id": client_id, "socket.timeout.ms": self.request_timeout_ms}
        for key, value in (("ssl.ca.location", ssl_cafile), ("ssl.certificate.location", ssl_certfile),
                           ("ssl.key.location", ssl_keyfile), ("ssl.key.password", ssl_password)):
            if value:
                self._confluent_config[key] = value
        if security_protocol in ("SSL", "SASL_SSL"):
            self._confluent_config["ssl.endpoint.identification.algorithm"] = "https" if ssl_check_hostname else "none"
        if sasl_mechanism:
            self._confluent_config.update({"sasl.mechanism": sasl_mechanism, "sasl.username": sasl_username, "sasl.password": sasl_password})
        self._admin = None

    @classmethod
    def from_module_params(cls, params):
        return cls(params["bootstrap_servers"], security_protocol=params.get("security_protocol") or "PLAINTEXT",
                   ssl_cafile=params.get("ssl_cafile"), ssl_certfile=params.get("ssl_certfile"), ssl_keyfile=params.get("ssl_keyfile"),
                   ssl_password=params.get("ssl_password"), ssl_check_hostname=params.get("ssl_check_hostname", True),
                   sasl_mechanism=params.get("sasl_mechanism"), sasl_username=params.get("sasl_username"),
                   sasl_password=params.get("sasl_password"), request_timeout=params.get("request_timeout") or 30)

    # -- connection -----------------------------------------------------------------------------------------------
    @property
    def where(self):
        return "bootstrap servers {0} ({1})".format(",".join(self.bootstrap_servers), self.security_protocol)

    def admin(self):
        """The kafka-python admin client, bootstrapped from the first bootstrap server that answers in time.

        Servers are tried one at a time, each with the request timeout, so one frozen broker in the list cannot use
        up the whole connection budget; the error names every server and why it failed."""
        if self._admin is None:
            if not HAS_KAFKA_PYTHON:
                raise KafkaAdapterError("the kafka-python library (3.x) is required on the host running this module")
            failures = []
            for server in self.bootstrap_servers:
                config = dict(self._kafka_python_config, bootstrap_servers=[server])
                try:
                    self._admin = KafkaAdminClient(**config)
                    break
                except Exception as exc:  # pylint: disable=broad-except  # every connection/TLS/auth failure becomes one message
                    failures.append("{0}: {1}".format(server, _describe(exc)))
            if self._admin is None:
                raise KafkaAdapterError("cannot connect to {0}: {1}".format(self.where, "; ".join(failures)), broker=self.where)
        return self._admin

    def close(self):
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # pylint: disable=broad-except  # closing must never hide the real result
                pass
            self._admin = None

    def _run(self, coroutine, *args):
        admin = self.admin()
        try:
            return admin._manager.run(coroutine, *args)  # pylint: disable=protected-access
        except KafkaAdapterError:
            raise
        except Exception as exc:  # pylint: disable=broad-except
            raise KafkaAdapterError("request to {0} failed: {1}".format(self.where, _describe(exc)), broker=self.where, error=exc)

    # -- cluster and log dirs -------------------------------------------------------------------------------------
    def describe_cluster(self):
        """{cluster_id, controller_id, brokers: [{id, host, port, rack}] (active), fenced_brokers: [id]}.

        DescribeCluster v2 also lists fenced brokers: registered with the controller but stopped or not heartbeating."""
        response = self._send(DescribeClusterRequest(include_cluster_authorized_operations=False, include_fenced_brokers=True))
        if response.error_code:
            raise KafkaAdapterError("DescribeCluster via {0} failed: {1}: {2}".format(
                self.where, kafka_error_name(response.error_code), response.error_message), broker=self.where)
        metadata = {"cluster_id": response.cluster_id, "controller_id": response.controller_id,
                    "brokers": [{"broker_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack, "is_fenced": b.is_fenced}
                                for b in response.brokers]}
        brokers = [{"id": b["broker_id"], "host": b["host"], "port": b["port"], "rack": b.get("rack")}
                   for b in metadata["brokers"] if not b.get("is_fenced")]
        fenced = sorted(b["broker_id"] for b in metadata["brokers"] if b.get("is_fenced"))
        return {"cluster_id": metadata.get("cluster_id"), "controller_id": metadata.get("controller_id"),
                "brokers": sorted(brokers, key=lambda b: b["id"]), "fenced_brokers": fenced}

    def active_controller(self):
        """Node id of the KRaft quorum leader (DescribeQuorum, forwarded by brokers to the controller), or None when
        the cluster cannot tell (no quorum reachable, or a broker too old for the API)."""
        topic = DescribeQuorumRequest.TopicData
        request = DescribeQuorumRequest(topics=[topic(topic_name="__cluster_metadata", partitions=[topic.PartitionData(partition_index=0)])])
        try:
            response = self._send(request)
        except KafkaAdapterError:
            return None
        if response.error_code or not response.topics or not response.topics[0].partitions:
            return None
        partition = response.topics[0].partitions[0]
        return None if partition.error_code or partition.leader_id < 0 else partition.leader_id

    def partitions(self):
        """Every partition as Metadata shows it: [{topic, partition, leader, replicas, isr, offline_replicas, error}]."""
        response = self._send(MetadataRequest(topics=None, allow_auto_topic_creation=False))
        rows = []
        for topic in response.topics:
            for part in topic.partitions:
                rows.append({"topic": topic.name, "partition": part.partition_index, "leader": part.leader_id,
                             "replicas": list(part.replica_nodes), "isr": list(part.isr_nodes),
                             "offline_replicas": list(part.offline_replicas or []), "error": kafka_error_name(part.error_code)})
        return rows

    def describe_log_dirs(self, broker_ids, timeout_ms=None):
        """DescribeLogDirs sent to every broker at once; {broker_id: results or KafkaAdapterError}."""
        manager = self.admin()._manager  # pylint: disable=protected-access
        timeout_ms = timeout_ms or self.request_timeout_ms

        async def gather():
            futures = [(node, manager.send(DescribeLogDirsRequest(topics=None), node_id=node)) for node in broker_ids]
            answers = {}
            for node, future in futures:
                try:
                    answers[node] = await manager.wait_for(future, timeout_ms)
                except Exception as exc:  # pylint: disable=broad-except  # one broker's failure must not hide the others
                    answers[node] = exc
            return answers

        answers = self._run(gather)
        results = {}
        for node, answer in answers.items():
            if isinstance(answer, Exception):
                results[node] = KafkaAdapterError("broker {0} did not answer DescribeLogDirs: {1}".format(node, _describe(answer)),
                                                  broker=node, error=answer)
                continue
            version = getattr(answer, "version", None)
            if version is not None and version < KIP_827_VERSION:
                results[node] = KafkaAdapterError(
                    "broker {0} answers DescribeLogDirs only up to v{1}; total and usable bytes need v4 (KIP-827, Kafka 3.3 or later)".format(
                        node, version), broker=node)
                continue
            if getattr(answer, "error_code", 0):
                results[node] = KafkaAdapterError("broker {0} refused DescribeLogDirs: {1}".format(node, kafka_error_name(answer.error_code)),
                                                  broker=node)
                continue
            results[node] = [{
                "log_dir": result.log_dir,
                "error": kafka_error_name(result.error_code),
                "total_bytes": result.total_bytes,
                "usable_bytes": result.usable_bytes,
                "partitions": sum(len(topic.partitions) for topic in result.topics),
                "partition_bytes": sum(p.partition_size for topic in result.topics for p in topic.partitions),
            } for result in answer.results]
        return results

    # -- client quotas --------------------------------------------------------------------------------------------
    def describe_client_quotas(self, components=None, strict=False):
        """[(entity {type: name|None}, {key: float})] for the filter (components: [(entity_type, match_type, match)])."""
        component = DescribeClientQuotasRequest.ComponentData
        request = DescribeClientQuotasRequest(
            components=[component(entity_type=t, match_type=m, match=n) for t, m, n in (components or [])], strict=strict)
        response = self._send(request)
        if response.error_code:
            raise KafkaAdapterError("DescribeClientQuotas via {0} failed: {1}: {2}".format(
                self.where, kafka_error_name(response.error_code), response.error_message), broker=self.where)
        return [({part.entity_type: part.entity_name for part in entry.entity}, {v.key: v.value for v in entry.values})
                for entry in (response.entries or [])]

    def alter_client_quotas(self, entries, validate_only):
        """entries: [(entity {type: name|None}, [(key, value, remove)])]; returns [(entity, error name or None, message)]."""
        entry = AlterClientQuotasRequest.EntryData
        request = AlterClientQuotasRequest(entries=[entry(
            entity=[entry.EntityData(entity_type=t, entity_name=n) for t, n in sorted(entity.items())],
            ops=[entry.OpData(key=k, value=0.0 if v is None else float(v), remove=bool(r)) for k, v, r in ops],
        ) for entity, ops in entries], validate_only=validate_only)
        response = self._send(request)
        return [({part.entity_type: part.entity_name for part in entry.entity}, kafka_error_name(entry.error_code), entry.error_message)
                for entry in response.entries]

    def _send(self, request):
        """Send to one broker; if it does not answer in time, try the next known broker (a frozen broker must not
        make a cluster-wide question fail)."""
        manager = self.admin()._manager  # pylint: disable=protected-access

        async def send():
            nodes = sorted(broker.node_id for broker in manager.cluster.brokers()) or [None]
            first = manager.least_loaded_node()
            if first in nodes:
                nodes.remove(first)
                nodes.insert(0, first)
            failure = None
            for node in nodes:
                try:
                    return await manager.wait_for(manager.send(request, node_id=node), self.request_timeout_ms)
                except Exception as exc:  # pylint: disable=broad-except  # try the next broker
                    failure = exc
            raise failure

        return self._run(send)

    # -- topics, produce, consume (confluent-kafka) -----------------------------------------------------------------
    def _confluent(self):
        if not HAS_CONFLUENT_KAFKA:
            raise KafkaAdapterError("the confluent-kafka library is required on the host running this module")
        return dict(self._confluent_config)

    def ensure_topic(self, name, partitions=1, replication_factor=-1, configs=None):
        """Create the topic if it does not exist; True when it was created."""
        admin = AdminClient(self._confluent())
        metadata = admin.list_topics(timeout=self.request_timeout_ms / 1000.0)
        if name in metadata.topics and not metadata.topics[name].error:
            return False
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=configs or {})],
                                      operation_timeout=self.request_timeout_ms / 1000.0)
        try:
            futures[name].result()
        except confluent_kafka.KafkaException as exc:
            if exc.args[0].code() != confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                raise KafkaAdapterError("cannot create topic {0} via {1}: {2}".format(name, self.where, exc.args[0].str()), broker=self.where)
            return False
        return True

    def produce(self, topic, records):
        """Produce (key, value) byte pairs; returns the list of per-record error strings (empty when all were acknowledged)."""
        failures = []

        def delivered(err, _msg):
            if err is not None:
                failures.append(err.str())

        producer = confluent_kafka.Producer(dict(self._confluent(), **{"acks": "all", "enable.idempotence": False}))
        for key, value in records:
            producer.produce(topic, key=key, value=value, on_delivery=delivered)
        remaining = producer.flush(self.request_timeout_ms / 1000.0)
        if remaining:
            failures.extend(["not acknowledged within the request timeout"] * remaining)
        return failures

    def read_all(self, topic):
        """Every record of a topic from the beginning to the end offsets seen at start: [(key, value, timestamp_ms)]."""
        consumer = None
        try:
            # Inside the try: a bad TLS file or key password fails here, and must read like any other read failure.
            consumer = confluent_kafka.Consumer(dict(self._confluent(), **{"group.id": "headroom-kafka-reader", "enable.auto.commit": False}))
            return self._read_all(consumer, topic)
        except confluent_kafka.KafkaException as exc:
            raise self._read_error(topic, _describe(exc))
        finally:
            if consumer is not None:
                consumer.close()

    def _read_error(self, topic, reason):
        return KafkaAdapterError("cannot read topic {0} via {1}: {2}".format(topic, self.where, reason), broker=self.where)

    def _read_all(self, consumer, topic):
        """read_all's body: metadata, end offsets, then poll until every partition reached its end offset."""
        timeout = self.request_timeout_ms / 1000.0
        metadata = consumer.list_topics(topic, timeout=timeout)
        error = metadata.topics[topic].error if topic in metadata.topics else None
        if topic not in metadata.topics or (error is not None and error.code() == confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART):
            return []       # a topic nobody has written yet holds no records
        if error is not None:
            # Anything else (not authorized, ...) is a failure: an empty result would pass for "no data".
            raise self._read_error(topic, error.str())
        partitions = [confluent_kafka.TopicPartition(topic, p) for p in metadata.topics[topic].partitions]
        ends = {}
        for tp in partitions:
            ends[tp.partition] = consumer.get_watermark_offsets(tp, timeout=self.request_timeout_ms / 1000.0)[1]
        pending = dict((p, end) for p, end in ends.items() if end > 0)
        consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in pending])
        records = []
        # Errors the client reports while fetching may be transient; one that lasts a request timeout without any
        # record arriving fails the read instead of spinning.
        deadline = time.monotonic() + timeout
        while pending:
            message = consumer.poll(timeout)
            if message is None:
                raise KafkaAdapterError("timed out reading topic {0} via {1}".format(topic, self.where), broker=self.where)
            if message.error():
                if time.monotonic() > deadline:
                    raise self._read_error(topic, message.error().str())
                continue
            deadline = time.monotonic() + timeout
            records.append((message.key(), message.value(), message.timestamp()[1]))
            if message.offset() + 1 >= pending.get(message.partition(), 0):
                pending.pop(message.partition(), None)
        return records


def _describe(exc):
    """An exception as a short sentence without secrets (kafka-python messages carry no credentials)."""
    text = str(exc) or exc.__class__.__name__
    if text and exc.__class__.__name__ not in text:
        text = "{0}: {1}".format(exc.__class__.__name__, text)
    return text
