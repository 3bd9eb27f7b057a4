"""Real traffic against a test cluster: producers that measure what the broker accepted and the throttle it asked for,
ACLs for the users they run as, and the brokers' own metrics as the Prometheus JMX exporter serves them."""

import re
import time
import urllib.request

from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kafka_testbed.client_config import confluent_config

# One small batch in flight: a throttled producer's first response mutes its connection, so what it gets through
# afterwards is what the quota allows, not what was already on the wire.
PRODUCER_SETTINGS = {
    "linger.ms": 2,
    "batch.size": 16384,
    "max.in.flight.requests.per.connection": 1,
    "acks": "all",
    "enable.idempotence": False,
}
_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][\w:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)$")


def admin(cluster):
    return AdminClient(confluent_config(cluster))


def create_topic(cluster, name, replicas_on):
    """A one-partition topic whose only replica sits on broker ``replicas_on``."""
    client = admin(cluster)  # kept referenced until the result: a collected client cancels its requests
    client.create_topics([NewTopic(name, num_partitions=1, replica_assignment=[[replicas_on]])])[name].result(30)


def allow_all_on_topic(cluster, topic, *users):
    bindings = [
        AclBinding(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            f"User:{user}",
            "*",
            AclOperation.ALL,
            AclPermissionType.ALLOW,
        )
        for user in users
    ]
    client = admin(cluster)
    for future in client.create_acls(bindings).values():
        future.result(30)


class Measured:
    """What one producer got through: acknowledged bytes, elapsed seconds and the throttle times brokers reported."""

    def __init__(self):
        self.acked = 0
        self.elapsed = 0.0
        self.throttles_ms = []
        self.throttled_at = []
        self.acked_at = []

    @property
    def rate(self):
        return self.acked / self.elapsed if self.elapsed else 0.0

    def rate_after_first_throttle(self):
        """Acknowledged bytes per second from the first throttled response to the end (0 if never throttled)."""
        if not self.throttled_at:
            return 0.0
        start = self.throttled_at[0]
        return sum(size for at, size in self.acked_at if at > start) / max(self.elapsed - start, 1e-3)

    def rate_between(self, start, end):
        """Acknowledged bytes per second between ``start`` and ``end`` seconds after the producer began."""
        return sum(size for at, size in self.acked_at if start <= at < end) / (end - start)


def produce(
    cluster,
    topic,
    *,
    seconds,
    user=None,
    password=None,
    offered_rate=None,
    max_bytes=None,
    message_size=8192,
    stop=None,
    **settings,
):
    """Produce for ``seconds`` (at ``offered_rate`` bytes/s if given, else as fast as the broker takes it, up to
    ``max_bytes``; ``stop``, a threading.Event, ends it sooner once set) and return what was acknowledged. Messages
    still queued at the end are dropped, not counted."""
    config = dict(PRODUCER_SETTINGS, **settings)
    if user:
        config.update({"sasl.username": user, "sasl.password": password})
    measured = Measured()
    start = time.monotonic()

    def throttled(event):
        measured.throttles_ms.append(event.throttle_time * 1000)
        measured.throttled_at.append(time.monotonic() - start)

    config["throttle_cb"] = throttled
    producer = Producer(confluent_config(cluster, **config))
    payload = b"x" * message_size

    def delivered(error, message):
        if error is None:
            measured.acked += len(message.value())
            measured.acked_at.append((time.monotonic() - start, len(message.value())))

    offered = 0
    while (
        time.monotonic() - start < seconds
        and (max_bytes is None or measured.acked < max_bytes)
        and not (stop is not None and stop.is_set())
    ):
        elapsed = time.monotonic() - start
        if (offered_rate is None or offered < offered_rate * elapsed) and (max_bytes is None or offered < max_bytes):
            try:
                producer.produce(topic, payload, on_delivery=delivered)
                offered += len(payload)
            except BufferError:
                pass
        producer.poll(0.001)
    measured.elapsed = time.monotonic() - start
    producer.purge()
    producer.flush(5)
    return measured


def metrics(entry):
    """The node's exported metrics: {(name, frozenset(labels)): value}."""
    with urllib.request.urlopen(entry["metrics_url"], timeout=10) as response:
        text = response.read().decode("utf-8")
    samples = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match or line.startswith("#"):
            continue
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group("labels") or ""))
        samples[(match.group("name"), labels)] = float(match.group("value"))
    return samples


def metric(entry, sample, **labels):
    """The value of the first sample named ``sample`` whose labels include ``labels``, or None."""
    wanted = set(labels.items())
    for (sample_name, sample_labels), value in metrics(entry).items():
        if sample_name == sample and wanted <= sample_labels:
            return value
    return None


def plugin_gauge(entry, kind, name):
    """A Strimzi quota plugin gauge such as ``plugin_gauge(entry, "ThrottleFactor", "LimitViolated")``."""
    for suffix in ("Value", "Count"):
        value = metric(entry, f"io_strimzi_kafka_quotas_{kind}_{suffix}", name=name)
        if value is not None:
            return value
    return None


def log_since(log_file, offset):
    """What a node logged from ``offset`` (bytes) of its log on."""
    with open(log_file, "rb") as handle:
        handle.seek(offset)
        return handle.read().decode("utf-8", "replace")


def completed_plugin_checks(log_file, offset):
    """The volume checks the Strimzi quota plugin completed (it logs a line for each) since ``offset`` of the broker's
    log."""
    return log_since(log_file, offset).count("Updated cluster volume usage")


def assert_rate_near(measured, quota, who, offered=2, tolerance=0.2):
    """A producer that offered ``offered`` times ``quota`` got ``quota`` through, within ``tolerance``, and the broker
    reported throttle time."""
    achieved = measured.rate
    print(
        f"{who}: quota {quota} B/s, offered {offered * quota} B/s, achieved {achieved:.0f} B/s "
        f"({achieved / quota:.3f} of the quota) over {measured.elapsed:.1f} s; "
        f"{len(measured.throttles_ms)} throttled responses, up to {max(measured.throttles_ms, default=0):.0f} ms"
    )
    assert abs(achieved - quota) <= tolerance * quota, (
        f"{who}: achieved {achieved:.0f} B/s, expected {quota} B/s +-{tolerance:.0%}"
    )
    assert measured.throttles_ms, f"{who}: the broker reported throttle time (it offered more than its quota)"


def assert_at_floor(measured, who, message_size=8192):
    """Held at 1 byte/s: the first batch is appended, and its response asks the producer to wait about its size in
    seconds (Kafka's throttle time is (rate - quota) / quota x window, i.e. bytes over the quota / quota)."""
    throttle_ms = max(measured.throttles_ms, default=0)
    implied_quota = measured.acked * 1000 / throttle_ms if throttle_ms else float("inf")
    print(
        f"{who}: {measured.acked} bytes acknowledged in {measured.elapsed:.1f} s, throttle {throttle_ms:.0f} ms "
        f"(a quota of {implied_quota:.2f} B/s)"
    )
    assert measured.acked <= 2 * message_size, (
        f"{who}: nothing beyond the first batch gets through ({measured.acked} bytes)"
    )
    assert throttle_ms > 1000 * 1000, f"{who}: the broker asks for a throttle of hours, not {throttle_ms:.0f} ms"
    assert implied_quota <= 2, (
        f"{who}: the throttle time says the quota is {implied_quota:.2f} B/s, not the floor of 1 B/s"
    )


def wait_until(condition, timeout, interval=0.2, what="condition"):
    """Poll ``condition`` until it returns a true value; that value, or AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(interval)
