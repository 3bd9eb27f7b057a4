"""Relief against the throttle: what moving data gives producers, how long it takes, and how many bytes it moves.

Run from the repository root (see bench/README.md)::

    .venv/bin/python bench/relief_bench.py [--volume-size 128M] [--offered 2M] [--window 20] [--json FILE]

Real Apache Kafka (KRaft: 3 brokers and a controller), every broker with two data log dirs, each a tmpfs volume of
VOLUME bytes (mounting needs root), and the Strimzi quota plugin loaded on every broker as site.yml configures it
(per-volume limit LIMIT, checked every 2 s, a produce quota far above any rate here). Every relief is one run of
``headroom.kafka.log_dir_relief`` through ``ansible-playbook``, the task as users run it.

1. **Producer throughput, relief against the throttle alone.** Broker 2's first log dir holds a replica of
   MOVABLE bytes and a filler file, leaving relieve_at plus a margin free. A producer at OFFERED bytes/s writes to
   that replica. With relief, log_dir_relief starts as the log dir passes relieve_at and moves the replica into the
   broker's second log dir (log dir throttle RATE); with the throttle alone nothing moves, the log dir reaches the
   plugin's limit and the plugin throttles. Each is a cluster of its own; both report the producer's acknowledged
   bytes per second over the WINDOW seconds after the crossing, and the ratio.
2. **Time to relieve N MiB**: the wall time of the relief run that moves a MOVABLE-byte replica, inside broker 2
   under a log dir throttle of RATE (part 1's run), and from broker 3 to another broker under a replication throttle of
   RATE, against MOVABLE / RATE.
3. **Bytes moved**: replicas of several sizes in broker 2's first log dir (RF 1 topics, one partition each) and a
   relieve_to that no single replica reaches exactly: the bytes the plan moves, the least bytes any subset of those
   replicas moves that reaches the target (every subset tried), and the bytes of the plan
   ``kafka-reassign-partitions --generate`` proposes for the same topics and brokers (every replica whose broker
   changes moves whole; it knows no sizes nor log dirs).
"""

import argparse
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
# The relief tests' setup runs (relief_setup_runs), as the tests place replicas and fill volumes.
sys.path[:0] = [ROOT, COLLECTIONS, os.path.join(ROOT, "tests", "integration")]

# pylint: disable=wrong-import-position
from bench_io import finish, load_quota_plugin, plugin_spec  # noqa: E402
from disk_guard_reaction_bench import wait_for  # noqa: E402
from local_ansible import (  # noqa: E402
    ensure_collection_link,
    localhost_play,
    playbook_environment,
    progress,
    timed_playbook,
    without_interrupts,
    write_yaml,
)
from relief_setup_runs import MIB, free_bytes, setup  # noqa: E402

from kafka_testbed.cluster import Cluster, engine_class, parse_size  # noqa: E402
from kafka_testbed.kafka_libs import ensure_libs  # noqa: E402
from kafka_testbed.nodes import ephemeral_port_range, free_port_block  # noqa: E402
from kafka_testbed.storage_format import TOOL_JVM_OPTIONS  # noqa: E402
from kafka_testbed.traffic import plugin_gauge, produce  # noqa: E402

# pylint: enable=wrong-import-position

BROKERS = 3
UP_TIMEOUT = 240
CHECK_INTERVAL = 2
# Part 3's replicas in broker 2's first log dir, MiB: no subset frees exactly what relieve_to asks.
SIZES = (1, 2, 3, 5, 8)
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def bench_ports():
    """A base port above the kernel's ephemeral range: the test clusters draw theirs below it, so a bench run beside
    the tests never takes a block one of them has just found free."""
    count = engine_class("kafka").ports_needed(BROKERS, 0, 0)
    return free_port_block(count, span=(ephemeral_port_range()[1] + 1, 65535 - count))


