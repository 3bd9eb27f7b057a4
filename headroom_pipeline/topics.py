"""Stage 4: per-topic bytes-in thresholds under a broker-wide total, and when the traffic would trip them.

The rules are topic_thresholds' (plan validation, implicit thresholds, the Meter's one-minute EWMA, the
rejection rule); this module applies them with DataFrame expressions only, and both pass the vectors in
tests/vectors/topic_thresholds.json.

Each broker's traffic instants form its timeline: a row stamped ts counts bytes in (previous instant of the broker, ts],
and the broker's first instant is taken to cover as long as the gap to its second (a broker seen at one instant only
has no rate). The broker meter sees every row, the topic meters their topic's rows (rows without a topic count for
the broker only); a topic without rows in an interval is idle in it. Each meter starts at its first interval's rate.
A broker's topics, which share the implicit threshold, are those with rows on it anywhere in the analysed traffic:
the share does not change as topics come and go within the period.

The EWMA is a sequential recurrence: per meter the points are collected in time order and folded with ``aggregate``
in the JVM, in chunks of EWMA_CHUNK points so that the work stays linear in the series' length: a first fold carries
the meter's state from chunk to chunk, then each chunk is folded again from its carried state to emit every point.

Rejected bytes are not taken out of the meters: the analysis shows what would trip with the traffic as it was, an
upper bound of what the broker would reject (a broker that rejects produce lowers its own rates).
"""

import json
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from headroom_pipeline import topic_thresholds
from headroom_pipeline.config import ConfigError, PipelineConfig

EWMA_CHUNK = 512
MICROS = 1000000.0
STATE_TYPE = "struct<rate:double,last_us:bigint>"
OUT_TYPE = "array<struct<ts_us:bigint,bytes:bigint,rate:double>>"
DEFAULT_SCOPE = -1  # explicit thresholds of the plan itself (broker ids are >= 0)
THRESHOLD_COLUMNS = [
    "broker_id",
    "topic",
    "total_threshold",
    "topic_threshold",
    "threshold_kind",
    "explicit_threshold_sum",
    "implicit_topics",
]
WINDOW_COLUMNS = [
    "broker_id",
    "topic",
    "ts",
    "total_ewma",
    "topic_ewma",
    "total_threshold",
    "topic_threshold",
    "threshold_kind",
    "bytes_rejected",
]


