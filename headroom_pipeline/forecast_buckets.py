"""The forecast's buckets (forecast.py, steps 1, 2, 3, 5 and 9): per volume its span and latest row, per volume and
bucket what the forecast needs of the bucket's rows. Made from every row (a full run), or from the last run's buckets
and the new rows alone (an incremental run): both give the same buckets, so the same forecast.

A bucket's partial: its peak (used bytes, and their time), its rows, its first and last row in the fill rate's order
(at, usable, total), and the highest fill rate between two successive rows inside it. Two partials of adjacent
stretches of time combine without their rows: peaks and counts as they are, the fill rates with that of the pair that
joins them (the earlier's last row, the later's first). Buckets are fixed in time and a bucket of width 2^(k+1) is
two of width 2^k, so the last run's buckets take new rows, and a wider width, as the rows themselves would.
"""

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from headroom_pipeline import schemas

if TYPE_CHECKING:  # the caller hands the configuration over; its module is not needed at run time
    from headroom_pipeline.config import PipelineConfig

VOLUME_KEY = ["cluster", "broker_id", "log_dir"]
BUCKETS = 24
MICROS_PER_SECOND = 1_000_000
MAX_WINDOW_MICROS = 2**62  # any longer window keeps all history; keeps the subtraction in range
MAX_SHIFT = 58  # 23 * 2^58 > 2^62
# A bucket's peak and its time as one number, whose maximum is the peak with its latest time: used * 2^63 + at + 2^62
# (every timestamp's microseconds lie within 2^62 of the epoch, so both parts are below 2^63). 126 bits: a decimal
# of 38 digits holds it exactly, and the aggregation hashes it where a maximum of a struct would sort every row.
PAIR_PART = "decimal(20,0)"
PAIR_SHIFT = str(2**63)  # texts: Py4J passes a Python int only up to 2^63 - 1
AT_OFFSET = str(2**62)
# A volume's latest row (step 5), in the order that settles two rows at its last instant.
LATEST_FIELDS = ("used_bytes", "total_bytes", "usable_bytes", "hard_type", "hard_level")
# A bucket's partial, in the order that sorts partials of one bucket by time (first_at first).
PARTIAL_FIELDS = (
    "first_at",
    "first_usable",
    "first_total",
    "last_at",
    "last_usable",
    "last_total",
    "peak_used",
    "peak_at",
    "rows",
    "fill_rate",
)
LATEST_TYPE = T.StructType(
    [
        T.StructField("used_bytes", T.LongType()),
        T.StructField("total_bytes", T.LongType()),
        T.StructField("usable_bytes", T.LongType()),
        T.StructField("hard_type", T.StringType()),
        T.StructField("hard_level", T.DoubleType()),
    ]
)
KEY_FIELDS = [
    T.StructField("cluster", T.StringType()),
    T.StructField("broker_id", T.LongType()),
    T.StructField("log_dir", T.StringType()),
]
SPANS_SCHEMA = T.StructType(
    [
        T.StructField("volume", T.LongType()),
        *KEY_FIELDS,
        T.StructField("earliest_us", T.LongType()),
        T.StructField("last_us", T.LongType()),
        T.StructField("shift", T.IntegerType()),
        T.StructField("first_bucket", T.LongType()),
    ]
)
# What a run leaves of them (in its generation, beside its outputs): per volume and per kept bucket.
SAVED_VOLUMES = T.StructType(
    [
        *KEY_FIELDS,
        T.StructField("earliest_us", T.LongType()),
        T.StructField("last_us", T.LongType()),
        T.StructField("latest", LATEST_TYPE),
    ]
)
SAVED_PARTIALS = T.StructType(
    [
        *KEY_FIELDS,
        T.StructField("shift", T.IntegerType()),
        T.StructField("bucket", T.LongType()),
        *[T.StructField(name, T.DoubleType() if name == "fill_rate" else T.LongType()) for name in PARTIAL_FIELDS],
    ]
)


def bucket_shift(held: str) -> Column:
    """k of step 2 of the column named ``held`` (microseconds): the smallest k >= 0 with 23 * 2^k >= held (at most
    MAX_SHIFT, whose buckets hold every window), in whole numbers."""
    return F.expr(
        f"CAST(array_position(transform(sequence(0, {MAX_SHIFT}), k -> shiftleft(CAST({BUCKETS - 1} AS BIGINT), k) "
        f">= {held}), true) - 1 AS INT)"
    )


def window_micros(config: "PipelineConfig") -> int:
    return min(round(config.forecast_window * MICROS_PER_SECOND), MAX_WINDOW_MICROS)


