"""The decision timeline in Spark: what each throttling policy decides at every check instant of every cluster.

The rules are those of plugins/module_utils/decision_timeline.py (its module documentation states them in full; the
two implementations pass the same vectors, tests/vectors/decision_timeline.json, and the per-volume rules also pass
tests/vectors/volume_limits.json). In short, with I the check interval, V the throttle factor validity and F the
freshness (config.freshness), all in whole microseconds:

* duplicates (cluster, broker_id, at): the message with the least total usable bytes is kept (ties: volume list,
  then limits, smallest first);
* instants: per cluster every epoch-aligned multiple of I from ceil(first at / I) * I to ceil(last at / I) * I;
* strimzi (when config.strimzi_enabled): an instant t observes iff some message has t - I < at <= t; then the
  brokers with such a message or with t < at + V (their latest message) give the volumes for the plugin's binary
  rule; a failed observation keeps the last factor while t - valid_from <= V and applies the fallback after;
* graded (always): the volumes of brokers whose latest message is fresh (t - at <= F), each judged with its own
  message's soft and hard limits (missing or unusable limits: skipped); factor = the smallest; when some known
  broker is stale and missing_data_action is pause, factor 0.0 with fallback_applied.

Plan, linear in the data, one sort of the messages and one pass for both policies:

1. deduplicate and time the messages with windows over each broker's messages (first instant, next message); the
   result is checkpointed to local disk, since the grid and the volume rows both read it;
2. each message is exploded over the instants from its first through the last at which it still counts for some
   policy (its broker's next message, capped by V for strimzi and F for graded, and by the cluster's last
   instant), then over its volumes; each row carries whether it is the message's arrival and, per policy, whether
   it counts, and is judged by every policy's per-volume rule (column expressions);
3. those rows and one row per instant of the cluster (sequence(first, last): gaps get rows too) are grouped by
   (cluster, instant) with numeric aggregates only; the violation lists come from the violating rows alone and are
   joined back;
4. window functions over the instants of a cluster count the known brokers and run the plugin's clock (last
   observed instant, last factor), and each instant becomes one row per policy.

Its size is bounded before any of that is built: the rows judged grow with check instants x volumes, so a span of
decades (one stamp from a reset clock) or a tiny interval would run the driver out of memory; decision_timeline
refuses such a timeline with TimelineTooLarge, naming the cluster, its span and the interval.

Output columns: cluster, at (timestamp), policy, throttle_factor (double), state, fallback_applied, observed,
violations (array<struct<broker_id, log_dir>>, in decision order), volumes_considered, brokers_considered.
"""

import datetime

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from headroom_pipeline.collection import ensure_importable
from headroom_pipeline.config import PipelineConfig

ensure_importable()

# pylint: disable=wrong-import-position
from ansible_collections.headroom.kafka.plugins.module_utils import volume_limits as vl  # noqa: E402
from ansible_collections.headroom.kafka.plugins.module_utils.decision_timeline import duration_micros  # noqa: E402

VIOLATION = T.StructType([T.StructField("broker_id", T.LongType()), T.StructField("log_dir", T.StringType())])
VIOLATIONS = T.ArrayType(VIOLATION, False)
TIMELINE_COLUMNS = ["cluster", "at", "policy", "throttle_factor", "state", "fallback_applied", "observed", "violations",
                    "volumes_considered", "brokers_considered"]
LIMIT_COLUMNS = ["soft_type", "soft_level", "hard_type", "hard_level"]
# The grid of a cluster's instants is exploded in chunks of this many: one array of all of them would be as long
# as the cluster's history is in check intervals (tens of millions of elements for a decade of minutes).
GRID_CHUNK = 4096
MICROS = 1_000_000


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


def _limit_column(value) -> Column:
    return value if isinstance(value, Column) else F.lit(value)


def _sort_key(rank: Column, usable: Column) -> Column:
    return F.struct(rank.cast("double").alias("rank"), usable.cast("long").alias("usable"), F.col("broker_id"), F.col("log_dir"))


