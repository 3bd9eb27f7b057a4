"""The guard loop: one decision every interval through one Kafka connection, kept between decisions and opened again
after a failure; a decision that fails leaves the quotas as they are and is retried at the next interval."""

from __future__ import annotations

import datetime
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, TextIO

from ansible_collections.headroom.kafka.plugins.module_utils import (
    guard_history,
    guard_memory,
    guard_polling,
    guard_relief,
    guard_run,
    snapshots,
)
from ansible_collections.headroom.kafka.plugins.module_utils.guard_options import GuardSettings
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter, KafkaAdapterError
from ansible_collections.headroom.kafka.plugins.module_utils.quota_apply import QuotaApplyError
from headroom_guard.history import HistoryError, HistoryWriter
from headroom_guard.metrics import GuardMetrics, write_textfile
from headroom_guard.publisher import SnapshotPublisher

# At a stop, how long the snapshots still waiting may take to reach the topic.
PUBLISH_ON_STOP_SECONDS = 5.0


def _stamp(seconds: float) -> str:
    return (
        datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


def decision_line(result: Mapping[str, Any], seconds: float) -> str:
    """The one line a decision writes on stderr."""
    changes = len(result["changes"])
    changed = f"{changes} quota entit{'y' if changes == 1 else 'ies'} changed" if changes else "quotas unchanged"
    return (
        f"{_stamp(result['decided_at'])} factor {result['throttle_factor']:g} {result['state']} ({result['policy']}, "
        f"{result['reason']}): {changed} in {seconds:.3f} s"
    )


def _mib(value: float) -> str:
    return f"{value / 1048576:.3g} MiB"


def relief_line(relief: Mapping[str, Any]) -> str | None:
    """The line a relief step writes on stderr, or None for a step with nothing to do."""
    action, moves = relief["action"], relief["moves"]
    if action in (guard_relief.STARTED, guard_relief.PLANNED):
        listed = ", ".join(
            f"{m['topic']}-{m['partition']} broker {m['from_broker']} {m['from_log_dir']} -> "
            f"broker {m['to_broker']} {m['to_log_dir']}"
            for m in moves
        )
        verb = "started" if action == guard_relief.STARTED else "would start (dry run or observe-only)"
        return f"relief {verb} {len(moves)} move(s), {_mib(relief['planned_bytes'])}: {listed}"
    if action == guard_relief.MOVING:
        return f"relief: {_mib(relief['moving_bytes'])} still moving"
    if action == guard_relief.FINISHED:
        return f"relief finished: {_mib(relief['moved_bytes'])} moved; the replication throttle is back as it was"
    if action == guard_relief.SETTLING:
        return (
            f"relief waits until {_stamp(relief['settles_at'])} before it plans again (settle_time: the moved "
            "replicas' old files are still on their source log dirs)"
        )
    if action == guard_relief.BLOCKED:
        return "relief blocked: " + "; ".join(item["reason"] for item in relief["blocked"])
    if action == guard_relief.FAILED:
        return f"relief failed: {relief['error']}"
    return None


class Guard:
    """Decisions for one cluster. ``params``: the validated options (connection options included); ``settings``:
    guard_options.GuardSettings. ``dry_run``: decide and have Kafka validate, never apply; ``observe_only``: decide,
    record and export, never read or change client quotas. ``history``: where each decision and each complete
    observation is recorded; ``snapshot_topic``: a compacted topic the observations are also published to."""

    def __init__(
        self,
        params: Mapping[str, Any],
        settings: GuardSettings,
        state_file: str | None = None,
        metrics_file: str | None = None,
        dry_run: bool = False,
        stream: TextIO | None = None,
        observe_only: bool = False,
        history: HistoryWriter | None = None,
        snapshot_topic: str | None = None,
    ) -> None:
        self.params, self.settings = params, settings
        self.state_file, self.metrics_file, self.dry_run = state_file, metrics_file, dry_run
        self.observe_only, self.history, self.snapshot_topic = observe_only, history, snapshot_topic
        self.mode = "observe_only" if observe_only else "dry_run" if dry_run else "enforce"
        self.stream = stream or sys.stderr
        self.metrics, self.lock = GuardMetrics(), threading.Lock()
        self.metrics.observe_only = observe_only
        self.memory = guard_memory.load_memory(state_file)
        self.adapter: KafkaAdapter | None = None
        self.publisher: SnapshotPublisher | None = None
        # Set by run: the longest and shortest waits between decisions, the wait after the last decision, and the last
        # observation (guard_polling's fill rates come from two).
        self.interval: float | None = None
        self.fastest = guard_polling.FASTEST_INTERVAL
        self.wait: float | None = None
        self.observation: tuple[float, list[dict[str, Any]]] | None = None

    def _store_memory(self, memory: guard_run.disk_guard.GuardMemory) -> None:
        if self.state_file and not self.dry_run:
            guard_memory.save_memory(self.state_file, memory)

    def say(self, text: str) -> None:
        print(f"headroom_guard: {text}", file=self.stream, flush=True)

    def decide(self, now: datetime.datetime | None = None) -> dict[str, Any] | None:
        """One decision; its result, or None when it failed (said on stderr, counted in the metrics)."""
        now = now or datetime.datetime.now(datetime.timezone.utc)
        started = time.monotonic()
        try:
            if self.adapter is None:
                self.adapter = KafkaAdapter.from_module_params(self.params)
            result, memory = guard_run.guard_once(
                self.adapter,
                self.settings,
                self.memory,
                now,
                check_mode=self.dry_run,
                observe_only=self.observe_only,
                before_apply=self._store_memory,
            )
        except (KafkaAdapterError, QuotaApplyError) as exc:
            self._close_adapter()
            with self.lock:
                self.metrics.failed()
            self.say(f"{_stamp(now.timestamp())} decision failed, quotas left as they are: {exc}")
            self._write_metrics()
            return None
        if memory.to_json() != self.memory.to_json():
            self._store_memory(memory)
        self.memory = memory
        self._record(result)
        seconds = time.monotonic() - started
        with self.lock:
            self.metrics.decided(result, seconds)
        self.say(decision_line(result, seconds))
        said = None if result.get("relief") is None else relief_line(result["relief"])
        if said:
            self.say(said)
        for warning in result["declaration_warnings"]:
            self.say(f"warning: {warning}")
        self._plan_next(result)
        self._write_metrics()
        return result

    def _plan_next(self, result: dict[str, Any]) -> None:
        """The wait before the next decision (guard_polling), said when a volume closing in on its limit shortens it."""
        if self.interval is None:
            return
        observation = (result["decided_at"], result["volumes"])
        wait, closing = guard_polling.next_wait(
            self.settings.policy, self.observation, observation, self.interval, self.fastest
        )
        self.observation = observation
        with self.lock:
            self.wait = self.metrics.wait = wait
        if closing is not None:
            self.say(
                f"next decision in {wait:.3g} s: broker {closing['broker_id']} log dir {closing['log_dir']} reaches "
                f"its limit in {closing['seconds_to_limit']:.3g} s at {closing['fill_rate'] / 1048576:.3g} MiB/s"
            )

    def _record(self, result: dict[str, Any]) -> None:
        """The decision and its observation into the history and the snapshot topic. A failure to record is said and
        counted, never a reason to leave the quotas of a decision already made."""
        if self.history is None and not self.snapshot_topic:
            return  # nothing records: no messages built on every decision for nobody
        messages = guard_history.snapshot_messages(result, self.settings.policy)
        encoded = [(snapshots.message_key(m), snapshots.encode_message(m)) for m in messages]
        if self.history is not None:
            record = guard_history.decision_record(result, self.mode)
            try:
                self.history.append("snapshots", [value for _key, value in encoded], result["decided_at"])
                self.history.append("decisions", [snapshots.encode_message(record)], result["decided_at"])
            except HistoryError as exc:
                self._record_failed(f"{exc.strerror}; the decision stands")
        if self.snapshot_topic and encoded:
            if self.publisher is None:
                self.publisher = SnapshotPublisher(self.params, self.snapshot_topic, self._record_failed)
            self.publisher.offer(encoded)

    def _record_failed(self, reason: str) -> None:
        with self.lock:
            self.metrics.record_failed()
        self.say(f"warning: {reason}")

    def run(self, interval: float, stop: threading.Event, fastest: float | None = None) -> None:
        """Decide every ``interval`` seconds until ``stop`` (a threading.Event) is set, or sooner while a volume closes
        in on its limit, down to ``fastest`` seconds (guard_polling; ``fastest`` equal to ``interval`` keeps the
        interval fixed). The wait counts from the start of each decision, so a slow cluster does not stretch it."""
        self.interval = interval
        self.fastest = guard_polling.fastest_interval(interval, fastest)
        with self.lock:
            self.metrics.interval = interval
        try:
            while not stop.is_set():
                started = datetime.datetime.now(datetime.timezone.utc)
                self.wait = None
                self.decide(started)
                elapsed = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()
                stop.wait(max((interval if self.wait is None else self.wait) - elapsed, 0.0))
        finally:
            self.close()

    def close(self) -> None:
        """The connection closed, the snapshots still waiting published (for at most PUBLISH_ON_STOP_SECONDS), the
        history's files closed: after the last decision, of a run or of --once."""
        self._close_adapter()
        if self.publisher is not None:
            self.publisher.close(PUBLISH_ON_STOP_SECONDS)
        if self.history is not None:
            self.history.close()

    def _write_metrics(self) -> None:
        if not self.metrics_file:
            return
        with self.lock:
            text = self.metrics.render()
        try:
            write_textfile(self.metrics_file, text)
        except OSError as exc:
            self.say(f"cannot write --metrics-file {self.metrics_file!r}: {exc.strerror or exc}")

    def _close_adapter(self) -> None:
        if self.adapter is not None:
            try:
                self.adapter.close()
            except Exception:  # pylint: disable=broad-except  # a connection that is already broken has nothing to close
                pass
            self.adapter = None