class VolumeSpan(NamedTuple):
    """A volume's instants in microseconds, its earliest and last, its buckets' width 2^shift (step 2) and the first
    bucket whose rows the forecast keeps (step 1)."""

    cluster: Any
    broker_id: Any
    log_dir: Any
    earliest_us: int
    last_us: int
    shift: int
    first_bucket: int


@dataclasses.dataclass(frozen=True)
class VolumeSpans:
    """Every volume's span: on the driver (``spans``, which the decision timeline is sized from) and as a frame of
    SPANS_SCHEMA (``frame``, one row per volume; ``volume`` numbers the volumes for the forecast's groupings)."""

    frame: DataFrame
    spans: list[VolumeSpan]


def spans_frame(extents: DataFrame, config: "PipelineConfig") -> DataFrame:
    """``extents`` (VOLUME_KEY, earliest_us, last_us and any other columns, one row per volume) with the volume's
    number (``volume``), ``shift`` and ``first_bucket``: the columns of SPANS_SCHEMA first; kept by Spark."""
    window = F.lit(window_micros(config)).cast("long")
    held = extents.select("*", F.least(F.col("last_us") - F.col("earliest_us"), window).alias("held_us"))
    with_shift = held.select("*", bucket_shift("held_us").alias("shift"), window.alias("window_us"))
    first_bucket = F.expr("shiftright(last_us - window_us, shift)")
    return with_shift.select(
        F.monotonically_increasing_id().alias("volume"),
        *VOLUME_KEY,
        "earliest_us",
        "last_us",
        "shift",
        first_bucket.alias("first_bucket"),
        *[name for name in extents.columns if name not in SPANS_SCHEMA.fieldNames()],
    ).localCheckpoint()


def spans_of(frame: DataFrame, rows: Sequence[Any]) -> VolumeSpans:
    """VolumeSpans of a spans_frame and its collected ``rows``."""
    columns = SPANS_SCHEMA.fieldNames()
    spans = [VolumeSpan(*(row[name] for name in columns[1:])) for row in rows]
    return VolumeSpans(frame.select(*columns), spans)


def volume_spans(volumes: DataFrame, config: "PipelineConfig") -> VolumeSpans:
    """Every volume's span (step 1's earliest and last, step 2's width): one aggregation over the rows (partial on
    each task, one row per volume shuffled), kept and collected."""
    extents = (
        rows_of(volumes).groupBy(*VOLUME_KEY).agg(F.min("at_us").alias("earliest_us"), F.max("at_us").alias("last_us"))
    )
    frame = spans_frame(extents, config)
    return spans_of(frame, frame.collect())


@dataclasses.dataclass(frozen=True)
class Buckets:
    """The forecast's input: the volumes' spans, per volume its latest row (``latest``: volume, latest of LATEST_TYPE)
    and per volume and kept bucket its partial (``partials``: volume, bucket, PARTIAL_FIELDS); both small, kept by
    Spark."""

    spans: VolumeSpans
    latest: DataFrame
    partials: DataFrame


def buckets_of_rows(volumes: DataFrame, config: "PipelineConfig", spans: VolumeSpans | None = None) -> Buckets:
    """The buckets of every row of VOLUMES; ``spans``: volume_spans of the same rows when the caller has them."""
    if spans is None:
        spans = volume_spans(volumes, config)
    partials, latest = _partials_of_rows(rows_of(volumes), spans.frame)
    return Buckets(spans, latest.localCheckpoint(), partials.localCheckpoint())


def buckets_with_new_rows(spark: SparkSession, saved: str, new_volumes: DataFrame, config: "PipelineConfig") -> Buckets:
    """The buckets a run over every row would make, from those the last run saved in ``saved`` (save_buckets) and
    the rows of VOLUMES new since: every new row of a volume must be later than its last (ValueError otherwise)."""
    before = spark.read.schema(SAVED_VOLUMES).parquet(os.path.join(saved, "volumes"))
    new_rows = rows_of(new_volumes)
    new_extents = new_rows.groupBy(*VOLUME_KEY).agg(
        F.min("at_us").alias("new_earliest"), F.max("at_us").alias("new_last")
    )
    known = before.select(*VOLUME_KEY, F.col("earliest_us").alias("old_earliest"), F.col("last_us").alias("old_last"))
    extents = known.join(new_extents, VOLUME_KEY, "full").select(
        *VOLUME_KEY,
        F.coalesce("old_earliest", "new_earliest").alias("earliest_us"),
        F.greatest("old_last", "new_last").alias("last_us"),
        (F.col("new_earliest") <= F.col("old_last")).alias("late"),
    )
    frame = spans_frame(extents, config)
    rows = frame.collect()
    late = [tuple(row[name] for name in VOLUME_KEY) for row in rows if row["late"]]
    if late:
        raise ValueError(f"a new row of the volume {late[0]} is at or before its last row read before")
    spans = spans_of(frame, rows)
    new_partials, new_latest = _partials_of_rows(new_rows, spans.frame)
    earlier = _joined(spark.read.schema(SAVED_PARTIALS).parquet(os.path.join(saved, "partials")), spans.frame)
    widened = earlier.select(
        "volume",
        F.expr("shiftright(bucket, frame_shift - shift)").alias("bucket"),
        *PARTIAL_FIELDS,
    )
    partials = (
        _combined(widened.unionByName(new_partials))
        .join(F.broadcast(spans.frame.select("volume", "first_bucket")), "volume")
        .where(F.col("bucket") >= F.col("first_bucket"))
        .drop("first_bucket")
    )
    latest_before = _joined(before, spans.frame).select("volume", "latest")
    latest = latest_before.join(new_latest, "volume", "left_anti").unionByName(new_latest)
    return Buckets(spans, latest.localCheckpoint(), partials.localCheckpoint())