def _judge_strimzi(rows: DataFrame, min_available_bytes, min_available_ratio, prefix="") -> DataFrame:
    """The plugin's rule per volume: the bytes limit where given, else the ratio limit; both inclusive."""
    def own(name):
        return F.col(prefix + name)

    bytes_limit, ratio_limit = _limit_column(min_available_bytes).cast("long"), _limit_column(min_available_ratio).cast("double")
    staged = rows.withColumns({prefix + "considered": _known_sizes(), prefix + "bytes_limit": bytes_limit,
                               prefix + "ratio_limit": ratio_limit, prefix + "ratio": _available_ratio()})
    by_bytes = own("bytes_limit").isNotNull()
    violates = F.when(by_bytes, F.col("usable_bytes") <= own("bytes_limit")).otherwise(own("ratio") <= own("ratio_limit"))
    # volume_limits.strimzi_decision's order: usable bytes (bytes limit) or available ratio (ratio limit), then the volume.
    sort_key = _sort_key(F.when(~by_bytes, own("ratio")), F.when(by_bytes, F.col("usable_bytes")))
    judged = staged.withColumns({prefix + "violates": own("considered") & violates,
                                 prefix + "volume_factor": F.when(violates, F.lit(0.0)).otherwise(F.lit(1.0)), prefix + "sort_key": sort_key})
    return judged.drop(prefix + "bytes_limit", prefix + "ratio_limit", prefix + "ratio")


def _level_is_usable(level: Column, limit_type: Column) -> Column:
    """volume_limits.validate_limit for a level column: a finite number >= 0, a percentage at most 100."""
    finite = level.isNotNull() & ~F.isnan(level) & (level != F.lit(float("inf")))
    return finite & (level >= 0) & ((limit_type != "min_free_percentage") | (level <= 100))


def _limits_are_usable() -> Column:
    """volume_limits.validate_graded_limits as a column: known and equal types, usable levels, soft trips first."""
    soft_type, hard_type, soft, hard = F.col("soft_type"), F.col("hard_type"), F.col("soft_level"), F.col("hard_level")
    ordered = F.when(soft_type.isin(*vl.FREE_TYPES), soft > hard).otherwise(soft < hard)
    usable = (soft_type.isin(*vl.LIMIT_TYPES) & (hard_type == soft_type) & _level_is_usable(soft, soft_type)
              & _level_is_usable(hard, hard_type) & ordered)
    return F.coalesce(usable, F.lit(False))


def _measure() -> Column:
    """The figure the limit type compares: free bytes, free percent (0 for zero capacity) or consumed bytes."""
    limit_type = F.col("soft_type")
    usable, total = F.col("usable_bytes").cast("double"), F.col("total_bytes").cast("double")
    return (F.when(limit_type == "min_free_bytes", usable)
            .when(limit_type == "min_free_percentage", _available_ratio() * 100.0)
            .otherwise(total - usable))


def _judge_graded(rows: DataFrame, prefix="") -> DataFrame:
    """volume_limits.graded_volume_factor and breaches per volume, with the limits of the volume's own message.

    Only volumes with usable limits are considered, and their soft and hard limits have the same type, so one
    measure serves both limits.
    """
    def own(name):
        return F.col(prefix + name)

    staged = rows.withColumns({prefix + "considered": _known_sizes() & _limits_are_usable(),
                               prefix + "free": F.col("soft_type").isin(*vl.FREE_TYPES), prefix + "measure": _measure()})
    value, soft, hard, free = own("measure"), F.col("soft_level"), F.col("hard_level"), own("free")

    def breaches(level):
        return F.when(free, value <= level).otherwise(value >= level)

    between = F.when(free, F.try_divide(value - hard, soft - hard)).otherwise(F.try_divide(hard - value, hard - soft))
    breached = staged.withColumns({prefix + "past_soft": breaches(soft), prefix + "past_hard": breaches(hard), prefix + "between": between})
    factor = (F.when(own("past_hard"), F.lit(0.0)).when(~own("past_soft"), F.lit(1.0))
              .otherwise(F.least(F.greatest(own("between"), F.lit(0.0)), F.lit(1.0))))
    judged = breached.withColumns({prefix + "violates": own("considered") & own("past_soft"), prefix + "volume_factor": factor})
    # volume_limits.graded_decision's order: volume factor, usable bytes, then the volume.
    judged = judged.withColumn(prefix + "sort_key", _sort_key(own("volume_factor"), F.col("usable_bytes")))
    return judged.drop(*[prefix + name for name in ("free", "measure", "past_soft", "past_hard", "between")])


