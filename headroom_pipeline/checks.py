"""Every check an input record must pass, as Spark column expressions: one (condition, reason) list per input.

The first condition that holds rejects the record with its reason (ingest writes it to rejected/). The rules are
those of the collection's module_utils for the same data: broker ids are Kafka's (0 to 2^31 - 1), sizes whole
numbers of bytes that are not negative, a volume's Consumed at most its Capacity, each volume once per snapshot,
limit levels finite, and time stamps ISO 8601 date-times with a zone from 1970-01-01T00:00:00Z to
9999-12-31T23:59:59Z (Kafka's clocks count from the epoch; Spark's timestamps end with year 9999).

Time stamps must also be plausible for their input (TimeWindow): within ``--since`` / ``--until`` when given, and
otherwise within ``--plausible-window`` (366 days) of the median stamp of the input's records. The median is robust:
a broker whose clock was reset to 1970 or jumped to 9999 cannot move it, whereas the earliest or latest stamp is
exactly the one such a broker sets. Without this bound one such record stretches the decision timeline, whose
rows grow with the span of time, from days to decades.
"""

import dataclasses
import datetime
from typing import Optional

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# The instants and broker ids the modules accept are the ones the pipeline accepts.
from ansible_collections.headroom.kafka.plugins.module_utils.option_checks import (
    BROKER_ID,
    EARLIEST_INSTANT,
    KAFKA_ID_MAX,
    LATEST_INSTANT,
)
from ansible_collections.headroom.kafka.plugins.module_utils.volume_limits import (
    OPEN,
    PAUSE,
    SNAPSHOT_LIMIT_NAMES,
    THROTTLE,
)
from headroom_pipeline.config import DEFAULT_PLAUSIBLE_WINDOW

UTC = datetime.timezone.utc
# ISO 8601 date-time with a zone, as module_utils.snapshots accepts it (normalized below into the form Spark casts).
TIMESTAMP_WITH_ZONE = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}([.,]\d{1,9})?)?([Zz]|[+-]\d{2}(:?\d{2})?)$"
BROKER_ID_MAX = KAFKA_ID_MAX  # Kafka's broker ids are Java ints >= 0
# percentile_approx: rank error at most 1/10000 of the records. A coarser one reads faster (10M snapshots: 1.5 to 2 s
# less), but the median it finds then depends on how the records are partitioned: local mode and a cluster would
# report different bounds for the same input.
MEDIAN_ACCURACY = 10000
LIMIT_TYPE_OF_NAME = {name: limit_type for limit_type, name in SNAPSHOT_LIMIT_NAMES.items()}
# The disk guard's policies and states, as its decision records name them.
GUARD_POLICIES = ("graded", "strimzi")
GUARD_STATES = (OPEN, PAUSE, THROTTLE)
# (condition, reason): the record is rejected with the reason, a text or a text column, when the condition holds.
Check = tuple[Column, str | Column]


def iso(moment: datetime.datetime) -> str:
    """An aware datetime as ISO 8601 in UTC with Z (microseconds only when there are some)."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def micros(moment: datetime.datetime) -> int:
    """Microseconds since the epoch of an aware datetime, exactly (no float rounding)."""
    delta = moment - datetime.datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime.datetime:
    return datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(microseconds=value)


def first_reason(*checks: Check) -> Column:
    """The reason of the first (condition, reason) that holds, else null; a reason is a text or a text column."""
    return F.coalesce(
        *[F.when(condition, reason if isinstance(reason, Column) else F.lit(reason)) for condition, reason in checks]
    )


# -- time stamps -------------------------------------------------------------------------------------------------
def parse_timestamp(text: Column) -> Column:
    """A timestamp from ISO 8601 text with a zone; null when the text is not one (no exception, even under ANSI).

    Spark casts the common forms; lower-case z, a comma before the fraction and times without seconds, which
    module_utils.snapshots also accepts, are rewritten first.
    """
    normalized = F.regexp_replace(
        F.translate(text, ",z", ".Z"), r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2})([Z+-])", "$1T$2:00$3"
    )
    return F.when(is_timestamp_text(text), normalized.try_cast("timestamp"))


def is_timestamp_text(text: Column) -> Column:
    return text.rlike(TIMESTAMP_WITH_ZONE)


def in_instant_range(at: Column) -> Column:
    """True for a timestamp from 1970-01-01T00:00:00Z through 9999-12-31T23:59:59.999999Z."""
    stamp = F.unix_micros(at)
    return (stamp >= F.lit(micros(EARLIEST_INSTANT))) & (stamp <= F.lit(micros(LATEST_INSTANT)))


def time_checks(field: str, at: Column, missing: Column, well_formed: Column) -> list[Check]:
    """A time stamp that is present, ISO 8601 with a zone, and a real instant in the range Kafka's clocks can have."""
    return [
        (missing, f"{field} is missing"),
        (~well_formed, f"{field} must be an ISO 8601 date-time with a time zone, such as 2026-11-22T04:07:09.123Z"),
        (
            at.isNull() | ~in_instant_range(at),
            f"{field} must be a valid date-time from {iso(EARLIEST_INSTANT)} to 9999-12-31T23:59:59Z",
        ),
    ]


