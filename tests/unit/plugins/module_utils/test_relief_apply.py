"""relief_apply against a fake cluster whose moves take a few reads to finish: what the run starts, what it waits
for, what it puts back, and what it refuses."""

import contextlib
import io
import json

import pytest
from fake_relief import MIB, Clock, FakeCluster
from module_args import patch_module_args

from ansible_collections.headroom.kafka.plugins.module_utils import connection, relief_apply, relief_moves
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter, KafkaAdapterError
from ansible_collections.headroom.kafka.plugins.modules import log_dir_relief

L, F = relief_moves.LEADER_REPLICAS, relief_moves.FOLLOWER_REPLICAS
LR, FR = relief_moves.LEADER_RATE, relief_moves.FOLLOWER_RATE


OPTIONS = {
    "relieve_at": {"type": "min_free_bytes", "level": 20 * MIB},
    "relieve_to": {"type": "min_free_bytes", "level": 40 * MIB},
    "limit": None,
    "max_bytes": None,
    "max_partitions": None,
    "throttle_rate": 1000,
    "log_dir_throttle_rate": None,
    "wait": True,
    "timeout": 60,
    "poll_interval": 1,
    "pending": None,
}


def run(cluster, check_mode=False, **options):
    clock = Clock()
    return relief_apply.relieve(cluster, dict(OPTIONS, **options), check_mode, clock=clock, sleep=clock.sleep)


def jbod():
    """Broker 1's /a has 10 MiB free, its /b 90 MiB: one 30 MiB replica moves inside the broker."""
    return FakeCluster(
        [(1, "/a"), (1, "/b"), (2, "/a")],
        [("t", 0, 1, "/a", 30 * MIB), ("t", 0, 2, "/a", 30 * MIB), ("t", 1, 1, "/a", 60 * MIB)],
    )


def uneven():
    """Broker 2's only log dir has 10 MiB free; broker 3 has room: a 30 MiB replica moves across brokers."""
    return FakeCluster(
        [(1, "/a"), (2, "/a"), (3, "/a")],
        [("t", 0, 1, "/a", 30 * MIB), ("t", 0, 2, "/a", 30 * MIB), ("u", 0, 2, "/a", 60 * MIB)],
        broker_configs={"2": {LR: "5"}},
    )


def test_check_mode_returns_the_plan_and_changes_nothing():
    cluster = jbod()
    result = run(cluster, check_mode=True)
    assert result["changed"] is True and cluster.changes == []
    assert [(m["topic"], m["partition"], m["to_log_dir"]) for m in result["moves"]] == [("t", 0, "/b")]
    assert result["diff"]["after"]["broker 1 /a"]["used_bytes"] == 60 * MIB


def test_a_log_dir_move_waits_for_its_future_replica_and_sets_no_throttle():
    cluster = jbod()
    result = run(cluster)
    assert cluster.changes == [("log_dir", "t", 0, 1, "/b")]
    assert [m["state"] for m in result["verified"]] == ["done"]
    assert result["progress"][-1]["moves_done"] == 1 and result["throttles_before"] == {"topics": {}, "brokers": {}}
    assert run(cluster)["changed"] is False, "a run with nothing to do changes nothing"


def test_with_a_log_dir_rate_the_broker_copies_under_it_from_before_the_move_until_it_ends():
    cluster = jbod()
    cluster.configs["brokers"]["1"] = {relief_moves.LOG_DIR_RATE: "99"}
    result = run(cluster, log_dir_throttle_rate=5000)
    assert cluster.changes == [
        ("config", "brokers", "1", relief_moves.LOG_DIR_RATE, "5000"),
        ("log_dir", "t", 0, 1, "/b"),
        ("config", "brokers", "1", relief_moves.LOG_DIR_RATE, "99"),
    ], "set before the move starts, put back as it was once it ended"
    assert result["throttles_before"] == {"topics": {}, "brokers": {"1": {relief_moves.LOG_DIR_RATE: "99"}}}


