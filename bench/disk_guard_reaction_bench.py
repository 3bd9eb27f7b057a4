"""Reaction time of the disk guard against the Strimzi quota plugin: one cluster, one filling volume, both at once.

Run from the repository root (see bench/README.md)::

    .venv/bin/python bench/disk_guard_reaction_bench.py [--trials N] [--interval S]
        [--phase aligned|independent] [--json FILE]

The question (the issue's target): when a volume crosses the limit, how much later than the plugin does the guard get
producers throttled, with the same binary rule, the same limit and the same interval? Target: at most 2 s later.

The setup, and why
------------------
The plugin cannot be measured beside the guard on one broker: a broker that loads
``io.strimzi.kafka.quotas.StaticQuotaCallback`` stores the dynamic client quotas the guard writes but ignores them.
Client quotas, and the quota callback, are per broker, though, and the callback class is a static property of each
broker. So this bench runs ONE real Apache Kafka cluster (KRaft, PLAINTEXT, one controller-only node) whose brokers
differ in that one property:

* broker 1 loads the real plugin (the jar kafka_testbed puts on every classpath), configured with the block the
  collection's own renderer writes for site.yml (``quota_plugin_spec``): produce quota BASE, per-volume
  ``min.available.bytes`` LIMIT, ``storage.check-interval`` = the interval, its admin client bootstrapped from the
  whole cluster;
* broker 2 has no plugin: Kafka's own quota manager enforces the dynamic client quotas, which ``python -m
  headroom_guard`` (policy strimzi, ``min_available_bytes`` LIMIT, ``default_producer_byte_rate`` BASE,
  ``--interval`` = the interval) keeps at BASE x factor for the ``<default>`` user (factor 0: 1 byte/s);
* broker 3 has no plugin and no producer: its data log dir is THE filling volume.

Every data log dir is a tmpfs of its own (kafka_testbed's ``volume_size``; mounting needs root). Both deciders observe
the same three volumes through DescribeLogDirs - the plugin from broker 1 with its admin client, the guard with its
own connection - so filling broker 3's volume crosses the same limit for both at the same instant: the same cluster
and the same volume object, not two copies of it. (Two clusters whose log dirs share one tmpfs would also see one
volume, but kafka_testbed mounts one tmpfs per log dir and has no option to share one, so that would need bind mounts
made behind its back, and the two deciders would still watch different clusters; this layout needs neither.) The
producers' data go to brokers 1 and 2, whose volumes stay far above the limit (checked before every trial), so
the only crossing is the one the bench makes.

Both sides get the same load: one producer each (topic on broker 1 for the plugin side, on broker 2 for the guard
side), the same settings (``kafka_testbed.traffic.PRODUCER_SETTINGS``: acks=all, one request in flight, linger 2 ms),
1 KiB records offered steadily at half the base rate, so that neither is throttled before the limit is crossed
(checked: a trial whose warm-up sees a throttled response is restarted) and both send a produce request about
every 8 ms. Both brokers are judged by one user (ANONYMOUS): the plugin's shared quota on broker 1, the
``<default>`` user's quota on broker 2.

One trial
---------
1. The filling volume is topped up to LIMIT + 8 MiB available (a ``filler.bin`` written with
   ``kafka_testbed.log_dir_probe.fill_volume``, long before T0: no crossing yet).
2. The guard is (re)started so that its first decision starts at one of the plugin's check instants
   (``--phase aligned``, the default) or at a uniformly random offset from them (``--phase independent``), see
   "Phase" below. The bench waits for the guard's first decision (factor 1) and for the plugin's ThrottleFactor
   gauge (JMX exporter) to read 1.0.
3. Fresh producers start on both sides and run 2 s of warm-up without any throttled response, then a further
   uniformly random 0..interval s, so that T0 falls anywhere in the check period.
4. T0: a 16 MiB ``trigger.bin`` is written into the filling volume (LIMIT + 8 MiB -> LIMIT - 8 MiB available; the
   write takes milliseconds, reported as "fill ms"); T0 is the moment the write returned.
5. Reaction of each side = the first produce response from that side's broker carrying throttle_time_ms > 0 (the
   producer's throttle callback; the producers are polled every millisecond) minus T0. The trial ends when both
   reacted, or after 3 x interval + 10 s (a side that never reacted fails the run).
6. ``trigger.bin`` is deleted, the producers dropped (a throttled connection stays muted for the throttle time, so
   every trial starts new ones) and the next trial waits until both sides are back at factor 1.

Each reaction is split into "detect" (T0 -> the decision that saw the crossing: the plugin's own log line
"Throttle Factor changed ... to 0.0" on broker 1, with millisecond timestamps, written before the broker resets its
quota; the guard's decision line on its stderr, read as it is written, after AlterClientQuotas returned) and "apply"
(that decision -> the first throttled response; for the guard, the quota reaching broker 2 through the controller's
metadata log). The guard prints its line after the quotas were applied, so its "apply" can come out a few
milliseconds below zero: the producer saw the throttle before the line was read.

Phase
-----
Both deciders are periodic: the plugin runs its check with a fixed DELAY of the interval after the previous check
ENDED (Java ``scheduleWithFixedDelay``, first check at broker start-up), the guard starts a decision every interval
(counted from the start of the previous one). A reaction therefore is "wait for the next check" (uniform over
0..interval, depending on where T0 falls) plus what the mechanism itself takes. With the two timers at an arbitrary
but fixed phase to each other, the per-trial difference guard - plugin is either +d or d - interval (d the phase
gap) and its median over a few trials says more about d than about the guard. So by default the guard is started
IN PHASE with the plugin (its first decision at the plugin's next check instant, predicted from the check
start/end lines in broker 1's log; the guard process is started through a two-line launcher that imports it and
calls its ``main()`` at that instant, which a service manager could equally do). T0 is still random, so each side's
reaction still spans the whole period, but both wait for the same tick and the difference isolates what the guard
adds over the plugin. The achieved phase gap (guard decision start - plugin check start, of the two rounds that
detected the crossing) is reported per trial: the plugin's period is the interval plus one check (fixed delay), the
guard's the interval, so the guard runs ahead by about a check's duration per period (tens of milliseconds within
a trial). A T0 that falls into that gap (about 1 % of trials) is seen by one side a whole period later; the median
is not moved by it. The guard's detecting decision is never its first one (which opens its connection): T0 comes at
least the 2 s warm-up after that. ``--phase independent`` starts the guard at a uniformly random offset instead:
then each difference also carries the two independent waits (it spreads over -interval..+interval around the same
centre), and only the mean over many trials estimates the mechanism's difference.

Reported: every trial, and per side the median and mean reaction (with detect and apply), the difference guard -
plugin per trial, its median and mean, and a PASS/FAIL line: PASS when every trial produced both reactions and the
median difference is at most 2 s. Progress goes to stderr, the table to stdout, everything with ``--json``.
Exit status: 0 PASS, 1 FAIL or error, 130 Ctrl-C, 143 SIGTERM. The cluster, the guard and the temporary directory are
torn down also on an error, Ctrl-C or SIGTERM.

Clocks: the plugin's log timestamps are the broker's wall clock in milliseconds, so every event is taken with
``time.time()`` (the same clock) and every figure is a difference of two such readings within seconds of each other.
"""

