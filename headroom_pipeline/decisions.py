"""The decision timeline in Spark: what each throttling policy decides at every check instant of every cluster.

The rules are those of the reference implementation the tests hold this stage to, tests/decision_timeline_reference.py
(its module documentation states them in full; both pass the same vectors, tests/vectors/decision_timeline.json, and
the per-volume rules also pass tests/vectors/volume_limits.json). In short, with I the check interval, V the throttle
factor validity and F the freshness (config.freshness), all in whole microseconds:

* duplicates (cluster, broker_id, at): the message with the least total usable bytes is kept (ties: volume list,
  then limits, smallest first);
* instants: per cluster every epoch-aligned multiple of I from ceil(first at / I) * I to ceil(last at / I) * I;
* strimzi (when config.strimzi_enabled): an instant t observes iff some message has t - I < at <= t; then the
  brokers with such a message or with t < at + V (their latest message) give the volumes for the plugin's binary
  rule; a failed observation keeps the last factor while t - valid_from <= V and applies the fallback after;
* graded (always): the volumes of brokers whose latest message is fresh (t - at <= F), each judged with its own
  message's soft and hard limits (missing or unusable limits: skipped); factor = the smallest position
  (volume_limits.graded_position) in steps of config.throttle_factor_step, held from the cluster's previous instant
  (factor_steps.held_factor; one window over the cluster's instants, _held_factor); when some known broker is stale
  and missing_data_action is pause, factor 0.0 with fallback_applied, held as any factor.

Plan, linear in the data: the volume rows (schemas.volume_rows: the job's volumes/) are shuffled once, by cluster,
and sorted once, by broker, time, message and volume; everything after finds its rows in place (an aggregation per
broker and time, a window over a broker's times, an aggregation per (cluster, instant) and a window over a cluster's
instants all accept rows partitioned by cluster), so the plan has one shuffle and no second pass over the rows:

1. an aggregation per (cluster, broker, time) puts the rows of each message back together (copies of one message are
   one), keeps one message per time (duplicates: the rows of that time alone decide), and one window over each broker's
   times gives each its next (first instant, next message);
2. each kept message's volume rows are exploded over the instants from its first through the last at which it still
   counts for some policy (its broker's next message, capped by V for strimzi and F for graded); each row
   carries whether it is the message's arrival and, per policy, whether it counts, and is judged by every policy's
   per-volume rule (column expressions);
3. those rows are grouped by (cluster, instant): numeric figures and the violation lists in one aggregation;
4. one window over the instants of a cluster finds its last message's instant, counts the known brokers and runs the
   plugin's clock (last observed instant, last factor); the instants past the last message's are dropped (a broker's
   last message counted up to V or F past it); each row is followed by the instants no message counts at up to the
   next row (a silent cluster), which carry the clock and nothing else; each instant becomes one row per policy.

Its size is bounded before any of that is built: the rows judged grow with check instants x volumes, and each
cluster's are judged in one task, so a span of decades (one stamp from a reset clock) or a tiny interval would keep a
task busy for hours; decision_timeline refuses a cluster's timeline above the bound with TimelineTooLarge, naming the
cluster, its span and the interval.

Output columns: cluster, at (timestamp), policy, throttle_factor (double), state, fallback_applied, observed,
violations (array<struct<broker_id, log_dir>>, in decision order), volumes_considered, brokers_considered.
"""

import datetime
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from headroom_pipeline import schemas
from headroom_pipeline.config import PipelineConfig

if TYPE_CHECKING:  # the forecast's spans size the timeline; the module itself is not needed at run time
    from headroom_pipeline.forecast import VolumeSpan


from ansible_collections.headroom.kafka.plugins.module_utils import factor_steps, volume_limits

VIOLATION = T.StructType([T.StructField("broker_id", T.LongType()), T.StructField("log_dir", T.StringType())])
VIOLATIONS = T.ArrayType(VIOLATION, False)
TIMELINE_COLUMNS = [
    "cluster",
    "at",
    "policy",
    "throttle_factor",
    "state",
    "fallback_applied",
    "observed",
    "violations",
    "volumes_considered",
    "brokers_considered",
]
LIMIT_COLUMNS = ["soft_type", "soft_level", "hard_type", "hard_level"]
MICROS = 1_000_000


def duration_micros(seconds: float) -> int:
    """A duration in whole microseconds, as every implementation of the rules rounds it."""
    return int(round(seconds * MICROS))


class TimelineTooLarge(ValueError):
    """The timeline would judge more rows than allowed; the message says which cluster, span and interval."""


# -- per-volume rules (staged projections over volume rows, so that no expression is built twice) -----------------
def _known_sizes() -> Column:
    """A volume that can be judged: total and usable bytes both >= 0 (null or -1: unknown) and usable not above total
    (sizes that contradict each other); the rest is skipped, as volume_limits.volume_problem skips it."""
    total, usable = F.col("total_bytes"), F.col("usable_bytes")
    return F.col("log_dir").isNotNull() & F.coalesce((total >= 0) & (usable >= 0) & (usable <= total), F.lit(False))


def _available_ratio() -> Column:
    """usable / total, 0 for a volume with no capacity (the plugin treats it as full)."""
    total, usable = F.col("total_bytes").cast("double"), F.col("usable_bytes").cast("double")
    return F.when(F.col("total_bytes") == 0, F.lit(0.0)).otherwise(F.try_divide(usable, total))


def _limit_column(value: int | float | Column | None) -> Column:
    return value if isinstance(value, Column) else F.lit(value)


def _sort_key(rank: Column, usable: Column) -> Column:
    return F.struct(
        rank.cast("double").alias("rank"), usable.cast("long").alias("usable"), F.col("broker_id"), F.col("log_dir")
    )


