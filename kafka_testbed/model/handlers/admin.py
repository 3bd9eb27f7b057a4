"""DescribeLogDirs, DescribeConfigs, IncrementalAlterConfigs and CreateTopics."""

import uuid

from kafka_testbed import errors
from kafka_testbed.model import kafka_configs, topics

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


# -- DescribeLogDirs ----------------------------------------------------------------------------------------------
def describe_log_dirs(broker, _connection, request):
    wanted = None
    if request.body.topics is not None:
        wanted = {(item.topic, p) for item in request.body.topics for p in item.partitions}
    view = broker.topics_view()
    offline = broker.offline_by_fault()
    results = []
    for log_dir in broker.log_dirs:
        if not log_dir.online(offline):
            results.append(
                {
                    "error_code": errors.KAFKA_STORAGE_ERROR,
                    "log_dir": log_dir.path,
                    "topics": [],
                    "total_bytes": -1,
                    "usable_bytes": -1,
                }
            )
            continue
        try:
            total, usable = log_dir.sizes()
            present = log_dir.partitions()
        except OSError as exc:
            broker.fail_log_dir(log_dir, exc)
            results.append(
                {
                    "error_code": errors.KAFKA_STORAGE_ERROR,
                    "log_dir": log_dir.path,
                    "topics": [],
                    "total_bytes": -1,
                    "usable_bytes": -1,
                }
            )
            continue
        by_topic = {}
        for (name, index), size in sorted(present.items()):
            if name not in view or (wanted is not None and (name, index) not in wanted):
                continue
            topic, parts = view[name]
            if index >= len(parts) or topic["partitions"][index]["dirs"].get(str(broker.node_id)) != log_dir.path:
                continue
            by_topic.setdefault(name, []).append(
                {
                    "partition_index": index,
                    "partition_size": size,
                    "offset_lag": _offset_lag(broker, topic, name, index, parts[index][1]),
                    "is_future_key": False,
                }
            )
        results.append(
            {
                "error_code": errors.NONE,
                "log_dir": log_dir.path,
                "total_bytes": total,
                "usable_bytes": usable,
                "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
            }
        )
    return {"throttle_time_ms": 0, "error_code": errors.NONE, "results": results}


def _offset_lag(broker, topic, name, index, leader):
    if leader in (-1, broker.node_id):
        return 0
    mine = broker.partition_log(topic, name, index)
    theirs = broker.partition_log(topic, name, index, leader)
    if mine is None or theirs is None:
        return 0
    return max(theirs.end_offset() - mine.end_offset(), 0)


# -- DescribeConfigs ----------------------------------------------------------------------------------------------
# Kafka's ConfigHelper (core/.../kafka/server/ConfigHelper.scala) and ConfigHelperUtils.createResponseConfig.
_STATIC_DEFAULTS = {name: d.default for name, d in kafka_configs.BROKER_CONFIGS.items() if d.default is not None}


def _entry(name, value, source, *, topic, read_only=False, synonyms=None):
    sensitive = kafka_configs.is_sensitive(name, topic=topic)
    return {
        "name": name,
        "value": None if sensitive else value,
        "read_only": read_only,
        "config_source": source,
        "is_sensitive": sensitive,
        "synonyms": synonyms or [],
        "config_type": kafka_configs.type_code(name, topic=topic),
        "documentation": None,
    }


def _broker_layers(broker):
    """DynamicBrokerConfig's maps, highest precedence first: per-broker dynamic, cluster-default dynamic, static, Kafka
    defaults."""
    dynamic = broker.state.read()["configs"]["broker"]
    return [
        (dynamic.get(str(broker.node_id), {}), kafka_configs.SOURCE_DYNAMIC_BROKER_CONFIG),
        (dynamic.get("", {}), kafka_configs.SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG),
        (broker.props, kafka_configs.SOURCE_STATIC_BROKER_CONFIG),
        (_STATIC_DEFAULTS, kafka_configs.SOURCE_DEFAULT_CONFIG),
    ]


def _config_synonyms(name, layers, sensitive):
    """``ConfigHelper.configSynonyms``: every layer's value of every synonym of ``name``, minus leading other names."""
    names = kafka_configs.broker_config_synonyms(name)
    synonyms = [
        {"name": synonym, "value": None if sensitive else values[synonym], "source": source}
        for values, source in layers
        for synonym in names
        if values.get(synonym) is not None
    ]
    while synonyms and synonyms[0]["name"] != name:
        synonyms.pop(0)
    return synonyms