import argparse
import datetime
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
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
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from ansible_collections.headroom.kafka.plugins.module_utils import quota_plugin_spec  # noqa: E402
from kafka_testbed import properties  # noqa: E402
from kafka_testbed.client_config import confluent_config  # noqa: E402
from kafka_testbed.cluster import Cluster, ClusterError  # noqa: E402
from kafka_testbed.kafka_libs import ensure_libs  # noqa: E402
from kafka_testbed.log_dir_probe import fill_volume  # noqa: E402
from kafka_testbed.testing import base_port_for  # noqa: E402
from kafka_testbed.traffic import PRODUCER_SETTINGS, plugin_gauge  # noqa: E402

# pylint: enable=wrong-import-position

TARGET_SECONDS = 2.0  # the guard may react at most this much later than the plugin (median difference)
MIB = 1 << 20
BASE_RATE = 256 << 10  # produce quota at factor 1, bytes/s: the plugin's `produce`, the guard's default rate
OFFERED_RATE = BASE_RATE // 2  # what each producer offers: never throttled at factor 1
MESSAGE_SIZE = 1024  # about one produce request every 8 ms per producer
LIMIT = 32 * MIB  # min available bytes per volume, both sides
MARGIN = 8 * MIB  # the filling volume sits this far above the limit before T0, this far below after
TRIGGER_SIZE = 2 * MARGIN
VOLUME_SIZE = 256 * MIB  # every data log dir (tmpfs; only what is written takes memory)
PRODUCER_ROOM = 64 * MIB  # the producers' volumes must keep this much above the limit
WARMUP_SECONDS = 2.0
GUARD_LEAD = 2.0  # at least this long between starting the guard process and its first decision
UP_TIMEOUT = 180.0
PLUGIN_BROKER, GUARDED_BROKER, FILLED_BROKER = 1, 2, 3
SIDES = (("plugin", "reaction-plugin", PLUGIN_BROKER), ("guard", "reaction-guard", GUARDED_BROKER))

# The guard, started so that its first decision begins at a chosen wall-clock instant: everything its main() imports
# is imported first, so that only the wait separates the process start from the loop.
LAUNCHER = """\
import sys, time
from headroom_guard import cli, config, guard, metrics  # noqa: F401  (what main() imports, loaded before the wait)
start_at = float(sys.argv[1])
time.sleep(max(0.0, start_at - time.time()))
sys.exit(cli.main(sys.argv[2:]))
"""
DECISION = re.compile(
    r"factor (?P<factor>\S+) (?P<state>\S+) \(.*\): (?P<changed>quotas unchanged|\d+ quota entit\S+ changed) "
    r"in (?P<seconds>\d+\.\d+) s$"
)
LOG_LINE = re.compile(r"^\[(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] \w+ (?P<text>.*)$")
FACTOR_CHANGE = re.compile(
    r"Throttle Factor changed from ThrottleFactor\{throttleFactor=(?P<old>[-\d.E]+).*"
    r" to ThrottleFactor\{throttleFactor=(?P<new>[-\d.E]+)"
)


class BenchError(Exception):
    """The bench could not measure; the message says why."""


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


