"""Start-up configuration rules of the Strimzi kafka-quotas-plugin (``StaticQuotaCallback``).

A Kafka broker whose properties name ``client.quota.callback.class=io.strimzi.kafka.quotas.StaticQuotaCallback``
hands its whole property map to ``StaticQuotaCallback.configure()``; any exception thrown there stops the broker.
This module reproduces, for the shipped plugin releases 0.3.1 and 0.4.0, exactly which property maps make that
call throw, and with which message, so that the test broker can refuse the same configurations.

What the plugin does, in order (strimzi/kafka-quotas-plugin ``StaticQuotaConfig`` and ``StaticQuotaCallback``,
Apache Kafka ``ConfigDef``):

1. ``new StaticQuotaConfig(props)`` parses, in definition order, stopping at the first error
   (Kafka ``ConfigDef.parse``; string values are trimmed of characters <= U+0020 before parsing):

   - ``produce``, ``fetch``, ``request``: DOUBLE, default Double.MAX_VALUE, no range check
     (negative, NaN and Infinity are accepted);
   - ``excluded.principal.name.list``: STRING, default null, no validator: it can never fail;
   - ``storage.check-interval``: INT seconds, default 60 in 0.4.0 and 0 in 0.3.1, no range check;
   - ``storage.per.volume.limit.min.available.bytes``: LONG, default null, ``Range.atLeast(0)``;
   - ``storage.per.volume.limit.min.available.ratio``: DOUBLE, default null, ``Range.between(0.0, 1.0)``;
   - ``throttle.factor.validity.duration``: STRING, default PT5M, ``java.time.Duration.parse`` must succeed;
   - ``throttle.factor.fallback``: DOUBLE, default 1.0, ``Range.between(0.0, 1.0)``.

   Ranges are inclusive and compared as doubles, so NaN passes them. A value that does not parse as its type
   fails with "Not a number of type X".

2. ``new KafkaClientConfig(props)`` (inside the same constructor, so always, whatever the interval):
   ``kafka.clientIdPrefix`` (STRING, ``__strimzi``) and ``kafka.admin.bootstrap.servers`` (LIST, no default:
   missing is an error; a value that parses to an empty list is an error).

3. ``configure()``: only when ``storage.check-interval > 0``: both limit keys set is an ``IllegalStateException``;
   in 0.3.1 (not 0.4.0) neither limit set is one too.

Excluded principals never fail: the value is split on ``;`` and each entry on ``User:`` (Java ``String.split``
semantics); an entry is kept only when that split yields exactly two parts, and the kept name is the second part.
Entries are not trimmed one by one; entries without ``User:`` are silently ignored; an empty value excludes nobody.

Not modelled: the Kafka ``AdminClient`` the plugin creates when storage checks are enabled (interval > 0 and one
limit). Its own validation of the ``kafka.admin.*`` passthrough (``security.protocol``, TLS stores, ...) and, on
Kafka versions that still resolve bootstrap addresses eagerly, DNS resolution can also stop the broker.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Callable, Mapping, Optional

STATIC_QUOTA_CALLBACK = "io.strimzi.kafka.quotas.StaticQuotaCallback"
CALLBACK_CLASS_KEY = "client.quota.callback.class"
PREFIX = "client.quota.callback.static."

PRODUCE_KEY = PREFIX + "produce"
FETCH_KEY = PREFIX + "fetch"
REQUEST_KEY = PREFIX + "request"
EXCLUDED_PRINCIPALS_KEY = PREFIX + "excluded.principal.name.list"
CHECK_INTERVAL_KEY = PREFIX + "storage.check-interval"
MIN_AVAILABLE_BYTES_KEY = PREFIX + "storage.per.volume.limit.min.available.bytes"
MIN_AVAILABLE_RATIO_KEY = PREFIX + "storage.per.volume.limit.min.available.ratio"
VALIDITY_DURATION_KEY = PREFIX + "throttle.factor.validity.duration"
FALLBACK_KEY = PREFIX + "throttle.factor.fallback"
CLIENT_ID_PREFIX_KEY = PREFIX + "kafka.clientIdPrefix"
ADMIN_PREFIX = PREFIX + "kafka.admin."
ADMIN_BOOTSTRAP_KEY = ADMIN_PREFIX + "bootstrap.servers"

PLUGIN_VERSIONS = ("0.3.1", "0.4.0")
DEFAULT_PLUGIN_VERSION = "0.4.0"

CONFIG_EXCEPTION = "org.apache.kafka.common.config.ConfigException"
ILLEGAL_STATE_EXCEPTION = "java.lang.IllegalStateException"

JAVA_DOUBLE_MAX = sys.float_info.max
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_NANOS_PER_SECOND = 1_000_000_000


class PluginConfigError(ValueError):
    """The plugin would throw from ``configure()``, so the broker would fail to start.

    ``reason`` is the Java exception's message, ``exception_class`` the Java exception class name.
    """

    def __init__(self, reason: str, exception_class: str = CONFIG_EXCEPTION):
        super().__init__(reason)
        self.reason = reason
        self.exception_class = exception_class

    def describe(self) -> str:
        """The failure as the first line of a Java stack trace."""
        return f"{self.exception_class}: {self.reason}"


@dataclass(frozen=True)
class PluginConfig:  # pylint: disable=too-many-instance-attributes
    """The plugin configuration as the plugin sees it after a successful ``configure()``."""

    produce: float
    fetch: float
    request: float
    excluded_principals: tuple
    check_interval_s: int
    min_available_bytes: Optional[int]
    min_available_ratio: Optional[float]
    fallback: float
    validity_s: float
    admin_bootstrap_servers: str
    admin_properties: dict = field(default_factory=dict, hash=False)
    client_id_prefix: str = "__strimzi"

    @property
    def admin_bootstrap_list(self) -> list:
        """``bootstrap.servers`` split the way Kafka's ``ConfigDef`` splits a LIST value."""
        return _parse_list(self.admin_bootstrap_servers)

    @property
    def storage_checks_enabled(self) -> bool:
        """True when the plugin schedules cluster volume checks (interval > 0 and a limit configured)."""
        has_limit = self.min_available_bytes is not None or self.min_available_ratio is not None
        return self.check_interval_s > 0 and has_limit


