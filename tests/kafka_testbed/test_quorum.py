"""Conformance: KRaft combined and controller-only nodes, and the active controller as clients find it (DescribeQuorum).

- ``combined=K`` makes the first K brokers ``process.roles=broker,controller`` nodes with a CONTROLLER listener after
  the client ports; ``controllers_only=K`` adds controller nodes. Combined nodes are brokers in Metadata and
  DescribeCluster; controller-only nodes are not, and have no client listener (no DescribeLogDirs on them).
- A controller listener answers only the controller APIs implemented here (ApiVersions, DescribeQuorum,
  DescribeCluster) and closes the connection on anything else; brokers advertise DescribeQuorum v0-v2.
- DescribeCluster on a controller listener (KIP-919) describes the controllers, each at its controller listener, and
  the quorum leader, for the CONTROLLER endpoint type only (MISMATCHED_ENDPOINT_TYPE otherwise, INVALID_REQUEST in v0).
- DescribeQuorum to a broker is forwarded to the active controller: topic ``__cluster_metadata`` partition 0 with the
  leader, its epoch, the high watermark, the voters (the controllers) and observers (broker-only nodes), and (v2) the
  voters' CONTROLLER listeners. On a controller listener only the leader answers; followers say NOT_LEADER_OR_FOLLOWER.
  Any other topic or partition: UNKNOWN_TOPIC_OR_PARTITION. Without a reachable active controller (no controller
  nodes, or no majority of voters alive) a broker answers REQUEST_TIMED_OUT. With an authorizer only super users.
- The leader stays leader while it is alive: restarting a follower does not move it. When the leader stops, is killed
  or restarts, the live voter with the lowest id leads with a higher epoch, as long as a majority of voters is alive.
"""
# pylint: disable=missing-function-docstring

import os
import subprocess
import sys
import tempfile
import uuid

import pytest
from clients import RawClient, confluent_config, kafka_python_config
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka.errors import ClusterAuthorizationFailedError
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeLogDirsRequest, DescribeQuorumRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from kafka_testbed import properties
from kafka_testbed.cluster import Cluster, ClusterError
from kafka_testbed.model.broker import wait_for
from kafka_testbed.testing import ClusterFactory, base_port_for

METADATA_TOPIC = "__cluster_metadata"
DESCRIBE_QUORUM = 55
DESCRIBE_CLUSTER = 60
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
UNKNOWN_TOPIC_OR_PARTITION = 3
CLUSTER_AUTHORIZATION_FAILED = 31
NO_DIRECTORY_ID = uuid.UUID(int=0)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def quorum_request(topic=METADATA_TOPIC, partitions=(0,)):
    topic_data = DescribeQuorumRequest.TopicData
    return DescribeQuorumRequest(
        topics=[
            topic_data(
                topic_name=topic, partitions=[topic_data.PartitionData(partition_index=index) for index in partitions]
            )
        ]
    )


def api_versions_request():
    return ApiVersionsRequest(client_software_name="conformance", client_software_version="1.0")


def describe_quorum(cluster, via, version=2, port=None, request=None):
    entry = cluster.broker(via)
    with RawClient(entry["host"], port or entry["port"], tls=cluster.info.get("tls")) as raw:
        return raw.request(request or quorum_request(), version)


def partition_of(response):
    assert response is not None and response.error_code == 0, response
    ((topic,),) = [response.topics]
    assert topic.topic_name == METADATA_TOPIC
    (partition,) = topic.partitions
    assert partition.partition_index == 0
    return partition


def leader_and_epoch(cluster, via):
    """(leader id, leader epoch) as broker ``via`` reports it, or None when it has no active controller to ask."""
    response = describe_quorum(cluster, via)
    if response is None or response.error_code == REQUEST_TIMED_OUT:  # None: the broker closed the connection
        return None
    partition = partition_of(response)
    assert partition.error_code == 0
    return partition.leader_id, partition.leader_epoch


