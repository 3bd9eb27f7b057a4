"""Rolling restart order and health judgement."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import health
from ansible_collections.headroom.kafka.plugins.module_utils.restart_plan import RestartPlanError, restart_order


def node(host, node_id, roles="broker", needs_restart=True):
    return {"host": host, "node_id": node_id, "roles": roles, "needs_restart": needs_restart}


@pytest.mark.parametrize(
    "nodes, active, expected",
    [
        ([node("c", 3), node("a", 1), node("b", 2)], None, ["a", "b", "c"]),
        ([node("a", 1, "broker,controller"), node("b", 2), node("c", 3, ["controller", "broker"])], 1, ["b", "c", "a"]),
        ([node("a", 1, "broker,controller"), node("b", 2, "controller"), node("c", 3)], 2, ["c", "a", "b"]),
        ([node("a", 1, needs_restart=False), node("b", 2), node("c", 3, needs_restart=False)], 2, ["b"]),
        ([], None, []),
    ],
)
def test_order(nodes, active, expected):
    assert restart_order(nodes, active) == expected


@pytest.mark.parametrize(
    "nodes, message",
    [
        ([node("a", None)], "nodes[0].node_id is required"),
        ([node("a", 1, "zookeeper")], "nodes[0].roles must be broker and/or controller"),
        ([node("a", 1), node("b", 1)], "nodes[1].node_id 1 is used by two hosts"),
        ([node("a", 1), node("b", "1")], "nodes[1].node_id 1 is used by two hosts"),
        ([node("a", -1)], "nodes[0].node_id must be a Kafka node id, a whole number from 0 to 2147483647"),
        ([node("a", 2**31)], "nodes[0].node_id must be a Kafka node id"),
        ([node("a", "one")], "nodes[0].node_id must be a Kafka node id"),
        ([node("a", float("nan"))], "nodes[0].node_id must be a Kafka node id"),
    ],
)
def test_invalid(nodes, message):
    with pytest.raises(RestartPlanError, match=message.replace("[", r"\[").replace("]", r"\]")):
        restart_order(nodes)


def partition(isr, replicas, leader=1, topic="t", index=0):
    return {"topic": topic, "partition": index, "leader": leader, "isr": isr, "replicas": replicas}


def test_a_fenced_broker_is_down_and_an_unknown_one_a_wrong_id():
    result = health.judge({"brokers": [{"id": 1}], "fenced_brokers": [2]}, [], [0, 1, 2])
    assert result["problems"] == ["brokers not active: 0, 2 (expected_brokers 0 not registered with the cluster)"]


@pytest.mark.parametrize(
    "cluster, partitions, expected_brokers, healthy, problem",
    [
        ({"brokers": [{"id": 1}, {"id": 2}]}, [partition([1, 2], [1, 2])], [1, 2], True, None),
        (
            {"brokers": [{"id": 1}]},
            [],
            [1, 2],
            False,
            "brokers not active: 2 (expected_brokers 2 not registered with the cluster)",
        ),
        ({"brokers": [{"id": 1}], "fenced_brokers": [2]}, [], None, False, "brokers not active: 2"),
        ({"brokers": [{"id": 1}, {"id": 2}]}, [partition([1], [1, 2])], None, False, "1 under-replicated partitions"),
        (
            {"brokers": [{"id": 1}, {"id": 2}]},
            [partition([2], [2], leader=-1)],
            None,
            False,
            "1 partitions without a leader",
        ),
    ],
)
def test_health(cluster, partitions, expected_brokers, healthy, problem):
    result = health.judge(cluster, partitions, expected_brokers)
    assert result["healthy"] is healthy
    if problem:
        assert any(problem in text for text in result["problems"])


@pytest.mark.parametrize(
    "partitions, min_insync, at_risk",
    [
        # RF 3, min.insync.replicas 2: one broker may stop
        ([partition([1, 2, 3], [1, 2, 3])], {"t": 2}, []),
        # RF 2, min.insync.replicas 2: no under-replicated partition, and still no replica may stop
        ([partition([1, 2], [1, 2])], {"t": 2}, [("t", 0, [2], 2)]),
        # the ISR has already shrunk to two of three: the third is not in sync, the second may not stop
        ([partition([1, 3], [1, 2, 3])], {"t": 2}, [("t", 0, [3], 2)]),
        # the broker is a replica but not in sync: its stop takes nothing away
        ([partition([2, 3], [1, 2, 3])], {"t": 3}, []),
        # RF 1: the partition would go offline, whatever the setting (Kafka's default is 1)
        ([partition([1], [1])], {}, [("t", 0, [], 1)]),
        # a partition of another broker is none of its business
        ([partition([2, 3], [2, 3])], {"t": 2}, []),
        # per topic: only the strict topic counts
        (
            [partition([1, 2], [1, 2], topic="loose"), partition([1, 2], [1, 2], topic="strict", index=4)],
            {"loose": 1, "strict": 2},
            [("strict", 4, [2], 2)],
        ),
    ],
    ids=["rf3-min2", "rf2-min2", "isr-shrunk", "not-in-sync", "rf1-default", "other-broker", "per-topic"],
)
def test_below_min_isr_without_the_stopping_broker(partitions, min_insync, at_risk):
    found = health.below_min_isr_without(partitions, min_insync, 1)
    assert [(p["topic"], p["partition"], p["isr_without_broker"], p["min_insync_replicas"]) for p in found] == at_risk
    problem = health.stopping_problem(1, found)
    assert (problem is None) == (not at_risk)
    if at_risk:
        assert problem.startswith(f"stopping broker 1 would leave {len(at_risk)} partitions below min.insync.replicas")


def test_a_problem_names_five_partitions_and_counts_the_rest():
    partitions = [partition([1], [1], index=index) for index in range(8)]
    problem = health.stopping_problem(1, health.below_min_isr_without(partitions, {}, 1))
    assert "t-0 (isr [1], min.insync.replicas 1)" in problem and "t-4" in problem and "t-5" not in problem
    assert problem.endswith("and 3 more")


def test_in_sync_partitions_are_what_the_broker_must_rejoin():
    partitions = [partition([1, 2], [1, 2]), partition([2], [1, 2], index=1), partition([1], [1], topic="u")]
    assert health.in_sync_partitions(partitions, 1) == [{"topic": "t", "partition": 0}, {"topic": "u", "partition": 0}]


@pytest.mark.parametrize(
    "now, lagging",
    [
        ([partition([1, 2], [1, 2]), partition([2, 1], [1, 2], index=1)], []),
        ([partition([2], [1, 2]), partition([2, 1], [1, 2], index=1)], [("t", 0, [2])]),
        # a partition deleted meanwhile has nothing to rejoin
        ([partition([2, 1], [1, 2], index=1)], []),
    ],
    ids=["back-everywhere", "one-lags", "deleted"],
)
def test_not_rejoined(now, lagging):
    rejoin = [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]
    found = health.not_rejoined(now, 1, rejoin)
    assert [(p["topic"], p["partition"], p["isr"]) for p in found] == lagging
    problem = health.rejoin_problem(1, found)
    assert (problem is None) == (not lagging)
    if lagging:
        assert problem == "broker 1 is not back in the ISR of 1 partitions it was in sync for: t-0 (isr [2])"
