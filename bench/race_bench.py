"""The race between writers at full speed and the throttle: how many bytes land past a volume's limit before the
throttle holds, for the Strimzi quota plugin and for the disk guard, over check intervals and fill rates.

Run from the repository root (see bench/README.md)::

    .venv/bin/python bench/race_bench.py [--deciders plugin,guard] [--intervals 1,2,10,60]
        [--rates full,16M,4M] [--volume-size 512M] [--limit 64M] [--json FILE]

One trial per decider, check interval and fill rate, each on a cluster of its own (real Apache Kafka, KRaft: 3
brokers and a controller, every data log dir a tmpfs volume of VOLUME bytes; mounting needs root):

* ``plugin``: every broker loads the Strimzi quota plugin, configured with the block the collection renders for
  site.yml (``quota_plugin_spec``): per-volume ``min.available.bytes`` LIMIT, ``storage.check-interval`` the
  interval, a produce quota far above any rate reached here (the throttle is the factor, not the quota).
* ``guard``: no plugin; ``python -m headroom_guard`` (policy strimzi, the same LIMIT, ``--interval`` the interval)
  keeps the ``<default>`` user's produce quota at that quota x its factor.

A topic of 3 partitions with 3 replicas, one leader per broker, so that every volume receives what every producer
writes: the fill rate of a volume is the producers' rate. Every volume is first filled to LIMIT plus a margin
(``filler.bin``) so that the limit is crossed within seconds of the producers' start; the producers (PRODUCERS
threads, ``acks=1``, 64 KiB records) then write as fast as the brokers take (``full``) or at a capped total rate,
and go on writing until the throttle has held for SETTLE seconds, a log dir went offline, or the trial times out.
A sampler reads every volume's free bytes every SAMPLE seconds (statvfs on the mount).

What each trial reports:

* ``fill_rate``: the fastest any volume filled over the second before the crossing (bytes/s);
* ``detect``: from the crossing (the first sample below LIMIT) to the decision that saw it (the plugin's "Throttle
  Factor changed" log line on the first broker to log it, or the guard's decision line with a factor below 1);
* ``apply``: from that decision to the first produce response carrying a throttle time (any producer);
* ``overshoot``: LIMIT minus the least free space any volume reached: the bytes written past the limit;
* ``after_throttle``: the bytes that still landed on a volume after the first throttled response (requests in
  flight, and what followers fetched of what leaders had accepted: client quotas never throttle replication);
* ``in_flight``: of those, what the leaders accepted after the first throttled response (every volume holds a replica
  of every partition, so each receives all of it); the rest is replication catching up;
* ``offline``: the brokers that logged ``No space left on device`` or exited;
* ``least_limit``: limit_sizing's rule with the measured parts: fill rate x (interval + the check's own duration +
  apply) + after_throttle. A trial whose LIMIT is below that is expected to lose the race.

``--recommended`` proves the collection's sizing instead, per decider at the collection's defaults, writers at full
speed: first a trial at LIMIT, which must lose (it shows the trials have teeth, and measures the full-speed fill rate
R), then one at the recommended limit for R (limit_sizing.least_limit_bytes with the plugin's measured parts,
limit_sizing.plugin_parts), which must keep every log dir online, then a probe at half of it, with no expectation: the
rule adds up worst cases, and how much of the volume the probe had left shows how much margin the rule keeps. The
plugin's check interval is the one the collection chooses for that limit and rate (quota_plugin_spec: kafka_quotas
with peak_fill_rate and no check_interval); the guard's is the disk_guard role's default
(roles/disk_guard/defaults/main.yml) with the guard's default fastest interval, and since a burst at full speed
crosses the limit before the guard has seen it fill, its recommended limit covers the whole interval. Each volume is
the trial's limit plus the margin filled before the writers start plus 64 MiB.
"""

import argparse
import os
import platform
import shutil
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# pylint: disable=wrong-import-position
import yaml  # noqa: E402
from bench_io import finish, load_quota_plugin, plugin_spec  # noqa: E402
from confluent_kafka import KafkaError, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