def brokers_in_metadata(cluster):
    return sorted(AdminClient(confluent_config(cluster)).list_topics(timeout=10).brokers)


def closed_without_reply(raw, message, version):
    raw.sock.settimeout(5)
    return raw.request(message, version) is None


def supported(response):
    return {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}


@pytest.fixture(scope="module")
def combined_cluster(kafka_cluster_root):
    """Three combined nodes and one controller-only node (the voters) and one broker-only node (an observer)."""
    factory = ClusterFactory(kafka_cluster_root)
    try:
        cluster = factory(4, combined=3, controllers_only=1)
        # A new leader knows a replica once it fetched in the leader's epoch (each node does so on every heartbeat).
        assert wait_for(lambda: settled(cluster), 10), "the quorum did not settle"
        yield cluster
    finally:
        factory.close()


def settled(cluster):
    response = describe_quorum(cluster, 1)
    if response.error_code:
        return False
    partition = partition_of(response)
    replicas = partition.current_voters + partition.observers
    return len(replicas) == len(cluster.info["brokers"]) and all(replica.log_end_offset >= 0 for replica in replicas)


# -- nodes and listeners ---------------------------------------------------------------------------------------------
def test_cluster_json_and_kafka_configs_of_combined_and_controller_nodes(combined_cluster):
    info = combined_cluster.info
    entries = {entry["id"]: entry for entry in info["brokers"]}
    assert {node_id: entry["roles"] for node_id, entry in entries.items()} == {
        1: ["broker", "controller"],
        2: ["broker", "controller"],
        3: ["broker", "controller"],
        4: ["broker"],
        5: ["controller"],
    }
    base = entries[1]["port"]
    assert [entries[node_id]["port"] for node_id in (1, 2, 3, 4)] == [base, base + 1, base + 2, base + 3]
    assert [entries[node_id]["controller_port"] for node_id in (1, 2, 3, 5)] == [base + 4, base + 5, base + 6, base + 7]
    assert entries[4]["controller_port"] is None and entries[5]["port"] == entries[5]["controller_port"]
    assert entries[5]["log_dirs"] == []
    assert info["bootstrap_servers"] == ",".join(f"127.0.0.1:{base + k}" for k in range(4))
    quorum_servers = ",".join(f"127.0.0.1:{base + k}" for k in range(4, 8))
    assert info["controller_quorum_bootstrap_servers"] == quorum_servers
    props = {node_id: properties.load(entry["properties"]) for node_id, entry in entries.items()}
    for node_id in (1, 2, 3):
        assert props[node_id]["process.roles"] == "broker,controller"
        assert (
            props[node_id]["listeners"]
            == f"CLIENT://127.0.0.1:{entries[node_id]['port']},CONTROLLER://127.0.0.1:{entries[node_id]['controller_port']}"
        )
        assert props[node_id]["advertised.listeners"] == f"CLIENT://127.0.0.1:{entries[node_id]['port']}"
    assert props[4]["process.roles"] == "broker" and "CONTROLLER" not in props[4]["listeners"]
    assert (
        props[5]["process.roles"] == "controller"
        and props[5]["listeners"] == f"CONTROLLER://127.0.0.1:{entries[5]['controller_port']}"
    )
    # A controller keeps only its metadata log (Kafka's controllers may name it in log.dirs as well).
    assert props[5].get("log.dirs", props[5]["metadata.log.dir"]) == props[5]["metadata.log.dir"]
    assert "advertised.listeners" not in props[5]
    for node_props in props.values():
        assert node_props["controller.listener.names"] == "CONTROLLER"
        assert "CONTROLLER:PLAINTEXT" in node_props["listener.security.protocol.map"].split(",")
        # The model runs a dynamic quorum (bootstrap servers); the real test cluster a static one (voters,
        # node@host:port).
        voters = node_props.get("controller.quorum.voters")
        named = (
            ",".join(voter.split("@", 1)[1] for voter in voters.split(","))
            if voters
            else node_props["controller.quorum.bootstrap.servers"]
        )
        assert named == quorum_servers


