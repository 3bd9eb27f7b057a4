"""Benchmark of the kafka_testbed test cluster: request latency, start-up time, memory and idle CPU of the brokers.

Run from the repository root (see bench/README.md)::

    .venv/bin/python bench/cluster_bench.py [--quick] [--json OUT]

Everything is measured in one run, in this order, each on a cluster of its own in a temporary directory on free
loopback ports; every cluster is torn down again, also on Ctrl-C or SIGTERM:

1. request latency against the one broker of a 1-broker cluster: DescribeLogDirs v4 and Metadata v12 (all topics)
   through a minimal raw client (pre-encoded requests on a plain socket), then the same through kafka-python's
   KafkaAdminClient;
2. wall time of ``up`` for 3 and for N brokers (50, or 10 with --quick), as a ratio against the 30 s budget for 50
   brokers, and the resident memory of each broker;
3. idle CPU of the N-broker cluster (heartbeats every 500 ms).
"""

import argparse
import math
import os
import platform
import shutil
import signal
import socket
import statistics
import struct
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

# pylint: disable=wrong-import-position
from bench_io import finish  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402
from kafka.protocol.admin.cluster import DescribeLogDirsRequest  # noqa: E402
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse  # noqa: E402
from kafka.protocol.metadata.metadata import MetadataRequest  # noqa: E402

from kafka_testbed.cluster import Cluster, ClusterError  # noqa: E402
from kafka_testbed.model import wire  # noqa: E402
from kafka_testbed.testing import free_port_block  # noqa: E402

# pylint: enable=wrong-import-position

BUDGET_SECONDS = 30.0  # the project's budget for bringing up 50 brokers
BUDGET_BROKERS = 50
UP_TIMEOUT = 180.0  # generous, so that a slow start is measured rather than aborted
HEARTBEAT_MS = 500  # broker.heartbeat.interval.ms of every kafka_testbed cluster
METADATA_VERSION = 12
DESCRIBE_LOG_DIRS_VERSION = 4
API_VERSIONS_VERSION = 3
CLIENT_ID = "cluster-bench"

FULL = {
    "requests": 2000,
    "warmup": 200,
    "admin_requests": 2000,
    "topics": 20,
    "partitions": 3,
    "brokers": 50,
    "idle_seconds": 5.0,
    "settle_seconds": 2.0,
}
QUICK = {
    "requests": 200,
    "warmup": 20,
    "admin_requests": 200,
    "topics": 20,
    "partitions": 3,
    "brokers": 10,
    "idle_seconds": 2.0,
    "settle_seconds": 1.0,
}


class BenchError(Exception):
    """The benchmark cannot go on; the message says why."""


def log(message):
    print(message, file=sys.stderr, flush=True)


# -- ports, processes -------------------------------------------------------------------------------------------------
def rss_kib(pid):
    """Resident set size (VmRSS) of a process in KiB."""
    with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError(f"no VmRSS for pid {pid}")


def pss_kib(pid):
    """Proportional set size in KiB (shared pages split between the processes sharing them), or None."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def cpu_ticks(pid):
    """utime + stime of a process, in clock ticks."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5); fields[0] is field 3 (state)


def broker_pids(cluster):
    return [entry["pid"] for entry in cluster.info["brokers"]]