def _judge(rows: DataFrame, policy: str, min_available_bytes=None, min_available_ratio=None, prefix="") -> DataFrame:
    """``rows`` with {prefix}considered, violates, volume_factor and sort_key, a struct (rank, usable, broker_id,
    log_dir) whose order is the order volume_limits gives violations and least headroom."""
    if policy == "strimzi":
        return _judge_strimzi(rows, min_available_bytes, min_available_ratio, prefix)
    if policy == "graded":
        return _judge_graded(rows, prefix)
    raise ValueError(f"policy must be one of strimzi, graded (got {policy!r})")


# -- aggregates over judged rows ------------------------------------------------------------------------------------
def _pairs(sort_keys: Column) -> Column:
    return F.transform(sort_keys, lambda item: F.struct(item["broker_id"].alias("broker_id"), item["log_dir"].alias("log_dir"))).cast(VIOLATIONS)


def _decision_aggregates():
    """(throttle factor, violations, volumes considered) over the judged rows of a group.

    The factor is the smallest volume factor, 1.0 when nothing is judged (for strimzi: 0.0 iff a volume violates).
    """
    return (F.coalesce(F.min(F.when(F.col("considered"), F.col("volume_factor"))), F.lit(1.0)),
            _pairs(F.array_sort(F.collect_list(F.when(F.col("violates"), F.col("sort_key"))))),
            F.count(F.when(F.col("considered"), True)).cast("int"))


def decide_instants(volume_rows: DataFrame, policy: str, min_available_bytes=None, min_available_ratio=None,
                    keys=("cluster", "at")) -> DataFrame:
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
    if policy == "strimzi" and not isinstance(min_available_bytes, Column) and not isinstance(min_available_ratio, Column):
        vl.validate_strimzi_limits(min_available_bytes, min_available_ratio)
    judged = _judge(volume_rows, policy, min_available_bytes, min_available_ratio)
    factor, violations, volumes_considered = _decision_aggregates()
    decided = judged.groupBy(*keys).agg(
        factor.alias("throttle_factor"), violations.alias("violations"), F.min(F.when(F.col("considered"), F.col("sort_key"))).alias("least"),
        volumes_considered.alias("volumes_considered"), F.count_distinct("broker_id").cast("int").alias("brokers_considered"))
    least = F.when(F.col("least").isNotNull(), F.struct(F.col("least.broker_id").alias("broker_id"), F.col("least.log_dir").alias("log_dir")))
    return decided.select(*keys, "throttle_factor", "violations", least.alias("least_headroom"), "volumes_considered", "brokers_considered")


def state_of(factor: Column) -> Column:
    """volume_limits.state_of as a column."""
    return F.when(factor >= 1.0, F.lit(vl.OPEN)).when(factor <= 0.0, F.lit(vl.PAUSE)).otherwise(F.lit(vl.THROTTLE))


def _missing_data_applied(complete: Column, missing_data_action: str) -> Column:
    if missing_data_action not in vl.MISSING_DATA_ACTIONS:
        raise ValueError(f"missing_data_action must be one of {', '.join(vl.MISSING_DATA_ACTIONS)} (got {missing_data_action!r})")
    return ~complete if missing_data_action == "pause" else F.lit(False)


def apply_missing_data(decided: DataFrame, complete: Column, missing_data_action: str) -> DataFrame:
    """The graded missing-data action: with pause, incomplete data gives factor 0.0 and fallback_applied."""
    paused = _missing_data_applied(complete, missing_data_action)
    return (decided.withColumn("fallback_applied", paused)
            .withColumn("throttle_factor", F.when(F.col("fallback_applied"), F.lit(0.0)).otherwise(F.col("throttle_factor"))))


