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

import re
import ssl
import time
import traceback
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ansible_collections.headroom.kafka.plugins.module_utils import kafka_releases, option_checks, secret_masking

try:
    import kafka.errors as kafka_errors
    from kafka import KafkaProducer, TopicPartition
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient
    from kafka.admin import NewTopic as KafkaPythonNewTopic
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
    from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeLogDirsRequest, DescribeQuorumRequest
    from kafka.protocol.admin.configs import DescribeConfigsRequest
    from kafka.protocol.metadata.metadata import MetadataRequest

    HAS_KAFKA_PYTHON = True
    KAFKA_PYTHON_IMPORT_ERROR = None
except ImportError:
    HAS_KAFKA_PYTHON = False
    KAFKA_PYTHON_IMPORT_ERROR = traceback.format_exc()

try:
    # kafka-python's connection layer, to end a bootstrap at the first refusal of credentials or TLS (see
    # _RefusalAwareConnectionManager). Without it bootstraps still work, they only fail slowly.
    from kafka.net.compat import KafkaNetClient
    from kafka.net.manager import KafkaConnectionManager
    from kafka.net.selector import NetworkSelector

    HAS_KAFKA_PYTHON_NET = True
except ImportError:
    HAS_KAFKA_PYTHON_NET = False

try:
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    HAS_CONFLUENT_KAFKA = True
    CONFLUENT_KAFKA_IMPORT_ERROR = None
except ImportError:
    HAS_CONFLUENT_KAFKA = False
    CONFLUENT_KAFKA_IMPORT_ERROR = traceback.format_exc()

KIP_827_VERSION = kafka_releases.DESCRIBE_LOG_DIRS_SIZES_VERSION  # v4 added TotalBytes and UsableBytes (Kafka 3.3)
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
# librdkafka reports a refused login or TLS session only to the error callback, served between calls: waits for a
# broker are cut into slices (the first this long), so that a refusal ends them within a slice, not at the timeout.
CONFLUENT_WAIT_SLICE = 0.2
# DescribeConfigs: the resource type of a topic, and the setting a rolling restart must keep every partition at.
TOPIC_RESOURCE = 2
MIN_INSYNC_REPLICAS = "min.insync.replicas"
# dynamic_configs / alter_dynamic_configs: the config resource of each kind, and the source of a value set on it.
_CONFIG_KINDS = (
    {
        "topics": (ConfigResourceType.TOPIC, "DYNAMIC_TOPIC_CONFIG"),
        "brokers": (ConfigResourceType.BROKER, "DYNAMIC_BROKER_CONFIG"),
    }
    if HAS_KAFKA_PYTHON
    else {}
)


# kafka-python has no public API to send a request it has no admin method for (DescribeLogDirs to several brokers at
# once, client quotas with our own filters, DescribeCluster with fenced brokers, DescribeQuorum): the adapter uses the
# admin client's connection manager, a private attribute, through connection_manager() only. Written for these
# releases (requirements.txt pins the same range); tests/unit/plugins/module_utils/test_kafka_adapter_private_api.py
# fails when an upgrade changes what it relies on.
KAFKA_PYTHON_RANGE = ">=3.0.12,<4"
MANAGER_METHODS = ("run", "send", "wait_for", "least_loaded_node")
# A kafka-python transport's _sock_recv: () -> (bytes read, the error that ended the read or None).
SocketReceive = Callable[[], Tuple[bytes, Optional[Exception]]]
# An entity of the client quota requests: {entity type: name, None for the default entity}.
QuotaEntity = Mapping[str, Optional[str]]


class KafkaAdapterError(Exception):
    """A failure talking to Kafka; ``broker`` names the broker (or bootstrap servers) involved."""

    def __init__(
        self, message: str, broker: Optional[Union[str, int]] = None, error: Optional[BaseException] = None
    ) -> None:
        super(KafkaAdapterError, self).__init__(message)
        self.broker = broker
        self.error = error


# describe_log_dirs' answer of one broker: its log dirs, or why there are none.
LogDirsAnswer = Union[List[Dict[str, Any]], KafkaAdapterError]


def _error_name(error: Any) -> Optional[str]:
    """Kafka's name for an error kafka-python's admin methods give per item (an error class, or None), None for
    success."""
    if error is None or not getattr(error, "errno", None):
        return None
    return getattr(error, "message", None) or str(error)


def kafka_error_name(code: Optional[int]) -> Optional[str]:
    """Kafka's name for an error code (``KAFKA_STORAGE_ERROR``), None for 0."""
    if not code:
        return None
    name = getattr(kafka_errors.for_code(code), "message", None) if HAS_KAFKA_PYTHON else None
    return name if name and name != "UNKNOWN" else "UNKNOWN_ERROR_{0}".format(code)


# -- refused credentials and TLS ----------------------------------------------------------------------------------
# Both libraries retry a broker that refuses the client's password or certificate until their timeout, and then
# report only that they could not connect. Every broker checks the same credentials, so the first refusal is the
# answer: these helpers recognise it and say what was refused, by whom, and why.
AUTHENTICATION, TLS_HANDSHAKE, TLS_SETUP = "authentication", "TLS handshake", "TLS setup"

# ssl errors that mean the connection dropped (a broker stopping), not that the other side refused the session.
_TRANSIENT_SSL_ERRORS = (
    ssl.SSLEOFError,
    ssl.SSLZeroReturnError,
    ssl.SSLSyscallError,
    ssl.SSLWantReadError,
    ssl.SSLWantWriteError,
)
# librdkafka: "sasl_ssl://host:9093/bootstrap: SASL authentication error: <reason> (after 310ms in state AUTH_REQ)"
_LIBRDKAFKA_BROKER_PREFIX = re.compile(
    r"^(?:[a-z_]+://)?(?P<broker>[^\s/]+:\d+)(?:/[^\s:]*)?: (?P<reason>.*)$", re.DOTALL
)
_LIBRDKAFKA_STATE_SUFFIX = re.compile(r"\s*\(after \d+ms in state [A-Z_]+\)\s*$")
_LIBRDKAFKA_REASON_PREFIXES = (
    "SASL authentication error: ",
    "SSL handshake failed: ",
    "Receive failed: ",
    "Send failed: ",
)
# The broker's TLS alert when it rejects the client certificate arrives on the first read, reported as a transport
# error; "close notify" is an orderly shutdown and may pass.
_TLS_ALERT = re.compile(r"(?:ssl/tls|sslv3|tlsv1[0-9.]*) alert (?!close notify)", re.IGNORECASE)
# librdkafka's own advice names its option (ssl.ca.location); the message gives the module's option instead.
_LIBRDKAFKA_CA_ADVICE = re.compile(
    r"[:,]? *(?:broker certificate could not be verified, )?verify that ssl\.ca\.location .*$", re.DOTALL
)


