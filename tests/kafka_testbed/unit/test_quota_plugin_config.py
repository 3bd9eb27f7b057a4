"""Table tests: the test broker refuses exactly the plugin configurations the Strimzi kafka-quotas-plugin refuses."""

import math
import sys

import pytest

from kafka_testbed.model import quota_plugin_config
from kafka_testbed.model.quota_plugin_config import PREFIX, PluginConfigError, load, parse_java_duration, validate

BOOTSTRAP = PREFIX + "kafka.admin.bootstrap.servers"
BYTES = PREFIX + "storage.per.volume.limit.min.available.bytes"
RATIO = PREFIX + "storage.per.volume.limit.min.available.ratio"
INTERVAL = PREFIX + "storage.check-interval"
FALLBACK = PREFIX + "throttle.factor.fallback"
VALIDITY = PREFIX + "throttle.factor.validity.duration"
EXCLUDED = PREFIX + "excluded.principal.name.list"
PRODUCE = PREFIX + "produce"
FETCH = PREFIX + "fetch"
REQUEST = PREFIX + "request"

MINIMAL = {"client.quota.callback.class": quota_plugin_config.STATIC_QUOTA_CALLBACK, BOOTSTRAP: "localhost:9092"}
BOTH_LIMITS = f"Both limit types configured, only configure one of [{BYTES},{RATIO}]"
NO_LIMIT_031 = "storageCheckInterval > 0 but no limit type configured"
MISSING_BOOTSTRAP = f'Missing required configuration "{BOOTSTRAP}" which has no default value.'


def props(**overrides):
    """MINIMAL plus overrides given by short name (None removes the key)."""
    keys = {
        "bootstrap": BOOTSTRAP,
        "bytes": BYTES,
        "ratio": RATIO,
        "interval": INTERVAL,
        "fallback": FALLBACK,
        "validity": VALIDITY,
        "excluded": EXCLUDED,
        "produce": PRODUCE,
        "fetch": FETCH,
        "request": REQUEST,
    }
    result = dict(MINIMAL)
    for short, value in overrides.items():
        if value is None:
            result.pop(keys[short], None)
        else:
            result[keys[short]] = value
    return result


def invalid(key, value, message):
    """Kafka ConfigException message for (key, value, message)."""
    return f"Invalid value {value} for configuration {key}: {message}"