def test_a_log_dir_move_kafka_refuses_puts_the_log_dir_rate_back():
    cluster = jbod()
    cluster.log_dir_answers[("t", 0, 1)] = ["KAFKA_STORAGE_ERROR"]
    with pytest.raises(relief_apply.ReliefError, match="put the replication throttles back as they were") as info:
        run(cluster, log_dir_throttle_rate=5000)
    assert cluster.configs["brokers"].get("1", {}) == {} and "pending" not in info.value.result


def test_a_cross_broker_move_runs_under_the_throttle_which_is_put_back_as_it_was():
    cluster = uneven()
    result = run(cluster)
    configs = [c for c in cluster.changes if c[0] == "config"]
    reassign = cluster.changes.index(("reassign", "t", 0, (1, 3)))
    assert all(cluster.changes.index(c) < reassign for c in configs[:8]), "the throttle is set before the move"
    assert ("config", "topics", "t", L, "0:1,0:2") in configs and ("config", "topics", "t", F, "0:3") in configs
    assert ("config", "brokers", "2", LR, "1000") in configs
    assert cluster.configs == {"topics": {"t": {}}, "brokers": {"1": {}, "2": {LR: "5"}, "3": {}}}
    assert result["throttles_before"]["brokers"]["2"] == {LR: "5", FR: None}
    assert [m["state"] for m in result["verified"]] == ["done"]


def test_a_reassignment_the_module_did_not_start_makes_it_refuse_and_change_nothing():
    cluster = uneven()
    cluster.running[("x", 0)] = {"topic": "x", "partition": 0, "kind": "broker", "replicas": [1], "left": None}
    with pytest.raises(relief_apply.ReliefError, match=r"1 partition reassignment\(s\) in progress that this module"):
        run(cluster)
    assert cluster.changes == []


def test_at_the_timeout_the_cross_broker_moves_are_cancelled_and_the_throttles_put_back():
    cluster = uneven()
    cluster.reads = None  # the move never ends
    with pytest.raises(relief_apply.ReliefError) as info:
        run(cluster, timeout=5)
    assert "did not finish within timeout=5s: 0 of 1 done; cancelled the cross-broker moves of t-0" in str(info.value)
    assert ("cancel", "t", 0) in cluster.changes
    assert cluster.configs == {"topics": {"t": {}}, "brokers": {"1": {}, "2": {LR: "5"}, "3": {}}}
    assert info.value.result["cancelled"] == [{"topic": "t", "partition": 0}]


def test_without_waiting_a_later_run_given_pending_verifies_and_puts_the_throttles_back():
    cluster = uneven()
    cluster.reads = 3
    started = run(cluster, wait=False)
    assert started["changed"] and started["pending"]["moves"] == started["moves"]
    assert cluster.configs["brokers"]["3"] == {LR: "1000", FR: "1000"}
    with pytest.raises(relief_apply.ReliefError, match="did not start"):
        run(cluster, wait=False)  # without pending, its own move is someone else's
    later = run(cluster, pending=relief_moves.validate_pending(started["pending"]))
    assert [m["state"] for m in later["verified"]] == ["done"]
    assert cluster.configs == {"topics": {"t": {}}, "brokers": {"1": {}, "2": {LR: "5"}, "3": {}}}
    assert later["moves"] == [] and "pending" not in later


def test_a_refused_reassignment_cancels_the_accepted_ones_and_puts_the_throttles_back():
    cluster = FakeCluster(
        [(1, "/a"), (2, "/a"), (3, "/a")],
        [("t", 0, 2, "/a", 30 * MIB), ("u", 0, 2, "/a", 35 * MIB), ("v", 0, 2, "/a", 30 * MIB)],
        refuse={("u", 0): "INVALID_REPLICA_ASSIGNMENT"},
    )
    with pytest.raises(relief_apply.ReliefError, match="refused to start 1 cross-broker move"):
        run(cluster, relieve_to={"type": "min_free_bytes", "level": 70 * MIB})
    started = [c[1:3] for c in cluster.changes if c[0] == "reassign"]
    assert started and all(("cancel",) + key in cluster.changes for key in started)
    assert all(values == {} for kind in cluster.configs.values() for values in kind.values())


# -- faults: what a failed run leaves, and how a later run given its pending finishes -----------------------------
AS_BEFORE = {"topics": {"t": {}}, "brokers": {"1": {}, "2": {LR: "5"}, "3": {}}}  # uneven()'s configs, put back