# -- raw protocol client ----------------------------------------------------------------------------------------------
class RawConnection:
    """One socket to one broker sending pre-encoded kafka-python requests; per request only the correlation id
    changes."""

    def __init__(self, host, port, timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0
        self.size = bytearray(4)

    def close(self):
        self.sock.close()

    @staticmethod
    def prepare(message, version):
        """The size-prefixed request frame; the correlation id sits at offset 8 (after size, api key, api version)."""
        message.with_header(correlation_id=0, client_id=CLIENT_ID)
        payload = bytes(message.encode(version=version, header=True))
        return bytearray(struct.pack(">i", len(payload)) + payload)

    def _read_exact(self, view):
        got = 0
        while got < len(view):
            count = self.sock.recv_into(view[got:])
            if not count:
                raise BenchError("the broker closed the connection")
            got += count

    def round_trip(self, frame):
        """Send ``frame`` and return the response frame (correlation id first); checks the correlation id."""
        self.correlation_id += 1
        struct.pack_into(">i", frame, 8, self.correlation_id)
        self.sock.sendall(frame)
        self._read_exact(memoryview(self.size))
        response = bytearray(struct.unpack(">i", self.size)[0])
        self._read_exact(memoryview(response))
        if struct.unpack_from(">i", response)[0] != self.correlation_id:
            raise BenchError("response correlation id does not match the request")
        return response

    def request(self, message, version):
        """Send a kafka-python request object at ``version`` and decode the response."""
        response = self.round_trip(self.prepare(message, version))
        if message.API_KEY == ApiVersionsRequest.API_KEY:
            return ApiVersionsResponse.decode(bytes(response), version=version, header=True)
        return wire.APIS[message.API_KEY].response.decode(bytes(response), version=version, header=True)


def api_versions_ok(host, port):
    """True when the broker answers an ApiVersions request without error."""
    connection = RawConnection(host, port)
    try:
        request = ApiVersionsRequest(client_software_name=CLIENT_ID, client_software_version="1")
        return connection.request(request, API_VERSIONS_VERSION).error_code == 0
    finally:
        connection.close()


# -- statistics -------------------------------------------------------------------------------------------------------
def percentile(ordered, fraction):
    """Nearest-rank percentile of an ascending list."""
    return ordered[max(1, math.ceil(len(ordered) * fraction)) - 1]


def summarize(samples_ns, elapsed_s):
    ordered = sorted(samples_ns)
    return {
        "requests": len(ordered),
        "mean_ms": statistics.fmean(ordered) / 1e6,
        "p50_ms": percentile(ordered, 0.50) / 1e6,
        "p99_ms": percentile(ordered, 0.99) / 1e6,
        "max_ms": ordered[-1] / 1e6,
        "requests_per_s": len(ordered) / elapsed_s,
    }


def timed_loop(call, count, warmup):
    for _warm in range(warmup):
        call()
    samples = []
    clock = time.perf_counter_ns
    started = clock()
    for _request in range(count):
        before = clock()
        call()
        samples.append(clock() - before)
    return summarize(samples, (clock() - started) / 1e9)


# -- clusters ---------------------------------------------------------------------------------------------------------
class Clusters:
    """Every cluster this run started, so that each is torn down whatever happens."""

    def __init__(self, root):
        self.root = root
        self.running = []

    def start(self, brokers, name, attempts=3):
        """Create and start a cluster on a free port block; return it with the seconds from the start of ``up`` until
        ``up`` returned and until every broker had answered ApiVersions. A start that lost a port to another process is
        retried on other ports."""
        for attempt in range(1, attempts + 1):
            cluster = Cluster(tempfile.mkdtemp(prefix=f"{name}-", dir=self.root), "sim")  # the model: 50 brokers
            cluster.create(brokers, base_port=free_port_block(brokers))
            self.running.append(cluster)
            started = time.perf_counter()
            try:
                cluster.up(UP_TIMEOUT)
                break
            except ClusterError as exc:
                self.down(cluster)
                if "Address already in use" not in str(exc) or attempt == attempts:
                    raise
                log(
                    f"a port was taken while the brokers started; retrying on other ports ({str(exc).splitlines()[-1]})"
                )
        returned = time.perf_counter() - started
        for entry in cluster.info["brokers"]:
            if not api_versions_ok(entry["host"], entry["port"]):
                raise BenchError(f"broker {entry['id']} answered ApiVersions with an error")
        return cluster, returned, time.perf_counter() - started

    def down(self, cluster):
        """Stop a cluster; Ctrl-C is ignored meanwhile so that no broker is left running. Returns seconds taken."""
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            started = time.perf_counter()
            if cluster in self.running:
                cluster.down()
                self.running.remove(cluster)
            return time.perf_counter() - started
        finally:
            signal.signal(signal.SIGINT, previous)

    def down_all(self):
        for cluster in list(self.running):
            log(f"tearing down {len(cluster.info['brokers'])}-broker cluster")
            try:
                self.down(cluster)
            except Exception as exc:  # pylint: disable=broad-except  # keep tearing down the others
                log(f"teardown failed: {exc}")


# -- 1. request latency -----------------------------------------------------------------------------------------------
def create_topics(admin, count, partitions):
    names = [f"bench-{index:03d}" for index in range(count)]
    admin.create_topics([NewTopic(name, partitions, 1) for name in names])
    return names


def wait_for_replicas(connection, expected, timeout=30.0):
    """Wait until DescribeLogDirs lists every partition (the broker creates replica dirs on its heartbeat)."""
    deadline = time.monotonic() + timeout
    while True:
        response = connection.request(DescribeLogDirsRequest(topics=None), DESCRIBE_LOG_DIRS_VERSION)
        present = sum(len(topic.partitions) for result in response.results for topic in result.topics)
        if present >= expected:
            return
        if time.monotonic() > deadline:
            raise BenchError(f"DescribeLogDirs lists {present} of {expected} partitions after {timeout:.0f}s")
        time.sleep(0.1)


def check_responses(connection, topics, partitions):
    """Decode one response of each benchmarked request, so the loops are known to time real, error-free answers."""
    metadata = connection.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), METADATA_VERSION)
    listed = [t for t in metadata.topics if t.error_code == 0 and len(t.partitions) == partitions]
    if len(listed) != topics:
        raise BenchError(
            f"Metadata v{METADATA_VERSION} listed {len(listed)} of {topics} topics with {partitions} partitions"
        )
    log_dirs = connection.request(DescribeLogDirsRequest(topics=None), DESCRIBE_LOG_DIRS_VERSION)
    if log_dirs.error_code or any(result.error_code for result in log_dirs.results):
        raise BenchError(f"DescribeLogDirs v{DESCRIBE_LOG_DIRS_VERSION} returned an error")


