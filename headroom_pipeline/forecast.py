"""Volume forecast: how fast each volume's used bytes grow and when its limits will be crossed, every volume ranked.

Input: the VOLUMES frame (one row per cluster, broker_id, log_dir and snapshot time ``at``); used bytes are
``total_bytes - usable_bytes``. Output: one row per volume (cluster, broker_id, log_dir).

The algorithm is fixed: the benchmark reimplements it in pandas and DuckDB SQL and every implementation must pass
tests/vectors/volume_forecast.json. Times are whole microseconds since the epoch (UTC) throughout.

1. Window. Per volume, ``last_at`` = the latest ``at``; keep the rows with ``at >= last_at - forecast_window``
   (inclusive). ``samples`` = rows kept, ``first_at`` = the earliest ``at`` kept, ``span = last_at - first_at``.
2. Buckets. ``bucket = min(floor(24 * (at - first_at) / span), 23)``, computed on the microsecond integers (the same
   as ``floor((at - first_at) / b)`` with width ``b = span / 24``, without rounding b); every row is bucket 0 when
   ``span == 0``.
3. Peaks. Per bucket: ``peak`` = max(used_bytes) and ``t`` = the ``at`` of that peak (max_by; among equal peaks the
   latest ``at``). Peaks follow the top of retention's saw-tooth (segment deletions inside a bucket do not pull it
   down) and gaps simply leave buckets empty.
4. Trend. ``slope = regr_slope(peak, t)`` over the buckets with ``t`` in seconds (``(t - first_at) / 1e6``) and
   peaks in bytes above the first bucket's (neither shift changes the slope; the second keeps it within about 1e-12
   of the exact one, see _slope_in_bucket_order), bytes per second; null when fewer than 3 buckets.
   ``bytes_per_hour = slope * 3600``. The buckets are taken in bucket order, so that the floating-point result does
   not depend on how the rows were partitioned.
5. Latest figures. total_bytes, usable_bytes, used_bytes, hard_limit_type and hard_limit_level come from the row at
   ``last_at`` (two rows at the same instant: the one with more used bytes).
6. Limits, as usable bytes at which they trip (every limit trips at ``usable <= limit``, inclusive, as in
   module_utils.volume_limits): hard limit min_free_bytes -> level; min_free_percentage -> total * level / 100;
   consumed_space -> total - level; null without a hard limit. The shipped plugin's limit, when the job has one:
   min_available_bytes -> that number; min_available_ratio -> total * ratio; null otherwise.
7. Crossing, per limit: null when the limit is null. Already at or past it (latest usable <= limit): crosses at
   ``last_at``, 0 hours (whatever the trend). Else, when slope > 0: ``seconds = (usable - limit) / slope`` (the same as
   ``(used_at_limit - used) / slope`` with ``used_at_limit = total - limit``), crosses at ``last_at + seconds``
   rounded to the microsecond, ``hours = seconds / 3600``. Else (slope <= 0 or null) never: both null. A crossing
   after 9999-12-31T23:59:59.999999Z counts as never too (no timestamp can hold it).
8. Rank (1 = first). By the earliest crossing of either limit (nulls last), then by least headroom ``usable_ratio``
   (usable / total, 0 for a zero-capacity volume, as the plugin counts it), then cluster, broker_id, log_dir.

9. Fill rate (module_utils.limit_sizing, the same rule; both pass tests/vectors/limit_sizing.json). Over the rows
   kept in step 1, in order of (at, usable_bytes, total_bytes): the rate between two successive rows is the free space
   lost per second, ``max(usable - next_usable, 0) / seconds between``; a pair at one instant or of two sizes (another
   filesystem) gives none. ``peak_fill_bytes_per_sec`` = the highest, null when no pair gives one.
   ``recommended_limit_bytes`` = limit_sizing.least_limit_bytes at that rate with the check interval and the plugin's
   measured parts (limit_sizing.plugin_parts): ``ceil(rate * (check_interval + 1.0 + 0.6) + rate * 2.0)``, null
   without a rate, and null when it is 2^63 bytes or more (a hostile input: no volume is that large).
   ``plugin_limit_covers_peak`` and ``hard_limit_covers_peak``: the limit (step 6) is at least that many bytes (false
   past 2^63); null without the limit or without a rate.

Rows are assumed valid (ingest rejects the others): sizes known, 0 <= usable <= total.
"""

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F