class _ConfigError(Exception):
    """Internal carrier for one ConfigException message."""


def _invalid(name: str, value: object, message: str) -> _ConfigError:
    """``new ConfigException(name, value, message)``."""
    return _ConfigError(f"Invalid value {value} for configuration {name}: {message}")


class _NumberFormatError(ValueError):
    """Java NumberFormatException."""


# ---------------------------------------------------------------------------------------------------------------
# Java semantics
# ---------------------------------------------------------------------------------------------------------------


def _java_trim(text: str) -> str:
    """``String.trim()``: strip every character <= U+0020 (and nothing else) from both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


_JAVA_INTEGER = re.compile(r"[+-]?\d+")  # Character.digit accepts every Unicode decimal digit, like \d here


def _parse_java_integer(text: str, low: int, high: int) -> int:
    """``Integer.parseInt`` / ``Long.parseLong`` (radix 10) within [low, high]."""
    if not _JAVA_INTEGER.fullmatch(text):
        raise _NumberFormatError(text)
    value = int(text)
    if not low <= value <= high:
        raise _NumberFormatError(text)
    return value


_JAVA_DECIMAL = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_HEX = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP]([+-]?[0-9]+)[fFdD]?")


def _parse_java_double(text: str) -> float:
    """``Double.parseDouble``: decimal or hexadecimal literal, optional f/F/d/D suffix, NaN, Infinity."""
    text = _java_trim(text)
    hex_match = _JAVA_HEX.fullmatch(text)
    if hex_match:
        sign, mantissa, exponent = hex_match.groups()
        try:
            value = float.fromhex(f"0x{mantissa}p{exponent}")
        except OverflowError:
            value = math.inf
        return -value if sign == "-" else value
    if not _JAVA_DECIMAL.fullmatch(text):
        raise _NumberFormatError(text)
    if text[-1] in "fFdD":
        text = text[:-1]
    return float(text)


def _java_double_to_string(value: float) -> str:
    """``Double.toString`` (shortest round-trip digits, as printed by JDK 19 and later)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    _ignored, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(str(d) for d in digit_tuple).lstrip("0")
    while len(digits) > 1 and digits.endswith("0"):
        digits = digits[:-1]
        exponent += 1
    if 1e-3 <= abs(value) < 1e7:
        point = len(digits) + exponent
        if exponent >= 0:
            whole, fraction = digits + "0" * exponent, "0"
        elif point > 0:
            whole, fraction = digits[:point], digits[point:]
        else:
            whole, fraction = "0", "0" * -point + digits
        return f"{sign}{whole}.{fraction}"
    scientific = len(digits) + exponent - 1
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{scientific}"


