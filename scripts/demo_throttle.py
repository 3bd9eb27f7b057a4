"""The demo's story on the real cluster: a volume fills, volume_limits says PAUSE, the real Strimzi plugin throttles a
real producer, the volume is freed and traffic resumes. Usage: demo_throttle.py CLUSTER_JSON MIN_AVAILABLE_RATIO"""

import json
import os
import subprocess
import sys
import time

from kafka_testbed.cluster import Cluster
from kafka_testbed.log_dir_probe import fill_volume
from kafka_testbed.traffic import create_topic, metric, plugin_gauge, produce, wait_until

TOPIC = "demo-throttle"
QUOTA_WINDOW_S = 11


def volume_limits(cluster, ratio):
    """headroom.kafka.volume_limits as an ad-hoc task, the way an operator would ask."""
    args = f"bootstrap_servers={cluster.info['bootstrap_servers']} min_available_ratio={ratio}"
    command = [
        os.path.join(os.path.dirname(sys.executable), "ansible"),
        "localhost",
        "-c",
        "local",
        "-o",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-m",
        "headroom.kafka.volume_limits",
        "-a",
        args,
    ]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(output.split("=>", 1)[1])


def show_rate(label, measured):
    throttle = (
        f", throttled up to {max(measured.throttles_ms) / 1000:.0f} s" if measured.throttles_ms else ", never throttled"
    )
    print(f"   {label}: {measured.rate / 1024:8.1f} KiB/s accepted{throttle}")


def throttle_factor(cluster, entry):
    """The plugin's throttle factor as the broker's exporter serves it: under the jmx_exporter role's rules on test
    hosts, as the agent names the MBean on the local test cluster."""
    if cluster.engine == "hosts":
        return metric(entry, "strimzi_quotas_throttle_factor")
    return plugin_gauge(entry, "ThrottleFactor", "ThrottleFactor")


def fill(cluster, entry, ratio):
    """Fill the broker's first data volume to half the limit's free space; returns what frees it again."""
    if cluster.engine == "hosts":
        blocks, block_size = map(
            int, cluster.exec(entry["id"], "stat", "-f", "-c", "%b %S", entry["log_dirs"][0]).split()
        )
        cluster.fill_volume(entry["id"], leave_bytes=int(blocks * block_size * ratio / 2))
        return lambda: cluster.free_volume(entry["id"])
    stat = os.statvfs(entry["log_dirs"][0])
    filler = fill_volume(entry["log_dirs"][0], leave=int(stat.f_blocks * stat.f_frsize * ratio / 2))
    return lambda: os.remove(filler)


def main(cluster_file, ratio):
    cluster = Cluster(os.path.dirname(cluster_file))
    brokers = cluster.broker_nodes
    observer, victim = brokers[0], brokers[-1]
    create_topic(cluster, TOPIC, replicas_on=observer["id"])
    print(
        f"== the real plugin at work: broker {victim['id']}'s volume fills "
        f"while a producer writes to broker {observer['id']}"
    )
    show_rate("producer before", produce(cluster, TOPIC, seconds=3, max_bytes=2 << 20))
    log_dir = victim["log_dirs"][0]
    free = fill(cluster, victim, ratio)
    started = time.monotonic()
    try:
        wait_until(lambda: throttle_factor(cluster, observer) == 0.0, 60, what="the throttle")
        print(
            f"   {log_dir} filled: the plugin's throttle factor fell to 0 after {time.monotonic() - started:.1f} s "
            f"(broker {observer['id']}'s metrics at {observer['metrics_url']})"
        )
        limits = volume_limits(cluster, ratio)
        print(
            f"   volume_limits: state {limits['state']}, factor {limits['throttle_factor']}, "
            f"violations {[(v['broker_id'], v['log_dir']) for v in limits['violations']]}"
        )
        show_rate("producer while full", produce(cluster, TOPIC, seconds=4))
    finally:
        free()
    freed = time.monotonic()
    wait_until(lambda: throttle_factor(cluster, observer) == 1.0, 60, what="the throttle lifting")
    print(f"   filler deleted: the throttle lifted after {time.monotonic() - freed:.1f} s")
    # Kafka judges a client's rate over its quota window (11 one-second samples): what it sent while throttled
    # still counts until those samples roll over.
    time.sleep(QUOTA_WINDOW_S)
    show_rate(
        f"producer after ({QUOTA_WINDOW_S} s, a quota window, later)",
        produce(cluster, TOPIC, seconds=3, max_bytes=2 << 20),
    )


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