class ConnectionRefusal(Exception):
    """A broker refused this client's credentials or TLS session, or the client's TLS files do not load: trying again,
    or another broker, cannot help. ``kind`` is AUTHENTICATION, TLS_HANDSHAKE or TLS_SETUP; ``broker`` is host:port."""

    def __init__(self, kind: str, reason: str, broker: Optional[str] = None) -> None:
        super(ConnectionRefusal, self).__init__("{0} failed: {1}".format(kind, reason))
        self.kind = kind
        self.reason = reason
        self.broker = broker


def tls_reason(text: str) -> str:
    """An ssl or OpenSSL error text without the library's codes: '[SSL: X] certificate verify failed: ... (_ssl.c:1006)'
    and 'error:0A000086:SSL routines::certificate verify failed' both become 'certificate verify failed...'."""
    text = re.sub(r"^\[[^\]]*\]\s*", "", text.strip())
    text = re.sub(r"\s*\(_ssl\.c:\d+\)$", "", text)
    text = re.sub(r"error:[0-9A-Fa-f]+:SSL routines::", "", text)
    return _LIBRDKAFKA_CA_ADVICE.sub("", text).strip()


def kafka_python_refusal(exc: BaseException) -> Optional[ConnectionRefusal]:
    """The ConnectionRefusal a failed kafka-python connection attempt amounts to, or None when trying again may help.

    SASL failures are the broker's answer (SaslAuthenticate, SaslHandshake); a TLS failure counts when the ssl module
    raised it for a certificate or an alert, not for a dropped connection."""
    if isinstance(exc, ConnectionRefusal):
        return exc
    if HAS_KAFKA_PYTHON and isinstance(
        exc,
        (
            kafka_errors.SaslAuthenticationFailedError,
            kafka_errors.UnsupportedSaslMechanismError,
            kafka_errors.IllegalSaslStateError,
        ),
    ):
        reason = str(exc.args[0]) if exc.args else (exc.description or exc.__class__.__name__)
        prefix = exc.__class__.__name__ + ": "
        while reason.startswith(prefix):  # kafka-python puts the class name in front of the broker's message
            reason = reason[len(prefix) :]
        return ConnectionRefusal(AUTHENTICATION, reason)
    # The handshake error is wrapped as KafkaConnectionError('Handshake failed: ...') with the ssl error as context;
    # an alert on the first read is wrapped as KafkaConnectionError(<ssl error>).
    for candidate in (exc, exc.__cause__, exc.__context__) + tuple(exc.args[:1]):
        if isinstance(candidate, ssl.SSLError) and not isinstance(candidate, _TRANSIENT_SSL_ERRORS):
            return ConnectionRefusal(TLS_HANDSHAKE, tls_reason(str(candidate)))
    return None


def librdkafka_refusal(error_name: Optional[str], text: Optional[str]) -> Optional[ConnectionRefusal]:
    """The ConnectionRefusal an error librdkafka passed to the error callback amounts to, or None.

    error_name is KafkaError.name() (_AUTHENTICATION, _SSL, _TRANSPORT, ...), text KafkaError.str(): it starts with the
    broker ("sasl_plaintext://host:port/bootstrap: ...") and ends with the connection state it failed in."""
    if error_name == "_AUTHENTICATION":
        kind = AUTHENTICATION
    elif error_name == "_SSL" or (error_name == "_TRANSPORT" and _TLS_ALERT.search(text or "")):
        kind = TLS_HANDSHAKE
    else:
        return None
    broker, reason = None, _LIBRDKAFKA_STATE_SUFFIX.sub("", text or "").strip()
    match = _LIBRDKAFKA_BROKER_PREFIX.match(reason)
    if match:
        broker, reason = match.group("broker"), match.group("reason")
    for prefix in _LIBRDKAFKA_REASON_PREFIXES:
        if reason.startswith(prefix):
            reason = reason[len(prefix) :]
    return ConnectionRefusal(kind, tls_reason(reason) if kind == TLS_HANDSHAKE else reason, broker)


def _tls_advice(reason):
    """Which option to look at for a TLS failure, from the reason the library gave."""
    lowered = reason.lower()
    if "verify failed" in lowered:
        return "the brokers' certificate is not trusted: check ssl_cafile (and ssl_check_hostname for a name mismatch)"
    if _TLS_ALERT.search(reason) and ("certificate" in lowered or "unknown ca" in lowered):
        return "the broker refused the client certificate: check ssl_certfile and ssl_keyfile"
    return None


def refusal_message(
    refusal: ConnectionRefusal,
    security_protocol: str,
    sasl_mechanism: Optional[str] = None,
    sasl_username: Optional[str] = None,
    broker: Optional[str] = None,
) -> str:
    """One sentence for a ConnectionRefusal: what failed, for which principal and mechanism, at which broker and why.

    The password is never part of it: neither library puts it in an error, and callers strip it again to be sure."""
    where = "{0} ({1})".format(refusal.broker or broker or "the bootstrap servers", security_protocol)
    if refusal.kind == AUTHENTICATION:
        who = "user '{0}'".format(sasl_username) if sasl_username else "the configured principal"
        how = " with SASL mechanism {0}".format(sasl_mechanism) if sasl_mechanism else ""
        return "authentication failed for {0}{1} at {2}: {3}".format(who, how, where, refusal.reason)
    if refusal.kind == TLS_SETUP:
        return (
            "TLS setup failed for {0}: cannot load the TLS files: {1}; check ssl_cafile, ssl_certfile, "
            "ssl_keyfile and ssl_password"
        ).format(where, refusal.reason)
    advice = _tls_advice(refusal.reason)
    return "TLS handshake failed with {0}: {1}{2}".format(where, refusal.reason, "; " + advice if advice else "")