_JAVA_WHITESPACE = "[ \t\n\x0b\f\r]"
_COMMA_WITH_WHITESPACE = re.compile(f"{_JAVA_WHITESPACE}*,{_JAVA_WHITESPACE}*")


def _parse_list(value: str) -> list:
    """ConfigDef LIST: trim; empty is []; else split on ``\\s*,\\s*`` keeping empty elements."""
    trimmed = _java_trim(value)
    if not trimmed:
        return []
    return _COMMA_WITH_WHITESPACE.split(trimmed)


def _java_list_to_string(values: list) -> str:
    return "[" + ", ".join(values) + "]"


def _java_split(text: str, separator: str) -> list:
    """``String.split`` with a literal separator and limit 0: no match gives [text]; trailing empties dropped."""
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE | re.ASCII,
)


def _check_long(value: int) -> int:
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError("Text cannot be parsed to a Duration: overflow")
    return value


def _duration_component(text: Optional[str], multiplier: int) -> int:
    if text is None:
        return 0
    try:
        number = _parse_java_integer(text, _LONG_MIN, _LONG_MAX)
    except _NumberFormatError as exc:
        raise ValueError(f"Text cannot be parsed to a Duration: {text}") from exc
    return _check_long(number * multiplier)


def _parse_java_duration_nanos(text: str) -> int:
    """``java.time.Duration.parse`` as an exact number of nanoseconds; ValueError when Java would throw."""
    match = _DURATION.fullmatch(text)
    # Java rejects a bare upper-case "T" with no time fields (a bare lower-case "t" slips through: JDK quirk).
    if match is None or match.group(3) == "T" or all(match.group(i) is None for i in (2, 4, 5, 6)):
        raise ValueError(f"Text cannot be parsed to a Duration: {text!r}")
    days = _duration_component(match.group(2), 86_400)
    hours = _duration_component(match.group(4), 3_600)
    minutes = _duration_component(match.group(5), 60)
    seconds = _duration_component(match.group(6), 1)
    fraction = match.group(7) or ""
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    if match.group(6) is not None and match.group(6).startswith("-"):
        nanos = -nanos
    total_seconds = _check_long(days + _check_long(hours + _check_long(minutes + seconds)))
    whole, nanos = divmod(nanos, _NANOS_PER_SECOND)
    total = _check_long(total_seconds + whole) * _NANOS_PER_SECOND + nanos
    if match.group(1) == "-":
        total = -total
        _check_long(total // _NANOS_PER_SECOND)
    return total


def parse_java_duration(text: str) -> float:
    """Seconds of an ISO-8601 duration, parsed exactly as ``java.time.Duration.parse`` does.

    Accepts ``[+-]PnDTnHnMn.nS`` with days, hours, minutes and seconds only (no years, months or weeks), a sign
    on the whole and on each number, up to nine fraction digits on seconds only (``.`` or ``,``), letters in either
    case. Anything else, including surrounding whitespace, raises ValueError.
    """
    if not isinstance(text, str):
        raise ValueError(f"Text cannot be parsed to a Duration: {text!r}")
    return _parse_java_duration_nanos(text) / _NANOS_PER_SECOND


# ---------------------------------------------------------------------------------------------------------------
# ConfigDef emulation
# ---------------------------------------------------------------------------------------------------------------

_MISSING = object()
Validator = Callable[[str, object], None]


def _parse_typed(name: str, raw: object, kind: str) -> object:
    """``ConfigDef.parseType`` for a string value; NumberFormatException becomes "Not a number of type X"."""
    text = raw if isinstance(raw, str) else str(raw)
    trimmed = _java_trim(text)
    try:
        if kind == "STRING":
            return trimmed
        if kind == "INT":
            return _parse_java_integer(trimmed, _INT_MIN, _INT_MAX)
        if kind == "LONG":
            return _parse_java_integer(trimmed, _LONG_MIN, _LONG_MAX)
        if kind == "DOUBLE":
            return _parse_java_double(trimmed)
        if kind == "LIST":
            return _parse_list(trimmed)
    except _NumberFormatError as exc:
        raise _invalid(name, text, f"Not a number of type {kind}") from exc
    raise AssertionError(kind)


def _format_number(value: object) -> str:
    return _java_double_to_string(value) if isinstance(value, float) else str(value)


def _range(low: object, high: object = None) -> Validator:
    """``nullOrInRangeValidator(Range)``: null passes; bounds inclusive, compared as doubles (so NaN passes)."""

    def check(name: str, value: object) -> None:
        if value is None:
            return
        if float(value) < float(low):
            raise _invalid(name, _format_number(value), f"Value must be at least {_format_number(low)}")
        if high is not None and float(value) > float(high):
            raise _invalid(name, _format_number(value), f"Value must be no more than {_format_number(high)}")

    return check


def _iso8601_duration(name: str, value: object) -> None:
    try:
        _parse_java_duration_nanos(value)
    except ValueError as exc:
        raise _invalid(name, value, "Failed to parse iso8601 duration") from exc


def _non_empty_list(name: str, value: object) -> None:
    if not value:
        raise _invalid(name, _java_list_to_string(value), "Value was an empty list")


def _static_quota_definitions(version: str) -> list:
    """StaticQuotaConfig then KafkaClientConfig definitions, in the order ConfigDef parses them."""
    default_interval = 0 if version == "0.3.1" else 60
    return [
        (PRODUCE_KEY, "DOUBLE", JAVA_DOUBLE_MAX, None),
        (FETCH_KEY, "DOUBLE", JAVA_DOUBLE_MAX, None),
        (REQUEST_KEY, "DOUBLE", JAVA_DOUBLE_MAX, None),
        (EXCLUDED_PRINCIPALS_KEY, "STRING", None, None),
        (CHECK_INTERVAL_KEY, "INT", default_interval, None),
        (MIN_AVAILABLE_BYTES_KEY, "LONG", None, _range(0)),
        (MIN_AVAILABLE_RATIO_KEY, "DOUBLE", None, _range(0.0, 1.0)),
        (VALIDITY_DURATION_KEY, "STRING", "PT5M", _iso8601_duration),
        (FALLBACK_KEY, "DOUBLE", 1.0, _range(0.0, 1.0)),
        (CLIENT_ID_PREFIX_KEY, "STRING", "__strimzi", None),
        (ADMIN_BOOTSTRAP_KEY, "LIST", _MISSING, _non_empty_list),
    ]


def _excluded_principals(value: Optional[str]) -> tuple:
    """``getSetOfExcludedPrincipals``: names after ``User:``, first occurrence order, duplicates removed."""
    names: list = []
    if value is None:
        return ()
    for entry in _java_split(value, ";"):
        parts = _java_split(entry, "User:")
        if len(parts) == 2 and parts[1] not in names:
            names.append(parts[1])
    return tuple(names)


def _check(props: Mapping[str, str], version: str) -> tuple:
    """Run every rule; return (parsed values, [(exception class, reason), ...] in the order the plugin meets them)."""
    if version not in PLUGIN_VERSIONS:
        raise ValueError(f"unknown kafka-quotas-plugin version {version!r}; known: {', '.join(PLUGIN_VERSIONS)}")
    values: dict = {}
    failures: list = []
    for name, kind, default, validator in _static_quota_definitions(version):
        try:
            if name in props:
                value = _parse_typed(name, props[name], kind)
            elif default is _MISSING:
                raise _ConfigError(f'Missing required configuration "{name}" which has no default value.')
            else:
                value = default
            if validator is not None:
                validator(name, value)
            values[name] = value
        except _ConfigError as exc:
            failures.append((CONFIG_EXCEPTION, str(exc)))
    interval = values.get(CHECK_INTERVAL_KEY)
    if interval is not None and interval > 0:
        has_bytes = MIN_AVAILABLE_BYTES_KEY in props
        has_ratio = MIN_AVAILABLE_RATIO_KEY in props
        if has_bytes and has_ratio:
            both = f"{MIN_AVAILABLE_BYTES_KEY},{MIN_AVAILABLE_RATIO_KEY}"
            failures.append((ILLEGAL_STATE_EXCEPTION, f"Both limit types configured, only configure one of [{both}]"))
        elif version == "0.3.1" and not has_bytes and not has_ratio:
            failures.append((ILLEGAL_STATE_EXCEPTION, "storageCheckInterval > 0 but no limit type configured"))
    return values, failures


def plugin_enabled(props: Mapping[str, str]) -> bool:
    """True when the broker properties select the Strimzi static quota callback."""
    value = props.get(CALLBACK_CLASS_KEY)
    return isinstance(value, str) and _java_trim(value) == STATIC_QUOTA_CALLBACK


def validate(props: Mapping[str, str], version: str = DEFAULT_PLUGIN_VERSION) -> list:
    """Every reason the plugin would refuse ``props`` (empty: the broker starts), in the order it checks them."""
    return [reason for _ignored, reason in _check(props, version)[1]]


def load(props: Mapping[str, str], version: str = DEFAULT_PLUGIN_VERSION) -> PluginConfig:
    """Parse the plugin configuration; raise PluginConfigError with the plugin's first error, if it has one."""
    values, failures = _check(props, version)
    if failures:
        exception_class, reason = failures[0]
        raise PluginConfigError(reason, exception_class)
    admin_properties = {
        key[len(ADMIN_PREFIX) :]: value
        for key, value in props.items()
        if key.startswith(ADMIN_PREFIX) and len(key) > len(ADMIN_PREFIX) and key != ADMIN_BOOTSTRAP_KEY
    }
    return PluginConfig(
        produce=values[PRODUCE_KEY],
        fetch=values[FETCH_KEY],
        request=values[REQUEST_KEY],
        excluded_principals=_excluded_principals(values[EXCLUDED_PRINCIPALS_KEY]),
        check_interval_s=values[CHECK_INTERVAL_KEY],
        min_available_bytes=values[MIN_AVAILABLE_BYTES_KEY],
        min_available_ratio=values[MIN_AVAILABLE_RATIO_KEY],
        fallback=values[FALLBACK_KEY],
        validity_s=_parse_java_duration_nanos(values[VALIDITY_DURATION_KEY]) / _NANOS_PER_SECOND,
        admin_bootstrap_servers=_java_trim(str(props[ADMIN_BOOTSTRAP_KEY])),
        admin_properties=admin_properties,
        client_id_prefix=values[CLIENT_ID_PREFIX_KEY],
    )
