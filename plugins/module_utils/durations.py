# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Durations as the quota plugin writes them, with no I/O.

ISO 8601 durations in the form java.time.Duration.parse accepts (``PT5M``, ``PT30S``, ``PT0.5S``, ``P1D``,
``P2DT3H4M``, signs on the whole or on each part, ``,`` or ``.`` before up to 9 fraction digits of seconds,
letters in either case), plus a plain number of seconds (``300``, ``"2.5"``). Years, months and weeks are not
durations in java.time (they belong to Period) and are refused, as Java refuses them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import math
import re

# java.time.Duration's pattern: [-+]P[nD][T[nH][nM][n[.fraction]S]], case-insensitive.
_ISO = re.compile(
    r"^([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$",
    re.IGNORECASE,
)
_SECONDS = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$")
EXAMPLES = "PT5M, PT30S, PT0.5S, PT1H30M or P1D"


class DurationError(ValueError):
    """A value that is neither an ISO 8601 duration nor a number of seconds; the message names the option."""


def _fail(option, value, why=None):
    message = "{0} must be an ISO 8601 duration such as {1}, or a number of seconds (got {2!r})".format(
        option, EXAMPLES, value
    )
    if why:
        message = "{0}: {1}".format(message, why)
    raise DurationError(message)


def _from_seconds(option, value, seconds):
    try:
        return datetime.timedelta(seconds=seconds)
    except (OverflowError, ValueError):
        return _fail(option, value, "out of range")


def _iso(option, value, text):
    match = _ISO.match(text)
    if not match:
        why = None
        upper = text.upper()
        if upper.startswith(("P", "-P", "+P")) and re.search(r"[YMW]", upper.split("T")[0]):
            why = "years, months and weeks are periods, not durations; use days (P7D) or hours"
        elif "T" not in upper and re.search(r"[HS]", upper):
            why = "hours, minutes and seconds go after a T (PT1H, not P1H)"
        return _fail(option, value, why)
    sign, days, time_part, hours, minutes, seconds, fraction = match.groups()
    if time_part is not None and hours is None and minutes is None and seconds is None:
        return _fail(option, value, "a T must be followed by hours, minutes or seconds")
    if days is None and time_part is None:
        return _fail(option, value, "it has no days, hours, minutes or seconds")
    nanos = 0
    if fraction:
        nanos = int(fraction.ljust(9, "0"))
        if seconds.startswith("-"):
            nanos = -nanos
    total_seconds = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)
    try:
        result = datetime.timedelta(seconds=total_seconds, microseconds=nanos / 1000.0)
    except OverflowError:
        return _fail(option, value, "out of range")
    return -result if sign == "-" else result


def parse_duration(value: object, option: str = "duration") -> datetime.timedelta:
    """A datetime.timedelta from an ISO 8601 duration (java.time.Duration syntax) or a number of seconds.

    Sub-microsecond fractions are rounded to the nearest microsecond (timedelta's resolution).
    """
    if isinstance(value, bool) or value is None:
        return _fail(option, value)
    if isinstance(value, datetime.timedelta):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            return _fail(option, value, "not a finite number")
        return _from_seconds(option, value, value)
    if not isinstance(value, str):
        return _fail(option, value)
    text = value.strip()
    if _SECONDS.match(text):
        return _from_seconds(option, value, float(text) if "." in text else int(text))
    return _iso(option, value, text)


def parse_positive_duration(value: object, option: str = "duration") -> datetime.timedelta:
    """Like parse_duration, and the duration must be longer than zero."""
    result = parse_duration(value, option)
    if result <= datetime.timedelta(0):
        raise DurationError("{0} must be longer than zero (got {1!r})".format(option, value))
    return result


def format_duration(delta: datetime.timedelta) -> str:
    """The ISO 8601 form java.time.Duration.toString prints: PT5M, PT1H30M, PT0.5S, PT48H (days as hours)."""
    total_us = (delta.days * 86400 + delta.seconds) * 1000000 + delta.microseconds
    if total_us == 0:
        return "PT0S"
    sign = "-" if total_us < 0 else ""
    total_us = abs(total_us)
    hours, rest = divmod(total_us, 3600 * 1000000)
    minutes, rest = divmod(rest, 60 * 1000000)
    seconds, micros = divmod(rest, 1000000)
    parts = []
    if hours:
        parts.append("{0}{1}H".format(sign, hours))
    if minutes:
        parts.append("{0}{1}M".format(sign, minutes))
    if seconds or micros:
        text = str(seconds)
        if micros:
            text += "." + str(micros).rjust(6, "0").rstrip("0")
        parts.append("{0}{1}S".format(sign, text))
    return "PT" + "".join(parts)