def _broker_entry(name, value, layers, include_synonyms, per_broker):
    """``ConfigHelper.createBrokerConfigEntry``."""
    sensitive = kafka_configs.is_sensitive(name)
    synonyms = [
        s
        for s in _config_synonyms(name, layers, sensitive)
        if per_broker or s["source"] == kafka_configs.SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG
    ]
    source = synonyms[0]["source"] if synonyms else kafka_configs.SOURCE_DEFAULT_CONFIG
    return _entry(
        name,
        value,
        source,
        topic=False,
        read_only=kafka_configs.is_read_only(name),
        synonyms=synonyms if include_synonyms else [],
    )


def _broker_entries(broker, include_synonyms):
    """The broker's current config: every key Kafka defines plus every key configured (static or dynamic)."""
    layers = _broker_layers(broker)
    names = set(kafka_configs.BROKER_CONFIGS) - kafka_configs.UNLISTED_UNLESS_SET
    for values, _ignored in layers[:3]:
        names.update(k for k, v in values.items() if v is not None)
    entries = []
    for name in sorted(names):
        raw = next((values[name] for values, _ignored in layers[:3] if values.get(name) is not None), None)
        if raw is None:
            value = kafka_configs.BROKER_CONFIGS[name].default
        else:
            value = kafka_configs.normalize_value(name, raw) if name in kafka_configs.BROKER_CONFIGS else raw
        entries.append(_broker_entry(name, value, layers, include_synonyms, per_broker=True))
    return entries


def _cluster_default_entries(broker, include_synonyms):
    """Resource name "": only the dynamic cluster-wide defaults, values as stored."""
    layers = _broker_layers(broker)
    return [
        _broker_entry(name, value, layers, include_synonyms, per_broker=False)
        for name, value in sorted(layers[1][0].items())
    ]


def _resolved_broker_values(layers):
    """Broker keys explicitly set (dynamic per-broker, dynamic default or static), resolved by precedence."""
    resolved = {}
    for values, _ignored in reversed(layers[:3]):
        resolved.update({k: v for k, v in values.items() if v is not None})
    return resolved


def _topic_entries(broker, record, include_synonyms):
    """``ConfigHelper.createTopicConfigEntry`` for every LogConfig key: override, else the broker synonym's value."""
    layers = _broker_layers(broker)
    resolved = _resolved_broker_values(layers)
    overrides = record.get("configs", {})
    entries = []
    for name in sorted(set(kafka_configs.TOPIC_CONFIGS) | set(overrides)):
        if name in overrides:
            value = kafka_configs.normalize_value(name, overrides[name], topic=True)
        elif name in kafka_configs.TOPIC_CONFIGS:
            value = kafka_configs.topic_default_from_broker(name, resolved)
        else:
            value = None
        synonym = kafka_configs.TOPIC_BROKER_SYNONYMS.get(name)
        synonyms = _config_synonyms(synonym, layers, False) if synonym else []
        if name in overrides:
            synonyms.insert(0, {"name": name, "value": value, "source": kafka_configs.SOURCE_DYNAMIC_TOPIC_CONFIG})
        source = synonyms[0]["source"] if synonyms else kafka_configs.SOURCE_DEFAULT_CONFIG
        entries.append(_entry(name, value, source, topic=True, synonyms=synonyms if include_synonyms else []))
    return entries


def _parse_broker_id(name):
    """Scala ``String.toInt``: an optional sign and decimal digits within the int range, else None."""
    digits = name[1:] if name[:1] in "+-" else name
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    value = int(name)
    return value if -(2**31) <= value < 2**31 else None


def _describe_resource(broker, view, resource, include_synonyms):
    """(error code, message, entries) for one resource."""
    name = resource.resource_name
    if resource.resource_type == BROKER:
        if name == "":
            return errors.NONE, "", _cluster_default_entries(broker, include_synonyms)
        node_id = _parse_broker_id(name)
        if node_id is None:
            return errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}", []
        if node_id != broker.node_id:
            return (
                errors.INVALID_REQUEST,
                f"Unexpected broker id, expected {broker.node_id} or empty string, but received {name}",
                [],
            )
        return errors.NONE, "", _broker_entries(broker, include_synonyms)
    if resource.resource_type == TOPIC:
        invalid = topics.invalid_name(name)
        if invalid:
            return errors.INVALID_TOPIC_EXCEPTION, invalid, []
        if name not in view:
            return errors.UNKNOWN_TOPIC_OR_PARTITION, "", []
        return errors.NONE, "", _topic_entries(broker, view[name], include_synonyms)
    return errors.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type} for this test broker", []