def save_buckets(buckets: Buckets, path: str) -> None:
    """What the next run's buckets_with_new_rows reads: the volumes and their kept buckets, by volume key."""
    keys = buckets.spans.frame.select("volume", *VOLUME_KEY, "earliest_us", "last_us", "shift")
    volumes = keys.join(buckets.latest, "volume", "left").select(*SAVED_VOLUMES.fieldNames())
    partials = buckets.partials.join(F.broadcast(keys), "volume").select(*SAVED_PARTIALS.fieldNames())
    volumes.coalesce(1).write.mode("overwrite").parquet(os.path.join(path, "volumes"))
    partials.coalesce(1).write.mode("overwrite").parquet(os.path.join(path, "partials"))


def rows_of(volumes: DataFrame) -> DataFrame:
    """The rows of VOLUMES the forecast reads, with used bytes and ``at`` in microseconds."""
    return schemas.reported_volumes(volumes).select(
        *VOLUME_KEY,
        "total_bytes",
        "usable_bytes",
        "hard_type",
        "hard_level",
        (F.col("total_bytes") - F.col("usable_bytes")).alias("used_bytes"),
        F.unix_micros("at").alias("at_us"),
    )


def _joined(rows: DataFrame, spans: DataFrame) -> DataFrame:
    """``rows`` with their volume's span (``volume``, ``frame_shift``, ``first_bucket``, ``last_us``), matched by
    broadcast, null-safely on the volume key, as a grouping groups them: no row is shuffled or sorted by volume."""
    keyed = spans.select(
        *[F.col(name).alias(f"_{name}") for name in VOLUME_KEY],
        "volume",
        F.col("shift").alias("frame_shift"),
        "first_bucket",
        F.col("last_us").alias("span_last_us"),
    )
    matched = [rows[name].eqNullSafe(keyed[f"_{name}"]) for name in VOLUME_KEY]
    return rows.join(F.broadcast(keyed), matched).drop(*[f"_{name}" for name in VOLUME_KEY])