# -- the plugin's own account of its checks (broker 1's log) ---------------------------------------------------------
class PluginLog:
    """Check starts and ends and factor changes, read from broker 1's log as the broker writes it."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.pending = b""
        self.starts, self.ends, self.changes, self.failures = [], [], [], []

    def refresh(self):
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        data = self.pending + data
        lines = data.split(b"\n")
        self.pending = lines.pop()
        for raw in lines:
            match = LOG_LINE.match(raw.decode("utf-8", "replace"))
            if not match:
                continue
            text = match.group("text")
            if "io.strimzi.kafka.quotas" not in text:
                continue
            # The broker's log4j2 pattern writes local wall-clock time with milliseconds.
            stamp = datetime.datetime.strptime(match.group("stamp"), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if text.startswith("Updating cluster volume usage."):
                self.starts.append(stamp)
            elif text.startswith("Updated cluster volume usage."):
                self.ends.append(stamp)
            elif text.startswith("Throttle Factor changed"):
                change = FACTOR_CHANGE.search(text)
                if change:
                    self.changes.append((stamp, float(change.group("old")), float(change.group("new"))))
            elif "exception trying to describe" in text:
                self.failures.append((stamp, text))
        return self

    def check_duration(self):
        """Median seconds one check takes (start to end), over the last ten complete checks."""
        pairs = []
        for start in self.starts[-11:]:
            end = next((end for end in self.ends if end >= start), None)
            if end is not None:
                pairs.append(end - start)
        return statistics.median(pairs) if pairs else 0.0

    def next_check(self, interval, not_before):
        """The first check start at or after ``not_before``, predicted from the last completed check: the next one
        starts ``interval`` after it ended, each later one a check duration more than ``interval`` later."""
        self.refresh()
        if not self.ends:
            return None
        period = interval + self.check_duration()
        start = self.ends[-1] + interval
        while start < not_before:
            start += period
        return start

    def check_before(self, moment):
        return max((start for start in self.starts if start <= moment), default=None)


# -- the guard process ----------------------------------------------------------------------------------------------
class GuardProcess:
    """``python -m headroom_guard --config FILE --interval S``, started at a chosen instant; its decision lines are read
    as they are written, each stamped with the time it was read (the decision's end) and its own duration."""

    def __init__(self, config_path, interval):
        self.config_path, self.interval = config_path, interval
        self.process = None
        self.decisions, self.failures, self.lines = [], [], []
        self.reader = None

    def start(self, start_at):
        command = [
            sys.executable,
            "-c",
            LAUNCHER,
            f"{start_at:.6f}",
            "--config",
            self.config_path,
            "--interval",
            f"{self.interval:g}",
        ]
        self.decisions, self.failures = [], []
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # pylint: disable=consider-using-with
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        self.reader = threading.Thread(
            target=self._read, args=(self.process, self.decisions, self.failures), daemon=True
        )
        self.reader.start()

    def _read(self, process, decisions, failures):
        for line in process.stderr:
            now = time.time()
            line = line.rstrip("\n")
            self.lines.append(line)
            del self.lines[:-200]
            match = DECISION.search(line)
            if match:
                seconds = float(match.group("seconds"))
                decisions.append(
                    {
                        "end": now,
                        "start": now - seconds,
                        "seconds": seconds,
                        "factor": float(match.group("factor")),
                        "state": match.group("state"),
                        "changed": match.group("changed") != "quotas unchanged",
                        "change": match.group("changed"),
                    }
                )
            elif "decision failed" in line:
                failures.append((now, line))

    def running(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        """SIGTERM (the guard finishes the decision under way), SIGKILL after 30 s."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.reader is not None:
            self.reader.join(5)
        self.process = None

    def tail(self, lines=15):
        return "\n".join(self.lines[-lines:])


# -- the producers --------------------------------------------------------------------------------------------------
class SideProducer:
    """One side's producer: offers OFFERED_RATE steadily and notes the first produce response from its broker that
    carried a throttle time."""

    def __init__(self, cluster, name, topic, broker_id):
        self.name, self.topic, self.broker_id = name, topic, broker_id
        self.first_throttled = None
        self.first_throttle_ms = None
        self.throttled = 0
        self.other_brokers = []
        self.acked = self.offered = self.errors = 0
        # log_level 4: librdkafka's warnings and errors, not its notices (a dropped producer's purged queue).
        config = dict(
            PRODUCER_SETTINGS, **{"client.id": f"reaction-bench-{name}", "throttle_cb": self._throttle, "log_level": 4}
        )
        self.producer = Producer(confluent_config(cluster, **config))
        self.payload = b"x" * MESSAGE_SIZE
        self.started = time.time()

    def _throttle(self, event):
        now = time.time()
        if event.throttle_time <= 0:
            return
        if event.broker_id != self.broker_id:
            self.other_brokers.append((now, event.broker_id, event.throttle_time))
            return
        self.throttled += 1
        if self.first_throttled is None:
            self.first_throttled, self.first_throttle_ms = now, event.throttle_time * 1000

    def _delivered(self, error, message):
        if error is None:
            self.acked += len(message.value())
        else:
            self.errors += 1

    def pump(self, now):
        if self.offered < OFFERED_RATE * (now - self.started):
            try:
                self.producer.produce(self.topic, self.payload, on_delivery=self._delivered)
                self.offered += len(self.payload)
            except BufferError:
                pass
        self.producer.poll(0)

    def close(self):
        if self.producer is not None:
            self.producer.purge()
            self.producer.flush(1)
            self.producer = None


def sides_throttled(producers, name):
    """When the producer of side ``name`` first saw a throttled response (None: not yet)."""
    return next(producer.first_throttled for producer in producers if producer.name == name)


def pump_until(producers, condition, timeout, action=None):
    """Keep the producers going (one poll a millisecond) until ``condition()``; False after ``timeout`` seconds.
    ``action``: (when, callable) run once at that wall-clock time."""
    deadline = time.time() + timeout
    while True:
        now = time.time()
        for producer in producers:
            producer.pump(now)
        if action is not None and now >= action[0]:
            action[1]()
            action = None
            continue
        if action is None and condition():
            return True
        if now > deadline:
            return False
        time.sleep(0.001)


# -- the bench ------------------------------------------------------------------------------------------------------
def median(values):
    return statistics.median(values) if values else None


def mean(values):
    return statistics.fmean(values) if values else None


def available(path):
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def wait_for(condition, timeout, what, interval=0.1):
    deadline = time.time() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.time() > deadline:
            raise BenchError(f"{what}: not within {timeout:.0f} s")
        time.sleep(interval)


class ReactionBench:
    def __init__(self, workdir, interval, phase, seed):
        self.workdir, self.interval, self.phase = workdir, interval, phase
        self.random = random.Random(seed)
        self.cluster = None
        self.guard = None
        self.plugin_log = None
        self.producers = []
        self.filled = None
        self.trigger = None
        self.plugin_block = None
        self.guard_config = None

    # -- setup ----------------------------------------------------------------------------------------------------
    def start_cluster(self):
        if os.geteuid() != 0:
            raise BenchError("needs root: every data log dir must be a tmpfs volume of its own (mount -t tmpfs)")
        libs = ensure_libs()
        if not libs.plugin:
            raise BenchError(
                "no Strimzi quota plugin jar among the cluster's libraries; run 'python -m kafka_testbed libs'"
            )
        for attempt in range(1, 4):
            directory = os.path.join(self.workdir, f"cluster-{attempt}")
            cluster = Cluster(directory, "kafka")
            cluster.create(3, base_port=base_port_for(3, engine="kafka"), volume_size=f"{VOLUME_SIZE // MIB}M")
            self.cluster = cluster
            mounted = {volume["path"] for volume in cluster.info["volumes"]}
            if not all(path in mounted for entry in cluster.broker_nodes for path in entry["log_dirs"]):
                raise BenchError("a data log dir is not on a volume of its own: " + "; ".join(cluster.info["notes"]))
            self._configure_plugin(cluster)
            log(
                f"starting 3 brokers and a controller (Apache Kafka {cluster.info['kafka_version']}, "
                f"{os.path.basename(libs.plugin)} on broker {PLUGIN_BROKER}) ..."
            )
            try:
                cluster.up(UP_TIMEOUT)
                break
            except ClusterError as exc:
                cluster.down()
                self.cluster = None
                if "Address already in use" not in str(exc) or attempt == 3:
                    raise
                log("a port was taken while the brokers started; retrying on other ports")
        self.plugin_log = PluginLog(self.cluster.broker(PLUGIN_BROKER)["log_file"])
        self.filled = self.cluster.broker(FILLED_BROKER)["log_dirs"][0]
        self.trigger = os.path.join(self.filled, "trigger.bin")
        self._create_topics()
        return libs

    def _create_topics(self):
        """One single-replica topic per side, on that side's broker."""
        client = AdminClient(confluent_config(self.cluster, log_level=4))
        futures = client.create_topics(
            [NewTopic(topic, num_partitions=1, replica_assignment=[[broker_id]]) for _name, topic, broker_id in SIDES]
        )
        for future in futures.values():
            future.result(30)

    def _configure_plugin(self, cluster):
        """Broker 1 only: the plugin block the collection renders for site.yml (no other broker loads the plugin)."""
        spec = plugin_spec(BASE_RATE, LIMIT, self.interval)
        self.plugin_block = load_quota_plugin(cluster, spec, broker_ids=[PLUGIN_BROKER])

    def write_guard_config(self):
        config = {
            "bootstrap_servers": self.cluster.info["bootstrap_servers"].split(","),
            "policy": "strimzi",
            "min_available_bytes": LIMIT,
            "default_producer_byte_rate": BASE_RATE,
        }
        path = os.path.join(self.workdir, "guard.yml")
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle)
        self.guard_config = config
        self.guard = GuardProcess(path, self.interval)
        return config

    def check_setup(self):
        """The plugin runs on broker 1 (its own metrics), observes all three volumes and checks at the interval."""
        plugin = self.cluster.broker(PLUGIN_BROKER)
        produce = wait_for(
            lambda: plugin_gauge(plugin, "StaticQuotaCallback", "Produce"), 60, "the plugin's Produce gauge on broker 1"
        )
        if produce != BASE_RATE:
            raise BenchError(f"broker 1's plugin reports a produce quota of {produce}, not {BASE_RATE}")
        wait_for(
            lambda: plugin_gauge(plugin, "VolumeSource", "ActiveLogDirs") == 3,
            60,
            "the plugin observing all three log dirs",
        )
        wait_for(
            lambda: len(self.plugin_log.refresh().ends) >= 2,
            3 * self.interval + 30,
            "two storage checks in broker 1's log",
        )
        for broker_id in (GUARDED_BROKER, FILLED_BROKER):
            if properties.load(self.cluster.broker(broker_id)["properties"]).get(quota_plugin_spec.CALLBACK_CLASS_KEY):
                raise BenchError(f"broker {broker_id} must not load a quota callback")
        starts, ends = self.plugin_log.starts, self.plugin_log.ends
        log(
            f"the plugin checks storage: last check took {(ends[-1] - starts[-1]) * 1000:.0f} ms, "
            f"{starts[-1] - starts[-2]:.3f} s after the one before"
        )

    # -- the filling volume ---------------------------------------------------------------------------------------
    def prefill(self):
        """The filling volume at LIMIT + MARGIN available (give or take a page), the producers' far above the limit."""
        if os.path.exists(self.trigger):
            os.remove(self.trigger)
        now = available(self.filled)
        if not LIMIT + MARGIN // 2 < now < LIMIT + 3 * MARGIN // 2:
            filler = os.path.join(self.filled, "filler.bin")
            if now <= LIMIT + MARGIN // 2 and os.path.exists(filler):
                os.remove(filler)
            fill_volume(self.filled, leave=LIMIT + MARGIN)
        now = available(self.filled)
        if not LIMIT + MARGIN // 2 < now < LIMIT + 3 * MARGIN // 2:
            raise BenchError(f"could not bring {self.filled} to {LIMIT + MARGIN} bytes available (it has {now})")
        for _name, _topic, broker_id in SIDES:
            path = self.cluster.broker(broker_id)["log_dirs"][0]
            if available(path) < LIMIT + PRODUCER_ROOM:
                raise BenchError(
                    f"broker {broker_id}'s volume is down to {available(path)} bytes available: too many trials for "
                    f"{VOLUME_SIZE // MIB} MiB volumes"
                )
        return now

    def cross_limit(self):
        started = time.time()
        with open(self.trigger, "wb") as handle:
            remaining = TRIGGER_SIZE
            chunk = b"\0" * MIB
            while remaining:
                remaining -= handle.write(chunk[: min(len(chunk), remaining)])
        return started, time.time()

    # -- one trial ------------------------------------------------------------------------------------------------
    def restart_guard(self):
        """Stop the guard and start it again so that its first decision starts at a plugin check instant (aligned) or
        at a random offset from one (independent); returns the planned start, the plugin check it refers to and the
        start achieved. A guard that started late (a busy machine) is started again with more lead time."""
        lead = GUARD_LEAD
        for attempt in range(1, 4):
            self.guard.stop()
            tick = self.plugin_log.next_check(self.interval, time.time() + lead)
            if tick is None:
                raise BenchError("no completed storage check in broker 1's log to align the guard with")
            offset = 0.0 if self.phase == "aligned" else self.random.uniform(0, self.interval)
            start_at = tick + offset
            self.guard.start(start_at)
            wait_for(
                lambda: self.guard.decisions or self.guard.failures or not self.guard.running(),
                start_at - time.time() + 60,
                "the guard's first decision",
            )
            if not self.guard.decisions:
                raise BenchError(
                    f"the guard's first decision failed or it stopped (exit status {self.guard.process.poll()}):\n"
                    f"{self.guard.tail()}"
                )
            decision = self.guard.decisions[0]
            if decision["factor"] != 1.0:
                raise BenchError(
                    f"the guard's first decision is factor {decision['factor']} with the volume free:\n"
                    f"{self.guard.tail()}"
                )
            late = decision["start"] - start_at
            if late <= 0.25 or attempt == 3:
                if late > 0.25:
                    log(f"the guard's first decision started {late:.2f} s after the planned instant")
                return {
                    "planned_start": start_at,
                    "plugin_tick": tick,
                    "offset": offset,
                    "first_start": decision["start"],
                    "late": late,
                    "attempts": attempt,
                }
            lead *= 2
            log(f"the guard started {late:.2f} s late; starting it again with {lead:g} s lead")
        raise AssertionError("unreachable")

    def wait_plugin_open(self):
        plugin = self.cluster.broker(PLUGIN_BROKER)
        wait_for(
            lambda: plugin_gauge(plugin, "ThrottleFactor", "ThrottleFactor") == 1.0,
            3 * self.interval + 30,
            "the plugin's throttle factor back at 1.0",
            interval=0.25,
        )

    def new_producers(self):
        self.close_producers()
        self.producers = [SideProducer(self.cluster, name, topic, broker_id) for name, topic, broker_id in SIDES]
        return self.producers

    def close_producers(self):
        for producer in self.producers:
            producer.close()
        self.producers = []

    def warm_up(self):
        """Fresh producers that ran WARMUP_SECONDS with acknowledgements and not one throttled response."""
        for attempt in range(1, 6):
            producers = self.new_producers()
            until = time.time() + WARMUP_SECONDS
            pump_until(producers, lambda until=until: time.time() >= until, WARMUP_SECONDS + 1)
            throttled = [p.name for p in producers if p.throttled or p.other_brokers]
            silent = [p.name for p in producers if not p.acked]
            if not throttled and not silent:
                return producers
            log(
                f"warm-up {attempt}: {'throttled: ' + ', '.join(throttled) if throttled else ''}"
                f"{' no acknowledgement: ' + ', '.join(silent) if silent else ''}; starting again"
            )
            self.close_producers()
            time.sleep(1.0)
        raise BenchError("the producers could not run unthrottled before the limit was crossed")

    def trial(self, number, trials):
        self.prefill()
        alignment = self.restart_guard()
        self.wait_plugin_open()
        producers = self.warm_up()
        delay = self.random.uniform(0, self.interval)
        crossing = {}

        def cross():
            crossing["started"], crossing["t0"] = self.cross_limit()

        pump_until(
            producers,
            lambda: all(p.first_throttled for p in producers),
            delay + 3 * self.interval + 10,
            action=(time.time() + delay, cross),
        )
        after = available(self.filled)
        os.remove(self.trigger)
        self.close_producers()
        t0 = crossing["t0"]
        early = [
            p.name for p in producers if (p.first_throttled is not None and p.first_throttled < t0) or p.other_brokers
        ]
        if early:
            log(f"trial {number}: {', '.join(early)} throttled before T0 or by another broker; this trial is run again")
            return None
        record = {
            "trial": number,
            "t0": t0,
            "fill_ms": (t0 - crossing["started"]) * 1000,
            "available_after": after,
            "delay_after_warmup": delay,
            "guard_alignment": alignment,
            "load_1min": os.getloadavg()[0],
        }
        # The guard prints its decision line after AlterClientQuotas returned, so a producer may see the throttle a few
        # milliseconds before the line is read; the plugin logs before the broker applies. Give both lines a moment.
        deadline = time.time() + 3.0
        while time.time() < deadline and not (
            (
                sides_throttled(producers, "guard") is None
                or any(d["end"] >= t0 and d["factor"] == 0.0 for d in self.guard.decisions)
            )
            and (
                sides_throttled(producers, "plugin") is None
                or any(stamp >= t0 - 1 and new == 0.0 for stamp, _old, new in self.plugin_log.refresh().changes)
            )
        ):
            time.sleep(0.05)
        self.plugin_log.refresh()
        last_check = self.plugin_log.check_before(t0)
        record["t0_after_plugin_check"] = t0 - last_check if last_check is not None else None
        sides = {producer.name: producer for producer in producers}
        record["plugin"] = self._plugin_side(sides["plugin"], t0)
        record["guard"] = self._guard_side(sides["guard"], t0)
        if record["plugin"]["reaction"] is not None and record["guard"]["reaction"] is not None:
            record["difference"] = record["guard"]["reaction"] - record["plugin"]["reaction"]
        else:
            record["difference"] = None
        started_p, started_g = record["plugin"].get("check_started"), record["guard"].get("decision_started")
        record["phase_gap"] = started_g - started_p if started_p is not None and started_g is not None else None
        log(
            f"trial {number}/{trials}: T0 {record['t0_after_plugin_check'] or 0:.2f} s into the plugin's period; "
            f"plugin {fmt(record['plugin']['reaction'])} s, guard {fmt(record['guard']['reaction'])} s, "
            f"difference {fmt(record['difference'], signed=True)} s (load average {record['load_1min']:.2f})"
        )
        return record

    def _plugin_side(self, producer, t0):
        side = {
            "reaction": None,
            "throttle_ms": producer.first_throttle_ms,
            "throttled_responses": producer.throttled,
            "acked_bytes": producer.acked,
        }
        if producer.first_throttled is not None:
            side["reaction"] = producer.first_throttled - t0
        change = next(
            ((stamp, old, new) for stamp, old, new in self.plugin_log.changes if stamp >= t0 - 1 and new == 0.0), None
        )
        if change is not None:
            side["decided"] = change[0] - t0
            check = self.plugin_log.check_before(change[0])
            side["check_started"] = check - t0 if check is not None else None
            if side["reaction"] is not None:
                side["apply"] = side["reaction"] - side["decided"]
        side["check_failures"] = [text for stamp, text in self.plugin_log.failures if stamp >= t0 - self.interval]
        return side

    def _guard_side(self, producer, t0):
        side = {
            "reaction": None,
            "throttle_ms": producer.first_throttle_ms,
            "throttled_responses": producer.throttled,
            "acked_bytes": producer.acked,
            "failed_decisions": [line for _at, line in self.guard.failures],
        }
        if producer.first_throttled is not None:
            side["reaction"] = producer.first_throttled - t0
        decision = next((d for d in self.guard.decisions if d["end"] >= t0 and d["factor"] == 0.0), None)
        if decision is not None:
            side["decided"] = decision["end"] - t0
            side["decision_started"] = decision["start"] - t0
            side["decision_seconds"] = decision["seconds"]
            if side["reaction"] is not None:
                side["apply"] = side["reaction"] - side["decided"]
        return side

    def teardown(self):
        """Producers, guard, cluster (its volumes unmounted); Ctrl-C and SIGTERM wait meanwhile, so nothing is left."""
        previous = {number: signal.signal(number, signal.SIG_IGN) for number in (signal.SIGINT, signal.SIGTERM)}
        try:
            try:
                self.close_producers()
            except Exception as exc:  # pylint: disable=broad-except  # keep tearing down
                log(f"closing the producers failed: {exc}")
            if self.guard is not None:
                self.guard.stop()
            if self.cluster is not None and self.cluster.info is not None:
                log("tearing the cluster down")
                self.cluster.down()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)


