"""Volume forecast: how fast each volume's used bytes grow and when its limits will be crossed, every volume ranked.

Input: the VOLUMES frame (one row per cluster, broker_id, log_dir and snapshot time ``at``); used bytes are
``total_bytes - usable_bytes``. Output: one row per volume (cluster, broker_id, log_dir).

The algorithm is fixed: the benchmark reimplements it in pandas and DuckDB SQL and every implementation must pass
tests/vectors/volume_forecast.json. Times are whole microseconds since the epoch (UTC) throughout. forecast_buckets.py
makes each volume's buckets (steps 1 and 2, the peaks of step 3, the latest row of step 5 and the fill rates of step
9), from the rows or from the last run's buckets and the new rows; this module fits, limits and ranks.

1. Window. Per volume, over all its rows: ``earliest`` and ``last_at``, the earliest and latest ``at``. The rows
   kept are those of the buckets (step 2) that hold an instant within forecast_window of the last row:
   ``bucket >= floor((last_at - forecast_window) / 2^k)``. A volume younger than the window keeps its whole history,
   an older one its last forecast_window and the rest of the bucket where that begins. ``samples`` = rows kept,
   ``first_at`` = the earliest ``at`` kept.
2. Buckets. Fixed in time: of width 2^k microseconds, aligned to the epoch (``bucket = floor(at / 2^k)``), with k the
   smallest k >= 0 for which 23 buckets hold ``min(last_at - earliest, forecast_window)``: the rows kept lie in at most
   24 buckets and, past 23 microseconds, in more than 11. A bucket keeps its rows while later rows arrive, and a bucket
   of width 2^(k+1) is two of width 2^k: a run that has the last run's buckets adds the new rows to them and gives the
   figures a run over every row gives (incremental runs, headroom_pipeline/incremental.py).
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

from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F

from ansible_collections.headroom.kafka.plugins.module_utils import limit_sizing
from headroom_pipeline.forecast_buckets import (
    BUCKETS,
    MICROS_PER_SECOND,
    VOLUME_KEY,
    Buckets,
    VolumeSpan,
    VolumeSpans,
    buckets_of_rows,
    highest_fill_rate,
    volume_spans,
)

if TYPE_CHECKING:  # the caller hands the configuration over; its module is not needed at run time
    from headroom_pipeline.config import PipelineConfig

__all__ = ["BUCKETS", "Buckets", "VolumeSpan", "VolumeSpans", "volume_forecast", "volume_spans"]

MIN_BUCKETS = 3
SECONDS_PER_HOUR = 3600.0
MAX_TIMESTAMP_MICROS = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z, the last instant a timestamp holds
LARGEST_BYTES = float(2**63)  # the first whole number of bytes a 64-bit column cannot hold

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


def volume_forecast(
    volumes: DataFrame,
    config: "PipelineConfig",
    spans: VolumeSpans | None = None,
    observation: Observation | None = None,
) -> DataFrame:
    """One row per volume: latest figures, growth trend, limit crossings and rank (see the module docstring), of
    every row of VOLUMES. ``spans``: volume_spans of the same volumes when the caller has them (computed here
    otherwise: that runs a query). ``observation``: as for forecast_of_buckets."""
    return forecast_of_buckets(buckets_of_rows(volumes, config, spans), config, observation)


def forecast_of_buckets(
    buckets: Buckets, config: "PipelineConfig", observation: Observation | None = None
) -> DataFrame:
    """The forecast of the volumes' buckets (forecast_buckets.py). ``observation``: a pyspark Observation that the
    first action on the result fills with FORECAST_COUNTS."""
    trends = _trends(buckets)
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


def _trends(buckets: Buckets) -> DataFrame:
    """Per volume: slope of peak used bytes over time (bytes/s, null under 3 buckets), the latest figures and the
    peak fill rate, from its kept buckets in bucket order."""
    fields = ["bucket", "peak_at", "peak_used", "first_at", "first_usable", "first_total"]
    fields += ["last_at", "last_usable", "last_total", "fill_rate"]
    per_volume = buckets.partials.groupBy("volume").agg(
        F.array_sort(F.collect_list(F.struct(*fields))).alias("in_order"),
        F.sum("rows").alias("samples"),
        F.min("first_at").alias("first_us"),
    )
    points = F.transform(
        "in_order",
        lambda part: F.struct(
            part["bucket"].alias("bucket"),
            ((part["peak_at"] - F.col("first_us")) / MICROS_PER_SECOND).alias("x"),
            part["peak_used"].cast("double").alias("y"),
        ),
    )
    spans = buckets.spans.frame.select("volume", *VOLUME_KEY, "last_us")
    fitted = (
        per_volume.select(
            "volume",
            "samples",
            "first_us",
            F.size("in_order").cast("long").alias("buckets"),
            _slope_in_bucket_order(points).alias("fitted_slope"),
            highest_fill_rate(F.col("in_order")).alias("peak_fill_bytes_per_sec"),
        )
        .join(F.broadcast(spans), "volume")
        .join(buckets.latest, "volume")
    )
    slope = F.when(F.col("buckets") >= MIN_BUCKETS, F.col("fitted_slope"))
    return fitted.select(
        *VOLUME_KEY,
        "samples",
        "buckets",
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
