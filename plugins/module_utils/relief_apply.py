# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Relieve filling log dirs on one cluster: read it, plan the moves (relief_plan), start them (relief_moves), wait for
them or hand them to a later run (log_dir_relief). Talks to Kafka only through the adapter it is given."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.headroom.kafka.plugins.module_utils import log_dirs, relief_moves, relief_plan

if TYPE_CHECKING:
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter

# The progress samples a result keeps when it waited: the first, the last and this many between.
PROGRESS_SAMPLES = 20


class ReliefError(Exception):
    """The run stopped; ``result`` says what it had done (moves, progress, cancelled, throttles)."""

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

    def __init__(self, adapter: "KafkaAdapter", clock: Callable[[], float], sleep: Callable[[float], None]) -> None:
        self.adapter = adapter
        self.clock = clock
        self.sleep = sleep

    def look(self) -> Dict[str, Any]:
        view = log_dirs.collect(self.adapter, replicas=True)
        partitions = self.adapter.partitions()
        return {"view": view, "partitions": partitions}

    def progress(self, moves: List[Dict[str, Any]], seen: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
        """Each move's state, from ``seen`` (a look at the cluster) or a new look."""
        seen = seen or self.look()
        return relief_moves.progress(
            moves, seen["view"]["log_dirs"], seen["partitions"], seen["view"].get("reassignments", [])
        )

    def set_configs(self, settings: Dict[str, Dict[str, Dict[str, Optional[str]]]]) -> None:
        """Set the throttle configs, or put back the values recorded before them (None deletes a key)."""
        for kind in ("topics", "brokers"):
            self.adapter.alter_dynamic_configs(kind, settings.get(kind, {}))

    def cancel_and_restore(
        self, keys: List[Tuple[str, int]], throttles_before: Dict[str, Dict[str, Dict[str, Optional[str]]]]
    ) -> List[str]:
        """Cancel the reassignments of ``keys``, then put the throttles back; Kafka's refusals to cancel."""
        refused = []
        if keys:
            refused = _refused("partition", self.adapter.alter_partition_reassignments({key: None for key in keys}))
        self.set_configs(throttles_before)
        return refused

    def wait(self, moves, timeout, poll_interval):
        """Poll until every move is done or ``timeout`` seconds pass: (last progress, samples, timed out)."""
        started = self.clock()
        samples = []
        while True:
            report = self.progress(moves)
            elapsed = self.clock() - started
            samples.append(
                {
                    "seconds": round(elapsed, 1),
                    "copied_bytes": sum(m["copied_bytes"] for m in report),
                    "moves_done": len(report) - len(relief_moves.unfinished(report)),
                }
            )
            if not relief_moves.unfinished(report):
                return report, _thin(samples), False
            if elapsed >= timeout:
                return report, _thin(samples), True
            self.sleep(min(poll_interval, max(timeout - elapsed, 0.0)))


def _thin(samples: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    if len(samples) <= PROGRESS_SAMPLES + 2:
        return samples
    step = (len(samples) - 1) / float(PROGRESS_SAMPLES + 1)
    return [samples[int(round(i * step))] for i in range(PROGRESS_SAMPLES + 2)]


def _refused(what: str, answers: Dict[Any, Optional[str]]) -> List[str]:
    return [
        "{0} {1}: {2}".format(what, "-".join(str(part) for part in key), error)
        for key, error in answers.items()
        if error
    ]


def relieve(  # pylint: disable=too-many-arguments,too-many-locals
    adapter: "KafkaAdapter",
    options: Dict[str, Any],
    check_mode: bool = False,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Dict[str, Any]:
    """Relieve every log dir at or below options["relieve_at"]; ``options`` as log_dir_relief takes them, checked."""
    run = _Run(adapter, clock, sleep)
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
        report = run.progress(own, seen)
        if relief_moves.unfinished(report) and options["wait"] and not check_mode:
            report, result["progress"], timed_out = run.wait(own, options["timeout"], options["poll_interval"])
            if timed_out:
                _give_up(run, report, pending["throttles_before"], result, options["timeout"])
        result["verified"] = report
        if relief_moves.unfinished(report):
            result["pending"] = pending
            return _finish(result, seen, [], options)
        if not check_mode and any(pending["throttles_before"].get(kind) for kind in ("topics", "brokers")):
            run.set_configs(pending["throttles_before"])
            result["changed"] = True
        # A moved replica's old files stay on its source volume for file.delete.delay.ms (60 s by default) after the
        # move ends, unseen by DescribeLogDirs: a plan made now would move more to free space already freed.
        return _finish(result, seen, [], options)
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
    throttles_before = _start(run, plan["moves"], seen["partitions"], options["throttle_rate"], result)
    result.update(changed=True, throttles_before=throttles_before)
    if not options["wait"]:
        result["pending"] = {"moves": plan["moves"], "throttles_before": throttles_before}
        return _finish(result, seen, plan["moves"], options)
    report, result["progress"], timed_out = run.wait(plan["moves"], options["timeout"], options["poll_interval"])
    result["verified"] = report
    if timed_out:
        _give_up(run, report, throttles_before, result, options["timeout"])
    run.set_configs(throttles_before)
    return _finish(result, seen, plan["moves"], options)


def _start(run, moves, partitions, rate, result):
    """Start the moves: the log dir moves, then the throttle, then the reassignments. Returns the throttles as they
    were. A refusal cancels the reassignments Kafka accepted, puts the throttles back and raises ReliefError."""
    adapter = run.adapter
    refused = _refused("replica", adapter.alter_replica_log_dirs(relief_moves.log_dir_assignments(moves)))
    if refused:
        result["changed"] = len(refused) < len(relief_moves.inside(moves))
        raise ReliefError(
            "Kafka refused to move {0} replica(s) between log dirs: {1}; no cross-broker move was started".format(
                len(refused), "; ".join(refused)
            ),
            result,
        )
    targets = relief_moves.reassignment_targets(moves, partitions)
    if not targets:
        return {"topics": {}, "brokers": {}}
    brokers = [str(b) for b in relief_moves.involved_brokers(targets, partitions)]
    topic_configs = adapter.dynamic_configs("topics", {key[0] for key in targets}, relief_moves.TOPIC_THROTTLE_KEYS)
    broker_configs = adapter.dynamic_configs("brokers", brokers, relief_moves.BROKER_THROTTLE_KEYS)
    settings = relief_moves.throttle_settings(targets, partitions, rate, topic_configs)
    before = relief_moves.recorded_before(settings, topic_configs, broker_configs)
    run.set_configs(settings)
    try:
        answers = adapter.alter_partition_reassignments(targets)
    except Exception:
        run.set_configs(before)
        raise
    refused = _refused("partition", answers)
    if refused:
        accepted = sorted(key for key, error in answers.items() if not error)
        run.cancel_and_restore(accepted, before)
        result.update(changed=True, cancelled=[{"topic": t, "partition": p} for t, p in accepted])
        raise ReliefError(
            "Kafka refused to start {0} cross-broker move(s): {1}; the ones it accepted were cancelled and the "
            "replication throttles put back as they were".format(len(refused), "; ".join(refused)),
            result,
        )
    return before


def _give_up(run, report, throttles_before, result, timeout):
    """The wait timed out: cancel the cross-broker moves still going, put the throttles back, raise ReliefError."""
    keys = sorted({(m["topic"], m["partition"]) for m in relief_moves.across(relief_moves.unfinished(report))})
    refused = run.cancel_and_restore(keys, throttles_before)
    left = relief_moves.inside(relief_moves.unfinished(report))
    result.update(changed=True, verified=report, cancelled=[{"topic": t, "partition": p} for t, p in keys])
    raise ReliefError(
        "the moves did not finish within timeout={0}s: {1} of {2} done; cancelled the cross-broker moves of {3} and "
        "put the replication throttles back as they were{4}{5}".format(
            timeout,
            len(report) - len(relief_moves.unfinished(report)),
            len(report),
            ", ".join("{0}-{1}".format(*key) for key in keys) or "no partition",
            "; log dir moves still copying inside their brokers: {0}".format(
                ", ".join("{0}-{1} on broker {2}".format(m["topic"], m["partition"], m["to_broker"]) for m in left)
            )
            if left
            else "",
            "; Kafka refused to cancel: {0}".format("; ".join(refused)) if refused else "",
        ),
        result,
    )


def _finish(result, seen, moves, options):
    result["diff"] = relief_moves.usage_diff(seen["view"]["log_dirs"], moves)
    result["missing_brokers"] = seen["view"].get("missing_brokers", [])
    result["fenced_brokers"] = seen["view"].get("fenced_brokers", [])
    result["wait"] = options["wait"]
    return result