def describe_configs(broker, _connection, request):
    # DESCRIBE_CONFIGS is open to every principal: no ACLs are modelled.
    include_synonyms = bool(request.body.include_synonyms) if request.version >= 1 else False
    view = broker.state.read()["topics"]
    results = []
    for resource in request.body.resources:
        code, message, entries = _describe_resource(broker, view, resource, include_synonyms)
        keys = resource.configuration_keys
        results.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": resource.resource_type,
                "resource_name": resource.resource_name,
                "configs": [e for e in entries if not keys or e["name"] in keys],
            }
        )
    return {"throttle_time_ms": 0, "results": results}


# -- IncrementalAlterConfigs --------------------------------------------------------------------------------------
# Two steps as in Kafka: ConfigAdminManager.preprocess on the receiving broker (request shape, BROKER resources),
# then the controller (ControllerApis.handleIncrementalAlterConfigs: authorization; ConfigurationControlManager:
# TOPIC operations, ControllerConfigurationValidator, existence).
_UNKNOWN_SERVER_ERROR = -1
# ControllerApis.authorizeAlterResource answers new ApiError(error), whose message is the error's default message.
_ERROR_MESSAGES = {
    errors.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    errors.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
}


def _java_split(value):
    """``String.split(",")``: trailing empty strings are dropped."""
    parts = value.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _broker_ops(current, ops):
    """``ConfigAdminManager.prepareIncrementalConfigs``: the new dynamic config dict, or (error code, message)."""
    updated = dict(current)
    for op in ops:
        name, value, operation = op.name, op.value, op.config_operation
        if operation == SET:
            updated[name] = value
        elif operation == DELETE:
            updated.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            definition = kafka_configs.BROKER_CONFIGS.get(name)
            if definition is None:
                return _UNKNOWN_SERVER_ERROR, None  # Scala Map.apply on an unknown key: NoSuchElementException
            if definition.type != "LIST":
                verb = "append" if operation == APPEND else "subtract"
                return errors.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}"
            old = updated.get(name, definition.default or "")
            if operation == APPEND:
                items = [v for v in _java_split(old) if v]
                items += [v for v in _java_split(value) if v not in items]
            else:
                items = [v for v in _java_split(old) if v not in _java_split(value)]
            updated[name] = ",".join(items)
        else:
            return errors.INVALID_REQUEST, f"Unknown operations type {operation}"
    return updated


def _topic_ops(current, ops):
    """``ConfigurationControlManager.incrementalAlterConfigResource``: the new topic overrides, or (error code,
    message)."""
    updated = dict(current)
    for op in ops:
        name, value, operation = op.name, op.value, op.config_operation
        if operation == SET:
            updated[name] = value
        elif operation == DELETE:
            updated.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            verb = "APPEND" if operation == APPEND else "SUBTRACT"
            problem = kafka_configs.validate_list_op(name, verb, topic=True)
            if problem:
                return errors.INVALID_CONFIG, problem
            old = updated.get(name)
            items = [v for v in _java_split(kafka_configs.TOPIC_CONFIGS[name].default if old is None else old) if v]
            for item in _java_split(value):
                if operation == APPEND and item not in items:
                    items.append(item)
                elif operation == SUBTRACT and item in items:
                    items.remove(item)
            updated[name] = ",".join(items)
        else:
            return errors.INVALID_REQUEST, f"Unknown operations type {operation}"
    return updated


def _preprocess(broker, resource):
    """ConfigAdminManager.preprocess for one resource: (error code, message), or (None, new broker config) to
    persist."""
    names = [op.name for op in resource.configs]
    if len(set(names)) != len(names):
        return errors.INVALID_REQUEST, "Error due to duplicate config keys"
    nulls = [op.name for op in resource.configs if op.config_operation != DELETE and op.value is None]
    if nulls:
        return errors.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
    if resource.resource_type == TOPIC:
        return None, None
    if resource.resource_type != BROKER:
        return errors.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type} for this test broker"
    scope = resource.resource_name
    if scope != "":
        node_id = _parse_broker_id(scope)
        if node_id is None:
            return errors.INVALID_REQUEST, f"Node id must be an integer, but it is: {scope}"
        if node_id != broker.node_id:
            return errors.INVALID_REQUEST, f"Unexpected broker id, expected {broker.node_id}, but received {scope}"
    result = _broker_ops(broker.state.read()["configs"]["broker"].get(scope, {}), resource.configs)
    if isinstance(result, tuple):
        return result
    problem = kafka_configs.validate_dynamic_broker_updates(result, per_broker=scope != "") or _refused_reconfiguration(
        broker, scope, result
    )
    if problem:
        return errors.INVALID_REQUEST, problem
    return None, result