# (id, properties, plugin version, expected reason or None when the broker starts)
CASES = [
    ("valid minimal", props(), "0.4.0", None),
    ("valid minimal 0.3.1", props(), "0.3.1", None),
    ("missing bootstrap", props(bootstrap=None), "0.4.0", MISSING_BOOTSTRAP),
    ("missing bootstrap, checks off", props(bootstrap=None, interval="0"), "0.4.0", MISSING_BOOTSTRAP),
    ("missing bootstrap, checks off by default 0.3.1", props(bootstrap=None), "0.3.1", MISSING_BOOTSTRAP),
    ("empty bootstrap", props(bootstrap=""), "0.4.0", invalid(BOOTSTRAP, "[]", "Value was an empty list")),
    ("blank bootstrap", props(bootstrap="  \t"), "0.4.0", invalid(BOOTSTRAP, "[]", "Value was an empty list")),
    ("bootstrap of empty elements is a non-empty list", props(bootstrap=","), "0.4.0", None),
    ("bootstrap list", props(bootstrap="a:9092, b:9092"), "0.4.0", None),
    # storage limits and the check interval
    ("bytes limit alone", props(bytes="1000"), "0.4.0", None),
    ("ratio limit alone", props(ratio="0.1"), "0.4.0", None),
    ("both limits, default interval 60", props(bytes="1", ratio="0.5"), "0.4.0", BOTH_LIMITS),
    ("both limits, interval 10", props(bytes="1", ratio="0.5", interval="10"), "0.4.0", BOTH_LIMITS),
    ("both limits, interval 1", props(bytes="1", ratio="0.5", interval="1"), "0.3.1", BOTH_LIMITS),
    ("both limits, interval 0", props(bytes="1", ratio="0.5", interval="0"), "0.4.0", None),
    ("both limits, interval negative", props(bytes="1", ratio="0.5", interval="-5"), "0.4.0", None),
    ("both limits, default interval 0 in 0.3.1", props(bytes="1", ratio="0.5"), "0.3.1", None),
    ("interval > 0 and no limit, 0.4.0", props(interval="10"), "0.4.0", None),
    ("interval > 0 and no limit, 0.3.1", props(interval="10"), "0.3.1", NO_LIMIT_031),
    ("interval > 0 and a limit, 0.3.1", props(interval="10", bytes="5"), "0.3.1", None),
    ("interval padded", props(interval=" 30 "), "0.4.0", None),
    ("interval not a number", props(interval="1m"), "0.4.0", invalid(INTERVAL, "1m", "Not a number of type INT")),
    ("interval fraction", props(interval="1.5"), "0.4.0", invalid(INTERVAL, "1.5", "Not a number of type INT")),
    (
        "interval above int",
        props(interval="2147483648"),
        "0.4.0",
        invalid(INTERVAL, "2147483648", "Not a number of type INT"),
    ),
    ("interval empty", props(interval=""), "0.4.0", invalid(INTERVAL, "", "Not a number of type INT")),
    (
        "interval ISO duration is not the shipped key",
        props(interval="PT1M"),
        "0.4.0",
        invalid(INTERVAL, "PT1M", "Not a number of type INT"),
    ),
    ("bytes 0", props(bytes="0"), "0.4.0", None),
    ("bytes negative", props(bytes="-1"), "0.4.0", invalid(BYTES, "-1", "Value must be at least 0")),
    (
        "bytes negative, checks off",
        props(bytes="-1", interval="0"),
        "0.4.0",
        invalid(BYTES, "-1", "Value must be at least 0"),
    ),
    ("bytes fraction", props(bytes="1.5"), "0.4.0", invalid(BYTES, "1.5", "Not a number of type LONG")),
    (
        "bytes above long",
        props(bytes="9223372036854775808"),
        "0.4.0",
        invalid(BYTES, "9223372036854775808", "Not a number of type LONG"),
    ),
    ("bytes with unit", props(bytes="5Gi"), "0.4.0", invalid(BYTES, "5Gi", "Not a number of type LONG")),
    ("bytes long max", props(bytes="9223372036854775807"), "0.4.0", None),
    ("ratio 0", props(ratio="0"), "0.4.0", None),
    ("ratio 0.0", props(ratio="0.0"), "0.4.0", None),
    ("ratio 1", props(ratio="1"), "0.4.0", None),
    ("ratio 1.0", props(ratio="1.0"), "0.4.0", None),
    ("ratio below 0", props(ratio="-0.01"), "0.4.0", invalid(RATIO, "-0.01", "Value must be at least 0.0")),
    ("ratio above 1", props(ratio="1.01"), "0.4.0", invalid(RATIO, "1.01", "Value must be no more than 1.0")),
    ("ratio percent", props(ratio="5"), "0.4.0", invalid(RATIO, "5.0", "Value must be no more than 1.0")),
    (
        "ratio huge, Java formatting",
        props(ratio="2e7"),
        "0.4.0",
        invalid(RATIO, "2.0E7", "Value must be no more than 1.0"),
    ),
    ("ratio infinity", props(ratio="Infinity"), "0.4.0", invalid(RATIO, "Infinity", "Value must be no more than 1.0")),
    ("ratio NaN passes the range", props(ratio="NaN"), "0.4.0", None),
    ("ratio percent sign", props(ratio="5%"), "0.4.0", invalid(RATIO, "5%", "Not a number of type DOUBLE")),
    # throttle factor fallback
    ("fallback 0", props(fallback="0"), "0.4.0", None),
    ("fallback 0.0", props(fallback="0.0"), "0.4.0", None),
    ("fallback 1", props(fallback="1"), "0.4.0", None),
    ("fallback 0.5", props(fallback="0.5"), "0.4.0", None),
    ("fallback below 0", props(fallback="-0.1"), "0.4.0", invalid(FALLBACK, "-0.1", "Value must be at least 0.0")),
    (
        "fallback tiny below 0",
        props(fallback="-1e-9"),
        "0.4.0",
        invalid(FALLBACK, "-1.0E-9", "Value must be at least 0.0"),
    ),
    ("fallback above 1", props(fallback="1.5"), "0.4.0", invalid(FALLBACK, "1.5", "Value must be no more than 1.0")),
    (
        "fallback just above 1",
        props(fallback="1.0000001"),
        "0.4.0",
        invalid(FALLBACK, "1.0000001", "Value must be no more than 1.0"),
    ),
    (
        "fallback not a number",
        props(fallback="half"),
        "0.4.0",
        invalid(FALLBACK, "half", "Not a number of type DOUBLE"),
    ),
    # throttle factor validity duration
    ("validity PT5M", props(validity="PT5M"), "0.4.0", None),
    ("validity PT0.5S", props(validity="PT0.5S"), "0.4.0", None),
    ("validity P1DT2H", props(validity="P1DT2H"), "0.4.0", None),
    ("validity lower case", props(validity="pt2m"), "0.4.0", None),
    ("validity padded", props(validity=" PT5M "), "0.4.0", None),
    ("validity negative", props(validity="-PT5M"), "0.4.0", None),
    ("validity no unit", props(validity="PT5"), "0.4.0", invalid(VALIDITY, "PT5", "Failed to parse iso8601 duration")),
    (
        "validity plain minutes",
        props(validity="5m"),
        "0.4.0",
        invalid(VALIDITY, "5m", "Failed to parse iso8601 duration"),
    ),
    ("validity weeks", props(validity="P1W"), "0.4.0", invalid(VALIDITY, "P1W", "Failed to parse iso8601 duration")),
    (
        "validity fractional minutes",
        props(validity="PT1.5M"),
        "0.4.0",
        invalid(VALIDITY, "PT1.5M", "Failed to parse iso8601 duration"),
    ),
    ("validity empty", props(validity=""), "0.4.0", invalid(VALIDITY, "", "Failed to parse iso8601 duration")),
    (
        "validity trimmed value in message",
        props(validity=" 300 "),
        "0.4.0",
        invalid(VALIDITY, "300", "Failed to parse iso8601 duration"),
    ),
    # excluded principals never stop the broker
    ("excluded two users", props(excluded="User:alice;User:bob"), "0.4.0", None),
    ("excluded empty value", props(excluded=""), "0.4.0", None),
    ("excluded without User: prefix", props(excluded="alice"), "0.4.0", None),
    ("excluded mixed", props(excluded="User:alice;bob;Group:x"), "0.4.0", None),
    ("excluded old comma form", props(excluded="User:alice,User:bob"), "0.4.0", None),
    # quotas
    ("produce non-numeric", props(produce="fast"), "0.4.0", invalid(PRODUCE, "fast", "Not a number of type DOUBLE")),
    ("produce empty", props(produce=""), "0.4.0", invalid(PRODUCE, "", "Not a number of type DOUBLE")),
    (
        "produce raw value kept in message",
        props(produce=" 1MB "),
        "0.4.0",
        invalid(PRODUCE, " 1MB ", "Not a number of type DOUBLE"),
    ),
    ("produce underscores", props(produce="1_000"), "0.4.0", invalid(PRODUCE, "1_000", "Not a number of type DOUBLE")),
    ("produce python inf", props(produce="inf"), "0.4.0", invalid(PRODUCE, "inf", "Not a number of type DOUBLE")),
    ("fetch non-numeric", props(fetch="1e"), "0.4.0", invalid(FETCH, "1e", "Not a number of type DOUBLE")),
    ("request non-numeric", props(request="x"), "0.4.0", invalid(REQUEST, "x", "Not a number of type DOUBLE")),
    ("produce negative has no range check", props(produce="-5"), "0.4.0", None),
    ("produce zero", props(produce="0"), "0.4.0", None),
    ("produce Java double forms", props(produce="0x1p20", fetch="1e6d", request="1."), "0.4.0", None),
]