@dataclasses.dataclass(frozen=True)
class TimeWindow:
    """Which stamps are plausible: from ``since`` through ``until`` (aware datetimes) where given; a side without
    one is ``spread`` seconds from the median stamp of the input's well-formed stamps."""

    since: Optional[datetime.datetime] = None
    until: Optional[datetime.datetime] = None
    spread: float = DEFAULT_PLAUSIBLE_WINDOW

    @property
    def needs_median(self) -> bool:
        return self.since is None or self.until is None


@dataclasses.dataclass(frozen=True)
class TimeBounds:
    """The bounds one input's stamps were held to (None: that side has only the instant range)."""

    field: str
    window: TimeWindow
    median: Optional[datetime.datetime]

    @property
    def lower(self) -> datetime.datetime | None:
        if self.window.since is not None:
            return self.window.since
        return self.median - datetime.timedelta(seconds=self.window.spread) if self.median else None

    @property
    def upper(self) -> datetime.datetime | None:
        if self.window.until is not None:
            return self.window.until
        return self.median + datetime.timedelta(seconds=self.window.spread) if self.median else None

    def checks(self, at: Column) -> list[Check]:
        stamp, days = F.unix_micros(at), _duration_text(self.window.spread)
        # A side without an explicit bound has one only when there is a median: the text is used only then.
        median = iso(self.median) if self.median else None
        result: list[Check] = []
        if self.lower is not None:
            reason = (
                f"{self.field} is before --since {iso(self.window.since)}"
                if self.window.since is not None
                else f"{self.field} is more than {days} before the median {self.field} of its input ({median}): "
                "a clock that was reset? (--since or --plausible-window accept older records)"
            )
            result.append((stamp < F.lit(micros(self.lower)), reason))
        if self.upper is not None:
            reason = (
                f"{self.field} is after --until {iso(self.window.until)}"
                if self.window.until is not None
                else f"{self.field} is more than {days} after the median {self.field} of its input ({median}): "
                "a clock that ran ahead? (--until or --plausible-window accept later records)"
            )
            result.append((stamp > F.lit(micros(self.upper)), reason))
        return result

    def describe(self) -> dict[str, str | None]:
        """For the summary: the bounds and the median they came from, ISO 8601."""
        return {
            "since": iso(self.lower) if self.lower else None,
            "until": iso(self.upper) if self.upper else None,
            "median": iso(self.median) if self.median else None,
        }


def _duration_text(seconds):
    for unit, length in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if seconds >= length and seconds % length == 0 or unit == "second":
            count = seconds / length
            return f"{count:g} {unit}{'' if count == 1 else 's'}"
    return ""


def count_and_bounds(
    raw: DataFrame, field: str, at: Column, usable: Column, window: TimeWindow
) -> tuple[int, TimeBounds]:
    """(records in ``raw``, TimeBounds) in one pass over the records: the median is that of the stamps of records
    whose stamp is ``usable`` (well-formed, in the instant range) and within an explicit --since or --until."""
    if not window.needs_median:
        return raw.count(), TimeBounds(field, window, None)
    row = raw.agg(F.count(F.lit(1)).alias("records"), _median(_median_candidate(at, usable, window))).first()
    assert row is not None, "an aggregation without grouping has one row, even over no records"
    return row["records"], _bounds_of_median(field, window, row["median"])


def observed_bounds(
    at: Column, usable: Column, reaching: Column, window: TimeWindow
) -> tuple[dict[str, Column], list[Column]]:
    """What the first use of records checked against the explicit bounds alone observes, so that no pass of its own
    finds the median first: (columns to compute on each record, aggregates over them). ``reaching``: the record's
    stamp is the first thing the bound checks judge (no earlier check rejects it). settle_bounds reads the result."""
    stamp = F.unix_micros(at)
    after_since = reaching if window.since is None else reaching & (stamp >= F.lit(micros(window.since)))
    inputs = {"bounds_earliest": F.when(reaching, stamp), "bounds_latest": F.when(after_since, stamp)}
    aggregates = [F.min("bounds_earliest").alias("earliest"), F.max("bounds_latest").alias("latest")]
    if window.needs_median:
        inputs["bounds_candidate"] = _median_candidate(at, usable, window)
        aggregates.append(_median(F.col("bounds_candidate")))
    return inputs, aggregates