def test_a_failed_read_while_waiting_cancels_the_move_and_puts_the_throttles_back():
    cluster = uneven()
    cluster.reads = None
    cluster.faults = {"describe_log_dirs": [None, "fail"]}  # the plan's read, then the wait's first
    with pytest.raises(relief_apply.ReliefError) as info:
        run(cluster)
    assert "following the moves failed: describe_log_dirs via bootstrap servers fake failed" in str(info.value)
    assert "cancelled the cross-broker moves of t-0 and put the replication throttles back" in str(info.value)
    assert ("cancel", "t", 0) in cluster.changes and cluster.running == {}
    assert cluster.configs == AS_BEFORE
    assert info.value.result["cancelled"] == [{"topic": "t", "partition": 0}]
    assert info.value.result["throttles_before"]["brokers"]["2"] == {LR: "5", FR: None}
    assert "pending" not in info.value.result


def test_a_cluster_gone_while_waiting_fails_with_pending_that_a_later_run_finishes():
    cluster = uneven()
    cluster.reads = None
    cluster.faults = {"describe_log_dirs": [None, "down"]}  # nothing answers from the wait's first read on
    with pytest.raises(relief_apply.ReliefError) as info:
        run(cluster)
    failed = info.value.result
    assert "could not put the replication throttles back" in str(info.value)
    assert "give this result's pending to a later run" in str(info.value)
    assert failed["cancelled"] == [] and [(c["topic"], c["partition"]) for c in failed["cancel_failed"]] == [("t", 0)]
    assert failed["pending"] == {"moves": failed["moves"], "throttles_before": failed["throttles_before"]}
    assert cluster.configs["brokers"]["3"] == {LR: "1000", FR: "1000"}, "the throttle could not be put back"
    cluster.down = False
    cluster.running[("t", 0)]["left"] = 2
    later = run(cluster, pending=relief_moves.validate_pending(failed["pending"]))
    assert [m["state"] for m in later["verified"]] == ["done"] and "pending" not in later
    assert cluster.configs == AS_BEFORE


def test_a_throttle_set_halfway_is_put_back_and_nothing_moves():
    cluster = uneven()
    cluster.faults = {"alter_dynamic_configs": [None, "fail"]}  # the topics' throttle is set, the brokers' fails
    with pytest.raises(relief_apply.ReliefError) as info:
        run(cluster)
    assert str(info.value).startswith("setting the replication throttle failed: alter_dynamic_configs via")
    assert "no move was started; put the replication throttles back as they were" in str(info.value)
    assert ("config", "topics", "t", L, "0:1,0:2") in cluster.changes, "the topics' throttle was set"
    assert cluster.configs == AS_BEFORE
    assert not [c for c in cluster.changes if c[0] == "reassign"] and "pending" not in info.value.result


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        ({"faults": {"alter_partition_reassignments": [None, "fail"]}}, "alter_partition_reassignments via"),
        ({"refuse_cancel": {("t", 0): "UNKNOWN_SERVER_ERROR"}}, "UNKNOWN_SERVER_ERROR"),
    ],
    ids=["cancel-raises", "cancel-refused"],
)
def test_a_cancel_that_fails_still_puts_the_throttles_back_and_leaves_the_move_pending(failure, error):
    cluster = uneven()
    cluster.reads = None
    for name, value in failure.items():
        setattr(cluster, name, value)
    with pytest.raises(relief_apply.ReliefError) as info:
        run(cluster, timeout=5)
    failed = info.value.result
    assert "did not cancel t-0: " in str(info.value) and error in str(info.value)
    assert cluster.configs == AS_BEFORE, "put back whatever the cancel did"
    assert failed["cancelled"] == [], "a move still running is not cancelled"
    assert failed["cancel_failed"][0]["topic"] == "t" and error in failed["cancel_failed"][0]["error"]
    assert [(m["topic"], m["partition"]) for m in failed["pending"]["moves"]] == [("t", 0)]
    assert ("t", 0) in cluster.running