# BenchError is the one wait_for raises, so that a wait that times out is reported like any other failure.
from disk_guard_reaction_bench import BenchError, GuardProcess, PluginLog, available, wait_for  # noqa: E402

from ansible_collections.headroom.kafka.plugins.module_utils import limit_sizing, quota_plugin_spec  # noqa: E402
from kafka_testbed.client_config import confluent_config  # noqa: E402
from kafka_testbed.cluster import Cluster, ClusterError, engine_class, parse_size, process_alive  # noqa: E402
from kafka_testbed.kafka_libs import ensure_libs  # noqa: E402
from kafka_testbed.log_dir_probe import fill_volume  # noqa: E402
from kafka_testbed.nodes import ephemeral_port_range, free_port_block  # noqa: E402
from kafka_testbed.traffic import plugin_gauge  # noqa: E402

# pylint: enable=wrong-import-position

MIB = 1 << 20
BROKERS = 3
QUOTA = 1 << 30  # produce quota at factor 1, bytes/s: never reached here, so only the factor throttles
RECORD_SIZE = 64 << 10
PRODUCERS = 2
PRODUCER_SETTINGS = {
    "acks": "1",
    "linger.ms": 5,
    "batch.size": 1 << 20,
    "queue.buffering.max.kbytes": 64 << 10,
    "log_level": 3,
}
TOPIC = "race"
# Records still queued or in flight when a trial ends are purged: not a failure of the cluster.
PURGED = {KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT}  # pylint: disable=protected-access  # librdkafka's codes
SAMPLE = 0.02  # seconds between two readings of every volume's free space
LEAD = 3.0  # seconds of writing at the offered rate between the producers' start and the crossing
FULL_SPEED_MARGIN = 96 * MIB  # the margin above the limit when the rate is not known beforehand
SETTLE = 5.0  # seconds the throttle must have held before a trial ends
OFFLINE_GRACE = 3.0  # seconds a trial goes on after a log dir went offline (the others may follow)
UP_TIMEOUT = 180.0
NO_SPACE = (b"No space left on device", b"Shutdown broker because all log dirs")


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# -- the writers and the sampler ------------------------------------------------------------------------------------
class Writer(threading.Thread):
    """One producer writing RECORD_SIZE records to the topic as fast as it may (``rate`` None) or at ``rate`` bytes/s;
    notes the first produce response that carried a throttle time."""

    def __init__(self, cluster, number, rate, stop, in_flight=None):
        super().__init__(name=f"writer-{number}", daemon=True)
        self.rate, self.stop = rate, stop
        self.first_throttled = None
        self.offered = self.acked = self.errors = 0
        self.acked_after_throttle = 0  # bytes the leaders accepted after this producer's first throttled response
        settings = dict(PRODUCER_SETTINGS, **{"client.id": f"race-bench-{number}", "throttle_cb": self._throttle})
        if in_flight is not None:
            settings["max.in.flight.requests.per.connection"] = in_flight
        self.producer = Producer(confluent_config(cluster, **settings))
        self.payload = os.urandom(RECORD_SIZE)

    def _throttle(self, event):
        if event.throttle_time > 0 and self.first_throttled is None:
            self.first_throttled = time.time()

    def _delivered(self, error, message):
        if error is None:
            self.acked += len(message.value())
            if self.first_throttled is not None:
                self.acked_after_throttle += len(message.value())
        elif error.code() not in PURGED:
            self.errors += 1

    def run(self):
        started = time.time()
        while not self.stop.is_set():
            if self.rate is not None and self.offered > self.rate * (time.time() - started):
                self.producer.poll(0.001)
                continue
            try:
                self.producer.produce(TOPIC, self.payload, on_delivery=self._delivered)
                self.offered += RECORD_SIZE
            except BufferError:
                self.producer.poll(0.005)
            self.producer.poll(0)
        self.producer.purge()
        self.producer.flush(1)
        # Closed, not left to the garbage collector: a producer left open asks for the topic's metadata, and a broker
        # that auto-creates topics makes a deleted one again.
        self.producer.close()


