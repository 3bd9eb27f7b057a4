"""Authentication of the test cluster's listeners, pinned to Kafka 4.x: TLS client certificates and SASL/SCRAM.

TLS (``tls=True``): the listener requires a client certificate signed by the cluster CA (``ssl.client.auth=required``);
a client without one is refused during the handshake (TLS 1.3 alert ``certificate_required``, as Java sends it), and
so is a certificate from another CA. Who the certificate makes you (``User:CN=...``) is pinned by test_authorization.

SCRAM (``scram=True``, over SASL_PLAINTEXT and SASL_SSL): SCRAM-SHA-256 and SCRAM-SHA-512 with both clients; a wrong
password or unknown user fails with SASL_AUTHENTICATION_FAILED (58) and Kafka's message, after which the broker closes
the connection; any request other than ApiVersions/SaslHandshake/SaslAuthenticate before authentication closes it too
(Kafka: IllegalSaslStateException); an unsupported mechanism gets UNSUPPORTED_SASL_MECHANISM (33) with the enabled list.
"""

import logging
import socket
import ssl
import tempfile
import time

import pytest
from clients import RawClient, confluent_config, kafka_python_config
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka import errors as kafka_errors
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from kafka_testbed import security
from kafka_testbed.model import wire
from kafka_testbed.testing import ClusterFactory

NONE, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 0, 33, 34, 58
MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
AUTH_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
KAFKA_PYTHON_BOOTSTRAP_MS = 1000


@pytest.fixture(scope="module")
def factory(kafka_cluster_root):
    clusters = ClusterFactory(kafka_cluster_root)
    yield clusters
    clusters.close()


@pytest.fixture(scope="module")
def tls_cluster(factory):
    return factory(2, tls=True)


@pytest.fixture(scope="module", params=["SASL_PLAINTEXT", "SASL_SSL"])
def scram_cluster(request, factory):
    cluster = factory(2, scram=True, tls=request.param == "SASL_SSL")
    assert cluster.info["security_protocol"] == request.param
    return cluster


def metadata_request():
    return wire.build(MetadataRequest, 1, {"topics": None})


def confluent_errors(config, wanted, timeout=10.0):
    """Errors librdkafka reports through error_cb while it fails to fetch metadata, once one satisfies ``wanted``."""
    reported = []
    admin = AdminClient({**config, "error_cb": reported.append})
    deadline = time.monotonic() + timeout
    while not any(wanted(e) for e in reported) and time.monotonic() < deadline:
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=0.3)
        admin.poll(0.05)
    return reported


def kafka_python_refused(config):
    """KafkaAdminClient cannot bootstrap (it retries until its bootstrap timeout)."""
    with pytest.raises(kafka_errors.KafkaError):
        KafkaAdminClient(bootstrap_timeout_ms=KAFKA_PYTHON_BOOTSTRAP_MS, **config)


def closed(client, request, version):
    """True when the broker closed the connection instead of answering ``request``."""
    try:
        return client.request(request, version) is None
    except OSError:  # a TLS socket reports the close while sending
        return True


# -- TLS ------------------------------------------------------------------------------------------------------------


def test_tls_clients_connect_with_the_client_certificate(tls_cluster):
    admin = AdminClient(confluent_config(tls_cluster))
    assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2]
    kafka_python_admin = KafkaAdminClient(**kafka_python_config(tls_cluster))
    try:
        assert sorted(b["broker_id"] for b in kafka_python_admin.describe_cluster()["brokers"]) == [1, 2]
    finally:
        kafka_python_admin.close()
    with RawClient.to_broker(tls_cluster, 2) as client:
        response = client.request(metadata_request(), 1)
    assert sorted(b.node_id for b in response.brokers) == [1, 2]


def _without_certificate(config, *keys):
    return {k: v for k, v in config.items() if k not in keys}


def refused_for_missing_certificate(error):
    """Kafka's Java TLS answers with alert 42 (bad certificate), the model's OpenSSL with 116 (certificate required)."""
    return "bad certificate" in error.str() or "certificate required" in error.str()


def test_tls_client_without_certificate_is_refused(tls_cluster):
    config = _without_certificate(confluent_config(tls_cluster), "ssl.certificate.location", "ssl.key.location")
    reported = confluent_errors(config, refused_for_missing_certificate)
    assert any(refused_for_missing_certificate(e) for e in reported), [e.str() for e in reported]
    kafka_python_refused(_without_certificate(kafka_python_config(tls_cluster), "ssl_certfile", "ssl_keyfile"))
    entry = tls_cluster.broker(1)
    context = ssl.create_default_context(cafile=tls_cluster.info["tls"]["ca"])
    assert _refused(context, entry)


