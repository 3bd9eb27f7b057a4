"""DescribeLogDirs, DescribeConfigs, IncrementalAlterConfigs and CreateTopics."""

import uuid

from kafka_sim import errors, kafka_configs as kc, topics

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
            results.append({"error_code": errors.KAFKA_STORAGE_ERROR, "log_dir": log_dir.path, "topics": [],
                            "total_bytes": -1, "usable_bytes": -1})
            continue
        try:
            total, usable = log_dir.sizes()
            present = log_dir.partitions()
        except OSError as exc:
            broker.fail_log_dir(log_dir, exc)
            results.append({"error_code": errors.KAFKA_STORAGE_ERROR, "log_dir": log_dir.path, "topics": [],
                            "total_bytes": -1, "usable_bytes": -1})
            continue
        by_topic = {}
        for (name, index), size in sorted(present.items()):
            if name not in view or (wanted is not None and (name, index) not in wanted):
                continue
            topic, parts = view[name]
            if index >= len(parts) or topic["partitions"][index]["dirs"].get(str(broker.node_id)) != log_dir.path:
                continue
            by_topic.setdefault(name, []).append({"partition_index": index, "partition_size": size,
                                                  "offset_lag": _offset_lag(broker, topic, name, index, parts[index][1]),
                                                  "is_future_key": False})
        results.append({"error_code": errors.NONE, "log_dir": log_dir.path, "total_bytes": total, "usable_bytes": usable,
                        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]})
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
def _entry(name, value, source, *, topic, read_only=False, synonyms=None):
    sensitive = kc.is_sensitive(name, topic=topic)
    return {"name": name, "value": None if sensitive else value, "read_only": read_only, "config_source": source,
            "is_sensitive": sensitive, "synonyms": synonyms or [], "config_type": kc.type_code(name, topic=topic), "documentation": None}


def _broker_entries(broker, include_synonyms):
    dynamic = broker.state.read()["configs"]["broker"]
    per_broker = dynamic.get(str(broker.node_id), {})
    cluster_default = dynamic.get("", {})
    names = list(kc.BROKER_CONFIGS) + [k for k in broker.props if k not in kc.BROKER_CONFIGS]
    names += [k for k in list(cluster_default) + list(per_broker) if k not in names]
    entries = []
    for name in sorted(set(names)):
        layers = [(per_broker.get(name), kc.SOURCE_DYNAMIC_BROKER_CONFIG), (cluster_default.get(name), kc.SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG),
                  (broker.props.get(name), kc.SOURCE_STATIC_BROKER_CONFIG)]
        config = kc.BROKER_CONFIGS.get(name)
        if config is not None:
            layers.append((config.default, kc.SOURCE_DEFAULT_CONFIG))
        present = [(value, source) for value, source in layers if value is not None or source == kc.SOURCE_DEFAULT_CONFIG]
        if not present:
            continue
        value, source = present[0]
        synonyms = []
        if include_synonyms:
            synonyms = [{"name": name, "value": None if kc.is_sensitive(name) else kc.normalize_value(name, v), "source": s}
                        for v, s in present]
        entries.append(_entry(name, value, source, topic=False, read_only=kc.is_read_only(name), synonyms=synonyms))
    return entries


def _cluster_default_entries(broker):
    return [_entry(name, value, kc.SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG, topic=False)
            for name, value in sorted(broker.state.read()["configs"]["broker"].get("", {}).items())]


def _topic_entries(broker, record, include_synonyms):
    entries = []
    for name in sorted(set(kc.TOPIC_CONFIGS) | set(record.get("configs", {}))):
        layers = [(record.get("configs", {}).get(name), kc.SOURCE_DYNAMIC_TOPIC_CONFIG)]
        synonym = kc.TOPIC_BROKER_SYNONYMS.get(name)
        if synonym:
            dynamic = broker.state.read()["configs"]["broker"]
            layers += [(dynamic.get(str(broker.node_id), {}).get(synonym), kc.SOURCE_DYNAMIC_BROKER_CONFIG),
                       (dynamic.get("", {}).get(synonym), kc.SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG),
                       (broker.props.get(synonym), kc.SOURCE_STATIC_BROKER_CONFIG)]
        config = kc.TOPIC_CONFIGS.get(name)
        layers.append((config.default if config else None, kc.SOURCE_DEFAULT_CONFIG))
        present = [(v, s) for v, s in layers if v is not None]
        value, source = present[0] if present else (None, kc.SOURCE_DEFAULT_CONFIG)
        synonyms = [{"name": name, "value": v, "source": s} for v, s in present] if include_synonyms else []
        entries.append(_entry(name, value, source, topic=True, synonyms=synonyms))
    return entries


def describe_configs(broker, _connection, request):
    include_synonyms = bool(request.body.include_synonyms) if request.version >= 1 else False
    view = broker.state.read()["topics"]
    results = []
    for resource in request.body.resources:
        result = {"error_code": errors.NONE, "error_message": None, "resource_type": resource.resource_type,
                  "resource_name": resource.resource_name, "configs": []}
        if resource.resource_type == BROKER:
            if resource.resource_name == "":
                entries = _cluster_default_entries(broker)
            elif resource.resource_name == str(broker.node_id):
                entries = _broker_entries(broker, include_synonyms)
            else:
                result["error_code"] = errors.INVALID_REQUEST
                result["error_message"] = (f"Unexpected broker id, expected {broker.node_id} or empty string, "
                                           f"but received {resource.resource_name}")
                results.append(result)
                continue
        elif resource.resource_type == TOPIC:
            record = view.get(resource.resource_name)
            if record is None:
                result["error_code"] = errors.UNKNOWN_TOPIC_OR_PARTITION
                result["error_message"] = "This server does not host this topic-partition."
                results.append(result)
                continue
            entries = _topic_entries(broker, record, include_synonyms)
        else:
            result["error_code"] = errors.INVALID_REQUEST
            result["error_message"] = f"Unsupported resource type {resource.resource_type} for this test broker"
            results.append(result)
            continue
        keys = resource.configuration_keys
        result["configs"] = [e for e in entries if keys is None or e["name"] in keys]
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