class Sampler(threading.Thread):
    """Every volume's free bytes every SAMPLE seconds, as ``read()`` gives them ({broker_id: free bytes}): ``samples``
    is a list of (time, {broker_id: free bytes})."""

    def __init__(self, read, stop):
        super().__init__(name="sampler", daemon=True)
        self.read, self.stop = read, stop
        self.samples = []

    def run(self):
        while not self.stop.is_set():
            self.samples.append((time.time(), self.read()))
            time.sleep(SAMPLE)


class Writers:
    """PRODUCERS writers against ``cluster`` (each at ``rate_each`` bytes/s, None: as fast as they may)."""

    def __init__(self, cluster, rate_each=None, in_flight=None):
        self.cluster, self.rate_each, self.in_flight = cluster, rate_each, in_flight

    def start(self, stop):
        writers = [Writer(self.cluster, n, self.rate_each, stop, self.in_flight) for n in range(PRODUCERS)]
        for writer in writers:
            writer.start()
        return writers


def race(writers, read_free, look_offline, seconds_at_most, until_throttled=True):
    """The writers at their rate while a Sampler reads every volume (``read_free``), until the throttle has held for
    SETTLE s (unless not ``until_throttled``), ``look_offline()`` names a broker (then OFFLINE_GRACE s more: the others
    may follow) or ``seconds_at_most`` passed: (samples, the writers, when they began, why the race ended)."""
    stop_sampling, stop_writing = threading.Event(), threading.Event()
    sampler = Sampler(read_free, stop_sampling)
    sampler.start()
    began = time.time()
    started = writers.start(stop_writing)
    ended_because = "timeout" if until_throttled else "measured"
    try:
        while time.time() < began + seconds_at_most:
            time.sleep(0.1)
            throttled = min((w.first_throttled for w in started if w.first_throttled), default=None)
            if until_throttled and throttled is not None and time.time() - throttled >= SETTLE:
                ended_because = "throttle held"
                break
            if look_offline():
                time.sleep(OFFLINE_GRACE)
                ended_because = "log dir offline"
                break
    finally:
        stop_writing.set()
        for writer in started:
            writer.join(30)
        stop_sampling.set()
        sampler.join(5)
    return sampler.samples, started, began, ended_because


def crossing(samples, limit):
    """The first sample time at which some volume was below ``limit``, or None."""
    return next((at for at, free in samples if min(free.values()) < limit), None)


def fill_rate_before(samples, moment, window=1.0):
    """The fastest a volume filled over ``window`` seconds before ``moment``, in bytes/s."""
    inside = [(at, free) for at, free in samples if moment - window <= at <= moment]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None
    (first_at, first), (last_at, last) = inside[0], inside[-1]
    return max(first[broker] - last[broker] for broker in first) / (last_at - first_at)


def least_free(samples):
    return min((min(free.values()) for _at, free in samples), default=None)


def free_at(samples, moment):
    """Every volume's free bytes at the last sample before ``moment``."""
    return next((free for at, free in reversed(samples) if at <= moment), samples[0][1])


def bench_ports():
    """A base port above the kernel's ephemeral range: the test clusters draw theirs below it, so a bench run beside
    the tests never takes a block one of them has just found free."""
    count = engine_class("kafka").ports_needed(BROKERS, 0, 0)
    return free_port_block(count, span=(ephemeral_port_range()[1] + 1, 65535 - count))


class OfflineWatch:
    """The brokers that logged a log dir failing for lack of space, or exited, since it was made: each broker's log is
    read on from where the last look stopped, and a broker once down stays in the answer."""

    def __init__(self, brokers):
        self.brokers = brokers
        self.offsets = {entry["id"]: os.path.getsize(entry["log_file"]) for entry in brokers}
        self.tails = {entry["id"]: b"" for entry in brokers}  # a marker may span two reads
        self.down = set()

    def look(self):
        for entry in self.brokers:
            broker = entry["id"]
            if broker in self.down:
                continue
            with open(entry["log_file"], "rb") as handle:
                handle.seek(self.offsets[broker])
                text = handle.read()
            self.offsets[broker] += len(text)
            text = self.tails[broker] + text
            self.tails[broker] = text[-max(len(marker) for marker in NO_SPACE) :]
            if any(marker in text for marker in NO_SPACE) or not process_alive(entry["pid"]):
                self.down.add(broker)
        return sorted(self.down)