def _judge_strimzi(
    rows: DataFrame,
    min_available_bytes: int | Column | None,
    min_available_ratio: float | Column | None,
    prefix: str = "",
) -> DataFrame:
    """The plugin's rule per volume: the bytes limit where given, else the ratio limit; both inclusive."""

    def own(name):
        return F.col(prefix + name)

    bytes_limit, ratio_limit = (
        _limit_column(min_available_bytes).cast("long"),
        _limit_column(min_available_ratio).cast("double"),
    )
    staged = rows.withColumns(
        {
            prefix + "considered": _known_sizes(),
            prefix + "bytes_limit": bytes_limit,
            prefix + "ratio_limit": ratio_limit,
            prefix + "ratio": _available_ratio(),
        }
    )
    by_bytes = own("bytes_limit").isNotNull()
    violates = F.when(by_bytes, F.col("usable_bytes") <= own("bytes_limit")).otherwise(
        own("ratio") <= own("ratio_limit")
    )
    # volume_limits.strimzi_decision's order: usable bytes (bytes limit) or available ratio (ratio limit),
    # then the volume.
    sort_key = _sort_key(F.when(~by_bytes, own("ratio")), F.when(by_bytes, F.col("usable_bytes")))
    judged = staged.withColumns(
        {
            prefix + "violates": own("considered") & violates,
            prefix + "volume_factor": F.when(violates, F.lit(0.0)).otherwise(F.lit(1.0)),
            prefix + "sort_key": sort_key,
        }
    )
    return judged.drop(prefix + "bytes_limit", prefix + "ratio_limit", prefix + "ratio")


def _level_is_usable(level: Column, limit_type: Column) -> Column:
    """volume_limits.validate_limit for a level column: a finite number >= 0, a percentage at most 100."""
    finite = level.isNotNull() & ~F.isnan(level) & (level != F.lit(float("inf")))
    return finite & (level >= 0) & ((limit_type != "min_free_percentage") | (level <= 100))


def _limits_are_usable() -> Column:
    """volume_limits.validate_graded_limits as a column: known and equal types, usable levels, soft trips first."""
    soft_type, hard_type, soft, hard = F.col("soft_type"), F.col("hard_type"), F.col("soft_level"), F.col("hard_level")
    ordered = F.when(soft_type.isin(*volume_limits.FREE_TYPES), soft > hard).otherwise(soft < hard)
    usable = (
        soft_type.isin(*volume_limits.LIMIT_TYPES)
        & (hard_type == soft_type)
        & _level_is_usable(soft, soft_type)
        & _level_is_usable(hard, hard_type)
        & ordered
    )
    return F.coalesce(usable, F.lit(False))


def _measure() -> Column:
    """The figure the limit type compares: free bytes, free percent (0 for zero capacity) or consumed bytes."""
    limit_type = F.col("soft_type")
    usable, total = F.col("usable_bytes").cast("double"), F.col("total_bytes").cast("double")
    return (
        F.when(limit_type == "min_free_bytes", usable)
        .when(limit_type == "min_free_percentage", _available_ratio() * 100.0)
        .otherwise(total - usable)
    )


def _judge_graded(rows: DataFrame, prefix: str = "") -> DataFrame:
    """volume_limits.graded_volume_factor and breaches per volume, with the limits of the volume's own message.

    Only volumes with usable limits are considered, and their soft and hard limits have the same type, so one
    measure serves both limits.
    """

    def own(name):
        return F.col(prefix + name)

    staged = rows.withColumns(
        {
            prefix + "considered": _known_sizes() & _limits_are_usable(),
            prefix + "free": F.col("soft_type").isin(*volume_limits.FREE_TYPES),
            prefix + "measure": _measure(),
        }
    )
    value, soft, hard, free = own("measure"), F.col("soft_level"), F.col("hard_level"), own("free")

    def breaches(level):
        return F.when(free, value <= level).otherwise(value >= level)

    between = F.when(free, F.try_divide(value - hard, soft - hard)).otherwise(F.try_divide(hard - value, hard - soft))
    breached = staged.withColumns(
        {prefix + "past_soft": breaches(soft), prefix + "past_hard": breaches(hard), prefix + "between": between}
    )
    factor = (
        F.when(own("past_hard"), F.lit(0.0))
        .when(~own("past_soft"), F.lit(1.0))
        .otherwise(F.least(F.greatest(own("between"), F.lit(0.0)), F.lit(1.0)))
    )
    judged = breached.withColumns(
        {
            prefix + "violates": own("considered") & own("past_soft"),
            prefix + "volume_factor": factor,
            # volume_limits.graded_position: the factor before it is clamped, which the factor's steps hold on
            prefix + "position": F.when(own("past_hard"), F.least(own("between"), F.lit(0.0))).otherwise(
                own("between")
            ),
        }
    )
    # volume_limits.graded_decision's order: volume factor, usable bytes, then the volume.
    judged = judged.withColumn(prefix + "sort_key", _sort_key(own("volume_factor"), F.col("usable_bytes")))
    return judged.drop(*[prefix + name for name in ("free", "measure", "past_soft", "past_hard", "between")])


def _judge(
    rows: DataFrame,
    policy: str,
    min_available_bytes: int | Column | None = None,
    min_available_ratio: float | Column | None = None,
    prefix: str = "",
) -> DataFrame:
    """``rows`` with {prefix}considered, violates, volume_factor and sort_key, a struct (rank, usable, broker_id,
    log_dir) whose order is the order volume_limits gives violations and least headroom."""
    if policy == "strimzi":
        return _judge_strimzi(rows, min_available_bytes, min_available_ratio, prefix)
    if policy == "graded":
        return _judge_graded(rows, prefix)
    raise ValueError(f"policy must be one of strimzi, graded (got {policy!r})")


# -- aggregates over judged rows ------------------------------------------------------------------------------------
def _pairs(sort_keys: Column) -> Column:
    return F.transform(
        sort_keys, lambda item: F.struct(item["broker_id"].alias("broker_id"), item["log_dir"].alias("log_dir"))
    ).cast(VIOLATIONS)