def bench_latency(clusters, params):
    log("latency: starting a 1-broker cluster")
    cluster = clusters.start(1, "latency")[0]
    entry = cluster.info["brokers"][0]
    topics, partitions = params["topics"], params["partitions"]
    results = {
        "topics": topics,
        "partitions_per_topic": partitions,
        "requests": params["requests"],
        "warmup": params["warmup"],
    }
    admin = KafkaAdminClient(bootstrap_servers=cluster.info["bootstrap_servers"], client_id=CLIENT_ID)
    connection = RawConnection(entry["host"], entry["port"])
    try:
        names = create_topics(admin, topics, partitions)
        wait_for_replicas(connection, topics * partitions)
        check_responses(connection, topics, partitions)

        log(f"latency: raw client, {params['requests']} requests each")
        log_dirs_frame = RawConnection.prepare(DescribeLogDirsRequest(topics=None), DESCRIBE_LOG_DIRS_VERSION)
        metadata_frame = RawConnection.prepare(
            MetadataRequest(topics=None, allow_auto_topic_creation=False), METADATA_VERSION
        )
        results["raw"] = {
            f"DescribeLogDirs v{DESCRIBE_LOG_DIRS_VERSION}": timed_loop(
                lambda: connection.round_trip(log_dirs_frame), params["requests"], params["warmup"]
            ),
            f"Metadata v{METADATA_VERSION}": timed_loop(
                lambda: connection.round_trip(metadata_frame), params["requests"], params["warmup"]
            ),
        }

        log(f"latency: KafkaAdminClient, {params['admin_requests']} calls each")
        wanted = {name: list(range(partitions)) for name in names}
        node_id = entry["id"]
        versions = admin._manager.broker_version_data  # pylint: disable=protected-access  # only to report the versions used
        log_dirs_version = versions.api_version(DescribeLogDirsRequest)
        metadata_version = versions.api_version(MetadataRequest)
        if len(admin.list_topics()) != topics:
            raise BenchError("KafkaAdminClient.list_topics did not list every topic")
        results["admin"] = {
            f"describe_log_dirs (DescribeLogDirs v{log_dirs_version})": timed_loop(
                lambda: admin.describe_log_dirs(topic_partitions=wanted, brokers=[node_id]),
                params["admin_requests"],
                params["warmup"],
            ),
            f"list_topics (Metadata v{metadata_version})": timed_loop(
                admin.list_topics, params["admin_requests"], params["warmup"]
            ),
        }
    finally:
        connection.close()
        admin.close()
        log("latency: stopping the cluster")
        clusters.down(cluster)
    return results


