"""The quotas spec: validation messages, the broker properties in Strimzi's order, merging, masking and rendering."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import quota_plugin_spec
from kafka_testbed import properties as java_properties
from kafka_testbed.model import quota_plugin_config

P = "client.quota.callback.static."
A = P + "kafka.admin."
ADMIN = {"bootstrap_servers": ["kafka-1:9093", "kafka-2:9093"]}
STRIMZI = {"type": "strimzi", "min_available_bytes_per_volume": 5368709120}


def strimzi(**fields):
    spec = dict(STRIMZI)
    spec.update(fields)
    return spec


def render(spec, admin=None, internal=None, free_form=None):
    return quota_plugin_spec.quota_plugin_properties(spec, ADMIN if admin is None else admin, internal, free_form)


def error(spec, admin=None, internal=None, free_form=None):
    with pytest.raises(quota_plugin_spec.QuotaPluginSpecError) as info:
        quota_plugin_spec.render(spec, ADMIN if admin is None else admin, internal, free_form)
    return str(info.value)


# -- the order and the values ------------------------------------------------------------------------------------
FULL_SPEC = {
    "type": "strimzi",
    "producer_byte_rate": 1000000,
    "consumer_byte_rate": 2000000,
    "min_available_ratio_per_volume": 0.1,
    "excluded_principals": ["User:my-special-user", "User:CN=broker,O=example"],
    "check_interval": "PT1M",
    "throttle_factor_fallback": 0.5,
    "throttle_factor_validity": "PT5M",
}
FULL_ADMIN = {
    "bootstrap_servers": "kafka-1:9093, kafka-2:9093",
    "security_protocol": "SSL",
    "ssl": {
        "truststore_type": "PKCS12",
        "truststore_location": "/etc/kafka/ca.p12",
        "truststore_password": "trust-secret",
        "keystore_type": "PKCS12",
        "keystore_location": "/etc/kafka/quota.p12",
        "keystore_password": "store-secret",
        "key_password": "key-secret",
        "endpoint_identification_algorithm": "",
    },
    "properties": {"request.timeout.ms": 15000, "client.id": "quota-plugin"},
}


def test_strimzi_order_follows_the_operator():
    """kafka-facts section 2: class, admin bootstrap, admin TLS lines, produce, fetch, limit, excluded; then tuning."""
    props = quota_plugin_spec.quota_plugin_properties(
        FULL_SPEC, FULL_ADMIN, ["User:CN=broker,O=example", "User:CN=cruise-control,O=example"]
    )
    assert list(props.items()) == [
        ("client.quota.callback.class", "io.strimzi.kafka.quotas.StaticQuotaCallback"),
        (A + "bootstrap.servers", "kafka-1:9093,kafka-2:9093"),
        (A + "security.protocol", "SSL"),
        (A + "ssl.keystore.location", "/etc/kafka/quota.p12"),
        (A + "ssl.keystore.password", "store-secret"),
        (A + "ssl.key.password", "key-secret"),
        (A + "ssl.keystore.type", "PKCS12"),
        (A + "ssl.truststore.location", "/etc/kafka/ca.p12"),
        (A + "ssl.truststore.password", "trust-secret"),
        (A + "ssl.truststore.type", "PKCS12"),
        (A + "ssl.endpoint.identification.algorithm", ""),
        (A + "client.id", "quota-plugin"),
        (A + "request.timeout.ms", "15000"),
        (P + "produce", "1000000"),
        (P + "fetch", "2000000"),
        (P + "storage.per.volume.limit.min.available.ratio", "0.1"),
        (
            P + "excluded.principal.name.list",
            "User:CN=broker,O=example;User:CN=cruise-control,O=example;User:my-special-user",
        ),
        (P + "storage.check-interval", "60"),
        (P + "throttle.factor.fallback", "0.5"),
        (P + "throttle.factor.validity.duration", "PT5M"),
    ]
    assert quota_plugin_config.validate(props) == []
    loaded = quota_plugin_config.load(props)
    assert loaded.excluded_principals == ("CN=broker,O=example", "CN=cruise-control,O=example", "my-special-user")
    assert loaded.check_interval_s == 60 and loaded.min_available_ratio == 0.1 and loaded.validity_s == 300


def test_pem_stores_as_strimzi_writes_them():
    admin = {
        "bootstrap_servers": ["kafka-1:9093"],
        "ssl": {
            "keystore_certificate_chain": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
            "keystore_key": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----",
            "truststore_certificates": "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----",
        },
    }
    props = render(STRIMZI, admin)
    assert [k[len(A) :] for k in props if k.startswith(A)] == [
        "bootstrap.servers",
        "security.protocol",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.type",
        "ssl.truststore.certificates",
        "ssl.truststore.type",
    ]
    assert props[A + "security.protocol"] == "SSL"
    assert props[A + "ssl.keystore.type"] == props[A + "ssl.truststore.type"] == "PEM"
    assert quota_plugin_config.validate(props) == []


def test_minimal_strimzi_spec():
    props = render(STRIMZI)
    assert props == {
        "client.quota.callback.class": "io.strimzi.kafka.quotas.StaticQuotaCallback",
        A + "bootstrap.servers": "kafka-1:9093,kafka-2:9093",
        P + "storage.per.volume.limit.min.available.bytes": "5368709120",
    }
    assert quota_plugin_config.validate(props) == []


@pytest.mark.parametrize(
    "spec",
    [
        strimzi(producer_byte_rate=0, consumer_byte_rate=0),
        strimzi(min_available_bytes_per_volume=0),
        {"type": "strimzi", "min_available_ratio_per_volume": 1},
        {"type": "strimzi", "min_available_ratio_per_volume": 0.0, "throttle_factor_fallback": 0},
        strimzi(check_interval=0),
        strimzi(check_interval="P1D", throttle_factor_validity=30),
        strimzi(throttle_factor_validity="pt0.5s"),
        strimzi(producer_byte_rate=9223372036854775807),
    ],
)
def test_edge_values_the_plugin_accepts(spec):
    assert quota_plugin_config.validate(render(spec)) == []


def test_kafka_type_writes_nothing():
    assert (
        quota_plugin_spec.quota_plugin_properties(
            {"type": "kafka", "producer_byte_rate": 1024, "request_percentage": 55}
        )
        == {}
    )
    assert (
        quota_plugin_spec.quota_plugin_properties({"type": "kafka"}, {"bootstrap_servers": []}, ["not checked"]) == {}
    )


@pytest.mark.parametrize(
    "value, text",
    [
        (1000, "1000"),
        (1000.0, "1000"),
        (0.1, "0.1"),
        (0.5, "0.5"),
        (1.0, "1"),
        (0, "0"),
        (0.0, "0"),
        (1e-05, "1e-05"),
        (0.30000000000000004, "0.30000000000000004"),
        (5368709120, "5368709120"),
        (1e20, "1e+20"),
        (True, "true"),
        (False, "false"),
    ],
)
def test_number_formatting(value, text):
    assert quota_plugin_spec.format_number(value) == text
    if not isinstance(value, bool):
        assert float(text) == value


@pytest.mark.parametrize(
    "field, value, key, text",
    [
        ("producer_byte_rate", 1048576.0, P + "produce", "1048576"),
        ("consumer_byte_rate", "2097152", P + "fetch", "2097152"),
        ("min_available_bytes_per_volume", 1e9, P + "storage.per.volume.limit.min.available.bytes", "1000000000"),
        ("check_interval", 30, P + "storage.check-interval", "30"),
        ("check_interval", "45", P + "storage.check-interval", "45"),
        ("check_interval", 30.0, P + "storage.check-interval", "30"),
        ("check_interval", "PT1M", P + "storage.check-interval", "60"),
        ("check_interval", "PT1H30M", P + "storage.check-interval", "5400"),
        ("check_interval", "P1D", P + "storage.check-interval", "86400"),
        ("throttle_factor_fallback", 0.25, P + "throttle.factor.fallback", "0.25"),
        ("throttle_factor_fallback", 1, P + "throttle.factor.fallback", "1"),
        ("throttle_factor_validity", "PT5M", P + "throttle.factor.validity.duration", "PT5M"),
        ("throttle_factor_validity", "PT300S", P + "throttle.factor.validity.duration", "PT5M"),
        ("throttle_factor_validity", "P1D", P + "throttle.factor.validity.duration", "PT24H"),
        ("throttle_factor_validity", 90, P + "throttle.factor.validity.duration", "PT1M30S"),
        ("throttle_factor_validity", "PT0.25S", P + "throttle.factor.validity.duration", "PT0.25S"),
    ],
)
def test_values_written_as_kafka_parses_them(field, value, key, text):
    props = render(strimzi(**{field: value}))
    assert props[key] == text
    assert quota_plugin_config.validate(props) == []


def test_ratio_written_minimal():
    props = render({"type": "strimzi", "min_available_ratio_per_volume": 0.15})
    assert props[P + "storage.per.volume.limit.min.available.ratio"] == "0.15"


def test_unset_fields_are_not_written():
    props = render(strimzi(producer_byte_rate=None, excluded_principals=None, check_interval=None))
    assert (
        P + "produce" not in props
        and P + "excluded.principal.name.list" not in props
        and P + "storage.check-interval" not in props
    )


# -- excluded principals -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "internal, user, expected",
    [
        (["User:CN=broker"], ["User:alice"], "User:CN=broker;User:alice"),
        (
            ["User:CN=broker", "User:CN=cc"],
            ["User:CN=cc", "User:alice", "User:alice", "User:CN=broker"],
            "User:CN=broker;User:CN=cc;User:alice",
        ),
        (["User:b", "User:b"], None, "User:b"),
        (None, ["User:z", "User:a"], "User:z;User:a"),
        ([], ["User:CN=app,OU=team,O=example"], "User:CN=app,OU=team,O=example"),
    ],
)
def test_excluded_principals_internal_first_no_duplicates(internal, user, expected):
    props = render(strimzi(excluded_principals=user), internal=internal)
    assert props[P + "excluded.principal.name.list"] == expected
    assert quota_plugin_config.validate(props) == []
    assert ";".join("User:" + name for name in quota_plugin_config.load(props).excluded_principals) == expected


SCRAM_ADMIN = {"bootstrap_servers": ["k:9094"], "sasl": {"mechanism": "SCRAM-SHA-512", "username": "quota-admin"}}


@pytest.mark.parametrize(
    "admin, internal, expected",
    [
        # the admin client's user first, once, whether or not listed
        (dict(SCRAM_ADMIN, sasl=dict(SCRAM_ADMIN["sasl"], password="s")), None, "User:quota-admin;User:alice"),
        (
            dict(SCRAM_ADMIN, sasl=dict(SCRAM_ADMIN["sasl"], password="s")),
            ["User:CN=broker", "User:quota-admin"],
            "User:CN=broker;User:quota-admin;User:alice",
        ),
        (
            {
                "bootstrap_servers": ["k:9094"],
                "sasl": {
                    "mechanism": "PLAIN",
                    "jaas_config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="q\\"a" '
                    'password="s";',
                },
            },
            None,
            'User:q"a;User:alice',
        ),
        # no name to exclude: anonymous, or a certificate the brokers name
        (ADMIN, None, "User:alice"),
        (FULL_ADMIN, None, "User:alice"),
    ],
)
def test_the_plugin_admin_clients_user_is_excluded_automatically(admin, internal, expected):
    props = render(strimzi(excluded_principals=["User:alice"]), admin=admin, internal=internal)
    assert props[P + "excluded.principal.name.list"] == expected
    assert quota_plugin_config.validate(props) == []


@pytest.mark.parametrize("internal, user", [(None, None), ([], []), (None, [])])
def test_excluded_principals_never_written_empty(internal, user):
    assert P + "excluded.principal.name.list" not in render(strimzi(excluded_principals=user), internal=internal)


# -- validation -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, admin, internal, expected",
    [
        # the spec itself
        (None, None, None, "kafka_quotas must be a dict with type kafka or strimzi (got None)"),
        ({}, None, None, "kafka_quotas.type is required: kafka"),
        ({"producer_byte_rate": 1}, None, None, "kafka_quotas.type is required"),
        ({"type": "Strimzi"}, None, None, "kafka_quotas.type must be kafka or strimzi (got 'Strimzi')"),
        (
            {"type": "kafka", "producerByteRate": 1},
            None,
            None,
            "kafka_quotas has unknown key(s) producerByteRate; allowed with type kafka: type, producer_byte_rate, "
            "consumer_byte_rate, request_percentage, controller_mutation_rate",
        ),
        (
            strimzi(min_available_bytes=1),
            None,
            None,
            "kafka_quotas has unknown key(s) min_available_bytes; allowed with type strimzi: type, "
            "producer_byte_rate, consumer_byte_rate, min_available_bytes_per_volume, min_available_ratio_per_volume, "
            "excluded_principals, check_interval, throttle_factor_fallback, throttle_factor_validity",
        ),
        # type and fields that do not go together
        (
            {"type": "kafka", "min_available_bytes_per_volume": 10},
            None,
            None,
            "kafka_quotas.min_available_bytes_per_volume (got 10) is a Strimzi quota plugin setting "
            "and applies to type strimzi only",
        ),
        (
            {"type": "kafka", "min_available_ratio_per_volume": 0.1},
            None,
            None,
            "kafka_quotas.min_available_ratio_per_volume (got 0.1) is a Strimzi",
        ),
        (
            {"type": "kafka", "excluded_principals": ["User:a"]},
            None,
            None,
            "kafka_quotas.excluded_principals (got ['User:a']) is a Strimzi",
        ),
        ({"type": "kafka", "check_interval": 30}, None, None, "kafka_quotas.check_interval (got 30) is a Strimzi"),
        (
            {"type": "kafka", "throttle_factor_fallback": 0},
            None,
            None,
            "kafka_quotas.throttle_factor_fallback (got 0) is a Strimzi",
        ),
        (
            {"type": "kafka", "throttle_factor_validity": "PT1M"},
            None,
            None,
            "kafka_quotas.throttle_factor_validity (got 'PT1M') is a Strimzi",
        ),
        (
            strimzi(request_percentage=55),
            None,
            None,
            "kafka_quotas.request_percentage (got 55) applies to type kafka only",
        ),
        (
            strimzi(controller_mutation_rate=5),
            None,
            None,
            "kafka_quotas.controller_mutation_rate (got 5) applies to type kafka only",
        ),
        # volume limits
        (
            {"type": "strimzi"},
            None,
            None,
            "kafka_quotas needs exactly one of min_available_bytes_per_volume (bytes) or "
            "min_available_ratio_per_volume (0 to 1) with type strimzi (got neither)",
        ),
        (
            strimzi(min_available_ratio_per_volume=0.1),
            None,
            None,
            "kafka_quotas sets both min_available_bytes_per_volume (5368709120) "
            "and min_available_ratio_per_volume (0.1); give exactly one",
        ),
        (
            {"type": "strimzi", "min_available_ratio_per_volume": 1.5},
            None,
            None,
            "kafka_quotas.min_available_ratio_per_volume must be between 0 and 1 inclusive (got 1.5)",
        ),
        (
            {"type": "strimzi", "min_available_ratio_per_volume": -0.1},
            None,
            None,
            "kafka_quotas.min_available_ratio_per_volume must be between 0 and 1 inclusive (got -0.1)",
        ),
        (
            {"type": "strimzi", "min_available_ratio_per_volume": "10%"},
            None,
            None,
            "kafka_quotas.min_available_ratio_per_volume must be a number (got '10%')",
        ),
        (
            {"type": "strimzi", "min_available_ratio_per_volume": float("nan")},
            None,
            None,
            "kafka_quotas.min_available_ratio_per_volume must be a finite number (got nan)",
        ),
        (
            strimzi(min_available_bytes_per_volume=-1),
            None,
            None,
            "kafka_quotas.min_available_bytes_per_volume must not be negative (got -1)",
        ),
        (
            strimzi(min_available_bytes_per_volume=1.5),
            None,
            None,
            "kafka_quotas.min_available_bytes_per_volume must be a whole number (got 1.5)",
        ),
        (
            strimzi(min_available_bytes_per_volume=2**63),
            None,
            None,
            "kafka_quotas.min_available_bytes_per_volume must be at most 9223372036854775807 (got 9223372036854775808)",
        ),
        (
            strimzi(min_available_bytes_per_volume=True),
            None,
            None,
            "kafka_quotas.min_available_bytes_per_volume must be a number (got True)",
        ),
        # byte rates
        (
            strimzi(producer_byte_rate=-1),
            None,
            None,
            "kafka_quotas.producer_byte_rate must not be negative (got -1); it is the default produce quota",
        ),
        (
            strimzi(consumer_byte_rate=-0.5),
            None,
            None,
            "kafka_quotas.consumer_byte_rate must not be negative (got -0.5); it is the default fetch quota",
        ),
        (
            strimzi(consumer_byte_rate=10.5),
            None,
            None,
            "kafka_quotas.consumer_byte_rate must be a whole number (got 10.5)",
        ),
        (
            strimzi(producer_byte_rate="fast"),
            None,
            None,
            "kafka_quotas.producer_byte_rate must be a number (got 'fast')",
        ),
        (
            {"type": "kafka", "producer_byte_rate": -1},
            None,
            None,
            "kafka_quotas.producer_byte_rate must be greater than 0 (got -1)",
        ),
        (
            {"type": "kafka", "producer_byte_rate": 0},
            None,
            None,
            "kafka_quotas.producer_byte_rate must be greater than 0 (got 0)",
        ),
        (
            {"type": "kafka", "consumer_byte_rate": 1.5},
            None,
            None,
            "kafka_quotas.consumer_byte_rate must be a whole number from 1 to",
        ),
        (
            {"type": "kafka", "request_percentage": -5},
            None,
            None,
            "kafka_quotas.request_percentage must be greater than 0 (got -5)",
        ),
        (
            {"type": "kafka", "controller_mutation_rate": "x"},
            None,
            None,
            "kafka_quotas.controller_mutation_rate must be a number (got 'x')",
        ),
        # principals
        (
            strimzi(excluded_principals=["alice"]),
            None,
            None,
            "kafka_quotas.excluded_principals[0] 'alice' is not a principal the quota plugin reads: "
            "write it as User:CN=... (a TLS client's distinguished name) or User:alice (a SASL user name)",
        ),
        (
            strimzi(excluded_principals=["User:a", "CN=broker,O=example"]),
            None,
            None,
            "kafka_quotas.excluded_principals[1] 'CN=broker,O=example' is not a principal the quota plugin reads: "
            "write it as User:CN=...",
        ),
        (
            strimzi(excluded_principals=["user:alice"]),
            None,
            None,
            "kafka_quotas.excluded_principals[0] 'user:alice' is not a principal",
        ),
        (
            strimzi(excluded_principals=["User:"]),
            None,
            None,
            "kafka_quotas.excluded_principals[0] 'User:' is not a principal",
        ),
        (
            strimzi(excluded_principals=[" User:alice"]),
            None,
            None,
            "kafka_quotas.excluded_principals[0] ' User:alice' is not a principal",
        ),
        (
            strimzi(excluded_principals=["User:alice "]),
            None,
            None,
            "kafka_quotas.excluded_principals[0] 'User:alice ' has white space",
        ),
        (
            strimzi(excluded_principals=["User:a;User:b"]),
            None,
            None,
            "kafka_quotas.excluded_principals[0] 'User:a;User:b' holds ';'",
        ),
        (strimzi(excluded_principals=["User:aUser:b"]), None, None, "holds ';' or a second 'User:'"),
        (
            strimzi(excluded_principals="User:alice"),
            None,
            None,
            "kafka_quotas.excluded_principals must be a list of principals",
        ),
        (
            strimzi(excluded_principals=[42]),
            None,
            None,
            "kafka_quotas.excluded_principals[0] must be a string (got 42); write it as User:",
        ),
        (
            STRIMZI,
            None,
            ["CN=broker"],
            "internal_principals[0] 'CN=broker' is not a principal the quota plugin reads: write it as User:CN=",
        ),
        # durations and the fallback
        (strimzi(check_interval=-1), None, None, "kafka_quotas.check_interval must not be negative (got -1)"),
        (
            strimzi(check_interval="PT1S"),
            None,
            None,
            "kafka_quotas.check_interval must be 0 (storage checks off) or at least 2 seconds (got 'PT1S'): the plugin "
            "gives each check the interval less one second, so at 1 every check times out",
        ),
        (strimzi(check_interval="PT-1M"), None, None, "kafka_quotas.check_interval must not be negative (got 'PT-1M')"),
        (
            strimzi(check_interval="PT1.5S"),
            None,
            None,
            "kafka_quotas.check_interval must be a whole number of seconds (got 'PT1.5S')",
        ),
        (
            strimzi(check_interval=2.5),
            None,
            None,
            "kafka_quotas.check_interval must be a whole number of seconds (got 2.5)",
        ),
        (
            strimzi(check_interval="1m"),
            None,
            None,
            "kafka_quotas.check_interval must be an ISO 8601 duration such as PT5M",
        ),
        (strimzi(check_interval="P1M"), None, None, "years, months and weeks are periods, not durations"),
        (
            strimzi(check_interval=2**31),
            None,
            None,
            "kafka_quotas.check_interval must be at most 2147483647 seconds (got 2147483648)",
        ),
        (
            strimzi(throttle_factor_validity="5 minutes"),
            None,
            None,
            "kafka_quotas.throttle_factor_validity must be an ISO 8601 duration such as PT5M, PT30S, PT0.5S, PT1H30M "
            "or P1D, or a number of seconds (got '5 minutes')",
        ),
        (
            strimzi(throttle_factor_validity="P1H"),
            None,
            None,
            "hours, minutes and seconds go after a T (PT1H, not P1H)",
        ),
        (strimzi(throttle_factor_validity="PT"), None, None, "a T must be followed by hours, minutes or seconds"),
        (
            strimzi(throttle_factor_validity="PT0S"),
            None,
            None,
            "kafka_quotas.throttle_factor_validity must be longer than zero (got 'PT0S')",
        ),
        (
            strimzi(throttle_factor_validity="-PT5M"),
            None,
            None,
            "kafka_quotas.throttle_factor_validity must be longer than zero (got '-PT5M')",
        ),
        (
            strimzi(throttle_factor_fallback=1.1),
            None,
            None,
            "kafka_quotas.throttle_factor_fallback must be between 0 and 1 inclusive (got 1.1)",
        ),
        (
            strimzi(throttle_factor_fallback=-1),
            None,
            None,
            "kafka_quotas.throttle_factor_fallback must be between 0 and 1 inclusive (got -1)",
        ),
        # the admin client
        (STRIMZI, {}, None, "admin.bootstrap_servers is required with type strimzi"),
        (STRIMZI, {"bootstrap_servers": []}, None, "admin.bootstrap_servers is required with type strimzi"),
        (STRIMZI, {"bootstrap_servers": ""}, None, "admin.bootstrap_servers is required with type strimzi"),
        (STRIMZI, {"bootstrap_servers": None}, None, "admin.bootstrap_servers is required with type strimzi"),
        (
            STRIMZI,
            {"bootstrap_servers": ["kafka-1"]},
            None,
            "admin.bootstrap_servers[0] must be host:port, such as kafka-1:9093 or [::1]:9093 (got 'kafka-1')",
        ),
        (STRIMZI, {"bootstrap_servers": "k1:9093,,k2:9093"}, None, "admin.bootstrap_servers[1] must be host:port"),
        (STRIMZI, {"bootstrap_servers": ["k1:99999"]}, None, "admin.bootstrap_servers[0] must be host:port"),
        (
            STRIMZI,
            {"bootstrap_servers": 9093},
            None,
            "admin.bootstrap_servers must be a list of host:port or a comma-separated string (got 9093)",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "bootstrap": "x"},
            None,
            "admin has unknown key(s) bootstrap; allowed: bootstrap_servers, security_protocol, ssl, sasl, properties",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "security_protocol": "TLS"},
            None,
            "admin.security_protocol must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (got 'TLS')",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "ssl": {"truststore_path": "/x"}},
            None,
            "admin.ssl has unknown key(s) truststore_path; allowed: keystore_location, keystore_certificate_chain",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "ssl": {"keystore_password": 123456}},
            None,
            "admin.ssl.keystore_password must be a string (got 123456); quote it in YAML",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "ssl": {"truststore_location": "/x"}, "security_protocol": "SASL_PLAINTEXT"},
            None,
            "admin.ssl is set but admin.security_protocol is SASL_PLAINTEXT, which does not use TLS: "
            "use SSL or SASL_SSL",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "ssl": {"keystore_key": "KEY"}},
            None,
            "admin.ssl.keystore_certificate_chain and admin.ssl.keystore_key go together",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "ssl": {"truststore_certificates": "CA", "truststore_location": "/ca.p12"}},
            None,
            "admin.ssl.truststore_location and admin.ssl.truststore_certificates are both set",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "ssl": {"truststore_certificates": "CA", "truststore_type": "JKS"}},
            None,
            "admin.ssl.truststore_type must be PEM when admin.ssl.truststore_certificates is given (got 'JKS')",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "sasl": {"user": "a"}},
            None,
            "admin.sasl has unknown key(s) user; allowed: mechanism, username, password, jaas_config",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "sasl": {"username": "a", "password": "b"}},
            None,
            "admin.sasl.mechanism is required with admin.sasl",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "sasl": {"mechanism": "PLAIN", "username": "a"}},
            None,
            "admin.sasl needs username and password (or jaas_config) with mechanism PLAIN",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "sasl": {"mechanism": "OAUTHBEARER", "username": "a", "password": "b"}},
            None,
            "admin.sasl.mechanism 'OAUTHBEARER' has no built-in login with username and password",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "sasl": {"mechanism": "PLAIN", "username": "a", "jaas_config": "x"}},
            None,
            "admin.sasl.username cannot be combined with admin.sasl.jaas_config",
        ),
        (
            STRIMZI,
            {
                "bootstrap_servers": ["k:1"],
                "security_protocol": "SSL",
                "sasl": {"mechanism": "PLAIN", "jaas_config": "x"},
            },
            None,
            "admin.sasl is set but admin.security_protocol is SSL, which does not use SASL: "
            "use SASL_SSL or SASL_PLAINTEXT",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "properties": {"ssl.truststore.location": "/x"}},
            None,
            "admin.properties['ssl.truststore.location'] is set through admin.ssl.truststore_location",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "properties": {"bootstrap.servers": "k:2"}},
            None,
            "admin.properties['bootstrap.servers'] is set through admin.bootstrap_servers",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "properties": {"sasl.jaas.config": "x"}},
            None,
            "admin.properties['sasl.jaas.config'] is set through admin.sasl.jaas_config",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "properties": {A + "client.id": "x"}},
            None,
            "admin.properties['"
            + A
            + "client.id']: write the admin client setting without the plugin prefix, for example 'client.id'",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "properties": {"client id": "x"}},
            None,
            "admin.properties['client id'] is not a Kafka setting name",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "properties": {"client.id": None}},
            None,
            "admin.properties['client.id'] must be a string, number or boolean (got None)",
        ),
        (
            STRIMZI,
            {"bootstrap_servers": ["k:1"], "properties": ["client.id=x"]},
            None,
            "admin.properties must be a dict of Kafka admin client settings",
        ),
        (STRIMZI, "kafka-1:9093", None, "admin must be a dict with keys bootstrap_servers"),
    ],
)
def test_validation_names_field_value_and_rule(spec, admin, internal, expected):
    with pytest.raises(quota_plugin_spec.QuotaPluginSpecError) as info:
        quota_plugin_spec.render(spec, ADMIN if admin is None else admin, internal)
    assert expected in str(info.value)


def test_admin_required_with_strimzi():
    with pytest.raises(
        quota_plugin_spec.QuotaPluginSpecError, match="admin.bootstrap_servers is required with type strimzi"
    ):
        quota_plugin_spec.quota_plugin_properties(STRIMZI)


def test_validation_runs_before_free_form_is_touched():
    free_form = {"client.quota.callback.static.storage.soft": "1"}
    assert "needs exactly one of" in error({"type": "strimzi"}, free_form=free_form)
    assert free_form == {"client.quota.callback.static.storage.soft": "1"}


# -- admin security lines -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "mechanism, module",
    [
        ("SCRAM-SHA-512", "org.apache.kafka.common.security.scram.ScramLoginModule"),
        ("SCRAM-SHA-256", "org.apache.kafka.common.security.scram.ScramLoginModule"),
        ("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule"),
    ],
)
def test_sasl_username_password_become_jaas_config(mechanism, module):
    admin = {"bootstrap_servers": ["k:1"], "sasl": {"mechanism": mechanism, "username": "quota", "password": 'p"a\\ss'}}
    props = render(STRIMZI, admin)
    assert props[A + "security.protocol"] == "SASL_SSL"
    assert props[A + "sasl.mechanism"] == mechanism
    assert props[A + "sasl.jaas.config"] == module + ' required username="quota" password="p\\"a\\\\ss";'
    assert list(props)[1:5] == [
        A + "bootstrap.servers",
        A + "security.protocol",
        A + "sasl.mechanism",
        A + "sasl.jaas.config",
    ]


def test_sasl_jaas_config_as_given_and_explicit_protocol():
    jaas = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
    admin = {
        "bootstrap_servers": "k:1",
        "security_protocol": "sasl_plaintext",
        "sasl": {"mechanism": "OAUTHBEARER", "jaas_config": jaas},
    }
    props = render(STRIMZI, admin)
    assert props[A + "security.protocol"] == "SASL_PLAINTEXT"
    assert props[A + "sasl.jaas.config"] == jaas


def test_sasl_over_tls_order():
    admin = {
        "bootstrap_servers": "k:1",
        "ssl": {"truststore_location": "/ca.p12", "truststore_type": "PKCS12"},
        "sasl": {"mechanism": "SCRAM-SHA-512", "username": "u", "password": "p"},
        "properties": {"b.key": True, "a.key": 1.5},
    }
    props = render(STRIMZI, admin)
    assert [k[len(A) :] for k in props if k.startswith(A)] == [
        "bootstrap.servers",
        "security.protocol",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "sasl.mechanism",
        "sasl.jaas.config",
        "a.key",
        "b.key",
    ]
    assert props[A + "security.protocol"] == "SASL_SSL"
    assert props[A + "b.key"] == "true" and props[A + "a.key"] == "1.5"


def test_plaintext_written_only_when_asked():
    assert A + "security.protocol" not in render(STRIMZI, {"bootstrap_servers": "k:1"})
    assert (
        render(STRIMZI, {"bootstrap_servers": "k:1", "security_protocol": "PLAINTEXT"})[A + "security.protocol"]
        == "PLAINTEXT"
    )


def test_ipv6_bootstrap_server():
    assert (
        render(STRIMZI, {"bootstrap_servers": ["[::1]:9093", "10.0.0.1:9093"]})[A + "bootstrap.servers"]
        == "[::1]:9093,10.0.0.1:9093"
    )


def test_admin_ignored_for_kafka_type():
    assert quota_plugin_spec.quota_plugin_properties({"type": "kafka"}, {"unknown": 1}) == {}


# -- default user quotas --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, expected",
    [
        (
            {
                "type": "kafka",
                "producer_byte_rate": 1048576,
                "consumer_byte_rate": 2097152.0,
                "request_percentage": 55,
                "controller_mutation_rate": 50.5,
            },
            {
                "entity": {"user": "<default>"},
                "producer_byte_rate": 1048576,
                "consumer_byte_rate": 2097152,
                "request_percentage": 55,
                "controller_mutation_rate": 50.5,
            },
        ),
        (
            {"type": "kafka", "consumer_byte_rate": 1024, "request_percentage": None},
            {"entity": {"user": "<default>"}, "consumer_byte_rate": 1024},
        ),
        ({"type": "kafka"}, {"entity": {"user": "<default>"}, "state": "absent"}),
        (
            strimzi(producer_byte_rate=1000, consumer_byte_rate=1000),
            {"entity": {"user": "<default>"}, "state": "absent"},
        ),
    ],
)
def test_default_user_quotas(spec, expected):
    entry = quota_plugin_spec.default_user_quotas(spec)
    assert entry == expected
    assert isinstance(entry.get("consumer_byte_rate", 0), int)


def test_default_user_quotas_are_client_quota_entries():
    from ansible_collections.headroom.kafka.plugins.module_utils import quota_spec

    entry = quota_plugin_spec.default_user_quotas(
        {"type": "kafka", "producer_byte_rate": 1024, "request_percentage": 12.5}
    )
    desired = quota_spec.desired_state([entry])
    assert list(desired.values()) == [({"user": None}, {"producer_byte_rate": 1024.0, "request_percentage": 12.5})]
    assert quota_spec.desired_state([quota_plugin_spec.default_user_quotas(STRIMZI)]) == {
        (("user", None),): ({"user": None}, {})
    }


def test_default_user_quotas_validates():
    with pytest.raises(
        quota_plugin_spec.QuotaPluginSpecError, match="kafka_quotas.request_percentage .* applies to type kafka only"
    ):
        quota_plugin_spec.default_user_quotas(strimzi(request_percentage=5))


# -- merging with free-form properties ------------------------------------------------------------------------------
def test_merge_overrides_plugin_keys_with_a_warning_each():
    free_form = {
        "log.dirs": "/var/lib/kafka",
        "client.quota.callback.class": "com.example.OtherCallback",
        P + "produce": "5",
        P + "storage.per.volume.limit.min.available.ratio": "0.2",
        A + "bootstrap.servers": "old:9092",
        P + "request": "100",
        P + "kafka.clientIdPrefix": "__quota",
        "num.io.threads": 8,
    }
    rendered = render(strimzi(producer_byte_rate=1000))
    merged, warnings = quota_plugin_spec.merge_properties(free_form, rendered)
    assert list(merged) == ["log.dirs", P + "request", P + "kafka.clientIdPrefix", "num.io.threads"] + list(rendered)
    assert merged["num.io.threads"] == 8 and merged[P + "produce"] == "1000"
    assert [w.split()[3] for w in warnings] == [
        "client.quota.callback.class",
        P + "produce",
        P + "storage.per.volume.limit.min.available.ratio",
        A + "bootstrap.servers",
    ]
    assert all("is overridden by kafka_quotas (type strimzi)" in w for w in warnings)
    assert quota_plugin_config.validate(merged) == []
    assert not any("old:9092" in w or "0.2" in w for w in warnings)


def test_merge_removes_legacy_keys_with_a_warning():
    free_form = {P + "storage.soft": "1000", P + "storage.hard": "500", P + "storage.check-interval": "30"}
    merged, warnings = quota_plugin_spec.merge_properties(free_form, render(STRIMZI))
    assert P + "storage.soft" not in merged and P + "storage.hard" not in merged
    assert len(warnings) == 3
    assert warnings[0].startswith("free-form broker property " + P + "storage.soft is a legacy quota plugin key")
    assert warnings[1].startswith("free-form broker property " + P + "storage.hard is a legacy quota plugin key")
    assert "storage.check-interval is overridden" in warnings[2]


def test_merge_for_kafka_type_removes_every_plugin_key():
    free_form = {
        "client.quota.callback.class": "io.strimzi.kafka.quotas.StaticQuotaCallback",
        P + "produce": "1",
        P + "storage.hard": "1",
        "quota.window.num": "11",
    }
    merged, warnings = quota_plugin_spec.merge_properties(free_form, {})
    assert merged == {"quota.window.num": "11"}
    assert warnings[0] == (
        "free-form broker property client.quota.callback.class is removed: kafka_quotas has type kafka, "
        "so the quota plugin is not used"
    )
    assert len(warnings) == 3 and "legacy" in warnings[2]


def test_merge_without_conflicts_is_silent():
    merged, warnings = quota_plugin_spec.merge_properties({"a": "1"}, {"b": "2"})
    assert merged == {"a": "1", "b": "2"} and warnings == []
    assert quota_plugin_spec.merge_properties(None, {}) == ({}, [])


def test_merge_refuses_a_non_dict():
    with pytest.raises(quota_plugin_spec.QuotaPluginSpecError, match="free-form broker properties must be a dict"):
        quota_plugin_spec.merge_properties(["a=1"], {})


def test_render_with_free_form_merges():
    props, warnings = quota_plugin_spec.render(
        {"type": "kafka"}, None, None, {"client.quota.callback.class": "x", "a": "1"}
    )
    assert props == {"a": "1"} and len(warnings) == 1
    props, warnings = quota_plugin_spec.render(strimzi(check_interval=0), ADMIN, None, {P + "fetch": "1"})
    assert list(props)[0] == "client.quota.callback.class" and P + "fetch" not in props
    assert warnings[0].startswith("kafka_quotas.check_interval is 0") and "fetch is overridden" in warnings[1]


# -- masking and the block ------------------------------------------------------------------------------------------
def test_render_block_lines_in_order():
    props = render(strimzi(producer_byte_rate=1000.0), internal=["User:CN=b"])
    assert quota_plugin_spec.render_block(props) == "\n".join(
        [
            "client.quota.callback.class=io.strimzi.kafka.quotas.StaticQuotaCallback",
            A + "bootstrap.servers=kafka-1:9093,kafka-2:9093",
            P + "produce=1000",
            P + "storage.per.volume.limit.min.available.bytes=5368709120",
            P + "excluded.principal.name.list=User:CN=b",
        ]
    )
    assert quota_plugin_spec.render_block({}) == ""


@pytest.mark.parametrize(
    "value, line",
    [
        ("C:\\certs\\ca.p12", "k=C:\\\\certs\\\\ca.p12"),
        ("-----BEGIN-----\nMIIB\n-----END-----", "k=-----BEGIN-----\\nMIIB\\n-----END-----"),
        ("a\r\nb", "k=a\\r\\nb"),
        ("User:CN=a,O=b", "k=User:CN=a,O=b"),
        (" lead", "k=\\ lead"),
        ("p\u00e9", "k=p\\u00E9"),
        ("x\U0001f600", "k=x\\uD83D\\uDE00"),
        (1000, "k=1000"),
        (0.5, "k=0.5"),
        ("", "k="),
    ],
)
def test_render_block_escapes_values(value, line):
    assert quota_plugin_spec.render_block({"k": value}) == line


def test_render_block_round_trips_through_a_properties_reader():
    props = {
        "a.b": "x=y:z",
        "pem": "-----BEGIN-----\nAB\\CD\n-----END-----",
        "odd key": "v",
        "k:x": "v2",
        "#c": "v3",
        "jaas": 'M required username="u" password="p\\"w";',
        "uni": "\u00e9\u20ac",
    }
    assert java_properties.parse(quota_plugin_spec.render_block(props) + "\n") == props


@pytest.mark.parametrize(
    "key, with_plugin, without_plugin",
    [
        ("client.quota.callback.class", True, True),
        ("client.quota.callback.static.produce", True, True),
        ("client.quota.callback.static.storage.per.volume.limit.min.available.bytes", True, True),
        ("client.quota.callback.static.kafka.admin.ssl.keystore.password", True, True),
        ("client.quota.callback.static.storage.soft", True, True),
        ("client.quota.callback.static.request", False, True),
        ("client.quota.callback.static.kafka.clientIdPrefix", False, True),
        ("client.quota.callback.static.producer", False, True),
        ("log.dirs", False, False),
    ],
)
def test_managed_key_pattern_matches_whole_names_the_spec_decides(key, with_plugin, without_plugin):
    import re

    plugin = re.compile(
        "^"
        + quota_plugin_spec.managed_key_pattern(
            {"client.quota.callback.class": quota_plugin_spec.STATIC_QUOTA_CALLBACK}
        )
        + "$"
    )
    kafka = re.compile("^" + quota_plugin_spec.managed_key_pattern({}) + "$")
    assert (bool(plugin.match(key)), bool(kafka.match(key))) == (with_plugin, without_plugin)