def _decision_aggregates():
    """(throttle factor, violations, volumes considered) over the judged rows of a group.

    The factor is the smallest volume factor, 1.0 when nothing is judged (for strimzi: 0.0 iff a volume violates).
    """
    return (
        F.coalesce(F.min(F.when(F.col("considered"), F.col("volume_factor"))), F.lit(1.0)),
        _pairs(F.array_sort(F.collect_list(F.when(F.col("violates"), F.col("sort_key"))))),
        F.count(F.when(F.col("considered"), True)).cast("int"),
    )


def decide_instants(
    volume_rows: DataFrame,
    policy: str,
    min_available_bytes: int | Column | None = None,
    min_available_ratio: float | Column | None = None,
    keys: Sequence[str] = ("cluster", "at"),
) -> DataFrame:
    """The volume rule of ``policy`` for each group of volume rows (one group per cluster and instant).

    volume_rows: the ``keys`` columns plus broker_id, log_dir, total_bytes, usable_bytes and, for graded, soft_type,
    soft_level, hard_type, hard_level (module_utils names). A row with a null log_dir stands for a broker that
    reported no volumes: it counts as a broker, not a volume. Sizes that are null or negative are unknown.
    For strimzi the limits are numbers, or columns of the rows (one limit per group); the bytes limit wins where set.

    Returns the keys plus throttle_factor (the smallest volume factor, 1.0 when nothing is judged), violations
    (ordered as volume_limits orders them), least_headroom (struct broker_id, log_dir of the first judged volume in
    that order, or null), volumes_considered and brokers_considered. Missing data (apply_missing_data) and the
    plugin's validity clock are the callers' business.
    """
    keys = list(keys)
    if (
        policy == "strimzi"
        and not isinstance(min_available_bytes, Column)
        and not isinstance(min_available_ratio, Column)
    ):
        volume_limits.validate_strimzi_limits(min_available_bytes, min_available_ratio)
    judged = _judge(volume_rows, policy, min_available_bytes, min_available_ratio)
    factor, violations, volumes_considered = _decision_aggregates()
    decided = judged.groupBy(*keys).agg(
        factor.alias("throttle_factor"),
        violations.alias("violations"),
        F.min(F.when(F.col("considered"), F.col("sort_key"))).alias("least"),
        volumes_considered.alias("volumes_considered"),
        F.count_distinct("broker_id").cast("int").alias("brokers_considered"),
    )
    least = F.when(
        F.col("least").isNotNull(),
        F.struct(F.col("least.broker_id").alias("broker_id"), F.col("least.log_dir").alias("log_dir")),
    )
    return decided.select(
        *keys,
        "throttle_factor",
        "violations",
        least.alias("least_headroom"),
        "volumes_considered",
        "brokers_considered",
    )


def state_of(factor: Column) -> Column:
    """volume_limits.state_of as a column."""
    return (
        F.when(factor >= 1.0, F.lit(volume_limits.OPEN))
        .when(factor <= 0.0, F.lit(volume_limits.PAUSE))
        .otherwise(F.lit(volume_limits.THROTTLE))
    )


def _missing_data_applied(complete: Column, missing_data_action: str) -> Column:
    if missing_data_action not in volume_limits.MISSING_DATA_ACTIONS:
        raise ValueError(
            f"missing_data_action must be one of {', '.join(volume_limits.MISSING_DATA_ACTIONS)} "
            f"(got {missing_data_action!r})"
        )
    return ~complete if missing_data_action == "pause" else F.lit(False)


def apply_missing_data(decided: DataFrame, complete: Column, missing_data_action: str) -> DataFrame:
    """The graded missing-data action: with pause, incomplete data gives factor 0.0 and fallback_applied."""
    paused = _missing_data_applied(complete, missing_data_action)
    return decided.withColumn("fallback_applied", paused).withColumn(
        "throttle_factor", F.when(F.col("fallback_applied"), F.lit(0.0)).otherwise(F.col("throttle_factor"))
    )


# -- messages -------------------------------------------------------------------------------------------------------
def _on_or_after(micros: Column, interval: int) -> Column:
    """The first instant (multiple of the interval) at or after ``micros``."""
    return micros + F.pmod(-micros, F.lit(interval))


def check_instant(micros: Column, interval: int) -> Column:
    """The check instant (microseconds) a moment of ``micros`` falls in: the first of the timeline's instants at or
    after it, the first whose decision takes what was observed at that moment into account."""
    return _on_or_after(micros, interval)


def _on_or_before(micros: Column, interval: int) -> Column:
    return micros - F.pmod(micros, F.lit(interval))


# The fields of a volume row that a message's preference among duplicates reads (see _kept_message).
_GROUP_FIELDS = ("message", "log_dir", "total_bytes", "usable_bytes", *LIMIT_COLUMNS)


def _kept_message(group: Column) -> Column:
    """The message kept among those of one broker and time: the reference's duplicate_preference as a column over
    ``group``, the rows of every message of that time (structs of _GROUP_FIELDS). The smallest preference wins:
    least total usable bytes of its known volumes, then its volumes sorted, then its limits; messages the rules
    cannot tell apart decide nothing differently, and the smaller id is kept among them, so that the choice is the
    data's, never the plan's. A row without log_dir stands for a message without volumes: it lists none."""

    def of(message):
        rows = F.filter(group, lambda row: row["message"] == message)
        volumes = F.filter(rows, lambda row: row["log_dir"].isNotNull())

        def known_usable(total, row):
            size, usable = row["total_bytes"], row["usable_bytes"]
            known = F.coalesce((size >= 0) & (usable >= 0) & (usable <= size), F.lit(False))
            return total + F.when(known, usable).otherwise(F.lit(0).cast("long"))

        def listed(row):
            size, usable = row["total_bytes"], row["usable_bytes"]
            return F.struct(
                row["log_dir"],
                F.coalesce(F.when(size >= 0, size), F.lit(-1).cast("long")),
                F.coalesce(F.when(usable >= 0, usable), F.lit(-1).cast("long")),
            )

        def limit(prefix):
            level = rows[0][f"{prefix}_level"]
            finite = level.isNotNull() & ~F.isnan(level) & (F.abs(level) != F.lit(float("inf")))
            return F.coalesce(rows[0][f"{prefix}_type"], F.lit("")), F.when(finite, level).otherwise(F.lit(-1.0))

        return F.struct(
            F.aggregate(volumes, F.lit(0).cast("long"), known_usable),
            F.array_sort(F.transform(volumes, listed)),
            *limit("soft"),
            *limit("hard"),
            message.alias("message"),
        )

    return F.array_min(F.transform(F.array_distinct(group["message"]), of))["message"]


