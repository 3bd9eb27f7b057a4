"""The principal a connection's options give, and the snapshot publisher kept out of the throttle it serves: excluded
by its user, by its client id under the <default> user, or refused with the option to set."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.disk_guard import (
    UNLIMITED_BYTE_RATE,
    Declaration,
    GuardError,
)
from ansible_collections.headroom.kafka.plugins.module_utils.internal_principals import (
    ANONYMOUS,
    PUBLISHER_CLIENT_ID,
    connection_principal,
    exclude_publisher,
)

TOPIC = "__headroom_volume_usage"
SASL = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "guard"}
PLAINTEXT = {"security_protocol": "PLAINTEXT"}
CERTIFICATE = {"security_protocol": "SSL", "ssl_certfile": "/etc/guard.pem", "ssl_keyfile": "/etc/guard.key"}
BASE = 1 << 20
PUBLISHER_ENTITY = (("client-id", PUBLISHER_CLIENT_ID), ("user", None))


def declaration(**options):
    return Declaration(None, default_producer_byte_rate=BASE, excluded_principals=["User:ops"], **options)


@pytest.mark.parametrize(
    "params, principal",
    [
        ({}, ANONYMOUS),
        (PLAINTEXT, ANONYMOUS),
        ({"security_protocol": "SSL", "ssl_cafile": "/etc/ca.pem"}, ANONYMOUS),
        (CERTIFICATE, None),
        (SASL, "User:guard"),
        (dict(SASL, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN"), "User:guard"),
    ],
)
def test_the_principal_kafka_gives_a_connection(params, principal):
    assert connection_principal(params) == principal


def test_a_sasl_publisher_joins_the_excluded_users_once():
    declared = declaration()
    said = exclude_publisher(SASL, declared, TOPIC)
    assert declared.excluded == ["ops", "guard"] and declared.excluded_client_ids == []
    assert said == f"snapshots are published to {TOPIC} as User:guard, excluded from the throttle as its publisher"
    said = exclude_publisher(SASL, declared, TOPIC)
    assert declared.excluded == ["ops", "guard"] and "which excluded_principals lists" in said
    assert declared.quotas_at(0.0)[(("user", "guard"),)][1] == {"producer_byte_rate": float(UNLIMITED_BYTE_RATE)}


@pytest.mark.parametrize("params", [PLAINTEXT, {"security_protocol": "SSL", "ssl_cafile": "/etc/ca.pem"}])
def test_an_anonymous_publisher_is_excluded_by_its_client_id_and_nobody_else_is(params):
    declared = declaration()
    said = exclude_publisher(params, declared, TOPIC)
    assert declared.excluded == ["ops"], "never User:ANONYMOUS: that would free every unauthenticated producer"
    held = declared.quotas_at(0.0)
    publisher = ({"user": None, "client-id": PUBLISHER_CLIENT_ID}, {"producer_byte_rate": float(UNLIMITED_BYTE_RATE)})
    assert held[PUBLISHER_ENTITY] == publisher
    assert held[(("user", None),)][1] == {"producer_byte_rate": 1.0}, "every other unauthenticated producer is held"
    assert f"as User:ANONYMOUS with client id {PUBLISHER_CLIENT_ID}" in said
    exclude_publisher(params, declared, TOPIC)
    assert declared.excluded_client_ids == [PUBLISHER_CLIENT_ID]


def test_a_declared_rate_of_the_publisher_client_id_is_kept_and_never_scaled():
    declared = Declaration(
        [{"entity": {"user": "<default>", "client_id": PUBLISHER_CLIENT_ID}, "producer_byte_rate": 4 * BASE}],
        default_producer_byte_rate=BASE,
    )
    exclude_publisher(PLAINTEXT, declared, TOPIC)
    assert declared.quotas_at(0.0)[PUBLISHER_ENTITY][1] == {"producer_byte_rate": 4.0 * BASE}


def test_an_anonymous_publisher_already_excluded_by_name_is_left_as_the_user_wrote_it():
    declared = Declaration(None, default_producer_byte_rate=BASE, excluded_principals=["User:ANONYMOUS"])
    said = exclude_publisher(PLAINTEXT, declared, TOPIC)
    assert "which excluded_principals lists" in said and declared.excluded_client_ids == []


@pytest.mark.parametrize(
    "entity, described",
    [
        ({"user": "ANONYMOUS"}, "user=ANONYMOUS"),
        ({"user": "ANONYMOUS", "client_id": "<default>"}, "user=ANONYMOUS,client_id=<default>"),
        ({"user": "ANONYMOUS", "client_id": PUBLISHER_CLIENT_ID}, f"user=ANONYMOUS,client_id={PUBLISHER_CLIENT_ID}"),
    ],
)
def test_a_declared_produce_rate_of_user_anonymous_would_outrank_the_client_id_and_is_refused(entity, described):
    declared = Declaration([{"entity": entity, "producer_byte_rate": BASE}], default_producer_byte_rate=BASE)
    with pytest.raises(GuardError, match=f"quotas declares a producer_byte_rate for {described}, which Kafka"):
        exclude_publisher(PLAINTEXT, declared, TOPIC)


def test_a_rate_of_user_anonymous_under_another_client_id_does_not_reach_the_publisher():
    declared = Declaration(
        [{"entity": {"user": "ANONYMOUS", "client_id": "batch"}, "producer_byte_rate": BASE}],
        default_producer_byte_rate=BASE,
    )
    assert f"with client id {PUBLISHER_CLIENT_ID}" in exclude_publisher(PLAINTEXT, declared, TOPIC)


def test_a_certificate_publisher_named_by_the_user_is_excluded_by_that_principal():
    declared = declaration()
    said = exclude_publisher(CERTIFICATE, declared, TOPIC, "User:CN=guard,O=example")
    assert declared.excluded == ["ops", "CN=guard,O=example"] and declared.excluded_client_ids == []
    assert "as User:CN=guard,O=example, excluded from the throttle" in said


@pytest.mark.parametrize(
    "params, principal, refused",
    [
        (
            CERTIFICATE,
            None,
            "--publisher is required with snapshot topic '__headroom_volume_usage' over a client certificate "
            "(ssl_certfile '/etc/guard.pem')",
        ),
        (CERTIFICATE, "CN=guard", "--publisher must be a principal written User:<name> (got 'CN=guard')"),
        (CERTIFICATE, "User:", "--publisher must be a principal written User:<name> (got 'User:')"),
        (SASL, "User:other", "--publisher 'User:other' is not the principal the guard publishes to "),
        (PLAINTEXT, "User:guard", "with these connection options the brokers see User:ANONYMOUS"),
    ],
)
def test_a_publisher_the_guard_cannot_exclude_is_refused_naming_the_option(params, principal, refused):
    declared = declaration()
    with pytest.raises(GuardError) as raised:
        exclude_publisher(params, declared, TOPIC, principal, option="--publisher")
    assert refused in str(raised.value)
    assert declared.excluded == ["ops"] and declared.excluded_client_ids == []


@pytest.mark.parametrize(
    "params, said_then",
    [
        (SASL, "the quota plugin that enforces must list it in its excluded principals"),
        (CERTIFICATE, "the quota plugin that enforces must list it in its excluded principals"),
        (PLAINTEXT, "excluding User:ANONYMOUS would free every unauthenticated producer, so publish over SASL"),
    ],
)
def test_a_guard_that_sets_no_quotas_excludes_nobody_and_says_what_the_plugin_needs(params, said_then):
    declared = declaration()
    said = exclude_publisher(params, declared, TOPIC, sets_quotas=False)
    assert declared.excluded == ["ops"] and declared.excluded_client_ids == []
    assert said_then in said
