"""Per-topic bytes-in thresholds under a broker-wide total (the broker-side topic quota design, V1), with no I/O.

A plan: ``{"total_bytes_in_per_sec_threshold": N, "topics": {"name": threshold, ...}}`` for every broker, optionally
with ``"brokers": {"<id>": {same keys}}``: a broker's total replaces the plan's, its topic thresholds are added to
the plan's and replace those of the same topics. On every broker the explicit thresholds (all that apply to it,
whether or not the topic has traffic there) may not sum past the broker's total. Each other topic present on the
broker gets the implicit threshold ``(total - sum of explicit thresholds) / number of topics without one``.

Observed rates are the broker's Meter one-minute rates: an EWMA ticked every 5 seconds with
``alpha = 1 - exp(-5/60)``. Over an interval with a constant rate r the rate moves to ``r + (previous - r) *
exp(-seconds/60)`` (which is (1 - alpha) ** (seconds/5)); a meter's first interval sets it to that interval's rate,
as the Meter's first tick does. A produce request is rejected when the broker's total rate is above the total
threshold and the topic's rate above the topic's threshold.
"""

import math
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union, cast

TOTAL = "total_bytes_in_per_sec_threshold"
PLAN_KEYS = (TOTAL, "topics", "brokers")
BROKER_KEYS = (TOTAL, "topics")
TICK_SECONDS = 5.0
ONE_MINUTE_SECONDS = 60.0
ALPHA = 1.0 - math.exp(-TICK_SECONDS / ONE_MINUTE_SECONDS)
EXPLICIT = "explicit"
IMPLICIT = "implicit"
# Kafka's legal topic names: at most 249 of these characters, and not "." or "..".
TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
BROKER_ID = re.compile(r"^[0-9]+$")


class TopicThresholdError(ValueError):
    """A plan that cannot work; the message names the field, the value and what is allowed."""