def _partials_of_rows(rows: DataFrame, spans: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(partials, latest) of the rows (rows_of) in their volume's kept buckets (spans: SPANS_SCHEMA).

    The rows of each volume are sorted once, by time (the fill rate needs each row's predecessor, the first and last
    row of each bucket its neighbours); the aggregations that follow group where the rows already are. The rows at
    the volume's last instant are grouped by their content (a key that is null on every other row), so that the few
    candidates for the latest row reach the second, small aggregation whole, where their order is step 5's.
    """
    joined = _joined(rows, spans).select("*", F.expr("shiftright(at_us, frame_shift)").alias("bucket"))
    at_last = F.when(F.col("at_us") == F.col("span_last_us"), F.struct(*LATEST_FIELDS))
    # What the sort carries: five numbers a row, and the latest's candidates (null on every other row).
    kept = joined.where(F.col("bucket") >= F.col("first_bucket")).select(
        "volume", "bucket", "at_us", "usable_bytes", "total_bytes", at_last.alias("candidate")
    )
    successive = Window.partitionBy("volume").orderBy("at_us", "usable_bytes", "total_bytes")
    framed = kept.select(
        "*",
        F.lag("bucket").over(successive).alias("previous_bucket"),
        F.lag("at_us").over(successive).alias("previous_at"),
        F.lag("usable_bytes").over(successive).alias("previous_usable"),
        F.lag("total_bytes").over(successive).alias("previous_total"),
        F.lead("bucket").over(successive).alias("next_bucket"),
    )
    first = F.col("previous_bucket").isNull() | (F.col("previous_bucket") != F.col("bucket"))
    last = F.col("next_bucket").isNull() | (F.col("next_bucket") != F.col("bucket"))
    inside = F.when(
        ~first,
        fill_rate(
            F.col("previous_at"),
            F.col("previous_usable"),
            F.col("previous_total"),
            F.col("at_us"),
            F.col("usable_bytes"),
            F.col("total_bytes"),
        ),
    )
    used = F.col("total_bytes") - F.col("usable_bytes")
    pair = used.cast(PAIR_PART) * F.lit(PAIR_SHIFT).cast(PAIR_PART) + (
        F.col("at_us").cast(PAIR_PART) + F.lit(AT_OFFSET).cast(PAIR_PART)
    )
    ends = {
        "first_at": (first, "at_us"),
        "first_usable": (first, "usable_bytes"),
        "first_total": (first, "total_bytes"),
        "last_at": (last, "at_us"),
        "last_usable": (last, "usable_bytes"),
        "last_total": (last, "total_bytes"),
    }
    parts = framed.groupBy("volume", "bucket", "candidate").agg(
        F.max(used).alias("peak_used"),
        F.max(pair).alias("peak_pair"),
        F.count(F.lit(1)).alias("rows"),
        F.max(inside).alias("fill_rate"),
        *[F.max(F.when(which, F.col(column))).alias(name) for name, (which, column) in ends.items()],
    )
    per_bucket = parts.groupBy("volume", "bucket").agg(
        F.max("peak_used").alias("peak_used"),
        F.max("peak_pair").alias("peak_pair"),
        F.sum("rows").alias("rows"),
        F.max("fill_rate").alias("fill_rate"),
        *[F.max(name).alias(name) for name in ends],
        F.max("candidate").alias("latest"),
    )
    at = F.col("peak_pair") - F.col("peak_used").cast(PAIR_PART) * F.lit(PAIR_SHIFT).cast(PAIR_PART)
    partials = per_bucket.select(
        "volume",
        "bucket",
        *[
            (at - F.lit(AT_OFFSET).cast(PAIR_PART)).cast("long").alias(name) if name == "peak_at" else name
            for name in PARTIAL_FIELDS
        ],
        "latest",
    )
    latest = partials.where(F.col("latest").isNotNull()).select("volume", "latest")
    return partials.drop("latest"), latest


def fill_rate(  # pylint: disable=too-many-arguments
    before_at: Column, before_usable: Column, before_total: Column, at: Column, usable: Column, total: Column
) -> Column:
    """Step 9's rate between two successive rows: free bytes lost per second; null at one instant or across two sizes
    (another file system)."""
    lost = F.greatest(before_usable - usable, F.lit(0)).cast("double")
    seconds = (at - before_at).cast("double") / MICROS_PER_SECOND
    return F.when((at > before_at) & (total == before_total), lost / seconds)


def highest_fill_rate(partials: Column) -> Column:
    """The highest fill rate over an array of partials in time order: each one's own, and each pair that joins two
    successive ones; null when none gives one."""
    size = F.size(partials)
    joins = F.zip_with(
        F.slice(partials, 1, size - 1),
        F.slice(partials, 2, size - 1),
        lambda before, after: fill_rate(
            before["last_at"],
            before["last_usable"],
            before["last_total"],
            after["first_at"],
            after["first_usable"],
            after["first_total"],
        ),
    )
    return F.greatest(F.array_max(F.transform(partials, lambda part: part["fill_rate"])), F.array_max(joins))


def _combined(partials: DataFrame) -> DataFrame:
    """One partial per (volume, bucket) of several, whose rows follow one another in time."""
    grouped = partials.groupBy("volume", "bucket").agg(
        F.array_sort(F.collect_list(F.struct(*PARTIAL_FIELDS))).alias("parts"),
        F.sum("rows").alias("rows"),
    )
    peak = F.array_max(
        F.transform(
            "parts", lambda part: F.struct(part["peak_used"].alias("peak_used"), part["peak_at"].alias("peak_at"))
        )
    )
    size = F.size("parts")
    values = {
        **{name: F.col("parts")[0][name] for name in PARTIAL_FIELDS if name.startswith("first_")},
        **{name: F.element_at("parts", size)[name] for name in PARTIAL_FIELDS if name.startswith("last_")},
        "peak_used": peak["peak_used"],
        "peak_at": peak["peak_at"],
        "rows": F.col("rows"),
        "fill_rate": highest_fill_rate(F.col("parts")),
    }
    return grouped.select("volume", "bucket", *[values[name].alias(name) for name in PARTIAL_FIELDS])