# -- report ---------------------------------------------------------------------------------------------------------
def fmt(value, signed=False, digits=2):
    """A figure for the table: '-' for none, '+' on signed ones."""
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def summarize(trials):
    def column(side, key):
        return [t[side][key] for t in trials if t[side].get(key) is not None]

    summary = {}
    for side in ("plugin", "guard"):
        reactions = column(side, "reaction")
        summary[side] = {
            "reacted": len(reactions),
            "median": median(reactions),
            "mean": mean(reactions),
            "min": min(reactions, default=None),
            "max": max(reactions, default=None),
            "detect_median": median(column(side, "decided")),
            "apply_median": median(column(side, "apply")),
        }
    differences = [t["difference"] for t in trials if t["difference"] is not None]
    gaps = [t["phase_gap"] for t in trials if t["phase_gap"] is not None]
    summary["difference"] = {
        "median": median(differences),
        "mean": mean(differences),
        "min": min(differences, default=None),
        "max": max(differences, default=None),
        "of_medians": (
            summary["guard"]["median"] - summary["plugin"]["median"]
            if summary["guard"]["median"] is not None and summary["plugin"]["median"] is not None
            else None
        ),
    }
    summary["phase_gap_median"] = median(gaps)
    # Each difference minus the phase gap of that trial's two detecting rounds: what the guard's mechanism adds when
    # both decisions start at the same instant (about the difference itself in phase aligned).
    without_phase = [
        t["difference"] - t["phase_gap"] for t in trials if t["difference"] is not None and t["phase_gap"] is not None
    ]
    summary["difference"]["without_phase_gap_median"] = median(without_phase)
    complete = len(differences) == len(trials) and trials
    summary["passed"] = bool(complete and summary["difference"]["median"] <= TARGET_SECONDS)
    return summary