from ansible_collections.headroom.kafka.plugins.module_utils import limit_sizing
from headroom_pipeline import schemas

if TYPE_CHECKING:  # the caller hands the configuration over; its module is not needed at run time
    from headroom_pipeline.config import PipelineConfig

VOLUME_KEY = ["cluster", "broker_id", "log_dir"]
BUCKETS = 24
MIN_BUCKETS = 3
MICROS_PER_SECOND = 1_000_000
SECONDS_PER_HOUR = 3600.0
MAX_TIMESTAMP_MICROS = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z, the last instant a timestamp holds
LARGEST_BYTES = float(2**63)  # the first whole number of bytes a 64-bit column cannot hold
MAX_WINDOW_MICROS = 2**62  # any longer window keeps all history; keeps the subtraction in range
# A bucket's peak and its time as one number (see _bucket_peaks): the parts, and the factor of the first.
PAIR_PART = "decimal(20,0)"
PAIR_SHIFT = str(2**63)  # a text: Py4J passes a Python int only up to 2^63 - 1
# A volume's latest row (step 5), in the order that settles two rows at its last instant.
LATEST_FIELDS = ("used_bytes", "total_bytes", "usable_bytes", "hard_type", "hard_level")

OUTPUT_COLUMNS = [
    "cluster",
    "broker_id",
    "log_dir",
    "first_at",
    "last_at",
    "samples",
    "buckets",
    "total_bytes",
    "usable_bytes",
    "used_bytes",
    "usable_ratio",
    "hard_limit_type",
    "hard_limit_level",
    "hard_limit_usable_bytes",
    "bytes_per_hour",
    "crosses_hard_limit_at",
    "hours_to_hard_limit",
    "plugin_limit_usable_bytes",
    "crosses_plugin_limit_at",
    "hours_to_plugin_limit",
    "peak_fill_bytes_per_sec",
    "recommended_limit_bytes",
    "plugin_limit_covers_peak",
    "hard_limit_covers_peak",
    "rank",
]


# What volume_forecast's observation collects for the summary.
FORECAST_COUNTS = ("volumes", "crossing_hard_limit", "limits_short_of_peak_fill")


class VolumeSpan(NamedTuple):
    """A volume's instants in microseconds: its earliest and last samples, and the first sample within the forecast
    window of its last (step 1)."""

    cluster: Any
    broker_id: Any
    log_dir: Any
    earliest_us: int
    last_us: int
    first_us: int


@dataclasses.dataclass(frozen=True)
class VolumeSpans:
    """Every volume's span: ``frame`` (volume, cluster, broker_id, log_dir, earliest_us, last_us, first_us; one row
    per volume, computed once and kept by Spark; ``volume`` is a number that names the volume in the forecast's
    groupings) and the same rows on the driver (``spans``)."""

    frame: DataFrame
    spans: list[VolumeSpan]


def volume_spans(volumes: DataFrame, config: "PipelineConfig") -> VolumeSpans:
    """Every volume's span: the forecast's step 1, which the job also sizes the decision timeline from.

    One aggregation over the rows (partial on each task, one row per volume shuffled), kept by Spark and collected;
    a second one, over the rows of the volumes whose history is longer than the window, only when there are such
    volumes.
    """
    window_micros = _window_micros(config.forecast_window)
    rows = _rows(volumes)
    spans = (
        rows.groupBy(*VOLUME_KEY)
        .agg(F.min("at_us").alias("earliest_us"), F.max("at_us").alias("last_us"))
        .withColumn("volume", F.monotonically_increasing_id())
        .localCheckpoint()
    )
    columns = ["volume", *VOLUME_KEY, "earliest_us", "last_us"]
    collected = [_span(row, first_us=row["earliest_us"]) for row in spans.collect()]
    if all(span.earliest_us >= span.last_us - window_micros for span in collected):
        return VolumeSpans(spans.select(*columns, F.col("earliest_us").alias("first_us")), collected)
    starts = F.col("last_us") - F.lit(window_micros)
    longer = spans.where(F.col("earliest_us") < starts).select("volume", *VOLUME_KEY, starts.alias("start_us"))
    firsts = (
        _joined(rows, longer)
        .where(F.col("at_us") >= F.col("start_us"))
        .groupBy("volume")
        .agg(F.min("at_us").alias("first_us"))
    )
    frame = (
        spans.join(firsts, "volume", "left")
        .select(*columns, F.coalesce("first_us", "earliest_us").alias("first_us"))
        .localCheckpoint()
    )
    return VolumeSpans(frame, [_span(row, first_us=row["first_us"]) for row in frame.collect()])