def load_plan(path: str, option: str = "--topic-thresholds") -> dict[str, Any]:
    """The validated plan from a JSON file; ConfigError naming the option, the file and the problem."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"{option}: cannot read {path!r}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"{option}: {path!r} is not JSON: {exc}") from None
    return _validated(document, option)


def _validated(plan, option="--topic-thresholds"):
    try:
        return topic_thresholds.validate_plan(plan)
    except topic_thresholds.TopicThresholdError as exc:
        raise ConfigError(f"{option}: {exc}") from None


def topic_analysis(
    traffic: DataFrame, plan: dict[str, Any], config: PipelineConfig | None = None, chunk: int = EWMA_CHUNK
) -> tuple[DataFrame, DataFrame]:
    """(thresholds_df, windows_df) from TRAFFIC_ROWS and a plan (as load_plan returns it, or raw; it is validated).

    thresholds_df: one row per (broker_id, topic) with traffic: the broker's total threshold, the topic's threshold
    and whether it is explicit or implicit, the explicit thresholds' sum and the number of implicit topics.
    windows_df: one row per (broker_id, topic, ts) at which the broker's and the topic's one-minute rates are both
    above their thresholds, with both rates, both thresholds and the topic's bytes of that interval (bytes_rejected).
    ``config`` is accepted for the stage's common signature; no setting applies.
    """
    del config
    plan = _validated(plan)
    rows = traffic.select("broker_id", "topic", F.unix_micros("ts").alias("ts_us"), "bytes_in")
    intervals = _broker_intervals(rows)
    topic_points = (
        rows.where(F.col("topic").isNotNull())
        .groupBy("broker_id", "topic", "ts_us")
        .agg(F.sum("bytes_in").alias("bytes"))
        .join(intervals.select("broker_id", "ts_us", "start_us"), ["broker_id", "ts_us"])
    )
    total_rates = meter_rates(intervals, ["broker_id"], chunk).select(
        "broker_id", "ts_us", F.col("rate").alias("total_ewma")
    )
    topic_rates = meter_rates(topic_points, ["broker_id", "topic"], chunk).withColumnRenamed("rate", "topic_ewma")
    thresholds = _thresholds(rows, plan)
    rated = topic_rates.join(total_rates, ["broker_id", "ts_us"]).join(thresholds, ["broker_id", "topic"])
    over = (F.col("total_ewma") > F.col("total_threshold")) & (F.col("topic_ewma") > F.col("topic_threshold"))
    windows = rated.where(over).select(
        "*", F.timestamp_micros("ts_us").alias("ts"), F.col("bytes").alias("bytes_rejected")
    )
    return thresholds.select(*THRESHOLD_COLUMNS), windows.select(*WINDOW_COLUMNS)


# -- the meters ---------------------------------------------------------------------------------------------------
def _broker_intervals(rows: DataFrame) -> DataFrame:
    """(broker_id, ts_us, start_us, bytes) per broker instant; see topic_thresholds.interval_starts."""
    points = rows.groupBy("broker_id", "ts_us").agg(F.sum("bytes_in").alias("bytes"))
    by_time = Window.partitionBy("broker_id").orderBy("ts_us")
    ts_us = F.col("ts_us")
    start = F.coalesce(F.lag(ts_us).over(by_time), ts_us - (F.lead(ts_us).over(by_time) - ts_us))
    return points.withColumn("start_us", start).where(F.col("start_us").isNotNull())


def meter_update(previous: Column, rate: Column, seconds: Column) -> Column:
    """topic_thresholds.meter_update for a started meter, as a column."""
    return rate + (previous - rate) * F.exp(-seconds / F.lit(topic_thresholds.ONE_MINUTE_SECONDS))


def meter_step(state: Column, point: Column) -> Column:
    """topic_thresholds.meter_step: the meter's (rate, last_us) after one point (ts_us, start_us, bytes)."""
    seconds = (point["ts_us"] - point["start_us"]) / F.lit(MICROS)
    rate = point["bytes"] / seconds
    idle = meter_update(state["rate"], F.lit(0.0), (point["start_us"] - state["last_us"]) / F.lit(MICROS))
    updated = F.when(state["rate"].isNull(), rate).otherwise(meter_update(idle, rate, seconds))
    return F.struct(updated.alias("rate"), point["ts_us"].alias("last_us"))


def _chunk_rates(carry: Column, chunk: Column) -> Column:
    """Every point of a chunk with the meter's rate after it, folding on from the carried state."""
    start = F.struct(carry.alias("state"), F.array().cast(OUT_TYPE).alias("out"))

    def step(acc, point):
        state = meter_step(acc["state"], point)
        emitted = F.struct(point["ts_us"].alias("ts_us"), point["bytes"].alias("bytes"), state["rate"].alias("rate"))
        return F.struct(state.alias("state"), F.array_append(acc["out"], emitted).alias("out"))

    return F.aggregate(chunk, start, step)["out"]


