"""relief_apply against a fake cluster whose moves take a few reads to finish: what the run starts, what it waits
for, what it puts back, and what it refuses."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import relief_apply, relief_moves

MIB = 1 << 20
L, F = relief_moves.LEADER_REPLICAS, relief_moves.FOLLOWER_REPLICAS
LR, FR = relief_moves.LEADER_RATE, relief_moves.FOLLOWER_RATE


class FakeCluster:
    """Brokers with log dirs and replicas; a started move ends after ``reads`` reads of the log dirs (``None``: never).
    Every change is recorded in ``changes``."""

    def __init__(self, dirs, placement, reads=2, topic_configs=None, broker_configs=None, refuse=None):
        self.total = 100 * MIB
        self.used = {key: 0 for key in dirs}
        self.placement = {}  # (topic, partition, broker) -> [log_dir, size]
        self.assigned = {}
        for topic, number, broker, log_dir, size in placement:
            self.placement[(topic, number, broker)] = [log_dir, size]
            self.used[(broker, log_dir)] += size
            self.assigned.setdefault((topic, number), []).append(broker)
        self.reads, self.running = reads, {}
        self.configs = {"topics": dict(topic_configs or {}), "brokers": dict(broker_configs or {})}
        self.refuse = refuse or {}
        self.changes = []

    # -- reads ------------------------------------------------------------------------------------------------------
    def describe_cluster(self):
        brokers = sorted({key[0] for key in self.used})
        return {"cluster_id": "fake", "brokers": [{"id": b, "rack": None} for b in brokers], "fenced_brokers": []}

    def describe_log_dirs(self, broker_ids, timeout_ms=None, replicas=False):
        self._advance()
        answers = {}
        for broker in broker_ids:
            rows = []
            for (owner, log_dir), used in sorted(self.used.items()):
                if owner != broker:
                    continue
                held = [
                    {"topic": t, "partition": p, "size_bytes": size, "offset_lag": 0, "is_future": False}
                    for (t, p, b), (where, size) in sorted(self.placement.items())
                    if b == broker and where == log_dir
                ]
                held += [
                    {
                        "topic": m["topic"],
                        "partition": m["partition"],
                        "size_bytes": 1,
                        "offset_lag": 0,
                        "is_future": True,
                    }
                    for m in self.running.values()
                    if m["kind"] == "log_dir" and m["to_broker"] == broker and m["to_log_dir"] == log_dir
                ]
                rows.append(
                    {
                        "log_dir": log_dir,
                        "error": None,
                        "total_bytes": self.total,
                        "usable_bytes": self.total - used,
                        "replicas": held,
                    }
                )
            answers[broker] = rows
        return answers

    def partition_reassignments(self):
        return [
            {
                "topic": m["topic"],
                "partition": m["partition"],
                "replicas": [],
                "adding_replicas": [],
                "removing_replicas": [],
            }
            for m in self.running.values()
            if m["kind"] == "broker"
        ]

    def partitions(self):
        return [
            {"topic": t, "partition": p, "replicas": list(b), "isr": list(b), "error": None}
            for (t, p), b in sorted(self.assigned.items())
        ]

    def min_insync_replicas(self, topics):
        return {topic: 1 for topic in topics}

    def dynamic_configs(self, kind, names, keys):
        return {name: {key: self.configs[kind].get(name, {}).get(key) for key in keys} for name in names}

    # -- changes ----------------------------------------------------------------------------------------------------
    def alter_dynamic_configs(self, kind, changes):
        for name, values in changes.items():
            for key, value in values.items():
                self.changes.append(("config", kind, name, key, value))
                held = self.configs[kind].setdefault(name, {})
                if value is None:
                    held.pop(key, None)
                else:
                    held[key] = value

    def alter_replica_log_dirs(self, assignments):
        answers = {}
        for (topic, number, broker), log_dir in assignments.items():
            answers[(topic, number, broker)] = self.refuse.get((topic, number))
            if not answers[(topic, number, broker)]:
                self.changes.append(("log_dir", topic, number, broker, log_dir))
                self.running[(topic, number)] = {
                    "topic": topic,
                    "partition": number,
                    "kind": "log_dir",
                    "to_broker": broker,
                    "to_log_dir": log_dir,
                    "left": self.reads,
                }
        return answers

    def alter_partition_reassignments(self, targets):
        answers = {}
        for key, replicas in targets.items():
            if replicas is None:
                self.changes.append(("cancel",) + key)
                self.running.pop(key, None)
                answers[key] = None
                continue
            answers[key] = self.refuse.get(key)
            if answers[key]:
                continue
            self.changes.append(("reassign",) + key + (tuple(replicas),))
            self.running[key] = {
                "topic": key[0],
                "partition": key[1],
                "kind": "broker",
                "replicas": replicas,
                "left": self.reads,
            }
        return answers

    def _advance(self):
        for key, running in list(self.running.items()):
            if running["left"] is None:
                continue
            running["left"] -= 1
            if running["left"] > 0:
                continue
            del self.running[key]
            if running["kind"] == "log_dir":
                place = self.placement[key + (running["to_broker"],)]
                self.used[(running["to_broker"], place[0])] -= place[1]
                place[0] = running["to_log_dir"]
                self.used[(running["to_broker"], place[0])] += place[1]
            else:
                for broker in set(self.assigned[key]) - set(running["replicas"]):
                    log_dir, size = self.placement.pop(key + (broker,))
                    self.used[(broker, log_dir)] -= size
                for broker in set(running["replicas"]) - set(self.assigned[key]):
                    self.placement[key + (broker,)] = ["/a", size]
                    self.used[(broker, "/a")] += size
                self.assigned[key] = list(running["replicas"])


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


OPTIONS = {
    "relieve_at": {"type": "min_free_bytes", "level": 20 * MIB},
    "relieve_to": {"type": "min_free_bytes", "level": 40 * MIB},
    "limit": None,
    "max_bytes": None,
    "max_partitions": None,
    "throttle_rate": 1000,
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
