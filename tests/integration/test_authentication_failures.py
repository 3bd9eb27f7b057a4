"""A refused password or certificate fails at once, saying what was refused, on real Apache Kafka brokers.

Both client libraries retry a broker that refuses the credentials until their timeout and then report only that they
could not connect: a wrong SCRAM password took three servers times the request timeout and said "Unable to bootstrap"
three times. Kafka answers a failed login at once, so the adapter must too, naming the user, the mechanism and the
broker, and never the password - through kafka-python (cluster views, quotas) and confluent-kafka (topics, records).
"""

import time

import pytest
from test_integration_targets import connection_options

from kafka_testbed.testing import ClusterFactory
from kafka_testbed.traffic import allow_all_on_topic, create_topic

USER, PASSWORD, MECHANISM = "alice", "alice-secret", "SCRAM-SHA-512"
WRONG_PASSWORD = "not-alice-secret"
REQUEST_TIMEOUT = 10
# Kafka delays its answer to a failed login by connection.failed.authentication.delay.ms (100 ms by default); a few
# seconds leave room for a loaded machine and still tell an answer from a timeout.
PROMPT = 3.0
TOPIC = "alice-records"

OPERATIONS = {
    "describe_cluster (kafka-python)": lambda adapter: adapter.describe_cluster(),
    "ensure_topic (confluent-kafka admin)": lambda adapter: adapter.ensure_topic(TOPIC),
    "produce (confluent-kafka producer)": lambda adapter: adapter.produce(TOPIC, [(b"key", b"value")]),
    "read_all (confluent-kafka consumer)": lambda adapter: adapter.read_all(TOPIC),
}


@pytest.fixture(scope="module")
def scram_cluster(kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root, engine="kafka")
    try:
        cluster = factory(3, scram=True)
        cluster.add_scram_user(USER, PASSWORD, MECHANISM)
        create_topic(cluster, TOPIC, replicas_on=1)
        allow_all_on_topic(cluster, TOPIC, USER)
        yield cluster
    finally:
        factory.close()


@pytest.fixture(scope="module")
def tls_cluster(kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root, engine="kafka")
    try:
        yield factory(1, tls=True)  # the brokers require a client certificate
    finally:
        factory.close()


def adapter_for(cluster, **options):
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter

    params = dict(connection_options(cluster.info), request_timeout=REQUEST_TIMEOUT)
    params.update(options)
    return KafkaAdapter.from_module_params(dict((name, value) for name, value in params.items() if value is not None))


def failure_of(operation, adapter):
    """(KafkaAdapterError, seconds it took to come)."""
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError

    started = time.monotonic()
    try:
        with pytest.raises(KafkaAdapterError) as raised:
            operation(adapter)
    finally:
        adapter.close()
    return raised.value, time.monotonic() - started


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_a_wrong_password_fails_at_once_naming_user_mechanism_and_broker(scram_cluster, name):
    servers = scram_cluster.info["bootstrap_servers"].split(",")
    assert len(servers) == 3, "every one of three servers would refuse the same password"
    adapter = adapter_for(scram_cluster, sasl_username=USER, sasl_password=WRONG_PASSWORD)
    error, elapsed = failure_of(OPERATIONS[name], adapter)
    message = str(error)
    print(f"{name}: failed after {elapsed:.2f} s (request timeout {REQUEST_TIMEOUT} s): {message}")

    assert elapsed < PROMPT < REQUEST_TIMEOUT, f"an answer, not a timeout: {elapsed:.1f} s"
    assert f"authentication failed for user '{USER}' with SASL mechanism {MECHANISM} at 127.0.0.1:" in message
    assert any(f" at {server} (SASL_PLAINTEXT): " in message for server in servers), "names the broker that refused"
    assert "invalid credentials" in message, "keeps the broker's reason"
    assert "Unable to bootstrap" not in message and message.count("authentication failed") == 1
    assert WRONG_PASSWORD not in message and PASSWORD not in message
    assert scram_cluster.info["sasl"]["password"] not in message


def test_an_unknown_user_and_an_unsupported_mechanism_are_refused_as_quickly(scram_cluster):
    for options, reason in (
        ({"sasl_username": "mallory", "sasl_password": WRONG_PASSWORD}, "invalid credentials"),
        ({"sasl_mechanism": "PLAIN", "sasl_username": USER, "sasl_password": PASSWORD}, "mechanism"),
    ):
        for name in ("describe_cluster (kafka-python)", "read_all (confluent-kafka consumer)"):
            error, elapsed = failure_of(OPERATIONS[name], adapter_for(scram_cluster, **options))
            message = str(error)
            assert elapsed < PROMPT, f"{name}: {elapsed:.1f} s"
            assert (
                "authentication failed for user '{0}' with SASL mechanism {1}".format(
                    options["sasl_username"], options.get("sasl_mechanism", MECHANISM)
                )
                in message
            )
            assert reason in message, message
            assert WRONG_PASSWORD not in message and PASSWORD not in message


def test_the_right_password_still_works_on_every_path(scram_cluster):
    adapter = adapter_for(scram_cluster, sasl_username=USER, sasl_password=PASSWORD)
    try:
        assert [broker["id"] for broker in adapter.describe_cluster()["brokers"]] == [1, 2, 3]
        assert adapter.ensure_topic(TOPIC) is False, "the topic exists already"
        assert adapter.produce(TOPIC, [(b"right", b"password")]) == []
        assert (b"right", b"password") in [(key, value) for key, value, _timestamp in adapter.read_all(TOPIC)]
    finally:
        adapter.close()


@pytest.mark.parametrize("name", ["describe_cluster (kafka-python)", "read_all (confluent-kafka consumer)"])
@pytest.mark.parametrize(
    "options, expected",
    [
        # The client certificate is no CA: it signed nothing, the broker's certificate cannot be verified with it.
        pytest.param(lambda tls: {"ssl_cafile": tls["cert"]}, "certificate verify failed", id="untrusted broker"),
        pytest.param(
            lambda tls: {"ssl_certfile": None, "ssl_keyfile": None},
            "the broker refused the client certificate",
            id="no client certificate",
        ),
    ],
)
def test_a_refused_tls_session_fails_at_once_naming_the_broker(tls_cluster, name, options, expected):
    server = tls_cluster.info["bootstrap_servers"].split(",")[0]
    error, elapsed = failure_of(OPERATIONS[name], adapter_for(tls_cluster, **options(tls_cluster.info["tls"])))
    message = str(error)
    print(f"{name}: failed after {elapsed:.2f} s: {message}")
    assert elapsed < PROMPT, f"an answer, not a timeout: {elapsed:.1f} s"
    assert f"TLS handshake failed with {server} (SSL): " in message
    assert expected in message