def test_combined_nodes_are_brokers_and_controller_only_nodes_are_not(combined_cluster):
    assert brokers_in_metadata(combined_cluster) == [1, 2, 3, 4]
    admin = KafkaAdminClient(**kafka_python_config(combined_cluster))
    try:
        described = admin.describe_cluster()
    finally:
        admin.close()
    assert sorted(broker["broker_id"] for broker in described["brokers"]) == [1, 2, 3, 4]
    with RawClient.to_broker(combined_cluster, 1) as raw:
        response = raw.request(
            DescribeClusterRequest(
                include_cluster_authorized_operations=False, endpoint_type=1, include_fenced_brokers=True
            ),
            2,
        )
    assert [(b.broker_id, b.port, b.is_fenced) for b in response.brokers] == [
        (node_id, combined_cluster.broker(node_id)["port"], False) for node_id in (1, 2, 3, 4)
    ]


@pytest.mark.parametrize("node_id", [1, 5])
def test_controller_listener_answers_only_controller_apis(combined_cluster, node_id):
    entry = combined_cluster.broker(node_id)
    port = entry["controller_port"]
    with RawClient(entry["host"], port) as raw:
        response = raw.request(api_versions_request(), 3)
        assert response.error_code == 0
        ranges = supported(response)
        # Kafka's controllers also advertise the raft and forwarded admin APIs the model does not implement.
        assert {key: ranges.get(key) for key in (18, DESCRIBE_QUORUM, DESCRIBE_CLUSTER)} == {
            18: (0, 4),
            DESCRIBE_QUORUM: (0, 2),
            DESCRIBE_CLUSTER: (0, 2),
        }
        assert not {0, 3, 35} & set(ranges)  # no Produce, Metadata or DescribeLogDirs on a controller listener
        assert raw.request(quorum_request(), 2) is not None  # still open, and DescribeQuorum is answered
    for message, version in (
        (MetadataRequest(topics=[], allow_auto_topic_creation=False), 12),
        (DescribeLogDirsRequest(topics=None), 4),
    ):
        with RawClient(entry["host"], port) as raw:
            assert closed_without_reply(raw, message, version), message


def describe_cluster_at_controller(cluster, node_id, version, endpoint_type=2):
    entry = cluster.broker(node_id)
    request = DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=endpoint_type, include_fenced_brokers=True
    )
    with RawClient(entry["host"], entry["controller_port"]) as raw:
        return raw.request(request, version)


@pytest.mark.parametrize("node_id", [1, 5])
@pytest.mark.parametrize("version", [1, 2])
def test_controller_listener_describes_the_controllers(combined_cluster, node_id, version):
    controllers = sorted(
        (e["id"], e["host"], e["controller_port"])
        for e in combined_cluster.info["brokers"]
        if "controller" in e["roles"]
    )
    leader = partition_of(describe_quorum(combined_cluster, 1)).leader_id
    response = describe_cluster_at_controller(combined_cluster, node_id, version)
    assert (
        response.error_code,
        response.error_message,
        response.endpoint_type,
        response.cluster_id,
        response.controller_id,
    ) == (0, None, 2, combined_cluster.info["cluster_id"], leader)
    # Kafka lists the registrations in no particular order.
    assert sorted((b.broker_id, b.host, b.port) for b in response.brokers) == controllers
    assert all(b.rack is None for b in response.brokers)
    if version >= 2:
        assert [b.is_fenced for b in response.brokers] == [False] * len(controllers)


