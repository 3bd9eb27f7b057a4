"""The guard's metrics in Prometheus' text exposition format: what the Strimzi plugin exposes through JMX (throttle
factor, limit violated, fallback applied, active brokers and log dirs, available and consumed bytes per volume), plus
the guard's state and the time and outcome of its decisions.

Written atomically for node_exporter's textfile collector (a reader never sees half a file) and served over HTTP
when asked. Names start with ``headroom_guard_``; units are in the names (``_bytes``, ``_seconds``); counters end in
``_total``.
"""

from __future__ import annotations

import http.server
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from ansible_collections.headroom.kafka.plugins.module_utils import guard_relief
from ansible_collections.headroom.kafka.plugins.module_utils.volume_limits import usable_volumes

STATES = ("OPEN", "THROTTLE", "PAUSE")
# The relief steps that plan set the blocked gauge; the others leave it as the last plan had it.
RELIEF_PLANNING = (guard_relief.IDLE, guard_relief.STARTED, guard_relief.PLANNED, guard_relief.BLOCKED)
OUTCOMES = ("applied", "unchanged", "failed")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _label(value: object) -> str:
    """A label value with Prometheus' escapes (backslash, double quote, line feed)."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


class Family:
    """One metric family: its HELP, TYPE and samples ({labels}, value)."""

    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.name, self.kind, self.help_text = name, kind, help_text
        self.samples: list[tuple[dict[str, object], float]] = []

    def add(self, value: float, **labels: object) -> "Family":
        self.samples.append((labels, value))
        return self

    def lines(self) -> Iterator[str]:
        yield f"# HELP {self.name} {self.help_text}"
        yield f"# TYPE {self.name} {self.kind}"
        for labels, value in self.samples:
            rendered = ",".join(f'{key}="{_label(labels[key])}"' for key in sorted(labels))
            yield f"{self.name}{{{rendered}}} {_number(value)}" if rendered else f"{self.name} {_number(value)}"


class GuardMetrics:
    """What the metrics say: the last decision (None before the first) and the counts since the guard started."""

    def __init__(self) -> None:
        self.last: Mapping[str, Any] | None = None  # guard_once's result
        self.last_decision_at: float | None = None  # epoch seconds of the last decision that completed
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

    def decided(self, result: Mapping[str, Any], seconds: float) -> None:
        self.last, self.last_decision_at, self.last_duration = result, result["decided_at"], seconds
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
        families: list[Family] = []
        outcomes = Family("headroom_guard_decisions_total", "counter", "Decisions since the guard started, by outcome.")
        for outcome in OUTCOMES:
            outcomes.add(self.outcomes[outcome], outcome=outcome)
        families.append(outcomes)
        families.append(
            Family(
                "headroom_guard_quota_changes_total",
                "counter",
                "Client quota entities changed since the guard started.",
            ).add(self.quota_changes)
        )
        families.append(
            Family(
                "headroom_guard_record_failures_total",
                "counter",
                "Decisions whose history files or snapshot topic could not be written.",
            ).add(self.record_failures)
        )
        families.append(
            Family(
                "headroom_guard_observe_only",
                "gauge",
                "1 when the guard only observes and records (--observe-only): it never changes client quotas.",
            ).add(self.observe_only)
        )
        if self.interval is not None:
            families.append(
                Family(
                    "headroom_guard_interval_seconds",
                    "gauge",
                    "Seconds from the start of one decision to the next (--interval); alerts count missed decisions "
                    "in it.",
                ).add(float(self.interval))
            )
        if self.wait is not None:
            families.append(
                Family(
                    "headroom_guard_next_decision_seconds",
                    "gauge",
                    "Seconds from the start of the last decision to the next: the interval, or less while a volume "
                    "closes in on its limit (--fastest-interval is the least).",
                ).add(float(self.wait))
            )
        if self.relief_steps is not None:
            families.extend(self._relief_families())
        if self.last is not None:
            families.extend(self._decision_families(self.last))
        return "".join(line + "\n" for family in families for line in family.lines())

    def _relief_families(self):
        steps = Family(
            "headroom_guard_relief_steps_total",
            "counter",
            "Relief steps since the guard started, by action (failed: a request failed or Kafka refused).",
        )
        for action, count in sorted(self.relief_steps.items()):
            steps.add(count, action=action)
        yield steps
        yield Family(
            "headroom_guard_relief_planned_bytes_total", "counter", "Bytes of the replica moves the guard started."
        ).add(self.relief_planned_bytes)
        yield Family(
            "headroom_guard_relief_moving_bytes", "gauge", "Bytes of the guard's replica moves still running."
        ).add(self.relief_moving_bytes)
        yield Family(
            "headroom_guard_relief_moved_bytes_total",
            "counter",
            "Bytes of the guard's replica moves that ended in place.",
        ).add(self.relief_moved_bytes)
        yield Family(
            "headroom_guard_relief_blocked_log_dirs",
            "gauge",
            "Log dirs at relieve_at whose relieve_to target the last plan could not reach (the guard's log says why).",
        ).add(self.relief_blocked_log_dirs)

    def _decision_families(self, result):
        volumes, _skipped = usable_volumes(result["volumes"])  # the rules' own test of a volume with figures
        yield Family(
            "headroom_guard_throttle_factor", "gauge", "The factor applied to the declared produce rates (0 to 1)."
        ).add(float(result["throttle_factor"]))
        yield Family("headroom_guard_limit_violated", "gauge", "1 when some volume is past a limit.").add(
            bool(result["violations"])
        )
        yield Family(
            "headroom_guard_fallback_applied", "gauge", "1 when the fallback factor applies (policy strimzi)."
        ).add(bool(result["fallback_applied"]))
        yield Family(
            "headroom_guard_missing_data_applied", "gauge", "1 when incomplete data paused producers (policy graded)."
        ).add(bool(result.get("missing_data_applied")))
        yield Family("headroom_guard_observed", "gauge", "1 when every broker that should have answered did.").add(
            bool(result["observed"])
        )
        state = Family(
            "headroom_guard_state", "gauge", "The guard's state: 1 for the current one of OPEN, THROTTLE and PAUSE."
        )
        for name in STATES:
            state.add(1 if result["state"] == name else 0, state=name)
        yield state
        yield Family(
            "headroom_guard_active_brokers", "gauge", "Brokers whose log dirs were seen in the last decision."
        ).add(len(set(volume["broker_id"] for volume in result["volumes"])))
        yield Family(
            "headroom_guard_active_log_dirs", "gauge", "Log dirs of known size seen in the last decision."
        ).add(len(volumes))
        available = Family("headroom_guard_volume_available_bytes", "gauge", "Usable bytes of each log dir.")
        consumed = Family(
            "headroom_guard_volume_consumed_bytes", "gauge", "Used bytes (total - usable) of each log dir."
        )
        for volume in sorted(volumes, key=lambda item: (item["broker_id"], item["log_dir"])):
            labels = {"broker_id": volume["broker_id"], "log_dir": volume["log_dir"]}
            available.add(volume["usable_bytes"], **labels)
            consumed.add(volume["total_bytes"] - volume["usable_bytes"], **labels)
        yield available
        yield consumed
        yield Family(
            "headroom_guard_last_decision_timestamp_seconds", "gauge", "When the last decision was taken (Unix time)."
        ).add(float(self.last_decision_at))
        yield Family(
            "headroom_guard_last_decision_duration_seconds",
            "gauge",
            "How long the last decision took: reads, decision and quota changes.",
        ).add(float(self.last_duration))


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
    """``GET /metrics`` on ``address:port`` from a daemon thread; the page is rendered per request."""

    def __init__(self, metrics: GuardMetrics, address: str, port: int, lock: threading.Lock) -> None:
        render = metrics.render

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802  (the name http.server calls)
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404, "only /metrics is served")
                    return
                with lock:
                    body = render().encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # scrapes are not decisions: stderr carries one line per decision only
                pass

        self.server = http.server.ThreadingHTTPServer((address, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="metrics", daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def start(self) -> "MetricsServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
