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
