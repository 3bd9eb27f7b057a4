"""The data of the report, reduced in Spark from the job's outputs: a few thousand rows collected, whatever the fleet.

Each history is downsampled to at most HISTORY_POINTS time buckets, and only a bounded number of clusters, volumes,
clients and topics is collected. Instants are collected as UTC epoch seconds (collected datetimes would be in the
driver's local zone) and handed on as aware datetimes, except the forecast rows of the charted volumes, which the
charts compute with.
"""

import dataclasses
import datetime
import os
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from headroom_pipeline import guard_comparison, schemas, stage_registry
from headroom_pipeline.report_charts import VOLUMES_PER_CHART
from headroom_pipeline.report_format import utc

HISTORY_POINTS = 300  # time buckets per volume (or per cluster and policy) drawn
NEXT_VOLUMES = 20  # rows of the "fill up next" table
TOP_CLIENTS = 15
TOP_TOPICS = 10
# Differences between the guard and the replay listed on the page (all of them are in guard_comparison/).
MAX_GUARD_DIFFERENCES = 500
READ = ("volumes", "decisions", "forecast", "clients", "client_recommendations", "topics", "guard_comparison")


@dataclasses.dataclass
class ReportData:  # pylint: disable=too-many-instance-attributes
    """What the charts and the page show; None where the output it comes from was not written by this run."""

    clusters: list[str]  # the clusters drawn: at most max_clusters, those whose volumes cross their hard limit first
    cluster_count: int  # how many clusters there are
    # {cluster: [forecast row of a volume drawn, epoch seconds]}, those that fill first
    chart_volumes: dict[str, list[dict[str, Any]]]
    # {(cluster, broker_id, log_dir): ([datetime], [usable bytes])}
    history: dict[tuple[str, int, str], tuple[list[datetime.datetime], list[int]]]
    # {cluster: {policy: ([datetime], [throttle factor])}}
    timelines: dict[str, dict[str, tuple[list[datetime.datetime], list[float]]]]
    next_volumes: list[dict[str, Any]] | None  # the NEXT_VOLUMES volumes that fill up first
    not_open: dict[str, Any] | None  # {"rows": clusters not OPEN at their latest decision, "count": how many}
    clients: dict[str, Any] | None  # the clients nearest their quota, and counts
    topics: list[dict[str, Any]] | None  # the topics most often over their threshold
    links: list[tuple[str, str]]  # [(output name, description)] of the outputs of this run in the directory
    # {"figures": guard comparison counts, "differences": [row], "more": differences not listed}; None without one
    guard: dict[str, Any] | None = None


def gather(spark: SparkSession, out_dir: str, summary: dict[str, Any], max_clusters: int) -> ReportData:
    """The report's data from the outputs in ``out_dir`` that the run of ``summary`` wrote."""
    outputs = {
        name: _read(spark, os.path.join(out_dir, name)) if stage_registry.written(name, summary) else None
        for name in READ
    }
    clusters, cluster_count = _chosen_clusters(outputs, max_clusters)
    chart_volumes = _chart_volumes(outputs["forecast"], clusters)
    return ReportData(
        clusters=clusters,
        cluster_count=cluster_count,
        chart_volumes=chart_volumes,
        history=_volume_history(outputs["volumes"], outputs["forecast"] is not None, chart_volumes, clusters),
        timelines=_throttle_timelines(outputs["decisions"], clusters),
        next_volumes=_next_volumes(outputs["forecast"]),
        not_open=_clusters_not_open(outputs["decisions"]),
        clients=_top_clients(outputs["clients"], outputs["client_recommendations"]),
        topics=_top_topics(outputs["topics"]),
        guard=_guard_beside_replay(outputs["guard_comparison"], summary),
        links=[
            (output.name, output.description)
            for output in stage_registry.OUTPUTS
            if output.stage is not stage_registry.REPORT
            and stage_registry.written(output.name, summary)
            and os.path.exists(os.path.join(out_dir, output.name))
        ],
    )


def _read(spark, path):
    """The Parquet output at ``path``, or None when the job did not write it (optional outputs)."""
    if not os.path.isdir(path):
        return None
    try:
        return spark.read.parquet(path)
    except AnalysisException:  # a directory without Parquet files: nothing to read
        return None