def _refused(context, entry):
    """True when the broker ends a TLS connection before answering ApiVersions (TLS 1.3 reports it after the
    handshake)."""
    try:
        client = RawClient.__new__(RawClient)
        client.sock = context.wrap_socket(
            socket.create_connection((entry["host"], entry["port"]), timeout=5), server_hostname=entry["host"]
        )
        client.correlation_id = 0
        with client:
            return (
                client.request(
                    wire.build(ApiVersionsRequest, 3, {"client_software_name": "t", "client_software_version": "1"}), 3
                )
                is None
            )
    except (ssl.SSLError, OSError):
        return True


def test_tls_certificate_from_another_ca_is_refused(tls_cluster):
    directory = tempfile.mkdtemp(prefix="other-ca-", dir=tls_cluster.directory)
    ca_cert, ca_key = security.make_ca(directory, common_name="other-ca")
    other = security.make_certificate(directory, "admin", ca_cert, ca_key, "admin", server=False, client=True)
    config = confluent_config(
        tls_cluster, **{"ssl.certificate.location": other["cert"], "ssl.key.location": other["key"]}
    )
    reported = confluent_errors(config, lambda e: "alert" in e.str())
    assert any("alert" in e.str() for e in reported), [e.str() for e in reported]
    kafka_python_refused(kafka_python_config(tls_cluster, ssl_certfile=other["cert"], ssl_keyfile=other["key"]))
    context = ssl.create_default_context(cafile=tls_cluster.info["tls"]["ca"])
    context.load_cert_chain(other["cert"], other["key"])
    assert _refused(context, tls_cluster.broker(2))


# -- SCRAM ----------------------------------------------------------------------------------------------------------


def scram_login(client, mechanism, username, password):
    """SaslHandshake v1 then SaslAuthenticate v2 driven by kafka-python's SCRAM client; returns the last response."""
    handshake = client.request(wire.build(SaslHandshakeRequest, 1, {"mechanism": mechanism}), 1)
    assert (handshake.error_code, sorted(handshake.mechanisms)) == (NONE, MECHANISMS)
    scram = ScramClient(username, password, mechanism)
    first = client.request(wire.build(SaslAuthenticateRequest, 2, {"auth_bytes": scram.first_message()}), 2)
    if first.error_code != NONE:
        return first
    scram.process_server_first_message(first.auth_bytes)
    final = client.request(wire.build(SaslAuthenticateRequest, 2, {"auth_bytes": scram.final_message()}), 2)
    if final.error_code == NONE:
        scram.process_server_final_message(final.auth_bytes)  # raises unless the broker proved it knows the password
    return final


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_scram_mechanisms_with_both_clients(scram_cluster, mechanism):
    admin = AdminClient(confluent_config(scram_cluster, **{"sasl.mechanism": mechanism}))
    assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2]
    kafka_python_admin = KafkaAdminClient(**kafka_python_config(scram_cluster, sasl_mechanism=mechanism))
    try:
        assert sorted(b["broker_id"] for b in kafka_python_admin.describe_cluster()["brokers"]) == [1, 2]
    finally:
        kafka_python_admin.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_raw_scram_exchange(scram_cluster, mechanism):
    sasl = scram_cluster.info["sasl"]
    with RawClient.to_broker(scram_cluster, 1) as client:
        final = scram_login(client, mechanism, sasl["username"], sasl["password"])
        assert (final.error_code, final.error_message) == (NONE, "")
        assert client.request(metadata_request(), 1).cluster_id is None  # Metadata v1 carries no cluster id
        assert len(client.request(wire.build(MetadataRequest, 12, {"topics": None}), 12).brokers) == 2


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize(
    "username, password", [("admin", "wrong-password"), ("nobody", "whatever")], ids=["wrong-password", "unknown-user"]
)
def test_bad_credentials_fail_authentication(scram_cluster, mechanism, username, password):
    with RawClient.to_broker(scram_cluster, 1) as client:
        final = scram_login(client, mechanism, username, password)
        assert (final.error_code, final.error_message) == (SASL_AUTHENTICATION_FAILED, AUTH_FAILED.format(mechanism))
        assert closed(client, metadata_request(), 1)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_with_both_clients(scram_cluster, mechanism, caplog):
    config = confluent_config(scram_cluster, **{"sasl.mechanism": mechanism, "sasl.password": "wrong-password"})

    def wanted(error):
        return error.name() == "_AUTHENTICATION" and AUTH_FAILED.format(mechanism) in error.str()

    reported = confluent_errors(config, wanted)
    assert any(wanted(e) for e in reported), [e.str() for e in reported]
    caplog.set_level(logging.ERROR, logger="kafka")
    kafka_python_refused(
        kafka_python_config(scram_cluster, sasl_mechanism=mechanism, sasl_plain_password="wrong-password")
    )
    # kafka-python drops a response that arrives together with the connection close (its transport aborts on the
    # EOF before handing over the bytes read with it), so its log shows the SASL error only when it read it first;
    # test_bad_credentials_fail_authentication pins the response itself with kafka-python's SCRAM client.
    failures = [r.getMessage() for r in caplog.records if "SaslAuthenticationFailedError" in r.getMessage()]
    assert all(AUTH_FAILED.format(mechanism) in message for message in failures), caplog.text