if HAS_KAFKA_PYTHON_NET:

    class _RefusalAwareConnectionManager(KafkaConnectionManager):
        """kafka-python's connection manager, except that a bootstrap server refusing the credentials or the TLS
        session ends the bootstrap at once, with the broker's reason.

        kafka-python 3 retries such a server until bootstrap_timeout_ms and then says only "Unable to bootstrap".
        It also
        drops the bytes that arrive together with the end of the stream, and Kafka sends its SaslAuthenticate error
        just before it closes the connection: most failed logins would look like "socket disconnected"."""

        def __init__(self, *args, **kwargs):
            super(_RefusalAwareConnectionManager, self).__init__(*args, **kwargs)
            self.refusals = {}  # bootstrap node id -> ConnectionRefusal

        def get_connection(self, node_id, *args, **kwargs):
            refusal = self.refusals.get(node_id)
            if refusal is not None:
                # The bootstrap loop lets everything but NodeNotReadyError through: this ends it.
                raise refusal
            fresh = node_id not in self._conns
            conn = super(_RefusalAwareConnectionManager, self).get_connection(node_id, *args, **kwargs)
            if fresh and self.cluster.is_bootstrap(node_id):
                conn.init_future.add_errback(self._remember_refusal, node_id)
            return conn

        def _remember_refusal(self, node_id, exc):
            refusal = kafka_python_refusal(exc)
            if refusal is not None:
                self.refusals[node_id] = refusal

        async def _build_transport(self, node, timeout_at=None):
            try:
                transport = await super(_RefusalAwareConnectionManager, self)._build_transport(
                    node, timeout_at=timeout_at
                )
            except kafka_errors.KafkaError:
                raise
            except Exception as exc:  # pylint: disable=broad-except  # connecting raises KafkaErrors; this is the TLS context
                raise ConnectionRefusal(TLS_SETUP, tls_reason(str(exc) or exc.__class__.__name__)) from exc
            transport._sock_recv = bytes_before_end_of_stream(transport._sock_recv)  # pylint: disable=protected-access
            return transport

    def _refusal_aware_clients(created):
        """A ``kafka_client`` for KafkaAdminClient: the library's client around a _RefusalAwareConnectionManager. Each
        client is added to ``created``: when the bootstrap fails the admin client does not exist, and only this list
        can stop the client's IO thread."""

        def build(**configs):
            net = NetworkSelector(**configs)
            client = KafkaNetClient(net=net, manager=_RefusalAwareConnectionManager(net, **configs), **configs)
            created.append(client)
            return client

        return build


def bytes_before_end_of_stream(receive: SocketReceive) -> SocketReceive:
    """Wrap a kafka-python transport's _sock_recv (returns (bytes, error)) so that bytes read together with the end of
    the stream reach the connection, which the library would discard; the next read meets the end again and reports
    it."""

    def receive_everything() -> Tuple[bytes, Optional[Exception]]:
        data, error = receive()
        return (data, None) if data and error is not None else (data, error)

    return receive_everything


def _close_unstarted(clients):
    """Close the network clients of an admin client whose bootstrap failed (KafkaAdminClient.close's steps)."""
    for client in clients:
        try:
            client.close()
            client._net.stop()  # pylint: disable=protected-access
        except Exception:  # pylint: disable=broad-except  # cleaning up must not hide why the bootstrap failed
            pass