def _span(row: Any, first_us: int) -> VolumeSpan:
    return VolumeSpan(row["cluster"], row["broker_id"], row["log_dir"], row["earliest_us"], row["last_us"], first_us)


def volume_forecast(
    volumes: DataFrame,
    config: "PipelineConfig",
    spans: VolumeSpans | None = None,
    observation: Observation | None = None,
) -> DataFrame:
    """One row per volume: latest figures, growth trend, limit crossings and rank (see the module docstring).

    ``spans``: volume_spans of the same volumes when the caller has them (computed here otherwise: that runs a
    query). ``observation``: a pyspark Observation that the first action on the result fills with FORECAST_COUNTS.
    """
    if spans is None:
        spans = volume_spans(volumes, config)
    windowed = _in_window(volumes, spans.frame)
    trends = _trends(_bucket_peaks(windowed), spans.frame, _peak_fill_rates(windowed))
    with_limits = trends.select(
        "*",
        _hard_limit_usable_bytes(F.col("hard_limit_type"), F.col("hard_limit_level"), F.col("total_bytes")).alias(
            "hard_limit_usable_bytes"
        ),
        _plugin_limit_usable_bytes(config, F.col("total_bytes")).alias("plugin_limit_usable_bytes"),
    )
    hard_seconds = _seconds_to_limit(
        F.col("usable_bytes"), F.col("hard_limit_usable_bytes"), F.col("slope"), F.col("last_us")
    )
    plugin_seconds = _seconds_to_limit(
        F.col("usable_bytes"), F.col("plugin_limit_usable_bytes"), F.col("slope"), F.col("last_us")
    )
    least = least_limit_of_peak(F.col("peak_fill_bytes_per_sec"), config.check_interval)
    crossings = with_limits.select(
        "*",
        hard_seconds.alias("hard_seconds"),
        plugin_seconds.alias("plugin_seconds"),
        whole_bytes(least).alias("recommended_limit_bytes"),
        _covers(F.col("plugin_limit_usable_bytes"), least).alias("plugin_limit_covers_peak"),
        _covers(F.col("hard_limit_usable_bytes"), least).alias("hard_limit_covers_peak"),
    )
    ranked = _ranked(
        crossings.select(
            "*",
            _crossing_at(F.col("last_us"), F.col("hard_seconds")).alias("crosses_hard_limit_at"),
            (F.col("hard_seconds") / SECONDS_PER_HOUR).alias("hours_to_hard_limit"),
            _crossing_at(F.col("last_us"), F.col("plugin_seconds")).alias("crosses_plugin_limit_at"),
            (F.col("plugin_seconds") / SECONDS_PER_HOUR).alias("hours_to_plugin_limit"),
        )
    )
    if observation is not None:
        ranked = ranked.observe(
            observation,
            F.count(F.lit(1)).alias("volumes"),
            F.count("crosses_hard_limit_at").alias("crossing_hard_limit"),
            F.count(F.when(~F.col("plugin_limit_covers_peak") | ~F.col("hard_limit_covers_peak"), F.lit(1))).alias(
                "limits_short_of_peak_fill"
            ),
        )
    return ranked.select(*OUTPUT_COLUMNS)


def _window_micros(window_seconds: float) -> int:
    return min(round(window_seconds * MICROS_PER_SECOND), MAX_WINDOW_MICROS)


def _rows(volumes: DataFrame) -> DataFrame:
    return schemas.reported_volumes(volumes).select(
        *VOLUME_KEY,
        "total_bytes",
        "usable_bytes",
        "hard_type",
        "hard_level",
        (F.col("total_bytes") - F.col("usable_bytes")).alias("used_bytes"),
        F.unix_micros("at").alias("at_us"),
        "at",
    )


