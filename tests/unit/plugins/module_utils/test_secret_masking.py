"""The one mask: which names hold secrets, and the masking of texts and of property mappings."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import secret_masking
from ansible_collections.headroom.kafka.plugins.module_utils.secret_masking import MASK

ADMIN = "client.quota.callback.static.kafka.admin."


def test_the_mask_is_the_one_ansible_shows_for_a_no_log_value():
    assert MASK == "********"


@pytest.mark.parametrize(
    "name, secret",
    [
        (ADMIN + "ssl.keystore.password", True),
        (ADMIN + "ssl.truststore.password", True),
        ("ssl.key.password", True),
        (ADMIN + "sasl.jaas.config", True),
        ("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", True),
        (ADMIN + "ssl.keystore.key", True),  # a PEM private key
        ("SSL.KEYSTORE.KEY", True),
        ("password.encoder.secret", True),
        ("sasl_password", True),
        ("Sasl_Password", True),
        ("my_api_token", True),
        ("db_pwd", True),
        ("passphrase", True),
        ("client_credentials", True),
        (ADMIN + "ssl.keystore.certificate.chain", False),
        ("ssl.truststore.certificates", False),
        (ADMIN + "ssl.keystore.location", False),
        ("ssl.keystore.type", False),
        ("client.quota.callback.static.produce", False),
        ("sasl_username", False),
        ("ssl_cafile", False),
        ("security_protocol", False),
        (7, False),
    ],
)
def test_secret_names(name, secret):
    assert secret_masking.is_secret_name(name) is secret


@pytest.mark.parametrize(
    "text, secrets, masked",
    [
        ("password hunter2 and key pass s3cret", ("hunter2", None, "s3cret"), f"password {MASK} and key pass {MASK}"),
        ("hunter2 hunter2", ["hunter2"], f"{MASK} {MASK}"),
        ("the longer one: abcdef", ["abc", "abcdef"], f"the longer one: {MASK}"),
        ("nothing to hide", ["", None], "nothing to hide"),
        ("nothing to hide", [], "nothing to hide"),
        ("no secret here", {"hunter2"}, "no secret here"),
        ("", ["hunter2"], ""),
    ],
)
def test_without_secrets(text, secrets, masked):
    assert secret_masking.without_secrets(text, secrets) == masked


@pytest.mark.parametrize(
    "mapping, masked",
    [
        (
            {ADMIN + "sasl.jaas.config": "x", ADMIN + "ssl.keystore.location": "/x.p12", "produce": "1000"},
            {ADMIN + "sasl.jaas.config": MASK, ADMIN + "ssl.keystore.location": "/x.p12", "produce": "1000"},
        ),
        ({"ssl.keystore.key": "-----BEGIN PRIVATE KEY-----"}, {"ssl.keystore.key": MASK}),
        ({"ssl.key.password": None}, {"ssl.key.password": None}),  # nothing to hide: the diff still shows it unset
        ({"ssl.key.password": ""}, {"ssl.key.password": MASK}),
        ({"ssl.key.password": 0}, {"ssl.key.password": MASK}),
        ({}, {}),
        (None, {}),
    ],
)
def test_masked_values(mapping, masked):
    assert secret_masking.masked_values(mapping) == masked


def test_masked_values_keeps_the_order_and_leaves_its_input_alone():
    properties = {"b.password": "p", "a": "1", "c.token": "t"}
    result = secret_masking.masked_values(properties)
    assert list(result) == ["b.password", "a", "c.token"] and result["c.token"] == MASK
    assert properties == {"b.password": "p", "a": "1", "c.token": "t"}
