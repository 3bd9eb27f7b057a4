# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one place the modules check numbers, broker ids, date-times and result keys, with no I/O.

Ansible's argument spec converts types but has no ranges: ``type: float`` takes ``nan``, ``inf`` and ``1e308``,
``type: int`` takes any size. Every module declares the range of each number it takes (``OPTION_RANGES``) and
checks it here before it contacts Kafka; a refusal names the option, the value and what is allowed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import math
import re
from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, Mapping, Optional, Tuple, TypeVar, Union

if TYPE_CHECKING:
    from ansible.module_utils.basic import AnsibleModule

KAFKA_ID_MAX = 2**31 - 1  # broker and node ids are Java ints >= 0
LONG_MAX = 2**63 - 1  # sizes and rates Kafka keeps in a Java long
EARLIEST_INSTANT = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)  # Kafka's timestamps start at the epoch
LATEST_INSTANT = datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc)
# Keys Ansible gives a meaning to in a task result: data under one of them changes how the task is shown or judged
# (a "skipped" list makes an evaluated task read as skipped).
RESERVED_RESULT_KEYS = frozenset(
    (
        "changed",
        "failed",
        "skipped",
        "skip_reason",
        "msg",
        "invocation",
        "rc",
        "stdout",
        "stdout_lines",
        "stderr",
        "stderr_lines",
        "results",
        "warnings",
        "deprecations",
        "exception",
        "ansible_facts",
        "diff",
        "unreachable",
        "item",
        "attempts",
        "module_stdout",
        "module_stderr",
    )
)
_DATETIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)$"
)
_UTC = datetime.timezone.utc
_T = TypeVar("_T")


class OptionError(ValueError):
    """A value outside what an option allows; the message names the option, the value and the allowed range."""


def _number_text(value):
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return str(value)


