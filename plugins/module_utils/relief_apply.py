# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Relieve filling log dirs on one cluster: read it, plan the moves (relief_plan), start them (relief_moves), wait for
them or hand them to a later run (log_dir_relief). Talks to Kafka only through the adapter it is given."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple

from ansible_collections.headroom.kafka.plugins.module_utils import (
    limit_options,
    log_dirs,
    option_checks,
    relief_moves,
    relief_plan,
)
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError

if TYPE_CHECKING:
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter

# The progress samples a result keeps when it waited: the first, the last and this many between.
PROGRESS_SAMPLES = 20
# How often the destination log dirs of cross-broker moves are asked for while a broker answers KAFKA_STORAGE_ERROR
# (retriable in Kafka's protocol), and the seconds between two tries; then the run gives up with nothing started.
DESTINATION_TRIES = 5
DESTINATION_RETRY_SECONDS = 1.0
# The options of a plan and its moves, as log_dir_relief and the disk guard's relieve take them, with their ranges.
PLAN_OPTIONS: Dict[str, Dict[str, Any]] = dict(
    relieve_at=dict(type="dict", required=True, options=limit_options.FREE_LIMIT_OPTIONS),
    relieve_to=dict(type="dict", required=True, options=limit_options.FREE_LIMIT_OPTIONS),
    max_bytes=dict(type="int"),
    max_partitions=dict(type="int"),
    throttle_rate=dict(type="int", default=10485760),
    log_dir_throttle_rate=dict(type="int"),
)
_RATE = option_checks.Number(1, option_checks.LONG_MAX, integer=True, unit="bytes per second")
PLAN_RANGES: Dict[str, Any] = {
    "relieve_at.level": limit_options.LIMIT_LEVEL,
    "relieve_to.level": limit_options.LIMIT_LEVEL,
    "max_bytes": option_checks.Number(1, option_checks.LONG_MAX, integer=True, unit="bytes"),
    "max_partitions": option_checks.Number(1, option_checks.KAFKA_ID_MAX, integer=True),
    "throttle_rate": _RATE,
    "log_dir_throttle_rate": _RATE,
}
# Throttle configs as set_configs takes them: {"topics"|"brokers": {name: {key: value, None to delete it}}}.
Throttles = Dict[str, Dict[str, Dict[str, Optional[str]]]]


class ReliefError(Exception):
    """The run stopped; ``result`` says what it had done (moves, progress, cancelled, throttles_before), and carries
    ``pending`` when a reassignment may still run or a throttle may still be set: a later run given it finishes."""

    def __init__(self, message: str, result: Dict[str, Any]) -> None:
        super(ReliefError, self).__init__(message)
        self.result = result


def _inputs(view: Dict[str, Any], partitions: List[Dict[str, Any]], min_isr: Dict[str, int]) -> Dict[str, Any]:
    """relief_plan's input from log_dirs' view (with replicas), the Metadata partitions and min.insync.replicas."""
    ongoing = {(r["topic"], r["partition"]) for r in view.get("reassignments", [])}
    replicas = [
        dict(replica, broker_id=row["broker_id"], log_dir=row["log_dir"], size_bytes=replica["size_bytes"] or 0)
        for row in view["log_dirs"]
        for replica in row.get("replicas") or []
    ]
    described = [
        {
            "topic": p["topic"],
            "partition": p["partition"],
            "replicas": p["replicas"],
            "isr": p["isr"],
            "min_insync_replicas": min_isr.get(p["topic"], 1),
            "reassigning": (p["topic"], p["partition"]) in ongoing,
        }
        for p in partitions
        if not p.get("error")
    ]
    return {
        "volumes": view["log_dirs"],
        "replicas": replicas,
        "partitions": described,
        "racks": {b["id"]: b.get("rack") for b in view["brokers"]},
    }


