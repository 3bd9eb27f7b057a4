"""The race at full speed on the fleet of test hosts: Kafka under systemd on hosts reached over the network, the
Strimzi plugin installed by site.yml and the disk guard by its role, writers on this machine as a user's producers.

Run from the repository root (see bench/README.md)::

    .venv/bin/python bench/race_fleet_bench.py [--deciders plugin,guard] [--json FILE]

Per decider, one fleet (3 broker hosts with a data volume each, a tmpfs, and a controller host), the collection's
defaults and four trials in this order, each on a topic of 3 partitions with 3 replicas (one leader per broker, so that
every volume receives everything written) and writers at full speed (race_bench's writers, from this machine):

1. **rate**: the writers for RATE_SECONDS with every volume far above the limit: the peak fill rate R (the fastest a
   volume filled over a second);
2. **hold**: the limit the collection recommends for R (limit_sizing with the plugin's measured parts), configured the
   way a user configures it: ``kafka_quotas.peak_fill_rate`` R for the plugin (so the collection checks the limit and
   chooses the check interval), the role's ``disk_guard_interval`` for the guard. Must keep every log dir online;
3. **half**: half of that limit at the same interval, a probe with no expectation (how much margin the rule keeps);
4. **lose**: 64 MiB at the shortest interval the collection ever chooses (the plugin) or the role's default (the
   guard). Must take a log dir offline: the trials have teeth. It runs last, since a broker whose only log dir failed
   has shut down.

Before a race every volume is resized (tmpfs remount, on the host) to leave its limit plus MARGIN free, so that the
limit is crossed within seconds. The free space of every volume is read every 20 ms through the host's root
(/proc/PID/root of the container: no request to the host on the way). What each trial reports is race_bench's, and the
reaction in its parts: detect (the crossing to the decision that saw it), apply (the decision to the first produce
response carrying a throttle time: for the guard, the quota through the controller to every broker), in flight (what
the leaders accepted after that response) and replication (what still landed on a volume beyond that: followers
fetching what their leaders had accepted, which client quotas never throttle).
"""

import argparse
import concurrent.futures
import os
import platform
import re
import sys
import tempfile
import time