def _timed(rows: DataFrame, interval: int) -> DataFrame:
    """One message per (cluster, broker_id, at) (see _kept_message), as the volume rows it had, each with at_micros,
    its first instant, its broker's next message (next_micros), whether that is the broker's first message
    (broker_is_new) and broker_marker (true on one row per message: it counts the message, and its broker, once).

    The rows, shuffled by cluster, are sorted once by broker, time, message and volume; an aggregation per (cluster,
    broker, time) that finds them in that order (a sort aggregation, under session.timeline_settings) puts the rows of
    each time back together, and one window over each broker's times, in the same order, finds the next. Two copies
    of one message (read twice) are one message; of different messages at one time, the kept one is chosen from the
    rows of that time only (a lambda over a short list, which most times do not run).
    """
    at = F.col("at_micros")
    ordered = rows.sortWithinPartitions("cluster", "broker_id", "at_micros", "message", "log_dir")
    per_time = ordered.groupBy("cluster", "broker_id", "at_micros").agg(
        F.collect_list(F.struct(*[F.col(name) for name in _GROUP_FIELDS])).alias("group"),
        (F.min("message") != F.max("message")).alias("shared"),
    )
    group = F.col("group")
    unique = per_time.select(
        "cluster",
        "broker_id",
        "at_micros",
        "shared",
        F.when(F.size(group) > 1, F.array_distinct(group)).otherwise(group).alias("unique"),
    )
    # the kept message is chosen once per shared time, then its rows are taken from the list
    chosen = unique.withColumn("kept_message", F.when(F.col("shared"), _kept_message(F.col("unique"))))
    kept = F.when(F.col("shared"), F.filter("unique", lambda row: row["message"] == F.col("kept_message"))).otherwise(
        F.col("unique")
    )
    by_broker = Window.partitionBy("cluster", "broker_id").orderBy("at_micros")
    timed = chosen.select(
        "cluster",
        "broker_id",
        "at_micros",
        kept.alias("kept"),
        F.lead("at_micros").over(by_broker).alias("next_micros"),
        (at == F.first("at_micros").over(by_broker)).cast("int").alias("broker_is_new"),
    )
    volumes = timed.select(
        "cluster",
        "broker_id",
        "at_micros",
        "next_micros",
        "broker_is_new",
        F.posexplode("kept").alias("position", "row"),
    )
    return volumes.select(
        "cluster",
        "broker_id",
        "at_micros",
        *[F.col("row")[name].alias(name) for name in _GROUP_FIELDS if name != "message"],
        _on_or_after(at, interval).alias("first_instant"),
        "next_micros",
        "broker_is_new",
        (F.col("position") == 0).alias("broker_marker"),
    )


def _served_volume_rows(timed: DataFrame, last_served: dict[str, Column], interval: int) -> DataFrame:
    """Each volume row of each message at each instant from its first instant through the last at which it counts.

    ``last_served``: per policy, the last instant (inclusive) at which the message counts as its broker's latest.
    Each row carries t, arrival (t is the message's first instant) and {policy}_served. One row serves every
    policy: the policies differ only in how long a message counts. A broker's last message counts until its validity
    or freshness ends, past its cluster's last instant too: those instants are dropped after the aggregation.
    """
    lasts = {policy: _on_or_before(last, interval) for policy, last in last_served.items()}
    with_last = timed.select(
        "cluster",
        "broker_id",
        *LIMIT_COLUMNS,
        "log_dir",
        "total_bytes",
        "usable_bytes",
        "first_instant",
        "broker_is_new",
        "broker_marker",
        *[last.alias(f"{policy}_last") for policy, last in lasts.items()],
    )
    until = F.greatest(F.col("first_instant"), *[F.col(f"{policy}_last") for policy in lasts])
    served = with_last.select("*", F.explode(F.sequence("first_instant", until, F.lit(interval))).alias("t"))
    flags = {
        "arrival": F.col("t") == F.col("first_instant"),
        **{f"{policy}_served": F.col("t") <= F.col(f"{policy}_last") for policy in lasts},
    }
    return served.select(
        "cluster",
        "t",
        "broker_id",
        *LIMIT_COLUMNS,
        "broker_is_new",
        *[flag.alias(name) for name, flag in flags.items()],
        "broker_marker",
        "log_dir",
        "total_bytes",
        "usable_bytes",
    )


# -- the timeline ---------------------------------------------------------------------------------------------------
def _served_ranges(config: PipelineConfig, policies: Sequence[str]) -> dict[str, Column]:
    """Per policy, the last instant (inclusive, before rounding down to an instant) at which a message counts as
    its broker's latest."""
    at, first, following = F.col("at_micros"), F.col("first_instant"), F.col("next_micros") - 1
    validity, freshness = duration_micros(config.throttle_factor_validity), duration_micros(config.freshness)
    ranges = {
        "graded": F.least(following, at + freshness),  # fresh while t - at <= F
        "strimzi": F.least(
            following, F.greatest(at + validity - 1, first)
        ),  # new at its first instant, then while t < at + V
    }
    return {policy: ranges[policy] for policy in policies}


def cluster_spans(volume_rows: DataFrame) -> DataFrame:
    """(cluster, first_at, last_at in microseconds, volumes) per cluster: the query timeline_size runs."""
    at = F.unix_micros("at")
    per_volume = volume_rows.groupBy("cluster", "broker_id", "log_dir").agg(
        F.min(at).alias("first_at"), F.max(at).alias("last_at")
    )
    return per_volume.groupBy("cluster").agg(
        F.min("first_at").alias("first_at"), F.max("last_at").alias("last_at"), F.count(F.lit(1)).alias("volumes")
    )