COLUMNS = (  # header, value of a trial, digits, signed, summarized (median/mean rows)
    ("trial", lambda t: t["trial"], 0, False, False),
    ("T0 in period", lambda t: t["t0_after_plugin_check"], 2, False, False),
    ("fill ms", lambda t: t["fill_ms"], 1, False, False),
    ("plugin detect", lambda t: t["plugin"].get("decided"), 2, False, True),
    ("plugin apply", lambda t: t["plugin"].get("apply"), 3, False, True),
    ("plugin reaction", lambda t: t["plugin"]["reaction"], 2, False, True),
    ("guard detect", lambda t: t["guard"].get("decided"), 2, False, True),
    ("guard apply", lambda t: t["guard"].get("apply"), 3, False, True),
    ("guard reaction", lambda t: t["guard"]["reaction"], 2, False, True),
    ("guard - plugin", lambda t: t["difference"], 2, True, True),
    ("phase gap ms", lambda t: None if t["phase_gap"] is None else t["phase_gap"] * 1000, 0, True, True),
)


def table(trials):
    rows = [
        [
            fmt(get(t), signed, digits) if name != "trial" else str(t["trial"])
            for name, get, digits, signed, _s in COLUMNS
        ]
        for t in trials
    ]
    summary_rows = []
    for label, function in (("median", median), ("mean", mean)):
        summary_rows.append(
            [label]
            + [
                fmt(function([v for v in map(get, trials) if v is not None]), signed, digits) if summarized else ""
                for _name, get, digits, signed, summarized in COLUMNS[1:]
            ]
        )
    headers = [name for name, *_rest in COLUMNS]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, *summary_rows, strict=True)]
    rule = "  ".join("-" * width for width in widths)
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(headers, widths, strict=True)), rule]
    lines += ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    lines.append(rule)
    lines += ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in summary_rows]
    return lines