from local_ansible import (
    PLAYBOOK,
    ensure_collection_link,
    playbook_environment,
    progress,
    timed_playbook,
    without_interrupts,
    write_yaml,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
sys.path[:0] = [ROOT, COLLECTIONS]

# pylint: disable=wrong-import-position
from bench_io import finish  # noqa: E402
from confluent_kafka import KafkaException  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from disk_guard_reaction_bench import DECISION, PluginLog, wait_for  # noqa: E402
from race_bench import (  # noqa: E402
    MIB,
    NO_SPACE,
    QUOTA,
    TOPIC,
    BenchError,
    Writers,
    crossing,
    fill_rate_before,
    free_at,
    guard_default_interval,
    least_free,
    mib,
    race,
    recommended_limit,
    seconds,
    table,
)

from ansible_collections.headroom.kafka.plugins.module_utils import quota_plugin_spec  # noqa: E402
from kafka_testbed.client_config import confluent_config  # noqa: E402
from kafka_testbed.hosts import image  # noqa: E402
from kafka_testbed.hosts.docker import docker, ensure_daemon  # noqa: E402
from kafka_testbed.hosts.fleet import HostFleet  # noqa: E402
from kafka_testbed.nodes import ClusterError  # noqa: E402

# pylint: enable=wrong-import-position

BROKERS = 3
LOSE_LIMIT = 64 * MIB
MARGIN = 96 * MIB  # free above the limit when the writers start: about two seconds at full speed
RATE_SECONDS = 8.0
RATE_FREE = 2048 * MIB  # free space of every volume while the rate is measured: never crossed
OFFLINE_LOOK = 0.5  # seconds between two looks at the brokers' units and journals
GUARD_SERVICE = "headroom-disk-guard"
SITE = os.path.join(ROOT, "playbooks", "site.yml")
# Segments of a deleted topic go after a second, so that a trial's volumes start with little of the last one's data.
FLEET_PROPERTIES = {"file.delete.delay.ms": "1000"}


def log(text):
    progress(f"[{time.strftime('%H:%M:%S')}] {text}")


# -- the fleet's volumes, units and journals -------------------------------------------------------------------------
class Volumes:
    """Every broker's data volume, read from this machine through its container's root, and resized on its host."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.paths = {}
        for entry in fleet.broker_nodes:
            pid = docker("inspect", "-f", "{{.State.Pid}}", entry["container"]).strip()
            self.paths[entry["id"]] = (entry["log_dirs"][0], f"/proc/{pid}/root{entry['log_dirs'][0]}")

    def free(self):
        return {broker: _statvfs(path)[0] for broker, (_log_dir, path) in self.paths.items()}

    def leave_free(self, free):
        """Resize every volume (tmpfs remount on its host) so that ``free`` bytes are left on it."""
        for broker, (log_dir, path) in self.paths.items():
            used = _statvfs(path)[1]
            self.fleet.exec(broker, "mount", "-o", f"remount,size={used + free}", log_dir)

    def wait_emptied(self, timeout=120.0):
        """Until no volume holds more than 64 MiB (a deleted topic's segments are gone)."""
        wait_for(
            lambda: all(_statvfs(path)[1] < 64 * MIB for _log_dir, path in self.paths.values()),
            timeout,
            "the deleted topic's segments removed",
            interval=0.5,
        )


def _statvfs(path):
    """(free bytes, used bytes) of the file system at ``path``."""
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize, (stat.f_blocks - stat.f_bfree) * stat.f_frsize


class OfflineWatch:
    """The brokers whose unit is no longer active or whose journal says a log dir failed for lack of space, since
    ``since``: one look at every host at once, at most every OFFLINE_LOOK s (a look runs a command on each host)."""

    def __init__(self, fleet, since):
        self.fleet = fleet
        self.down = set()
        self.looked = 0.0
        self.script = (
            f"systemctl is-active {image.KAFKA_SERVICE}; journalctl -u {image.KAFKA_SERVICE} --since @{int(since)} "
            "-o cat --no-pager | grep -c -F " + " ".join(f"-e '{marker.decode()}'" for marker in NO_SPACE)
        )

    def _down(self, entry):
        lines = self.fleet.exec(entry["id"], "sh", "-c", self.script, check=False).split()
        return not lines or lines[0] != "active" or (len(lines) > 1 and lines[-1] != "0")

    def look(self):
        if time.time() - self.looked < OFFLINE_LOOK:
            return sorted(self.down)
        self.looked = time.time()
        pending = [entry for entry in self.fleet.broker_nodes if entry["id"] not in self.down]
        if pending:
            with concurrent.futures.ThreadPoolExecutor(max_workers=len(pending)) as pool:
                down = pool.map(self._down, pending)
            self.down |= {entry["id"] for entry, is_down in zip(pending, down, strict=True) if is_down}
        return sorted(self.down)


def kafka_log(fleet, broker, since):
    """What a broker logged from a second before ``since`` on (it logs to stdout: its unit's journal)."""
    return fleet.journal(broker, None, image.KAFKA_SERVICE, since - 1, "cat")


def plugin_logs(fleet, since, workdir):
    """Every broker's plugin log lines since ``since``, read from its journal (the broker logs to stdout)."""
    logs = []
    for entry in fleet.broker_nodes:
        path = os.path.join(workdir, f"broker-{entry['id']}.log")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(kafka_log(fleet, entry["id"], since))
        logs.append(PluginLog(path).refresh())
    return logs


JOURNAL_LINE = re.compile(r"^(?P<stamp>\d+\.\d+) \S+ [^:]+: (?P<text>.*)$")


def guard_decisions(fleet, since):
    """The guard's decisions since ``since``, from its journal on the first broker host."""
    return decisions_in(fleet.journal(1, None, GUARD_SERVICE, since - 1, "short-unix"), since)


def decisions_in(text, since):
    """The guard's decision lines in journalctl's short-unix output, from ``since`` on: each with its end (the
    journal's time of the line), its duration and its factor."""
    decisions = []
    for line in text.splitlines():
        match = JOURNAL_LINE.match(line)
        decision = DECISION.search(match.group("text")) if match else None
        if decision and float(match.group("stamp")) >= since:
            decisions.append(
                {
                    "end": float(match.group("stamp")),
                    "seconds": float(decision.group("seconds")),
                    "factor": float(decision.group("factor")),
                }
            )
    return decisions


# -- configuring the deciders the way a user does --------------------------------------------------------------------
class Deciders:
    def __init__(self, fleet, workdir):
        self.fleet, self.workdir = fleet, workdir
        self.env = playbook_environment(COLLECTIONS, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def _play(self, name, playbook, variables):
        extra = write_yaml(os.path.join(self.workdir, f"{name}-vars.yml"), {"kafka": {"vars": variables}})
        command = [PLAYBOOK, "-i", self.fleet.info["inventory"], "-i", extra, playbook]
        return timed_playbook(command, self.env, self.workdir, 1800, name)[0]

    def plugin(self, kafka_quotas):
        """site.yml with this ``kafka_quotas`` (it restarts every broker whose plugin settings change); the check
        interval in the properties it wrote."""
        variables = {
            "kafka_quotas": dict(kafka_quotas, type="strimzi", producer_byte_rate=QUOTA),
            "quota_plugin_admin": {"bootstrap_servers": self.fleet.info["bootstrap_servers"]},
            "kafka_usage_replication_factor": 3,
            "rolling_restart_health_timeout": 180,
        }
        seconds_taken = self._play("site", SITE, variables)
        written = self.fleet.exec(1, "grep", "-h", "storage.check-interval", image.KAFKA_PROPERTIES)
        interval = float(written.strip().split("=", 1)[1])
        log(f"site.yml: {seconds_taken:.0f} s, storage.check-interval {interval:g} s")
        return interval

    def guard(self, limit, interval):
        """The disk_guard role on the first broker host, the guard deciding on ``limit`` every ``interval`` s
        (``disk_guard_interval``), with the role's other defaults."""
        play = [
            {
                "name": "The disk guard",
                "hosts": "kafka[0]",
                "become": True,
                "gather_facts": False,
                "roles": [
                    {
                        "role": "headroom.kafka.disk_guard",
                        "vars": {
                            "disk_guard_config": "{{ kafka_connection | combine(race_options) }}",
                        },
                    }
                ],
            }
        ]
        playbook = write_yaml(os.path.join(self.workdir, "guard.yml"), play)
        options = {"policy": "strimzi", "min_available_bytes": limit, "default_producer_byte_rate": QUOTA}
        variables = {"race_options": options, "disk_guard_interval": int(interval)}
        seconds_taken = self._play("guard", playbook, variables)
        log(f"disk_guard role: {seconds_taken:.0f} s")


# -- one trial -------------------------------------------------------------------------------------------------------
class FleetTrial:
    def __init__(self, fleet, volumes, decider, workdir):
        self.fleet, self.volumes, self.decider, self.workdir = fleet, volumes, decider, workdir
        self.admin = AdminClient(confluent_config(fleet, log_level=3))

    def fresh_topic(self):
        """The trial's topic, made again: one leader per broker, 3 replicas; the last trial's data gone."""
        if TOPIC in self.admin.list_topics(timeout=30).topics:
            self.admin.delete_topics([TOPIC], operation_timeout=30)[TOPIC].result(60)
            wait_for(lambda: TOPIC not in self.admin.list_topics(timeout=30).topics, 60, "the old topic deleted")
            self.volumes.wait_emptied()

    def create_topic(self):
        assignment = [[(leader + step) % BROKERS + 1 for step in range(BROKERS)] for leader in range(BROKERS)]
        topic = NewTopic(
            TOPIC, num_partitions=BROKERS, replica_assignment=assignment, config={"min.insync.replicas": "1"}
        )
        wait_for(lambda: self._created(topic), 120, "the trial's topic created")

    def _created(self, topic):
        try:
            self.admin.create_topics([topic])[TOPIC].result(30)
        except Exception as exc:  # pylint: disable=broad-except  # a topic still being deleted: try again
            if "already exists" in str(exc) and TOPIC in self.admin.list_topics(timeout=30).topics:
                return True
            log(f"creating the topic: {exc}")
            return False
        return True

    def race(self, limit, interval, duration=None):
        """Writers at full speed from limit + MARGIN free (or for ``duration`` s from RATE_FREE) until the throttle held
        for SETTLE s or a log dir went offline; the trial's figures."""
        since = time.time()
        offline = OfflineWatch(self.fleet, since)
        samples, writers, began, ended_because = race(
            Writers(self.fleet),
            self.volumes.free,
            offline.look,
            duration or MARGIN / (20 * MIB) + 2 * interval + 60,
            until_throttled=duration is None,
        )
        return self._measure(samples, writers, offline, began, ended_because, limit, interval)

    def _decided(self, since):
        if self.decider == "plugin":
            logs = plugin_logs(self.fleet, since, self.workdir)
            changes = [at for plugin_log in logs for at, _old, new in plugin_log.changes if new < 1.0 and at >= since]
            return min(changes, default=None), max((plugin_log.check_duration() for plugin_log in logs), default=0.0)
        decisions = guard_decisions(self.fleet, since)
        throttling = [d for d in decisions if d["factor"] < 1.0]
        return (throttling[0]["end"] if throttling else None), max((d["seconds"] for d in decisions), default=0.0)

    def _measure(self, samples, writers, offline, began, ended_because, limit, interval):
        crossed = crossing(samples, limit)
        throttled = min((w.first_throttled for w in writers if w.first_throttled), default=None)
        decided, check_seconds = self._decided(crossed or began)
        rate = fill_rate_before(samples, crossed) if crossed else peak_rate(samples)
        lowest = least_free(samples)
        after = None
        if throttled is not None:
            at_throttle = free_at(samples, throttled)
            after = max(at_throttle[b] - min(free[b] for at, free in samples if at >= throttled) for b in at_throttle)
        in_flight = sum(w.acked_after_throttle for w in writers)
        return {
            "decider": self.decider,
            "interval": interval,
            "limit": limit,
            "fill_rate": rate,
            "detect": decided - crossed if decided and crossed else None,
            "apply": throttled - decided if throttled and decided else None,
            "reaction": throttled - crossed if throttled and crossed else None,
            "check_seconds": check_seconds,
            "overshoot": limit - lowest if lowest is not None and lowest < limit else 0,
            "least_free": lowest,
            "after_throttle": after,
            "in_flight": in_flight if throttled else None,
            "replication": max(after - in_flight, 0) if after is not None else None,
            "offline": offline.look(),
            "acked": sum(w.acked for w in writers),
            "ended": ended_because,
        }


def peak_rate(samples, window=1.0, skip=2.0):
    """The fastest any volume filled over ``window`` seconds, after the first ``skip`` s (connecting, metadata)."""
    if not samples:
        return None
    start = samples[0][0] + skip
    rates = [fill_rate_before(samples, at, window) for at, _free in samples if at >= start + window]
    return max((rate for rate in rates if rate is not None), default=None)


# -- the four trials of a decider ------------------------------------------------------------------------------------
def memory_budget():
    """Half of the memory available now: what the brokers' volumes (tmpfs, in memory) may take."""
    with open("/proc/meminfo", encoding="utf-8") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("MemAvailable:")) // 2


def fits(limit, budget):
    """Whether a trial at ``limit`` fits in memory: one that loses writes its limit and MARGIN on every volume."""
    return BROKERS * (limit + MARGIN) <= budget


def guard_interval_fitting(rate, interval, budget):
    """The longest whole interval, up to ``interval``, whose recommended limit at ``rate`` fits in memory."""
    for seconds_each in range(int(interval), 0, -1):
        if fits(recommended_limit(rate, seconds_each), budget):
            return float(seconds_each)
    raise BenchError(
        f"at {mib(rate)} MiB/s even a 1 s interval needs {BROKERS} volumes of "
        f"{mib(recommended_limit(rate, 1) + MARGIN)} MiB in memory, more than the {mib(budget)} MiB budget"
    )


def decider_trials(decider, workdir, results):
    """The four trials of ``decider`` on a fleet of its own, each appended to ``results`` as it ends."""
    budget = memory_budget()
    fleet = HostFleet(os.path.join(workdir, f"fleet-{decider}"))
    try:
        log(f"{decider}: a fleet of {BROKERS} broker hosts and a controller host")
        fleet.up_fleet(BROKERS, 1, volume_size="256M", extra_properties=FLEET_PROPERTIES, timeout=300)
        volumes = Volumes(fleet)
        deciders = Deciders(fleet, workdir)
        trial = FleetTrial(fleet, volumes, decider, workdir)
        own = []  # this decider's trials

        def run(name, limit, expected, configure, duration=None, free=None):
            if own and own[-1]["offline"]:
                recover(fleet, volumes, own[-1]["offline"])
            trial.fresh_topic()
            volumes.leave_free(free or limit + MARGIN)
            since = time.time()
            interval = configure(limit)
            wait_deciding(fleet, decider, since)
            trial.create_topic()
            volumes.leave_free(free or limit + MARGIN)
            log(f"{decider} {name}: limit {mib(limit)} MiB, interval {interval:g} s")
            result = trial.race(limit, interval, duration)
            result.update(trial=name, expected=expected)
            result["as_expected"] = expected in ("rate", "probe") or bool(result["offline"]) == (expected == "lose")
            log(describe(result))
            results.append(result)
            own.append(result)
            return result

        shortest = float(quota_plugin_spec.SHORTEST_CHECK_INTERVAL)
        default_interval = guard_default_interval()
        guard_interval = default_interval

        def plugin_at(interval, peak=None):
            def configure(limit):
                spec = {"min_available_bytes_per_volume": limit}
                spec.update({"peak_fill_rate": int(peak)} if peak else {"check_interval": int(interval)})
                return deciders.plugin(spec)

            return configure

        def guard_at(limit):
            deciders.guard(limit, guard_interval)
            return guard_interval

        first = plugin_at(shortest) if decider == "plugin" else guard_at
        rate = run("rate", LOSE_LIMIT, "rate", first, RATE_SECONDS, RATE_FREE)["fill_rate"]
        if not rate:
            raise BenchError(f"{decider}: the writers filled no volume in {RATE_SECONDS:g} s")
        # The plugin's limit is the least for the shortest interval; given the rate, the collection chooses the
        # longest interval that limit covers. The guard's at the role's interval can outgrow this machine's memory
        # at the fleet's rate: then the longest interval whose limit fits, as a user sets disk_guard_interval.
        if decider == "guard":
            guard_interval = guard_interval_fitting(rate, default_interval, budget)
            if guard_interval != default_interval:
                log(
                    f"guard: at {mib(rate)} MiB/s the role's {default_interval:g} s interval needs a limit of "
                    f"{mib(recommended_limit(rate, default_interval))} MiB per volume, more than memory holds here: "
                    f"disk_guard_interval {guard_interval:g} s"
                )
        limit = recommended_limit(rate, shortest if decider == "plugin" else guard_interval)
        if not fits(limit, budget):
            raise BenchError(f"{decider}: a limit of {mib(limit)} MiB per volume does not fit in memory here")
        hold = run("hold", limit, "hold", plugin_at(None, rate) if decider == "plugin" else guard_at)
        run("half", limit // 2 // MIB * MIB, "probe", plugin_at(hold["interval"]) if decider == "plugin" else guard_at)
        run("lose", LOSE_LIMIT, "lose", plugin_at(shortest) if decider == "plugin" else guard_at)
        for result in own:
            result.update(measured_rate=rate, recommended=limit, default_interval=default_interval)
    finally:
        without_interrupts(fleet.down)


def recover(fleet, volumes, brokers):
    """``brokers``, stopped by a trial that lost (a probe may), started again once every volume has room."""
    log(f"brokers {brokers} stopped when their log dir filled: starting them again")
    volumes.leave_free(RATE_FREE)
    for broker in brokers:
        # Stopped first: systemd may have started it again already, and start waits for a start of its own.
        fleet.stop(broker)
        fleet.systemctl(broker, "reset-failed", image.KAFKA_SERVICE, check=False)
        fleet.start(broker, timeout=300)


def wait_deciding(fleet, decider, since):
    """Until the decider has observed every volume since ``since``: each broker's plugin completed a check, or the
    guard decided with a factor of 1."""
    if decider == "plugin":
        for entry in fleet.broker_nodes:
            wait_for(
                lambda entry=entry: "Updated cluster volume usage" in kafka_log(fleet, entry["id"], since),
                180,
                f"broker {entry['id']}'s plugin checking the volumes",
                interval=1.0,
            )
        return
    wait_for(
        lambda: any(d["factor"] == 1.0 for d in guard_decisions(fleet, since)),
        180,
        "the guard deciding at factor 1",
        interval=1.0,
    )


# -- the report ------------------------------------------------------------------------------------------------------
def describe(result):
    lost = f"offline: brokers {result['offline']}" if result["offline"] else "no log dir offline"
    return (
        f"{result['decider']} {result['trial']}: fill {mib(result['fill_rate'])} MiB/s, reaction "
        f"{seconds(result['reaction'])} s, overshoot {mib(result['overshoot'])} MiB of {mib(result['limit'])}, "
        f"{mib(result['least_free'])} MiB left, {lost}"
    )


def fill_seconds(result, key):
    """``key``'s bytes in seconds of the peak fill rate (the rate the rule takes), or of the trial's own fill when
    the rate trial did not end."""
    value, rate = result.get(key), result.get("measured_rate") or result.get("fill_rate")
    return "-" if value is None or not rate else f"{value / rate:.1f}"


def report(results):
    header = (
        f"{'decider':<7} {'trial':<5} {'interval':>8} {'limit MiB':>9} {'fill MiB/s':>10} {'detect s':>8} "
        f"{'apply s':>7} {'in flight MiB':>13} {'replication MiB (s)':>19} {'overshoot MiB':>13} {'left MiB':>8}  "
        "log dirs"
    )
    rows = []
    for result in results["trials"]:
        replication = f"{mib(result['replication'])} ({fill_seconds(result, 'replication')})"
        verdict = "offline: " + ",".join(map(str, result["offline"])) if result["offline"] else "kept"
        rows.append(
            f"{result['decider']:<7} {result['trial']:<5} {result['interval']:>7g}s {mib(result['limit']):>9} "
            f"{mib(result['fill_rate']):>10} {seconds(result['detect']):>8} {seconds(result['apply']):>7} "
            f"{mib(result['in_flight']):>13} {replication:>19} {mib(result['overshoot']):>13} "
            f"{mib(result['least_free']):>8}  {verdict}{'' if result['as_expected'] else '  (NOT AS EXPECTED)'}"
        )
    return table(header, rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--deciders", default="plugin,guard", help="plugin, guard or both (default: both)")
    parser.add_argument("--json", help="write every trial's figures to this file")
    args = parser.parse_args(argv)
    deciders = [name for name in args.deciders.split(",") if name]
    if not deciders or set(deciders) - {"plugin", "guard"}:
        parser.error(f"--deciders {args.deciders!r}: expected plugin, guard or both")
    ensure_collection_link(ROOT, COLLECTIONS)
    ensure_daemon(image.IMAGE_DIR)
    trials = []
    status = None
    with tempfile.TemporaryDirectory(prefix="race-fleet-") as workdir:
        try:
            for decider in deciders:
                decider_trials(decider, workdir, trials)
        except (BenchError, ClusterError, KafkaException, RuntimeError) as exc:
            log(f"error: {exc}")
            status = 1
        except KeyboardInterrupt:
            log("interrupted; the fleet was removed")
            status = 130
    # The trials that ended are reported also when a later one could not run.
    results = {"machine": platform.node(), "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d"), "trials": trials}
    finish(results, report(results), args.json)
    if status is not None:
        return status
    return 0 if all(trial["as_expected"] for trial in trials) else 1


if __name__ == "__main__":
    sys.exit(main())
