"""The decision timeline: what a throttling policy decides at each check instant of a snapshot history, with no I/O.

The reference the Spark stage (headroom_pipeline/decisions.py) and the benchmark's pandas and DuckDB baselines are
held to: plain Python, one message at a time, easy to read against the rules below. It lives with the tests, since
nothing the collection ships runs it; every implementation passes tests/vectors/decision_timeline.json, the disk
guard too (tests/guard/test_decision_timeline_vectors.py). The plugin clock's two boundaries are the guard's own
functions (disk_guard.factor_valid and disk_guard.still_remembered), so that the two Python implementations of the
clock cannot drift apart; the Spark stage and the baselines, written for other engines, have theirs.

Inputs are snapshot messages, dicts::

    {"cluster": "c1", "broker_id": 1, "at": datetime (aware; naive counts as UTC),
     "soft_limit": {"type": "min_free_bytes", "level": 200} or None, "hard_limit": {...} or None,
     "volumes": [{"log_dir": "/var/lib/kafka/a", "total_bytes": 1000, "usable_bytes": 150}]}

Sizes that are None or negative are unknown: such volumes are skipped, as the plugin skips offline log dirs.

Rules shared by both policies:

* Duplicates (same cluster, broker_id and at): the message with the least total usable bytes (sum over volumes of
  known size) is kept, the conservative reading. Ties are broken by the volume list (sorted (log_dir, total, usable)
  with unknown sizes as -1), then the soft and hard limits (type, level; missing as "" and -1), smallest first, so
  that every implementation keeps the same message.
* Instants: per cluster, every epoch-aligned multiple of the check interval I (t = n * I since 1970-01-01T00:00Z),
  from ceil(first at / I) * I through ceil(last at / I) * I inclusive. Every message is covered by the instant
  that follows it, and gaps in the data still get instants. Times are compared in whole microseconds (I, the
  validity V and the freshness F are rounded to microseconds).
* At an instant t, a broker's latest message is its newest message with at <= t.

Policy ``strimzi`` (the shipped quota plugin):

* new(t) = the messages with t - I < at <= t. The observation at t succeeds iff new(t) is not empty (the plugin's
  admin call answered).
* Success: a broker is included if it has a message in new(t), or if t < at + V for its latest message (volumes of
  brokers that dropped out are remembered until t >= at + V: inclusive forget). The union of the included brokers'
  volumes (from their latest messages) is decided by volume_limits.strimzi_decision: binary factor, inclusive
  comparisons, ratio 0 for total 0, unknown sizes skipped. The factor's validity starts at t (valid_from = t);
  fallback_applied false; observed true.
* Failure: while t - valid_from <= V the last factor is kept (fallback_applied false); strictly after that the
  factor is the fallback factor (fallback_applied true). No violations; observed false; nothing considered.
  The initial state is factor 1.0 with valid_from = the first instant (which always succeeds, since it covers the
  first message).
* state = volume_limits.state_of(factor): a fallback of 0.5 is THROTTLE.

Policy ``graded`` (the first volume-usage proposal):

* Known brokers are the brokers with any message at <= t. A broker is fresh when t - at <= F for its latest
  message; stale brokers are ignored; the data is complete when every known broker is fresh.
* Each volume of a fresh broker is judged with the soft and hard limits of its own message through
  volume_limits.graded_volume_factor and breaches. Volumes whose message lacks a limit, or has limits that
  volume_limits.validate_graded_limits refuses, are skipped like volumes of unknown size.
* position = the smallest volume_limits.graded_position of the judged volumes (none when no volume is judged);
  factor = factor_steps.held_factor of that position in steps of factor_step (0: the exact factor, the smallest
  volume factor), held from the cluster's previous instant's factor (none at its first instant). When the data is not
  complete and the missing-data action is ``pause``, the factor is 0.0 (held so by the next instant) and
  fallback_applied is true; with ``open`` the volumes decide alone.
* violations = the judged volumes at or past their soft limit, ordered as volume_limits.graded_decision orders
  them: volume factor, then usable bytes, then (broker_id, log_dir). observed = some broker is fresh.

Each row: cluster, at (aware UTC datetime), policy, throttle_factor, state, fallback_applied, observed, violations
([[broker_id, log_dir], ...]), volumes_considered (volumes judged: known size and, for graded, valid limits) and
brokers_considered (included brokers for strimzi, fresh brokers for graded). Rows are ordered by cluster, then at.
"""

import datetime
import math

from ansible_collections.headroom.kafka.plugins.module_utils import disk_guard, factor_steps, volume_limits