def report(results):
    settings, trials, summary = results["settings"], results["trials"], results["summary"]
    host = settings["machine"]
    lines = [
        (
            "Disk guard vs Strimzi quota plugin: reaction to one volume crossing the limit "
            f"({len(trials)} trials; {host['cores']} cores, {host['cpu']}; load average {host['load_before']} before, "
            f"{host['load_after']} after)"
        ),
        (
            f"One Apache Kafka {settings['kafka_version']} cluster: broker {PLUGIN_BROKER} loads "
            f"{settings['plugin_jar']}, broker {GUARDED_BROKER} is held by python -m headroom_guard (no plugin), "
            f"broker {FILLED_BROKER}'s log dir is the filling volume."
        ),
        (
            f"Both: binary rule, min available bytes {LIMIT // MIB} MiB per volume, "
            f"a check every {settings['interval']:g} s, produce quota {BASE_RATE // 1024} KiB/s x factor; "
            f"each producer offers {OFFERED_RATE // 1024} KiB/s in {MESSAGE_SIZE} B records. "
            f"Guard phase: {settings['phase']}."
        ),
        (
            f"T0 = {TRIGGER_SIZE // MIB} MiB written into the filling volume (limit + {MARGIN // MIB} MiB -> limit - "
            f"{MARGIN // MIB} MiB available); reaction = first produce response with a throttle time, after T0; "
            "detect = T0 -> the decision that saw it; apply = that decision -> the throttled response. "
            "Seconds after T0 unless named."
        ),
        "",
    ]
    lines += table(trials)
    difference = summary["difference"]
    lines.append("")
    for side in ("plugin", "guard"):
        figures = summary[side]
        lines.append(
            f"{side + ' reaction:':<16} median {fmt(figures['median'])} s, mean {fmt(figures['mean'])} s, range "
            f"{fmt(figures['min'])}..{fmt(figures['max'])} s ({figures['reacted']}/{len(trials)} trials)"
        )
    lines.append(
        f"{'guard - plugin:':<16} median {fmt(difference['median'], True)} s, mean {fmt(difference['mean'], True)} s, "
        f"range {fmt(difference['min'], True)}..{fmt(difference['max'], True)} s; difference of the medians "
        f"{fmt(difference['of_medians'], True)} s"
    )
    lines.append(
        f"{'':<16} minus each trial's phase gap (both decisions started together): median "
        f"{fmt(difference['without_phase_gap_median'], True)} s"
    )
    lines.append(
        f"run time {results['run_seconds']:.0f} s (cluster up after {results['cluster_up_seconds']:.0f} s); "
        f"trials run again: {settings.get('repeated_trials', 0)}; seed {settings['seed']}"
    )
    missing = (
        ""
        if summary["plugin"]["reacted"] == summary["guard"]["reacted"] == len(trials)
        else "; a side did not react in every trial"
    )
    lines.append(
        f"{'PASS' if summary['passed'] else 'FAIL'}  the guard reacts at most {TARGET_SECONDS:g} s later than "
        f"the plugin (median of guard - plugin over {len(trials)} trials, interval {settings['interval']:g} s, phase "
        f"{settings['phase']}): {fmt(difference['median'], True)} s{missing}"
    )
    return "\n".join(lines)


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine():
    return {
        "cores": os.cpu_count(),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "load_before": ", ".join(f"{value:.2f}" for value in os.getloadavg()),
    }


