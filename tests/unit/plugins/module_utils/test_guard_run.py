"""One guard decision through the adapter: which requests it sends, and what it leaves for the next one."""

import datetime

import pytest
from fake_kafka import FakeAdapter

from ansible_collections.headroom.kafka.plugins.module_utils import guard_options, guard_run, quota_apply
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError

NOW = datetime.datetime(2026, 11, 26, 12, 0, tzinfo=datetime.timezone.utc)
GIB = 1 << 30


def rows(usable):
    return [
        {
            "log_dir": "/data",
            "error": None,
            "total_bytes": 10 * GIB,
            "usable_bytes": usable,
            "partitions": 1,
            "partition_bytes": 0,
        }
    ]


def settings(**options):
    params = {name: spec.get("default") for name, spec in guard_options.ARGUMENT_SPEC.items()}
    params.update(
        {
            "bootstrap_servers": ["kafka:9092"],
            "min_available_ratio": 0.1,
            "default_producer_byte_rate": 1000,
            "quotas": [{"entity": {"user": "alice"}, "producer_byte_rate": 500}],
            "excluded_principals": ["User:ops"],
        }
    )
    params.update(options)
    return guard_options.settings(params)


def decide(adapter, memory=None, check_mode=False, **options):
    return guard_run.guard_once(
        adapter, settings(**options), memory or guard_run.disk_guard.GuardMemory(), NOW, check_mode=check_mode
    )


def kinds(adapter):
    return [request[0] for request in adapter.requests]


def test_the_first_decision_reads_then_validates_then_applies_and_the_next_sends_only_reads():
    adapter = FakeAdapter(log_dirs={1: rows(5 * GIB), 2: rows(6 * GIB)})
    result, memory = decide(adapter)
    assert result["changed"] and result["throttle_factor"] == 1.0
    assert kinds(adapter) == ["describe", "describe_cluster", "describe_log_dirs", "validate", "alter"]
    assert memory.observed_at == NOW.timestamp() and sorted(memory.brokers) == [1, 2]
    adapter.requests.clear()
    result, _memory = decide(adapter, memory)
    assert not result["changed"] and result["changes"] == []
    assert kinds(adapter) == ["describe", "describe_cluster", "describe_log_dirs"], "nothing beyond the reads"


def test_check_mode_has_kafka_validate_but_applies_nothing_and_keeps_the_memory():
    adapter = FakeAdapter(log_dirs={1: rows(GIB // 2)})
    before = guard_run.disk_guard.GuardMemory()
    result, memory = decide(adapter, before, check_mode=True)
    assert result["changed"] and result["throttle_factor"] == 0.0
    assert kinds(adapter) == ["describe", "describe_cluster", "describe_log_dirs", "validate"]
    assert adapter.store == {} and memory is before
    assert result["diff"]["after"]["user=alice"] == {"producer_byte_rate": 1}


def test_a_refused_validation_applies_nothing():
    adapter = FakeAdapter(log_dirs={1: rows(5 * GIB)}, refuse={(("user", "alice"),): ("INVALID_REQUEST", "no")})
    with pytest.raises(quota_apply.QuotaApplyError, match="nothing was applied"):
        decide(adapter)
    assert "alter" not in kinds(adapter) and adapter.store == {}


def test_a_broker_that_does_not_answer_makes_the_view_incomplete_and_the_fallback_applies_without_memory():
    adapter = FakeAdapter(log_dirs={1: rows(5 * GIB), 2: KafkaAdapterError("broker 2 did not answer", broker=2)})
    result, _memory = decide(adapter, throttle_factor_fallback=0.5)
    assert (result["observed"], result["missing_brokers"], result["throttle_factor"], result["fallback_applied"]) == (
        False,
        [2],
        0.5,
        True,
    )
    assert adapter.store[(("user", None),)][1] == {"producer_byte_rate": 500.0}


def test_a_broker_that_answers_with_no_log_dirs_answered_as_the_plugin_counts_it():
    """The plugin's DescribeLogDirs succeeds with such a broker: the observation is complete and the others decide."""
    adapter = FakeAdapter(log_dirs={1: rows(GIB // 2), 2: []})
    result, memory = decide(adapter)
    assert (result["complete"], result["missing_brokers"], result["observed"], result["throttle_factor"]) == (
        True,
        [],
        True,
        0.0,
    )
    assert memory.observed_at == NOW.timestamp()


def test_the_declaration_warns_about_client_id_produce_rates_the_default_user_shadows():
    adapter = FakeAdapter(log_dirs={1: rows(5 * GIB)})
    result, _memory = decide(adapter, quotas=[{"entity": {"client_id": "legacy"}, "producer_byte_rate": 10}])
    (warning,) = result["declaration_warnings"]
    assert warning.startswith(
        "client_id=legacy: a client_id-only produce rate never applies while the <default> user has one"
    )
