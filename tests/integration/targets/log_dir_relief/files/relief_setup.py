"""What the log_dir_relief target sets up beside the module, as an operator or another tool would.

Usage:
  relief_setup.py place BOOTSTRAP TOPIC BROKERS LOG_DIR MIB   a one-partition topic on BROKERS (comma-separated), the
                                                              first one's replica sent to LOG_DIR (the play waits for
                                                              it there), then MIB MiB written
  relief_setup.py fill PATH MIB                               a filler file of MIB MiB on PATH's volume
  relief_setup.py leave PATH MIB                              a filler file that leaves MIB MiB free on PATH's volume
  relief_setup.py configs BOOTSTRAP TOPIC                     the throttle configs set on the topic and every broker
  relief_setup.py foreign BOOTSTRAP TOPIC BROKERS RATE        a slow reassignment of TOPIC-0 to BROKERS, under a
                                                              throttle of RATE bytes/s, started by "someone else"
  relief_setup.py cancel BOOTSTRAP TOPIC                      cancel TOPIC-0's reassignment and remove the throttle
Prints JSON.
"""

import json
import os
import sys
import time

from confluent_kafka import Producer
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, NewTopic

TOPIC_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
BROKER_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
CHUNK = 256 * 1024
MIB = 1 << 20


def admin(bootstrap):
    return KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=30000)


def brokers_of(client):
    return sorted(b["broker_id"] for b in client.describe_cluster()["brokers"])


def place(bootstrap, topic, brokers, log_dir, mib):
    client = admin(bootstrap)
    replicas = [int(b) for b in brokers.split(",")]
    client.create_topics([NewTopic(topic, replica_assignments={0: replicas})])
    deadline = time.monotonic() + 60
    while True:  # the replica exists once the broker has the partition: until then the move is refused
        errors = client.alter_replica_log_dirs({(topic, 0, replicas[0]): log_dir})
        refused = [str(error) for error in errors.values() if getattr(error, "errno", 0)]
        if not refused:
            break
        if time.monotonic() > deadline:
            raise SystemExit("could not move {0}-0 to {1}: {2}".format(topic, log_dir, refused))
        time.sleep(0.5)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": "none", "linger.ms": 5})
    sent, total = 0, mib * MIB
    while sent < total:
        producer.produce(topic, value=os.urandom(CHUNK))
        producer.poll(0)
        sent += CHUNK
    left = producer.flush(60)
    return {"topic": topic, "replicas": replicas, "log_dir": log_dir, "bytes": sent, "unacknowledged": left}


def _filler(path, size):
    """Append ``size`` bytes to the volume's filler file."""
    with open(os.path.join(path, "filler.bin"), "ab") as handle:
        while size > 0:
            size -= handle.write(b"\0" * min(size, MIB))


def fill(path, mib):
    _filler(path, mib * MIB)
    return {"path": path, "mib": mib}


def leave(path, mib):
    stat = os.statvfs(path)
    _filler(path, stat.f_bavail * stat.f_frsize - mib * MIB)
    return {"path": path, "free_mib": mib}


def configs(bootstrap, topic):
    client = admin(bootstrap)
    resources = [ConfigResource(ConfigResourceType.TOPIC, topic, {k: None for k in TOPIC_KEYS})]
    resources += [
        ConfigResource(ConfigResourceType.BROKER, str(b), {k: None for k in BROKER_KEYS}) for b in brokers_of(client)
    ]
    described = client.describe_configs(resources, config_filter="all")
    dynamic = ("DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG")
    return {
        kind: {
            name: {key: value["value"] for key, value in values.items() if value.get("config_source") in dynamic}
            for name, values in described.get(kind, {}).items()
        }
        for kind in ("topic", "broker")
    }


def foreign(bootstrap, topic, brokers, rate):
    client = admin(bootstrap)
    resources = [ConfigResource(ConfigResourceType.TOPIC, topic, {k: "*" for k in TOPIC_KEYS})]
    resources += [
        ConfigResource(ConfigResourceType.BROKER, str(b), {k: rate for k in BROKER_KEYS}) for b in brokers_of(client)
    ]
    client.alter_configs(resources, incremental=True, raise_on_unknown=False)
    target = [int(b) for b in brokers.split(",")]
    return {"started": str(client.alter_partition_reassignments({TopicPartition(topic, 0): target}))}


def cancel(bootstrap, topic):
    client = admin(bootstrap)
    client.alter_partition_reassignments({TopicPartition(topic, 0): None})
    delete = (AlterConfigOp.DELETE, None)
    resources = [ConfigResource(ConfigResourceType.TOPIC, topic, {k: delete for k in TOPIC_KEYS})]
    resources += [
        ConfigResource(ConfigResourceType.BROKER, str(b), {k: delete for k in BROKER_KEYS}) for b in brokers_of(client)
    ]
    client.alter_configs(resources, incremental=True, raise_on_unknown=False)
    return {"cancelled": topic}


COMMANDS = {"place": place, "fill": fill, "leave": leave, "configs": configs, "foreign": foreign, "cancel": cancel}

if __name__ == "__main__":
    command, arguments = COMMANDS[sys.argv[1]], sys.argv[2:]
    arguments = [int(a) if a.isdigit() and command in (fill, leave) else a for a in arguments]
    if command is place:
        arguments[-1] = int(arguments[-1])
    print(json.dumps(command(*arguments)))