def run(args):
    started = time.time()
    workdir = tempfile.mkdtemp(prefix="bench-guard-reaction-")
    bench = ReactionBench(workdir, args.interval, args.phase, args.seed)
    settings = {
        "interval": args.interval,
        "phase": args.phase,
        "trials": args.trials,
        "seed": args.seed,
        "limit_bytes": LIMIT,
        "base_rate": BASE_RATE,
        "offered_rate": OFFERED_RATE,
        "message_size": MESSAGE_SIZE,
        "margin_bytes": MARGIN,
        "volume_size": VOLUME_SIZE,
        "target_seconds": TARGET_SECONDS,
        "machine": machine(),
    }
    log(
        f"{args.trials} trials at interval {args.interval} s, guard phase {args.phase}; "
        f"load average {settings['machine']['load_before']}"
    )
    try:
        libs = bench.start_cluster()
        settings.update(
            kafka_version=bench.cluster.info["kafka_version"],
            plugin_jar=os.path.basename(libs.plugin),
            plugin_properties=bench.plugin_block,
        )
        up_seconds = time.time() - started
        settings["guard_config"] = bench.write_guard_config()
        bench.check_setup()
        trials = []
        repeated = 0
        while len(trials) < args.trials:
            record = bench.trial(len(trials) + 1, args.trials)
            if record is None:
                repeated += 1
                if repeated > args.trials:
                    raise BenchError("too many trials saw a throttled response before the limit was crossed")
                continue
            trials.append(record)
        settings["repeated_trials"] = repeated
    except BenchError:
        if bench.guard is not None and bench.guard.lines:
            log("the guard's last lines:\n" + bench.guard.tail())
        raise
    finally:
        settings["machine"]["load_after"] = ", ".join(f"{value:.2f}" for value in os.getloadavg())
        bench.teardown()
        shutil.rmtree(workdir, ignore_errors=True)
    results = {
        "settings": settings,
        "trials": trials,
        "cluster_up_seconds": up_seconds,
        "run_seconds": time.time() - started,
    }
    results["summary"] = summarize(trials)
    return results