# -- one trial ------------------------------------------------------------------------------------------------------
class Trial:
    def __init__(self, workdir, decider, interval, rate, settings):
        self.workdir, self.decider, self.interval, self.rate = workdir, decider, interval, rate
        self.volume_size, self.limit, self.in_flight = settings.volume_size, settings.limit, settings.in_flight
        self.cluster = None
        self.guard = None

    def run(self):
        try:
            self._start_cluster()
            self._start_decider()
            return self._race()
        finally:
            if self.guard is not None:
                self.guard.stop()
            if self.cluster is not None:
                self.cluster.down()

    def _start_cluster(self):
        directory = os.path.join(self.workdir, f"{self.decider}-{self.interval:g}s-{rate_text(self.rate)}")
        shutil.rmtree(directory, ignore_errors=True)
        cluster = Cluster(directory, "kafka")
        cluster.create(BROKERS, base_port=bench_ports(), volume_size=str(self.volume_size))
        self.cluster = cluster
        mounted = {volume["path"] for volume in cluster.info["volumes"]}
        if not all(path in mounted for entry in cluster.broker_nodes for path in entry["log_dirs"]):
            raise BenchError("a data log dir is not on a volume of its own: " + "; ".join(cluster.info["notes"]))
        if self.decider == "plugin":
            load_quota_plugin(cluster, plugin_spec(QUOTA, self.limit, self.interval))
        cluster.up(UP_TIMEOUT)
        client = AdminClient(confluent_config(cluster, log_level=3))
        assignment = [[(leader + step) % BROKERS + 1 for step in range(BROKERS)] for leader in range(BROKERS)]
        topic = NewTopic(
            TOPIC, num_partitions=BROKERS, replica_assignment=assignment, config={"min.insync.replicas": "1"}
        )
        for future in client.create_topics([topic]).values():
            future.result(30)

    def _start_decider(self):
        if self.decider == "plugin":
            for entry in self.cluster.broker_nodes:
                wait_for(
                    lambda entry=entry: plugin_gauge(entry, "VolumeSource", "ActiveLogDirs") == BROKERS,
                    3 * self.interval + 60,
                    f"broker {entry['id']}'s plugin observing every log dir",
                )
            return
        config = {
            "bootstrap_servers": self.cluster.info["bootstrap_servers"].split(","),
            "policy": "strimzi",
            "min_available_bytes": self.limit,
            "default_producer_byte_rate": QUOTA,
        }
        path = os.path.join(self.cluster.directory, "guard.yml")
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle)
        self.guard = GuardProcess(path, self.interval)
        self.guard.start(time.time() + 1.0)
        wait_for(lambda: self.guard.decisions or not self.guard.running(), 60, "the guard's first decision")
        if not self.guard.decisions or self.guard.decisions[0]["factor"] != 1.0:
            raise BenchError(f"the guard did not start at factor 1:\n{self.guard.tail()}")

    def _race(self):
        log_dirs = {entry["id"]: entry["log_dirs"][0] for entry in self.cluster.broker_nodes}
        margin = FULL_SPEED_MARGIN if self.rate is None else max(int(self.rate * LEAD), 4 * MIB)
        for path in log_dirs.values():
            fill_volume(path, leave=self.limit + margin)
        offline = OfflineWatch(self.cluster.broker_nodes)
        plugin_logs = [PluginLog(entry["log_file"]) for entry in self.cluster.broker_nodes]
        for plugin_log in plugin_logs:
            plugin_log.refresh()
        rate_each = None if self.rate is None else self.rate / PRODUCERS
        samples, writers, began, ended_because = race(
            Writers(self.cluster, rate_each, self.in_flight),
            lambda: {broker: available(path) for broker, path in log_dirs.items()},
            offline.look,
            margin / (self.rate or 50 * MIB) + 2 * self.interval + 30,
        )
        return self._measure(samples, writers, plugin_logs, offline, began, ended_because)

    def _decided(self, plugin_logs, since):
        """When the first decision to throttle was taken, how long a check takes (seconds) and how many checks failed
        during the race."""
        if self.decider == "plugin":
            changes, failures = [], 0
            for plugin_log in plugin_logs:
                plugin_log.refresh()
                changes += [at for at, _old, new in plugin_log.changes if new < 1.0 and at >= since]
                failures += sum(1 for at, _text in plugin_log.failures if at >= since)
            durations = [plugin_log.check_duration() for plugin_log in plugin_logs]
            return min(changes, default=None), max(durations, default=0.0), failures
        throttling = [d for d in self.guard.decisions if d["factor"] < 1.0 and d["end"] >= since]
        seconds = [d["seconds"] for d in self.guard.decisions]
        failures = sum(1 for at, _text in self.guard.failures if at >= since)
        return (throttling[0]["end"] if throttling else None), (max(seconds) if seconds else 0.0), failures

    def _measure(self, samples, writers, plugin_logs, offline, began, ended_because):
        crossed = crossing(samples, self.limit)
        throttled = min((w.first_throttled for w in writers if w.first_throttled), default=None)
        decided, check_seconds, check_failures = self._decided(plugin_logs, crossed or began)
        rate = fill_rate_before(samples, crossed) if crossed else None
        lowest = least_free(samples)
        after = None
        if throttled is not None:
            at_throttle = free_at(samples, throttled)
            after = max(at_throttle[b] - min(free[b] for at, free in samples if at >= throttled) for b in at_throttle)
        apply_seconds = throttled - decided if throttled and decided else None
        least = None
        if rate is not None and apply_seconds is not None and after is not None:
            least = limit_sizing.least_limit_bytes(
                rate, self.interval, check_seconds, max(apply_seconds, 0.0), in_flight_bytes=after
            )
        result = {
            "decider": self.decider,
            "interval": self.interval,
            "offered_rate": self.rate,
            "limit": self.limit,
            "volume_size": self.volume_size,
            "in_flight_requests": self.in_flight,
            "fill_rate": rate,
            "crossed_after": crossed - began if crossed else None,
            "detect": decided - crossed if decided and crossed else None,
            "apply": apply_seconds,
            "reaction": throttled - crossed if throttled and crossed else None,
            "check_seconds": check_seconds,
            "check_failures": check_failures,
            "overshoot": self.limit - lowest if lowest is not None and lowest < self.limit else 0,
            "least_free": lowest,
            "after_throttle": after,
            "in_flight": sum(w.acked_after_throttle for w in writers),
            "offline": offline.look(),
            "least_limit": least,
            "acked": sum(w.acked for w in writers),
            "errors": sum(w.errors for w in writers),
            "ended": ended_because,
        }
        log(describe(result))
        return result


