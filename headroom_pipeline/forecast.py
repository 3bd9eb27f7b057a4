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
4. Trend. ``slope = regr_slope(peak, t)`` over the buckets with ``t`` in seconds (``(t - first_at) / 1e6``; the
   shift does not change the slope), bytes per second; null when fewer than 3 buckets.
   ``bytes_per_hour = slope * 3600``.
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

Rows are assumed valid (ingest rejects the others): sizes known, 0 <= usable <= total.
"""

from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F

if TYPE_CHECKING:  # the configuration's module sets up the collection's imports, which the forecast does not need
    from headroom_pipeline.config import PipelineConfig

VOLUME_KEY = ["cluster", "broker_id", "log_dir"]
BUCKETS = 24
MIN_BUCKETS = 3
MICROS_PER_SECOND = 1_000_000
SECONDS_PER_HOUR = 3600.0
MAX_TIMESTAMP_MICROS = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z, the last instant a timestamp holds
MAX_WINDOW_MICROS = 2**62  # any longer window keeps all history; keeps the subtraction in range

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
    "rank",
]


# What volume_forecast's observation collects: the summary's counts, and each volume's whole span of samples (not
# only the forecast window's), from which the job bounds the decision timeline's size without a query of its own.
FORECAST_COUNTS = ("volumes", "crossing_hard_limit")
VOLUME_SPANS = "volume_spans"


def volume_forecast(volumes: DataFrame, config: "PipelineConfig", observation: Observation | None = None) -> DataFrame:
    """One row per volume: latest figures, growth trend, limit crossings and rank (see the module docstring).

    ``observation``: a pyspark Observation that the first action on the result fills with FORECAST_COUNTS and
    VOLUME_SPANS (a list of (cluster, earliest_us, last_us), one per volume: all its samples, in microseconds).
    """
    windowed = _in_window(volumes, config.forecast_window)
    peaks = _bucket_peaks(windowed)
    trends = _trends(peaks)
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
    crossings = with_limits.select("*", hard_seconds.alias("hard_seconds"), plugin_seconds.alias("plugin_seconds"))
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
            F.collect_list(F.struct("cluster", "earliest_us", "last_us")).alias(VOLUME_SPANS),
        )
    return ranked.select(*OUTPUT_COLUMNS)


def _in_window(volumes: DataFrame, window_seconds: float) -> DataFrame:
    """Rows within the forecast window of their volume's last row, with at_us, last_us, first_us, earliest_us (of all
    the volume's rows), used_bytes and bucket.

    Aggregations and joins instead of a window per volume: a window would shuffle and sort every row by volume,
    while each volume's last and first instants are two small aggregations (partial on each task, one row per volume
    shuffled), joined back by broadcast (one row per volume). The volumes are matched null-safely, as a window's
    partition would group them.
    """
    window_micros = min(round(window_seconds * MICROS_PER_SECOND), MAX_WINDOW_MICROS)
    rows = volumes.select(
        *VOLUME_KEY,
        "total_bytes",
        "usable_bytes",
        "hard_type",
        "hard_level",
        (F.col("total_bytes") - F.col("usable_bytes")).alias("used_bytes"),
        F.unix_micros("at").alias("at_us"),
    )
    lasts = rows.groupBy(*VOLUME_KEY).agg(F.max("at_us").alias("last_us"), F.min("at_us").alias("earliest_us"))
    recent = _joined(rows, lasts).where(F.col("at_us") >= F.col("last_us") - F.lit(window_micros))
    firsts = recent.groupBy(*VOLUME_KEY).agg(F.min("at_us").alias("first_us"))
    windowed = _joined(recent, firsts)
    return windowed.withColumn(
        "bucket", _bucket(F.col("at_us") - F.col("first_us"), F.col("last_us") - F.col("first_us"))
    )


def _joined(rows: DataFrame, per_volume: DataFrame) -> DataFrame:
    """``rows`` with the columns of ``per_volume`` (one row per volume), matched null-safely on the volume."""
    keyed = per_volume.select(
        *[F.col(name).alias(f"_{name}") for name in VOLUME_KEY],
        *[name for name in per_volume.columns if name not in VOLUME_KEY],
    )
    matched = [rows[name].eqNullSafe(keyed[f"_{name}"]) for name in VOLUME_KEY]
    return rows.join(F.broadcast(keyed), matched).drop(*[f"_{name}" for name in VOLUME_KEY])


def _bucket(offset_micros: Column, span_micros: Column) -> Column:
    """min(floor(24 * offset / span), 23); 0 for every row when span is 0 (then there is no trend)."""
    index = F.floor(F.try_divide(offset_micros * BUCKETS, span_micros))
    return F.when(span_micros > 0, F.least(index, F.lit(BUCKETS - 1))).otherwise(F.lit(0).cast("long"))


def _latest_row() -> Column:
    """The row at the latest at (ties: more used bytes), as a struct whose max is that row."""
    return F.struct("at_us", "used_bytes", "total_bytes", "usable_bytes", "hard_type", "hard_level")


def _bucket_peaks(windowed: DataFrame) -> DataFrame:
    """Per volume and bucket: the peak used bytes and its time (ties: the later), the rows and
    the bucket's latest row."""
    return windowed.groupBy(*VOLUME_KEY, "earliest_us", "first_us", "last_us", "bucket").agg(
        F.max(F.struct("used_bytes", "at_us")).alias("peak"),
        F.count(F.lit(1)).alias("rows"),
        F.max(_latest_row()).alias("latest"),
    )


def _trends(peaks: DataFrame) -> DataFrame:
    """Per volume: slope of peak used bytes over time (bytes/s, null under 3 buckets) and the latest figures."""
    peak_seconds = (F.col("peak.at_us") - F.col("first_us")) / MICROS_PER_SECOND
    per_volume = peaks.groupBy(*VOLUME_KEY, "earliest_us", "first_us", "last_us").agg(
        F.regr_slope(F.col("peak.used_bytes").cast("double"), peak_seconds).alias("fitted_slope"),
        F.count(F.lit(1)).alias("buckets"),
        F.sum("rows").alias("samples"),
        F.max("latest").alias("latest"),
    )
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
    )


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
