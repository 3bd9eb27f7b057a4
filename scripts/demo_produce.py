"""Write some data into the demo cluster so its log dirs differ in used space."""

import json
import sys

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def main(cluster_file, megabytes=6):
    with open(cluster_file, encoding="utf-8") as handle:
        bootstrap = json.load(handle)["bootstrap_servers"]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("demo-events", num_partitions=3, replication_factor=2)]).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    value = json.dumps({"payload": "x" * 1000})
    for index in range(megabytes * 1000):
        producer.produce("demo-events", key=str(index), value=value, partition=index % 3 if index % 5 else 0)
        if index % 1000 == 0:
            producer.poll(0)
    if producer.flush(30):
        raise SystemExit("demo: not every record was acknowledged")
    print(
        f"produced {megabytes * 1000} records of ~1 KiB to demo-events "
        "(3 partitions, 2 replicas, partition 0 gets more)"
    )


if __name__ == "__main__":
    main(sys.argv[1])