def _epoch_seconds(column):
    """Timestamps travel to the driver as UTC epoch seconds: collected datetimes would be in the driver's local zone."""
    return F.unix_micros(column) / 1_000_000.0


def _chosen_clusters(outputs, max_clusters):
    """At most ``max_clusters`` cluster names, those whose volumes cross their hard limit first; and how
    many there are."""
    forecast, volumes = outputs["forecast"], outputs["volumes"]
    if forecast is not None:
        ranked = forecast.groupBy("cluster").agg(
            F.min("crosses_hard_limit_at").alias("first_crossing"), F.min("rank").alias("best_rank")
        )
        ordered = ranked.orderBy(
            F.col("first_crossing").asc_nulls_last(), F.col("best_rank").asc_nulls_last(), "cluster"
        )
    elif volumes is not None:
        ranked = volumes.select("cluster").distinct()
        ordered = ranked.orderBy("cluster")
    else:
        return [], 0
    chosen = [row["cluster"] for row in ordered.select("cluster").limit(max_clusters).collect()]
    count = len(chosen) if len(chosen) < max_clusters else ranked.count()
    return chosen, count


def _chart_volumes(forecast, clusters):
    """Per cluster, the forecast rows of the volumes that fill first (at most VOLUMES_PER_CHART)."""
    if forecast is None or not clusters:
        return {}
    by_rank = Window.partitionBy("cluster").orderBy(F.col("rank").asc_nulls_last(), "broker_id", "log_dir")
    rows = (
        forecast.where(F.col("cluster").isin(clusters))
        .withColumn("place", F.row_number().over(by_rank))
        .where(F.col("place") <= VOLUMES_PER_CHART)
        .select(
            "cluster",
            "broker_id",
            "log_dir",
            "place",
            "usable_bytes",
            "hard_limit_usable_bytes",
            "plugin_limit_usable_bytes",
            "bytes_per_hour",
            _epoch_seconds(F.col("last_at")).alias("last_at"),
            _epoch_seconds(F.col("crosses_hard_limit_at")).alias("crosses_hard_limit_at"),
        )
        .collect()
    )
    chosen = {}
    for row in sorted(rows, key=lambda row: (row["cluster"], row["place"])):
        chosen.setdefault(row["cluster"], []).append(row.asDict())
    return chosen


def _downsample(frame, keys, value, how):
    """At most HISTORY_POINTS rows per ``keys``: equal time buckets over each key's own span, ``how`` of ``value``
    in each.

    Each bucket keeps its earliest instant, so a downsampled line keeps its time order and never invents a time.
    """
    span = Window.partitionBy(*keys)
    timed = (
        frame.withColumn("at_micros", F.unix_micros("at"))
        .withColumn("first_micros", F.min("at_micros").over(span))
        .withColumn("last_micros", F.max("at_micros").over(span))
    )
    # In doubles: the bucket arithmetic must not overflow (ANSI mode raises) and the +1 keeps the divisor positive.
    offset = (F.col("at_micros") - F.col("first_micros")).cast("double")
    width = (F.col("last_micros") - F.col("first_micros")).cast("double") + 1.0
    bucket = F.floor(offset * HISTORY_POINTS / width).alias("bucket")
    return (
        timed.groupBy(*keys, bucket)
        .agg(F.min("at_micros").alias("at_micros"), how(value).alias(value))
        .select(*keys, (F.col("at_micros") / 1_000_000.0).alias("at"), value)
    )