class Bench:
    """One cluster at a time, started with the plugin and stopped afterwards."""

    def __init__(self, workdir, volume_size, limit):
        self.workdir, self.volume_size, self.limit = workdir, volume_size, limit
        self.cluster = None

    def start(self, name):
        directory = os.path.join(self.workdir, name)
        self.cluster = Cluster(directory, "kafka")
        self.cluster.create(
            BROKERS,
            base_port=bench_ports(),
            log_dirs_per_broker=2,
            volume_size=str(self.volume_size),
            # Moved replicas' old files go 1 s after a move (Kafka's default is 60 s): the space shows at once.
            extra_properties={"log.segment.delete.delay.ms": 1000},
        )
        load_quota_plugin(self.cluster, plugin_spec(1 << 30, self.limit, CHECK_INTERVAL))
        self.cluster.up(UP_TIMEOUT)
        for entry in self.cluster.broker_nodes:
            wait_for(
                lambda e=entry: plugin_gauge(e, "VolumeSource", "ActiveLogDirs") == BROKERS * 2,
                120,
                f"broker {entry['id']}'s plugin seeing every log dir",
            )
        return self.cluster

    def stop(self):
        if self.cluster is not None:
            without_interrupts(self.cluster.down)
            self.cluster = None

    def log_dirs(self, broker):
        return sorted(next(b for b in self.cluster.info["brokers"] if b["id"] == broker)["log_dirs"])

    def relieve(self, options, label, check_mode=False):
        """One log_dir_relief run through ansible-playbook (in check mode: the plan): (wall seconds, its result)."""
        workdir = tempfile.mkdtemp(prefix="relief-", dir=self.workdir)
        result_file = os.path.join(workdir, "result.json")
        args = dict(options, bootstrap_servers=self.cluster.info["bootstrap_servers"].split(","))
        playbook = write_yaml(
            os.path.join(workdir, "relief.yml"),
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [
                        {"headroom.kafka.log_dir_relief": args, "register": "relief", "check_mode": check_mode},
                        {"ansible.builtin.copy": {"content": "{{ relief | to_json }}", "dest": result_file}},
                    ],
                }
            ],
        )
        elapsed, _done = timed_playbook(
            localhost_play(playbook), playbook_environment(COLLECTIONS), workdir, 900, label
        )
        with open(result_file, encoding="utf-8") as handle:
            return elapsed, json.load(handle)


def throughput(bench, relieve, offered, movable, window, rate, relieve_at, relieve_to):
    """Part 1, one side: the producer's rate over ``window`` s after broker 2's first log dir passes relieve_at."""
    cluster = bench.start("relief" if relieve else "throttle-alone")
    try:
        first, _second = bench.log_dirs(2)
        setup("place", cluster.info["bootstrap_servers"], "fill", 2, first, movable >> 20)
        setup("leave", first, (relieve_at >> 20) + 4)
        measured = {}
        # The crossing comes within seconds; the producer stops soon after the window, so that with relief what it
        # writes into the second log dir stays far from the limit there.
        producing = window + 10
        producer = threading.Thread(
            target=lambda: measured.update(
                fill=produce(cluster, "fill", seconds=producing, offered_rate=offered, message_size=65536, acks="all")
            ),
            daemon=True,
        )
        started = time.monotonic()
        producer.start()
        wait_for(lambda: free_bytes(first) <= relieve_at, 120, "the log dir passing relieve_at")
        crossed = time.monotonic() - started
        figures = {"crossed_s": round(crossed, 1)}
        if relieve:
            seconds, result = bench.relieve(
                {
                    "relieve_at": {"type": "min_free_bytes", "level": relieve_at},
                    "relieve_to": {"type": "min_free_bytes", "level": relieve_to},
                    "limit": {"type": "min_free_bytes", "level": bench.limit},
                    "log_dir_throttle_rate": rate,
                    "poll_interval": 0.5,
                    "timeout": 600,
                },
                "relief inside broker 2",
            )
            moved = sum(m["bytes"] for m in result["moves"])
            figures.update(relief_s=round(seconds, 1), moved_bytes=moved, moves=len(result["moves"]))
        producer.join(producing + 60)
        fill = measured["fill"]
        figures.update(
            before_Bps=round(fill.rate_between(1, crossed)),
            window_Bps=round(fill.rate_between(crossed, crossed + window)),
            throttled_responses=len(fill.throttles_ms),
        )
        return figures
    finally:
        bench.stop()