def settle_bounds(field: str, window: TimeWindow, observed: dict) -> tuple[TimeBounds, bool]:
    """(the TimeBounds of the observed median, whether they reject no record that the explicit bounds alone accept):
    true unless the earliest stamp the bound checks judge lies below a lower bound from the median, or the latest
    (past --since) above an upper one. When true, the records checked against the explicit bounds alone are the
    records checked against all of them."""
    bounds = _bounds_of_median(field, window, observed.get("median"))
    earliest, latest = observed["earliest"], observed["latest"]
    lower, upper = bounds.lower, bounds.upper
    lower_holds = window.since is not None or lower is None or earliest is None or earliest >= micros(lower)
    upper_holds = window.until is not None or upper is None or latest is None or latest <= micros(upper)
    return bounds, lower_holds and upper_holds


def _median_candidate(at: Column, usable: Column, window: TimeWindow) -> Column:
    """A record's stamp in microseconds where the median is taken of it (usable, and within an explicit --since or
    --until), else null."""
    stamp, candidate = F.unix_micros(at), usable
    if window.since is not None:
        candidate = candidate & (stamp >= F.lit(micros(window.since)))
    if window.until is not None:
        candidate = candidate & (stamp <= F.lit(micros(window.until)))
    return F.when(candidate, stamp)


def _median(candidate: Column) -> Column:
    return F.percentile_approx(candidate, F.lit(0.5), F.lit(MEDIAN_ACCURACY)).alias("median")


def _bounds_of_median(field: str, window: TimeWindow, median_micros: Optional[int]) -> TimeBounds:
    return TimeBounds(field, window, from_micros(median_micros) if median_micros is not None else None)


# -- broker ids, sizes and limits --------------------------------------------------------------------------------
def not_json_object(record: Column, parsed: Column) -> Column:
    """True for text that is not one JSON object (Spark's permissive parser yields a struct of nulls for it)."""
    return parsed.isNull() | ~F.ltrim(record).startswith("{") | F.get_json_object(record, "$").isNull()


def has_null(values: Column) -> Column:
    """True when an array holds a null element."""
    return F.size(F.array_compact(values)) != F.size(values)


def not_broker_id(value: Column) -> Column:
    return (value < 0) | (value > BROKER_ID_MAX)


def not_finite(value: Column) -> Column:
    return F.isnan(value) | (F.abs(value) == F.lit(float("inf")))


def limit_checks(limit: Column, field: str) -> list[Check]:
    names = list(LIMIT_TYPE_OF_NAME)
    level = limit["level"]
    return [
        (
            limit.isNotNull() & (limit["type"].isNull() | ~limit["type"].isin(names)),
            f"{field}.type must be one of {', '.join(sorted(names))}",
        ),
        (
            limit.isNotNull() & (level.isNull() | not_finite(level) | (level < 0)),
            f"{field}.level must be a finite number >= 0",
        ),
        (
            limit.isNotNull() & (limit["type"] == "MinFreePercentage") & (level > 100),
            f"{field}.level is a percentage for MinFreePercentage and must be between 0 and 100",
        ),
    ]


def limit_type(limit: Column) -> Column:
    """The limit's type in module_utils' names (min_free_bytes, ...)."""
    mapping = F.create_map(*[item for pair in LIMIT_TYPE_OF_NAME.items() for item in (F.lit(pair[0]), F.lit(pair[1]))])
    return mapping[limit["type"]]


def volume_checks(volumes: Column) -> list[Check]:
    """Volumes as module_utils.snapshots.parse_message takes them, with sizes that are known.

    The volumes' fields as arrays (a missing volume gives a null element): array functions, which Spark compiles,
    where a per-element lambda is not needed. A size that is not a whole number from 0 to 2^63 - 1 (a fraction,
    NaN, Infinity, 1e30, text) reads as null, so "lacks" covers it.
    """
    names, capacities, consumed = volumes["VolumeName"], volumes["Capacity"], volumes["Consumed"]
    return [
        (volumes.isNull(), "Volumes is missing (or not a list of {VolumeName, Capacity, Consumed})"),
        (has_null(names) | F.array_contains(names, ""), "a volume lacks its VolumeName"),
        (
            has_null(capacities) | has_null(consumed),
            "a volume lacks Capacity or Consumed (or they are not whole numbers of bytes)",
        ),
        ((F.array_min(capacities) < 0) | (F.array_min(consumed) < 0), "a volume has a negative size"),
        (F.exists(volumes, lambda v: v["Consumed"] > v["Capacity"]), "a volume's Consumed exceeds its Capacity"),
        (F.size(F.array_distinct(names)) != F.size(volumes), "a VolumeName appears twice"),
    ]