# -- messages -------------------------------------------------------------------------------------------------------
def _on_or_after(micros: Column, interval: int) -> Column:
    """The first instant (multiple of the interval) at or after ``micros``."""
    return micros + F.pmod(-micros, F.lit(interval))


def _on_or_before(micros: Column, interval: int) -> Column:
    return micros - F.pmod(micros, F.lit(interval))


def _duplicate_preference() -> Column:
    """decision_timeline.duplicate_preference as a column: the smallest struct is the message kept."""
    known_usable = F.aggregate("volumes", F.lit(0).cast("long"), lambda total, volume: total + F.when(
        (volume["total_bytes"] >= 0) & (volume["usable_bytes"] >= 0), volume["usable_bytes"]).otherwise(F.lit(0).cast("long")))
    volume_list = F.array_sort(F.transform("volumes", lambda volume: F.struct(
        volume["log_dir"], F.coalesce(F.when(volume["total_bytes"] >= 0, volume["total_bytes"]), F.lit(-1).cast("long")),
        F.coalesce(F.when(volume["usable_bytes"] >= 0, volume["usable_bytes"]), F.lit(-1).cast("long")))))

    def limit(prefix):
        level = F.col(f"{prefix}_level")
        finite = level.isNotNull() & ~F.isnan(level) & (F.abs(level) != F.lit(float("inf")))
        return F.coalesce(F.col(f"{prefix}_type"), F.lit("")), F.when(finite, level).otherwise(F.lit(-1.0))

    return F.struct(known_usable, volume_list, *limit("soft"), *limit("hard"))


def _timed(messages: DataFrame, interval: int) -> DataFrame:
    """One message per (cluster, broker_id, at) (the least total usable bytes wins), with at_micros, its first
    instant, its broker's next message (next_micros) and whether it is the broker's first message (broker_is_new).

    Every window here is ordered by (cluster, broker_id, at_micros), so the messages are shuffled and sorted once.
    The duplicate preference, costly to compute (it walks the volume lists), is only computed for messages that
    share their time with a neighbour; among messages with equal preferences, which are the same for every rule,
    any one is kept.
    """
    by_broker = Window.partitionBy("cluster", "broker_id").orderBy("at_micros")
    by_time = Window.partitionBy("cluster", "broker_id", "at_micros")
    keyed = messages.select("cluster", "broker_id", F.unix_micros("at").alias("at_micros"), *LIMIT_COLUMNS, "volumes")
    at = F.col("at_micros")
    duplicated = F.coalesce(F.lag("at_micros").over(by_broker) == at, F.lit(False)) | F.coalesce(F.lead("at_micros").over(by_broker) == at, F.lit(False))
    marked = keyed.withColumn("duplicated", duplicated).withColumn("preference", F.when(F.col("duplicated"), _duplicate_preference()))
    preferred = marked.withColumn("best", F.min("preference").over(by_time)).where(~F.col("duplicated") | (F.col("preference") == F.col("best")))
    # Of the preferred messages of one time, the first in the (unchanged) order: its predecessor has another time.
    previous = F.lag("at_micros").over(by_broker)
    kept = preferred.withColumn("first", previous.isNull() | (previous != at)).where("first").drop("duplicated", "preference", "best", "first")
    return kept.select("*", _on_or_after(at, interval).alias("first_instant"), F.lead("at_micros").over(by_broker).alias("next_micros"),
                       F.lag("at_micros").over(by_broker).isNull().cast("int").alias("broker_is_new"))