class Number:
    """A closed range of finite numbers, optionally whole; ``above`` makes the lower bound exclusive."""

    def __init__(
        self,
        minimum: float,
        maximum: float,
        unit: Optional[str] = None,
        integer: bool = False,
        above: bool = False,
        what: Optional[str] = None,
    ) -> None:
        self.minimum, self.maximum = minimum, maximum
        self.unit, self.integer, self.above, self.what = unit, integer, above, what

    def describe(self) -> str:
        kind = self.what or ("a whole number" if self.integer else "a number")
        if self.unit:
            kind = "{0} of {1}".format(kind, self.unit)
        low = (
            "greater than {0}".format(_number_text(self.minimum))
            if self.above
            else "from {0}".format(_number_text(self.minimum))
        )
        upto = "up to" if self.above else "to"
        return "{0} {1} {2} {3}".format(kind, low, upto, _number_text(self.maximum))

    def problem(self, value: object) -> Optional[str]:
        """Why value is not in the range, or None."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "not a number"
        if isinstance(value, float) and not math.isfinite(value):
            return "not a finite number"
        if self.integer and isinstance(value, float) and not value.is_integer():
            return "not a whole number"
        if value < self.minimum or (self.above and value == self.minimum) or value > self.maximum:
            return "out of range"
        return None

    def check(self, option: str, value: _T) -> _T:
        if value is not None and self.problem(value):
            raise OptionError("{0} must be {1} (got {2!r})".format(option, self.describe(), value))
        return value


def seconds(minimum: float, maximum: float, above: bool = False) -> Number:
    return Number(minimum, maximum, unit="seconds", above=above)


BROKER_ID = Number(0, KAFKA_ID_MAX, integer=True, what="a broker id, a whole number")
BYTES = Number(0, LONG_MAX, integer=True, what="a whole number", unit="bytes")
REQUEST_TIMEOUT = seconds(0.1, 3600)


class ListOf:
    """Every item of a list option in a range; ``unique`` refuses the same item twice."""

    def __init__(self, item: Number, unique: bool = True) -> None:
        self.item, self.unique = item, unique

    def check(self, option: str, values: Optional[List[Any]]) -> Optional[List[Any]]:
        if values is None:
            return values
        seen = set()
        for index, value in enumerate(values):
            self.item.check("{0}[{1}]".format(option, index), value)
            if self.unique and value in seen:
                raise OptionError("{0} lists {1!r} twice (items must be unique)".format(option, value))
            seen.add(value)
        return values


BROKER_IDS = ListOf(BROKER_ID)
# What an option's range is checked with (check_params' ``ranges``).
Range = Union[Number, ListOf]


def check_params(params: Mapping[str, Any], ranges: Mapping[str, Range]) -> None:
    """Check every option of ``ranges`` ({option: Number or ListOf}; ``a.b`` for a suboption, ``a[].b`` for a suboption
    of each item of a list); raises OptionError for the first value out of range."""
    for path in sorted(ranges):
        for option, value in _values(params, path):
            ranges[path].check(option, value)


def _values(params: Mapping[str, Any], path: str) -> Iterator[Tuple[str, Any]]:
    """(option name as a user reads it, value) for each value a dotted path reaches."""
    head, rest = path.partition(".")[::2]
    if head.endswith("[]"):
        name = head[:-2]
        items = params.get(name) or []
        for index, item in enumerate(items):
            if isinstance(item, dict):
                for option, value in _values(item, rest):
                    yield "{0}[{1}].{2}".format(name, index, option), value
        return
    value = params.get(head)
    if not rest:
        yield head, value
    elif isinstance(value, dict):
        for option, inner in _values(value, rest):
            yield "{0}.{1}".format(head, option), inner


def enforce(module: "AnsibleModule", ranges: Mapping[str, Range]) -> None:
    """Fail the module naming the option when a number is out of its range (before anything talks to Kafka)."""
    try:
        check_params(module.params, ranges)
    except OptionError as exc:
        module.fail_json(msg=str(exc))


# -- date-times ----------------------------------------------------------------------------------------------------
def parse_datetime(text: object, field: str) -> datetime.datetime:
    """An aware UTC datetime from ISO 8601 date-time text with a zone (Z or +hh:mm), fractions up to nanoseconds,
    between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z; OptionError naming the field otherwise."""
    if isinstance(text, datetime.datetime):
        moment = text if text.tzinfo is not None else text.replace(tzinfo=_UTC)
        return _in_range(moment, text, field)
    match = _DATETIME.match(text.strip()) if isinstance(text, str) else None
    if not match:
        raise OptionError(
            "{0} must be an ISO 8601 date-time with a time zone, such as 2026-11-22T04:07:09.123Z (got {1!r})".format(
                field, text
            )
        )
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    offset = datetime.timedelta(0)
    if zone not in ("Z", "z"):
        digits = zone[1:].replace(":", "")
        offset = datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        if offset >= datetime.timedelta(hours=24):
            raise OptionError("{0} has a time zone offset of 24 hours or more (got {1!r})".format(field, text))
        if zone[0] == "-":
            offset = -offset
    try:
        moment = datetime.datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second or 0),
            int((fraction or "0").ljust(9, "0")[:6]),
            tzinfo=datetime.timezone(offset),
        )
    except ValueError as exc:
        raise OptionError("{0} is not a valid date-time (got {1!r}): {2}".format(field, text, exc)) from exc
    return _in_range(moment, text, field)


def _in_range(moment, text, field):
    # Converting an instant near year 1 or 9999 to UTC can leave datetime's range: check on the offset-free value.
    utc_offset = moment.utcoffset() or datetime.timedelta(0)
    naive = moment.replace(tzinfo=None)
    earliest, latest = EARLIEST_INSTANT.replace(tzinfo=None), LATEST_INSTANT.replace(tzinfo=None)
    if naive - earliest < utc_offset or latest - naive < -utc_offset:
        raise OptionError(
            "{0} must be between {1} and {2} (got {3!r})".format(
                field, "1970-01-01T00:00:00Z", "9999-12-31T23:59:59Z", text if isinstance(text, str) else str(text)
            )
        )
    return moment.astimezone(_UTC)


# -- results -------------------------------------------------------------------------------------------------------
def data_keys_clash(result: Iterable[str]) -> List[str]:
    """Keys of a module's data that Ansible reserves; a module result must leave them to Ansible."""
    return sorted(RESERVED_RESULT_KEYS.intersection(result))


# -- Kafka names ---------------------------------------------------------------------------------------------------
def server_list(servers: Any) -> List[str]:
    """host:port items from a list or a comma-separated string (or a list of such strings), blanks dropped."""
    items = servers if isinstance(servers, (list, tuple)) else [servers]
    result = []  # type: List[str]
    for item in items:
        if item is None:
            continue
        result += [server.strip() for server in str(item).split(",") if server.strip()]
    return result


_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def topic_name_problem(name: Optional[str]) -> Optional[str]:
    """Why Kafka refuses a topic name, or None (Kafka's Topic.validate: 1 to 249 of [a-zA-Z0-9._-], not . or ..)."""
    if name in (".", ".."):
        return "Kafka refuses . and .. as topic names"
    if not _TOPIC_NAME.match(name or ""):
        return "a topic name is 1 to 249 characters of letters, digits, '.', '_' and '-'"
    return None


def check_topic_name(option: str, name: str) -> str:
    problem = topic_name_problem(name)
    if problem:
        raise OptionError("{0} must be a topic name Kafka accepts: {1} (got {2!r})".format(option, problem, name))
    return name


def check_replication_factor(option: str, value: Optional[int]) -> Optional[int]:
    """-1 (the brokers' default) or 1 to 32767 (a Java short); 0 can never work."""
    if value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not (value == -1 or 1 <= value <= 32767):
        raise OptionError(
            "{0} must be -1 (the brokers' default) or a whole number from 1 to 32767 (got {1!r})".format(option, value)
        )
    return value
