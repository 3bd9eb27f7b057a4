"""Alert latency against throttle latency: from a volume crossing the quota plugin's limit, how long until a producer
is throttled and how long until Prometheus fires KafkaLogDirAtLimit, measured side by side on the same crossing.

Run from the repository root (see bench/README.md)::

    .venv/bin/python bench/alert_latency_bench.py [--trials N] [--check-interval S] [--scrape-interval S]

Real Apache Kafka (2 brokers, a controller), the real Strimzi plugin on both brokers with the block site.yml writes
(``min.available.bytes`` 32 MiB per volume, ``storage.check-interval`` as given), every node's JMX exporter serving
the jmx_exporter role's rules, and a real Prometheus scraping the exporters and evaluating the rules the
prometheus_rules role installs, both every ``--scrape-interval``. One trial: broker 2's volume sits 8 MiB above the
limit, a producer offers half the plugin's rate to broker 1 (never throttled), then at a random point of the check
period (T0) a 16 MiB file takes the volume 8 MiB below the limit. Measured from T0: the first produce response that
carries a throttle time (the producer's own callback), and the first time Prometheus' alerts API lists the alert as
firing (polled every 100 ms). Then the file is deleted and the next trial waits until the alert resolved.
"""

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

import yaml
from bench_io import load_quota_plugin, plugin_spec
from disk_guard_reaction_bench import MIB, BenchError, SideProducer, pump_until, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# pylint: disable=wrong-import-position
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from ansible_collections.headroom.kafka.plugins.module_utils import alert_rules  # noqa: E402
from kafka_testbed.client_config import confluent_config  # noqa: E402
from kafka_testbed.cluster import Cluster  # noqa: E402
from kafka_testbed.log_dir_probe import fill_volume  # noqa: E402
from kafka_testbed.prometheus import PrometheusServer  # noqa: E402
from kafka_testbed.testing import base_port_for  # noqa: E402

# pylint: enable=wrong-import-position

BASE_RATE = 256 << 10
LIMIT = 32 * MIB
MARGIN = 8 * MIB
TOPIC = "alert-latency"
FILLED_BROKER = 2
CLUSTER = "bench"
ROLE_EXPORTER_RULES = os.path.join(ROOT, "roles", "jmx_exporter", "files", "jmx-exporter.yml")


def start_cluster(workdir, check_interval):
    cluster = Cluster(os.path.join(workdir, "cluster"), "kafka")
    cluster.create(2, base_port=base_port_for(2, engine="kafka"), volume_size="128M")
    spec = plugin_spec(BASE_RATE, LIMIT, check_interval)
    load_quota_plugin(cluster, spec)
    shutil.copyfile(ROLE_EXPORTER_RULES, cluster.info["exporter_config"])
    cluster.up(180)
    client = AdminClient(confluent_config(cluster, log_level=4))
    client.create_topics([NewTopic(TOPIC, num_partitions=1, replica_assignment=[[1]])])[TOPIC].result(30)
    return cluster, spec


def rules_file(workdir, cluster, spec):
    exporters = {entry["id"]: entry["metrics_url"].split("/")[2] for entry in cluster.info["brokers"]}
    path = os.path.join(workdir, "rules.yml")
    rendered = alert_rules.render(
        {
            "cluster": CLUSTER,
            "kafka_quotas": spec,
            "brokers": [{"broker_id": e["id"], "instance": exporters[e["id"]]} for e in cluster.broker_nodes],
        }
    )
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(rendered, handle)
    return path, sorted(exporters.values())


def firing(prometheus):
    return any(alert["labels"]["alertname"] == "KafkaLogDirAtLimit" for alert in prometheus.alerts("firing"))


def trial(cluster, prometheus, check_interval, rng):
    volume = cluster.broker(FILLED_BROKER)["log_dirs"][0]
    trigger = os.path.join(volume, "trigger.bin")
    filler = os.path.join(volume, "filler.bin")
    for path in (trigger, filler):
        if os.path.exists(path):
            os.remove(path)
    fill_volume(volume, leave=LIMIT + MARGIN)
    wait_for(lambda: not firing(prometheus), 120, "the alert resolved before the trial")
    wait_for(
        lambda: prometheus.query("min(strimzi_quotas_throttle_factor) == 1"), 120, "every broker's factor back at 1"
    )
    producer = SideProducer(cluster, "plugin", TOPIC, 1)
    try:
        warmup = 2.0 + rng.uniform(0, check_interval)
        pump_until([producer], lambda: False, warmup)
        if producer.first_throttled is not None:
            raise BenchError("the producer was throttled before the volume crossed the limit")
        crossed = {}

        def cross():
            with open(trigger, "wb") as handle:
                handle.write(b"\0" * (2 * MARGIN))
            crossed["at"] = time.time()

        alert = {}
        last_poll = [0.0]

        def both_seen():
            now = time.time()
            if "at" not in alert and now - last_poll[0] >= 0.1:
                last_poll[0] = now
                if firing(prometheus):
                    alert["at"] = now
            return producer.first_throttled is not None and "at" in alert

        if not pump_until([producer], both_seen, 6 * check_interval + 60, action=(time.time(), cross)):
            raise BenchError(
                f"not both seen: producer throttled {producer.first_throttled is not None}, alert {'at' in alert}"
            )
        return producer.first_throttled - crossed["at"], alert["at"] - crossed["at"]
    finally:
        producer.close()
        if os.path.exists(trigger):
            os.remove(trigger)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--check-interval", type=int, default=5, help="the plugin's storage.check-interval, seconds")
    parser.add_argument("--scrape-interval", type=int, default=5, help="Prometheus' scrape and evaluation interval")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-alert-latency-")
    rng = random.Random(args.seed)
    cluster = None
    results = []
    try:
        cluster, spec = start_cluster(workdir, args.check_interval)
        rules, targets = rules_file(workdir, cluster, spec)
        with PrometheusServer({"kafka": targets}, [rules], interval=f"{args.scrape_interval}s") as prometheus:
            wait_for(lambda: prometheus.targets_up().get("kafka") == len(targets), 60, "every exporter scraped")
            for number in range(args.trials):
                throttled, alerted = trial(cluster, prometheus, args.check_interval, rng)
                results.append((throttled, alerted))
                print(
                    f"trial {number + 1}: producer throttled {throttled:.2f} s, alert firing {alerted:.2f} s",
                    file=sys.stderr,
                )
    finally:
        if cluster is not None:
            cluster.down()
        shutil.rmtree(workdir, ignore_errors=True)
    throttled = [t for t, _a in results]
    alerted = [a for _t, a in results]
    lag = [a - t for t, a in results]
    print(
        f"trials: {len(results)}; plugin check interval {args.check_interval} s; Prometheus scrape and evaluation "
        f"every {args.scrape_interval} s; cores: {os.cpu_count()}"
    )
    print(f"{'from the crossing (s)':<34} {'median':>8} {'mean':>8} {'max':>8}")
    for name, values in (
        ("to a producer throttled", throttled),
        ("to KafkaLogDirAtLimit firing", alerted),
        ("alert after the throttle", lag),
    ):
        print(f"{name:<34} {statistics.median(values):>8.2f} {statistics.fmean(values):>8.2f} {max(values):>8.2f}")


if __name__ == "__main__":
    main()