def _in_window(volumes: DataFrame, spans: DataFrame) -> DataFrame:
    """The rows within the forecast window of their volume's last row, with their volume, bucket and span.

    Each volume's span (volume_spans, one row per volume, kept by Spark) joins the rows by broadcast, so that no
    row is shuffled or sorted by volume. The volumes are matched null-safely, as a grouping groups them.
    """
    joined = _joined(_rows(volumes), spans.select("volume", *VOLUME_KEY, "first_us", "last_us"))
    windowed = joined.where(F.col("at_us") >= F.col("first_us"))
    return windowed.select(
        "volume",
        "used_bytes",
        "at_us",
        "first_us",
        "last_us",
        *LATEST_FIELDS,
        _bucket(F.col("at_us") - F.col("first_us"), F.col("last_us") - F.col("first_us")).alias("bucket"),
    )


def _joined(rows: DataFrame, per_volume: DataFrame, keys: Sequence[str] = tuple(VOLUME_KEY)) -> DataFrame:
    """``rows`` with the columns of ``per_volume`` (one row per key), matched null-safely on the ``keys``."""
    keyed = per_volume.select(
        *[F.col(name).alias(f"_{name}") for name in keys],
        *[name for name in per_volume.columns if name not in keys],
    )
    matched = [rows[name].eqNullSafe(keyed[f"_{name}"]) for name in keys]
    return rows.join(F.broadcast(keyed), matched).drop(*[f"_{name}" for name in keys])


def _bucket(offset_micros: Column, span_micros: Column) -> Column:
    """min(floor(24 * offset / span), 23); 0 for every row when span is 0 (then there is no trend)."""
    index = F.floor(F.try_divide(offset_micros * BUCKETS, span_micros))
    return F.when(span_micros > 0, F.least(index, F.lit(BUCKETS - 1))).otherwise(F.lit(0).cast("long"))


def _bucket_peaks(windowed: DataFrame) -> DataFrame:
    """Per volume and bucket: the peak used bytes, its time (among equal peaks the latest), the rows, and the
    volume's latest row (step 5) in the bucket that holds its last instant: the forecast's one pass over the rows.

    One aggregation, which Spark hashes where the rows are (partial on each task, one row per group shuffled):

    - the (used bytes, time) pair whose maximum is the peak and its time is one whole number,
      used * 2^63 + (at - first_us), both parts below 2^63, so that the pair's order is the number's (a maximum of a
      struct would sort every row instead). The number takes 126 bits: a decimal of 38 digits holds it exactly.
    - the rows at the volume's last instant are grouped by their content (a key that is null on every other row), so
      that the few candidates for the latest row reach the second, small aggregation whole, and their order there is
      the reference's (more used bytes, then the rest in order).
    """
    pair = F.col("used_bytes").cast(PAIR_PART) * F.lit(PAIR_SHIFT).cast(PAIR_PART) + (
        F.col("at_us") - F.col("first_us")
    ).cast(PAIR_PART)
    at_last = F.when(F.col("at_us") == F.col("last_us"), F.struct(*LATEST_FIELDS))
    parts = windowed.groupBy("volume", "bucket", at_last.alias("candidate")).agg(
        F.max("used_bytes").alias("peak_used"),
        F.max(pair).alias("peak_pair"),
        F.count(F.lit(1)).alias("rows"),
        F.min("first_us").alias("first_us"),  # the volume's, the same on each row
    )
    peaks = parts.groupBy("volume", "bucket").agg(
        F.max("peak_used").alias("peak_used"),
        F.max("peak_pair").alias("peak_pair"),
        F.sum("rows").alias("rows"),
        F.min("first_us").alias("first_us"),
        F.max("candidate").alias("latest"),
    )
    offset = F.col("peak_pair") - F.col("peak_used").cast(PAIR_PART) * F.lit(PAIR_SHIFT).cast(PAIR_PART)
    return peaks.select(
        "volume",
        "bucket",
        "first_us",
        "peak_used",
        "rows",
        "latest",
        (F.col("first_us") + offset.cast("long")).alias("peak_at"),
    )


def _peak_fill_rates(windowed: DataFrame) -> DataFrame:
    """Per volume: the highest fill rate between two successive rows (step 9), null when no pair gives one.

    Unlike the peaks, this needs each row's predecessor: the rows are shuffled by volume and sorted by time, four
    narrow columns of them.
    """
    successive = Window.partitionBy("volume").orderBy("at_us", "usable_bytes", "total_bytes")
    rows = windowed.select("volume", "at_us", "usable_bytes", "total_bytes")
    pairs = rows.select(
        "volume",
        "at_us",
        "usable_bytes",
        "total_bytes",
        F.lag("at_us").over(successive).alias("previous_us"),
        F.lag("usable_bytes").over(successive).alias("previous_usable"),
        F.lag("total_bytes").over(successive).alias("previous_total"),
    )
    lost = F.greatest(F.col("previous_usable") - F.col("usable_bytes"), F.lit(0)).cast("double")
    seconds = (F.col("at_us") - F.col("previous_us")).cast("double") / MICROS_PER_SECOND
    rate = F.when(
        (F.col("at_us") > F.col("previous_us")) & (F.col("total_bytes") == F.col("previous_total")), lost / seconds
    )
    return pairs.groupBy("volume").agg(F.max(rate).alias("peak_fill_bytes_per_sec"))