def test_a_start_that_times_out_after_the_controller_took_it_is_cancelled():
    cluster = uneven()
    cluster.reads = None
    cluster.faults = {"alter_partition_reassignments": ["fail after"]}
    with pytest.raises(relief_apply.ReliefError) as info:
        run(cluster)
    assert "the request starting 1 cross-broker move(s) failed" in str(info.value)
    assert "the controller may have started them: cancelled the cross-broker moves of t-0" in str(info.value)
    assert cluster.changes.index(("cancel", "t", 0)) > cluster.changes.index(("reassign", "t", 0, (1, 3)))
    assert cluster.running == {} and cluster.configs == AS_BEFORE
    assert info.value.result["cancelled"] == [{"topic": "t", "partition": 0}] and "pending" not in info.value.result


def test_a_start_that_failed_before_the_controller_took_it_cancels_nothing():
    cluster = uneven()
    cluster.faults = {"alter_partition_reassignments": ["fail"]}
    with pytest.raises(relief_apply.ReliefError) as info:
        run(cluster)
    # NO_REASSIGNMENT_IN_PROGRESS: there was nothing to cancel, and nothing is pending
    assert info.value.result["cancelled"] == [] and "cancel_failed" not in info.value.result
    assert "pending" not in info.value.result and cluster.configs == AS_BEFORE


@pytest.mark.parametrize("taken", [True, False], ids=["controller-took-it", "controller-did-not"])
def test_a_failed_start_whose_cancel_fails_too_is_pending_and_a_later_run_finishes_it(taken):
    cluster = uneven()
    cluster.faults = {"alter_partition_reassignments": ["fail after" if taken else "fail", "fail"]}
    with pytest.raises(relief_apply.ReliefError) as info:
        run(cluster)
    failed = info.value.result
    assert [(m["topic"], m["partition"]) for m in failed["pending"]["moves"]] == [("t", 0)]
    assert cluster.configs == AS_BEFORE and (("t", 0) in cluster.running) == taken
    later = run(cluster, pending=relief_moves.validate_pending(failed["pending"]))
    # A move the controller never took is not waited for: nothing runs, and the throttles are (again) as before.
    assert [m["state"] for m in later["verified"]] == ["done" if taken else "not started"]
    assert "pending" not in later and cluster.configs == AS_BEFORE


def two_log_dirs_on_broker_3():
    """uneven(), with a second log dir on broker 3 that has more room than its first: the plan sends t-0 there, where
    the broker left alone would not create it (the fake puts a new replica in /a)."""
    return FakeCluster(
        [(1, "/a"), (2, "/a"), (3, "/a"), (3, "/b")],
        [("t", 0, 1, "/a", 30 * MIB), ("t", 0, 2, "/a", 30 * MIB), ("u", 0, 2, "/a", 60 * MIB), ("w", 0, 3, "/a", MIB)],
    )


def test_a_cross_broker_move_names_its_destination_log_dir_before_it_starts():
    cluster = two_log_dirs_on_broker_3()
    result = run(cluster)
    assert [(m["topic"], m["to_broker"], m["to_log_dir"]) for m in result["moves"]] == [("t", 3, "/b")]
    named = cluster.changes.index(("log_dir", "t", 0, 3, "/b"))
    assert named < min(i for i, change in enumerate(cluster.changes) if change[0] in ("config", "reassign"))
    assert cluster.placement[("t", 0, 3)][0] == "/b"
    assert [m["state"] for m in result["verified"]] == ["done"]


def test_a_new_replica_in_another_log_dir_is_not_done_until_moved_to_the_planned_one():
    cluster = two_log_dirs_on_broker_3()
    cluster.forget_log_dirs = True  # the broker restarted and lost the log dir it was told
    result = run(cluster)
    reassigned = cluster.changes.index(("reassign", "t", 0, (1, 3)))
    assert ("log_dir", "t", 0, 3, "/b") in cluster.changes[reassigned:], "sent to its log dir once it arrived"
    assert cluster.placement[("t", 0, 3)][0] == "/b"
    assert [m["state"] for m in result["verified"]] == ["done"]


