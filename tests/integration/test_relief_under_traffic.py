"""Relief under traffic on real brokers with the real Strimzi quota plugin loaded: moving data keeps producers writing.

Three brokers with two log dirs each, every log dir a 64 MiB volume of its own; the plugin on every broker throttles
at 8 MiB free per volume and checks every 2 seconds. A topic's replicas on broker 2 all sit in its first log dir, and a
producer fills it past the relief threshold (24 MiB free) at a steady rate. log_dir_relief moves them into the broker's
second log dir under Kafka's log dir throttle (8 MiB/s), puts the throttle back, and brings the first back to its target
(40 MiB free). Meanwhile:

- the traffic witness (acks=all, idempotent, its own topic of 3 replicas) loses no acknowledged record;
- the plugin's ThrottleFactor, read on every broker's JMX exporter every half second, never leaves 1;
- the filling producer's rate, over every 5 s window of the relief, never drops below half its rate before.
"""

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from ansible_run import run_module
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from ansible_collections.headroom.kafka.plugins.module_utils import quota_plugin_spec
from kafka_testbed.client_config import confluent_config
from kafka_testbed.testing import ClusterFactory, base_port_for, skip_without_own_volumes
from kafka_testbed.traffic import plugin_gauge, produce, wait_until
from kafka_testbed.witness import Witness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETUP = os.path.join(ROOT, "tests", "integration", "targets", "log_dir_relief", "files", "relief_setup.py")
MIB = 1 << 20
LIMIT = 8 * MIB  # the plugin's min.available.bytes per volume
RELIEVE_AT = 24 * MIB
RELIEVE_TO = 40 * MIB
# The filling producer's steady rate, bytes per second, for PRODUCING seconds: longer than the relief takes, and what it
# writes after the move (into the second log dir, beside the moved replica) stays far from the plugin's limit there.
OFFERED = MIB // 2
PRODUCING = 50
# A rate is the bytes acknowledged in 5 s, in windows a second apart: long enough that the producer's own batches do
# not read as dips (at 1 MiB/s of 16 KiB records, a 2 s window sees a one-second pause at the replica's swap as half).
WINDOW = 5.0
TOPIC = "jbod-fill"
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