def least_limit(  # pylint: disable=too-many-arguments
    rate: Column,
    check_interval: float,
    observation_seconds: float = 0.0,
    propagation_seconds: float = 0.0,
    in_flight_bytes: float = 0.0,
    replication_bytes: Column | float = 0.0,
) -> Column:
    """limit_sizing.least_limit_bytes before its rounding up, as a column of a rate column: the same operations in
    the same order (a double; whole_bytes rounds it up)."""
    seconds = limit_sizing.reaction_seconds(check_interval, observation_seconds, propagation_seconds)
    after = F.lit(float(in_flight_bytes)) + replication_bytes
    return rate * F.lit(seconds) + after


def least_limit_of_peak(rate: Column, check_interval: float) -> Column:
    """The least limit at ``rate`` with the plugin's measured parts (limit_sizing.plugin_parts), not rounded yet;
    null without a rate."""
    return least_limit(
        rate,
        check_interval,
        limit_sizing.PLUGIN_OBSERVATION_SECONDS,
        limit_sizing.PLUGIN_PROPAGATION_SECONDS,
        0.0,
        rate * limit_sizing.PLUGIN_AFTER_THROTTLE_SECONDS,
    )


def whole_bytes(least: Column) -> Column:
    """The least limit rounded up to whole bytes; null past the largest 64-bit number (a hostile rate: a limit that
    large exists on no volume, and Spark's ceil would fail the job)."""
    return F.when(least < F.lit(LARGEST_BYTES), F.ceil(least))


def _covers(limit: Column, least: Column) -> Column:
    """Whether a limit (usable bytes) keeps at least the least limit, in whole bytes; false past the largest 64-bit
    number, null without the limit or a rate."""
    whole = whole_bytes(least)
    return F.when(whole.isNotNull(), limit >= whole).when(least.isNotNull() & limit.isNotNull(), F.lit(False))


def _trends(peaks: DataFrame, span_frame: DataFrame, fill_rates: DataFrame) -> DataFrame:
    """Per volume: slope of peak used bytes over time (bytes/s, null under 3 buckets), the latest figures and the
    peak fill rate."""
    peak_seconds = (F.col("peak_at") - F.col("first_us")) / MICROS_PER_SECOND
    fitted = peaks.groupBy("volume").agg(
        _slope_in_bucket_order(
            F.collect_list(F.struct("bucket", peak_seconds.alias("x"), F.col("peak_used").cast("double").alias("y")))
        ).alias("fitted_slope"),
        F.count(F.lit(1)).alias("buckets"),
        F.sum("rows").alias("samples"),
        F.max("latest").alias("latest"),  # the bucket with the last instant holds it; the others null
    )
    per_volume = fitted.join(F.broadcast(span_frame), "volume").join(fill_rates, "volume", "left")
    slope = F.when(F.col("buckets") >= MIN_BUCKETS, F.col("fitted_slope"))
    return per_volume.select(
        *VOLUME_KEY,
        "samples",
        "buckets",
        "earliest_us",
        "first_us",
        "last_us",
        slope.alias("slope"),
        F.timestamp_micros("first_us").alias("first_at"),
        F.timestamp_micros("last_us").alias("last_at"),
        F.col("latest.total_bytes").alias("total_bytes"),
        F.col("latest.usable_bytes").alias("usable_bytes"),
        F.col("latest.used_bytes").alias("used_bytes"),
        F.when(F.col("latest.total_bytes") > 0, F.try_divide(F.col("latest.usable_bytes"), F.col("latest.total_bytes")))
        .otherwise(F.lit(0.0))
        .alias("usable_ratio"),
        F.col("latest.hard_type").alias("hard_limit_type"),
        F.col("latest.hard_level").alias("hard_limit_level"),
        (slope * SECONDS_PER_HOUR).alias("bytes_per_hour"),
        "peak_fill_bytes_per_sec",
    )


