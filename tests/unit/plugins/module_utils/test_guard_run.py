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


def held_factor(adapter):
    declaration = settings().declaration
    return declaration.factor_applied(quota_apply.read_state(adapter))


def test_two_guards_that_remember_different_brokers_settle_on_the_stricter_factor_instead_of_flapping():
    """Guard A saw broker 3 full before it left the cluster and remembers it for the validity (the plugin's rule);
    guard B started after it left and never saw it. Each applying its own decision in turn would flap the quotas at
    every decision; the factor A applied holds until A's memory of broker 3 runs out."""
    adapter = FakeAdapter(log_dirs={1: rows(5 * GIB), 2: rows(5 * GIB), 3: rows(GIB // 2)})
    start = NOW.timestamp()
    _result, memory_a = guard_run.guard_once(adapter, settings(), guard_run.disk_guard.GuardMemory(), NOW)
    assert held_factor(adapter) == 0.0
    del adapter.log_dirs[3]  # broker 3 leaves the cluster
    memories = {"a": memory_a, "b": guard_run.disk_guard.GuardMemory()}
    held, reasons = [], []
    for step in range(1, 41):  # A and B in turn, 10 s apart, past A's memory of broker 3 (300 s)
        name = "ab"[step % 2]
        now = NOW + datetime.timedelta(seconds=10 * step)
        result, memories[name] = guard_run.guard_once(adapter, settings(), memories[name], now)
        held.append(held_factor(adapter))
        reasons.append((name, now.timestamp() - start, result["reason"]))
    changes = [index for index in range(1, len(held)) if held[index] != held[index - 1]]
    # B's first decision opens (it cannot tell A's factor from a stale one), A closes again at once, B then keeps
    # A's stricter factor; A opens when broker 3 is 300 s gone, and B agrees.
    assert held[:4] == [1.0, 0.0, 0.0, 0.0], reasons[:4]
    assert len(changes) == 2 and held[-1] == 1.0, (held, reasons)
    assert reasons[changes[-1]][0] == "a" and reasons[changes[-1]][1] >= 300
    assert any("held by another writer" in reason for name, _at, reason in reasons if name == "b")


def test_a_foreign_factor_is_kept_no_longer_than_the_validity():
    memory = guard_run.disk_guard.GuardMemory(applied=1.0)
    keep = guard_run.disk_guard.other_writer
    factor, foreign, why = keep(1.0, 0.0, memory, 1000.0, 300.0)
    assert (factor, foreign) == (0.0, {"factor": 0.0, "since": 1000.0}) and "kept for up to 300 s" in why
    memory.foreign = foreign
    assert keep(1.0, 0.0, memory, 1300.0, 300.0)[0] == 0.0, "inclusive, as the plugin's validity"
    assert keep(1.0, 0.0, memory, 1300.5, 300.0) == (1.0, foreign, None)
    assert keep(0.0, 0.5, memory, 1000.0, 300.0)[0] == 0.0, "a stricter decision is applied at once"
    assert keep(1.0, 1.0, memory, 1000.0, 300.0) == (1.0, None, None), "Kafka holds what this guard applied"
    assert keep(1.0, 0.0, guard_run.disk_guard.GuardMemory(), 1000.0, 300.0) == (1.0, None, None)


@pytest.mark.parametrize(
    "held, applied, applying, own",
    [
        (0.0, 1.0, 0.0, 0.0),  # a guard before was killed once Kafka applied its change
        (1.0, 1.0, None, 1.0),
        (0.0, 1.0, None, 1.0),  # another writer's factor is not this guard's
        (None, 1.0, 0.0, 1.0),  # Kafka holds no factor
        (0.5, None, None, None),
    ],
)
def test_the_factor_kafka_holds_is_the_guards_own_when_it_applied_or_was_applying_it(held, applied, applying, own):
    memory = guard_run.disk_guard.GuardMemory(applied=applied, applying=applying)
    assert guard_run.disk_guard.own_factor(held, memory) == own


def test_the_factor_about_to_be_applied_is_handed_over_first_so_a_guard_killed_after_kafka_applied_it_knows_it():
    adapter = FakeAdapter(log_dirs={1: rows(5 * GIB)})
    _result, opened = decide(adapter)
    assert opened.applied == 1.0
    adapter.log_dirs[1] = rows(GIB // 2)
    stored = []
    result, _memory = guard_run.guard_once(adapter, settings(), opened, NOW, before_apply=stored.append)
    assert result["throttle_factor"] == 0.0 and held_factor(adapter) == 0.0
    assert [(memory.applied, memory.applying) for memory in stored] == [(1.0, 0.0)]
    # Killed before it stored what it returned: the next decision starts from the memory it handed over, and a looser
    # decision is its own to make, not another writer's factor to keep.
    adapter.log_dirs[1] = rows(5 * GIB)
    later = NOW + datetime.timedelta(seconds=10)
    result, memory = guard_run.guard_once(adapter, settings(), stored[0], later, before_apply=stored.append)
    assert result["throttle_factor"] == 1.0 and "another writer" not in result["reason"]
    assert (memory.applied, memory.applying) == (1.0, None) and held_factor(adapter) == 1.0


class Killed(Exception):
    """The guard dies once it handed its memory over, before its change reaches Kafka."""


def test_a_guard_killed_before_its_change_after_one_killed_after_it_still_owns_the_factor_kafka_holds():
    adapter = FakeAdapter(log_dirs={1: rows(GIB // 2)})
    _result, paused = decide(adapter, memory=guard_run.disk_guard.GuardMemory(applied=1.0))
    assert held_factor(adapter) == 0.0
    handed_over_after_kafka_applied = guard_run.disk_guard.GuardMemory(
        paused.observed_at, paused.brokers, applied=1.0, applying=0.0
    )
    adapter.log_dirs[1] = rows(5 * GIB)
    stored = []

    def killed_before_the_change(memory):
        stored.append(memory)
        raise Killed()

    with pytest.raises(Killed):
        guard_run.guard_once(
            adapter, settings(), handed_over_after_kafka_applied, NOW, before_apply=killed_before_the_change
        )
    assert held_factor(adapter) == 0.0
    (handed_over,) = stored
    assert (handed_over.applied, handed_over.applying) == (0.0, 1.0), "the factor Kafka holds is still its own"
    later = NOW + datetime.timedelta(seconds=10)
    result, memory = guard_run.guard_once(adapter, settings(), handed_over, later)
    assert result["throttle_factor"] == 1.0 and "another writer" not in result["reason"]
    assert held_factor(adapter) == 1.0 and memory.applied == 1.0


def test_nothing_is_handed_over_when_nothing_changes_or_in_check_mode():
    adapter = FakeAdapter(log_dirs={1: rows(5 * GIB)})
    _result, memory = decide(adapter)
    stored = []
    guard_run.guard_once(adapter, settings(), memory, NOW, before_apply=stored.append)
    adapter.log_dirs[1] = rows(GIB // 2)
    guard_run.guard_once(adapter, settings(), memory, NOW, check_mode=True, before_apply=stored.append)
    assert stored == []