def volumes_sound(volumes: Column) -> Column:
    """True exactly when none of volume_checks holds, in one walk over the list: a sound record, the common case,
    pays for one lambda instead of all the checks, whose reasons are then worked out only for the others."""
    each = F.forall(
        volumes,
        lambda v: (
            v["VolumeName"].isNotNull()
            & (v["VolumeName"] != "")
            & (v["Capacity"] >= 0)
            & (v["Consumed"] >= 0)
            & (v["Consumed"] <= v["Capacity"])
        ),
    )
    distinct = (F.size(volumes) <= 1) | (F.size(F.array_distinct(volumes["VolumeName"])) == F.size(volumes))
    return F.coalesce(each & distinct, F.lit(False))


# -- the inputs --------------------------------------------------------------------------------------------------
def snapshot_checks(not_object: Column, parsed: Column, key: Column, times: list[Check]) -> list[Check]:
    """The checks of a usage snapshot in the order they apply; ``times``: the SnapshotAt checks (time_checks and
    the plausible window). ``key`` is the Kafka record key (null for files)."""
    broker, key_broker = parsed["BrokerId"], key.try_cast("long")
    return [
        (not_object, "not a JSON object in the usage snapshot schema"),
        *times,
        (broker.isNull() & key.isNull(), "BrokerId is missing (or not a whole number)"),
        (not_broker_id(F.coalesce(broker, key_broker)), f"BrokerId must be {BROKER_ID.describe()}"),
        (
            key.isNotNull() & broker.isNotNull() & (key_broker.isNull() | (key_broker != broker)),
            "BrokerId does not match the record key",
        ),
        (~volumes_sound(parsed["Volumes"]), first_reason(*volume_checks(parsed["Volumes"]))),
        *limit_checks(parsed["SoftLimit"], "SoftLimit"),
        *limit_checks(parsed["HardLimit"], "HardLimit"),
    ]


def traffic_checks(not_object: Column, parsed: Column, times: list[Check]) -> list[Check]:
    """The checks of a client traffic row; ``times``: the ts checks."""
    return [
        (not_object, "not a JSON object with ts, broker_id, user, client_id, topic, bytes_in and bytes_out"),
        *times,
        (parsed["broker_id"].isNull(), "broker_id is missing (or not a whole number)"),
        (not_broker_id(parsed["broker_id"]), f"broker_id must be {BROKER_ID.describe()}"),
        (
            parsed["bytes_in"].isNull() | parsed["bytes_out"].isNull(),
            "bytes_in and bytes_out are required (whole numbers of bytes)",
        ),
        ((parsed["bytes_in"] < 0) | (parsed["bytes_out"] < 0), "bytes_in and bytes_out must be >= 0"),
    ]


def guard_decision_checks(not_object: Column, parsed: Column, quota_changes: Column, times: list[Check]) -> list[Check]:
    """The checks of a disk guard decision record; ``times``: the DecidedAt checks; ``quota_changes``: the record's
    QuotaChanges as JSON text (null when absent)."""
    factor = parsed["ThrottleFactor"]
    return [
        (not_object, "not a JSON object in the guard decision schema"),
        *times,
        (
            parsed["Policy"].isNull() | ~parsed["Policy"].isin(*GUARD_POLICIES),
            f"Policy must be one of {', '.join(GUARD_POLICIES)}",
        ),
        (factor.isNull(), "ThrottleFactor is missing (or not a number)"),
        (not_finite(factor) | (factor < 0) | (factor > 1), "ThrottleFactor must be a number from 0.0 to 1.0"),
        (
            parsed["State"].isNull() | ~parsed["State"].isin(*GUARD_STATES),
            f"State must be one of {', '.join(GUARD_STATES)}",
        ),
        (
            quota_changes.isNotNull() & F.json_array_length(quota_changes).isNull(),
            "QuotaChanges must be a list of {entity, before, after}",
        ),
    ]
