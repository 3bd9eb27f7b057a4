"""The guard's metrics with prometheus_client: what the Strimzi plugin exposes through JMX (throttle factor, limit
violated, fallback applied, active brokers and log dirs, available and consumed bytes per volume), plus the guard's
state, the outcome of its decisions and a histogram of how long they take.

Written atomically for node_exporter's textfile collector (a reader never sees half a file) and served over HTTP
when asked. Names start with ``headroom_guard_``; units are in the names (``_bytes``, ``_seconds``); counters end in
``_total``.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Histogram,
    disable_created_metrics,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ansible_collections.headroom.kafka.plugins.module_utils import guard_relief
from ansible_collections.headroom.kafka.plugins.module_utils.volume_limits import usable_volumes

STATES = ("OPEN", "THROTTLE", "PAUSE")
# The relief steps that plan set the blocked gauge; the others leave it as the last plan had it.
RELIEF_PLANNING = (guard_relief.IDLE, guard_relief.STARTED, guard_relief.PLANNED, guard_relief.BLOCKED)
OUTCOMES = ("applied", "unchanged", "failed")
# A decision reads every broker's log dirs and the quotas, then may change them: tens of milliseconds on a healthy
# cluster, seconds while a broker times out (the request timeout is the adapter's).
DURATION_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

# No _created series: in the text format a histogram's creation time is a gauge of its own, which nothing reads and
# every textfile would carry. (A setting of the process's prometheus_client; the guard is its only user.)
disable_created_metrics()


def _gauge(name: str, help_text: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_text, value=float(value))


def _counter(name: str, help_text: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, help_text, value=float(value))


class GuardMetrics:
    """What the metrics say: the last decision (None before the first) and the counts since the guard started."""

    def __init__(self) -> None:
        self.last: Mapping[str, Any] | None = None  # guard_once's result
        self.last_duration: float | None = None  # how long it took, seconds
        self.outcomes: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        self.quota_changes = 0
        self.record_failures = 0
        self.interval: float | None = None  # seconds between decisions, when running as a loop
        self.wait: float | None = None  # seconds from the last decision to the next (shorter while a volume closes in)
        self.observe_only = False
        # With --config's relieve: the relief steps by action, the bytes of the moves started and ended, the bytes
        # still moving and the log dirs the last plan could not relieve (None: the guard does not relieve).
        self.relief_steps: dict[str, int] | None = None
        self.relief_planned_bytes = self.relief_moved_bytes = self.relief_moving_bytes = 0
        self.relief_blocked_log_dirs = 0
        self.registry = CollectorRegistry(auto_describe=False)
        self.durations = Histogram(
            "headroom_guard_decision_duration_seconds",
            "How long each decision took: reads, decision and quota changes.",
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_GuardCollector(self))

    def decided(self, result: Mapping[str, Any], seconds: float) -> None:
        self.last, self.last_duration = result, seconds
        self.durations.observe(seconds)
        # A relief step changes the cluster too (result["changed"]); the outcome counts quota changes only.
        self.outcomes["applied" if result["changes"] else "unchanged"] += 1
        self.quota_changes += len(result["changes"])
        if result.get("relief") is not None:
            self._relieved(result["relief"])

    def _relieved(self, relief: Mapping[str, Any]) -> None:
        if self.relief_steps is None:
            self.relief_steps = dict.fromkeys(guard_relief.ACTIONS, 0)
        action = relief["action"]
        self.relief_steps[action] = self.relief_steps.get(action, 0) + 1
        if action == guard_relief.STARTED:
            self.relief_planned_bytes += relief["planned_bytes"]
        self.relief_moved_bytes += relief["moved_bytes"]
        if action != guard_relief.FAILED:  # a failed step may leave its moves running: the last figure stands
            self.relief_moving_bytes = relief["moving_bytes"]
        if action in RELIEF_PLANNING:
            self.relief_blocked_log_dirs = len(relief["blocked"])

    def failed(self) -> None:
        self.outcomes["failed"] += 1

    def record_failed(self) -> None:
        self.record_failures += 1

    def render(self) -> str:
        """The metrics page in Prometheus' text format (the caller holds the guard's lock)."""
        return generate_latest(self.registry).decode("utf-8")

    def families(self) -> Iterator[Metric]:
        """The families the guard's state gives (the histogram of durations is the registry's own)."""
        outcomes = CounterMetricFamily(
            "headroom_guard_decisions_total", "Decisions since the guard started, by outcome.", labels=["outcome"]
        )
        for outcome in OUTCOMES:
            outcomes.add_metric([outcome], float(self.outcomes[outcome]))
        yield outcomes
        yield _counter(
            "headroom_guard_quota_changes_total",
            "Client quota entities changed since the guard started.",
            self.quota_changes,
        )
        yield _counter(
            "headroom_guard_record_failures_total",
            "Decisions whose history files or snapshot topic could not be written.",
            self.record_failures,
        )
        yield _gauge(
            "headroom_guard_observe_only",
            "1 when the guard only observes and records (--observe-only): it never changes client quotas.",
            self.observe_only,
        )
        if self.interval is not None:
            yield _gauge(
                "headroom_guard_interval_seconds",
                "Seconds from the start of one decision to the next (--interval); alerts count missed decisions in it.",
                self.interval,
            )
        if self.wait is not None:
            yield _gauge(
                "headroom_guard_next_decision_seconds",
                "Seconds from the start of the last decision to the next: the interval, or less while a volume "
                "closes in on its limit (--fastest-interval is the least).",
                self.wait,
            )
        if self.relief_steps is not None:
            yield from self._relief_families(self.relief_steps)
        if self.last is not None and self.last_duration is not None:
            yield from self._decision_families(self.last, self.last_duration)

    def _relief_families(self, relief_steps: Mapping[str, int]) -> Iterator[Metric]:
        steps = CounterMetricFamily(
            "headroom_guard_relief_steps_total",
            "Relief steps since the guard started, by action (failed: a request failed or Kafka refused).",
            labels=["action"],
        )
        for action, count in sorted(relief_steps.items()):
            steps.add_metric([action], float(count))
        yield steps
        yield _counter(
            "headroom_guard_relief_planned_bytes_total",
            "Bytes of the replica moves the guard started.",
            self.relief_planned_bytes,
        )
        yield _gauge(
            "headroom_guard_relief_moving_bytes",
            "Bytes of the guard's replica moves still running.",
            self.relief_moving_bytes,
        )
        yield _counter(
            "headroom_guard_relief_moved_bytes_total",
            "Bytes of the guard's replica moves that ended in place.",
            self.relief_moved_bytes,
        )
        yield _gauge(
            "headroom_guard_relief_blocked_log_dirs",
            "Log dirs at relieve_at whose relieve_to target the last plan could not reach (the guard's log says why).",
            self.relief_blocked_log_dirs,
        )

    def _decision_families(self, result: Mapping[str, Any], duration: float) -> Iterator[Metric]:
        volumes, _skipped = usable_volumes(result["volumes"])  # the rules' own test of a volume with figures
        yield _gauge(
            "headroom_guard_throttle_factor",
            "The factor applied to the declared produce rates (0 to 1).",
            result["throttle_factor"],
        )
        yield _gauge("headroom_guard_limit_violated", "1 when some volume is past a limit.", bool(result["violations"]))
        yield _gauge(
            "headroom_guard_fallback_applied",
            "1 when the fallback factor applies (policy strimzi).",
            bool(result["fallback_applied"]),
        )
        yield _gauge(
            "headroom_guard_missing_data_applied",
            "1 when incomplete data paused producers (policy graded).",
            bool(result.get("missing_data_applied")),
        )
        yield _gauge(
            "headroom_guard_observed", "1 when every broker that should have answered did.", bool(result["observed"])
        )
        state = GaugeMetricFamily(
            "headroom_guard_state",
            "The guard's state: 1 for the current one of OPEN, THROTTLE and PAUSE.",
            labels=["state"],
        )
        for name in STATES:
            state.add_metric([name], 1.0 if result["state"] == name else 0.0)
        yield state
        yield _gauge(
            "headroom_guard_active_brokers",
            "Brokers whose log dirs were seen in the last decision.",
            len(set(volume["broker_id"] for volume in result["volumes"])),
        )
        yield _gauge(
            "headroom_guard_active_log_dirs", "Log dirs of known size seen in the last decision.", len(volumes)
        )
        labels = ["broker_id", "log_dir"]
        available = GaugeMetricFamily(
            "headroom_guard_volume_available_bytes", "Usable bytes of each log dir.", labels=labels
        )
        consumed = GaugeMetricFamily(
            "headroom_guard_volume_consumed_bytes", "Used bytes (total - usable) of each log dir.", labels=labels
        )
        for volume in sorted(volumes, key=lambda item: (item["broker_id"], item["log_dir"])):
            values = [str(volume["broker_id"]), volume["log_dir"]]
            available.add_metric(values, float(volume["usable_bytes"]))
            consumed.add_metric(values, float(volume["total_bytes"] - volume["usable_bytes"]))
        yield available
        yield consumed
        yield _gauge(
            "headroom_guard_last_decision_timestamp_seconds",
            "When the last decision was taken (Unix time).",
            result["decided_at"],
        )
        yield _gauge(
            "headroom_guard_last_decision_duration_seconds",
            "How long the last decision took: reads, decision and quota changes.",
            duration,
        )


class _GuardCollector:
    """The guard's state as prometheus_client collects it."""

    def __init__(self, metrics: GuardMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        return self.metrics.families()


class _LockedRegistry(CollectorRegistry):
    """The guard's registry as the HTTP server reads it: collected whole under the guard's lock, so that a scrape never
    sees half a decision."""

    def __init__(self, registry: CollectorRegistry, lock: threading.Lock) -> None:
        super().__init__(auto_describe=False)
        self.inner, self.lock = registry, lock

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            families = list(self.inner.collect())
        return iter(families)


def write_textfile(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (node_exporter's textfile collector reads *.prom files)."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".headroom-guard-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


class MetricsServer:
    """The metrics page on ``address:port`` (prometheus_client's server, on a daemon thread), collected per request."""

    def __init__(self, metrics: GuardMetrics, address: str, port: int, lock: threading.Lock) -> None:
        self.registry = _LockedRegistry(metrics.registry, lock)
        self.address, self.requested_port = address, port
        self.server: Any = None

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> "MetricsServer":
        self.server, _thread = start_http_server(self.requested_port, self.address, registry=self.registry)
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