def _number_text(value):
    """600000 rather than 600000.0 in messages."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() and abs(value) < 1e15 else str(value)


def _threshold(where, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TopicThresholdError(
            "{0} must be a number of bytes per second greater than 0 (got {1!r})".format(where, value)
        )
    if not value > 0:
        raise TopicThresholdError(
            "{0} must be greater than 0 bytes per second (got {1})".format(where, _number_text(value))
        )
    return float(value)


def _topics(where, topics):
    if not isinstance(topics, dict):
        raise TopicThresholdError(
            "{0} must be a dict of topic name to bytes-in threshold (got {1!r})".format(where, topics)
        )
    result = {}
    for name, value in topics.items():
        if not isinstance(name, str) or not TOPIC_NAME.match(name) or name in (".", ".."):
            raise TopicThresholdError(
                "{0}: {1!r} is not a Kafka topic name (letters, digits, '.', '_' and '-', at most 249 "
                "characters)".format(where, name)
            )
        result[name] = _threshold("{0}.{1}".format(where, name), value)
    return result


def _unknown_keys(where, document, allowed):
    unknown = sorted(str(key) for key in set(document) - set(allowed))
    if unknown:
        raise TopicThresholdError(
            "{0} has unknown key(s) {1}; allowed: {2}".format(where, ", ".join(unknown), ", ".join(allowed))
        )


def _check_sum(where, total, explicit, broker_text):
    reserved = explicit_sum(explicit)
    if reserved > total:
        raise TopicThresholdError(
            "{0}: the explicit topic thresholds {1}sum to {2} bytes/s, more than {3} {4}".format(
                where, broker_text, _number_text(reserved), TOTAL, _number_text(total)
            )
        )


def validate_plan(plan: object) -> Dict[str, Any]:
    """The plan with numbers as floats and broker ids as canonical text; TopicThresholdError for the first problem."""
    if not isinstance(plan, dict):
        raise TopicThresholdError(
            "the topic threshold plan must be a dict with {0} and topics (got {1!r})".format(TOTAL, plan)
        )
    _unknown_keys("the topic threshold plan", plan, PLAN_KEYS)
    if TOTAL not in plan:
        raise TopicThresholdError(
            "{0} is required: the broker-wide bytes-in threshold in bytes per second".format(TOTAL)
        )
    result = {TOTAL: _threshold(TOTAL, plan[TOTAL]), "topics": _topics("topics", plan.get("topics", {})), "brokers": {}}
    _check_sum("topics", result[TOTAL], result["topics"], "")
    brokers = plan.get("brokers", {})
    if not isinstance(brokers, dict):
        raise TopicThresholdError(
            "brokers must be a dict of broker id to {{{0}, topics}} (got {1!r})".format(TOTAL, brokers)
        )
    for broker, override in brokers.items():
        if not isinstance(broker, str) or not BROKER_ID.match(broker):
            raise TopicThresholdError("brokers: {0!r} is not a broker id (a whole number >= 0)".format(broker))
        where = "brokers.{0}".format(broker)
        if not isinstance(override, dict):
            raise TopicThresholdError(
                "{0} must be a dict with {1} and/or topics (got {2!r})".format(where, TOTAL, override)
            )
        _unknown_keys(where, override, BROKER_KEYS)
        canonical = str(int(broker))
        if canonical in result["brokers"]:
            raise TopicThresholdError("{0}: broker {1} is listed twice".format(where, canonical))
        checked = {}
        if TOTAL in override:
            checked[TOTAL] = _threshold("{0}.{1}".format(where, TOTAL), override[TOTAL])
        if "topics" in override:
            checked["topics"] = _topics(where + ".topics", override["topics"])
        result["brokers"][canonical] = checked
        total, explicit = broker_plan(result, int(canonical))
        _check_sum(where, total, explicit, "that apply to broker {0} ".format(canonical))
    return result


def broker_plan(plan: Dict[str, Any], broker_id: Union[int, str]) -> Tuple[float, Dict[str, float]]:
    """(total threshold, {topic: explicit threshold}) on one broker of a validated plan."""
    override = plan.get("brokers", {}).get(str(broker_id), {})
    explicit = dict(plan["topics"])
    explicit.update(override.get("topics", {}))
    return override.get(TOTAL, plan[TOTAL]), explicit


def explicit_sum(explicit: Mapping[str, float]) -> float:
    """The sum of explicit thresholds, added in topic name order (so every implementation gets the same float)."""
    return sum(explicit[name] for name in sorted(explicit))


def implicit_threshold(total: float, explicit: Mapping[str, float], topics: Iterable[str]) -> Optional[float]:
    """(total - sum of explicit thresholds) / number of the broker's topics without one; None when every one has one."""
    without = [topic for topic in set(topics) if topic not in explicit]
    if not without:
        return None
    return (total - explicit_sum(explicit)) / len(without)


def topic_threshold(
    total: float, explicit: Mapping[str, float], topics: Iterable[str], topic: str
) -> Tuple[Optional[float], str]:
    """(threshold, kind) of one topic on a broker whose topics are ``topics``; kind is explicit or implicit."""
    if topic in explicit:
        return explicit[topic], EXPLICIT
    return implicit_threshold(total, explicit, topics), IMPLICIT


def meter_update(previous: Optional[float], rate: float, seconds: float) -> float:
    """The one-minute rate after ``seconds`` at a constant ``rate`` (bytes/s);
    a meter not started yet takes the rate."""
    if previous is None:
        return rate
    return rate + (previous - rate) * math.exp(-seconds / ONE_MINUTE_SECONDS)


def rejects(total_rate: float, total_threshold: float, topic_rate: float, topic_threshold_value: float) -> bool:
    """The design's rule: reject when the broker's total rate and the topic's rate are both above their thresholds."""
    return total_rate > total_threshold and topic_rate > topic_threshold_value