class _Run:
    """One module run against one cluster."""

    def __init__(
        self,
        adapter: "KafkaAdapter",
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        check_mode: bool = False,
    ) -> None:
        self.adapter = adapter
        self.clock = clock
        self.sleep = sleep
        self.check_mode = check_mode
        # The last progress read and the wait's samples, kept for the result when a read fails while waiting.
        self.report: Optional[List[Dict[str, Any]]] = None
        self.samples: List[Dict[str, Any]] = []

    def look(self) -> Dict[str, Any]:
        view = log_dirs.collect(self.adapter, replicas=True)
        partitions = self.adapter.partitions()
        return {"view": view, "partitions": partitions}

    def progress(self, moves: List[Dict[str, Any]], seen: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
        """Each move's state, from ``seen`` (a look at the cluster) or a new look. A cross-broker move whose replica
        arrived in another log dir is sent to its own (not in check mode)."""
        seen = seen or self.look()
        self.report = relief_moves.progress(
            moves, seen["view"]["log_dirs"], seen["partitions"], seen["view"].get("reassignments", [])
        )
        misplaced = relief_moves.misplaced(self.report)
        if misplaced and not self.check_mode:
            # A refusal shows in the next read: the move stays in another log dir, and a timeout lists it as left.
            self.adapter.alter_replica_log_dirs(misplaced)
        return self.report

    def set_configs(self, settings: Throttles) -> None:
        """Set the throttle configs, or put back the values recorded before them (None deletes a key)."""
        for kind in ("topics", "brokers"):
            self.adapter.alter_dynamic_configs(kind, settings.get(kind, {}))

    def restore(self, throttles_before: Throttles) -> Optional[str]:
        """Put the recorded throttle values back; why that failed, or None."""
        try:
            self.set_configs(throttles_before)
        except Exception as exc:  # pylint: disable=broad-except  # the caller reports it and hands the throttles on
            return failure_text(exc)
        return None

    def cancel_and_restore(
        self, keys: List[Tuple[str, int]], throttles_before: Throttles
    ) -> Tuple[Dict[Tuple[str, int], Optional[str]], Optional[str]]:
        """Cancel the reassignments of ``keys``, then put the throttles back whatever the cancel did: ({key: None when
        cancelled, else Kafka's answer or why the request failed}, why the restore failed or None)."""
        answers: Dict[Tuple[str, int], Optional[str]] = {}
        restore_error: Optional[str] = None
        try:
            if keys:
                answers = relief_moves.answers_for(
                    keys, self.adapter.alter_partition_reassignments({key: None for key in keys})
                )
        except Exception as exc:  # pylint: disable=broad-except  # the reassignments may still run: reported, pending
            answers = {key: failure_text(exc) for key in keys}
        finally:
            restore_error = self.restore(throttles_before)
        return answers, restore_error

    def wait(self, moves, timeout, poll_interval):
        """Poll until no move runs or ``timeout`` seconds pass: (last progress, samples, timed out)."""
        started = self.clock()
        self.samples = []
        while True:
            report = self.progress(moves)
            elapsed = self.clock() - started
            self.samples.append(
                {
                    "seconds": round(elapsed, 1),
                    "copied_bytes": sum(m["copied_bytes"] for m in report),
                    "moves_done": len(report) - len(relief_moves.unfinished(report)),
                }
            )
            if not relief_moves.running(report):
                return report, _thin(self.samples), False
            if elapsed >= timeout:
                return report, _thin(self.samples), True
            self.sleep(min(poll_interval, max(timeout - elapsed, 0.0)))


def _thin(samples: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    if len(samples) <= PROGRESS_SAMPLES + 2:
        return samples
    step = (len(samples) - 1) / float(PROGRESS_SAMPLES + 1)
    return [samples[int(round(i * step))] for i in range(PROGRESS_SAMPLES + 2)]


def failure_text(exc: BaseException) -> str:
    """An exception as the error message says it: the adapter's messages name the request and carry no secret."""
    if isinstance(exc, KafkaAdapterError):
        return str(exc)
    return "{0}: {1}".format(exc.__class__.__name__, exc)


def _refused(what: str, answers: Dict[Any, Optional[str]]) -> List[str]:
    return [
        "{0} {1}: {2}".format(what, "-".join(str(part) for part in key), error)
        for key, error in answers.items()
        if error
    ]


def _names(keys: Iterable[Tuple[str, int]]) -> str:
    return ", ".join("{0}-{1}".format(*key) for key in keys)


def _partitions(keys: Iterable[Tuple[str, int]]) -> List[Dict[str, Any]]:
    return [{"topic": topic, "partition": number} for topic, number in keys]


def relieve(  # pylint: disable=too-many-arguments,too-many-locals
    adapter: "KafkaAdapter",
    options: Dict[str, Any],
    check_mode: bool = False,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Dict[str, Any]:
    """Relieve every log dir at or below options["relieve_at"]; ``options`` as log_dir_relief takes them, checked."""
    run = _Run(adapter, clock, sleep, check_mode)
    result: Dict[str, Any] = {"changed": False, "moves": [], "throttles_before": {}, "cancelled": []}
    pending = options.get("pending")
    seen = run.look()
    own = pending["moves"] if pending else []
    foreign = relief_moves.foreign_reassignments(seen["view"].get("reassignments", []), own)
    if foreign:
        raise ReliefError(
            "refusing to move anything: {0} partition reassignment(s) in progress that this module did not start "
            "(a later run, or one given them as pending, goes on once they end): {1}".format(
                len(foreign), "; ".join(relief_moves.describe_reassignment(r) for r in foreign)
            ),
            dict(result, foreign_reassignments=foreign),
        )
    if pending:
        return _finish_pending(run, pending, seen, options, result)
    inputs = _inputs(
        seen["view"], seen["partitions"], adapter.min_insync_replicas({p["topic"] for p in seen["partitions"]})
    )
    plan = relief_plan.plan(
        inputs["volumes"],
        inputs["replicas"],
        inputs["partitions"],
        options["relieve_at"],
        options["relieve_to"],
        limit=options.get("limit"),
        racks=inputs["racks"],
        max_bytes=options.get("max_bytes"),
        max_partitions=options.get("max_partitions"),
    )
    result.update(plan=plan, moves=plan["moves"])
    if not plan["moves"] or check_mode:
        result["changed"] = result["changed"] or bool(plan["moves"])
        return _finish(result, seen, plan["moves"], options)
    throttles_before = _start(run, plan["moves"], seen["partitions"], options, result)
    result.update(changed=True, throttles_before=throttles_before)
    if not options["wait"]:
        result["pending"] = {"moves": plan["moves"], "throttles_before": throttles_before}
        return _finish(result, seen, plan["moves"], options)
    _wait(run, plan["moves"], throttles_before, options, result)
    _restore_at_the_end(run, throttles_before, result)
    return _finish(result, seen, plan["moves"], options)


def _finish_pending(run, pending, seen, options, result):
    """A run given an earlier run's ``pending``: check its moves, wait for them when asked, and once none runs, put
    back the throttles it recorded. It plans nothing: a moved replica's old files stay on its source volume for
    file.delete.delay.ms (60 s by default) after the move ends, unseen by DescribeLogDirs, and a plan made now would
    move more to free space already freed."""
    own, throttles_before = pending["moves"], pending["throttles_before"]
    result["throttles_before"] = throttles_before
    report = run.progress(own, seen)
    if relief_moves.running(report) and options["wait"] and not run.check_mode:
        report = _wait(run, own, throttles_before, options, result)
    result["verified"] = report
    if relief_moves.running(report):
        result["pending"] = pending
        return _finish(result, seen, [], options)
    if any(throttles_before.get(kind) for kind in ("topics", "brokers")):
        result["changed"] = True  # in check mode too: a real run would put them back
        if not run.check_mode:
            _restore_at_the_end(run, throttles_before, result)
    return _finish(result, seen, [], options)


def _start(run, moves, partitions, options, result):
    """Start the moves: the cross-broker moves' destination log dirs, the throttles, the log dir moves, then the
    reassignments. Returns the throttles as they were. A failure cancels what the reassignment request may have
    started, puts the throttles back and raises ReliefError."""
    adapter = run.adapter
    _name_destination_log_dirs(run, moves, result)
    targets = relief_moves.reassignment_targets(moves, partitions)
    settings: Throttles = {"topics": {}, "brokers": {}}
    topic_configs: Dict[str, Dict[str, Optional[str]]] = {}
    if targets:
        topic_configs = adapter.dynamic_configs("topics", {key[0] for key in targets}, relief_moves.TOPIC_THROTTLE_KEYS)
        settings = relief_moves.throttle_settings(targets, partitions, options["throttle_rate"], topic_configs)
    for broker, values in relief_moves.log_dir_throttle(moves, options.get("log_dir_throttle_rate")).items():
        settings["brokers"].setdefault(broker, {}).update(values)
    before: Throttles = {"topics": {}, "brokers": {}}
    if settings["topics"] or settings["brokers"]:
        broker_configs = adapter.dynamic_configs(
            "brokers", sorted(settings["brokers"]), relief_moves.BROKER_THROTTLE_KEYS + (relief_moves.LOG_DIR_RATE,)
        )
        before = relief_moves.recorded_before(settings, topic_configs, broker_configs)
        result.update(changed=True, throttles_before=before)
        try:
            run.set_configs(settings)
        except Exception as exc:  # pylint: disable=broad-except  # a part of the throttle may be set: put it all back
            raise ReliefError(
                "setting the replication throttle failed: {0}; no move was started; {1}".format(
                    failure_text(exc), _undo(run, [], before, moves, result)
                ),
                result,
            ) from exc
    refused = _refused("replica", adapter.alter_replica_log_dirs(relief_moves.log_dir_assignments(moves)))
    if refused:
        started = len(refused) < len(relief_moves.inside(moves))
        message = "Kafka refused to move {0} replica(s) between log dirs: {1}; no cross-broker move was started".format(
            len(refused), "; ".join(refused)
        )
        if before["topics"] or before["brokers"]:
            if started:
                # The accepted moves copy on under the log dir throttle: a later run given pending puts it back.
                result["pending"] = {"moves": relief_moves.inside(moves), "throttles_before": before}
                message += "; the moves Kafka accepted go on: give this result's pending to a later run"
            else:
                message += "; " + _undo(run, [], before, moves, result)
        result["changed"] = result["changed"] or started
        raise ReliefError(message, result)
    if not targets:
        return before
    try:
        answered = adapter.alter_partition_reassignments(targets)
    except Exception as exc:  # pylint: disable=broad-except  # the controller may have accepted it before the failure
        raise ReliefError(
            "the request starting {0} cross-broker move(s) failed: {1}; the controller may have started them: "
            "{2}".format(len(targets), failure_text(exc), _undo(run, sorted(targets), before, moves, result)),
            result,
        ) from exc
    answers = relief_moves.answers_for(targets, answered)
    refused = _refused("partition", answers)
    if refused:
        # A partition the answer left out may have started: it is cancelled with the accepted ones.
        maybe_started = sorted(key for key, error in answers.items() if error in (None, relief_moves.UNANSWERED))
        raise ReliefError(
            "Kafka refused to start {0} cross-broker move(s): {1}; for the others: {2}".format(
                len(refused), "; ".join(refused), _undo(run, maybe_started, before, moves, result)
            ),
            result,
        )
    return before


def _name_destination_log_dirs(run: _Run, moves: List[Dict[str, Any]], result: Dict[str, Any]) -> None:
    """Tell each destination broker the log dir of the replica it is about to create, before the reassignment does:
    left alone, a broker picks the log dir with the fewest partitions. The broker records it and answers
    REPLICA_NOT_AVAILABLE (it holds no such replica yet); KAFKA_STORAGE_ERROR is retried a few times. A refusal
    raises ReliefError before anything started."""
    planned = relief_moves.destination_log_dirs(moves)
    wanted = planned
    refused: Dict[Tuple[str, int, int], Optional[str]] = {}
    tries = 0
    while wanted and tries < DESTINATION_TRIES:
        if tries:
            run.sleep(DESTINATION_RETRY_SECONDS)
        tries += 1
        answers = relief_moves.answers_for(wanted, run.adapter.alter_replica_log_dirs(wanted))
        refused = {
            key: error for key, error in answers.items() if error not in (None, relief_moves.REPLICA_NOT_AVAILABLE)
        }
        if any(error != relief_moves.KAFKA_STORAGE_ERROR for error in refused.values()):
            break
        wanted = {key: wanted[key] for key in refused}
    if refused:
        raise ReliefError(
            "the destination brokers refused the log dirs of {0} cross-broker move(s){1}: {2}; nothing was "
            "started".format(
                len(refused),
                " ({0} tries)".format(tries) if tries > 1 else "",
                "; ".join(
                    "{0}-{1} to broker {2} {3}: {4}".format(key[0], key[1], key[2], planned[key], error)
                    for key, error in sorted(refused.items())
                ),
            ),
            result,
        )


def _wait(run, moves, throttles_before, options, result):
    """Wait for the moves and return their last progress. At the timeout, or when a request fails while waiting, the
    cross-broker moves still running are cancelled and the throttles put back (ReliefError)."""
    try:
        report, result["progress"], timed_out = run.wait(moves, options["timeout"], options["poll_interval"])
    except Exception as exc:  # pylint: disable=broad-except  # the moves run on under the throttle: undo, then fail
        result["progress"] = _thin(run.samples)
        # Without a fresh read, every cross-broker move not seen done may still run.
        last = relief_moves.unfinished(run.report) if run.report is not None else moves
        keys = relief_moves.partition_keys(relief_moves.across(last))
        if run.report is not None:
            result["verified"] = run.report
        raise ReliefError(
            "following the moves failed: {0}; {1}".format(
                failure_text(exc), _undo(run, keys, throttles_before, moves, result)
            ),
            result,
        ) from exc
    result["verified"] = report
    if timed_out:
        _give_up(run, report, throttles_before, moves, result, options["timeout"])
    return report


def _give_up(run, report, throttles_before, moves, result, timeout):
    """The wait timed out: cancel the cross-broker moves still going, put the throttles back, raise ReliefError."""
    keys = relief_moves.partition_keys(relief_moves.across(relief_moves.running(report)))
    undone = _undo(run, keys, throttles_before, moves, result)
    settled = {(c["topic"], c["partition"]) for c in result["cancelled"] + result.get("cancel_failed", [])}
    left = [m for m in relief_moves.running(report) if (m["topic"], m["partition"]) not in settled]
    raise ReliefError(
        "the moves did not finish within timeout={0}s: {1} of {2} done; {3}{4}".format(
            timeout,
            len(report) - len(relief_moves.unfinished(report)),
            len(report),
            undone,
            "; moves left to finish inside their brokers: {0}".format(
                ", ".join(
                    "{0}-{1} to {2} on broker {3}".format(m["topic"], m["partition"], m["to_log_dir"], m["to_broker"])
                    for m in left
                )
            )
            if left
            else "",
        ),
        result,
    )


def _undo(run, keys, throttles_before, moves, result):
    """Cancel the reassignments of ``keys`` and put the throttles back whatever the cancel did. ``result`` gets
    ``cancelled`` (what Kafka cancelled), ``cancel_failed`` (what it did not, with why) and, when a reassignment may
    still run or a throttle may still be set, ``pending`` for a later run. Returns what was done, for the message."""
    answers, restore_error = run.cancel_and_restore(keys, throttles_before)
    cancelled = [key for key in keys if answers.get(key) is None]
    # NO_REASSIGNMENT_IN_PROGRESS: the reassignment ended (or never started) before the cancel; nothing runs.
    failed = {
        key: error for key, error in answers.items() if error and error != relief_moves.NO_REASSIGNMENT_IN_PROGRESS
    }
    result.update(changed=True, cancelled=_partitions(cancelled))
    if failed:
        result["cancel_failed"] = [{"topic": t, "partition": p, "error": failed[(t, p)]} for t, p in sorted(failed)]
    if failed or restore_error:
        result["pending"] = {
            "moves": [m for m in relief_moves.across(moves) if (m["topic"], m["partition"]) in failed],
            "throttles_before": throttles_before,
        }
    said = []
    if cancelled:
        said.append("cancelled the cross-broker moves of {0} and ".format(_names(cancelled)))
    elif keys and not failed:
        said.append("cancelled no cross-broker move (none was running) and ")
    said.append(
        "put the replication throttles back as they were"
        if restore_error is None
        else "could not put the replication throttles back: {0}".format(restore_error)
    )
    if failed:
        said.append(
            "; did not cancel {0} (they may still run)".format(
                "; ".join("{0}-{1}: {2}".format(key[0], key[1], failed[key]) for key in sorted(failed))
            )
        )
    if failed or restore_error:
        said.append("; give this result's pending to a later run (option pending) to finish")
    return "".join(said)


def _restore_at_the_end(run, throttles_before, result):
    """The moves ended: put the throttles back, or fail handing them to a later run."""
    restore_error = run.restore(throttles_before)
    if restore_error:
        result["pending"] = {"moves": [], "throttles_before": throttles_before}
        raise ReliefError(
            "the moves ended, but putting the replication throttles back failed: {0}; give this result's pending to a "
            "later run (option pending) to put them back".format(restore_error),
            result,
        )


def _finish(result, seen, moves, options):
    result["diff"] = relief_moves.usage_diff(seen["view"]["log_dirs"], moves)
    result["missing_brokers"] = seen["view"].get("missing_brokers", [])
    result["fenced_brokers"] = seen["view"].get("fenced_brokers", [])
    result["wait"] = options["wait"]
    return result