# -- IncrementalAlterConfigs --------------------------------------------------------------------------------------
def _apply_ops(current, ops, is_list, validate, invalid_code):
    """New config dict after SET/DELETE/APPEND/SUBTRACT, or (error code, message).

    A rejected value is INVALID_CONFIG for topics but INVALID_REQUEST for dynamic broker configs, as in Kafka."""
    updated = dict(current)
    for op in ops:
        name, value, operation = op.name, op.value, op.config_operation
        if operation in (APPEND, SUBTRACT) and not is_list(name):
            verb = "append" if operation == APPEND else "subtract"
            return errors.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}"
        if operation == SET:
            if value is None:
                return errors.INVALID_REQUEST, f"Null value not supported for : {name}"
            problem = validate(name, value)
            if problem:
                return invalid_code, problem
            updated[name] = value
        elif operation == DELETE:
            updated.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            items = [v for v in (updated.get(name) or "").split(",") if v]
            changes = [v.strip() for v in (value or "").split(",") if v.strip()]
            items = items + [v for v in changes if v not in items] if operation == APPEND else [v for v in items if v not in changes]
            updated[name] = ",".join(items)
            problem = validate(name, updated[name])
            if problem:
                return invalid_code, problem
        else:
            return errors.INVALID_REQUEST, f"Unknown config operation {operation}"
    return updated


def _alter_resource(broker, resource, principal, validate_only):
    names = [op.name for op in resource.configs]
    if len(set(names)) != len(names):
        return errors.INVALID_REQUEST, "Error due to duplicate config keys"
    if resource.resource_type == TOPIC:
        if not broker.may_alter_cluster(principal):
            return errors.TOPIC_AUTHORIZATION_FAILED, None
        record = broker.state.read()["topics"].get(resource.resource_name)
        if record is None:
            return errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
        result = _apply_ops(record.get("configs", {}), resource.configs,
                            lambda n: getattr(kc.TOPIC_CONFIGS.get(n), "type", "") == "LIST", kc.validate_topic_config,
                            errors.INVALID_CONFIG)
        if isinstance(result, tuple):
            return result
        if not validate_only:
            broker.state.update(lambda s: s["topics"][resource.resource_name].__setitem__("configs", result))
        return errors.NONE, None
    if resource.resource_type == BROKER:
        if not broker.may_alter_cluster(principal):
            return errors.CLUSTER_AUTHORIZATION_FAILED, None
        scope = resource.resource_name
        if scope != "" and not scope.lstrip("-").isdigit():
            return errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {scope}"
        current = broker.state.read()["configs"]["broker"].get(scope, {})
        result = _apply_ops(current, resource.configs, lambda n: getattr(kc.BROKER_CONFIGS.get(n), "type", "") == "LIST",
                            lambda n, v: kc.validate_dynamic_broker_update(n, v, per_broker=scope != ""), errors.INVALID_REQUEST)
        if isinstance(result, tuple):
            return result
        if not validate_only:
            broker.state.update(lambda s: s["configs"]["broker"].__setitem__(scope, result))
        return errors.NONE, None
    return errors.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type} for this test broker"


def incremental_alter_configs(broker, connection, request):
    responses = []
    for resource in request.body.resources:
        code, message = _alter_resource(broker, resource, connection.principal, request.body.validate_only)
        responses.append({"error_code": code, "error_message": message, "resource_type": resource.resource_type,
                          "resource_name": resource.resource_name})
    return {"throttle_time_ms": 0, "responses": responses}


# -- CreateTopics -------------------------------------------------------------------------------------------------
def create_topics(broker, _connection, request):
    # Creation is open to every principal: no ACLs are modelled, only the super-user rule for cluster alterations.
    body = request.body
    names = [t.name for t in body.topics]
    duplicates = {n for n in names if names.count(n) > 1}
    results = []
    for item in body.topics:
        entry = {"name": item.name, "topic_id": uuid.UUID(int=0), "error_code": errors.NONE, "error_message": None,
                 "num_partitions": -1, "replication_factor": -1, "configs": []}
        if item.name in duplicates:
            entry["error_code"] = errors.INVALID_REQUEST
            entry["error_message"] = f"Create topics request from client `{request.client_id}` contains multiple entries for the following topics: {item.name}"
            results.append(entry)
            continue
        assignments = [(a.partition_index, list(a.broker_ids)) for a in (item.assignments or [])]
        configs = {c.name: c.value for c in (item.configs or [])}
        code, outcome = topics.create(broker, item.name, item.num_partitions, item.replication_factor, assignments, configs,
                                      bool(body.validate_only))
        if code != errors.NONE:
            entry["error_code"], entry["error_message"] = code, outcome
        else:
            entry["topic_id"] = uuid.UUID(outcome["id"]) if not body.validate_only else uuid.UUID(int=0)
            entry["num_partitions"] = len(outcome["partitions"])
            entry["replication_factor"] = len(outcome["partitions"][0]["replicas"])
            entry["configs"] = [{"name": e["name"], "value": e["value"], "read_only": False, "config_source": e["config_source"],
                                 "is_sensitive": e["is_sensitive"]} for e in _topic_entries(broker, outcome, False)]
        results.append(entry)
    return {"throttle_time_ms": 0, "topics": results}