def timeline_size(volume_rows: DataFrame, interval: int) -> dict[str, Any]:
    """The rows the timeline judges, estimated before it is built: per cluster, check instants (span / interval)
    x the volumes its brokers reported (a broker that reported none counts one, its row without log_dir); returns the
    number of clusters and the figures of the cluster with the most rows (None without clusters), which
    refuse_if_too_large holds to the bound. ``volume_rows``: cluster, broker_id, log_dir and at (the VOLUMES frame,
    or schemas.volume_rows).

    Two aggregations in one query (partial aggregates shuffled), one row per cluster to the driver. Every volume
    reported at every interval makes the estimate exact; silences make it an upper bound.
    """
    return _sized(
        [
            (row["cluster"], row["first_at"], row["last_at"], row["volumes"])
            for row in cluster_spans(volume_rows).collect()
        ],
        interval,
    )


def timeline_size_of_volume_spans(volume_spans: Iterable["VolumeSpan"], interval: int) -> dict[str, Any]:
    """timeline_size from every volume's span (forecast.volume_spans, which the forecast collects anyway: the job
    sizes the timeline from those instead of a query of its own)."""
    clusters: dict[str, tuple[int, int, int]] = {}
    for span in volume_spans:
        earliest, last = span.earliest_us, span.last_us
        first_at, last_at, volumes = clusters.get(span.cluster, (earliest, last, 0))
        clusters[span.cluster] = (min(first_at, earliest), max(last_at, last), volumes + 1)
    return _sized([(cluster, *figures) for cluster, figures in clusters.items()], interval)


def _sized(spans: Iterable[tuple[str, int, int, int]], interval: int) -> dict[str, Any]:
    """timeline_size's result from (cluster, first_at, last_at, volumes) per cluster (microseconds)."""
    sized: list[dict[str, Any]] = []
    for cluster, first_at, last_at, volumes in spans:
        first, last = first_at + (-first_at) % interval, last_at + (-last_at) % interval
        instants = (last - first) / float(interval) + 1
        sized.append(
            {
                "cluster": cluster,
                "first": first,
                "last": last,
                "volumes": float(volumes),
                "instants": instants,
                "rows": instants * volumes,
            }
        )
    largest = max(sized, key=lambda item: (item["rows"], item["cluster"]), default=None)
    return {"clusters": len(sized), "largest": largest}


def refuse_if_too_large(size: dict[str, Any], interval: int, max_rows: int | None) -> None:
    """TimelineTooLarge when the largest cluster of ``size`` (timeline_size) would judge more than ``max_rows`` rows
    (None: no bound). The bound is per cluster: a cluster's timeline is judged in one task, while a fleet of many
    clusters spreads over as many tasks as there are."""
    largest = size["largest"]
    if max_rows is None or largest is None or largest["rows"] <= max_rows:
        return
    span = f"{_stamp(largest['first'])} to {_stamp(largest['last'])}"
    raise TimelineTooLarge(
        f"cluster {largest['cluster']!r} would judge {largest['rows']:,.0f} rows (check instants x volumes), "
        f"more than --max-timeline-rows {max_rows:,}: it spans {span}, {largest['instants']:,.0f} check instants "
        f"every {interval / MICROS:g} s for {largest['volumes']:,.0f} volume(s). Narrow the snapshots' time with "
        "--since/--until, raise --check-interval, or raise --max-timeline-rows if the span is right"
    )


def _stamp(micros: int) -> str:
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=int(micros))
    return moment.isoformat().replace("+00:00", "Z")


def _judged_rows(timed: DataFrame, config: PipelineConfig, interval: int, policies: Sequence[str]) -> DataFrame:
    """Volume rows judged by every policy (columns prefixed with the policy)."""
    judged = _served_volume_rows(timed, _served_ranges(config, policies), interval)
    for policy in policies:
        judged = _judge(judged, policy, config.min_available_bytes, config.min_available_ratio, prefix=f"{policy}_")
    return judged


def _per_instant(judged: DataFrame, policies: Sequence[str]) -> DataFrame:
    """Per (cluster, t) with a row: arrivals, new brokers and, per policy, factor, violations, volumes and brokers
    considered.

    One aggregation where the rows already are (partitioned by cluster): the violation lists make it an aggregation
    of objects, which costs less than computing the lists in a second aggregation, since that one would read, check,
    shuffle and sort the messages a second time (Spark does not share that work between two branches of a plan).
    Each row is first narrowed to the figures the aggregation takes, a violation's sort key only where the volume
    violates (null elsewhere), so that the rows Spark sorts by instant are small.
    """
    arrived = F.col("arrival") & F.col("broker_marker")
    figures = [arrived.alias("arrived"), F.when(arrived, F.col("broker_is_new")).alias("new_broker")]
    for policy in policies:
        served = F.col(f"{policy}_served")
        considered = served & F.col(f"{policy}_considered")
        figures += [
            considered.alias(f"{policy}_judged"),
            F.when(considered, F.col(f"{policy}_volume_factor")).alias(f"{policy}_factor"),
            (served & F.col("broker_marker")).alias(f"{policy}_broker"),
            F.when(served & F.col(f"{policy}_violates"), F.col(f"{policy}_sort_key")).alias(f"{policy}_violation"),
        ]
        if policy == "graded":
            figures.append(F.when(considered, F.col("graded_position")).alias("graded_position"))
    narrow = judged.select("cluster", "t", *figures)
    aggregates = [
        F.count(F.when(F.col("arrived"), True)).alias("arrived"),
        F.coalesce(F.sum("new_broker"), F.lit(0)).alias("new_brokers"),
    ]
    for policy in policies:
        aggregates += [
            F.coalesce(F.min(f"{policy}_factor"), F.lit(1.0)).alias(f"{policy}_factor"),
            F.count(F.when(F.col(f"{policy}_judged"), True)).cast("int").alias(f"{policy}_volumes"),
            F.count(F.when(F.col(f"{policy}_broker"), True)).cast("int").alias(f"{policy}_brokers"),
            _pairs(F.array_sort(F.collect_list(f"{policy}_violation"))).alias(f"{policy}_violations"),
        ]
        if policy == "graded":
            aggregates.append(F.min("graded_position").alias("graded_position"))
    return narrow.groupBy("cluster", "t").agg(*aggregates)