def test_request_before_authentication_closes_the_connection(scram_cluster):
    with RawClient.to_broker(scram_cluster, 1) as client:
        assert closed(client, metadata_request(), 1)
    with RawClient.to_broker(scram_cluster, 2) as client:
        versions = client.request(
            wire.build(ApiVersionsRequest, 3, {"client_software_name": "t", "client_software_version": "1"}), 3
        )
        assert versions.error_code == NONE
        handshake = client.request(wire.build(SaslHandshakeRequest, 1, {"mechanism": "SCRAM-SHA-256"}), 1)
        assert handshake.error_code == NONE
        # Kafka may answer this one with the request's own error response (no brokers); either way the channel closes.
        try:
            response = client.request(metadata_request(), 1)
        except OSError:
            response = None
        assert response is None or not response.brokers
        assert closed(client, metadata_request(), 1)


def test_unsupported_mechanism(scram_cluster):
    with RawClient.to_broker(scram_cluster, 1) as client:
        handshake = client.request(wire.build(SaslHandshakeRequest, 1, {"mechanism": "PLAIN"}), 1)
        assert (handshake.error_code, sorted(handshake.mechanisms)) == (UNSUPPORTED_SASL_MECHANISM, MECHANISMS)
        assert closed(client, metadata_request(), 1)


def test_authenticate_without_handshake_closes_the_connection(scram_cluster):
    with RawClient.to_broker(scram_cluster, 1) as client:
        assert closed(client, wire.build(SaslAuthenticateRequest, 2, {"auth_bytes": b"n,,n=admin,r=abc"}), 2)


def test_sasl_requests_after_authentication(scram_cluster):
    """Once authenticated (re-authentication off), SaslHandshake and SaslAuthenticate get ILLEGAL_SASL_STATE and the
    channel stays."""
    sasl = scram_cluster.info["sasl"]
    with RawClient.to_broker(scram_cluster, 1) as client:
        assert scram_login(client, "SCRAM-SHA-512", sasl["username"], sasl["password"]).error_code == NONE
        response = client.request(wire.build(SaslAuthenticateRequest, 2, {"auth_bytes": b"n,,n=admin,r=abc"}), 2)
        assert (response.error_code, response.error_message) == (
            ILLEGAL_SASL_STATE,
            "SaslAuthenticate request received after successful authentication",
        )
        assert (
            client.request(wire.build(SaslHandshakeRequest, 1, {"mechanism": "SCRAM-SHA-512"}), 1).error_code
            == ILLEGAL_SASL_STATE
        )
        assert len(client.request(metadata_request(), 1).brokers) == 2


def test_added_user_authenticates_only_with_its_mechanism(scram_cluster):
    """add_scram_user stores one mechanism's credential; the other mechanism does not know the user."""
    scram_cluster.add_scram_user("carol", "carol-secret", "SCRAM-SHA-256")
    with RawClient.to_broker(scram_cluster, 2) as client:
        assert scram_login(client, "SCRAM-SHA-256", "carol", "carol-secret").error_code == NONE
    with RawClient.to_broker(scram_cluster, 2) as client:
        final = scram_login(client, "SCRAM-SHA-512", "carol", "carol-secret")
        assert (final.error_code, final.error_message) == (
            SASL_AUTHENTICATION_FAILED,
            AUTH_FAILED.format("SCRAM-SHA-512"),
        )
    admin = AdminClient(
        confluent_config(
            scram_cluster,
            **{"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "carol", "sasl.password": "carol-secret"},
        )
    )
    assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2]