# -- the report -----------------------------------------------------------------------------------------------------
def rate_text(rate):
    return "full" if rate is None else f"{rate / MIB:g}M"


def mib(value):
    return "-" if value is None else f"{value / MIB:.1f}"


def seconds(value):
    return "-" if value is None else f"{value:.2f}"


def describe(result):
    lost = f"offline: brokers {result['offline']}" if result["offline"] else "no log dir offline"
    return (
        f"{result['decider']} {result['interval']:g} s {rate_text(result['offered_rate'])}: fill "
        f"{mib(result['fill_rate'])} MiB/s, reaction {seconds(result['reaction'])} s, overshoot "
        f"{mib(result['overshoot'])} MiB of {mib(result['limit'])}, {lost}"
    )


def log_dirs_text(result):
    return "offline: " + ",".join(map(str, result["offline"])) if result["offline"] else "kept"


def table(header, rows):
    """The header, a rule under it, and the rows, one line each."""
    return "\n".join([header, "-" * len(header), *rows])


def report(results):
    header = (
        f"{'decider':<7} {'interval':>8} {'offered':>8} {'fill MiB/s':>10} {'detect s':>8} {'apply s':>7} "
        f"{'overshoot MiB':>13} {'after MiB':>9} {'in flight MiB':>13} {'least limit MiB':>15}  log dirs"
    )
    return table(
        header,
        (
            f"{result['decider']:<7} {result['interval']:>7g}s {rate_text(result['offered_rate']):>8} "
            f"{mib(result['fill_rate']):>10} {seconds(result['detect']):>8} {seconds(result['apply']):>7} "
            f"{mib(result['overshoot']):>13} {mib(result['after_throttle']):>9} {mib(result['in_flight']):>13} "
            f"{mib(result['least_limit']):>15}  {log_dirs_text(result)}"
            for result in results["trials"]
        ),
    )