def _quiet_instants(clocked: DataFrame, interval: int, policies: Sequence[str]) -> DataFrame:
    """``clocked`` with the instants no message counts at (a silent cluster) between its rows: each row is followed
    by the quiet instants up to the cluster's next row, with the clock it leaves (known brokers, last observation
    and factor) and nothing else: no arrival, no fresh broker, nothing judged."""
    following = F.coalesce(F.col("next_t") - F.lit(interval), F.col("t"))
    expanded = clocked.withColumn("row_t", F.col("t")).withColumn(
        "t", F.explode(F.sequence("row_t", following, F.lit(interval)))
    )
    quiet = F.col("t") != F.col("row_t")
    nothing = F.array().cast(VIOLATIONS)
    overrides = {"arrived": F.when(quiet, F.lit(0).cast("long")).otherwise(F.col("arrived"))}
    for policy in policies:
        overrides.update(
            {
                f"{policy}_factor": F.when(quiet, F.lit(1.0)).otherwise(F.col(f"{policy}_factor")),
                f"{policy}_volumes": F.when(quiet, F.lit(0)).otherwise(F.col(f"{policy}_volumes")),
                f"{policy}_brokers": F.when(quiet, F.lit(0)).otherwise(F.col(f"{policy}_brokers")),
                f"{policy}_violations": F.when(quiet, nothing).otherwise(F.col(f"{policy}_violations")),
            }
        )
        if policy == "graded":
            overrides["graded_position"] = F.when(quiet, F.lit(None)).otherwise(F.col("graded_position"))
    return expanded.withColumns(overrides)


def _row(
    policy: str,
    factor: Column,
    fallback_applied: Column,
    observed: Column,
    violations: Column,
    volumes: Column,
    brokers: Column,
) -> Column:
    return F.struct(
        F.lit(policy).alias("policy"),
        factor.cast("double").alias("throttle_factor"),
        fallback_applied.alias("fallback_applied"),
        observed.alias("observed"),
        violations.alias("violations"),
        volumes.cast("int").alias("volumes_considered"),
        brokers.cast("int").alias("brokers_considered"),
    )


def _graded_paused(config: PipelineConfig) -> Column:
    return _missing_data_applied(F.col("graded_brokers") == F.col("known_brokers"), config.missing_data_action)


def _graded_row(config: PipelineConfig) -> Column:
    fresh = F.col("graded_brokers")
    return _row(
        "graded",
        F.col("graded_held"),
        _graded_paused(config),
        fresh > 0,
        F.col("graded_violations"),
        F.col("graded_volumes"),
        fresh,
    )


def _step_at_or_below(value: Column, count: int) -> Column:
    """factor_steps' step at or below ``value``, from 0 to 1."""
    stepped = F.floor(value * count + F.lit(factor_steps.ROUNDING)) / count
    return F.least(F.greatest(stepped, F.lit(0.0)), F.lit(1.0))


def _held_factor(filled: DataFrame, config: PipelineConfig) -> DataFrame:
    """``filled`` with graded_held: factor_steps.held_factor over each cluster's instants, the missing-data pause (0.0)
    held like any factor.

    The factor at t is min(falling_t, max(rising_t, factor_t-1)), a sequence a window cannot carry as such; but it is at
    most a step L exactly when some instant k <= t falls to L or below and no instant after k rises above L. So, over
    each cluster's instants so far, the last instant that fell to L or below and the last that rose above L give, step
    by step, the smallest step that holds: one window over the cluster's instants (ordered, as the clock's), two
    running maxima per step.
    """
    step = config.throttle_factor_step
    position, paused = F.col("graded_position"), _graded_paused(config)

    def decided(value: Column) -> Column:
        return F.when(paused, F.lit(0.0)).when(position.isNull(), F.lit(1.0)).otherwise(value)

    if step == 0:
        return filled.withColumn("graded_held", decided(F.least(F.greatest(position, F.lit(0.0)), F.lit(1.0))))
    count = factor_steps.steps_of(step)

    def seeded(value: Column) -> Column:
        """At a seed's instant the factor it held (falling and rising to it holds it exactly); before, nothing."""
        seed_t = F.col("seed_t")
        return F.when(F.col("t") < seed_t, F.lit(None)).when(F.col("t") == seed_t, F.col("seed_held")).otherwise(value)

    staged = filled.withColumns(
        {
            "graded_falling": seeded(decided(_step_at_or_below(position, count))),
            "graded_rising": seeded(decided(_step_at_or_below(position - F.lit(step / 2.0), count))),
        }
    )
    so_far = Window.partitionBy("cluster").orderBy("t").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    held = F.lit(1.0)  # every instant falls to 1.0 or below
    for level in reversed([index / count for index in range(count)]):
        fell = F.max(F.when(F.col("graded_falling") <= level, F.col("t"))).over(so_far)
        rose = F.max(F.when(F.col("graded_rising") > level, F.col("t"))).over(so_far)
        held = F.when(fell.isNotNull() & (rose.isNull() | (fell > rose)), F.lit(level)).otherwise(held)
    return staged.withColumn("graded_held", held).drop("graded_falling", "graded_rising")


