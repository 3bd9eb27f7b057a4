"""Relief under traffic on real brokers with the real Strimzi quota plugin loaded: moving data keeps producers writing.

Three brokers with two log dirs each, every log dir a 64 MiB volume of its own; the plugin on every broker throttles
at 8 MiB free per volume and checks every 2 seconds. A topic's replicas on broker 2 all sit in its first log dir, and a
producer fills it past the relief threshold (24 MiB free) at a steady rate. log_dir_relief moves them into the broker's
second log dir under Kafka's log dir throttle (8 MiB/s), puts the throttle back, and brings the first back to its target
(40 MiB free). Meanwhile:

- the traffic witness (acks=all, idempotent, its own topic of 3 replicas) loses no acknowledged record;
- the plugin's ThrottleFactor, read on every broker's JMX exporter every half second, never leaves 1;
- the filling producer's rate, over every 10 s window of the relief, never drops below half its rate before.
"""

import os
import threading
import time

import pytest
from ansible_run import run_module
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType
from relief_setup_runs import MIB, free_bytes, setup

from kafka_testbed.client_config import confluent_config
from kafka_testbed.testing import ClusterFactory, skip_without_own_volumes, started_with_the_plugin
from kafka_testbed.traffic import plugin_gauge, produce, wait_until
from kafka_testbed.witness import Witness

LIMIT = 8 * MIB  # the plugin's min.available.bytes per volume
RELIEVE_AT = 24 * MIB
RELIEVE_TO = 40 * MIB
# The filling producer's steady rate, bytes per second, for PRODUCING seconds at most: longer than the relief takes, and
# what it writes after the move (into the second log dir, beside the moved replica) stays far from the plugin's limit
# there. It stops once the relieved log dir has its space back and every window the assertions read has ended, with
# AFTER_RELIEF seconds to spare.
OFFERED = MIB // 2
PRODUCING = 120
AFTER_RELIEF = 2.0
# A rate is the bytes acknowledged in 10 s, in windows a second apart: long enough that the producer's own batches do
# not read as dips (at 1 MiB/s of 16 KiB records, a 2 s window sees a one-second pause at the replica's swap as half),
# and that the moved leader's pause (the producer finding the new leader: under 2.5 s on two cores, 3.7 s on one busy
# core) leaves more than half the rate, which a throttle would not (the plugin's factor 0 holds for a check interval
# at least, and the watch asserts the factor stayed 1 besides).
WINDOW = 10.0
TOPIC = "jbod-fill"
ACROSS_TOPIC = "across-fill"
REPLICATION_RATE = 8 * MIB  # the replication throttle of the cross-broker move
# The copy inside broker 2 runs under Kafka's log dir throttle: the producers' writes keep the disk's time.
LOG_DIR_RATE = 8 * MIB


LOG_DIR_RATE_KEY = "replica.alter.log.dirs.io.max.bytes.per.second"


def broker_config(cluster, broker, key):
    """A broker's dynamic config value (None: not set dynamically)."""
    resource = ConfigResource(ResourceType.BROKER, str(broker))
    client = AdminClient(confluent_config(cluster))  # kept referenced until the result: a collected client cancels
    entries = client.describe_configs([resource])[resource].result(30)
    entry = entries.get(key)
    return entry.value if entry is not None and entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value else None


def remove(cluster, topic, *log_dirs):
    """Leave the cluster as the next test needs it: the topic deleted and the filler files gone."""
    client = AdminClient(confluent_config(cluster))  # kept referenced until the result
    client.delete_topics([topic])[topic].result(30)
    for log_dir in log_dirs:
        filler = os.path.join(log_dir, "filler.bin")
        if os.path.exists(filler):
            os.unlink(filler)


@pytest.fixture(scope="module")
def plugin_jbod(kafka_cluster_root):
    """The cluster, every node started with the plugin block the collection renders for site.yml."""
    factory = ClusterFactory(kafka_cluster_root, engine="kafka")
    started = started_with_the_plugin(
        3,
        {
            "type": "strimzi",
            "producer_byte_rate": 1 << 30,  # far above any rate here: at factor 1 nothing is throttled
            "min_available_bytes_per_volume": LIMIT,
            "check_interval": 2,
        },
    )
    # The moved replica's old files go 1 s after the move (Kafka's default is 60 s).
    started["extra_properties"]["log.segment.delete.delay.ms"] = 1000
    try:
        cluster = factory(3, log_dirs_per_broker=2, volume_size="64M", **started)
        skip_without_own_volumes(cluster)
        for entry in cluster.broker_nodes:
            wait_until(
                lambda e=entry: plugin_gauge(e, "VolumeSource", "ActiveLogDirs") == 6,
                60,
                what=f"broker {entry['id']}'s plugin seeing the six log dirs",
            )
        yield cluster
    finally:
        factory.close()


