"""ApiVersions, Metadata, DescribeCluster and FindCoordinator."""

import uuid

from kafka_testbed import errors
from kafka_testbed.model import topics, wire


def api_versions(broker, connection, request):
    lowered = broker.config.max_versions
    # A controller listener advertises the controller's APIs (ApiVersionManager for ListenerType.CONTROLLER).
    apis = [api for api in wire.APIS.values() if not connection.controller or api.key in wire.CONTROLLER_API_KEYS]
    keys = [
        {"api_key": api.key, "min_version": api.advertised_min, "max_version": lowered.get(api.key, api.max_version)}
        for api in sorted(apis, key=lambda api: api.key)
    ]
    response = {"error_code": errors.NONE, "api_keys": keys, "throttle_time_ms": 0}
    if request.version >= 3:
        response["supported_features"] = [{"name": "metadata.version", "min_version": 7, "max_version": 27}]
        response["finalized_features_epoch"] = 1
        response["finalized_features"] = [
            {"name": "metadata.version", "max_version_level": 27, "min_version_level": 27}
        ]
    return response


def _endpoint_for(node, listener):
    for endpoint in node["endpoints"]:
        if endpoint["name"] == listener:
            return endpoint
    return None


def brokers_on_listener(nodes, listener):
    """(node, endpoint) of every live broker that has the listener the client is connected to."""
    result = []
    for node_id in sorted(nodes):
        node = nodes[node_id]
        endpoint = _endpoint_for(node, listener)
        if endpoint is not None:
            result.append((node, endpoint))
    return result


def controller_id(live):
    # KRaft brokers cannot name the active controller to clients; they answer with a live broker id.
    return min(live) if live else -1


def _topic_entry(name, topic, parts, error=errors.NONE):
    partitions = []
    for index, leader, epoch, isr, offline in parts:
        partitions.append(
            {
                "error_code": errors.LEADER_NOT_AVAILABLE if leader == -1 else errors.NONE,
                "partition_index": index,
                "leader_id": leader,
                "leader_epoch": epoch,
                "replica_nodes": topic["partitions"][index]["replicas"],
                "isr_nodes": isr,
                "offline_replicas": offline,
            }
        )
    return {
        "error_code": error,
        "name": name,
        "topic_id": uuid.UUID(topic["id"]),
        "is_internal": False,
        "partitions": partitions,
    }


def _error_topic(error, name=None, topic_id=None):
    return {
        "error_code": error,
        "name": name,
        "topic_id": topic_id or uuid.UUID(int=0),
        "is_internal": False,
        "partitions": [],
    }


def metadata(broker, connection, request):
    body = request.body
    live = broker.live_brokers()
    view = broker.topics_view()
    requested = body.topics
    if request.version == 0 and requested == []:
        requested = None  # v0 has no null: an empty list means every topic
    entries = []
    if requested is None:
        entries = [_topic_entry(name, *view[name]) for name in sorted(view)]
    else:
        by_id = {topic["id"]: name for name, (topic, _ignored) in view.items()}
        allow_auto = body.allow_auto_topic_creation if request.version >= 4 else True
        for item in requested:
            name = item.name
            if name is None and request.version >= 10 and item.topic_id is not None and item.topic_id.int != 0:
                name = by_id.get(str(item.topic_id))
                if name is None:
                    entries.append(_error_topic(errors.UNKNOWN_TOPIC_ID, None, item.topic_id))
                    continue
            if name in view:
                entries.append(_topic_entry(name, *view[name]))
                continue
            invalid = topics.invalid_name(name or "")
            if invalid:
                entries.append(_error_topic(errors.INVALID_TOPIC_EXCEPTION, name))
            elif allow_auto and topics.auto_create_enabled(broker):
                # Kafka 4.x forwards the creation to the controller and answers UNKNOWN_TOPIC_OR_PARTITION meanwhile
                # (not LEADER_NOT_AVAILABLE as ZooKeeper-era brokers did); the client retries and finds the topic.
                topics.create(broker, name, -1, -1, None, {}, validate_only=False)
                entries.append(_error_topic(errors.UNKNOWN_TOPIC_OR_PARTITION, name))
            else:
                entries.append(_error_topic(errors.UNKNOWN_TOPIC_OR_PARTITION, name))
    listener = connection.endpoint.name
    return {
        "throttle_time_ms": 0,
        "brokers": [
            {"node_id": node["node_id"], "host": endpoint["host"], "port": endpoint["port"], "rack": node["rack"]}
            for node, endpoint in brokers_on_listener(live, listener)
        ],
        "cluster_id": broker.state.read()["cluster_id"],
        "controller_id": controller_id(live),
        "topics": entries,
        "error_code": errors.NONE,
    }