def _strimzi_row(config: PipelineConfig) -> Column:
    """The plugin's clock: a success recomputes; a failure keeps the last factor until validity ends, then falls
    back."""
    observed = F.col("arrived") > 0
    fallback_applied = ~observed & (F.col("t") - F.col("valid_from") > duration_micros(config.throttle_factor_validity))
    factor = (
        F.when(observed, F.col("strimzi_factor"))
        .when(fallback_applied, F.lit(float(config.throttle_factor_fallback)))
        .otherwise(F.col("last_factor"))
    )
    nothing = F.array().cast(VIOLATIONS)
    return _row(
        "strimzi",
        factor,
        fallback_applied,
        observed,
        F.when(observed, F.col("strimzi_violations")).otherwise(nothing),
        F.when(observed, F.col("strimzi_volumes")).otherwise(0),
        F.when(observed, F.col("strimzi_brokers")).otherwise(0),
    )


def replayed_policies(config: PipelineConfig) -> list[str]:
    """The policies the job's timeline holds: graded always, strimzi when a plugin limit is configured."""
    return ["graded", "strimzi"] if config.strimzi_enabled else ["graded"]


def _policies(config: PipelineConfig, policies: Iterable[str] | None) -> list[str]:
    if policies is None:
        policies = replayed_policies(config)
    policies = list(policies)
    if not policies or not set(policies) <= {"graded", "strimzi"}:
        raise ValueError(f"policies must be graded and/or strimzi (got {policies!r})")
    if "strimzi" in policies:
        volume_limits.validate_strimzi_limits(config.min_available_bytes, config.min_available_ratio)
    return policies


def check_interval_micros(config: PipelineConfig) -> int:
    interval = duration_micros(config.check_interval)
    if interval < 1:
        raise ValueError(f"check_interval must be at least one microsecond (got {config.check_interval!r})")
    return interval


def decision_timeline(
    volume_rows: DataFrame,
    config: PipelineConfig,
    policies: Iterable[str] | None = None,
    size: dict[str, Any] | None = None,
    observation: Observation | None = None,
    seeds: DataFrame | None = None,
) -> DataFrame:
    """The decisions of every cluster and check instant: graded always, strimzi when a plugin limit is configured.

    volume_rows: the VOLUMES frame with its message ids (schemas.volume_rows; the job reads back the volumes/ it
    wrote), or the MESSAGES frame, made into that here. policies: a subset of ("graded", "strimzi") to compute only
    those. One row per (cluster, instant, policy), columns TIMELINE_COLUMNS. Raises TimelineTooLarge, before the
    timeline is built, when a cluster's would judge more than config.max_timeline_rows rows: ``size`` is
    timeline_size's estimate when the caller has it (the job takes it from the forecast's volume spans), else it is
    computed from the rows (one more pass over them).
    ``observation``: a pyspark Observation that the first action on the result fills with its rows, clusters,
    rows not OPEN and rows with the fallback applied (DECISION_COUNTS), so that nothing reads the output back.
    ``seeds``: the timeline resumed after a checkpoint (an incremental run): per cluster, SEED_COLUMNS, the state of
    its clock after its instant ``seed_t``, which an earlier timeline decided. A seeded cluster's rows are those after
    seed_t, and its volume rows must be those after seed_t and, before it, each broker's latest message at or before
    seed_t (one that no later instant judges, older than seed_t minus the larger of the validity and the freshness,
    may be given without volumes: it says its broker is known). Clusters without a seed start at their first instant.

    The plan shuffles the volume rows once, by cluster, and sorts them once, by broker and time: the windows over
    each broker's rows, the aggregation per (cluster, instant) and the clock over each cluster's instants all find
    their rows in place. Run the query that computes it (a write, a collect) under session.timeline_settings: the
    plan is made for those settings (its rows do not depend on them, nor on any other setting: duplicates are settled
    by the data).
    """
    interval = check_interval_micros(config)
    policies = _policies(config, policies)
    rows = volume_rows if "message" in volume_rows.columns else schemas.volume_rows(volume_rows)
    if size is None and config.max_timeline_rows is not None:
        size = timeline_size(rows, interval)
    if size is not None:
        refuse_if_too_large(size, interval, config.max_timeline_rows)
    keyed = rows.select(
        "cluster",
        "broker_id",
        F.unix_micros("at").alias("at_micros"),
        "message",
        *LIMIT_COLUMNS,
        "log_dir",
        "total_bytes",
        "usable_bytes",
    ).repartition("cluster")
    per_instant = _per_instant(_judged_rows(_timed(keyed, interval), config, interval, policies), policies)
    seed_t = F.col("seed_t")
    if seeds is None:
        per_instant = per_instant.withColumns({name: F.lit(None).cast(kind) for name, kind in SEED_COLUMNS.items()})
    else:
        _check_seeds(seeds, policies, config, interval)
        per_instant = per_instant.join(F.broadcast(seeds.select("cluster", *SEED_COLUMNS)), "cluster", "left")
    # An instant's clock counts what was observed after the seed; at or before it, the seed says what was.
    after_seed = seed_t.isNull() | (F.col("t") > seed_t)
    # One window over each cluster's instants runs the clock and finds the cluster's last message's instant: the
    # instants past it are dropped (a broker's last message counted past that). The clock is unchanged by that, as it
    # looks back only; the next row of the last instant kept is the instant right after it (the message that counted
    # past it was counted at every instant from its arrival on), which leaves no quiet instants between them.
    in_order = Window.partitionBy("cluster").orderBy("t")
    so_far = in_order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    whole_cluster = in_order.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    clock = {
        "next_t": F.lead("t").over(in_order),
        "first_row": F.row_number().over(in_order) == 1,
        "last_instant": F.max(F.when(F.col("arrived") > 0, F.col("t"))).over(whole_cluster),
    }
    rows = []
    if "graded" in policies:
        clock["known_brokers"] = F.sum("new_brokers").over(so_far)
        rows.append(_graded_row(config))
    if "strimzi" in policies:
        observed = (F.col("arrived") > 0) & after_seed
        clock["valid_from"] = F.coalesce(F.max(F.when(observed, F.col("t"))).over(so_far), F.col("seed_valid_from"))
        clock["last_factor"] = F.coalesce(
            F.last(F.when(observed, F.col("strimzi_factor")), ignorenulls=True).over(so_far),
            F.col("seed_last_factor"),
        )
        rows.append(_strimzi_row(config))
    in_range = per_instant.withColumns(clock).where(F.col("t") <= F.col("last_instant")).drop("last_instant")
    filled = _quiet_instants(in_range, interval, policies)
    if "graded" in policies:
        filled = _held_factor(filled, config)
    # A seeded cluster's first row is the instant after its seed (the rows up to it are dropped below).
    first_of_cluster = F.when(seed_t.isNull(), F.col("first_row") & (F.col("t") == F.col("row_t"))).otherwise(
        F.col("t") == seed_t + F.lit(interval)
    )
    if seeds is not None:  # the instants up to the seed's served only to set its brokers' clocks
        filled = filled.where(after_seed)
    exploded = filled.select(
        "cluster", "t", first_of_cluster.alias("first_of_cluster"), F.explode(F.array(*rows)).alias("row")
    )
    timeline = exploded.select(
        "cluster",
        F.timestamp_micros("t").alias("at"),
        "row.policy",
        "row.throttle_factor",
        state_of(F.col("row.throttle_factor")).alias("state"),
        "row.fallback_applied",
        "row.observed",
        "row.violations",
        "row.volumes_considered",
        "row.brokers_considered",
        "first_of_cluster",
    )
    if observation is not None:
        timeline = timeline.observe(observation, *_counts(policies[0]))
    return timeline.drop("first_of_cluster")