def setup(*args):
    done = subprocess.run(
        [sys.executable, SETUP, *map(str, args)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def free_bytes(path):
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


@pytest.fixture(scope="module")
def plugin_jbod(kafka_cluster_root):
    """The cluster, the plugin written into every broker's properties and each broker restarted once with it (its
    admin client needs the bootstrap servers, known once the ports are)."""
    factory = ClusterFactory(kafka_cluster_root, engine="kafka")
    try:
        base = base_port_for(3, engine="kafka")
        cluster = factory(
            3,
            base_port=base,
            log_dirs_per_broker=2,
            volume_size="64M",
            # The moved replica's old files go 1 s after the move (Kafka's default is 60 s).
            extra_properties={"log.segment.delete.delay.ms": 1000},
        )
        skip_without_own_volumes(cluster)
        plugin = quota_plugin_spec.quota_plugin_properties(
            {
                "type": "strimzi",
                "producer_byte_rate": 1 << 30,  # far above any rate here: at factor 1 nothing is throttled
                "min_available_bytes_per_volume": LIMIT,
                "check_interval": 2,
            },
            admin={"bootstrap_servers": cluster.info["bootstrap_servers"]},
        )
        for entry in cluster.broker_nodes:
            with open(entry["properties"], "a", encoding="utf-8") as handle:
                handle.writelines(f"{key}={value}\n" for key, value in plugin.items())
            cluster.restart(entry["id"])
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


def test_relief_inside_a_broker_keeps_every_producer_writing_and_the_plugin_at_factor_1(plugin_jbod, tmp_path):
    cluster = plugin_jbod
    first, second = sorted(next(b for b in cluster.info["brokers"] if b["id"] == 2)["log_dirs"])
    # The replica to move holds 20 MiB, more than relieve_to asks back; the rest of the volume is a filler file.
    setup("place", cluster.info["bootstrap_servers"], TOPIC, 2, first, 20)
    # 3 MiB above relieve_at: the producer takes it past in seconds, after a steady start.
    setup("leave", first, (RELIEVE_AT >> 20) + 3)
    watch = FactorWatch(cluster)
    watch.start()
    measured = {}
    filler = threading.Thread(
        target=lambda: measured.update(
            fill=produce(cluster, TOPIC, seconds=PRODUCING, offered_rate=OFFERED, message_size=16384, acks="all")
        ),
        daemon=True,
    )
    try:
        with Witness(confluent_config(cluster)) as witness:
            started = time.monotonic()
            filler.start()
            wait_until(lambda: free_bytes(first) <= RELIEVE_AT, 60, what=f"{first} past relieve_at")
            crossed = time.monotonic() - started
            relief_started = time.monotonic() - started
            result = run_module(
                "log_dir_relief",
                {
                    "bootstrap_servers": cluster.info["bootstrap_servers"].split(","),
                    "relieve_at": {"type": "min_free_bytes", "level": RELIEVE_AT},
                    "relieve_to": {"type": "min_free_bytes", "level": RELIEVE_TO},
                    "limit": {"type": "min_free_bytes", "level": LIMIT},
                    "log_dir_throttle_rate": LOG_DIR_RATE,
                    "timeout": 240,
                    "poll_interval": 0.5,
                },
                str(tmp_path),
            )
            relieved = time.monotonic() - started
            # The producer now writes into the second log dir: the first gets its space back and keeps it.
            try:
                wait_until(lambda: free_bytes(first) >= RELIEVE_TO, 60)
            except AssertionError:
                pytest.fail(
                    f"{first} has {free_bytes(first)} bytes free 60 s after the moves ended, less than relieve_to "
                    f"({RELIEVE_TO}): {os.listdir(first)}; relief: moves {result['moves']}, verified "
                    f"{result.get('verified')}, plan {result.get('plan')}"
                )
            filler.join(120)
    finally:
        watch.done.set()
        watch.join(10)
    report = witness.report
    fill = measured["fill"]
    moves = [
        (m["topic"], m["partition"], m["from_broker"], m["from_log_dir"], m["to_log_dir"]) for m in result["moves"]
    ]
    print(
        f"crossed relieve_at after {crossed:.1f} s; relief ran {relief_started:.1f}-{relieved:.1f} s; moves {moves}; "
        f"fill rate {fill.rate_between(1, crossed) / MIB:.2f} MiB/s before"
    )
    assert result["changed"] and (TOPIC, 0, 2, first, second) in moves, result
    assert all(m["to_broker"] == m["from_broker"] for m in result["moves"]), "moves stay inside their broker"
    assert [m["state"] for m in result["verified"]] == ["done"] * len(result["moves"])
    assert result["throttles_before"]["brokers"] == {"2": {LOG_DIR_RATE_KEY: None}}, result["throttles_before"]
    assert broker_config(cluster, 2, LOG_DIR_RATE_KEY) is None, "the log dir throttle is gone again"
    assert report.missing == [] and report.acknowledged > 0, report.as_dict()
    factors = {factor for _broker, factor in watch.readings}
    assert factors == {1.0}, f"the plugin's ThrottleFactor left 1: {sorted(factors, key=str)}; least free {watch.free}"
    assert min(watch.free.values()) > LIMIT, watch.free
    assert {broker for broker, _factor in watch.readings} == {1, 2, 3}
    before = fill.rate_between(1, crossed)  # after the producer's first second (connecting)
    assert before >= 0.8 * OFFERED, f"the producer got {before:.0f} B/s before relief, offered {OFFERED}"
    assert relieved + 1 < fill.elapsed, f"the producer stopped at {fill.elapsed:.1f} s, before the relief ended"
    windows = [
        (start, fill.rate_between(start, start + WINDOW))
        for start in [relief_started + i for i in range(max(int(relieved - relief_started - WINDOW) + 1, 1))]
    ]
    slowest = min(windows, key=lambda item: item[1], default=(None, before))
    stall = report.longest_stall_in(started + relief_started, started + relieved)
    print(
        f"slowest 5 s window {slowest[1] / MIB:.2f} MiB/s at {slowest[0]:.1f} s; witness's longest stall {stall:.2f} s"
    )
    assert slowest[1] >= before / 2, (
        f"the producer fell to {slowest[1]:.0f} B/s at {slowest[0]:.1f} s (before {before:.0f})"
    )