@pytest.mark.parametrize(
    "version, endpoint_type, code, message",
    [
        (0, 1, 42, "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"),
        (1, 1, 114, "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"),
        (2, 3, 115, "Unsupported endpoint type 3"),
    ],
    ids=["v0-means-broker", "broker-type", "unknown-type"],
)
def test_controller_listener_refuses_other_endpoint_types(combined_cluster, version, endpoint_type, code, message):
    response = describe_cluster_at_controller(combined_cluster, 5, version, endpoint_type)
    assert (
        response.error_code,
        response.error_message,
        response.cluster_id,
        response.controller_id,
        response.brokers,
    ) == (code, message, "", -1, [])
    if version >= 1:
        assert response.endpoint_type == 1  # the response's default: Kafka does not echo the requested type


@pytest.mark.parametrize("node_id", [1, 4])
def test_broker_listeners_advertise_describe_quorum(combined_cluster, node_id):
    with RawClient.to_broker(combined_cluster, node_id) as raw:
        advertised = supported(raw.request(api_versions_request(), 3))
    assert advertised[DESCRIBE_QUORUM] == (0, 2)
    assert advertised[3] == (0, 13)  # and every broker API as before


# -- DescribeQuorum --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_quorum_names_the_leader_from_every_broker(combined_cluster, version):
    leaders = set()
    for via in (1, 2, 3, 4):
        partition = partition_of(describe_quorum(combined_cluster, via, version))
        assert partition.error_code == 0
        leaders.add((partition.leader_id, partition.leader_epoch))
        voters = {voter.replica_id: voter for voter in partition.current_voters}
        assert sorted(voters) == [1, 2, 3, 5]
        assert [observer.replica_id for observer in partition.observers] == [4]
        assert voters[partition.leader_id].log_end_offset >= partition.high_watermark
        if version >= 1:
            leader = voters[partition.leader_id]
            assert leader.last_fetch_timestamp == leader.last_caught_up_timestamp > 0
        if version >= 2:
            assert all(voter.replica_directory_id != NO_DIRECTORY_ID for voter in voters.values())
    ((leader_id, epoch),) = leaders
    assert leader_id in (1, 2, 3, 5) and epoch >= 1


def test_describe_quorum_v2_lists_the_voters_controller_listeners(combined_cluster):
    response = describe_quorum(combined_cluster, 4, 2)
    assert {node.node_id: [(lst.name, lst.host, lst.port) for lst in node.listeners] for node in response.nodes} == {
        node_id: [("CONTROLLER", "127.0.0.1", combined_cluster.broker(node_id)["controller_port"])]
        for node_id in (1, 2, 3, 5)
    }


def test_followers_catch_up_and_the_high_watermark_advances(combined_cluster):
    first = partition_of(describe_quorum(combined_cluster, 1))

    def advanced():
        partition = partition_of(describe_quorum(combined_cluster, 1))
        caught_up = all(voter.log_end_offset >= first.high_watermark for voter in partition.current_voters)
        return partition if partition.high_watermark > first.high_watermark and caught_up else None

    later = wait_for(advanced, 5)
    assert later, "the metadata log did not grow or a live voter did not fetch"
    assert all(voter.last_fetch_timestamp > 0 for voter in later.current_voters)


def test_kafka_python_admin_describe_metadata_quorum(combined_cluster):
    admin = KafkaAdminClient(**kafka_python_config(combined_cluster))
    try:
        quorum = admin.describe_metadata_quorum()
    finally:
        admin.close()
    ((topic,),) = [quorum["topics"]]
    (partition,) = topic["partitions"]
    assert topic["topic_name"] == METADATA_TOPIC and partition["error"] is None
    assert (partition["leader_id"], partition["leader_epoch"]) == leader_and_epoch(combined_cluster, 1)
    assert sorted(voter["replica_id"] for voter in partition["current_voters"]) == [1, 2, 3, 5]
    assert sorted(node["node_id"] for node in quorum["nodes"]) == [1, 2, 3, 5]


