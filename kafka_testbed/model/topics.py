"""Topic creation and topic config resolution, following Kafka's validation order and messages."""

import re
import uuid
import zlib

from kafka_testbed import errors
from kafka_testbed.model import kafka_configs
from kafka_testbed.model.state import now_ms

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249


def invalid_name(name):
    """Kafka's Topic.validate message for an illegal name, or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, topic name: {name}"
    if not _LEGAL.fullmatch(name):
        return (
            f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' "
            "and '-'"
        )
    return None


def broker_setting(broker, key):
    """A broker-level value: dynamic per-broker, dynamic cluster default, static file, Kafka default."""
    dynamic = broker.state.read()["configs"]["broker"]
    for scope in (str(broker.node_id), ""):
        value = dynamic.get(scope, {}).get(key)
        if value is not None:
            return value
    if key in broker.props:
        return broker.props[key]
    config = kafka_configs.BROKER_CONFIGS.get(key)
    return config.default if config else None


def topic_setting(broker, topic_record, key):
    """A topic config as the log sees it: the topic's own value, else its broker synonym, else Kafka's default."""
    value = topic_record.get("configs", {}).get(key)
    if value is not None:
        return value
    synonym = kafka_configs.TOPIC_BROKER_SYNONYMS.get(key)
    if synonym:
        value = broker_setting(broker, synonym)
        if value is not None:
            return value
    config = kafka_configs.TOPIC_CONFIGS.get(key)
    return config.default if config else None


def auto_create_enabled(broker):
    return str(broker_setting(broker, "auto.create.topics.enable")).lower() == "true"


def _assign(live_ids, partitions, replication_factor, name):
    """Rack-unaware assignment as Kafka spreads it: a start broker, then consecutive brokers per partition."""
    ordered = sorted(live_ids)
    start = zlib.crc32(name.encode()) % len(ordered)
    return [[ordered[(start + p + r) % len(ordered)] for r in range(replication_factor)] for p in range(partitions)]


def _choose_dirs(state, registered, replicas_by_partition):
    """Each replica goes to the log dir of its broker holding the fewest partitions (Kafka's choice)."""
    counts = {}
    for topic in state["topics"].values():
        for partition in topic["partitions"]:
            for node_id, directory in partition["dirs"].items():
                counts[(node_id, directory)] = counts.get((node_id, directory), 0) + 1
    result = []
    for replicas in replicas_by_partition:
        dirs = {}
        for node_id in replicas:
            options = registered[node_id]["log_dirs"]
            choice = min(options, key=lambda d, n=str(node_id): (counts.get((n, d), 0), options.index(d)))
            counts[(str(node_id), choice)] = counts.get((str(node_id), choice), 0) + 1
            dirs[str(node_id)] = choice
        result.append(dirs)
    return result


def create(broker, name, num_partitions, replication_factor, assignments, configs, validate_only):
    """Create a topic; returns (error code, message or topic record)."""
    message = invalid_name(name)
    if message:
        return errors.INVALID_TOPIC_EXCEPTION, message
    nodes = broker.nodes()
    live = broker.live_brokers(nodes)
    registered = {
        node_id: node for node_id, node in nodes.items() if "broker" in node["roles"]
    }  # fenced ones may hold replicas
    if assignments:
        if num_partitions != -1 or replication_factor != -1:
            return errors.INVALID_REQUEST, (
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time."
            )
        # The request handler validated the assignment (ReplicationControlManager's checks) before calling here.
        replicas_by_partition = [list(broker_ids) for _index, broker_ids in sorted(assignments)]
    else:
        if num_partitions == -1:
            num_partitions = int(broker_setting(broker, "num.partitions"))
        if num_partitions <= 0:
            return errors.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
        if replication_factor == -1:
            replication_factor = int(broker_setting(broker, "default.replication.factor"))
        if replication_factor <= 0:
            return (
                errors.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if replication_factor > len(live):
            return errors.INVALID_REPLICATION_FACTOR, (
                f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
                f"{replication_factor} cannot be reached because only {len(live)} broker(s) are registered or some "
                "brokers have all their log directories cordoned."
            )
        replicas_by_partition = _assign(live, num_partitions, replication_factor, name)
    for key, value in configs.items():
        problem = kafka_configs.validate_topic_config(key, value)
        if problem:
            return errors.INVALID_CONFIG, problem

    def change(state):
        if name in state["topics"]:
            return errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
        colliding = [t for t in state["topics"] if t.replace(".", "_") == name.replace(".", "_")]
        if colliding:
            return errors.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {colliding[0]}"
        created = now_ms()
        record = {
            "id": str(uuid.uuid4()),
            "configs": dict(configs),
            "created_ms": created,
            "partitions": [
                {"replicas": replicas, "dirs": dirs, "created_ms": created, "leader": -1, "leader_epoch": 0}
                for replicas, dirs in zip(
                    replicas_by_partition, _choose_dirs(state, registered, replicas_by_partition), strict=True
                )
            ],
        }
        if not validate_only:
            state["topics"][name] = record
        return errors.NONE, record

    return broker.state.update(change)