class Terminated(Exception):
    """SIGTERM: stop like Ctrl-C, tearing everything down."""


def _terminate(_signum, _frame):
    raise Terminated()


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10, help="limit crossings to measure (default 10)")
    parser.add_argument(
        "--interval",
        type=int,
        default=5,
        help="seconds between checks, the plugin's storage.check-interval and the guard's --interval (default 5; "
        "at least 2, the plugin reads whole seconds)",
    )
    parser.add_argument(
        "--phase",
        choices=("aligned", "independent"),
        default="aligned",
        help=(
            "start the guard's decisions at the plugin's check instants (default) or at a random offset, "
            "anew each trial"
        ),
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="seed of the random T0 and phase offsets (default: random)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the settings, every trial and the summary as JSON")
    args = parser.parse_args(argv)
    if args.trials < 1:
        parser.error("--trials must be at least 1")
    if args.interval < 2:
        parser.error("--interval must be at least 2 (the plugin times a check out after interval - 1 s)")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 32)
    return args


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        results = run(args)
    except KeyboardInterrupt:
        log("interrupted; the cluster and the guard were stopped")
        return 130
    except Terminated:
        log("terminated; the cluster and the guard were stopped")
        return 128 + signal.SIGTERM
    except (BenchError, ClusterError) as exc:
        log(f"error: {exc}")
        return 1
    finish(results, report(results), args.json)
    return 0 if results["summary"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