def across_time(bench, movable, rate):
    """Part 2, across: a replica of ``movable`` bytes leaves broker 3 (both its log dirs without room for it)."""
    cluster = bench.start("across")
    try:
        first, second = bench.log_dirs(3)
        setup("place", cluster.info["bootstrap_servers"], "across", "3,1", first, movable >> 20)
        # Thresholds low enough that a broker with room takes the replica without passing its own relieve_at.
        setup("leave", first, (movable >> 20) + 8)
        free = free_bytes(first)
        setup("leave", second, (movable >> 20) // 2)
        seconds, result = bench.relieve(
            {
                "relieve_at": {"type": "min_free_bytes", "level": free + MIB},
                "relieve_to": {"type": "min_free_bytes", "level": free + movable // 2},
                "throttle_rate": rate,
                "poll_interval": 0.5,
                "timeout": 600,
            },
            "relief across brokers",
        )
        kinds = sorted({m["kind"] for m in result["moves"]})
        return {"relief_s": round(seconds, 1), "moved_bytes": sum(m["bytes"] for m in result["moves"]), "kinds": kinds}
    finally:
        bench.stop()


def least_reaching(sizes, needed):
    """The least total of any subset of ``sizes`` that is at least ``needed`` (None when none is)."""
    best = None
    for count in range(1, len(sizes) + 1):
        for subset in itertools.combinations(sizes, count):
            total = sum(subset)
            if total >= needed and (best is None or total < best):
                best = total
    return best


def kafka_tools_jar(version):
    """Kafka's tools jar (kafka-reassign-partitions' class), which a broker's libs do not hold: fetched from Maven
    Central once, into build/bench."""
    target = os.path.join(ROOT, "build", "bench", f"kafka-tools-{version}")
    jar = os.path.join(target, f"kafka-tools-{version}.jar")
    if not os.path.exists(jar):
        done = subprocess.run(
            [
                "mvn",
                "-B",
                "-q",
                "dependency:copy",
                f"-Dartifact=org.apache.kafka:kafka-tools:{version}",
                f"-DoutputDirectory={target}",
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0 or not os.path.exists(jar):
            raise RuntimeError(f"fetching kafka-tools {version} with Maven failed: {done.stdout[-2000:]}")
    return jar


def generated_plan_bytes(cluster, topics, sizes):
    """The bytes kafka-reassign-partitions --generate would move for ``topics`` over every broker: the size of each
    replica that leaves broker 2 (the topics have one replica, on broker 2), and the proposal."""
    libs = ensure_libs()
    workdir = tempfile.mkdtemp(prefix="generate-", dir=os.path.dirname(cluster.directory))
    topics_file = os.path.join(workdir, "topics.json")
    with open(topics_file, "w", encoding="utf-8") as handle:
        json.dump({"version": 1, "topics": [{"topic": t} for t in topics]}, handle)
    brokers = ",".join(str(entry["id"]) for entry in cluster.broker_nodes)
    done = subprocess.run(
        [
            libs.java,
            *TOOL_JVM_OPTIONS,
            "-cp",
            libs.classpath + os.pathsep + kafka_tools_jar(libs.version),
            REASSIGN,
            "--bootstrap-server",
            cluster.info["bootstrap_servers"],
            "--generate",
            "--topics-to-move-json-file",
            topics_file,
            "--broker-list",
            brokers,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"kafka-reassign-partitions --generate failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return generated_bytes(done.stdout, sizes)


def generated_bytes(output, sizes):
    """(bytes, proposal) of kafka-reassign-partitions --generate's output: the size of each replica the proposal takes
    off broker 2 (the topics have one replica, on broker 2)."""
    proposed = json.loads(output.split("Proposed partition reassignment configuration", 1)[1].strip().splitlines()[0])
    moved = sum(sizes[p["topic"]] for p in proposed["partitions"] if 2 not in p["replicas"])
    return moved, proposed


def replica_sizes(cluster, topics):
    """{topic: bytes} of each topic's replica on broker 2, as DescribeLogDirs gives them (what the plan reads)."""
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter  # pylint: disable=import-outside-toplevel

    adapter = KafkaAdapter(cluster.info["bootstrap_servers"].split(","))
    try:
        rows = adapter.describe_log_dirs([2], replicas=True)[2]
    finally:
        adapter.close()
    return {r["topic"]: r["size_bytes"] for row in rows for r in row.get("replicas") or [] if r["topic"] in topics}


def bytes_moved(bench):
    """Part 3: the plan's bytes against the least that reaches the target and against --generate."""
    cluster = bench.start("bytes")
    try:
        first, _second = bench.log_dirs(2)
        topics = []
        for index, mib in enumerate(SIZES):
            topics.append(f"sized-{index}-{mib}m")
            setup("place", cluster.info["bootstrap_servers"], topics[-1], 2, first, mib)
        sizes = replica_sizes(cluster, topics)
        free = free_bytes(first)
        # 9.5 MiB more free: the least subset of 1, 2, 3, 5 and 8 MiB that reaches it frees 10 MiB (8 + 2, or 5 + 3 +
        # 2); none frees it exactly.
        needed = 19 * MIB // 2
        _seconds, check = bench.relieve(
            {
                "relieve_at": {"type": "min_free_bytes", "level": free + MIB},
                "relieve_to": {"type": "min_free_bytes", "level": free + needed},
            },
            "the plan (check mode)",
            check_mode=True,
        )
        generated, proposal = generated_plan_bytes(cluster, topics, sizes)
        return {
            "needed_bytes": needed,
            "replica_bytes": sizes,
            "plan_bytes": sum(m["bytes"] for m in check["moves"]),
            "plan_moves": [m["topic"] for m in check["moves"]],
            "least_bytes": least_reaching(list(sizes.values()), needed),
            "generate_bytes": generated,
            "generate_proposal": proposal,
        }
    finally:
        bench.stop()


def ratio(numerator, denominator):
    return round(numerator / denominator, 3) if denominator else None


def table(results):
    inside, alone, across, moved = (results[k] for k in ("relief", "throttle_alone", "across", "bytes"))
    rate = results["rate_Bps"]
    rows = [
        "part 1 - producer throughput over the {0} s after the crossing (offered {1:.2f} MiB/s)".format(
            results["window_s"], results["offered_Bps"] / MIB
        ),
        "  with relief        {0:8.2f} MiB/s  (before {1:.2f})".format(
            inside["window_Bps"] / MIB, inside["before_Bps"] / MIB
        ),
        "  throttle alone     {0:8.2f} MiB/s  (before {1:.2f}, {2} throttled responses)".format(
            alone["window_Bps"] / MIB, alone["before_Bps"] / MIB, alone["throttled_responses"]
        ),
        "  ratio              {0}x".format(ratio(inside["window_Bps"], alone["window_Bps"])),
        "part 2 - time to relieve, against the bytes moved / the throttle's rate ({0:.0f} MiB/s)".format(rate / MIB),
        "  inside broker 2    {0:8.1f} s  for {1:.1f} MiB ({2}x bytes / rate)".format(
            inside["relief_s"], inside["moved_bytes"] / MIB, ratio(inside["relief_s"], inside["moved_bytes"] / rate)
        ),
        "  across brokers     {0:8.1f} s  for {1:.1f} MiB ({2}x bytes / rate)".format(
            across["relief_s"], across["moved_bytes"] / MIB, ratio(across["relief_s"], across["moved_bytes"] / rate)
        ),
        "part 3 - bytes moved to free {0:.1f} MiB (replicas {1})".format(
            moved["needed_bytes"] / MIB, ", ".join(f"{b / MIB:.1f}" for b in sorted(moved["replica_bytes"].values()))
        ),
        "  the plan           {0:8.2f} MiB  ({1})".format(moved["plan_bytes"] / MIB, ", ".join(moved["plan_moves"])),
        "  least reaching     {0:8.2f} MiB  (plan / least {1}x)".format(
            moved["least_bytes"] / MIB, ratio(moved["plan_bytes"], moved["least_bytes"])
        ),
        "  --generate         {0:8.2f} MiB  (generate / plan {1}x)".format(
            moved["generate_bytes"] / MIB, ratio(moved["generate_bytes"], moved["plan_bytes"])
        ),
    ]
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--volume-size", default="128M", help="each data log dir's volume (default %(default)s)")
    parser.add_argument("--limit", default="16M", help="the plugin's per-volume limit (default %(default)s)")
    parser.add_argument("--movable", default="32M", help="the replica relief moves (default %(default)s)")
    parser.add_argument("--offered", default="2M", help="the producer's rate, bytes/s (default %(default)s)")
    parser.add_argument("--rate", default="16M", help="the log dir and replication throttles (default %(default)s)")
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured after the crossing")
    parser.add_argument("--json", help="write every figure here")
    options = parser.parse_args(argv)
    volume, limit, movable = (parse_size(v) for v in (options.volume_size, options.limit, options.movable))
    offered, rate = parse_size(options.offered), parse_size(options.rate)
    relieve_at = limit + 16 * MIB
    relieve_to = relieve_at + movable // 2
    ensure_collection_link(ROOT, COLLECTIONS)
    workdir = tempfile.mkdtemp(prefix="relief-bench-")
    bench = Bench(workdir, volume, limit)
    results = {
        "machine": f"{platform.node()} ({os.cpu_count()} CPUs)",
        "volume_bytes": volume,
        "limit_bytes": limit,
        "movable_bytes": movable,
        "offered_Bps": offered,
        "rate_Bps": rate,
        "window_s": options.window,
    }
    try:
        for name, relieve in (("relief", True), ("throttle_alone", False)):
            progress(f"part 1: {name}")
            results[name] = throughput(bench, relieve, offered, movable, options.window, rate, relieve_at, relieve_to)
        progress("part 2: across brokers")
        results["across"] = across_time(bench, movable, rate)
        progress("part 3: bytes moved")
        results["bytes"] = bytes_moved(bench)
    finally:
        bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    finish(results, table(results), options.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