def test_only_the_leader_answers_on_its_controller_listener(combined_cluster):
    leader_id, epoch = leader_and_epoch(combined_cluster, 1)
    for node_id in (1, 2, 3, 5):
        response = describe_quorum(
            combined_cluster, node_id, 2, port=combined_cluster.broker(node_id)["controller_port"]
        )
        partition = partition_of(response)
        if node_id == leader_id:
            assert (partition.error_code, partition.leader_id, partition.leader_epoch) == (0, leader_id, epoch)
        else:
            assert partition.error_code == NOT_LEADER_OR_FOLLOWER
            assert partition.current_voters == [] and response.nodes == []


@pytest.mark.parametrize("topic, partitions", [("other", (0,)), (METADATA_TOPIC, (1,)), (METADATA_TOPIC, (0, 1))])
def test_other_topics_and_partitions_are_unknown(combined_cluster, topic, partitions):
    response = describe_quorum(combined_cluster, 1, 2, request=quorum_request(topic, partitions))
    assert response.error_code == 0
    assert [(t.topic_name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in response.topics] == [
        (topic, [(index, UNKNOWN_TOPIC_OR_PARTITION) for index in partitions])
    ]


@pytest.mark.model_only("brokers without controller nodes: a real KRaft cluster always has a controller quorum")
def test_without_controller_nodes_there_is_no_quorum_to_ask(kafka_cluster):
    for version in (0, 2):
        response = describe_quorum(kafka_cluster, 1, version)
        assert response.error_code == REQUEST_TIMED_OUT and response.topics == []


# -- leadership ------------------------------------------------------------------------------------------------------
def test_stopping_the_active_controller_moves_leadership(kafka_cluster_factory):
    cluster = kafka_cluster_factory(3, combined=3)
    leader, epoch = wait_for(lambda: leader_and_epoch(cluster, 1), 5)
    cluster.stop(leader)
    via = next(node_id for node_id in (1, 2, 3) if node_id != leader)
    moved = wait_for(lambda: (leader_and_epoch(cluster, via) or (leader, epoch))[0] != leader, 5)
    assert moved, "leadership did not move"
    new_leader, new_epoch = leader_and_epoch(cluster, via)
    assert new_leader in set((1, 2, 3)) - {leader} and new_epoch > epoch
    # The old leader comes back as a follower: leadership does not move back.
    cluster.start(leader)
    assert leader_and_epoch(cluster, leader) == (new_leader, new_epoch)
    partition = partition_of(describe_quorum(cluster, via))
    assert sorted(voter.replica_id for voter in partition.current_voters) == [1, 2, 3]
    assert wait_for(
        lambda: all(v.log_end_offset >= 0 for v in partition_of(describe_quorum(cluster, via)).current_voters), 5
    )


def test_restarting_a_follower_does_not_move_leadership(kafka_cluster_factory):
    cluster = kafka_cluster_factory(3, combined=3)
    leader, epoch = wait_for(lambda: leader_and_epoch(cluster, 1), 5)
    for follower in sorted(set((1, 2, 3)) - {leader}):
        cluster.stop(follower)
        assert leader_and_epoch(cluster, leader) == (leader, epoch)
        cluster.start(follower)
        assert leader_and_epoch(cluster, follower) == (leader, epoch)


def test_killed_or_restarted_leader_loses_leadership(kafka_cluster_factory):
    cluster = kafka_cluster_factory(3, combined=3)
    leader, epoch = wait_for(lambda: leader_and_epoch(cluster, 1), 5)
    cluster.kill(leader)  # no controlled shutdown: the other voters notice after the session timeout (3 s)
    via = next(node_id for node_id in (1, 2, 3) if node_id != leader)
    assert wait_for(lambda: leader_and_epoch(cluster, via)[0] != leader, 10), "leadership did not move after the kill"
    second, second_epoch = leader_and_epoch(cluster, via)
    assert second_epoch > epoch
    cluster.start(leader)
    # A leader that restarts (stop and start right away) does not lead its new incarnation: a new epoch begins.
    cluster.stop(second)
    cluster.start(second)
    third, third_epoch = wait_for(lambda: leader_and_epoch(cluster, second), 5)
    assert third_epoch > second_epoch and third in (1, 2, 3)


def test_no_leader_without_a_majority_of_voters(kafka_cluster_factory):
    cluster = kafka_cluster_factory(3, combined=3)
    leader, epoch = wait_for(lambda: leader_and_epoch(cluster, 1), 5)
    followers = sorted(set((1, 2, 3)) - {leader})
    for follower in followers:
        cluster.stop(follower)
    # A lone voter cannot be a quorum: KRaft's leader resigns (check-quorum, once its fetch timeout passes without a
    # majority), brokers find no active controller.
    assert wait_for(lambda: leader_and_epoch(cluster, leader) is None, 10), "the lone voter stayed leader"
    on_listener = partition_of(describe_quorum(cluster, leader, port=cluster.broker(leader)["controller_port"]))
    assert on_listener.error_code == NOT_LEADER_OR_FOLLOWER
    cluster.start(followers[0])
    elected = wait_for(lambda: leader_and_epoch(cluster, followers[0]), 5)
    assert elected and elected[0] in (leader, followers[0]) and elected[1] > epoch


def test_single_combined_node(kafka_cluster_factory):
    cluster = kafka_cluster_factory(2, combined=1)
    assert wait_for(lambda: leader_and_epoch(cluster, 2), 5)[0] == 1
    assert wait_for(lambda: settled(cluster), 5)  # the broker-only node fetched from the new leader
    partition = partition_of(describe_quorum(cluster, 2))
    assert [v.replica_id for v in partition.current_voters] == [1] and [o.replica_id for o in partition.observers] == [
        2
    ]


# -- authorization and the command line --------------------------------------------------------------------------------
def test_describe_quorum_needs_describe_on_the_cluster(kafka_cluster_factory):
    cluster = kafka_cluster_factory(1, combined=1, scram=True)
    cluster.add_scram_user("alice", "alice-secret", "SCRAM-SHA-512")
    admin = KafkaAdminClient(**kafka_python_config(cluster))
    try:
        assert admin.describe_metadata_quorum()["topics"][0]["partitions"][0]["leader_id"] == 1
    finally:
        admin.close()
    alice = KafkaAdminClient(
        **kafka_python_config(cluster, sasl_plain_username="alice", sasl_plain_password="alice-secret")
    )
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            alice.describe_metadata_quorum()
    finally:
        alice.close()


def test_cli_up_with_combined_and_controller_only_nodes(kafka_cluster_root):
    directory = tempfile.mkdtemp(prefix="cli-quorum-", dir=kafka_cluster_root)
    env = dict(os.environ, PYTHONPATH=ROOT)

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "kafka_testbed", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=90,
            cwd=ROOT,
            env=env,
            check=False,
        )

    base = base_port_for(2, combined=1, controllers_only=1)
    result = cli(
        "up", "--dir", directory, "--brokers", 2, "--combined", 1, "--controllers-only", 1, "--base-port", base
    )
    try:
        assert result.returncode == 0, result.stderr
        cluster = Cluster(directory)
        assert [(b["id"], b["roles"]) for b in cluster.info["brokers"]] == [
            (1, ["broker", "controller"]),
            (2, ["broker"]),
            (3, ["controller"]),
        ]
        assert brokers_in_metadata(cluster) == [1, 2]
        assert leader_and_epoch(cluster, 2)[0] in (1, 3)
        stopped = cli("stop", "--dir", directory, "--broker", 3)
        assert stopped.returncode == 0, stopped.stderr
        refused = cli("offline-log-dir", "--dir", directory, "--broker", 3)
        assert refused.returncode == 1 and "no log dirs" in refused.stderr
        assert "--combined" in cli("up", "--help").stdout and "--controllers-only" in cli("up", "--help").stdout
    finally:
        cli("down", "--dir", directory)


def test_combined_must_fit_in_the_brokers(tmp_path):
    with pytest.raises(ClusterError, match="--combined"):
        Cluster(str(tmp_path)).create(2, combined=3)
