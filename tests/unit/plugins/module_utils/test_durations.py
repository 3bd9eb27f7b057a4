"""ISO 8601 durations as java.time.Duration.parse reads them, plus plain seconds."""

import datetime

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import durations

S = datetime.timedelta(seconds=1)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("PT5M", 300 * S),
        ("PT30S", 30 * S),
        ("PT0.5S", 0.5 * S),
        ("PT0,5S", 0.5 * S),
        ("PT1.S", 1 * S),
        ("PT1H30M", 5400 * S),
        ("P1D", 86400 * S),
        ("P2DT3H4M5S", (2 * 86400 + 3 * 3600 + 4 * 60 + 5) * S),
        ("pt5m", 300 * S),
        ("P0D", 0 * S),
        ("PT0S", 0 * S),
        ("PT-5M", -300 * S),
        ("-PT5M", -300 * S),
        ("-PT-5M", 300 * S),
        ("+PT5M", 300 * S),
        ("PT-0.5S", -0.5 * S),
        ("PT1M-10S", 50 * S),
        ("PT0.000001S", datetime.timedelta(microseconds=1)),
        ("PT0.123456789S", datetime.timedelta(microseconds=123457)),
        ("PT36H", 36 * 3600 * S),
        ("PT100000S", 100000 * S),
        (" PT5M ", 300 * S),
    ],
)
def test_iso_durations(text, expected):
    assert durations.parse_duration(text) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (300, 300 * S),
        (2.5, 2.5 * S),
        ("300", 300 * S),
        ("2.5", 2.5 * S),
        ("0", 0 * S),
        ("-1", -1 * S),
        (".5", 0.5 * S),
        (datetime.timedelta(minutes=1), 60 * S),
    ],
)
def test_seconds(value, expected):
    assert durations.parse_duration(value) == expected


@pytest.mark.parametrize(
    "value, hint",
    [
        ("5m", None),
        ("", None),
        ("P", "no days, hours, minutes or seconds"),
        ("PT", "a T must be followed"),
        ("P1DT", "a T must be followed"),
        ("P1Y", "years, months and weeks are periods"),
        ("P1M", "years, months and weeks are periods"),
        ("P2W", "years, months and weeks are periods"),
        ("P1H", "go after a T"),
        ("PT1.5M", None),
        ("PT0.1234567891S", None),
        ("PT5M30", None),
        ("T5M", None),
        ("PT5M 1S", None),
        (True, None),
        (None, None),
        ([5], None),
        (float("nan"), "not a finite number"),
        (float("inf"), "not a finite number"),
    ],
)
def test_invalid(value, hint):
    with pytest.raises(durations.DurationError) as caught:
        durations.parse_duration(value, "max_age")
    message = str(caught.value)
    assert message.startswith("max_age must be an ISO 8601 duration such as PT5M")
    assert "or a number of seconds (got {0!r})".format(value) in message
    if hint:
        assert hint in message


def test_out_of_range():
    with pytest.raises(durations.DurationError, match="out of range"):
        durations.parse_duration("P9999999999D", "max_age")


@pytest.mark.parametrize("value", ["PT0S", "P0D", "0", "PT-1S", -5])
def test_positive_refuses_zero_and_negative(value):
    with pytest.raises(durations.DurationError, match="max_age must be longer than zero"):
        durations.parse_positive_duration(value, "max_age")


def test_positive_accepts():
    assert durations.parse_positive_duration("PT0.001S", "max_age") == datetime.timedelta(milliseconds=1)


@pytest.mark.parametrize(
    "delta, text",
    [
        (datetime.timedelta(0), "PT0S"),
        (datetime.timedelta(minutes=5), "PT5M"),
        (datetime.timedelta(hours=1, minutes=30), "PT1H30M"),
        (datetime.timedelta(days=2), "PT48H"),
        (datetime.timedelta(seconds=0.5), "PT0.5S"),
        (datetime.timedelta(seconds=-90), "PT-1M-30S"),
        (datetime.timedelta(milliseconds=1), "PT0.001S"),
    ],
)
def test_format_like_java(delta, text):
    assert durations.format_duration(delta) == text
    assert durations.parse_duration(text) == delta