# -- the analysis over traffic ------------------------------------------------------------------------------------
def _timelines(rows):
    """Per broker: {ts_us: bytes_in of every topic}; per (broker, topic): {ts_us: bytes_in}."""
    brokers, topics = {}, {}
    for row in rows:
        timeline = brokers.setdefault(row["broker_id"], {})
        timeline[row["ts_us"]] = timeline.get(row["ts_us"], 0) + row["bytes_in"]
        if row.get("topic") is not None:
            series = topics.setdefault((row["broker_id"], row["topic"]), {})
            series[row["ts_us"]] = series.get(row["ts_us"], 0) + row["bytes_in"]
    return brokers, topics


def interval_starts(instants: Iterable[int]) -> Dict[int, int]:
    """{ts_us: start of the interval that ends there}: the broker's previous instant; for its first instant, the gap to
    the next one is taken as the interval's length (exports are periodic). A broker with one instant has none."""
    ordered = sorted(instants)
    starts = {}
    for index, instant in enumerate(ordered):
        if index > 0:
            starts[instant] = ordered[index - 1]
        elif len(ordered) > 1:
            starts[instant] = instant - (ordered[1] - instant)
    return starts


def meter_step(
    state: Optional[float], last_us: Optional[int], ts_us: int, start_us: int, interval_bytes: float
) -> float:
    """One meter after the interval (start_us, ts_us] with these bytes, idle (rate 0) since last_us before it."""
    seconds = (ts_us - start_us) / 1000000.0
    rate = interval_bytes / seconds
    if state is None:
        return rate
    idle = meter_update(state, 0.0, (start_us - cast(int, last_us)) / 1000000.0)  # a started meter has a last instant
    return meter_update(idle, rate, seconds)


def meter_series(points: Mapping[int, float], starts: Mapping[int, int]) -> Dict[int, float]:
    """{ts_us: one-minute rate at ts} for one meter's points {ts_us: bytes} on a broker's interval starts."""
    state, last, result = None, None, {}
    for instant in sorted(points):
        if instant not in starts:
            continue
        state = meter_step(state, last, instant, starts[instant], points[instant])
        last = instant
        result[instant] = state
    return result


def topic_analysis(rows: Iterable[Dict[str, Any]], plan: object) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(thresholds, rejections) from traffic rows (ts_us, broker_id, topic, bytes_in) and a plan.

    thresholds: one dict per (broker_id, topic) with traffic. rejections: one dict per (broker_id, topic, ts_us) at
    which both rates are above their thresholds, with the topic's bytes of that interval as bytes_rejected. Rejected
    bytes are not taken out of the meters: this is what would trip, an upper bound of what the broker would reject.
    """
    plan = validate_plan(plan)
    brokers, topics = _timelines(rows)
    thresholds, rejections = [], []
    for broker_id in sorted(brokers):
        total, explicit = broker_plan(plan, broker_id)
        names = sorted(topic for (broker, topic) in topics if broker == broker_id)
        implicit = implicit_threshold(total, explicit, names)
        starts = interval_starts(brokers[broker_id])
        total_rates = meter_series(brokers[broker_id], starts)
        for name in names:
            threshold, kind = (explicit[name], EXPLICIT) if name in explicit else (implicit, IMPLICIT)
            thresholds.append(
                {
                    "broker_id": broker_id,
                    "topic": name,
                    "total_threshold": total,
                    "topic_threshold": threshold,
                    "threshold_kind": kind,
                    "explicit_threshold_sum": explicit_sum(explicit),
                    "implicit_topics": len([topic for topic in names if topic not in explicit]),
                }
            )
            points = topics[(broker_id, name)]
            for instant, rate in sorted(meter_series(points, starts).items()):
                if rejects(
                    total_rates[instant], total, rate, cast(float, threshold)
                ):  # implicit is set when a topic has no explicit one
                    rejections.append(
                        {
                            "broker_id": broker_id,
                            "topic": name,
                            "ts_us": instant,
                            "total_ewma": total_rates[instant],
                            "topic_ewma": rate,
                            "total_threshold": total,
                            "topic_threshold": threshold,
                            "threshold_kind": kind,
                            "bytes_rejected": points[instant],
                        }
                    )
    return thresholds, rejections