POLICIES = ("strimzi", "graded")
MICROS_PER_SECOND = 1000000
_UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
_ONE_MICROSECOND = datetime.timedelta(microseconds=1)


class TimelineError(ValueError):
    """A timeline parameter that cannot work; the message names it, the value and what is allowed."""


# -- time in whole microseconds ------------------------------------------------------------------------------------
def to_micros(moment):
    """Microseconds since the epoch (naive datetimes count as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_UTC)
    return (moment - _EPOCH) // _ONE_MICROSECOND


def from_micros(micros):
    return _EPOCH + datetime.timedelta(microseconds=micros)


def duration_micros(seconds):
    return int(round(seconds * MICROS_PER_SECOND))


def instant_on_or_after(micros, interval):
    """The first multiple of ``interval`` at or after ``micros`` (ceil to the grid)."""
    return micros + (-micros) % interval


def _positive_seconds(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or duration_micros(value) < 1:
        raise TimelineError(
            "{0} must be a positive number of seconds, at least one microsecond (got {1!r})".format(name, value)
        )
    return duration_micros(value)


def _check_parameters(policy, fallback, min_available_bytes, min_available_ratio, missing_data_action):
    if policy not in POLICIES:
        raise TimelineError("policy must be one of {0} (got {1!r})".format(", ".join(POLICIES), policy))
    if isinstance(fallback, bool) or not isinstance(fallback, (int, float)) or not 0.0 <= fallback <= 1.0:
        raise TimelineError("fallback must be between 0.0 and 1.0 inclusive (got {0!r})".format(fallback))
    if policy == "strimzi":
        volume_limits.validate_strimzi_limits(min_available_bytes, min_available_ratio)
    elif missing_data_action not in volume_limits.MISSING_DATA_ACTIONS:
        raise TimelineError(
            "missing_data_action must be one of {0} (got {1!r})".format(
                ", ".join(volume_limits.MISSING_DATA_ACTIONS), missing_data_action
            )
        )


# -- messages ------------------------------------------------------------------------------------------------------
def _size_or_unknown(value):
    return value if value is not None and value >= 0 else -1


def _usable_total(message):
    return sum(volume["usable_bytes"] for volume in volume_limits.usable_volumes(message["volumes"])[0])


def _limit_key(limit):
    """(type, level) for ordering duplicates; a missing limit or a level that is not a finite number as ("", -1.0)."""
    if not isinstance(limit, dict):
        return ("", -1.0)
    level = limit.get("level")
    finite = isinstance(level, (int, float)) and not isinstance(level, bool) and math.isfinite(level)
    return (limit.get("type") or "", float(level) if finite else -1.0)


def duplicate_preference(message):
    """Sort key among messages of one broker and instant of observation: the smallest one is kept (see module doc)."""
    volumes = sorted(
        (volume["log_dir"], _size_or_unknown(volume.get("total_bytes")), _size_or_unknown(volume.get("usable_bytes")))
        for volume in message["volumes"]
    )
    return (
        _usable_total(message),
        volumes,
        _limit_key(message.get("soft_limit")),
        _limit_key(message.get("hard_limit")),
    )


def deduplicate(messages):
    """One message per (cluster, broker_id, at), each with its time in microseconds as ``at_micros``."""
    kept = {}
    for message in messages:
        at_micros = to_micros(message["at"])
        key = (message["cluster"], message["broker_id"], at_micros)
        if key not in kept or duplicate_preference(message) < duplicate_preference(kept[key]):
            kept[key] = dict(message, at_micros=at_micros)
    return list(kept.values())


def _by_cluster(messages):
    clusters = {}
    for message in messages:
        clusters.setdefault(message["cluster"], []).append(message)
    for cluster_messages in clusters.values():
        cluster_messages.sort(key=lambda m: m["at_micros"])
    return clusters


def _broker_volumes(message):
    return [dict(volume, broker_id=message["broker_id"]) for volume in message["volumes"]]


# -- policy strimzi ------------------------------------------------------------------------------------------------
class _PluginClock:
    """The plugin's factor and the start of its validity; a failed observation keeps or falls back."""

    def __init__(self, first_instant, validity, fallback):
        self.factor, self.valid_from = 1.0, first_instant
        self.validity, self.fallback = validity, fallback

    def succeed(self, instant, factor):
        self.factor, self.valid_from = factor, instant

    def fail(self, instant):
        """(factor, fallback_applied) after a failed observation at ``instant``."""
        if disk_guard.factor_valid(self.valid_from, instant, self.validity):
            return self.factor, False
        return float(self.fallback), True