def _volume_history(volumes_frame, have_forecast, volumes, clusters):
    """{(cluster, broker_id, log_dir): ([datetime], [usable bytes])}, the lowest free space of each time bucket."""
    if volumes_frame is None or not clusters:
        return {}
    frame = schemas.reported_volumes(volumes_frame).where(F.col("cluster").isin(clusters))
    if have_forecast:
        keys = [(row["cluster"], row["broker_id"], row["log_dir"]) for rows in volumes.values() for row in rows]
        if not keys:
            return {}
        wanted = frame.sparkSession.createDataFrame(keys, "cluster string, broker_id long, log_dir string")
        frame = frame.join(F.broadcast(wanted), ["cluster", "broker_id", "log_dir"])
    else:
        by_name = Window.partitionBy("cluster").orderBy("broker_id", "log_dir")
        named = (
            frame.select("cluster", "broker_id", "log_dir").distinct().withColumn("place", F.dense_rank().over(by_name))
        )
        frame = frame.join(
            named.where(F.col("place") <= VOLUMES_PER_CHART).drop("place"), ["cluster", "broker_id", "log_dir"]
        )
    reduced = _downsample(
        frame.select("cluster", "broker_id", "log_dir", "at", "usable_bytes"),
        ["cluster", "broker_id", "log_dir"],
        "usable_bytes",
        F.min,
    )
    history = {}
    for row in reduced.orderBy("cluster", "broker_id", "log_dir", "at").collect():
        times, values = history.setdefault((row["cluster"], row["broker_id"], row["log_dir"]), ([], []))
        times.append(utc(row["at"]))
        values.append(row["usable_bytes"])
    return history


def _throttle_timelines(decisions, clusters):
    """{cluster: {policy: ([datetime], [factor])}}: the lowest factor of each time bucket, so no throttle is hidden."""
    if decisions is None or not clusters:
        return {}
    frame = decisions.where(F.col("cluster").isin(clusters)).select("cluster", "policy", "at", "throttle_factor")
    timelines = {}
    for row in (
        _downsample(frame, ["cluster", "policy"], "throttle_factor", F.min).orderBy("cluster", "policy", "at").collect()
    ):
        times, values = timelines.setdefault(row["cluster"], {}).setdefault(row["policy"], ([], []))
        times.append(utc(row["at"]))
        values.append(row["throttle_factor"])
    return timelines


# The forecast's sizing columns (its step 9).
SIZING_COLUMNS = (
    "peak_fill_bytes_per_sec",
    "recommended_limit_bytes",
    "plugin_limit_covers_peak",
    "hard_limit_covers_peak",
)


def _next_volumes(forecast):
    """The NEXT_VOLUMES volumes that fill up first (forecast rank), as dicts with UTC datetimes."""
    if forecast is None:
        return None
    rows = (
        forecast.orderBy(F.col("rank").asc_nulls_last(), "cluster", "broker_id", "log_dir")
        .limit(NEXT_VOLUMES)
        .select(
            "rank",
            "cluster",
            "broker_id",
            "log_dir",
            "total_bytes",
            "usable_bytes",
            "hard_limit_type",
            "hard_limit_level",
            "hard_limit_usable_bytes",
            "plugin_limit_usable_bytes",
            "bytes_per_hour",
            "hours_to_hard_limit",
            *[
                F.col(name) if name in forecast.columns else F.lit(None).alias(name)
                for name in SIZING_COLUMNS  # an output directory of a release before them has none
            ],
            _epoch_seconds(F.col("crosses_hard_limit_at")).alias("crosses_hard_limit_at"),
            _epoch_seconds(F.col("crosses_plugin_limit_at")).alias("crosses_plugin_limit_at"),
            _epoch_seconds(F.col("last_at")).alias("last_at"),
        )
        .collect()
    )
    volumes = []
    for row in rows:
        volume = row.asDict()
        for name in ("crosses_hard_limit_at", "crosses_plugin_limit_at", "last_at"):
            volume[name] = utc(volume[name])
        volumes.append(volume)
    return volumes


def _clusters_not_open(decisions, limit=50):
    """Clusters whose latest decision (per policy) is PAUSE or THROTTLE: (rows, how many), PAUSE first."""
    if decisions is None:
        return None
    latest = Window.partitionBy("cluster", "policy").orderBy(F.col("at").desc())
    current = (
        decisions.withColumn("recency", F.row_number().over(latest))
        .where((F.col("recency") == 1) & (F.col("state") != "OPEN"))
        .select("cluster", "policy", "state", "throttle_factor", _epoch_seconds(F.col("at")).alias("at"))
    )
    rows = (
        current.orderBy(F.when(F.col("state") == "PAUSE", 0).otherwise(1), "cluster", "policy").limit(limit).collect()
    )
    count = len(rows) if len(rows) < limit else current.count()
    return {"rows": [dict(row.asDict(), at=utc(row["at"])) for row in rows], "count": count}