def _served_volume_rows(capped: DataFrame, last_served, interval: int) -> DataFrame:
    """Volume rows of each message at each instant from its first instant through the last at which it counts.

    ``last_served``: per policy, the last instant (inclusive, before capping) at which the message counts as its
    broker's latest. Each row carries t, arrival (t is the message's first instant), {policy}_served and
    broker_marker (true on one row per message and instant: its first volume, or the volume-less row of a message
    without volumes), so that summing over markers counts messages and brokers without a distinct count. One row
    serves every policy: the policies differ only in how long a message counts.
    """
    lasts = {policy: _on_or_before(F.least(last, F.col("last")), interval) for policy, last in last_served.items()}
    with_last = capped.select("cluster", "broker_id", *LIMIT_COLUMNS, "volumes", "first_instant", "broker_is_new",
                              *[last.alias(f"{policy}_last") for policy, last in lasts.items()])
    until = F.greatest(F.col("first_instant"), *[F.col(f"{policy}_last") for policy in lasts])
    served = with_last.select("*", F.explode(F.sequence("first_instant", until, F.lit(interval))).alias("t"))
    flags = {"arrival": F.col("t") == F.col("first_instant"), **{f"{policy}_served": F.col("t") <= F.col(f"{policy}_last") for policy in lasts}}
    volumes = served.select("cluster", "t", "broker_id", *LIMIT_COLUMNS, "broker_is_new", *[flag.alias(name) for name, flag in flags.items()],
                            F.posexplode_outer("volumes").alias("position", "volume"))
    return volumes.select("cluster", "t", "broker_id", *LIMIT_COLUMNS, "broker_is_new", *flags,
                          F.coalesce(F.col("position"), F.lit(0)).isin(0).alias("broker_marker"),
                          F.col("volume.log_dir").alias("log_dir"), F.col("volume.total_bytes").alias("total_bytes"),
                          F.col("volume.usable_bytes").alias("usable_bytes"))


# -- the timeline ---------------------------------------------------------------------------------------------------
def _served_ranges(config: PipelineConfig, policies):
    """Per policy, the last instant (inclusive, before capping) at which a message counts as its broker's latest."""
    at, first, following = F.col("at_micros"), F.col("first_instant"), F.col("next_micros") - 1
    validity, freshness = duration_micros(config.throttle_factor_validity), duration_micros(config.freshness)
    ranges = {
        "graded": F.least(following, at + freshness),                            # fresh while t - at <= F
        "strimzi": F.least(following, F.greatest(at + validity - 1, first)),     # new at its first instant, then while t < at + V
    }
    return {policy: ranges[policy] for policy in policies}