@pytest.mark.parametrize("properties, version, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_load_refuses_exactly_what_the_plugin_refuses(properties, version, expected):
    """validate() reports the plugin's reason first, and load() raises exactly it; valid maps load."""
    reasons = validate(properties, version)
    if expected is None:
        assert not reasons
        assert isinstance(load(properties, version), quota_plugin_config.PluginConfig)
    else:
        assert reasons[0] == expected
        with pytest.raises(PluginConfigError) as caught:
            load(properties, version)
        assert caught.value.reason == expected
        assert str(caught.value) == expected


@pytest.mark.parametrize(
    "properties, exception_class",
    [
        (props(bytes="1", ratio="0.5"), quota_plugin_config.ILLEGAL_STATE_EXCEPTION),
        (props(bootstrap=None), quota_plugin_config.CONFIG_EXCEPTION),
        (props(ratio="2"), quota_plugin_config.CONFIG_EXCEPTION),
    ],
)
def test_error_names_the_java_exception(properties, exception_class):
    """ConfigDef failures are ConfigException, the limit checks in configure() IllegalStateException."""
    with pytest.raises(PluginConfigError) as caught:
        load(properties)
    assert caught.value.exception_class == exception_class
    assert caught.value.describe() == f"{exception_class}: {caught.value.reason}"


def test_validate_lists_every_reason_in_plugin_order_and_load_raises_the_first():
    """Definition order first, then bootstrap servers, then the configure() checks."""
    properties = {PRODUCE: "x", RATIO: "2", BYTES: "1", FALLBACK: "-1", VALIDITY: "5m"}
    expected = [
        invalid(PRODUCE, "x", "Not a number of type DOUBLE"),
        invalid(RATIO, "2.0", "Value must be no more than 1.0"),
        invalid(VALIDITY, "5m", "Failed to parse iso8601 duration"),
        invalid(FALLBACK, "-1.0", "Value must be at least 0.0"),
        MISSING_BOOTSTRAP,
        BOTH_LIMITS,
    ]
    assert validate(properties) == expected
    with pytest.raises(PluginConfigError, match="^Invalid value x for configuration"):
        load(properties)


def test_unknown_version_is_a_programming_error():
    """Only the shipped releases are modelled."""
    with pytest.raises(ValueError, match="unknown kafka-quotas-plugin version"):
        validate(props(), "0.2.0")


@pytest.mark.parametrize("version, interval", [("0.4.0", 60), ("0.3.1", 0)])
def test_defaults(version, interval):
    """Defaults of both releases; 0.3.1 leaves storage checks off by default."""
    config = load({BOOTSTRAP: "localhost:9092"}, version)
    assert config.produce == config.fetch == config.request == sys.float_info.max
    assert not config.excluded_principals
    assert config.check_interval_s == interval
    assert config.min_available_bytes is None and config.min_available_ratio is None
    assert config.fallback == 1.0
    assert config.validity_s == 300.0
    assert config.admin_bootstrap_servers == "localhost:9092"
    assert not config.admin_properties
    assert config.client_id_prefix == "__strimzi"
    assert not config.storage_checks_enabled


def test_parsed_values():
    """Values are trimmed and parsed as Java does; the bootstrap string keeps inner spaces."""
    config = load(
        props(
            produce=" 1048576 ",
            fetch="2e6",
            request="0x1p4",
            bytes="5368709120",
            interval="5",
            validity="PT0.5S",
            fallback="0.25",
            bootstrap=" a:9092 , b:9093 ",
        )
    )
    assert (config.produce, config.fetch, config.request) == (1048576.0, 2e6, 16.0)
    assert config.min_available_bytes == 5368709120
    assert config.check_interval_s == 5
    assert config.validity_s == 0.5
    assert config.fallback == 0.25
    assert config.admin_bootstrap_servers == "a:9092 , b:9093"
    assert config.admin_bootstrap_list == ["a:9092", "b:9093"]
    assert config.storage_checks_enabled


@pytest.mark.parametrize("interval, checks", [("0", False), ("-1", False), ("1", True)])
def test_storage_checks_enabled(interval, checks):
    """Checks run only with a positive interval and a limit."""
    assert load(props(ratio="0.05", interval=interval)).storage_checks_enabled is checks


def test_nan_limits_load():
    """NaN passes Kafka's Range validator, which compares as doubles."""
    config = load(props(ratio="NaN", fallback="NaN"))
    assert math.isnan(config.min_available_ratio) and math.isnan(config.fallback)


@pytest.mark.parametrize(
    "value, principals",
    [
        ("User:alice;User:bob", ("alice", "bob")),
        ("", ()),
        ("   ", ()),
        ("alice", ()),
        ("User:alice;bob", ("alice",)),
        ("user:alice", ()),
        ("User:", ()),
        ("User:CN=my-cluster,O=io.strimzi;User:bob", ("CN=my-cluster,O=io.strimzi", "bob")),
        ("User:alice,User:bob", ()),
        ("  User:alice;User:bob  ", ("alice", "bob")),
        ("User:alice; User:bob", ("alice", "bob")),
        ("User:alice ;User:bob", ("alice ", "bob")),
        ("User: alice", (" alice",)),
        (";;User:alice;;", ("alice",)),
        ("User:alice;User:alice", ("alice",)),
        ("User:aUser:b", ()),
        ("xUser:alice", ("alice",)),
    ],
)
def test_excluded_principals_follow_the_plugin_split(value, principals):
    """Split on ";" then on "User:"; keep an entry only when that gives exactly two parts."""
    assert load(props(excluded=value)).excluded_principals == principals


def test_admin_passthrough_without_bootstrap():
    """kafka.admin.* is handed over raw and prefix-stripped; the bare prefix key is not."""
    properties = props(bootstrap="broker-0:9091")
    properties[PREFIX + "kafka.admin.security.protocol"] = "SSL"
    properties[PREFIX + "kafka.admin.ssl.truststore.type"] = "PEM "
    properties[PREFIX + "kafka.admin."] = "ignored"
    properties[PREFIX + "kafka.clientIdPrefix"] = "sim"
    properties["security.protocol"] = "PLAINTEXT"
    config = load(properties)
    assert config.admin_properties == {"security.protocol": "SSL", "ssl.truststore.type": "PEM "}
    assert config.admin_bootstrap_servers == "broker-0:9091"
    assert config.client_id_prefix == "sim"


@pytest.mark.parametrize(
    "properties, enabled",
    [
        (MINIMAL, True),
        ({"client.quota.callback.class": " io.strimzi.kafka.quotas.StaticQuotaCallback "}, True),
        ({"client.quota.callback.class": "io.strimzi.kafka.quotas.Other"}, False),
        ({}, False),
    ],
)
def test_plugin_enabled(properties, enabled):
    """The callback class value is trimmed like a Kafka CLASS config."""
    assert quota_plugin_config.plugin_enabled(properties) is enabled


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("PT5M", 300.0),
        ("PT0.5S", 0.5),
        ("P1DT2H", 93600.0),
        ("P2D", 172800.0),
        ("pt5m", 300.0),
        ("p1dT2h", 93600.0),
        ("PT1H30M15.25S", 5415.25),
        ("PT1,5S", 1.5),
        ("PT1.S", 1.0),
        ("PT0.000000001S", 1e-9),
        ("PT0S", 0.0),
        ("+PT10S", 10.0),
        ("PT+10S", 10.0),
        ("-PT5M", -300.0),
        ("PT-0.5S", -0.5),
        ("-PT-6H+3M", 21420.0),
        ("P-1DT2H", -79200.0),
        ("P1Dt", 86400.0),
        ("PT9223372036854775807S", 9223372036854775807.0),
        ("P106751991167300D", 106751991167300 * 86400.0),
    ],
)
def test_parse_java_duration_accepts(text, seconds):
    """java.time.Duration.parse accepts these."""
    assert parse_java_duration(text) == seconds


@pytest.mark.parametrize(
    "text",
    [
        "",
        "P",
        "PT",
        "P1DT",
        "5M",
        "PT5",
        "P1W",
        "P1Y",
        "P1M",
        "PT1.5M",
        "P1.5D",
        "PT0.1234567891S",
        "PT1M1M",
        "PT1S1M",
        " PT5M",
        "PT5M ",
        "PT5\u017f",
        "PT\uff11S",
        "PT1_0S",
        "PT9223372036854775808S",
        "P106751991167301D",
        "-PT-9223372036854775808S",
        "PT-5.S-",
        "PT.5S",
        "1",
    ],
)
def test_parse_java_duration_rejects(text):
    """java.time.Duration.parse throws DateTimeParseException for these."""
    with pytest.raises(ValueError):
        parse_java_duration(text)


def test_parse_java_duration_rejects_non_strings():
    """Only text can be parsed."""
    with pytest.raises(ValueError):
        parse_java_duration(None)