class KafkaAdapter:
    """A connection to one cluster, built from the collection's common connection options."""

    def __init__(
        self,
        bootstrap_servers: Union[str, Sequence[str]],
        security_protocol: str = "PLAINTEXT",
        ssl_cafile: Optional[str] = None,
        ssl_certfile: Optional[str] = None,
        ssl_keyfile: Optional[str] = None,
        ssl_password: Optional[str] = None,
        ssl_check_hostname: bool = True,
        sasl_mechanism: Optional[str] = None,
        sasl_username: Optional[str] = None,
        sasl_password: Optional[str] = None,
        request_timeout: float = 30,
        client_id: str = "headroom-kafka",
    ) -> None:
        self.bootstrap_servers = option_checks.server_list(bootstrap_servers)
        self.security_protocol = security_protocol
        self.sasl_mechanism = sasl_mechanism
        self.sasl_username = sasl_username
        self._sasl_password = sasl_password
        self._ssl_password = ssl_password
        self.request_timeout_ms = int(request_timeout * 1000)
        self._kafka_python_config: Dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers,
            "client_id": client_id,
            "security_protocol": security_protocol,
            "request_timeout_ms": self.request_timeout_ms,
            "bootstrap_timeout_ms": self.request_timeout_ms,
            "ssl_cafile": ssl_cafile,
            "ssl_certfile": ssl_certfile,
            "ssl_keyfile": ssl_keyfile,
            "ssl_password": ssl_password,
            "ssl_check_hostname": ssl_check_hostname,
        }
        if sasl_mechanism:
            self._kafka_python_config.update(
                {
                    "sasl_mechanism": sasl_mechanism,
                    "sasl_plain_username": sasl_username,
                    "sasl_plain_password": sasl_password,
                }
            )
        self._confluent_config: Dict[str, Any] = {
            "bootstrap.servers": ",".join(self.bootstrap_servers),
            "security.protocol": security_protocol,
            "client.id": client_id,
            "socket.timeout.ms": self.request_timeout_ms,
        }
        for key, value in (
            ("ssl.ca.location", ssl_cafile),
            ("ssl.certificate.location", ssl_certfile),
            ("ssl.key.location", ssl_keyfile),
            ("ssl.key.password", ssl_password),
        ):
            if value:
                self._confluent_config[key] = value
        if security_protocol in ("SSL", "SASL_SSL"):
            self._confluent_config["ssl.endpoint.identification.algorithm"] = "https" if ssl_check_hostname else "none"
        if sasl_mechanism:
            self._confluent_config.update(
                {"sasl.mechanism": sasl_mechanism, "sasl.username": sasl_username, "sasl.password": sasl_password}
            )
        self._admin: Optional["KafkaAdminClient"] = None

    @classmethod
    def from_module_params(cls, params: Mapping[str, Any], client_id: str = "headroom-kafka") -> "KafkaAdapter":
        return cls(
            params["bootstrap_servers"],
            security_protocol=params.get("security_protocol") or "PLAINTEXT",
            ssl_cafile=params.get("ssl_cafile"),
            ssl_certfile=params.get("ssl_certfile"),
            ssl_keyfile=params.get("ssl_keyfile"),
            ssl_password=params.get("ssl_password"),
            ssl_check_hostname=params.get("ssl_check_hostname", True),
            sasl_mechanism=params.get("sasl_mechanism"),
            sasl_username=params.get("sasl_username"),
            sasl_password=params.get("sasl_password"),
            # The value as given: its range is checked before the adapter is built, and 0 must not become 30.
            request_timeout=30 if params.get("request_timeout") is None else params["request_timeout"],
            client_id=client_id,
        )

    # -- connection -----------------------------------------------------------------------------------------------
    @property
    def where(self) -> str:
        return "bootstrap servers {0} ({1})".format(",".join(self.bootstrap_servers), self.security_protocol)

    def admin(self) -> "KafkaAdminClient":
        """The kafka-python admin client, bootstrapped from the first bootstrap server that answers in time.

        Servers are tried one at a time, each with the request timeout, so one frozen broker in the list cannot use
        up the whole connection budget; the error names every server and why it failed.

        A refused password or TLS session ends the search at the first server that says so, within moments: every
        broker checks the same credentials, and waiting for the timeout on each would only hide the reason."""
        if self._admin is None:
            if not HAS_KAFKA_PYTHON:
                raise KafkaAdapterError("the kafka-python library (3.x) is required on the host running this module")
            failures = []
            for server in self.bootstrap_servers:
                config = dict(self._kafka_python_config, bootstrap_servers=[server])
                clients: List["KafkaNetClient"] = []
                if HAS_KAFKA_PYTHON_NET:
                    config["kafka_client"] = _refusal_aware_clients(clients)
                try:
                    self._admin = KafkaAdminClient(**config)
                    break
                except Exception as exc:  # pylint: disable=broad-except  # every connection/TLS/auth failure becomes one message
                    _close_unstarted(clients)
                    refusal = kafka_python_refusal(exc)
                    if refusal is not None:
                        raise self._refusal_error(
                            refusal, "cannot connect to {0}".format(self.where), broker=server, error=exc
                        ) from exc
                    failures.append("{0}: {1}".format(server, _describe(exc)))
            if self._admin is None:
                raise self._error("cannot connect to {0}: {1}".format(self.where, "; ".join(failures)))
        return self._admin

    def _refusal_error(self, refusal, context, broker=None, error=None):
        """KafkaAdapterError for a ConnectionRefusal: ``context`` (what could not be done) and the refusal."""
        message = "{0}: {1}".format(
            context, refusal_message(refusal, self.security_protocol, self.sasl_mechanism, self.sasl_username, broker)
        )
        return self._error(message, broker=refusal.broker or broker, error=error)

    def _error(self, message, broker=None, error=None):
        """KafkaAdapterError for ``message`` without the credentials (a library's message may quote its
        configuration), naming ``broker`` or the bootstrap servers."""
        return KafkaAdapterError(self._without_secrets(message), broker=broker or self.where, error=error)

    def _without_secrets(self, text):
        return secret_masking.without_secrets(text, (self._sasl_password, self._ssl_password))

    def close(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # pylint: disable=broad-except  # closing must never hide the real result
                pass
            self._admin = None

    def _run(self, coroutine, *args):
        manager = connection_manager(self.admin())
        try:
            return manager.run(coroutine, *args)
        except KafkaAdapterError:
            raise
        except Exception as exc:  # pylint: disable=broad-except
            raise self._error("request to {0} failed: {1}".format(self.where, _describe(exc)), error=exc) from exc

    # -- cluster and log dirs -------------------------------------------------------------------------------------
    def describe_cluster(self) -> Dict[str, Any]:
        """{cluster_id, controller_id, brokers: [{id, host, port, rack}] (active), fenced_brokers: [id]}.

        DescribeCluster v2 also lists fenced brokers: registered with the controller but stopped or not heartbeating."""
        response = self._send(
            DescribeClusterRequest(include_cluster_authorized_operations=False, include_fenced_brokers=True)
        )
        if response.error_code:
            raise KafkaAdapterError(
                "DescribeCluster via {0} failed: {1}: {2}".format(
                    self.where, kafka_error_name(response.error_code), response.error_message
                ),
                broker=self.where,
            )
        metadata = {
            "cluster_id": response.cluster_id,
            "controller_id": response.controller_id,
            "brokers": [
                {"broker_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack, "is_fenced": b.is_fenced}
                for b in response.brokers
            ],
        }
        brokers = [
            {"id": b["broker_id"], "host": b["host"], "port": b["port"], "rack": b.get("rack")}
            for b in metadata["brokers"]
            if not b.get("is_fenced")
        ]
        fenced = sorted(b["broker_id"] for b in metadata["brokers"] if b.get("is_fenced"))
        return {
            "cluster_id": metadata.get("cluster_id"),
            "controller_id": metadata.get("controller_id"),
            "brokers": sorted(brokers, key=lambda b: b["id"]),
            "fenced_brokers": fenced,
        }

    def active_controller(self) -> Optional[int]:
        """Node id of the KRaft quorum leader (DescribeQuorum, forwarded by brokers to the controller); in ZooKeeper
        mode, whose brokers have no DescribeQuorum, the broker elected controller (DescribeCluster). None when the
        cluster cannot tell (no quorum reachable)."""
        try:
            partition = self._metadata_quorum()
        except KafkaAdapterError as exc:
            if isinstance(exc.error, kafka_errors.IncompatibleBrokerVersion):
                # KRaft brokers have answered DescribeQuorum since 3.3; a ZooKeeper-mode broker's controller is the
                # broker DescribeCluster names (in KRaft that is a random broker, never the quorum leader).
                controller = self.describe_cluster()["controller_id"]
                return controller if controller is not None and controller >= 0 else None
            return None
        return None if partition is None or partition.leader_id < 0 else partition.leader_id

    def metadata_high_watermark(self) -> Optional[int]:
        """The KRaft metadata log's high watermark (DescribeQuorum): the number of metadata records committed so far,
        each client quota change one of them. None when the quorum cannot tell; KafkaAdapterError in ZooKeeper mode."""
        partition = self._metadata_quorum()
        return None if partition is None or partition.high_watermark < 0 else partition.high_watermark

    def _metadata_quorum(self):
        """The __cluster_metadata partition of a DescribeQuorum response, None when it carries an error."""
        topic = DescribeQuorumRequest.TopicData
        request = DescribeQuorumRequest(
            topics=[topic(topic_name="__cluster_metadata", partitions=[topic.PartitionData(partition_index=0)])]
        )
        response = self._send(request)
        if response.error_code or not response.topics or not response.topics[0].partitions:
            return None
        partition = response.topics[0].partitions[0]
        return None if partition.error_code else partition

    def partitions(self) -> List[Dict[str, Any]]:
        """Every partition as Metadata shows it: [{topic, partition, leader, replicas, isr, offline_replicas,
        error}]."""
        response = self._send(MetadataRequest(topics=None, allow_auto_topic_creation=False))
        rows = []
        for topic in response.topics:
            for part in topic.partitions:
                rows.append(
                    {
                        "topic": topic.name,
                        "partition": part.partition_index,
                        "leader": part.leader_id,
                        "replicas": list(part.replica_nodes),
                        "isr": list(part.isr_nodes),
                        "offline_replicas": list(part.offline_replicas or []),
                        "error": kafka_error_name(part.error_code),
                    }
                )
        return rows

    def min_insync_replicas(self, topics: Iterable[str]) -> Dict[str, int]:
        """{topic: min.insync.replicas} as the brokers apply it (the topic's own setting, else the broker's default),
        in one DescribeConfigs request; a topic deleted meanwhile is left out."""
        names = sorted(set(topics))
        if not names:
            return {}
        resource = DescribeConfigsRequest.DescribeConfigsResource
        request = DescribeConfigsRequest(
            resources=[
                resource(resource_type=TOPIC_RESOURCE, resource_name=name, configuration_keys=[MIN_INSYNC_REPLICAS])
                for name in names
            ],
            include_synonyms=False,
            include_documentation=False,
        )
        response = self._send(request)
        settings = {}
        for result in response.results:
            if result.error_code:
                if kafka_error_name(result.error_code) == "UNKNOWN_TOPIC_OR_PARTITION":
                    continue
                raise KafkaAdapterError(
                    "DescribeConfigs of topic {0} via {1} failed: {2}: {3}".format(
                        result.resource_name, self.where, kafka_error_name(result.error_code), result.error_message
                    ),
                    broker=self.where,
                )
            for config in result.configs:
                if config.name == MIN_INSYNC_REPLICAS and config.value is not None:
                    settings[result.resource_name] = int(config.value)
        return settings

    def describe_log_dirs(
        self, broker_ids: Iterable[int], timeout_ms: Optional[int] = None, replicas: bool = False
    ) -> Dict[int, LogDirsAnswer]:
        """DescribeLogDirs sent to every broker at once; {broker_id: results or KafkaAdapterError}. With ``replicas``,
        each log dir lists its replicas too (the guard's decisions, every few seconds, do without)."""
        manager = connection_manager(self.admin())
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
        results: Dict[int, LogDirsAnswer] = {}
        for node, answer in answers.items():
            if isinstance(answer, Exception):
                results[node] = KafkaAdapterError(
                    "broker {0} did not answer DescribeLogDirs: {1}".format(node, _describe(answer)),
                    broker=node,
                    error=answer,
                )
                continue
            version = getattr(answer, "version", None)
            if version is not None and version < KIP_827_VERSION:
                results[node] = KafkaAdapterError(kafka_releases.describe_log_dirs_too_old(node, version), broker=node)
                continue
            if getattr(answer, "error_code", 0):
                results[node] = KafkaAdapterError(
                    "broker {0} refused DescribeLogDirs: {1}".format(node, kafka_error_name(answer.error_code)),
                    broker=node,
                )
                continue
            rows = []
            for result in answer.results:
                row = {
                    "log_dir": result.log_dir,
                    "error": kafka_error_name(result.error_code),
                    "total_bytes": result.total_bytes,
                    "usable_bytes": result.usable_bytes,
                    "partitions": sum(len(topic.partitions) for topic in result.topics),
                    "partition_bytes": sum(p.partition_size for topic in result.topics for p in topic.partitions),
                }
                if replicas:
                    row["replicas"] = _replicas_of(result)
                rows.append(row)
            results[node] = rows
        return results

    def partition_reassignments(self) -> List[Dict[str, Any]]:
        """The partition reassignments in progress (ListPartitionReassignments, answered by the controller):
        [{topic, partition, replicas, adding_replicas, removing_replicas}], ordered."""
        ongoing = self._admin_call(
            "ListPartitionReassignments",
            lambda admin: admin.list_partition_reassignments(timeout_ms=self.request_timeout_ms),
        )
        return [
            {
                "topic": key.topic,
                "partition": key.partition,
                "replicas": list(state["replicas"]),
                "adding_replicas": list(state["adding_replicas"]),
                "removing_replicas": list(state["removing_replicas"]),
            }
            for key, state in sorted(ongoing.items(), key=lambda item: (item[0].topic, item[0].partition))
        ]

    def alter_replica_log_dirs(
        self, assignments: Mapping[Tuple[str, int, int], str]
    ) -> Dict[Tuple[str, int, int], Optional[str]]:
        """AlterReplicaLogDirs, sent to each broker concerned: {(topic, partition, broker): log dir} to {same key:
        Kafka's error name, None when accepted}."""
        if not assignments:
            return {}
        answer = self._admin_call("AlterReplicaLogDirs", lambda admin: admin.alter_replica_log_dirs(dict(assignments)))
        return {(r.topic, r.partition, r.broker_id): _error_name(error) for r, error in answer.items()}

    def alter_partition_reassignments(
        self, targets: Mapping[Tuple[str, int], Optional[List[int]]]
    ) -> Dict[Tuple[str, int], Optional[str]]:
        """AlterPartitionReassignments (to the controller): {(topic, partition): replicas, or None to cancel the
        reassignment in progress} to {same key: Kafka's error name, None when accepted}."""
        if not targets:
            return {}
        request = {TopicPartition(topic, number): replicas for (topic, number), replicas in targets.items()}
        answer = self._admin_call(
            "AlterPartitionReassignments",
            lambda admin: admin.alter_partition_reassignments(request, timeout_ms=self.request_timeout_ms),
        )
        return {(key.topic, key.partition): _error_name(error) for key, error in answer.items()}

    def dynamic_configs(
        self, kind: str, names: Iterable[str], keys: Iterable[str]
    ) -> Dict[str, Dict[str, Optional[str]]]:
        """{name: {key: value}} of the topics or brokers (``kind``) as set dynamically on each (kafka-configs
        --alter, IncrementalAlterConfigs): a key that is not set there, or set only in server.properties, is None."""
        names, keys = sorted(set(names)), list(keys)
        if not names:
            return {}
        resource_type, source = _CONFIG_KINDS[kind]
        resources = [ConfigResource(resource_type, name, {key: None for key in keys}) for name in names]
        answer = self._admin_call(
            "DescribeConfigs", lambda admin: admin.describe_configs(resources, config_filter="all")
        )
        described = answer.get(resource_type.name.lower(), {})

        def dynamic_value(name, key):
            config = described.get(name, {}).get(key) or {}
            return config.get("value") if config.get("config_source") == source else None

        return {name: {key: dynamic_value(name, key) for key in keys} for name in names}

    def alter_dynamic_configs(self, kind: str, changes: Mapping[str, Mapping[str, Optional[str]]]) -> None:
        """IncrementalAlterConfigs of topics or brokers (``kind``): {name: {key: value, None to delete it}}; a refusal
        raises KafkaAdapterError naming each refused resource."""
        resource_type, _source = _CONFIG_KINDS[kind]
        resources = [
            ConfigResource(
                resource_type,
                name,
                {
                    key: (AlterConfigOp.DELETE, None) if value is None else (AlterConfigOp.SET, value)
                    for key, value in values.items()
                },
            )
            for name, values in sorted(changes.items())
            if values
        ]
        if not resources:
            return
        answer = self._admin_call(
            "IncrementalAlterConfigs",
            lambda admin: admin.alter_configs(resources, raise_on_unknown=False, incremental=True),
        )
        refused = [
            "{0} {1}: {2}".format(kind[:-1], name, result)
            for name, result in sorted(answer.get(resource_type.name.lower(), {}).items())
            if result != "OK"
        ]
        if refused:
            raise self._error("IncrementalAlterConfigs via {0} refused {1}".format(self.where, "; ".join(refused)))

    def _admin_call(self, what: str, call: Callable[["KafkaAdminClient"], Any]) -> Any:
        """One kafka-python admin call; every failure becomes a KafkaAdapterError naming the request (_error)."""
        admin = self.admin()
        try:
            return call(admin)
        except Exception as exc:  # pylint: disable=broad-except  # kafka-python raises many kinds; one message
            raise self._error("{0} via {1} failed: {2}".format(what, self.where, _describe(exc)), error=exc) from exc

    # -- client quotas --------------------------------------------------------------------------------------------
    def describe_client_quotas(
        self, components: Optional[Iterable[Tuple[str, int, Optional[str]]]] = None, strict: bool = False
    ) -> List[Tuple[Dict[str, Optional[str]], Dict[str, float]]]:
        """[(entity {type: name|None}, {key: float})] for the filter (components:
        [(entity_type, match_type, match)])."""
        component = DescribeClientQuotasRequest.ComponentData
        request = DescribeClientQuotasRequest(
            components=[component(entity_type=t, match_type=m, match=n) for t, m, n in (components or [])],
            strict=strict,
        )
        response = self._send(request)
        if response.error_code:
            raise KafkaAdapterError(
                "DescribeClientQuotas via {0} failed: {1}: {2}".format(
                    self.where, kafka_error_name(response.error_code), response.error_message
                ),
                broker=self.where,
            )
        return [
            ({part.entity_type: part.entity_name for part in entry.entity}, {v.key: v.value for v in entry.values})
            for entry in (response.entries or [])
        ]

    def alter_client_quotas(
        self, entries: Iterable[Tuple[QuotaEntity, Iterable[Tuple[str, Optional[float], bool]]]], validate_only: bool
    ) -> List[Tuple[Dict[str, Optional[str]], Optional[str], Optional[str]]]:
        """entries: [(entity {type: name|None}, [(key, value, remove)])]; returns [(entity, error name or None,
        message)]."""
        entry = AlterClientQuotasRequest.EntryData
        request = AlterClientQuotasRequest(
            entries=[
                entry(
                    entity=[entry.EntityData(entity_type=t, entity_name=n) for t, n in sorted(entity.items())],
                    ops=[entry.OpData(key=k, value=0.0 if v is None else float(v), remove=bool(r)) for k, v, r in ops],
                )
                for entity, ops in entries
            ],
            validate_only=validate_only,
        )
        response = self._send(request)
        return [
            (
                {part.entity_type: part.entity_name for part in entry.entity},
                kafka_error_name(entry.error_code),
                entry.error_message,
            )
            for entry in response.entries
        ]

    def _send(self, request):
        """Send to one broker; if it does not answer in time, try the next known broker (a frozen broker must not
        make a cluster-wide question fail)."""
        manager = connection_manager(self.admin())

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
        """A confluent-kafka configuration, and the error callback in it that keeps a refusal of credentials or TLS."""
        if not HAS_CONFLUENT_KAFKA:
            raise KafkaAdapterError("the confluent-kafka library is required on the host running this module")
        errors = _RefusalRecorder()
        return dict(self._confluent_config, error_cb=errors), errors

    def _fail_on_refusal(self, errors, context):
        if errors.refusal is not None:
            raise self._refusal_error(errors.refusal, context)

    def _list_topics(self, client, errors, context, topic=None):
        """client.list_topics within the request timeout, failing as soon as a broker refuses the credentials or TLS.

        librdkafka retries a refusing broker until the call times out, then reports a transport failure; the refusal
        itself goes to the error callback, which only polling the client serves. So the wait is cut into slices with
        a poll between them. Each slice is twice as long as the one before: a list_topics that times out abandons its
        request, and a broker slower than the first slices must still be heard."""
        deadline = time.monotonic() + self.request_timeout_ms / 1000.0
        slice_length = CONFLUENT_WAIT_SLICE
        while True:
            wait = min(slice_length, deadline - time.monotonic())
            try:
                return client.list_topics(topic, timeout=max(wait, 0.001))
            except confluent_kafka.KafkaException as exc:
                client.poll(0)
                self._fail_on_refusal(errors, context)
                still_connecting = exc.args[0].code() in (
                    confluent_kafka.KafkaError._TRANSPORT,  # pylint: disable=protected-access
                    confluent_kafka.KafkaError._TIMED_OUT,
                )  # pylint: disable=protected-access
                if wait < slice_length or not still_connecting:
                    raise
            slice_length *= 2

    def ensure_topic(
        self, name: str, partitions: int = 1, replication_factor: int = -1, configs: Optional[Dict[str, str]] = None
    ) -> bool:
        """Create the topic if it does not exist; True when it was created. Through kafka-python where confluent-kafka
        is not installed (the disk guard's host gets kafka-python only)."""
        if not HAS_CONFLUENT_KAFKA and HAS_KAFKA_PYTHON:
            return self._ensure_topic_with_kafka_python(name, partitions, replication_factor, configs)
        config, errors = self._confluent()
        admin = AdminClient(config)
        context = "cannot create topic {0} via {1}".format(name, self.where)
        try:
            metadata = self._list_topics(admin, errors, context)
        except confluent_kafka.KafkaException as exc:
            raise KafkaAdapterError("{0}: {1}".format(context, exc.args[0].str()), broker=self.where) from exc
        if name in metadata.topics and not metadata.topics[name].error:
            return False
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=configs or {})],
            operation_timeout=self.request_timeout_ms / 1000.0,
        )
        try:
            futures[name].result()
        except confluent_kafka.KafkaException as exc:
            if exc.args[0].code() != confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                raise KafkaAdapterError(
                    "cannot create topic {0} via {1}: {2}".format(name, self.where, exc.args[0].str()),
                    broker=self.where,
                ) from exc
            return False
        return True

    def produce(self, topic: str, records: Iterable[Tuple[Optional[bytes], Optional[bytes]]]) -> List[str]:
        """Produce (key, value) byte pairs; returns the list of per-record error strings
        (empty when all were acknowledged).

        A broker refusing the credentials or TLS raises KafkaAdapterError as soon as the client reports it. Through
        kafka-python where confluent-kafka is not installed (the disk guard's host gets kafka-python only)."""
        if not HAS_CONFLUENT_KAFKA and HAS_KAFKA_PYTHON:
            return self._produce_with_kafka_python(topic, records)
        failures = []

        def delivered(err, _msg):
            if err is not None:
                failures.append(err.str())

        config, errors = self._confluent()
        producer = confluent_kafka.Producer(dict(config, **{"acks": "all", "enable.idempotence": False}))
        for key, value in records:
            producer.produce(topic, key=key, value=value, on_delivery=delivered)
        # flush serves the error callback too: waiting in slices lets a refusal end the wait (see _list_topics).
        deadline = time.monotonic() + self.request_timeout_ms / 1000.0
        while True:
            wait = min(CONFLUENT_WAIT_SLICE, deadline - time.monotonic())
            remaining = producer.flush(max(wait, 0))
            if errors.refusal is not None:
                # Nothing can be delivered: drop the records (and serve their reports), or librdkafka warns about them.
                producer.purge()
                producer.flush(0)
                self._fail_on_refusal(errors, "cannot produce to topic {0} via {1}".format(topic, self.where))
            if not remaining or wait < CONFLUENT_WAIT_SLICE:
                break
        if remaining:
            failures.extend(["not acknowledged within the request timeout"] * remaining)
        return failures

    def _ensure_topic_with_kafka_python(self, name, partitions, replication_factor, configs):
        topic = KafkaPythonNewTopic(name, partitions, replication_factor, topic_configs=dict(configs or {}))
        try:
            self._admin_call("CreateTopics {0}".format(name), lambda admin: admin.create_topics([topic]))
        except KafkaAdapterError as exc:
            if isinstance(exc.__cause__, kafka_errors.TopicAlreadyExistsError):
                return False
            raise
        return True

    def _produce_with_kafka_python(self, topic, records):
        """produce's body with kafka-python: the same (key, value) records, acks=all, within the request timeout."""
        known = set(KafkaProducer.DEFAULT_CONFIG)
        config = dict((key, value) for key, value in self._kafka_python_config.items() if key in known)
        try:
            # Records a throttled or unreachable broker does not take expire within the request timeout, so that the
            # flush below ends with them reported, not with the producer still holding them.
            producer = KafkaProducer(
                acks="all", max_block_ms=self.request_timeout_ms, delivery_timeout_ms=self.request_timeout_ms, **config
            )
        except Exception as exc:  # pylint: disable=broad-except  # connection, TLS and auth failures alike
            refusal = kafka_python_refusal(exc)
            if refusal is not None:
                raise self._refusal_error(
                    refusal, "cannot produce to topic {0} via {1}".format(topic, self.where)
                ) from exc
            raise self._error(
                "cannot produce to topic {0} via {1}: {2}".format(topic, self.where, _describe(exc))
            ) from exc
        try:
            futures = [producer.send(topic, key=key, value=value) for key, value in records]
            try:
                producer.flush(timeout=self.request_timeout_ms / 1000.0)
            except kafka_errors.KafkaTimeoutError:
                pass  # the records not acknowledged by then are reported below
            failures = []
            for future in futures:
                if not future.is_done:
                    failures.append("not acknowledged within the request timeout")
                elif future.failed():
                    failures.append(_describe(future.exception))
            return failures
        finally:
            _close_kafka_python_producer(producer)

    def read_all(self, topic: str) -> List[Tuple[Optional[bytes], Optional[bytes], int]]:
        """Every record of a topic from the beginning to the end offsets seen at start: [(key, value, timestamp_ms)]."""
        consumer = None
        try:
            # Inside the try: a bad TLS file or key password fails here, and must read like any other read failure.
            config, errors = self._confluent()
            consumer = confluent_kafka.Consumer(
                dict(config, **{"group.id": "headroom-kafka-reader", "enable.auto.commit": False})
            )
            return self._read_all(consumer, errors, topic)
        except confluent_kafka.KafkaException as exc:
            raise self._read_error(topic, _describe(exc)) from exc
        finally:
            if consumer is not None:
                consumer.close()

    def _read_error(self, topic, reason):
        return KafkaAdapterError(
            "cannot read topic {0} via {1}: {2}".format(topic, self.where, reason), broker=self.where
        )

    def _read_all(self, consumer, errors, topic):
        """read_all's body: metadata, end offsets, then poll until every partition reached its end offset."""
        timeout = self.request_timeout_ms / 1000.0
        context = "cannot read topic {0} via {1}".format(topic, self.where)
        metadata = self._list_topics(consumer, errors, context, topic)
        error = metadata.topics[topic].error if topic in metadata.topics else None
        if topic not in metadata.topics or (
            error is not None and error.code() == confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART
        ):
            return []  # a topic nobody has written yet holds no records
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
            self._fail_on_refusal(errors, context)
            if message is None:
                raise KafkaAdapterError(
                    "timed out reading topic {0} via {1}".format(topic, self.where), broker=self.where
                )
            if message.error():
                if time.monotonic() > deadline:
                    raise self._read_error(topic, message.error().str())
                continue
            deadline = time.monotonic() + timeout
            records.append((message.key(), message.value(), message.timestamp()[1]))
            if message.offset() + 1 >= pending.get(message.partition(), 0):
                pending.pop(message.partition(), None)
        return records