def test_a_destination_log_dir_is_asked_again_while_kafka_answers_a_storage_error():
    cluster = two_log_dirs_on_broker_3()
    cluster.log_dir_answers = {("t", 0, 3): ["KAFKA_STORAGE_ERROR"] * 2}
    assert [m["state"] for m in run(cluster)["verified"]] == ["done"]
    assert cluster.placement[("t", 0, 3)][0] == "/b"


def test_a_refused_destination_log_dir_fails_before_anything_started():
    cluster = two_log_dirs_on_broker_3()
    cluster.log_dir_answers = {("t", 0, 3): ["KAFKA_STORAGE_ERROR"] * relief_apply.DESTINATION_TRIES}
    clock = Clock()
    with pytest.raises(relief_apply.ReliefError) as info:
        relief_apply.relieve(cluster, OPTIONS, clock=clock, sleep=clock.sleep)
    assert "refused the log dirs of 1 cross-broker move(s) (5 tries): t-0 to broker 3 /b: KAFKA_STORAGE_ERROR" in str(
        info.value
    )
    assert str(info.value).endswith("nothing was started")
    assert cluster.changes == [] and info.value.result["changed"] is False
    assert clock.now == (relief_apply.DESTINATION_TRIES - 1) * relief_apply.DESTINATION_RETRY_SECONDS


def test_check_mode_given_a_finished_pending_says_it_would_put_the_throttles_back():
    cluster = uneven()
    started = run(cluster, wait=False)
    cluster.running[("t", 0)]["left"] = 1
    checked = run(cluster, check_mode=True, pending=relief_moves.validate_pending(started["pending"]))
    assert checked["changed"] is True and [m["state"] for m in checked["verified"]] == ["done"]
    assert cluster.configs["brokers"]["3"] == {LR: "1000", FR: "1000"}, "check mode changes nothing"


class RaisingAdmin:
    """A kafka-python admin client whose every request fails quoting the SASL password, as a library message may."""

    def __getattr__(self, name):
        def request(*args, **kwargs):
            raise RuntimeError("SASL handshake as relief with password s3cret failed")

        return request


@pytest.mark.parametrize(
    "call",
    [
        lambda adapter: adapter.alter_partition_reassignments({("t", 0): None}),
        lambda adapter: adapter.alter_replica_log_dirs({("t", 0, 3): "/b"}),
        lambda adapter: adapter.dynamic_configs("brokers", ["1"], [LR]),
        lambda adapter: adapter.alter_dynamic_configs("brokers", {"1": {LR: None}}),
    ],
)
def test_the_adapter_s_relief_requests_fail_without_the_password(call):
    adapter = KafkaAdapter(
        "k:9092", "SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="u", sasl_password="s3cret"
    )
    adapter._admin = RaisingAdmin()  # pylint: disable=protected-access  # no broker: the request fails at once
    with pytest.raises(KafkaAdapterError) as info:
        call(adapter)
    assert "s3cret" not in str(info.value) and "failed: RuntimeError: SASL handshake as relief" in str(info.value)


def test_the_module_s_failure_returns_the_pending_moves_and_the_throttles_to_put_back(monkeypatch):
    cluster = uneven()
    cluster.faults = {"alter_partition_reassignments": ["fail after", "fail"]}  # the start, then the cancel
    monkeypatch.setattr(connection, "connect", lambda module, purpose: cluster)
    args = {
        "bootstrap_servers": ["k:9092"],
        "relieve_at": {"type": "min_free_bytes", "level": 20 * MIB},
        "relieve_to": {"type": "min_free_bytes", "level": 40 * MIB},
        "throttle_rate": 1000,
    }
    printed = io.StringIO()
    with patch_module_args(args), contextlib.redirect_stdout(printed), pytest.raises(SystemExit):
        log_dir_relief.main()
    failed = json.loads(printed.getvalue().strip().splitlines()[-1])
    assert failed["failed"] and "the controller may have started them" in failed["msg"]
    assert [(m["topic"], m["partition"]) for m in failed["pending"]["moves"]] == [("t", 0)]
    assert failed["pending"]["throttles_before"] == failed["throttles_before"]
    assert failed["throttles_before"]["brokers"]["2"] == {LR: "5", FR: None}
