"""The principal a connection's options give, and the snapshot publisher kept out of the throttle when it is named."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.internal_principals import (
    ANONYMOUS,
    connection_principal,
    publisher_exclusion,
)

SASL = {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "guard"}


@pytest.mark.parametrize(
    "params, principal",
    [
        ({}, ANONYMOUS),
        ({"security_protocol": "PLAINTEXT"}, ANONYMOUS),
        ({"security_protocol": "SSL", "ssl_cafile": "/etc/ca.pem"}, ANONYMOUS),
        ({"security_protocol": "SSL", "ssl_certfile": "/etc/guard.pem", "ssl_keyfile": "/etc/guard.key"}, None),
        (SASL, "User:guard"),
        (dict(SASL, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN"), "User:guard"),
    ],
)
def test_the_principal_kafka_gives_a_connection(params, principal):
    assert connection_principal(params) == principal


def test_a_sasl_publisher_joins_the_excluded_users_once():
    excluded = ["ops"]
    said = publisher_exclusion(SASL, excluded, "__headroom_volume_usage")
    assert excluded == ["ops", "guard"]
    expected = "snapshots are published to __headroom_volume_usage as User:guard, excluded from the throttle as its "
    assert said == expected + "publisher"
    said = publisher_exclusion(SASL, excluded, "__headroom_volume_usage")
    assert excluded == ["ops", "guard"] and "which excluded_principals lists" in said


@pytest.mark.parametrize(
    "params, named",
    [
        ({"security_protocol": "PLAINTEXT"}, "as User:ANONYMOUS, held with every unauthenticated producer"),
        ({"security_protocol": "SSL", "ssl_certfile": "c", "ssl_keyfile": "k"}, "list it in excluded_principals"),
    ],
)
def test_a_publisher_that_cannot_be_excluded_by_name_is_said_and_nobody_else_is_excluded(params, named):
    excluded = ["ops"]
    said = publisher_exclusion(params, excluded, "__headroom_volume_usage")
    assert excluded == ["ops"], "never User:ANONYMOUS: that would free every unauthenticated producer"
    assert named in said