class FactorWatch(threading.Thread):
    """Reads every broker's ThrottleFactor every half second until stopped; keeps each reading."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster, self.readings, self.done = cluster, [], threading.Event()
        self.free = {}  # (broker, log dir) -> the least free bytes seen

    def run(self):
        while not self.done.is_set():
            for entry in self.cluster.broker_nodes:
                try:
                    self.readings.append((entry["id"], plugin_gauge(entry, "ThrottleFactor", "ThrottleFactor")))
                except OSError:
                    self.readings.append((entry["id"], None))
                for log_dir in entry["log_dirs"]:
                    key = (entry["id"], log_dir)
                    self.free[key] = min(self.free.get(key, free_bytes(log_dir)), free_bytes(log_dir))
            self.done.wait(0.5)


class Relief:
    """One relief under traffic: the witness, the factor watch and a producer filling ``log_dir`` through ``topic``
    run from before the log dir passes relieve_at until after the relief ended and its space came back."""

    def __init__(self, cluster, topic, log_dir, tmp_path, **options):
        self.cluster, self.topic, self.log_dir, self.tmp_path, self.options = cluster, topic, log_dir, tmp_path, options
        self.watch = FactorWatch(cluster)
        self.fill = self.result = self.report = None
        self.crossed = self.relieved = 0.0

    def run(self):
        measured = {}
        enough = threading.Event()
        filler = threading.Thread(
            target=lambda: measured.update(
                fill=produce(
                    self.cluster,
                    self.topic,
                    seconds=PRODUCING,
                    offered_rate=OFFERED,
                    message_size=16384,
                    acks="all",
                    stop=enough,
                )
            ),
            daemon=True,
        )
        self.watch.start()
        try:
            with Witness(confluent_config(self.cluster)) as witness:
                started = time.monotonic()
                filler.start()
                wait_until(lambda: free_bytes(self.log_dir) <= RELIEVE_AT, 60, what=f"{self.log_dir} past relieve_at")
                self.crossed = time.monotonic() - started
                self.result = run_module(
                    "log_dir_relief",
                    dict(
                        {
                            "bootstrap_servers": self.cluster.info["bootstrap_servers"].split(","),
                            "relieve_at": {"type": "min_free_bytes", "level": RELIEVE_AT},
                            "relieve_to": {"type": "min_free_bytes", "level": RELIEVE_TO},
                            "limit": {"type": "min_free_bytes", "level": LIMIT},
                            "log_dir_throttle_rate": LOG_DIR_RATE,
                            "timeout": 240,
                            "poll_interval": 0.5,
                        },
                        **self.options,
                    ),
                    str(self.tmp_path),
                )
                self.relieved = time.monotonic() - started
                # The producer now writes elsewhere: the relieved log dir gets its space back and keeps it.
                try:
                    wait_until(lambda: free_bytes(self.log_dir) >= RELIEVE_TO, 60)
                except AssertionError:
                    pytest.fail(
                        f"{self.log_dir} has {free_bytes(self.log_dir)} bytes free 60 s after the moves ended, less "
                        f"than relieve_to ({RELIEVE_TO}): {os.listdir(self.log_dir)}; relief: {self.result}"
                    )
                # Every window the assertions read ends before the producer stops.
                stop_at = started + max(self.relieved + AFTER_RELIEF, self.crossed + WINDOW + AFTER_RELIEF)
                time.sleep(max(0.0, stop_at - time.monotonic()))
                enough.set()
                filler.join(60)
        finally:
            self.watch.done.set()
            self.watch.join(10)
        self.report, self.fill = witness.report, measured["fill"]
        stall = self.report.longest_stall_in(started + self.crossed, started + self.relieved)
        before = self.rate_before()
        slowest = self.slowest_window()
        print(
            f"crossed relieve_at after {self.crossed:.1f} s; relief ran until {self.relieved:.1f} s; moves "
            f"{self.moves()}; producer {before / MIB:.2f} MiB/s before, slowest {WINDOW:.0f} s window "
            f"{slowest[1] / MIB:.2f} MiB/s at {slowest[0]:.1f} s; witness's longest stall {stall:.2f} s"
        )
        return self

    def moves(self):
        return [
            (m["topic"], m["partition"], m["from_broker"], m["from_log_dir"], m["to_broker"], m["to_log_dir"])
            for m in self.result["moves"]
        ]

    def rate_before(self):
        return self.fill.rate_between(1, self.crossed)  # after the producer's first second (connecting)

    def slowest_window(self):
        """(start, bytes per second) of the slowest WINDOW of the relief, in windows a second apart."""
        span = max(int(self.relieved - self.crossed - WINDOW) + 1, 1)
        windows = [
            (start, self.fill.rate_between(start, start + WINDOW)) for start in [self.crossed + i for i in range(span)]
        ]
        return min(windows, key=lambda item: item[1])

    def assert_producers_kept_writing(self):
        """0 acknowledged records lost, every broker's plugin at factor 1 throughout, no volume at the limit, and the
        filling producer above half its rate before in every window of the relief."""
        assert self.report.missing == [] and self.report.acknowledged > 0, self.report.as_dict()
        factors = {factor for _broker, factor in self.watch.readings}
        assert factors == {1.0}, f"the plugin's ThrottleFactor left 1: {sorted(factors, key=str)}; {self.watch.free}"
        assert {broker for broker, _factor in self.watch.readings} == {1, 2, 3}
        assert min(self.watch.free.values()) > LIMIT, self.watch.free
        before = self.rate_before()
        assert before >= 0.8 * OFFERED, f"the producer got {before:.0f} B/s before relief, offered {OFFERED}"
        assert self.relieved + 1 < self.fill.elapsed, (
            f"the producer stopped at {self.fill.elapsed:.1f} s, before the end"
        )
        start, slowest = self.slowest_window()
        assert slowest >= before / 2, f"the producer fell to {slowest:.0f} B/s at {start:.1f} s (before {before:.0f})"


def test_relief_inside_a_broker_keeps_every_producer_writing_and_the_plugin_at_factor_1(plugin_jbod, tmp_path):
    cluster = plugin_jbod
    first, second = sorted(next(b for b in cluster.info["brokers"] if b["id"] == 2)["log_dirs"])
    # The replica to move holds 20 MiB, more than relieve_to asks back; the rest of the volume is a filler file.
    setup("place", cluster.info["bootstrap_servers"], TOPIC, 2, first, 20)
    # 3 MiB above relieve_at: the producer takes it past in seconds, after a steady start.
    setup("leave", first, (RELIEVE_AT >> 20) + 3)
    try:
        relief = Relief(cluster, TOPIC, first, tmp_path).run()
        result = relief.result
        assert result["changed"] and (TOPIC, 0, 2, first, 2, second) in relief.moves(), result
        assert all(m["to_broker"] == m["from_broker"] for m in result["moves"]), "moves stay inside their broker"
        assert [m["state"] for m in result["verified"]] == ["done"] * len(result["moves"])
        assert result["throttles_before"]["brokers"] == {"2": {LOG_DIR_RATE_KEY: None}}, result["throttles_before"]
        assert broker_config(cluster, 2, LOG_DIR_RATE_KEY) is None, "the log dir throttle is gone again"
        relief.assert_producers_kept_writing()
    finally:
        remove(cluster, TOPIC, first)


def test_relief_across_brokers_copies_under_the_replication_throttle_and_keeps_producers_writing(plugin_jbod, tmp_path):
    cluster = plugin_jbod
    first, second = sorted(next(b for b in cluster.info["brokers"] if b["id"] == 3)["log_dirs"])
    # Replicas on brokers 3 and 1; broker 3's replica fills its first log dir, and its second has no room for it.
    setup("place", cluster.info["bootstrap_servers"], ACROSS_TOPIC, "3,1", first, 20)
    setup("leave", first, (RELIEVE_AT >> 20) + 3)
    setup("leave", second, (RELIEVE_AT >> 20) + 8)
    try:
        relief = Relief(cluster, ACROSS_TOPIC, first, tmp_path, throttle_rate=REPLICATION_RATE).run()
        result = relief.result
        assert result["changed"] and [m[:4] for m in relief.moves()] == [(ACROSS_TOPIC, 0, 3, first)], result
        assert result["moves"][0]["kind"] == "broker" and result["moves"][0]["to_broker"] == 2, result["moves"]
        assert [m["state"] for m in result["verified"]] == ["done"]
        # The replication throttle as kafka-reassign-partitions sets it, on every broker involved, and none after.
        throttled = result["throttles_before"]
        assert set(throttled["brokers"]) == {"1", "2", "3"} and set(throttled["topics"]) == {ACROSS_TOPIC}, throttled
        left = setup("configs", cluster.info["bootstrap_servers"], ACROSS_TOPIC)
        assert not any(value for values in left.values() for value in values.values()), left
        relief.assert_producers_kept_writing()
    finally:
        remove(cluster, ACROSS_TOPIC, first, second)