def _refused_reconfiguration(broker, scope, updated):
    """The receiving broker checks the change against its own effective config: a new cluster-wide default counts
    where no per-broker value of its own overrides it (DynamicBrokerConfig.validate)."""
    layers = _broker_layers(broker)
    replaced = 0 if scope != "" else 1
    new_layers = [
        (updated, source) if index == replaced else (values, source) for index, (values, source) in enumerate(layers)
    ]
    return kafka_configs.validate_reconfiguration(_effective(layers), _effective(new_layers))


def _effective(layers):
    values = dict(_STATIC_DEFAULTS)
    values.update(_resolved_broker_values(layers))
    return values


def _remote_storage_enabled(broker):
    return str(topics.broker_setting(broker, "remote.log.storage.system.enable")).strip().lower() == "true"


def _alter_topic(broker, resource, validate_only):
    name = resource.resource_name
    record = broker.state.read()["topics"].get(name)
    existing = record.get("configs", {}) if record else {}
    result = _topic_ops(existing, resource.configs)
    if isinstance(result, tuple):
        return result
    if name == "":
        return errors.INVALID_REQUEST, "Default topic resources are not allowed."
    invalid = topics.invalid_name(name)
    if invalid:
        return errors.INVALID_TOPIC_EXCEPTION, invalid
    resolved = _resolved_broker_values(_broker_layers(broker))
    defaults = {key: kafka_configs.topic_default_from_broker(key, resolved) for key in kafka_configs.TOPIC_CONFIGS}
    problem = kafka_configs.validate_topic_configs(
        result, defaults=defaults, existing=existing, remote_storage_system_enabled=_remote_storage_enabled(broker)
    )
    if problem:
        return errors.INVALID_CONFIG, problem
    if record is None:
        return errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
    if not validate_only:

        def change(state):
            if name not in state["topics"]:
                return errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
            state["topics"][name]["configs"] = result
            return errors.NONE, None

        return broker.state.update(change)
    return errors.NONE, None


def _alter_resource(broker, resource, principal, validate_only):
    code, outcome = _preprocess(broker, resource)
    if code is not None:
        return code, outcome
    if not broker.may_alter_cluster(principal):
        code = (
            errors.TOPIC_AUTHORIZATION_FAILED
            if resource.resource_type == TOPIC
            else errors.CLUSTER_AUTHORIZATION_FAILED
        )
        return code, _ERROR_MESSAGES[code]
    if resource.resource_type == TOPIC:
        return _alter_topic(broker, resource, validate_only)
    if not validate_only:
        broker.state.update(lambda s: s["configs"]["broker"].__setitem__(resource.resource_name, outcome))
    return errors.NONE, None


def incremental_alter_configs(broker, connection, request):
    keys = [(r.resource_type, r.resource_name) for r in request.body.resources]
    responses = []
    for resource in request.body.resources:
        if keys.count((resource.resource_type, resource.resource_name)) > 1:
            code, message = errors.INVALID_REQUEST, "Each resource must appear at most once."
        else:
            code, message = _alter_resource(broker, resource, connection.principal, request.body.validate_only)
        responses.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": resource.resource_type,
                "resource_name": resource.resource_name,
            }
        )
    return {"throttle_time_ms": 0, "responses": responses}


# -- CreateTopics -------------------------------------------------------------------------------------------------
# The controller's order (ControllerApis.createTopics, ReplicationControlManager.createTopics/createTopic): duplicate
# names, name validity, existence, configs, then replication factor before partition count.
_METADATA_TOPIC = "__cluster_metadata"


