"""DescribeQuorum: the KRaft metadata quorum as its leader describes it.

A broker forwards the request to the active controller (KafkaApis: ``forwardToController``); a controller listener
answers itself (ControllerApis.handleDescribeQuorum, then KafkaRaftClient.handleDescribeQuorumRequest): only the
quorum leader describes the quorum, other controllers answer NOT_LEADER_OR_FOLLOWER.
"""

import uuid

from kafka_testbed import errors
from kafka_testbed.model import state as cluster_state

METADATA_TOPIC = "__cluster_metadata"
# LeaderState.OBSERVER_SESSION_TIMEOUT_MS: the leader forgets an observer that has not fetched for this long.
OBSERVER_SESSION_TIMEOUT_MS = 300000


def _top_level(error):
    return {"error_code": error, "error_message": None, "topics": [], "nodes": []}


def _valid_partition(body):
    """KafkaRaftClient.hasValidTopicPartition: exactly one topic, ``__cluster_metadata``, with exactly partition 0."""
    topics = body.topics or []
    return (
        len(topics) == 1
        and topics[0].topic_name == METADATA_TOPIC
        and len(topics[0].partitions or []) == 1
        and topics[0].partitions[0].partition_index == 0
    )


def _partition_errors(body, error):
    """DescribeQuorumRequest.getPartitionLevelErrorResponse: every requested partition with the error."""
    return {
        "error_code": errors.NONE,
        "error_message": None,
        "nodes": [],
        "topics": [
            {
                "topic_name": topic.topic_name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": error} for p in topic.partitions or []
                ],
            }
            for topic in body.topics or []
        ],
    }


def _not_leader():
    """DescribeQuorumResponse.singletonErrorResponse(__cluster_metadata-0, NOT_LEADER_OR_FOLLOWER)."""
    return {
        "error_code": errors.NONE,
        "error_message": None,
        "nodes": [],
        "topics": [
            {
                "topic_name": METADATA_TOPIC,
                "partitions": [{"partition_index": 0, "error_code": errors.NOT_LEADER_OR_FOLLOWER}],
            }
        ],
    }


def _replica(quorum, node_id, directory_id, node, now):
    """RaftUtil.toReplicaState: the leader reports itself as fetched and caught up now; a replica that has not fetched
    in this epoch is unknown (-1). A follower fetches on every heartbeat, up to the end of the log at that moment."""
    state = {
        "replica_id": node_id,
        "replica_directory_id": uuid.UUID(directory_id),
        "log_end_offset": -1,
        "last_fetch_timestamp": -1,
        "last_caught_up_timestamp": -1,
    }
    if node_id == quorum["leader"]:
        state.update(
            log_end_offset=cluster_state.log_end_offset(quorum, now),
            last_fetch_timestamp=now,
            last_caught_up_timestamp=now,
        )
    elif node is not None and node["heartbeat_ms"] >= quorum["epoch_start_ms"]:
        fetched = min(node["heartbeat_ms"], now)
        state.update(
            log_end_offset=cluster_state.log_end_offset(quorum, fetched),
            last_fetch_timestamp=fetched,
            last_caught_up_timestamp=fetched,
        )
    return state


def _high_watermark(voters):
    """The largest offset a majority of voters has: -1 until a majority fetched in the leader's epoch."""
    offsets = sorted((voter["log_end_offset"] for voter in voters), reverse=True)
    return offsets[len(offsets) // 2]


def _describe(view):
    quorum, voters, nodes, now = view
    voter_ids = {voter["id"] for voter in voters}
    directory_ids = quorum.get("directory_ids", {})
    current = [_replica(quorum, voter["id"], voter["directory_id"], nodes.get(voter["id"]), now) for voter in voters]
    observers = [
        _replica(quorum, node_id, directory_ids.get(str(node_id), cluster_state.NO_DIRECTORY_ID), node, now)
        for node_id, node in sorted(nodes.items())
        if node_id not in voter_ids
        and node["heartbeat_ms"] >= quorum["epoch_start_ms"]
        and now - node["heartbeat_ms"] <= OBSERVER_SESSION_TIMEOUT_MS
    ]
    return {
        "error_code": errors.NONE,
        "error_message": None,
        "topics": [
            {
                "topic_name": METADATA_TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": errors.NONE,
                        "error_message": None,
                        "leader_id": quorum["leader"],
                        "leader_epoch": quorum["epoch"],
                        "high_watermark": _high_watermark(current),
                        "current_voters": current,
                        "observers": observers,
                    }
                ],
            }
        ],
        "nodes": [{"node_id": voter["id"], "listeners": voter["endpoints"]} for voter in voters],
    }


def describe_quorum(broker, connection, request):
    view = broker.quorum_view()
    leader = -1 if view is None else view[0]["leader"]
    if not connection.controller and leader == -1:
        # The forwarded request finds no active controller: Kafka's ForwardingManager answers REQUEST_TIMED_OUT once
        # the request timeout passed; here at once. A cluster without controller nodes has no quorum to ask.
        return _top_level(errors.REQUEST_TIMED_OUT)
    # At the controller: ControllerApis authorizes DESCRIBE on the cluster (no ACLs are modelled: super users only).
    if not broker.may_alter_cluster(connection.principal):
        return _top_level(errors.CLUSTER_AUTHORIZATION_FAILED)
    if not _valid_partition(request.body):
        return _partition_errors(request.body, errors.UNKNOWN_TOPIC_OR_PARTITION)
    if connection.controller and leader != broker.node_id:
        return _not_leader()
    return _describe(view)
