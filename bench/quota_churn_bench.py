"""The metadata records the disk guard writes while a volume fills slowly between its soft and hard limits: the graded
factor in steps (``throttle_factor_step``, the default 0.05) against the exact factor (step 0), in one run.

Run from the repository root (see bench/README.md)::

    .venv/bin/python bench/quota_churn_bench.py [--entities 1000] [--seconds 60] [--rate 262144] [--span 0.25]
        [--json FILE]

One cluster of real Apache Kafka (KRaft: 3 brokers and a controller, every data log dir a tmpfs volume; mounting needs
root) and a topic of 3 partitions with 3 replicas, so that every volume receives what the writer writes. Two phases,
exact first, then in steps, each ``--seconds`` long:

* the guard (``python -m headroom_guard --config FILE --interval 1``, as the disk_guard role runs it) holds ENTITIES
  declared users, the ``<default>`` user and two excluded principals, policy graded: the soft limit just below the
  least free volume at the phase's start, the hard limit far enough below it that the writer's fill covers ``--span``
  of the distance in the phase (0.25 by default: the factor goes from 1.0 to about 0.75, as in a fill that takes four
  times as long to go from the soft limit to the hard one);
* one writer at ``--rate`` bytes/s fills every volume slowly (a produce quota far above it: the factor never slows it);
* the metadata records the phase wrote are read from Kafka itself: the KRaft metadata log's high watermark
  (DescribeQuorum) at the phase's start and end, less the records an idle cluster writes in as long (the controller's
  no-op records, measured before the phases). Every client quota entity changed is one record.

Reported per phase: the decisions, the decisions that changed the quotas, the entities they changed (the guard's own
lines), the metadata records (measured) and those records per hour; and the ratio exact over steps.
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# pylint: disable=wrong-import-position
from bench_io import finish  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from disk_guard_reaction_bench import GuardProcess, available  # noqa: E402
from race_bench import BROKERS, BenchError, Writer, bench_ports, log  # noqa: E402

from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter  # noqa: E402
from kafka_testbed.client_config import confluent_config  # noqa: E402
from kafka_testbed.cluster import Cluster, parse_size  # noqa: E402
from kafka_testbed.kafka_libs import ensure_libs  # noqa: E402

# pylint: enable=wrong-import-position

TOPIC = "race"  # race_bench's Writer writes to it
DEFAULT_RATE = (
    1 << 30
)  # the <default> user's produce rate at factor 1: never reached, the factor never slows the writer
EXCLUDED = ["User:kafka-broker", "User:cruise-control"]
IDLE_SECONDS = 20.0
ENTITIES_CHANGED = re.compile(r"(\d+) quota entit\S+ changed")


def guard_config(path, bootstrap, entities, soft, hard, step):
    options = {
        "bootstrap_servers": bootstrap.split(","),
        "policy": "graded",
        "soft_limit": {"type": "min_free_bytes", "level": soft},
        "hard_limit": {"type": "min_free_bytes", "level": hard},
        "throttle_factor_step": step,
        "default_producer_byte_rate": DEFAULT_RATE,
        "excluded_principals": EXCLUDED,
        "quotas": [
            {"entity": {"user": f"churn-user-{index:05d}"}, "producer_byte_rate": DEFAULT_RATE + index}
            for index in range(entities)
        ],
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(options, handle)
    return path


class Bench:
    def __init__(self, workdir, settings):
        self.workdir, self.settings = workdir, settings
        self.cluster = self.adapter = None

    def run(self):
        try:
            self._start_cluster()
            idle = self._idle_rate()
            phases = [self._phase("exact", 0.0, idle), self._phase("steps", 0.05, idle)]
            return {"idle_records_per_second": idle, "phases": phases, "settings": vars(self.settings)}
        finally:
            if self.adapter is not None:
                self.adapter.close()
            if self.cluster is not None:
                self.cluster.down()

    def _start_cluster(self):
        directory = os.path.join(self.workdir, "cluster")
        shutil.rmtree(directory, ignore_errors=True)
        self.cluster = Cluster(directory, "kafka")
        self.cluster.create(BROKERS, base_port=bench_ports(), volume_size=str(self.settings.volume_size))
        self.cluster.up(180)
        admin = AdminClient(confluent_config(self.cluster, log_level=3))
        assignment = [[(leader + step) % BROKERS + 1 for step in range(BROKERS)] for leader in range(BROKERS)]
        for future in admin.create_topics(
            [NewTopic(TOPIC, num_partitions=BROKERS, replica_assignment=assignment)]
        ).values():
            future.result(30)
        self.adapter = KafkaAdapter(self.cluster.info["bootstrap_servers"])

    def _high_watermark(self):
        mark = self.adapter.metadata_high_watermark()
        if mark is None:
            raise BenchError("the metadata quorum gave no high watermark")
        return mark

    def _idle_rate(self):
        first, started = self._high_watermark(), time.time()
        time.sleep(IDLE_SECONDS)
        rate = (self._high_watermark() - first) / (time.time() - started)
        log(f"idle cluster: {rate:.2f} metadata records/s")
        return rate

    def _least_free(self):
        return min(available(path) for entry in self.cluster.broker_nodes for path in entry["log_dirs"])

    def _phase(self, name, step, idle):
        seconds, rate = self.settings.seconds, self.settings.rate
        soft = self._least_free() - (1 << 20)
        hard = int(soft - rate * seconds / self.settings.span)
        config = guard_config(
            os.path.join(self.workdir, f"{name}.json"),
            self.cluster.info["bootstrap_servers"],
            self.settings.entities,
            soft,
            hard,
            step,
        )
        guard = GuardProcess(config, 1.0)
        stop = threading.Event()
        writer = Writer(self.cluster, 0, rate, stop)
        try:
            guard.start(time.time())
            deadline = time.time() + 60
            while not guard.decisions:  # the first decision writes the declared set: not the fill's churn
                if time.time() > deadline or not guard.running():
                    raise BenchError(f"{name}: the guard made no decision:\n" + "\n".join(guard.lines[-15:]))
                time.sleep(0.1)
            first_mark, started, decided = self._high_watermark(), time.time(), len(guard.decisions)
            writer.start()
            time.sleep(seconds)
            stop.set()
            writer.join(30)
            decisions = guard.decisions[decided:]
            elapsed, records = time.time() - started, self._high_watermark() - first_mark
        finally:
            stop.set()
            guard.stop()
        changed_lines = [match for match in (ENTITIES_CHANGED.search(d["change"]) for d in decisions) if match]
        quota_records = records - idle * elapsed
        result = {
            "phase": name,
            "step": step,
            "seconds": elapsed,
            "decisions": len(decisions),
            "decisions_that_changed": sum(decision["changed"] for decision in decisions),
            "entities_changed": sum(int(match.group(1)) for match in changed_lines),
            "lowest_factor": min((decision["factor"] for decision in decisions), default=None),
            "metadata_records": records,
            "quota_records": quota_records,
            "quota_records_per_hour": quota_records / elapsed * 3600.0,
        }
        log(
            f"{name}: {result['decisions']} decisions, {result['decisions_that_changed']} changed the quotas, "
            f"{records} metadata records ({result['quota_records_per_hour']:,.0f} quota records/hour), factor down "
            f"to {result['lowest_factor']}"
        )
        return result


def report(results):
    exact, steps = results["phases"]
    lines = [
        f"{'':<34}{'exact (step 0)':>18}{'steps of 0.05':>18}",
        *(
            f"{label:<34}{exact[key]:>18,.0f}{steps[key]:>18,.0f}"
            for label, key in (
                ("decisions", "decisions"),
                ("decisions that changed quotas", "decisions_that_changed"),
                ("quota entities changed", "entities_changed"),
                ("metadata records (measured)", "metadata_records"),
                ("quota records per hour", "quota_records_per_hour"),
            )
        ),
        f"idle cluster: {results['idle_records_per_second']:.2f} metadata records/s (subtracted)",
        f"exact / steps, quota records: {exact['quota_records'] / max(steps['quota_records'], 1.0):.1f}x",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--entities", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=int, default=256 << 10, help="the writer's bytes/s")
    parser.add_argument(
        "--span",
        type=float,
        default=0.25,
        help="the share of the soft-to-hard distance the fill covers in a phase (0.25: the whole of it in 4 phases)",
    )
    parser.add_argument("--volume-size", default="256M")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    args.volume_size = parse_size(args.volume_size)
    ensure_libs()
    workdir = tempfile.mkdtemp(prefix="quota-churn-bench-")
    try:
        results = Bench(workdir, args).run()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    finish(results, report(results), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