def _grid(bounds: DataFrame, interval: int) -> DataFrame:
    """(cluster, t) for every instant from each cluster's first through its last, exploded chunk by chunk."""
    chunk = max(1, min(GRID_CHUNK, 2 ** 62 // interval // 4))       # chunk * interval stays far from overflow
    step = interval * chunk
    starts = bounds.select("cluster", "last", F.explode(F.sequence("first", "last", F.lit(step))).alias("start"))
    chunk_end = F.least(F.col("start") + F.lit(step - interval), F.col("last"))
    return starts.select("cluster", F.explode(F.sequence("start", chunk_end, F.lit(interval))).alias("t"))


def timeline_size(timed: DataFrame, interval: int) -> dict:
    """The rows the timeline judges, estimated before it is built: per cluster, check instants (span / interval)
    x volumes (each broker's largest volume list, at least 1), summed; and the cluster with the most of them.

    Every broker reporting every interval makes the estimate exact; silences make it an upper bound.
    """
    per_broker = timed.groupBy("cluster", "broker_id").agg(
        F.min("first_instant").alias("first"), F.max("first_instant").alias("last"),
        F.max(F.greatest(F.size("volumes"), F.lit(1))).alias("volumes"))
    per_cluster = per_broker.groupBy("cluster").agg(F.min("first").alias("first"), F.max("last").alias("last"),
                                                    F.sum("volumes").cast("double").alias("volumes"))
    instants = ((F.col("last") - F.col("first")) / F.lit(float(interval)) + 1).alias("instants")
    sized = per_cluster.select("cluster", "first", "last", "volumes", instants).withColumn("rows", F.col("instants") * F.col("volumes"))
    row = sized.agg(F.sum("rows").alias("rows"), F.sum("instants").alias("instants"), F.count(F.lit(1)).alias("clusters"),
                    F.max_by(F.struct("cluster", "first", "last", "volumes", "instants", "rows"), "rows").alias("largest")).first()
    largest = row["largest"].asDict() if row["largest"] is not None else None
    return {"rows": row["rows"] or 0.0, "instants": row["instants"] or 0.0, "clusters": row["clusters"], "largest": largest}


def _refuse_if_too_large(size: dict, interval: int, max_rows) -> None:
    if max_rows is None or size["rows"] <= max_rows:
        return
    largest = size["largest"]
    span = f"{_stamp(largest['first'])} to {_stamp(largest['last'])}"
    raise TimelineTooLarge(
        f"{size['rows']:,.0f} rows to judge (check instants x volumes, {size['clusters']:,} cluster(s)) exceed --max-timeline-rows "
        f"{max_rows:,}; the largest, cluster {largest['cluster']!r}, spans {span}: {largest['instants']:,.0f} check instants every "
        f"{interval / MICROS:g} s for {largest['volumes']:,.0f} volume(s). Narrow the snapshots' time with --since/--until, raise --check-interval, "
        "or raise --max-timeline-rows (and --driver-memory) if the span is right")


def _stamp(micros: int) -> str:
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=int(micros))
    return moment.isoformat().replace("+00:00", "Z")


def _events(timed: DataFrame, bounds: DataFrame, config: PipelineConfig, interval: int, policies) -> DataFrame:
    """Volume rows judged by every policy (columns prefixed with the policy) and one row per instant of each cluster."""
    grid = _grid(bounds, interval)
    capped = timed.join(F.broadcast(bounds.select("cluster", "last")), "cluster")
    judged = _served_volume_rows(capped, _served_ranges(config, policies), interval)
    for policy in policies:
        judged = _judge(judged, policy, config.min_available_bytes, config.min_available_ratio, prefix=f"{policy}_")
    return grid.unionByName(judged, allowMissingColumns=True)


def _per_instant(events: DataFrame, policies) -> DataFrame:
    """Per (cluster, t): arrivals, new brokers and, per policy, factor, violations, volumes and brokers considered.

    The figures are plain numeric aggregates, which Spark keeps in its fast hash aggregation; the violation lists
    are collected apart from the few violating rows and joined back, since a list in the same aggregation would
    move every group into the object-based aggregation (sorting all rows once past a few groups per task).
    """
    arrived = F.col("arrival") & F.col("broker_marker")
    aggregates = [F.count(F.when(arrived, True)).alias("arrived"), F.coalesce(F.sum(F.when(arrived, F.col("broker_is_new"))), F.lit(0)).alias("new_brokers")]
    lists, violating = [], F.lit(False)
    for policy in policies:
        served = F.col(f"{policy}_served")
        considered = served & F.col(f"{policy}_considered")
        violates = served & F.col(f"{policy}_violates")
        aggregates += [F.coalesce(F.min(F.when(considered, F.col(f"{policy}_volume_factor"))), F.lit(1.0)).alias(f"{policy}_factor"),
                       F.count(F.when(considered, True)).cast("int").alias(f"{policy}_volumes"),
                       F.count(F.when(served & F.col("broker_marker"), True)).cast("int").alias(f"{policy}_brokers")]
        lists.append(_pairs(F.array_sort(F.collect_list(F.when(violates, F.col(f"{policy}_sort_key"))))).alias(f"{policy}_violations"))
        violating = violating | F.coalesce(violates, F.lit(False))
    figures = events.groupBy("cluster", "t").agg(*aggregates)
    violations = events.where(violating).groupBy("cluster", "t").agg(*lists)
    nothing = F.array().cast(VIOLATIONS)
    joined = figures.join(violations, ["cluster", "t"], "left")
    return joined.select(*figures.columns, *[F.coalesce(f"{policy}_violations", nothing).alias(f"{policy}_violations") for policy in policies])


def _row(policy, factor, fallback_applied, observed, violations, volumes, brokers) -> Column:
    return F.struct(F.lit(policy).alias("policy"), factor.cast("double").alias("throttle_factor"), fallback_applied.alias("fallback_applied"),
                    observed.alias("observed"), violations.alias("violations"), volumes.cast("int").alias("volumes_considered"),
                    brokers.cast("int").alias("brokers_considered"))


def _graded_row(config: PipelineConfig) -> Column:
    fresh, known = F.col("graded_brokers"), F.col("known_brokers")
    paused = _missing_data_applied(fresh == known, config.missing_data_action)
    factor = F.when(paused, F.lit(0.0)).otherwise(F.col("graded_factor"))
    return _row("graded", factor, paused, fresh > 0, F.col("graded_violations"), F.col("graded_volumes"), fresh)


def _strimzi_row(config: PipelineConfig) -> Column:
    """The plugin's clock: a success recomputes; a failure keeps the last factor until validity ends, then falls back."""
    observed = F.col("arrived") > 0
    fallback_applied = ~observed & (F.col("t") - F.col("valid_from") > duration_micros(config.throttle_factor_validity))
    factor = (F.when(observed, F.col("strimzi_factor")).when(fallback_applied, F.lit(float(config.throttle_factor_fallback)))
              .otherwise(F.col("last_factor")))
    nothing = F.array().cast(VIOLATIONS)
    return _row("strimzi", factor, fallback_applied, observed, F.when(observed, F.col("strimzi_violations")).otherwise(nothing),
                F.when(observed, F.col("strimzi_volumes")).otherwise(0), F.when(observed, F.col("strimzi_brokers")).otherwise(0))


def decision_timeline(messages: DataFrame, config: PipelineConfig, policies=None) -> DataFrame:
    """The decisions of every cluster and check instant: graded always, strimzi when a plugin limit is configured.

    messages: the MESSAGES frame (schemas.MESSAGES). policies: a subset of ("graded", "strimzi") to compute only
    those. One row per (cluster, instant, policy), columns TIMELINE_COLUMNS. Raises TimelineTooLarge, before the
    timeline is built, when it would judge more than config.max_timeline_rows rows (timeline_size).
    """
    interval = duration_micros(config.check_interval)
    if interval < 1:
        raise ValueError(f"check_interval must be at least one microsecond (got {config.check_interval!r})")
    if policies is None:
        policies = ["graded", "strimzi"] if config.strimzi_enabled else ["graded"]
    policies = list(policies)
    if not policies or not set(policies) <= {"graded", "strimzi"}:
        raise ValueError(f"policies must be graded and/or strimzi (got {policies!r})")
    if "strimzi" in policies:
        vl.validate_strimzi_limits(config.min_available_bytes, config.min_available_ratio)
    # The timed messages feed the grid, the arrivals and every policy's rows: computed once (one sort of the
    # messages), kept on local disk by Spark's block manager (the heap is left to the aggregations) and dropped
    # when the frame is garbage collected.
    timed = _timed(messages, interval).localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)
    _refuse_if_too_large(timeline_size(timed, interval), interval, config.max_timeline_rows)
    bounds = timed.groupBy("cluster").agg(F.min("first_instant").alias("first"), F.max("first_instant").alias("last"))
    per_instant = _per_instant(_events(timed, bounds, config, interval, policies), policies)
    so_far = Window.partitionBy("cluster").orderBy("t").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    clocked = per_instant
    rows = []
    if "graded" in policies:
        clocked = clocked.withColumn("known_brokers", F.sum("new_brokers").over(so_far))
        rows.append(_graded_row(config))
    if "strimzi" in policies:
        observed = F.col("arrived") > 0
        clocked = (clocked.withColumn("valid_from", F.max(F.when(observed, F.col("t"))).over(so_far))
                   .withColumn("last_factor", F.last(F.when(observed, F.col("strimzi_factor")), ignorenulls=True).over(so_far)))
        rows.append(_strimzi_row(config))
    exploded = clocked.select("cluster", "t", F.explode(F.array(*rows)).alias("row"))
    return exploded.select("cluster", F.timestamp_micros("t").alias("at"), "row.policy", "row.throttle_factor",
                           state_of(F.col("row.throttle_factor")).alias("state"), "row.fallback_applied", "row.observed",
                           "row.violations", "row.volumes_considered", "row.brokers_considered")
