"""The quotas spec's peak_fill_rate: a plugin limit that cannot hold at the fill rate is refused (limit_sizing's rule
with the plugin's measured reaction), unless accept_uncovered_limit; without a check interval, the longest that holds
is chosen, up to the plugin's default."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import limit_sizing, quota_plugin_spec

MIB = 1 << 20
ADMIN = {"bootstrap_servers": ["kafka-1:9093"]}
INTERVAL_KEY = quota_plugin_spec.CHECK_INTERVAL_KEY


def spec(**fields):
    return dict({"type": "strimzi", "min_available_bytes_per_volume": 96 * MIB}, **fields)


def render(**fields):
    return quota_plugin_spec.render(spec(**fields), ADMIN)


def refused(**fields):
    with pytest.raises(quota_plugin_spec.QuotaPluginSpecError) as info:
        render(**fields)
    return str(info.value)


def test_the_issue_s_race_is_refused_before_anything_is_written():
    """96 MiB free per volume, checked every 2 s, a volume filling at 92 MiB/s: the volumes filled. Refused, with the
    least limit: 92 MiB/s x (2 s + 1 + 0.6 + 6) = 883.2 MiB."""
    message = refused(peak_fill_rate=92 * MIB, check_interval=2)
    assert message.startswith(
        "kafka_quotas.min_available_bytes_per_volume 100663296 cannot hold at kafka_quotas.peak_fill_rate 96468992 "
        "bytes/s with a check interval of 2 s: a volume needs at least 926102324 bytes free"
    )
    assert "no check interval the plugin can keep would: raise the limit" in message
    assert message.endswith("or set kafka_quotas.accept_uncovered_limit: true to apply it anyway")


@pytest.mark.parametrize(
    ("rate", "chosen"),
    [
        (8 * MIB, 4),  # 96 MiB / 8 MiB/s = 12 s of fill, less 1 + 0.6 + 6 = 4.4 s
        (9 * MIB, 3),  # 10.7 s of fill: 3.1 s left for the interval
        (MIB, 60),  # 88 s would hold: the plugin's default is the longest chosen
        (0, 60),
    ],
)
def test_without_a_check_interval_the_longest_that_holds_is_written(rate, chosen):
    properties, warnings = render(peak_fill_rate=rate)
    assert properties[INTERVAL_KEY] == str(chosen) and warnings == []
    parts = limit_sizing.plugin_parts(rate)
    assert limit_sizing.least_limit_bytes(rate, chosen, **parts) <= 96 * MIB


def test_a_rate_no_interval_holds_is_refused_without_a_check_interval_too():
    message = refused(peak_fill_rate=20 * MIB)
    assert "with a check interval of 2 s" in message and "raise the limit" in message


def test_a_given_interval_too_long_is_refused_naming_the_longest_that_holds():
    message = refused(peak_fill_rate=MIB, check_interval="PT2M")
    assert "with a check interval of 120 s" in message and "check_interval 88 or less would hold it" in message


def test_accept_uncovered_limit_applies_it_with_a_warning():
    properties, warnings = render(peak_fill_rate=92 * MIB, accept_uncovered_limit=True)
    assert properties[INTERVAL_KEY] == "2"
    [warning] = warnings
    assert warning.endswith("raise the limit (applied anyway: accept_uncovered_limit)")


def test_a_covered_limit_renders_as_before_and_writes_nothing_of_the_rate():
    properties, warnings = render(peak_fill_rate=MIB, check_interval=30)
    assert warnings == [] and properties == quota_plugin_spec.render(spec(check_interval=30), ADMIN)[0]
    assert not any("fill" in key for key in properties)


def test_a_ratio_limit_is_not_sized_here_and_says_where_it_is():
    properties, warnings = quota_plugin_spec.render(
        {"type": "strimzi", "min_available_ratio_per_volume": 0.1, "peak_fill_rate": 100 * MIB}, ADMIN
    )
    assert INTERVAL_KEY not in properties
    assert warnings == [
        "kafka_quotas.peak_fill_rate is not checked against min_available_ratio_per_volume here, since the ratio's "
        "bytes depend on each volume's size: check it with headroom.kafka.volume_limits and its sizing option"
    ]


def test_storage_checks_off_are_not_sized():
    properties, warnings = render(peak_fill_rate=92 * MIB, check_interval=0)
    assert properties[INTERVAL_KEY] == "0" and len(warnings) == 1 and "turns the quota plugin's storage" in warnings[0]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"peak_fill_rate": -1}, "kafka_quotas.peak_fill_rate must be >= 0 bytes per second"),
        ({"peak_fill_rate": "fast"}, "kafka_quotas.peak_fill_rate"),
        ({"peak_fill_rate": 1, "accept_uncovered_limit": "yes"}, "accept_uncovered_limit must be true or false"),
        ({"accept_uncovered_limit": True}, "accept_uncovered_limit applies only with kafka_quotas.peak_fill_rate"),
    ],
)
def test_bad_sizing_fields_are_refused_naming_the_field(fields, expected):
    assert expected in refused(**fields)


def test_type_kafka_refuses_the_sizing_fields():
    with pytest.raises(quota_plugin_spec.QuotaPluginSpecError, match="peak_fill_rate .* applies to type strimzi"):
        quota_plugin_spec.render({"type": "kafka", "producer_byte_rate": 1, "peak_fill_rate": 1})
