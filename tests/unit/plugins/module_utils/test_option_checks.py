"""option_checks: ranges of numbers, broker ids, date-times and Kafka names, as every module checks them."""

import datetime

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import option_checks, snapshots

UTC = datetime.timezone.utc


@pytest.mark.parametrize(
    "rule, value, problem",
    [
        (option_checks.REQUEST_TIMEOUT, 30, None),
        (option_checks.REQUEST_TIMEOUT, 0.1, None),
        (option_checks.REQUEST_TIMEOUT, 3600, None),
        (option_checks.REQUEST_TIMEOUT, 0, "out of range"),
        (option_checks.REQUEST_TIMEOUT, 3600.5, "out of range"),
        (option_checks.REQUEST_TIMEOUT, float("nan"), "not a finite number"),
        (option_checks.REQUEST_TIMEOUT, float("-inf"), "not a finite number"),
        (option_checks.REQUEST_TIMEOUT, True, "not a number"),
        (option_checks.REQUEST_TIMEOUT, "30", "not a number"),
        (option_checks.BROKER_ID, 0, None),
        (option_checks.BROKER_ID, 2**31 - 1, None),
        (option_checks.BROKER_ID, 2**31, "out of range"),
        (option_checks.BROKER_ID, -1, "out of range"),
        (option_checks.BROKER_ID, 1.5, "not a whole number"),
        (option_checks.BROKER_ID, 2.0, None),
        (option_checks.BYTES, 2**63 - 1, None),
        (option_checks.BYTES, 2**63, "out of range"),
        (option_checks.Number(0, 10, above=True), 0, "out of range"),
        (option_checks.Number(0, 10, above=True), 1e-9, None),
    ],
)
def test_number_ranges(rule, value, problem):
    assert rule.problem(value) == problem


def test_refusals_name_option_value_and_range():
    with pytest.raises(
        option_checks.OptionError, match=r"^request_timeout must be a number of seconds from 0.1 to 3600 \(got nan\)$"
    ):
        option_checks.REQUEST_TIMEOUT.check("request_timeout", float("nan"))
    with pytest.raises(
        option_checks.OptionError, match=r"^rate must be a number of bytes per second greater than 0 up to 5 \(got 0\)$"
    ):
        option_checks.Number(0, 5, unit="bytes per second", above=True).check("rate", 0)


def test_nested_paths_name_the_item():
    params = {"quotas": [{"rate": 1}, {"rate": -1}], "limit": {"level": 5}}
    ranges = {"quotas[].rate": option_checks.Number(0, 10), "limit.level": option_checks.Number(0, 10)}
    with pytest.raises(option_checks.OptionError, match=r"^quotas\[1\]\.rate must be"):
        option_checks.check_params(params, ranges)
    option_checks.check_params({"quotas": None, "limit": None}, ranges)  # options not given are not checked


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-11-22T04:07:09.123Z", datetime.datetime(2026, 11, 22, 4, 7, 9, 123000, tzinfo=UTC)),
        ("2026-11-22T05:07:09.123456789+01:00", datetime.datetime(2026, 11, 22, 4, 7, 9, 123456, tzinfo=UTC)),
        ("1970-01-01T00:00:00Z", datetime.datetime(1970, 1, 1, tzinfo=UTC)),
        ("1970-01-01T01:00:00+01:00", datetime.datetime(1970, 1, 1, tzinfo=UTC)),
        ("9999-12-31T23:59:59Z", datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
        ("9999-12-31T23:59:59+23:59", datetime.datetime(9999, 12, 31, 0, 0, 59, tzinfo=UTC)),
    ],
)
def test_date_times_in_range(text, expected):
    assert option_checks.parse_datetime(text, "at") == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("9999-12-31T23:59:59-23:59", "must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z"),
        ("0001-01-01T00:00:00+23:59", "must be between"),
        ("0000-01-01T00:00:00Z", "is not a valid date-time"),
        ("1969-12-31T23:59:59.999Z", "must be between"),
        ("1970-01-01T00:30:00+01:00", "must be between"),
        ("2026-02-30T00:00:00Z", "is not a valid date-time"),
        ("2026-11-22T04:07:09+24:00", "time zone offset of 24 hours or more"),
        ("2026-11-22T04:07:09", "must be an ISO 8601 date-time with a time zone"),
        (20261122, "must be an ISO 8601 date-time"),
        (None, "must be an ISO 8601 date-time"),
    ],
)
def test_date_times_refused_with_the_field(text, message):
    with pytest.raises(option_checks.OptionError, match="^at ") as caught:
        option_checks.parse_datetime(text, "at")
    assert message in str(caught.value)


def test_one_out_of_range_line_lands_among_the_invalid_messages():
    good = '{"SnapshotAt": "2026-11-22T04:07:09Z", "Volumes": [], "BrokerId": 1}'
    bad = '{"SnapshotAt": "9999-12-31T23:59:59-23:59", "Volumes": [], "BrokerId": 2}'
    now = datetime.datetime(2026, 11, 22, 4, 8, tzinfo=UTC)
    result = snapshots.read_result([("line 1", None, good), ("line 2", None, bad)], now, None, [1, 2])
    assert [m["BrokerId"] for m in result["snapshots"]] == [1]
    assert result["invalid_messages"] == [
        "line 2: SnapshotAt must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z "
        "(got '9999-12-31T23:59:59-23:59')"
    ]
    assert result["brokers_without_snapshot"] == [2]


@pytest.mark.parametrize(
    "name, ok",
    [
        ("usage-snapshots", True),
        ("a.b_c-D9", True),
        ("t" * 249, True),
        ("", False),
        (".", False),
        ("..", False),
        ("t" * 250, False),
        ("a b", False),
        ("ü", False),
        ("a/b", False),
    ],
)
def test_topic_names_as_kafka_validates_them(name, ok):
    assert (option_checks.topic_name_problem(name) is None) is ok


def test_reserved_result_keys():
    assert option_checks.data_keys_clash({"skipped": [], "skipped_volumes": [], "state": "OPEN"}) == ["skipped"]
