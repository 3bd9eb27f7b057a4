"""How the adapter recognises and words a refused login or TLS session, from texts modelled on what the client libraries
report (kafka-python 3 and librdkafka 2 failing against Kafka 4), without a broker."""

import ssl

import kafka.errors as kafka_errors
import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import kafka_adapter

REASON = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
CA_ADVICE = (
    "broker certificate could not be verified, verify that ssl.ca.location is correctly configured or root CA "
    "certificates are installed (install ca-certificates package)"
)


def test_a_refused_scram_login_from_librdkafka_names_the_broker_and_keeps_the_brokers_reason():
    refusal = kafka_adapter.librdkafka_refusal(
        "_AUTHENTICATION",
        "sasl_plaintext://127.0.0.1:20358/bootstrap: SASL authentication error: "
        + REASON
        + " (after 311ms in state AUTH_REQ)",
    )
    assert (refusal.kind, refusal.broker, refusal.reason) == (kafka_adapter.AUTHENTICATION, "127.0.0.1:20358", REASON)


def test_an_unsupported_mechanism_from_librdkafka_is_an_authentication_failure():
    text = (
        "sasl_plaintext://broker-1.example:9092/1: SASL PLAIN mechanism handshake failed: "
        "Broker: Unsupported SASL mechanism: "
        "broker's supported mechanisms: SCRAM-SHA-512,SCRAM-SHA-256 (after 2ms in state AUTH_HANDSHAKE)"
    )
    refusal = kafka_adapter.librdkafka_refusal("_AUTHENTICATION", text)
    assert refusal.kind == kafka_adapter.AUTHENTICATION and refusal.broker == "broker-1.example:9092"
    assert refusal.reason.endswith("broker's supported mechanisms: SCRAM-SHA-512,SCRAM-SHA-256")


def test_an_untrusted_broker_certificate_from_librdkafka_drops_the_librdkafka_option_names():
    text = (
        "ssl://127.0.0.1:25519/bootstrap: SSL handshake failed: "
        "error:0A000086:SSL routines::certificate verify failed: " + CA_ADVICE + " (after 3ms in state SSL_HANDSHAKE)"
    )
    refusal = kafka_adapter.librdkafka_refusal("_SSL", text)
    assert (refusal.kind, refusal.broker, refusal.reason) == (
        kafka_adapter.TLS_HANDSHAKE,
        "127.0.0.1:25519",
        "certificate verify failed",
    )


def test_a_rejected_client_certificate_arrives_from_librdkafka_as_a_transport_error_with_an_alert():
    text = (
        "ssl://[::1]:9093/bootstrap: Receive failed: error:0A000412:SSL routines::ssl/tls alert bad certificate: "
        "SSL alert number 42 (after 0ms in state APIVERSION_QUERY)"
    )
    refusal = kafka_adapter.librdkafka_refusal("_TRANSPORT", text)
    assert (refusal.kind, refusal.broker, refusal.reason) == (
        kafka_adapter.TLS_HANDSHAKE,
        "[::1]:9093",
        "ssl/tls alert bad certificate: SSL alert number 42",
    )


@pytest.mark.parametrize(
    "name, text",
    [
        (
            "_TRANSPORT",
            "sasl_plaintext://127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: "
            "Connection refused (after 0ms in state CONNECT)",
        ),
        ("_TRANSPORT", "ssl://127.0.0.1:9093/bootstrap: Disconnected: SSL alert number 0 ssl/tls alert close notify"),
        ("_ALL_BROKERS_DOWN", "3/3 brokers are down"),
        ("_TIMED_OUT", "Local: Timed out"),
    ],
)
def test_librdkafka_errors_that_may_pass_are_no_refusal(name, text):
    assert kafka_adapter.librdkafka_refusal(name, text) is None


def test_kafka_python_sasl_failure_loses_the_class_names_the_library_puts_in_front():
    exc = kafka_errors.SaslAuthenticationFailedError("SaslAuthenticationFailedError: " + REASON)
    refusal = kafka_adapter.kafka_python_refusal(exc)
    assert (refusal.kind, refusal.reason, refusal.broker) == (kafka_adapter.AUTHENTICATION, REASON, None)


def test_kafka_python_unsupported_mechanism_without_a_message_uses_kafkas_description():
    refusal = kafka_adapter.kafka_python_refusal(kafka_errors.UnsupportedSaslMechanismError())
    assert (refusal.kind, refusal.reason) == (
        kafka_adapter.AUTHENTICATION,
        "The broker does not support the requested SASL mechanism.",
    )