_ENDPOINT_TYPES = {1: "BROKER", 2: "CONTROLLER"}


def _describe_cluster_error(request, expected):
    """AuthHelper.computeDescribeClusterResponse's refusals: a bare response (no cluster id, endpoint type left at
    its default), INVALID_REQUEST for version 0, which cannot name an endpoint type."""
    requested = request.body.endpoint_type if request.version >= 1 else 1
    if requested not in _ENDPOINT_TYPES:
        code, message = errors.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {requested}"
    elif requested != expected:
        code = errors.MISMATCHED_ENDPOINT_TYPE
        message = (
            f"The request was sent to an endpoint of type {_ENDPOINT_TYPES[expected]}, "
            f"but we wanted an endpoint of type {_ENDPOINT_TYPES[requested]}"
        )
    else:
        return None
    return _bare_refusal(errors.INVALID_REQUEST if request.version == 0 else code, message)


def _bare_refusal(code, message):
    """Kafka's refusals carry no cluster id and leave the endpoint type at its default."""
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "endpoint_type": 1,
        "cluster_id": "",
        "controller_id": -1,
        "brokers": [],
    }


def _described_node(node_id, endpoint, rack, fenced, version):
    entry = {"broker_id": node_id, "host": endpoint["host"], "port": endpoint["port"], "rack": rack}
    if version >= 2:
        entry["is_fenced"] = fenced
    return entry


def describe_cluster(broker, connection, request):
    """Brokers describe the brokers (KafkaApis); controller listeners the controllers (ControllerApis, KIP-919)."""
    expected = 2 if connection.controller else 1
    refused = _describe_cluster_error(request, expected)
    if refused is not None:
        return refused
    response = {
        "throttle_time_ms": 0,
        "error_code": errors.NONE,
        "error_message": None,
        "endpoint_type": expected,
        "cluster_id": broker.state.read()["cluster_id"],
        "controller_id": -1,
        "brokers": [],
    }
    if connection.controller:
        return _describe_controllers(broker, connection, request, response)
    body = request.body
    nodes = broker.nodes()
    include_fenced = request.version >= 2 and body.include_fenced_brokers
    shown = {
        node_id: node
        for node_id, node in nodes.items()
        if "broker" in node["roles"] and (node["alive"] or include_fenced)
    }
    live = broker.live_brokers(nodes)
    response["controller_id"] = controller_id(live)
    response["brokers"] = [
        _described_node(node["node_id"], endpoint, node["rack"], not node["alive"], request.version)
        for node, endpoint in brokers_on_listener(shown, connection.endpoint.name)
    ]
    return response


def _describe_controllers(broker, connection, request, response):
    """Every registered controller's endpoint on this listener, running or not, and the quorum leader as this
    controller knows it (-1 when that is no controller listed). Controllers require ALTER on the cluster."""
    if not broker.may_alter_cluster(connection.principal):
        return _bare_refusal(errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    view = broker.quorum_view()
    voters = sorted(view[1] if view else [], key=lambda voter: voter["id"])
    endpoints = [(voter["id"], _endpoint_for(voter, connection.endpoint.name)) for voter in voters]
    response["brokers"] = [
        _described_node(node_id, endpoint, None, False, request.version)
        for node_id, endpoint in endpoints
        if endpoint is not None
    ]
    leader = view[0]["leader"] if view else -1
    response["controller_id"] = leader if any(entry["broker_id"] == leader for entry in response["brokers"]) else -1
    return response


def find_coordinator(broker, _connection, request):
    # The test cluster has no group or transaction coordinator: consumers use manual assignment.
    message = "The coordinator is not available."
    if request.version <= 3:
        return {
            "throttle_time_ms": 0,
            "error_code": errors.COORDINATOR_NOT_AVAILABLE,
            "error_message": message,
            "node_id": -1,
            "host": "",
            "port": -1,
        }
    del broker
    return {
        "throttle_time_ms": 0,
        "coordinators": [
            {
                "key": key,
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": errors.COORDINATOR_NOT_AVAILABLE,
                "error_message": message,
            }
            for key in request.body.coordinator_keys
        ],
    }
