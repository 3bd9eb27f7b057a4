"""Taking a real broker's log dir offline the way a full disk does: fill its volume, then make the broker write
there."""

import errno
import os
import time

from kafka_testbed.client_config import kafka_python_config
from kafka_testbed.nodes import ClusterError


def fill_volume(path, leave=0):
    """Write a filler file until the filesystem at ``path`` has at most ``leave`` bytes available to the broker."""
    filler = os.path.join(path, "filler.bin")
    stat = os.statvfs(path)
    available = stat.f_bavail * stat.f_frsize
    chunk = b"\0" * (1 << 20)
    try:
        with open(filler, "ab") as handle:
            remaining = available - leave
            while remaining > 0:
                written = handle.write(chunk[: min(len(chunk), remaining)])
                remaining -= written
                handle.flush()
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        # Full already, or filled before ``leave`` was reached: either way there is no room left to write.
    return filler


class LogDirProbe:
    """A one-partition topic on one broker, placed in a chosen log dir, to make that dir's next write happen now."""

    def __init__(self, cluster, broker_id, topic):
        from kafka import KafkaAdminClient  # pylint: disable=import-outside-toplevel  # only the real engine needs it

        self.cluster = cluster
        self.broker_id = broker_id
        self.topic = topic
        self.admin = KafkaAdminClient(**kafka_python_config(cluster, request_timeout_ms=10000))

    def place(self, path, timeout):
        from kafka.admin import NewTopic  # pylint: disable=import-outside-toplevel
        from kafka.errors import TopicAlreadyExistsError  # pylint: disable=import-outside-toplevel

        try:
            self.admin.create_topics([NewTopic(self.topic, replica_assignments={0: [self.broker_id]})])
        except TopicAlreadyExistsError:
            pass
        deadline = time.monotonic() + timeout
        while self._dir_of_partition() != path:
            if time.monotonic() > deadline:
                raise ClusterError(f"could not place a probe partition in {path} on broker {self.broker_id}")
            self.admin.alter_replica_log_dirs({(self.topic, 0, self.broker_id): path})
            time.sleep(0.2)

    def _describe(self):
        return self.admin.describe_log_dirs(brokers=[self.broker_id])

    def _dir_of_partition(self):
        for result in self._describe():
            for log_dir in result.get("log_dirs", result.get("results", [])):
                for topic in log_dir.get("topics", []):
                    if topic.get("name") == self.topic and topic.get("partitions"):
                        return log_dir.get("log_dir")
        return None

    def write(self):
        from confluent_kafka import Producer  # pylint: disable=import-outside-toplevel

        from kafka_testbed.client_config import confluent_config  # pylint: disable=import-outside-toplevel

        producer = Producer(confluent_config(self.cluster, **{"message.timeout.ms": 5000, "acks": "all"}))
        producer.produce(self.topic, b"x" * 65536, partition=0)
        producer.flush(10)

    def offline(self, path):
        try:
            results = self._describe()
        except Exception:  # pylint: disable=broad-except  # a halted broker answers nothing: its last dir failed
            return True
        for result in results:
            for log_dir in result.get("log_dirs", result.get("results", [])):
                if log_dir.get("log_dir") == path:
                    return log_dir.get("error_code", 0) != 0
        return not results
