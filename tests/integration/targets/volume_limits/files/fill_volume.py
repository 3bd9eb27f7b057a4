"""Fill one broker's log dir for real: a topic whose only replica is on that broker, then incompressible records.

Usage: python fill_volume.py BOOTSTRAP_SERVERS TOPIC BROKER_ID BYTES
Prints a JSON summary; exits non-zero when a record is not acknowledged.
"""

import json
import os
import sys

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

CHUNK = 256 * 1024


def main(bootstrap, topic, broker_id, total):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=1, replica_assignment=[[broker_id]])], operation_timeout=30
    )
    futures[topic].result(timeout=60)
    errors = []

    def delivered(err, msg):
        del msg
        if err is not None:
            errors.append(err.str())

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "compression.type": "none"})
    sent = 0
    while sent < total:
        size = min(CHUNK, total - sent)
        producer.produce(topic, value=os.urandom(size), on_delivery=delivered)
        producer.poll(0)
        sent += size
    left = producer.flush(60)
    print(
        json.dumps(
            {"topic": topic, "broker_id": broker_id, "bytes": sent, "unacknowledged": left, "errors": errors[:5]}
        )
    )
    return 1 if left or errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