def _strimzi_row(instant, latest, observed, clock, interval, validity, limits):
    if not observed:
        factor, fallback_applied = clock.fail(instant)
        return {
            "throttle_factor": factor,
            "fallback_applied": fallback_applied,
            "observed": False,
            "violations": [],
            "volumes_considered": 0,
            "brokers_considered": 0,
        }
    included = [
        message
        for message in latest.values()
        if message["at_micros"] > instant - interval
        or disk_guard.still_remembered(message["at_micros"], instant, validity)
    ]
    volumes = [volume for message in included for volume in _broker_volumes(message)]
    decision = volume_limits.strimzi_decision(volumes, **limits)
    clock.succeed(instant, decision["throttle_factor"])
    return {
        "throttle_factor": decision["throttle_factor"],
        "fallback_applied": False,
        "observed": True,
        "violations": [[v["broker_id"], v["log_dir"]] for v in decision["violations"]],
        "volumes_considered": len(volumes) - len(decision["skipped_volumes"]),
        "brokers_considered": len(included),
    }


# -- policy graded -------------------------------------------------------------------------------------------------
def _judged_volumes(message):
    """(volume factor, volume, soft limit) for the volumes of one message that its limits can judge."""
    soft_limit, hard_limit = message.get("soft_limit"), message.get("hard_limit")
    try:
        volume_limits.validate_graded_limits(soft_limit, hard_limit)
    except volume_limits.LimitError:
        return []
    known = volume_limits.usable_volumes(_broker_volumes(message))[0]
    return [
        (
            volume_limits.graded_volume_factor(volume, soft_limit, hard_limit),
            volume,
            soft_limit,
            volume_limits.graded_position(volume, soft_limit, hard_limit),
        )
        for volume in known
    ]


def _graded_row(instant, latest, freshness, missing_data_action, step, held):
    fresh = [message for message in latest.values() if instant - message["at_micros"] <= freshness]
    complete = len(fresh) == len(latest)
    judged = [item for message in fresh for item in _judged_volumes(message)]
    # The order of volume_limits.graded_decision: factor, then usable bytes, then (broker_id, log_dir).
    judged.sort(key=lambda item: (item[0], item[1]["usable_bytes"], volume_limits.volume_key(item[1])))
    position = min((item[3] for item in judged), default=None)
    violations = [
        [volume["broker_id"], volume["log_dir"]]
        for volume_factor, volume, soft_limit, volume_position in judged
        if volume_limits.breaches(volume, soft_limit)
    ]
    fallback_applied = not complete and missing_data_action == "pause"
    return {
        "throttle_factor": 0.0 if fallback_applied else factor_steps.held_factor(position, held, step),
        "fallback_applied": fallback_applied,
        "observed": bool(fresh),
        "violations": violations,
        "volumes_considered": len(judged),
        "brokers_considered": len(fresh),
    }


# -- the timeline ------------------------------------------------------------------------------------------------
class Checkpoint:
    """A cluster's state after its check instant ``instant``: every later row follows from it and the messages after it
    (what an incremental run carries from one run to the next instead of the history).

    ``latest``: each broker's latest message at or before the instant, those that no later instant can judge (at or
    before the instant minus the larger of V and F: past the plugin's memory and stale) reduced to what still counts,
    that the broker is known (graded: the data stays incomplete); ``factor`` and ``valid_from``: the plugin's clock;
    ``held``: the graded factor decided at the instant.
    """

    def __init__(self, instant, latest, factor, valid_from, held):
        self.instant, self.latest, self.factor, self.valid_from, self.held = instant, latest, factor, valid_from, held


def _known_only(message):
    """What a message still says once no instant can judge it: its broker is known, and its data stale."""
    return {"broker_id": message["broker_id"], "at_micros": message["at_micros"], "volumes": []}