# -- --recommended: the collection's sizing at full speed ----------------------------------------------------------
ROLE_DEFAULTS = os.path.join(ROOT, "roles", "disk_guard", "defaults", "main.yml")
SPARE = 64 * MIB  # of each volume, beyond the limit and the margin filled before the writers start


def guard_default_interval():
    with open(ROLE_DEFAULTS, encoding="utf-8") as handle:
        return float(yaml.safe_load(handle)["disk_guard_interval"])


def recommended_limit(rate, interval):
    """The collection's least limit for a volume filling at ``rate`` with this check interval, in whole MiB."""
    least = limit_sizing.least_limit_bytes(rate, interval, **limit_sizing.plugin_parts(rate))
    return -(-least // MIB) * MIB


def plugin_interval(limit, rate):
    """The check interval the collection writes for this limit and peak fill rate when the user sets none."""
    spec = {"type": "strimzi", "producer_byte_rate": QUOTA, "min_available_bytes_per_volume": limit}
    checked = quota_plugin_spec.validate_spec(dict(spec, peak_fill_rate=rate))
    return float(checked["check_interval"])


def sized(limit):
    """The settings of a trial at ``limit``: its volumes are the limit, the margin and SPARE; refused when the
    brokers' volumes (tmpfs, in memory) would take more than half of the memory available."""
    volume = limit + FULL_SPEED_MARGIN + SPARE
    with open("/proc/meminfo", encoding="utf-8") as handle:
        available = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("MemAvailable:"))
    if BROKERS * volume > available / 2:
        raise BenchError(
            f"a limit of {mib(limit)} MiB needs {BROKERS} volumes of {mib(volume)} MiB in memory (tmpfs), more than "
            f"half of the {mib(available)} MiB available"
        )
    return argparse.Namespace(limit=limit, volume_size=volume, in_flight=None)