# -- 2. and 3. start-up, memory, idle CPU -----------------------------------------------------------------------------
def memory_of(cluster):
    rss = [rss_kib(pid) for pid in broker_pids(cluster)]
    pss = [pss_kib(pid) for pid in broker_pids(cluster)]
    return {
        "rss_min_mib": min(rss) / 1024,
        "rss_median_mib": statistics.median(rss) / 1024,
        "rss_max_mib": max(rss) / 1024,
        "rss_total_mib": sum(rss) / 1024,
        "pss_total_mib": None if None in pss else sum(pss) / 1024,
    }


def idle_cpu(cluster, seconds):
    pids = broker_pids(cluster)
    before = {pid: cpu_ticks(pid) for pid in pids}
    started = time.monotonic()
    time.sleep(seconds)
    after = {pid: cpu_ticks(pid) for pid in pids}
    wall = time.monotonic() - started
    cpu_seconds = sum(after[pid] - before[pid] for pid in pids) / os.sysconf("SC_CLK_TCK")
    cores = cpu_seconds / wall
    per_broker_ms_per_s = cpu_seconds / wall / len(pids) * 1000
    return {
        "brokers": len(pids),
        "wall_s": wall,
        "cpu_s": cpu_seconds,
        "cores_busy": cores,
        "one_core_percent": cores * 100,
        "machine_percent": cores / core_count() * 100,
        "per_broker_cpu_ms_per_s": per_broker_ms_per_s,
        "per_broker_cpu_ms_per_heartbeat": per_broker_ms_per_s * HEARTBEAT_MS / 1000,
    }


def bench_up(clusters, brokers, params, measure_idle):
    log(f"up: starting a {brokers}-broker cluster")
    cluster, returned, answered = clusters.start(brokers, f"up{brokers}")
    result = {
        "brokers": brokers,
        "up_returned_s": returned,
        "all_answer_s": answered,
        "budget_s": BUDGET_SECONDS,
        "budget_ratio": answered / BUDGET_SECONDS,
        "memory": memory_of(cluster),
    }
    if measure_idle:
        time.sleep(params["settle_seconds"])
        log(f"idle: sampling CPU of {brokers} brokers for {params['idle_seconds']:.0f}s")
        result["idle_cpu"] = idle_cpu(cluster, params["idle_seconds"])
        result["memory_after_idle"] = memory_of(cluster)
    log(f"up: stopping {brokers} brokers")
    result["down_s"] = clusters.down(cluster)
    return result