def test_kafka_python_handshake_failure_is_found_in_the_wrapped_ssl_error():
    verify = ssl.SSLCertVerificationError(
        1,
        "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in "
        "certificate chain (_ssl.c:1006)",
    )
    refusal = None
    try:
        try:
            raise verify
        except ssl.SSLError as inner:
            # kafka-python's own raise leaves the ssl error as the context only: from None keeps it so (no __cause__)
            raise kafka_errors.KafkaConnectionError("Handshake failed: %s" % inner) from None
    except kafka_errors.KafkaConnectionError as wrapped:
        refusal = kafka_adapter.kafka_python_refusal(wrapped)
    assert refusal.kind == kafka_adapter.TLS_HANDSHAKE
    assert refusal.reason == "certificate verify failed: self-signed certificate in certificate chain"


def test_kafka_python_alert_on_the_first_read_is_a_tls_refusal():
    alert = ssl.SSLError(1, "[SSL: SSLV3_ALERT_BAD_CERTIFICATE] sslv3 alert bad certificate (_ssl.c:2580)")
    refusal = kafka_adapter.kafka_python_refusal(kafka_errors.KafkaConnectionError(alert))
    assert (refusal.kind, refusal.reason) == (kafka_adapter.TLS_HANDSHAKE, "sslv3 alert bad certificate")


@pytest.mark.parametrize(
    "exc",
    [
        kafka_errors.KafkaConnectionError("socket disconnected"),
        kafka_errors.KafkaConnectionError("unable to connect: [Errno 111] Connection refused"),
        kafka_errors.KafkaConnectionError(ssl.SSLEOFError(8, "EOF occurred in violation of protocol")),
        kafka_errors.KafkaTimeoutError("Unable to bootstrap from ['127.0.0.1:9092']"),
        kafka_errors.NodeNotReadyError("bootstrap-0"),
    ],
)
def test_kafka_python_failures_that_may_pass_are_no_refusal(exc):
    assert kafka_adapter.kafka_python_refusal(exc) is None


def test_authentication_message_names_principal_mechanism_broker_and_protocol():
    refusal = kafka_adapter.ConnectionRefusal(kafka_adapter.AUTHENTICATION, REASON, "127.0.0.1:20358")
    assert kafka_adapter.refusal_message(refusal, "SASL_PLAINTEXT", "SCRAM-SHA-512", "alice") == (
        "authentication failed for user 'alice' with SASL mechanism SCRAM-SHA-512 at 127.0.0.1:20358 (SASL_PLAINTEXT): "
        + REASON
    )


def test_a_refusal_without_a_broker_of_its_own_takes_the_server_that_was_tried():
    refusal = kafka_adapter.ConnectionRefusal(kafka_adapter.AUTHENTICATION, REASON)
    assert " at kafka-1:9094 (SASL_SSL): " in kafka_adapter.refusal_message(
        refusal, "SASL_SSL", "SCRAM-SHA-256", "bob", broker="kafka-1:9094"
    )


@pytest.mark.parametrize(
    "reason, advice",
    [
        ("certificate verify failed", "check ssl_cafile"),
        (
            "ssl/tls alert bad certificate: SSL alert number 42",
            "the broker refused the client certificate: check ssl_certfile and ssl_keyfile",
        ),
        ("tlsv13 alert certificate required", "check ssl_certfile"),
    ],
)
def test_tls_handshake_message_names_the_broker_and_the_option_to_check(reason, advice):
    message = kafka_adapter.refusal_message(
        kafka_adapter.ConnectionRefusal(kafka_adapter.TLS_HANDSHAKE, reason, "127.0.0.1:25519"), "SSL"
    )
    assert message.startswith("TLS handshake failed with 127.0.0.1:25519 (SSL): " + reason + "; ")
    assert advice in message


def test_tls_files_that_do_not_load_are_named_as_a_setup_failure():
    message = kafka_adapter.refusal_message(
        kafka_adapter.ConnectionRefusal(
            kafka_adapter.TLS_SETUP, kafka_adapter.tls_reason("[SSL] PEM lib (_ssl.c:3900)")
        ),
        "SSL",
        broker="b:9093",
    )
    assert message == (
        "TLS setup failed for b:9093 (SSL): cannot load the TLS files: PEM lib; "
        "check ssl_cafile, ssl_certfile, ssl_keyfile and ssl_password"
    )


def test_bytes_that_arrive_with_the_end_of_the_stream_are_delivered_before_the_end_is_reported():
    reads = iter(
        [
            (b"response", kafka_errors.KafkaConnectionError("socket disconnected")),
            (b"", kafka_errors.KafkaConnectionError("socket disconnected")),
        ]
    )
    receive = kafka_adapter.bytes_before_end_of_stream(lambda: next(reads))
    assert receive() == (b"response", None)
    data, error = receive()
    assert data == b"" and isinstance(error, kafka_errors.KafkaConnectionError)


@pytest.mark.parametrize("given, expected_ms", [(None, 30000), (0, 0), (2.5, 2500)])
def test_request_timeout_is_passed_through_as_given(given, expected_ms):
    adapter = kafka_adapter.KafkaAdapter.from_module_params({"bootstrap_servers": ["b:9092"], "request_timeout": given})
    assert adapter.request_timeout_ms == expected_ms