def _top_clients(clients, recommendations):
    """The TOP_CLIENTS clients with the highest peak fraction of a quota used (produce or fetch);
    None without traffic."""
    if clients is None:
        return None
    peaks = (
        clients.groupBy("user", "client_id")
        .agg(
            F.max("quota_used_fraction").alias("peak_produce"),
            F.max("fetch_quota_used_fraction").alias("peak_fetch"),
            F.max("throttle_time_ms").alias("max_throttle_time_ms"),
            F.count(F.when((F.col("quota_used_fraction") > 1.0) | (F.col("fetch_quota_used_fraction") > 1.0), 1)).alias(
                "windows_over"
            ),
        )
        .withColumn("peak", F.greatest("peak_produce", "peak_fetch"))
    )  # greatest skips nulls: a client with one quota counts
    if recommendations is not None:
        advice = recommendations.select(
            "user", "client_id", "recommended_producer_byte_rate", "recommended_consumer_byte_rate"
        )
        peaks = peaks.join(
            advice,
            peaks["user"].eqNullSafe(advice["user"]) & peaks["client_id"].eqNullSafe(advice["client_id"]),
            "left",
        )
        peaks = peaks.drop(advice["user"]).drop(advice["client_id"])
    measured = peaks.where(F.col("peak").isNotNull())
    top = [
        row.asDict() for row in measured.orderBy(F.col("peak").desc(), "user", "client_id").limit(TOP_CLIENTS).collect()
    ]
    totals = peaks.agg(
        F.count(F.lit(1)).alias("clients"),
        F.count(F.when(F.col("peak") > 1.0, 1)).alias("over"),
        F.count(F.when(F.col("peak").isNull(), 1)).alias("without_quota"),
    ).first()
    return {
        "top": top,
        "clients": totals["clients"],
        "over": totals["over"],
        "without_quota": totals["without_quota"],
        "with_recommendations": recommendations is not None,
    }


def _top_topics(topics):
    """Topics most often over their threshold; None when no topic analysis ran."""
    if topics is None:
        return None
    rows = (
        topics.groupBy("topic")
        .agg(
            F.count(F.lit(1)).alias("windows"),
            F.countDistinct("broker_id").alias("brokers"),
            F.sum("bytes_rejected").alias("bytes_rejected"),
            F.max("topic_ewma").alias("peak_rate"),
            F.max("topic_threshold").alias("threshold"),
        )
        .orderBy(F.col("windows").desc(), F.col("bytes_rejected").desc_nulls_last(), "topic")
        .limit(TOP_TOPICS)
        .collect()
    )
    return [row.asDict() for row in rows]


def _guard_beside_replay(comparison, summary):
    """The guard comparison's figures (summary.json's, else counted) and its differences, earliest first (at most
    MAX_GUARD_DIFFERENCES); None when this run compared nothing. A comparison of no decisions has no files to read."""
    figures = stage_registry.GUARD_COMPARISON.recorded(summary)
    if comparison is None:
        if not isinstance(figures, dict):
            return None
        return {"figures": figures, "differences": [], "more": 0}
    if not isinstance(figures, dict):
        figures = guard_comparison.figures_of(comparison)
    rows = (
        comparison.where(F.col("outcome") == guard_comparison.DIFFERS)
        .orderBy("decided_at", "cluster", "policy")
        .limit(MAX_GUARD_DIFFERENCES)
        .select(
            _epoch_seconds(F.col("decided_at")).alias("decided_at"),
            _epoch_seconds(F.col("at")).alias("at"),
            "cluster",
            "policy",
            "guard_throttle_factor",
            "guard_state",
            "guard_reason",
            "replay_throttle_factor",
            "replay_state",
            "differs_in",
        )
        .collect()
    )
    differences = [dict(row.asDict(), decided_at=utc(row["decided_at"]), at=utc(row["at"])) for row in rows]
    return {"figures": figures, "differences": differences, "more": max(figures["differences"] - len(differences), 0)}