def _precheck_topic(broker, item, existing):
    """(error code, message) for what Kafka rejects before placing replicas, or None."""
    invalid = topics.invalid_name(item.name)
    if invalid:
        return errors.INVALID_TOPIC_EXCEPTION, invalid
    if item.name in existing:
        return errors.TOPIC_ALREADY_EXISTS, f"Topic '{item.name}' already exists."
    configs = list(item.configs or [])
    nulls = [c.name for c in configs if c.value is None]
    if nulls:
        return errors.INVALID_CONFIG, "Null value not supported for topic configs: " + ",".join(nulls)
    if configs:
        resolved = _resolved_broker_values(_broker_layers(broker))
        defaults = {key: kafka_configs.topic_default_from_broker(key, resolved) for key in kafka_configs.TOPIC_CONFIGS}
        problem = kafka_configs.validate_topic_configs({c.name: c.value for c in configs}, defaults=defaults)
        if problem:
            return errors.INVALID_CONFIG, problem
    if item.assignments:
        if item.replication_factor != -1:
            return (
                errors.INVALID_REQUEST,
                "A manual partition assignment was specified, but replication factor was not set to -1.",
            )
        if item.num_partitions != -1:
            return (
                errors.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        return _check_assignments(broker, item.assignments)
    if item.replication_factor < -1 or item.replication_factor == 0:
        return (
            errors.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if item.num_partitions < -1 or item.num_partitions == 0:
        return errors.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
    return None


def _check_assignments(broker, assignments):
    """``ReplicationControlManager.validateManualPartitionAssignment`` and the fenced and index checks."""
    registered = broker.nodes()
    live = broker.live_brokers(registered)
    replication_factor = None
    indexes = set()
    for assignment in assignments:
        replicas = sorted(assignment.broker_ids)
        if not replicas:
            return errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
        for position, node_id in enumerate(replicas):
            if node_id not in registered:
                return errors.INVALID_REPLICA_ASSIGNMENT, (
                    f"The manual partition assignment includes broker {node_id}, but no such broker is registered."
                )
            if position and replicas[position - 1] == node_id:
                return errors.INVALID_REPLICA_ASSIGNMENT, (
                    f"The manual partition assignment includes the broker {node_id} more than once."
                )
        if replication_factor is not None and len(replicas) != replication_factor:
            return errors.INVALID_REPLICA_ASSIGNMENT, (
                f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this is "
                f"not consistent with previous partitions, which have {replication_factor} replica(s)."
            )
        replication_factor = len(replicas)
        if not any(node_id in live for node_id in replicas):
            return errors.INVALID_REPLICA_ASSIGNMENT, (
                f"All brokers specified in the manual partition assignment for partition "
                f"{assignment.partition_index} are fenced or in controlled shutdown."
            )
        indexes.add(assignment.partition_index)
    if indexes != set(range(len(indexes))):
        return errors.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"
    return None


def _created_entry(broker, name, outcome, validate_only):
    return {
        "name": name,
        "topic_id": uuid.uuid4() if validate_only else uuid.UUID(outcome["id"]),
        "error_code": errors.NONE,
        "error_message": None,
        "num_partitions": len(outcome["partitions"]),
        "replication_factor": len(outcome["partitions"][0]["replicas"]),
        "configs": [
            {
                "name": e["name"],
                "value": e["value"],
                "read_only": False,
                "config_source": e["config_source"],
                "is_sensitive": e["is_sensitive"],
            }
            for e in _topic_entries(broker, outcome, False)
        ],
    }


def create_topics(broker, _connection, request):
    # Creation is open to every principal: no ACLs are modelled, only the super-user rule for cluster alterations.
    body = request.body
    names = [t.name for t in body.topics]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    results = []
    for item in body.topics:
        if item.name in duplicates or item.name == _METADATA_TOPIC:
            continue
        entry = {
            "name": item.name,
            "topic_id": uuid.UUID(int=0),
            "error_code": errors.NONE,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],
        }
        problem = _precheck_topic(broker, item, broker.state.read()["topics"])
        if problem is None:
            assignments = [(a.partition_index, list(a.broker_ids)) for a in (item.assignments or [])]
            configs = {c.name: c.value for c in (item.configs or [])}
            num_partitions = -1 if assignments else item.num_partitions
            replication_factor = -1 if assignments else item.replication_factor
            code, outcome = topics.create(
                broker, item.name, num_partitions, replication_factor, assignments, configs, bool(body.validate_only)
            )
            if code == errors.NONE:
                results.append(_created_entry(broker, item.name, outcome, bool(body.validate_only)))
                continue
            problem = code, outcome
        entry["error_code"], entry["error_message"] = problem
        results.append(entry)
    for name in duplicates:
        results.append(
            {
                "name": name,
                "topic_id": uuid.UUID(int=0),
                "error_code": errors.INVALID_REQUEST,
                "error_message": "Duplicate topic name.",
                "num_partitions": -1,
                "replication_factor": -1,
                "configs": [],
            }
        )
    if _METADATA_TOPIC in names and _METADATA_TOPIC not in duplicates:
        results.append(
            {
                "name": _METADATA_TOPIC,
                "topic_id": uuid.UUID(int=0),
                "error_code": errors.INVALID_REQUEST,
                "error_message": f"Creation of internal topic {_METADATA_TOPIC} is prohibited.",
                "num_partitions": -1,
                "replication_factor": -1,
                "configs": [],
            }
        )
    return {"throttle_time_ms": 0, "topics": results}