def meter_rates(points: DataFrame, keys: list[str], chunk: int = EWMA_CHUNK) -> DataFrame:
    """(keys..., ts_us, bytes, rate) for every point of every meter; points: keys, ts_us, start_us, bytes."""
    series = points.groupBy(*keys).agg(
        F.array_sort(F.collect_list(F.struct("ts_us", "start_us", "bytes"))).alias("points")
    )
    chunk_count = F.ceil(F.size("points") / F.lit(float(chunk))).cast("int")
    series = series.select(
        *keys,
        F.transform(
            F.sequence(F.lit(0), chunk_count - 1), lambda index: F.slice("points", index * chunk + 1, F.lit(chunk))
        ).alias("chunks"),
    )
    fresh = F.lit(None).cast(STATE_TYPE)
    carried = F.struct(fresh.alias("state"), F.array().cast(f"array<{STATE_TYPE}>").alias("carries"))
    carries = F.aggregate(
        "chunks",
        carried,
        lambda acc, points_of_chunk: F.struct(
            F.aggregate(points_of_chunk, acc["state"], meter_step).alias("state"),
            F.array_append(acc["carries"], acc["state"]).alias("carries"),
        ),
    )["carries"]
    pieces = series.select(*keys, F.explode(F.arrays_zip(F.col("chunks"), carries.alias("carries"))).alias("piece"))
    emitted = pieces.select(
        *keys, F.explode(_chunk_rates(F.col("piece.carries"), F.col("piece.chunks"))).alias("point")
    )
    return emitted.select(*keys, "point.ts_us", "point.bytes", "point.rate")


# -- thresholds ---------------------------------------------------------------------------------------------------
def _thresholds(rows: DataFrame, plan: dict) -> DataFrame:
    """Per (broker_id, topic) with traffic: see topic_thresholds.topic_threshold."""
    spark = rows.sparkSession
    present = rows.where(F.col("topic").isNotNull()).select("broker_id", "topic").distinct()
    default_total, default_explicit = plan[topic_thresholds.TOTAL], plan["topics"]
    overrides = {int(broker): topic_thresholds.broker_plan(plan, int(broker)) for broker in plan["brokers"]}
    broker_rows = [
        (broker, total, topic_thresholds.explicit_sum(explicit)) for broker, (total, explicit) in overrides.items()
    ]
    explicit_rows = [(DEFAULT_SCOPE, topic, value) for topic, value in default_explicit.items()]
    explicit_rows += [
        (broker, topic, value)
        for broker, (unused_total, explicit) in overrides.items()
        for topic, value in explicit.items()
    ]
    brokers = spark.createDataFrame(broker_rows, "override_broker_id long, override_total double, override_sum double")
    explicit = spark.createDataFrame(explicit_rows, "scope long, explicit_topic string, explicit_threshold double")
    table = present.join(F.broadcast(brokers), present["broker_id"] == brokers["override_broker_id"], "left")
    overridden = F.col("override_broker_id").isNotNull()
    table = table.select(
        "broker_id",
        "topic",
        F.when(overridden, F.col("broker_id")).otherwise(F.lit(DEFAULT_SCOPE).cast("long")).alias("scope_key"),
        F.coalesce("override_total", F.lit(float(default_total))).alias("total_threshold"),
        F.coalesce("override_sum", F.lit(topic_thresholds.explicit_sum(default_explicit))).alias(
            "explicit_threshold_sum"
        ),
    )
    matched = (table["scope_key"] == explicit["scope"]) & (table["topic"] == explicit["explicit_topic"])
    table = table.join(F.broadcast(explicit), matched, "left")
    implicit_topics = F.count(F.when(F.col("explicit_threshold").isNull(), 1)).over(Window.partitionBy("broker_id"))
    table = table.withColumn("implicit_topics", implicit_topics)
    implicit = F.when(
        F.col("implicit_topics") > 0,
        (F.col("total_threshold") - F.col("explicit_threshold_sum")) / F.col("implicit_topics"),
    )
    return table.select(
        "broker_id",
        "topic",
        "total_threshold",
        F.coalesce("explicit_threshold", implicit).alias("topic_threshold"),
        F.when(F.col("explicit_threshold").isNotNull(), F.lit(topic_thresholds.EXPLICIT))
        .otherwise(F.lit(topic_thresholds.IMPLICIT))
        .alias("threshold_kind"),
        "explicit_threshold_sum",
        "implicit_topics",
    )