def _slope_in_bucket_order(points: Column) -> Column:
    """Spark's regr_slope(y, x) over an array of (bucket, x, y), taken in bucket order: the same updates of the
    means and co-moments as the aggregate, folded over the sorted array, so that the result does not depend on the
    order in which the buckets reach the aggregation (which follows the partitioning: local mode and a cluster would
    differ in the last bits). Null when x does not vary.

    y is taken relative to the first bucket's (the slope is the same): peaks are whole numbers of bytes, so the
    difference is exact, and small. Taken as they are, the running mean of peaks of tens of gigabytes is rounded to
    a few millionths of a byte at every step, which, against a volume that changes by a few thousand bytes over the
    window, is an error of several parts in a billion in the slope (the same error Spark's aggregate makes)."""
    in_order = F.array_sort(points)
    # The first bucket's y rides in the fold's state: it is read once per volume, not once per bucket.
    start = F.struct(
        in_order[0]["y"].alias("origin"),
        *[F.lit(0.0).alias(name) for name in ("n", "x_mean", "y_mean", "co_moment", "x_moment")],
    )

    def update(moments, point):
        n, y = moments["n"] + 1.0, point["y"] - moments["origin"]
        dx, dy = point["x"] - moments["x_mean"], y - moments["y_mean"]
        x_mean, y_mean = moments["x_mean"] + dx / n, moments["y_mean"] + dy / n
        return F.struct(
            moments["origin"].alias("origin"),
            n.alias("n"),
            x_mean.alias("x_mean"),
            y_mean.alias("y_mean"),
            (moments["co_moment"] + dx * (y - y_mean)).alias("co_moment"),
            (moments["x_moment"] + dx * (point["x"] - x_mean)).alias("x_moment"),
        )

    def finish(moments):
        return F.when(moments["x_moment"] != 0.0, moments["co_moment"] / moments["x_moment"])

    return F.aggregate(in_order, start, update, finish)


def _hard_limit_usable_bytes(limit_type: Column, level: Column, total: Column) -> Column:
    """Usable bytes at which the hard limit trips (usable <= this); null without a hard limit."""
    return (
        F.when(limit_type == "min_free_bytes", level)
        .when(limit_type == "min_free_percentage", total * level / 100.0)
        .when(limit_type == "consumed_space", total - level)
        .cast("double")
    )


def _plugin_limit_usable_bytes(config: "PipelineConfig", total: Column) -> Column:
    """Usable bytes at which the shipped plugin's limit trips (usable <= bytes, or usable / total <= ratio)."""
    if config.min_available_bytes is not None:
        return F.lit(float(config.min_available_bytes))
    if config.min_available_ratio is not None:
        return total * F.lit(float(config.min_available_ratio))
    return F.lit(None).cast("double")


def _seconds_to_limit(usable: Column, limit: Column, slope: Column, last_us: Column) -> Column:
    """Seconds from last_at until usable reaches the limit: 0 when already there, null when never
    (or past year 9999)."""
    seconds = F.try_divide(usable - limit, slope)
    latest_representable = (F.lit(MAX_TIMESTAMP_MICROS) - last_us).cast("double") / MICROS_PER_SECOND
    return (
        F.when(limit.isNull(), F.lit(None))
        .when(usable <= limit, F.lit(0.0))
        .when((slope > 0) & (seconds <= latest_representable), seconds)
        .cast("double")
    )


def _crossing_at(last_us: Column, seconds: Column) -> Column:
    """last_at + seconds, rounded to the microsecond; null when seconds is null."""
    return F.timestamp_micros(last_us + F.round(seconds * MICROS_PER_SECOND).cast("long"))


def _ranked(forecast: DataFrame) -> DataFrame:
    """rank 1 = the volume that crosses a limit first; volumes that never cross follow, least headroom first."""
    first_crossing = F.least(F.col("crosses_hard_limit_at"), F.col("crosses_plugin_limit_at"))
    # One partition on purpose: the output is one row per volume, and the rank is over all of them.
    order = Window.partitionBy(F.lit(0)).orderBy(
        first_crossing.asc_nulls_last(), F.col("usable_ratio").asc(), *[F.col(name).asc() for name in VOLUME_KEY]
    )
    return forecast.withColumn("rank", F.row_number().over(order))
