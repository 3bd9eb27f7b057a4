"""The disk guard's relieve option: one relief step per decision before the factor is decided, through a fake cluster
whose moves take a few reads to end."""

import datetime

import pytest
from fake_kafka import FakeAdapter
from fake_relief import MIB, FakeCluster

from ansible_collections.headroom.kafka.plugins.module_utils import (
    disk_guard,
    guard_options,
    guard_relief,
    guard_run,
    relief_apply,
    relief_moves,
)

NOW = datetime.datetime(2026, 12, 4, 12, 0, tzinfo=datetime.timezone.utc)
RELIEVE = {
    "relieve_at": {"type": "min_free_bytes", "level": 20 * MIB},
    "relieve_to": {"type": "min_free_bytes", "level": 40 * MIB},
    "max_bytes": None,
    "max_partitions": None,
    "throttle_rate": 1000,
    "log_dir_throttle_rate": None,
    "settle_time": "PT90S",
}


class GuardCluster(FakeCluster, FakeAdapter):
    """The relief fake with the quota store of the guard's fake: a decision reads and sets quotas on it."""

    def __init__(self, *args, **kwargs):
        FakeCluster.__init__(self, *args, **kwargs)
        self.store, self.refuse_on_apply, self.requests = {}, {}, []


def jbod(used_first=90 * MIB):
    """Broker 1's /a holds ``used_first`` bytes (a 30 MiB replica and the rest); its /b is empty."""
    return GuardCluster(
        [(1, "/a"), (1, "/b")],
        [("t", 0, 1, "/a", 30 * MIB), ("t", 1, 1, "/a", used_first - 30 * MIB)],
    )


def settings(relieve=None, relieving=True, **options):
    params = {name: spec.get("default") for name, spec in guard_options.ARGUMENT_SPEC.items()}
    params.update(
        bootstrap_servers=["kafka:9092"],
        min_available_bytes=5 * MIB,
        default_producer_byte_rate=1000,
        relieve=dict(RELIEVE, **(relieve or {})) if relieving else None,
    )
    params.update(options)
    return guard_options.settings(params)


def decide(cluster, memory=None, at=NOW, check_mode=False, **options):
    return guard_run.guard_once(
        cluster, settings(**options), memory or disk_guard.GuardMemory(), at, check_mode=check_mode
    )