# A seed of decision_timeline: the clock of a cluster after its instant seed_t (microseconds), as an earlier timeline
# left it: the plugin's last observation and its factor (strimzi), the factor graded held.
SEED_COLUMNS = {
    "seed_t": "long",
    "seed_valid_from": "long",
    "seed_last_factor": "double",
    "seed_held": "double",
}


def seeds_of(timeline: DataFrame) -> DataFrame:
    """The seed (SEED_COLUMNS) of each cluster of ``timeline`` (decision_timeline's rows, decisions/ as written) after
    its last instant: what a later timeline resumes from. The plugin's clock is its last observed row (every
    timeline's first instant is one), the graded factor the one decided at the last instant; a policy the timeline
    lacks leaves its columns null."""
    at = F.unix_micros("at")
    strimzi_observed = (F.col("policy") == "strimzi") & F.col("observed")
    graded = F.col("policy") == "graded"
    return timeline.groupBy("cluster").agg(
        F.max(at).alias("seed_t"),
        F.max(F.when(strimzi_observed, at)).alias("seed_valid_from"),
        F.max_by(F.when(strimzi_observed, F.col("throttle_factor")), F.when(strimzi_observed, at)).alias(
            "seed_last_factor"
        ),
        F.max_by(F.when(graded, F.col("throttle_factor")), F.when(graded, at)).alias("seed_held"),
    )


def checkpoint_rows(volume_rows: DataFrame, seeds: DataFrame, config: PipelineConfig) -> DataFrame:
    """The volume rows a timeline resumed from ``seeds`` reads before its messages after them: of each broker of a
    seeded cluster, every row of its latest time at or before the seed's instant (all the messages of that time: the
    timeline settles them as it settles any). ``volume_rows``: the VOLUMES frame (volumes/ as written).

    A time older than the seed minus the larger of the validity and the freshness is moved up to that bound: no
    instant after the seed judges such a message either way (its broker stays known, stale and forgotten), and a
    broker that left long ago would otherwise start the resumed timeline at its last message, instants and all.
    """
    at = F.unix_micros("at")
    horizon = max(duration_micros(config.throttle_factor_validity), duration_micros(config.freshness))
    before = volume_rows.join(F.broadcast(seeds.select("cluster", "seed_t")), "cluster").where(at <= F.col("seed_t"))
    latest = before.groupBy("cluster", "broker_id").agg(F.max(at).alias("latest_at"))
    return (
        before.join(latest, ["cluster", "broker_id"])
        .where(at == F.col("latest_at"))
        .withColumn("at", F.timestamp_micros(F.greatest(at, F.col("seed_t") - F.lit(horizon))))
        .drop("latest_at", "seed_t")
    )


def _check_seeds(seeds: DataFrame, policies: Sequence[str], config: PipelineConfig, interval: int) -> None:
    """ValueError for seeds a timeline cannot resume from: a cluster seeded twice, an instant off this timeline's
    grid (another check interval), or a clock missing for a policy it computes (a policy the run before did not)."""
    needed = {"seed_t": "its instant"}
    if "strimzi" in policies:
        needed.update({"seed_valid_from": "the plugin's last observation", "seed_last_factor": "its factor"})
    if "graded" in policies and config.throttle_factor_step != 0:
        needed["seed_held"] = "the graded factor held"
    clusters = set()
    for row in seeds.select("cluster", *SEED_COLUMNS).collect():
        if row["cluster"] in clusters:
            raise ValueError(f"seeds: cluster {row['cluster']!r} is seeded twice")
        clusters.add(row["cluster"])
        missing = [what for name, what in needed.items() if row[name] is None]
        if missing:
            raise ValueError(f"seeds: cluster {row['cluster']!r} has no {', '.join(missing)}: resume from a full run")
        if row["seed_t"] % interval:
            raise ValueError(
                f"seeds: cluster {row['cluster']!r}'s instant {row['seed_t']} is not on the grid of a {interval} us "
                "check interval: resume from a full run"
            )


# The figures decision_timeline's observation collects.
DECISION_COUNTS = ("rows", "clusters", "not_open", "fallback_applied")


def _counts(one_policy):
    return (
        F.count(F.lit(1)).alias("rows"),
        F.count(F.when(F.col("first_of_cluster") & (F.col("policy") == one_policy), True)).alias("clusters"),
        F.count(F.when(F.col("state") != volume_limits.OPEN, True)).alias("not_open"),
        F.count(F.when(F.col("fallback_applied"), True)).alias("fallback_applied"),
    )
