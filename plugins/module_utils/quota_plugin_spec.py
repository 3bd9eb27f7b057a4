# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The quotas spec (Strimzi's ``quotas`` API in Ansible form) and the broker properties it stands for, with no I/O.

``kafka_quotas`` has ``type: kafka`` (Kafka's built-in quotas, set on the default user through ``client_quota``)
or ``type: strimzi`` (the Strimzi quota plugin, io.strimzi.kafka.quotas.StaticQuotaCallback, configured in the
broker properties). Everything is validated before anything is written, and every error names the field, the value
and what is allowed.

``render`` returns the broker properties in the order the Strimzi operator writes them: callback class, admin
bootstrap servers, the admin client's security lines, produce, fetch, the volume limit, excluded principals, then
the plugin tuning Strimzi leaves to free-form config (check interval, fallback factor, factor validity). Values are
written as Kafka parses them: ``1000`` rather than ``1000.0``, ``0.1`` rather than ``0.10000``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re
from typing import Any, Dict, List, Optional, Tuple, Union

from ansible_collections.headroom.kafka.plugins.module_utils import durations, limit_sizing, quota_spec

STATIC_QUOTA_CALLBACK = "io.strimzi.kafka.quotas.StaticQuotaCallback"
CALLBACK_CLASS_KEY = "client.quota.callback.class"
PREFIX = "client.quota.callback.static."
ADMIN_PREFIX = PREFIX + "kafka.admin."
PRODUCE_KEY = PREFIX + "produce"
FETCH_KEY = PREFIX + "fetch"
MIN_AVAILABLE_BYTES_KEY = PREFIX + "storage.per.volume.limit.min.available.bytes"
MIN_AVAILABLE_RATIO_KEY = PREFIX + "storage.per.volume.limit.min.available.ratio"
EXCLUDED_PRINCIPALS_KEY = PREFIX + "excluded.principal.name.list"
CHECK_INTERVAL_KEY = PREFIX + "storage.check-interval"
FALLBACK_KEY = PREFIX + "throttle.factor.fallback"
VALIDITY_KEY = PREFIX + "throttle.factor.validity.duration"
# Keys of plugin releases before the cluster-wide volume source; the current plugin ignores them.
LEGACY_KEYS = (PREFIX + "storage.soft", PREFIX + "storage.hard")
# Every plugin key the spec decides, set or not; other plugin keys (request, kafka.clientIdPrefix) stay free-form.
SPEC_KEYS = (
    CALLBACK_CLASS_KEY,
    PRODUCE_KEY,
    FETCH_KEY,
    MIN_AVAILABLE_BYTES_KEY,
    MIN_AVAILABLE_RATIO_KEY,
    EXCLUDED_PRINCIPALS_KEY,
    CHECK_INTERVAL_KEY,
    FALLBACK_KEY,
    VALIDITY_KEY,
)

TYPES = ("kafka", "strimzi")
KAFKA_ONLY = ("request_percentage", "controller_mutation_rate")
STRIMZI_ONLY = (
    "min_available_bytes_per_volume",
    "min_available_ratio_per_volume",
    "excluded_principals",
    "check_interval",
    "throttle_factor_fallback",
    "throttle_factor_validity",
    "peak_fill_rate",
    "accept_uncovered_limit",
)
KAFKA_FIELDS = ("producer_byte_rate", "consumer_byte_rate") + KAFKA_ONLY
STRIMZI_FIELDS = ("producer_byte_rate", "consumer_byte_rate") + STRIMZI_ONLY
ALL_FIELDS = ("type",) + KAFKA_FIELDS + STRIMZI_ONLY
DEFAULT_USER = "<default>"

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
ADMIN_FIELDS = ("bootstrap_servers", "security_protocol", "ssl", "sasl", "properties")
# admin.ssl keys and the Kafka keys they become, in the order they are written: key store (PKCS12/JKS file or PEM),
# then trust store, as the Strimzi operator writes them.
SSL_KEYS = (
    ("keystore_location", "ssl.keystore.location"),
    ("keystore_certificate_chain", "ssl.keystore.certificate.chain"),
    ("keystore_key", "ssl.keystore.key"),
    ("keystore_password", "ssl.keystore.password"),
    ("key_password", "ssl.key.password"),
    ("keystore_type", "ssl.keystore.type"),
    ("truststore_location", "ssl.truststore.location"),
    ("truststore_certificates", "ssl.truststore.certificates"),
    ("truststore_password", "ssl.truststore.password"),
    ("truststore_type", "ssl.truststore.type"),
    ("endpoint_identification_algorithm", "ssl.endpoint.identification.algorithm"),
)
SSL_FIELDS = tuple(field for field, _kafka in SSL_KEYS)
SASL_FIELDS = ("mechanism", "username", "password", "jaas_config")
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
# Admin client keys the structured fields own; admin.properties may not set them.
_OWNED_ADMIN_KEYS = dict(
    [
        ("bootstrap.servers", "bootstrap_servers"),
        ("security.protocol", "security_protocol"),
        ("sasl.mechanism", "sasl.mechanism"),
        ("sasl.jaas.config", "sasl.jaas_config"),
    ]
    + [(kafka, "ssl." + field) for field, kafka in SSL_KEYS]
)


_LONG_MAX = 2**63 - 1
# The plugin's default storage.check-interval: the longest interval the collection chooses from a fill rate.
DEFAULT_CHECK_INTERVAL = 60
# The shortest interval the plugin can keep (each check gets the interval less one second).
SHORTEST_CHECK_INTERVAL = 2
_INT_MAX = 2**31 - 1
_NUMBER = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")
_HOST_PORT = re.compile(r"^(?:\[[0-9A-Za-z:.%]+\]|[^\s:,\[\]/]+):([0-9]{1,5})$")
_PRINCIPAL_HINT = "write it as User:CN=... (a TLS client's distinguished name) or User:alice (a SASL user name)"


class QuotaPluginSpecError(ValueError):
    """A quotas spec that cannot be applied; the message names the field, the value and what is allowed."""


# -- numbers -------------------------------------------------------------------------------------------------------
def format_number(value: Union[bool, int, float]) -> str:
    """A number as Kafka parses it: integers without ``.0``, other doubles in their shortest form (``0.1``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    if isinstance(value, float):
        return repr(value)
    return str(value)


def format_value(value: Union[str, bool, int, float]) -> str:
    """A property value as text: strings unchanged, booleans as Java writes them, numbers via format_number."""
    if isinstance(value, str):
        return value
    return format_number(value)


def _number(where, value):
    """A finite int or float; numeric strings (as ``-e`` extra vars give them) are accepted."""
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        text = value.strip()
        value = float(text) if any(c in text for c in ".eE") else int(text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise QuotaPluginSpecError("{0} must be a number (got {1!r})".format(where, value))
    if isinstance(value, float) and not math.isfinite(value):
        raise QuotaPluginSpecError("{0} must be a finite number (got {1!r})".format(where, value))
    return value


def _whole(where, value, what, low=0, high=_LONG_MAX):
    """A whole number in [low, high], as an int."""
    value = _number(where, value)
    if value < low:
        raise QuotaPluginSpecError(
            "{0} must not be negative (got {1}); it is {2}".format(where, format_number(value), what)
        )
    if isinstance(value, float) and not value.is_integer():
        raise QuotaPluginSpecError(
            "{0} must be a whole number (got {1}); it is {2}".format(where, format_number(value), what)
        )
    if value > high:
        raise QuotaPluginSpecError(
            "{0} must be at most {1} (got {2}); it is {3}".format(where, high, format_number(value), what)
        )
    return int(value)


def _fraction(where, value, what):
    """A double between 0 and 1 inclusive."""
    value = _number(where, value)
    if not 0 <= value <= 1:
        raise QuotaPluginSpecError(
            "{0} must be between 0 and 1 inclusive (got {1}); it is {2}".format(where, format_number(value), what)
        )
    return value


# -- the spec ------------------------------------------------------------------------------------------------------
def _set_fields(spec):
    """The fields given a value (None counts as not given, as in argument specs)."""
    return dict((k, v) for k, v in spec.items() if v is not None)


def validate_spec(spec: object, name: str = "kafka_quotas") -> Dict[str, Any]:
    """Check a quotas spec; return it normalised (numbers as ints/floats, durations as seconds / ISO 8601 text).

    Byte rates and min_available_bytes_per_volume become ints, check_interval an int number of seconds,
    throttle_factor_validity the ISO 8601 text java.time.Duration.toString prints, excluded_principals a list.
    """
    if not isinstance(spec, dict):
        raise QuotaPluginSpecError("{0} must be a dict with type kafka or strimzi (got {1!r})".format(name, spec))
    spec_type = spec.get("type")
    if spec_type is None:
        raise QuotaPluginSpecError(
            (
                "{0}.type is required: kafka (Kafka's built-in quotas, set on the default user) or strimzi (the "
                "Strimzi quota plugin)"
            ).format(name)
        )
    if spec_type not in TYPES:
        raise QuotaPluginSpecError("{0}.type must be kafka or strimzi (got {1!r})".format(name, spec_type))
    fields = KAFKA_FIELDS if spec_type == "kafka" else STRIMZI_FIELDS
    unknown = sorted(str(k) for k in spec if k not in ALL_FIELDS)
    if unknown:
        raise QuotaPluginSpecError(
            ("{0} has unknown key(s) {1}; allowed with type {2}: type, {3}").format(
                name, ", ".join(unknown), spec_type, ", ".join(fields)
            )
        )
    given = _set_fields(spec)
    if spec_type == "kafka":
        for field in STRIMZI_ONLY:
            if field in given:
                raise QuotaPluginSpecError(
                    (
                        "{0}.{1} (got {2!r}) is a Strimzi quota plugin setting and applies to type strimzi only; with "
                        "type kafka nothing reads it: remove it, or use type strimzi"
                    ).format(name, field, given[field])
                )
        return _validate_kafka(given, name)
    for field in KAFKA_ONLY:
        if field in given:
            raise QuotaPluginSpecError(
                (
                    "{0}.{1} (got {2!r}) applies to type kafka only (Kafka's built-in quotas on the default user); the "
                    "Strimzi quota plugin has no such quota: remove it, or use type kafka"
                ).format(name, field, given[field])
            )
    return _validate_strimzi(given, name)


def _validate_kafka(given, name):
    result = {"type": "kafka"}
    for field in KAFKA_FIELDS:
        if field not in given:
            continue
        where = "{0}.{1}".format(name, field)
        value = _number(where, given[field])
        kind = quota_spec.USER_CLIENT_KEYS[field]
        try:
            quota_spec.validate_value(name, field, value, kind)
        except quota_spec.QuotaSpecError as exc:
            raise QuotaPluginSpecError(str(exc)) from exc
        result[field] = int(value) if kind == "long" else value
    return result


def _validate_strimzi(given, name):
    result = {"type": "strimzi"}
    for field in ("producer_byte_rate", "consumer_byte_rate"):
        if field in given:
            what = "the default {0} quota in bytes per second, per broker".format(
                "produce" if field.startswith("producer") else "fetch"
            )
            result[field] = _whole("{0}.{1}".format(name, field), given[field], what)
    has_bytes = "min_available_bytes_per_volume" in given
    has_ratio = "min_available_ratio_per_volume" in given
    if has_bytes and has_ratio:
        both = (given["min_available_bytes_per_volume"], given["min_available_ratio_per_volume"])
        raise QuotaPluginSpecError(
            (
                "{0} sets both min_available_bytes_per_volume ({1!r}) and min_available_ratio_per_volume ({2!r}); give "
                "exactly one: the quota plugin refuses to start with both"
            ).format(name, both[0], both[1])
        )
    if not has_bytes and not has_ratio:
        raise QuotaPluginSpecError(
            (
                "{0} needs exactly one of min_available_bytes_per_volume (bytes) or min_available_ratio_per_volume (0 "
                "to 1) with type strimzi (got neither): the plugin stops producers when a volume's free space falls to "
                "that limit"
            ).format(name)
        )
    if has_bytes:
        result["min_available_bytes_per_volume"] = _whole(
            name + ".min_available_bytes_per_volume",
            given["min_available_bytes_per_volume"],
            "the free bytes each volume must keep",
        )
    else:
        result["min_available_ratio_per_volume"] = _fraction(
            name + ".min_available_ratio_per_volume",
            given["min_available_ratio_per_volume"],
            "the share of each volume that must stay free",
        )
    if "excluded_principals" in given:
        result["excluded_principals"] = validate_principals(given["excluded_principals"], name + ".excluded_principals")
    if "check_interval" in given:
        result["check_interval"] = _check_interval(name + ".check_interval", given["check_interval"])
    _size_limit(given, result, name)
    if "throttle_factor_fallback" in given:
        result["throttle_factor_fallback"] = _fraction(
            name + ".throttle_factor_fallback",
            given["throttle_factor_fallback"],
            "the throttle factor applied when volume data is too old",
        )
    if "throttle_factor_validity" in given:
        where = name + ".throttle_factor_validity"
        try:
            delta = durations.parse_positive_duration(given["throttle_factor_validity"], where)
        except durations.DurationError as exc:
            raise QuotaPluginSpecError(str(exc)) from exc
        result["throttle_factor_validity"] = durations.format_duration(delta)
    return result


def _size_limit(given, result, name):
    """With peak_fill_rate: refuse a limit that the check interval cannot hold at that rate (limit_sizing's rule with
    the plugin's measured reaction), unless accept_uncovered_limit; without a check interval, choose the longest that
    holds, up to the plugin's default."""
    if "peak_fill_rate" not in given:
        if "accept_uncovered_limit" in given:
            raise QuotaPluginSpecError(
                "{0}.accept_uncovered_limit applies only with {0}.peak_fill_rate, which it lets a limit fall short "
                "of: give peak_fill_rate or remove it".format(name)
            )
        return
    rate = _number(name + ".peak_fill_rate", given["peak_fill_rate"])
    if rate < 0:
        raise QuotaPluginSpecError(
            "{0}.peak_fill_rate must be >= 0 bytes per second, the fastest a volume fills (got {1!r})".format(
                name, given["peak_fill_rate"]
            )
        )
    accept = given.get("accept_uncovered_limit", False)
    if not isinstance(accept, bool):
        raise QuotaPluginSpecError("{0}.accept_uncovered_limit must be true or false (got {1!r})".format(name, accept))
    result.update(peak_fill_rate=rate, accept_uncovered_limit=accept)
    limit = result.get("min_available_bytes_per_volume")
    if limit is None:
        return  # a ratio's bytes depend on each volume's size: plugin_sizing_warnings says how to check it
    parts = limit_sizing.plugin_parts(rate)
    longest = limit_sizing.longest_check_interval(limit, rate, **parts)
    interval = result.get("check_interval")
    if interval is None:
        if longest is not None and longest >= SHORTEST_CHECK_INTERVAL:
            result["check_interval"] = min(longest, DEFAULT_CHECK_INTERVAL)
            return
        interval = SHORTEST_CHECK_INTERVAL
        if accept:
            result["check_interval"] = interval
    if interval == 0 or limit >= limit_sizing.least_limit_bytes(rate, interval, **parts) or accept:
        return
    raise QuotaPluginSpecError(uncovered_plugin_limit(name, limit, rate, interval, longest))


def uncovered_plugin_limit(
    name: str, limit: int, rate: float, interval: int, longest: Optional[int], applied: bool = False
) -> str:
    """Why a plugin limit does not hold at a fill rate, and what would; ``applied``: said of a limit applied anyway
    (accept_uncovered_limit) rather than of one refused."""
    least = limit_sizing.least_limit_bytes(rate, interval, **limit_sizing.plugin_parts(rate))
    ending = (
        " (applied anyway: accept_uncovered_limit)"
        if applied
        else ", or set {0}.accept_uncovered_limit: true to apply it anyway".format(name)
    )
    remedy = (
        "check_interval {0} or less would hold it".format(longest)
        if longest is not None and longest >= SHORTEST_CHECK_INTERVAL
        else "no check interval the plugin can keep would: raise the limit"
    )
    return (
        "{0}.min_available_bytes_per_volume {1} cannot hold at {0}.peak_fill_rate {2:.0f} bytes/s with a check "
        "interval of {3} s: a volume needs at least {4} bytes free when it crosses the limit to cover the interval, "
        "the plugin's check and what lands after the throttle ({5:g} s of the fill in all); {6}{7}".format(
            name, limit, rate, interval, least, interval + limit_sizing.measured_margin_seconds(), remedy, ending
        )
    )


def plugin_sizing_warnings(checked: Dict[str, Any], name: str = "kafka_quotas") -> List[str]:
    """The sizing warnings of a checked strimzi spec with peak_fill_rate: a limit applied although it cannot hold
    (accept_uncovered_limit), or a ratio limit that this check cannot size."""
    rate = checked.get("peak_fill_rate")
    if rate is None:
        return []
    limit = checked.get("min_available_bytes_per_volume")
    if limit is None:
        return [
            "{0}.peak_fill_rate is not checked against min_available_ratio_per_volume here, since the ratio's bytes "
            "depend on each volume's size: check it with headroom.kafka.volume_limits and its sizing option".format(
                name
            )
        ]
    interval = checked.get("check_interval", DEFAULT_CHECK_INTERVAL)
    parts = limit_sizing.plugin_parts(rate)
    if interval == 0 or limit >= limit_sizing.least_limit_bytes(rate, interval, **parts):
        return []
    longest = limit_sizing.longest_check_interval(limit, rate, **parts)
    return [uncovered_plugin_limit(name, limit, rate, interval, longest, applied=True)]


def _check_interval(where, value):
    """Whole seconds (the plugin reads an int); a number of seconds or an ISO 8601 duration such as PT1M."""
    try:
        delta = durations.parse_duration(value, where)
    except durations.DurationError as exc:
        raise QuotaPluginSpecError(str(exc)) from exc
    if delta.microseconds:
        raise QuotaPluginSpecError(
            "{0} must be a whole number of seconds (got {1!r}): the plugin reads it as an integer".format(where, value)
        )
    seconds = delta.days * 86400 + delta.seconds
    if seconds < 0:
        raise QuotaPluginSpecError(
            "{0} must not be negative (got {1!r}); 0 turns the storage checks off".format(where, value)
        )
    if seconds == 1:
        # The plugin gives each check interval - 1 seconds to answer: at 1 every check times out (measured on Kafka
        # 4.3.1, bench/race_bench.py), the volumes are never observed and the limit never applies.
        raise QuotaPluginSpecError(
            "{0} must be 0 (storage checks off) or at least 2 seconds (got {1!r}): the plugin gives each check the "
            "interval less one second, so at 1 every check times out and the volume limit never applies".format(
                where, value
            )
        )
    if seconds > _INT_MAX:
        raise QuotaPluginSpecError(
            "{0} must be at most {1} seconds (got {2!r}): the plugin reads it as a Java int".format(
                where, _INT_MAX, value
            )
        )
    return seconds


def validate_principals(principals: object, where: str) -> List[str]:
    """A list of ``User:<name>`` principals, duplicates removed (first occurrence kept)."""
    if principals is None:
        return []
    if not isinstance(principals, (list, tuple)):
        raise QuotaPluginSpecError(
            "{0} must be a list of principals such as User:CN=my-app or User:alice (got {1!r})".format(
                where, principals
            )
        )
    result = []
    for index, principal in enumerate(principals):
        item = "{0}[{1}]".format(where, index)
        if not isinstance(principal, str):
            raise QuotaPluginSpecError("{0} must be a string (got {1!r}); {2}".format(item, principal, _PRINCIPAL_HINT))
        if not principal.startswith("User:") or principal == "User:":
            raise QuotaPluginSpecError(
                "{0} {1!r} is not a principal the quota plugin reads: {2}".format(item, principal, _PRINCIPAL_HINT)
            )
        user = principal[len("User:") :]
        if user != user.strip() or any(c in user for c in "\r\n"):
            raise QuotaPluginSpecError(
                ("{0} {1!r} has white space around the name, which the quota plugin keeps as part of it: {2}").format(
                    item, principal, _PRINCIPAL_HINT
                )
            )
        if ";" in user or "User:" in user:
            raise QuotaPluginSpecError(
                (
                    "{0} {1!r} holds ';' or a second 'User:', which the quota plugin reads as separators: give one "
                    "principal per list entry"
                ).format(item, principal)
            )
        if principal not in result:
            result.append(principal)
    return result


# -- the admin client ----------------------------------------------------------------------------------------------
def _text(where, value):
    if not isinstance(value, str):
        raise QuotaPluginSpecError("{0} must be a string (got {1!r}); quote it in YAML".format(where, value))
    return value


def _bootstrap_servers(where, value):
    if isinstance(value, str):
        entries = [entry.strip() for entry in value.split(",")]
    elif isinstance(value, (list, tuple)):
        entries = list(value)
    else:
        raise QuotaPluginSpecError(
            "{0} must be a list of host:port or a comma-separated string (got {1!r})".format(where, value)
        )
    if not entries or entries == [""]:
        raise QuotaPluginSpecError(
            (
                "{0} is required with type strimzi: the plugin's admin client needs it even with storage checks off "
                "(for example [kafka-1:9093, kafka-2:9093])"
            ).format(where)
        )
    for index, entry in enumerate(entries):
        match = _HOST_PORT.match(entry.strip()) if isinstance(entry, str) else None
        if not match or not 0 < int(match.group(1)) < 65536:
            raise QuotaPluginSpecError(
                "{0}[{1}] must be host:port, such as kafka-1:9093 or [::1]:9093 (got {2!r})".format(where, index, entry)
            )
    return ",".join(entry.strip() for entry in entries)


def _check_keys(where, value, allowed):
    if not isinstance(value, dict):
        raise QuotaPluginSpecError(
            "{0} must be a dict with keys {1} (got {2!r})".format(where, ", ".join(allowed), value)
        )
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise QuotaPluginSpecError(
            "{0} has unknown key(s) {1}; allowed: {2}".format(where, ", ".join(unknown), ", ".join(allowed))
        )
    return _set_fields(value)


def _ssl_lines(where, ssl):
    given = _check_keys(where, ssl, SSL_FIELDS)
    values = dict((field, _text("{0}.{1}".format(where, field), given[field])) for field in given)
    for store, content, pem_type in (
        ("keystore", ("keystore_certificate_chain", "keystore_key"), "keystore_type"),
        ("truststore", ("truststore_certificates",), "truststore_type"),
    ):
        pem = [field for field in content if field in values]
        if not pem:
            continue
        location = store + "_location"
        if location in values:
            raise QuotaPluginSpecError(
                ("{0}.{1} and {0}.{2} are both set: give the {3} either as a file or as PEM text, not both").format(
                    where, location, pem[0], store
                )
            )
        if pem_type in values and values[pem_type].upper() != "PEM":
            raise QuotaPluginSpecError(
                "{0}.{1} must be PEM when {0}.{2} is given (got {3!r})".format(
                    where, pem_type, pem[0], values[pem_type]
                )
            )
        values.setdefault(pem_type, "PEM")
    if ("keystore_certificate_chain" in values) != ("keystore_key" in values):
        raise QuotaPluginSpecError(
            (
                "{0}.keystore_certificate_chain and {0}.keystore_key go together: a PEM key store needs the "
                "certificate chain and its private key"
            ).format(where)
        )
    return [(kafka, values[field]) for field, kafka in SSL_KEYS if field in values]


def _jaas_quote(value):
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# The username option of a JAAS login module line, quoted as _jaas_quote writes it.
JAAS_USERNAME = re.compile(r'\busername\s*=\s*"((?:[^"\\]|\\.)*)"')


def _sasl_lines(where, sasl):
    given = _check_keys(where, sasl, SASL_FIELDS)
    values = dict((field, _text("{0}.{1}".format(where, field), given[field])) for field in given)
    mechanism = values.get("mechanism")
    if not mechanism:
        raise QuotaPluginSpecError(
            ("{0}.mechanism is required with {0}: one of {1}, or another mechanism with {0}.jaas_config").format(
                where, ", ".join(sorted(LOGIN_MODULES))
            )
        )
    lines = [("sasl.mechanism", mechanism)]
    if "jaas_config" in values:
        for field in ("username", "password"):
            if field in values:
                raise QuotaPluginSpecError(
                    "{0}.{1} cannot be combined with {0}.jaas_config, which already holds the credentials".format(
                        where, field
                    )
                )
        lines.append(("sasl.jaas.config", values["jaas_config"]))
        return lines
    if "username" not in values or "password" not in values:
        raise QuotaPluginSpecError(
            "{0} needs username and password (or jaas_config) with mechanism {1}".format(where, mechanism)
        )
    if mechanism not in LOGIN_MODULES:
        raise QuotaPluginSpecError(
            (
                "{0}.mechanism {1!r} has no built-in login with username and password (known: {2}): give "
                "{0}.jaas_config instead"
            ).format(where, mechanism, ", ".join(sorted(LOGIN_MODULES)))
        )
    jaas = "{0} required username={1} password={2};".format(
        LOGIN_MODULES[mechanism], _jaas_quote(values["username"]), _jaas_quote(values["password"])
    )
    lines.append(("sasl.jaas.config", jaas))
    return lines


def _property_lines(where, properties):
    if not isinstance(properties, dict):
        raise QuotaPluginSpecError(
            (
                "{0} must be a dict of Kafka admin client settings, such as {{'request.timeout.ms': 15000}} (got {1!r})"
            ).format(where, properties)
        )
    lines = []
    for key in sorted(properties, key=str):
        value = properties[key]
        item = "{0}[{1!r}]".format(where, key)
        if not isinstance(key, str) or not key or re.search(r"[\s=:]", key):
            raise QuotaPluginSpecError("{0} is not a Kafka setting name: names have no spaces, '=' or ':'".format(item))
        if key.startswith("client.quota.callback."):
            raise QuotaPluginSpecError(
                ("{0}: write the admin client setting without the plugin prefix, for example {1!r}").format(
                    item, key.split("kafka.admin.", 1)[-1]
                )
            )
        if key in _OWNED_ADMIN_KEYS:
            raise QuotaPluginSpecError("{0} is set through admin.{1}".format(item, _OWNED_ADMIN_KEYS[key]))
        if value is None or isinstance(value, (list, dict)):
            raise QuotaPluginSpecError("{0} must be a string, number or boolean (got {1!r})".format(item, value))
        if isinstance(value, float) and not math.isfinite(value):
            raise QuotaPluginSpecError("{0} must be a finite number (got {1!r})".format(item, value))
        lines.append((key, format_value(value)))
    return lines


def admin_principal(lines: List[Tuple[str, str]]) -> Optional[str]:
    """The principal the plugin's admin client logs in as, from its admin lines: ``User:<username>`` under SASL with
    a username (given, or in the JAAS configuration); None otherwise. Excluded with the internal principals (seed
    068: the internal users are excluded automatically)."""
    settings = dict(lines)
    if not settings.get("security.protocol", "").startswith("SASL_"):
        return None
    found = JAAS_USERNAME.search(settings.get("sasl.jaas.config", ""))
    return "User:" + re.sub(r"\\(.)", r"\1", found.group(1)) if found else None


def admin_lines(admin: Optional[Dict[str, Any]], name: str = "admin") -> List[Tuple[str, str]]:
    """The plugin's admin client settings as (Kafka key, value) pairs, bootstrap servers first, then security.

    Each is written as ``client.quota.callback.static.kafka.admin.<Kafka key>``.
    """
    if admin is None:
        admin = {}
    given = _check_keys(name, admin, ADMIN_FIELDS)
    lines = [("bootstrap.servers", _bootstrap_servers(name + ".bootstrap_servers", given.get("bootstrap_servers", "")))]
    ssl = _ssl_lines(name + ".ssl", given["ssl"]) if "ssl" in given else []
    sasl = _sasl_lines(name + ".sasl", given["sasl"]) if "sasl" in given else []
    protocol = given.get("security_protocol")
    if protocol is not None:
        protocol = _text(name + ".security_protocol", protocol).upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise QuotaPluginSpecError(
                ("{0}.security_protocol must be one of {1} (got {2!r})").format(
                    name, ", ".join(SECURITY_PROTOCOLS), given["security_protocol"]
                )
            )
        if ssl and protocol not in ("SSL", "SASL_SSL"):
            raise QuotaPluginSpecError(
                "{0}.ssl is set but {0}.security_protocol is {1}, which does not use TLS: use SSL or SASL_SSL".format(
                    name, protocol
                )
            )
        if sasl and not protocol.startswith("SASL_"):
            raise QuotaPluginSpecError(
                (
                    "{0}.sasl is set but {0}.security_protocol is {1}, which does not use SASL: use SASL_SSL or "
                    "SASL_PLAINTEXT"
                ).format(name, protocol)
            )
    elif sasl:
        protocol = "SASL_SSL"
    elif ssl:
        protocol = "SSL"
    if protocol is not None:
        lines.append(("security.protocol", protocol))
    lines.extend(ssl)
    lines.extend(sasl)
    if "properties" in given:
        lines.extend(_property_lines(name + ".properties", given["properties"]))
    return lines


# -- rendering -----------------------------------------------------------------------------------------------------
def render(
    spec: object,
    admin: Optional[Dict[str, Any]] = None,
    internal_principals: Optional[List[str]] = None,
    free_form: Optional[Dict[str, Any]] = None,
) -> Tuple[Dict[str, Any], List[str]]:
    """Validate everything, then return (broker properties, warnings).

    The properties are the quota plugin's (empty for type kafka), in the Strimzi operator's order. With
    ``free_form`` (the user's own broker properties), the result is ``merge_properties(free_form, plugin properties)``.
    """
    checked = validate_spec(spec)
    warnings = []
    properties = {}
    if checked["type"] == "strimzi":
        lines = admin_lines(admin)
        principals = validate_principals(internal_principals, "internal_principals")
        own = admin_principal(lines)
        if own is not None and own not in principals:
            principals.insert(0, own)
        for principal in checked.get("excluded_principals", []):
            if principal not in principals:
                principals.append(principal)
        properties[CALLBACK_CLASS_KEY] = STATIC_QUOTA_CALLBACK
        for key, value in lines:
            properties[ADMIN_PREFIX + key] = value
        for field, key in (
            ("producer_byte_rate", PRODUCE_KEY),
            ("consumer_byte_rate", FETCH_KEY),
            ("min_available_bytes_per_volume", MIN_AVAILABLE_BYTES_KEY),
            ("min_available_ratio_per_volume", MIN_AVAILABLE_RATIO_KEY),
        ):
            if field in checked:
                properties[key] = format_number(checked[field])
        if principals:
            properties[EXCLUDED_PRINCIPALS_KEY] = ";".join(principals)
        for field, key in (
            ("check_interval", CHECK_INTERVAL_KEY),
            ("throttle_factor_fallback", FALLBACK_KEY),
            ("throttle_factor_validity", VALIDITY_KEY),
        ):
            if field in checked:
                properties[key] = format_value(checked[field])
        warnings.extend(plugin_sizing_warnings(checked))
        if checked.get("check_interval") == 0:
            warnings.append(
                "kafka_quotas.check_interval is 0, which turns the quota plugin's storage checks off: "
                "the volume limit has no effect"
            )
    if free_form is not None:
        properties, merge_warnings = merge_properties(free_form, properties)
        warnings.extend(merge_warnings)
    return properties, warnings


def quota_plugin_properties(
    spec: object,
    admin: Optional[Dict[str, Any]] = None,
    internal_principals: Optional[List[str]] = None,
    free_form: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """The broker properties only (see render)."""
    return render(spec, admin, internal_principals, free_form)[0]


def default_user_quotas(spec: object) -> Dict[str, Any]:
    """The ``client_quota`` module's ``quotas`` entry for the default user.

    type kafka: the quota keys the spec gives (every key it leaves out is removed; none at all removes the entity's
    quotas). type strimzi: all default user quotas removed, as the Strimzi operator does, since the plugin ignores them.
    """
    checked = validate_spec(spec)
    entry: Dict[str, Any] = {"entity": {"user": DEFAULT_USER}}
    values = (
        dict((field, checked[field]) for field in KAFKA_FIELDS if field in checked)
        if checked["type"] == "kafka"
        else {}
    )
    if not values:
        entry["state"] = "absent"
        return entry
    entry.update(values)
    return entry


def _is_plugin_key(key):
    return key == CALLBACK_CLASS_KEY or key.startswith(PREFIX)


def merge_properties(
    existing_free_form: Optional[Dict[str, Any]], rendered: Dict[str, Any]
) -> Tuple[Dict[str, Any], List[str]]:
    """The user's free-form broker properties with the quotas spec applied: (merged dict, warnings).

    ``rendered`` is what the spec renders (``quota_plugin_properties``; empty for type kafka). Free-form keys the spec
    decides are replaced by the spec with a warning naming each: with the plugin, the callback class, produce, fetch,
    both volume limits, excluded principals, the tuning keys and every ``kafka.admin.*`` key; with type kafka, every
    quota plugin key, since the plugin is not used. Legacy ``storage.soft`` / ``storage.hard`` keys are removed with a
    warning. Other keys keep their order; the rendered keys follow.
    """
    if existing_free_form is None:
        existing_free_form = {}
    if not isinstance(existing_free_form, dict):
        raise QuotaPluginSpecError(
            "the free-form broker properties must be a dict of property names to values (got {0!r})".format(
                existing_free_form
            )
        )
    if not isinstance(rendered, dict):
        raise QuotaPluginSpecError("the rendered quota plugin properties must be a dict (got {0!r})".format(rendered))
    plugin = rendered.get(CALLBACK_CLASS_KEY) == STATIC_QUOTA_CALLBACK
    merged = {}
    warnings = []
    for key, value in existing_free_form.items():
        if not isinstance(key, str):
            raise QuotaPluginSpecError("free-form broker property names must be strings (got {0!r})".format(key))
        if key in LEGACY_KEYS:
            warnings.append(
                "free-form broker property {0} is a legacy quota plugin key (soft and hard storage limits are gone "
                "from the plugin); it is removed: use kafka_quotas.min_available_bytes_per_volume or "
                "min_available_ratio_per_volume".format(key)
            )
        elif plugin and (key in SPEC_KEYS or key.startswith(ADMIN_PREFIX)):
            warnings.append(
                "free-form broker property {0} is overridden by kafka_quotas (type strimzi): remove it from the "
                "free-form properties".format(key)
            )
        elif not plugin and _is_plugin_key(key):
            warnings.append(
                "free-form broker property {0} is removed: kafka_quotas has type kafka, so the quota plugin is not "
                "used".format(key)
            )
        else:
            merged[key] = value
    merged.update(rendered)
    return merged, warnings


def managed_key_pattern(rendered: Dict[str, Any]) -> str:
    """A regular expression matching the property names the spec decides, for lines outside the managed block.

    With the plugin (``rendered`` holds the callback class): every key in SPEC_KEYS, set or not, and every
    ``kafka.admin.*`` key; otherwise (type kafka, nothing rendered) every quota plugin key. Legacy keys always.
    Anchored to a whole property name, so ``...static.request`` or ``kafka.clientIdPrefix`` stay the user's.
    """
    if not isinstance(rendered, dict):
        raise QuotaPluginSpecError("the rendered quota plugin properties must be a dict (got {0!r})".format(rendered))
    names = [re.escape(key) for key in LEGACY_KEYS]
    if rendered.get(CALLBACK_CLASS_KEY) == STATIC_QUOTA_CALLBACK:
        names.extend(re.escape(key) for key in SPEC_KEYS)
        names.append(re.escape(ADMIN_PREFIX) + r"[^\s=:]+")
    else:
        names.extend([re.escape(CALLBACK_CLASS_KEY), re.escape(PREFIX) + r"[^\s=:]+"])
    return "(?:" + "|".join(names) + ")"


def _escape(text, is_key):
    """Java properties escaping: backslash, line breaks, leading blanks, and non-ASCII as \\uXXXX
    (files are read as ISO-8859-1)."""
    out = []
    for index, char in enumerate(text):
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t" and (is_key or index == 0):
            out.append("\\t")
        elif char == "\f" and (is_key or index == 0):
            out.append("\\f")
        elif char == " " and (is_key or index == 0):
            out.append("\\ ")
        elif is_key and (char in "=:" or (index == 0 and char in "#!")):
            out.append("\\" + char)
        elif code < 0x20 or code > 0x7E:
            if code > 0xFFFF:
                code -= 0x10000
                out.append("\\u{0:04X}\\u{1:04X}".format(0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)))
            else:
                out.append("\\u{0:04X}".format(code))
        else:
            out.append(char)
    return "".join(out)


def render_block(properties: Optional[Dict[str, Any]]) -> str:
    """The ``key=value`` lines of the managed block, one per property, in order, without a trailing newline."""
    return "\n".join(
        "{0}={1}".format(_escape(str(key), True), _escape(format_value(value), False))
        for key, value in (properties or {}).items()
    )