class _RefusalRecorder:
    """A confluent-kafka error_cb that keeps the first refusal of credentials or TLS librdkafka reports (it runs on
    the thread that polls the client)."""

    def __init__(self) -> None:
        self.refusal: Optional[ConnectionRefusal] = None

    def __call__(self, error: "confluent_kafka.KafkaError") -> None:
        if self.refusal is None:
            self.refusal = librdkafka_refusal(error.name(), error.str())


def connection_manager(admin: "KafkaAdminClient") -> "KafkaConnectionManager":
    """The admin client's connection manager (kafka-python's private ``KafkaAdminClient._manager``): the one place the
    adapter reaches into the library. A release without it, or without the methods used, fails here, naming the range
    the adapter was written for, instead of somewhere deep in a request."""
    manager = getattr(admin, "_manager", None)
    missing = [name for name in MANAGER_METHODS if not callable(getattr(manager, name, None))]
    if manager is None or missing or getattr(manager, "cluster", None) is None:
        raise KafkaAdapterError(
            "this kafka-python ({0}) has no KafkaAdminClient._manager with {1} and cluster, which the adapter "
            "uses to send requests kafka-python has no method for; install kafka-python{2}".format(
                _kafka_python_version(), ", ".join(MANAGER_METHODS), KAFKA_PYTHON_RANGE
            )
        )
    return manager