def _cluster_rows(
    cluster,
    messages,
    policy,
    interval,
    validity,
    fallback,
    limits,
    freshness,
    missing_data_action,
    factor_step,
    start=None,
    stop_at=None,
):
    """The cluster's rows from its first instant, or from the instant after ``start`` (a Checkpoint; ``messages`` are
    then those after it), to the instant of its last message; with ``stop_at`` (an instant), the Checkpoint after it
    instead."""
    last_instant = instant_on_or_after(messages[-1]["at_micros"], interval) if messages else None
    if start is None:
        first_instant = instant_on_or_after(messages[0]["at_micros"], interval)
        clock = _PluginClock(first_instant, validity, fallback)
        latest, held = {}, None
    else:
        if messages and messages[0]["at_micros"] <= start.instant:
            raise TimelineError("a message at or before the checkpoint's instant: resume from an earlier checkpoint")
        first_instant = start.instant + interval
        clock = _PluginClock(start.valid_from, validity, fallback)
        clock.factor = start.factor
        latest, held = dict(start.latest), start.held
    position, rows = 0, []
    end = last_instant if stop_at is None else stop_at
    for instant in range(first_instant, end + 1, interval) if end is not None else ():
        arrived = 0
        while position < len(messages) and messages[position]["at_micros"] <= instant:
            latest[messages[position]["broker_id"]] = messages[position]
            position, arrived = position + 1, arrived + 1
        if policy == "strimzi":
            # Instants are consecutive, so the messages that arrived since the last instant are exactly new(t).
            row = _strimzi_row(instant, latest, arrived > 0, clock, interval, validity, limits)
        else:
            row = _graded_row(instant, latest, freshness, missing_data_action, factor_step, held)
            held = row["throttle_factor"]
        row.update(
            cluster=cluster,
            at=from_micros(instant),
            policy=policy,
            state=volume_limits.state_of(row["throttle_factor"]),
        )
        rows.append(row)
    if stop_at is None:
        return rows
    judged_after = stop_at - max(validity, freshness)
    kept = {
        broker: message if message["at_micros"] > judged_after else _known_only(message)
        for broker, message in latest.items()
    }
    return Checkpoint(stop_at, kept, clock.factor, clock.valid_from, held)


def _parameters(
    policy,
    check_interval,
    validity=300,
    fallback=1.0,
    min_available_bytes=None,
    min_available_ratio=None,
    freshness=None,
    missing_data_action="pause",
    factor_step=factor_steps.DEFAULT_STEP,
):
    """The timeline's parameters checked, in the form _cluster_rows takes them (durations in microseconds).

    check_interval, validity and freshness are seconds; freshness defaults to three check intervals.
    """
    factor_steps.check_step(factor_step, "factor_step")
    interval = _positive_seconds("check_interval", check_interval)
    validity_micros = _positive_seconds("validity", validity)
    freshness_micros = _positive_seconds("freshness", freshness) if freshness is not None else 3 * interval
    _check_parameters(policy, fallback, min_available_bytes, min_available_ratio, missing_data_action)
    limits = {"min_available_bytes": min_available_bytes, "min_available_ratio": min_available_ratio}
    return {
        "policy": policy,
        "interval": interval,
        "validity": validity_micros,
        "fallback": fallback,
        "limits": limits,
        "freshness": freshness_micros,
        "missing_data_action": missing_data_action,
        "factor_step": factor_step,
    }


def decision_timeline(messages, policy, check_interval, checkpoints=None, **options):
    """The decision rows of every cluster and check instant (see the module documentation for the rules).

    ``options``: validity (300 s), fallback (1.0), min_available_bytes, min_available_ratio, freshness (three check
    intervals), missing_data_action ("pause") and factor_step, as _parameters takes them. With ``checkpoints``
    ({cluster: Checkpoint}, from checkpoints()), ``messages`` are those after each cluster's checkpoint and the rows
    are those after it: the rows a run over the whole history gives after that instant.
    """
    parameters = _parameters(policy, check_interval, **options)
    checkpoints = checkpoints or {}
    rows = []
    for cluster, cluster_messages in sorted(_by_cluster(deduplicate(messages)).items()):
        rows.extend(_cluster_rows(cluster, cluster_messages, start=checkpoints.get(cluster), **parameters))
    return rows


def checkpoints(messages, instant, policy, check_interval, **options):
    """{cluster: Checkpoint} after check instant ``instant`` (microseconds since the epoch, on the grid) of every
    cluster whose first instant is at or before it, from the messages at or before it; ``options`` as
    decision_timeline's. The resumed rows start at the instant after ``instant``: a run over the messages up to
    ``instant`` stopped at each cluster's last instant, which may be earlier, so to continue such a run take each
    cluster's checkpoint at its own last instant (as decisions.seeds_of does), or the instants between come from
    neither."""
    parameters = _parameters(policy, check_interval, **options)
    result = {}
    for cluster, cluster_messages in sorted(_by_cluster(deduplicate(messages)).items()):
        before = [message for message in cluster_messages if message["at_micros"] <= instant]
        if before and instant_on_or_after(before[0]["at_micros"], parameters["interval"]) <= instant:
            result[cluster] = _cluster_rows(cluster, before, stop_at=instant, **parameters)
    return result