# -- report -----------------------------------------------------------------------------------------------------------
def core_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def machine():
    return {
        "cpu_count": os.cpu_count(),
        "usable_cores": core_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": _cpu_model(),
    }


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def table(headers, rows):
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = [
        "  ".join(
            str(cell).ljust(width) if index == 0 else str(cell).rjust(width)
            for index, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in [headers] + rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def report(results):
    info = results["machine"]
    out = [
        (
            f"cores: {info['usable_cores']} usable ({info['cpu_count']} online), {info['processor']}; "
            f"Python {info['python']}"
        ),
        f"mode: {results['mode']}",
        "",
    ]
    latency = results["latency"]
    out.append(
        f"1. latency, one broker of a 1-broker cluster, {latency['topics']} topics "
        f"x {latency['partitions_per_topic']} partitions, sequential requests after {latency['warmup']} warm-up"
    )
    rows = []
    for client in ("raw", "admin"):
        for name, stats in latency[client].items():
            rows.append(
                [
                    f"{'raw socket' if client == 'raw' else 'KafkaAdminClient'}: {name}",
                    stats["requests"],
                    f"{stats['mean_ms']:.3f}",
                    f"{stats['p50_ms']:.3f}",
                    f"{stats['p99_ms']:.3f}",
                    f"{stats['max_ms']:.3f}",
                    f"{stats['requests_per_s']:.0f}",
                ]
            )
    out += [table(["request", "n", "mean ms", "p50 ms", "p99 ms", "max ms", "req/s"], rows), ""]

    out.append(
        f"2. up (start of up until every broker answers ApiVersions), "
        f"budget {BUDGET_SECONDS:.0f} s for {BUDGET_BROKERS} brokers"
    )
    rows = []
    for item in results["up"]:
        memory = item["memory"]
        pss = "-" if memory["pss_total_mib"] is None else f"{memory['pss_total_mib']:.0f}"
        rows.append(
            [
                f"{item['brokers']} brokers",
                f"{item['up_returned_s']:.2f}",
                f"{item['all_answer_s']:.2f}",
                f"{item['budget_ratio']:.3f}",
                f"{memory['rss_min_mib']:.1f}/{memory['rss_median_mib']:.1f}/{memory['rss_max_mib']:.1f}",
                f"{memory['rss_total_mib']:.0f}",
                pss,
                f"{item['down_s']:.2f}",
            ]
        )
    out += [
        table(
            [
                "cluster",
                "up s",
                "answer s",
                "ratio",
                "RSS/broker MiB min/med/max",
                "RSS total MiB",
                "PSS total MiB",
                "down s",
            ],
            rows,
        ),
        "",
    ]

    idle = results["up"][-1]["idle_cpu"]
    out.append(
        f"3. idle CPU of the {idle['brokers']}-broker cluster over {idle['wall_s']:.1f} s "
        f"(heartbeat every {HEARTBEAT_MS} ms)"
    )
    out.append(
        table(
            ["brokers", "CPU s", "% of one core", "% of machine", "ms CPU/s per broker", "ms CPU per heartbeat"],
            [
                [
                    idle["brokers"],
                    f"{idle['cpu_s']:.2f}",
                    f"{idle['one_core_percent']:.1f}",
                    f"{idle['machine_percent']:.1f}",
                    f"{idle['per_broker_cpu_ms_per_s']:.2f}",
                    f"{idle['per_broker_cpu_ms_per_heartbeat']:.2f}",
                ]
            ],
        )
    )
    return "\n".join(out)


# -- main -------------------------------------------------------------------------------------------------------------
def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Benchmark the kafka_testbed test cluster (latency, start-up, memory, idle CPU)."
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 200 requests, 10 brokers instead of 50")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    return parser.parse_args(argv)


def _terminate(signum, _frame):
    raise SystemExit(128 + signum)


def run(params, mode):
    results = {"mode": mode, "params": params, "machine": machine()}
    log(f"cores: {results['machine']['usable_cores']}")
    root = tempfile.mkdtemp(prefix="kafka-sim-bench-")
    clusters = Clusters(root)
    try:
        results["latency"] = bench_latency(clusters, params)
        results["up"] = [
            bench_up(clusters, 3, params, measure_idle=False),
            bench_up(clusters, params["brokers"], params, measure_idle=True),
        ]
    finally:
        clusters.down_all()
        shutil.rmtree(root, ignore_errors=True)
    return results


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    params = QUICK if args.quick else FULL
    try:
        results = run(params, "quick" if args.quick else "full")
    except KeyboardInterrupt:
        log("interrupted; every cluster was torn down")
        return 130
    except (BenchError, ClusterError) as exc:
        log(f"error: {exc}")
        return 1
    finish(results, report(results), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