def recommended_trials(workdir, decider, args):
    """The three trials of --recommended for one decider; each result gets ``expected`` (lose or hold) and ``as
    expected``."""
    # The first trial's plugin checks as often as the collection ever has it check: a limit that loses there loses
    # at any interval.
    interval = float(quota_plugin_spec.SHORTEST_CHECK_INTERVAL) if decider == "plugin" else guard_default_interval()
    first = Trial(workdir, decider, interval, None, args).run()
    rate = first["fill_rate"]
    if rate is None:
        raise BenchError(f"{decider}: the first trial measured no fill rate: {describe(first)}")
    first["expected"] = "lose"
    limit = recommended_limit(rate, interval)
    if decider == "plugin":
        interval = plugin_interval(limit, rate)
    results = [first]
    for share, expected in ((1, "hold"), (2, "probe")):
        result = Trial(workdir, decider, interval, None, sized(limit // share // MIB * MIB)).run()
        result.update(expected=expected, measured_rate=rate, recommended=limit)
        results.append(result)
    for result in results:
        result["as_expected"] = result["expected"] == "probe" or bool(result["offline"]) == (
            result["expected"] == "lose"
        )
    return results


def recommended_report(results):
    header = (
        f"{'decider':<7} {'interval':>8} {'limit MiB':>9} {'recommended MiB':>15} {'fill MiB/s':>10} "
        f"{'overshoot MiB':>13} {'left MiB':>8} {'expected':>8}  log dirs"
    )
    return table(
        header,
        (
            f"{result['decider']:<7} {result['interval']:>7g}s {mib(result['limit']):>9} "
            f"{mib(result.get('recommended')):>15} {mib(result['fill_rate']):>10} {mib(result['overshoot']):>13} "
            f"{mib(result['least_free']):>8} {result['expected']:>8}  {log_dirs_text(result)}"
            f"{'' if result['as_expected'] else '  (NOT AS EXPECTED)'}"
            for result in results["trials"]
        ),
    )


def parse_rate(text):
    return None if text == "full" else parse_size(text)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--deciders", default="plugin,guard", help="plugin, guard or both (default: both)")
    parser.add_argument("--intervals", default="1,2,10,60", help="check intervals in seconds (default: 1,2,10,60)")
    parser.add_argument(
        "--rates", default="full,16M,4M", help="total write rates: full (as fast as the brokers take) or a size/s"
    )
    parser.add_argument("--volume-size", default="512M", help="every data log dir's tmpfs (default: 512M)")
    parser.add_argument("--limit", default="64M", help="free bytes per volume the throttle keeps (default: 64M)")
    parser.add_argument(
        "--in-flight",
        type=int,
        help="requests each producer may have in flight per connection (default: librdkafka's, unbounded)",
    )
    parser.add_argument(
        "--recommended",
        action="store_true",
        help="per decider, at the collection's defaults and full speed: a trial at --limit (measures the fill rate), "
        "one at the recommended limit for it (must keep every log dir) and a probe at half of it; --intervals "
        "and --rates do not apply",
    )
    parser.add_argument("--json", help="write every trial's figures to this file")
    args = parser.parse_args(argv)
    args.deciders = [name for name in args.deciders.split(",") if name]
    unknown = sorted(set(args.deciders) - {"plugin", "guard"})
    if unknown:
        parser.error(f"--deciders {','.join(unknown)}: expected plugin, guard or both")
    try:
        args.intervals = [float(value) for value in args.intervals.split(",") if value]
    except ValueError:
        parser.error(f"--intervals {args.intervals!r}: expected seconds separated by commas, such as 1,2,10,60")
    sizes = {}
    for option, text in (("--rates", args.rates), ("--volume-size", args.volume_size), ("--limit", args.limit)):
        try:
            sizes[option] = [parse_rate(value) for value in text.split(",") if value]
        except ClusterError:
            parser.error(
                f"{option} {text!r}: expected sizes such as 64M or 1G" + (" or full" if option == "--rates" else "")
            )
    args.rates, (args.volume_size,), (args.limit,) = sizes["--rates"], sizes["--volume-size"], sizes["--limit"]
    if args.in_flight is not None and args.in_flight < 1:
        parser.error(f"--in-flight {args.in_flight}: expected 1 or more requests")
    if args.limit >= args.volume_size:
        parser.error(f"--limit {args.limit} must be less than --volume-size {args.volume_size}")
    return args


def main(argv=None):
    args = parse_args(argv)
    if os.geteuid() != 0:
        log("error: needs root: every data log dir must be a tmpfs volume of its own (mount -t tmpfs)")
        return 1
    ensure_libs()
    workdir = tempfile.mkdtemp(prefix="race-bench-")
    trials = []
    try:
        for decider in args.deciders:
            if args.recommended:
                trials += recommended_trials(workdir, decider, args)
                continue
            for interval in args.intervals:
                for rate in args.rates:
                    trial = Trial(workdir, decider, interval, rate, args)
                    trials.append(trial.run())
    except (BenchError, ClusterError) as exc:
        log(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        log("interrupted; the cluster was stopped")
        return 130
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results = {"machine": platform.node(), "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d"), "trials": trials}
    finish(results, (recommended_report if args.recommended else report)(results), args.json)
    return 0 if all(trial.get("as_expected", True) for trial in trials) else 1


if __name__ == "__main__":
    sys.exit(main())