def _replicas_of(log_dir_result):
    """The replicas one DescribeLogDirs result lists, ordered by topic and partition, the current before the future."""
    return sorted(
        (
            {
                "topic": topic.name,
                "partition": p.partition_index,
                "size_bytes": p.partition_size,
                "offset_lag": p.offset_lag,
                "is_future": bool(p.is_future_key),
            }
            for topic in log_dir_result.topics
            for p in topic.partitions
        ),
        key=lambda r: (r["topic"], r["partition"], r["is_future"]),
    )


def _kafka_python_version():
    try:
        from kafka.version import __version__  # pylint: disable=import-outside-toplevel
    except ImportError:
        return "unknown version"
    return __version__


def _describe(exc):
    """An exception as a short sentence without secrets (kafka-python messages carry no credentials)."""
    text = str(exc) or exc.__class__.__name__
    if text and exc.__class__.__name__ not in text:
        text = "{0}: {1}".format(exc.__class__.__name__, text)
    return text


def _close_kafka_python_producer(producer):
    """Close without waiting. kafka-python's close flushes first and, when a record is still unacknowledged (a broker
    throttling the publisher), raises before it stops its sender thread: that thread is then stopped here, or every
    publication would leave one behind."""
    try:
        producer.close(timeout=0)
    except kafka_errors.KafkaTimeoutError:
        sender = getattr(producer, "_sender", None)
        if sender is not None:
            sender.force_close()