def later(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def test_a_log_dir_at_relieve_at_gets_moves_before_any_throttle_and_the_next_decisions_follow_them_to_the_end():
    cluster = jbod()
    result, memory = decide(cluster)
    relief = result["relief"]
    assert relief["action"] == "started" and relief["planned_bytes"] == 30 * MIB == relief["moving_bytes"]
    assert [(m["topic"], m["partition"], m["to_log_dir"]) for m in relief["moves"]] == [("t", 0, "/b")]
    assert result["throttle_factor"] == 1.0 and result["changed"] is True, "10 MiB free is above the 5 MiB limit"
    assert memory.relief["pending"]["moves"] == relief["moves"]
    result, memory = decide(cluster, memory, later(10))
    assert result["relief"]["action"] == "finished" and result["relief"]["moved_bytes"] == 30 * MIB
    assert memory.relief == {"pending": None, "settled_at": later(10).timestamp()}
    result, memory = decide(cluster, memory, later(20))
    assert result["relief"]["action"] == "idle" and not result["changed"], "40 MiB free: nothing left to do"
    assert cluster.changes == [("log_dir", "t", 0, 1, "/b")]


def test_moves_still_running_are_followed_without_a_new_plan():
    cluster = jbod()
    cluster.reads = None  # the moves never end
    _result, memory = decide(cluster)
    for seconds in (10, 20):
        result, memory = decide(cluster, memory, later(seconds))
        assert result["relief"]["action"] == "moving" and result["relief"]["moving_bytes"] == 30 * MIB
        assert not result["changed"]
    assert cluster.changes == [("log_dir", "t", 0, 1, "/b")], "one move, started once"


def test_after_moves_end_no_plan_is_made_until_the_settle_time_has_passed():
    cluster = jbod()
    memory = disk_guard.GuardMemory(relief=guard_relief.new_memory(None, NOW.timestamp() - 30))
    result, same = decide(cluster, memory)
    assert result["relief"]["action"] == "settling" and cluster.changes == []
    assert result["relief"]["settles_at"] == NOW.timestamp() + 60 and same.relief == memory.relief
    result, _memory = decide(cluster, memory, later(61))
    assert result["relief"]["action"] == "started"


def test_a_volume_at_its_limit_is_throttled_while_its_moves_start():
    cluster = jbod(used_first=97 * MIB)
    result, _memory = decide(cluster)
    assert result["relief"]["action"] == "started"
    assert result["throttle_factor"] == 0.0, "3 MiB free is past the 5 MiB limit: moves do not stand in for it"


def test_check_mode_plans_changes_nothing_and_keeps_the_memory():
    cluster = jbod()
    before = disk_guard.GuardMemory()
    result, memory = decide(cluster, before, check_mode=True)
    assert result["relief"]["action"] == "planned" and result["relief"]["planned_bytes"] == 30 * MIB
    assert result["changed"] is True and cluster.changes == [] and memory is before


def test_observe_only_plans_and_starts_nothing():
    cluster = jbod()
    result, _memory = guard_run.guard_once(cluster, settings(), disk_guard.GuardMemory(), NOW, observe_only=True)
    assert result["relief"]["action"] == "planned" and cluster.changes == []


def test_no_log_dir_at_relieve_at_sends_no_relief_request():
    cluster = jbod(used_first=50 * MIB)
    result, _memory = decide(cluster)
    assert result["relief"]["action"] == "idle" and cluster.changes == []


def test_a_relief_that_fails_is_reported_and_the_decision_is_still_taken():
    cluster = jbod(used_first=97 * MIB)
    cluster.faults["alter_replica_log_dirs"] = ["fail"]
    result, memory = decide(cluster)
    assert result["relief"]["action"] == "failed" and "alter_replica_log_dirs" in result["relief"]["error"]
    assert result["throttle_factor"] == 0.0 and memory.relief["pending"] is None


def test_a_log_dir_no_move_can_relieve_is_reported_blocked():
    cluster = GuardCluster([(1, "/a")], [("t", 0, 1, "/a", 90 * MIB)])
    result, _memory = decide(cluster)
    assert result["relief"]["action"] == "blocked" and cluster.changes == []
    assert "broker 1 log dir /a" in result["relief"]["blocked"][0]["reason"]


def test_a_decision_without_relieve_reports_no_relief():
    cluster = jbod()
    result, _memory = guard_run.guard_once(cluster, settings(relieving=False), disk_guard.GuardMemory(), NOW)
    assert result["relief"] is None and cluster.changes == []


@pytest.mark.parametrize(
    "relieve, message",
    [
        ({"relieve_at": {"type": "min_free_bytes", "level": 5 * MIB}}, "relieve.relieve_at.level must ask for more"),
        ({"relieve_to": {"type": "min_free_bytes", "level": 10 * MIB}}, "relieve_to.level must be greater"),
        ({"relieve_to": {"type": "min_free_percentage", "level": 50}}, "must be the same"),
        ({"settle_time": "soon"}, "relieve.settle_time"),
        ({"throttle_rate": 0}, "relieve.throttle_rate"),
        ({"log_dir_throttle_rate": -5}, "relieve.log_dir_throttle_rate"),
        ({"max_bytes": 0}, "relieve.max_bytes"),
    ],
)
def test_a_bad_relieve_option_is_refused_naming_it(relieve, message):
    with pytest.raises(disk_guard.GuardError, match=message):
        settings(relieve)


def test_the_relief_memory_survives_json_and_a_broken_one_is_none():
    memory = disk_guard.GuardMemory(relief=guard_relief.new_memory(None, 12.5))
    again = disk_guard.GuardMemory.from_json(memory.to_json())
    assert guard_relief.memory_from_json(again.relief) == {"pending": None, "settled_at": 12.5}
    assert guard_relief.memory_from_json({"pending": {"moves": "nope"}}) == guard_relief.new_memory()
    assert guard_relief.memory_from_json(None) == guard_relief.new_memory()


def test_the_guard_says_each_relief_step_in_one_line():
    from headroom_guard.guard import relief_line

    move = {"topic": "t", "partition": 0, "from_broker": 1, "from_log_dir": "/a", "to_broker": 1, "to_log_dir": "/b"}
    assert relief_line({"action": "idle", "moves": []}) is None
    assert relief_line({"action": "started", "moves": [move], "planned_bytes": 30 * MIB}) == (
        "relief started 1 move(s), 30 MiB: t-0 broker 1 /a -> broker 1 /b"
    )
    assert relief_line({"action": "failed", "moves": [], "error": "refused"}) == "relief failed: refused"
    assert "plans again" in relief_line({"action": "settling", "moves": [], "settles_at": NOW.timestamp()})


@pytest.mark.parametrize(
    "failure",
    [
        relief_moves.MovesError("moves: partition t-0 is not in the cluster's metadata"),
        KeyError("replicas"),
    ],
)
def test_any_failure_of_a_relief_step_is_reported_and_the_throttle_still_decides(failure, monkeypatch):
    def failing(*_args, **_kwargs):
        raise failure

    monkeypatch.setattr(relief_apply, "relieve", failing)
    cluster = jbod(used_first=97 * MIB)
    result, memory = decide(cluster)
    assert result["relief"]["action"] == "failed" and type(failure).__name__ in result["relief"]["error"]
    assert result["throttle_factor"] == 0.0, "3 MiB free is past the 5 MiB limit: the throttle decides all the same"
    assert memory.relief == guard_relief.new_memory()
