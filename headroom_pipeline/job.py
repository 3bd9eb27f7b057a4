"""The job: check inputs, ingest, run the stages, write the outputs and the summary.

Output directory (each run replaces these; other files in DIR are left alone):
  summary.json                 counts (rows_read = rows_used + rows_rejected), per-stage counts, timings, settings
  volumes/                     the normalized history: one row per volume and snapshot (Parquet)
  decisions/policy=<policy>/   the decision timeline per cluster and check instant (Parquet)
  forecast/                    per volume: growth trend and when it crosses its limits, ranked (Parquet)
  clients/, client_recommendations/   client quota analysis (with --traffic)
  topics/, topic_thresholds/   topic threshold analysis (with --traffic and --topic-thresholds)
  rejected/                    every input record that could not be used, with the reason (JSON lines)
  report/index.html            the HTML report with its PNG charts
"""

import json
import os
import shutil
import sys
import time

from headroom_pipeline.config import ConfigError


def cache_level():
    """Where cached inputs are kept: on local disk, so that the heap is left to the aggregations and sorts (a driver
    with a 1.25 GiB heap runs 10 million snapshot rows in local mode; in memory, the cached rows alone would crowd it out)."""
    from pyspark import StorageLevel

    return StorageLevel.DISK_ONLY


# The optional stages (keys of the summary's "stages") and the outputs each writes; the other outputs come with every run.
OUTPUTS_OF_STAGE = {"clients": ("clients", "client_recommendations"), "topics": ("topics", "topic_thresholds")}


class JobError(RuntimeError):
    """The job could not finish; the message says which stage and why."""


class Progress:
    """Stage lines on stderr (long runs show where they are); timings for the summary."""

    def __init__(self, enabled, total):
        self.enabled, self.total, self.step, self.timings = enabled, total, 0, {}
        self.started = time.monotonic()

    def stage(self, name):
        return _Stage(self, name)

    def say(self, text):
        if self.enabled:
            print(f"[headroom_pipeline {time.monotonic() - self.started:7.1f}s] {text}", file=sys.stderr, flush=True)


class _Stage:
    def __init__(self, progress, name):
        self.progress, self.name, self.detail = progress, name, ""

    def __enter__(self):
        self.progress.step += 1
        self.begin = time.monotonic()
        self.progress.say(f"{self.progress.step}/{self.progress.total} {self.name} ...")
        return self

    def __exit__(self, kind, value, traceback):
        elapsed = time.monotonic() - self.begin
        self.progress.timings[self.name] = round(elapsed, 3)
        if kind is None:
            self.progress.say(f"{self.progress.step}/{self.progress.total} {self.name} done in {elapsed:.1f}s {self.detail}".rstrip())
        return False


def _check_inputs(config):
    """Everything that can be checked without Spark, so that bad input fails in a second, not after JVM start.

    The snapshot topic of a kafka:// source is read here too: an unreachable cluster fails before Spark starts.
    """
    from headroom_pipeline import ingest, sources, topics

    config.validate()
    if not sources.is_kafka(config.snapshots):
        sources.resolve_files(config.snapshots, "--snapshots")
    else:
        sources.parse_kafka_url(config.snapshots)
    if config.traffic:
        sources.resolve_files(config.traffic, "--traffic")
    quotas = ingest.load_quotas(config.quotas) if config.quotas else []
    proposed = ingest.load_quotas(config.proposed_quotas, "--proposed-quotas") if config.proposed_quotas else None
    plan = topics.load_plan(config.topic_thresholds) if config.topic_thresholds else None
    if (config.quotas or config.proposed_quotas or config.topic_thresholds) and not config.traffic:
        raise ConfigError("--quotas, --proposed-quotas and --topic-thresholds analyse client traffic: give --traffic too")
    if os.path.exists(config.out) and not os.path.isdir(config.out):
        raise ConfigError(f"--out: {config.out!r} exists and is not a directory")
    kafka_records = sources.read_kafka_records(config.snapshots) if sources.is_kafka(config.snapshots) else None
    return quotas, proposed, plan, kafka_records


def _write(frame, path, partition_by=None):
    writer = frame.write.mode("overwrite")
    if partition_by:
        writer = writer.partitionBy(partition_by)
    writer.parquet(path)


def _count(spark, path, fmt="parquet"):
    if not os.path.exists(path):
        return 0
    return spark.read.format(fmt).load(path).count()


def run(config):
    """Run every stage; return the summary (also written to DIR/summary.json)."""
    quotas, proposed, plan, kafka_records = _check_inputs(config)
    from headroom_pipeline import decisions, forecast, ingest
    from headroom_pipeline.session import global_window_warnings_quiet, spark_session

    out = config.out
    os.makedirs(out, exist_ok=True)
    _remove_outputs_of_previous_run(out, config, plan)
    stages = 5 + (2 if config.traffic else 0) + (1 if config.traffic and plan else 0) + (1 if config.report else 0)
    progress = Progress(config.progress, stages)
    summary = {"out": os.path.abspath(out), "inputs": {}, "stages": {}, "settings": _settings(config)}
    from pyspark.sql import SparkSession

    owned = SparkSession.getActiveSession() is None      # a caller's session (tests, notebooks) is left running
    with progress.stage("start Spark"):
        spark = spark_session(config.master, driver_memory=config.driver_memory, conf=config.spark_conf)
        summary["spark"] = _spark_facts(spark)
    try:
        with progress.stage("read snapshots") as stage:
            snapshots = ingest.load_snapshots(spark, config.snapshots, config.cluster, kafka_records=kafka_records)
            messages = snapshots.rows.persist(cache_level())
            rejected = [snapshots.rejected]
            used = messages.count()
            volumes_path = os.path.join(out, "volumes")
            _write(ingest.explode_volumes(messages), volumes_path)
            summary["inputs"]["snapshots"] = {"read": snapshots.read, "used": used}
            stage.detail = f"({snapshots.read:,} records, {used:,} used)"
        traffic = None
        if config.traffic:
            with progress.stage("read traffic") as stage:
                loaded = ingest.load_traffic(spark, config.traffic)
                traffic = loaded.rows.persist(cache_level())
                rejected.append(loaded.rejected)
                summary["inputs"]["traffic"] = {"read": loaded.read, "used": traffic.count()}
                stage.detail = f"({loaded.read:,} records)"
        with progress.stage("reject unusable records") as stage:
            _write_rejected(rejected, os.path.join(out, "rejected"))
            counts = _rejected_counts(spark, os.path.join(out, "rejected"))
            for name, figures in summary["inputs"].items():
                figures["rejected"] = counts.get(name, 0)
            stage.detail = f"({sum(counts.values()):,} rejected)"
        with progress.stage("decision timeline") as stage:
            _write(decisions.decision_timeline(messages, config), os.path.join(out, "decisions"), "policy")
            summary["stages"]["decisions"] = _decision_counts(spark, os.path.join(out, "decisions"))
            stage.detail = f"({summary['stages']['decisions']['rows']:,} rows)"
        with progress.stage("volume forecast") as stage:
            with global_window_warnings_quiet(spark):      # the ranking of all volumes is one window on purpose
                _write(forecast.volume_forecast(spark.read.parquet(volumes_path), config), os.path.join(out, "forecast"))
            summary["stages"]["forecast"] = _forecast_counts(spark, os.path.join(out, "forecast"))
            stage.detail = f"({summary['stages']['forecast']['volumes']:,} volumes)"
        messages.unpersist()
        if traffic is not None:
            with progress.stage("client quota analysis") as stage:
                from headroom_pipeline import clients

                windows, recommendations = clients.client_analysis(traffic, quotas, proposed, config)
                _write(windows, os.path.join(out, "clients"))
                _write(recommendations, os.path.join(out, "client_recommendations"))
                summary["stages"]["clients"] = _client_counts(spark, out)
                stage.detail = f"({summary['stages']['clients']['windows']:,} windows)"
            if plan:
                with progress.stage("topic thresholds") as stage:
                    from headroom_pipeline import topics

                    thresholds, exceeded = topics.topic_analysis(traffic, plan, config)
                    _write(thresholds, os.path.join(out, "topic_thresholds"))
                    _write(exceeded, os.path.join(out, "topics"))
                    summary["stages"]["topics"] = {"thresholds": _count(spark, os.path.join(out, "topic_thresholds")),
                                                   "windows_exceeded": _count(spark, os.path.join(out, "topics"))}
                    stage.detail = f"({summary['stages']['topics']['windows_exceeded']:,} windows over threshold)"
            traffic.unpersist()
        _account(summary)
        summary["timings_seconds"] = progress.timings
        _write_summary(out, summary)
        if config.report:
            with progress.stage("report") as stage:
                from headroom_pipeline import report

                summary["report"] = report.write_report(spark, out, summary)
                stage.detail = summary["report"]
            summary["timings_seconds"] = progress.timings
            _write_summary(out, summary)
    finally:
        if owned:
            spark.stop()
    progress.say(f"wrote {out}: {summary['rows_used']:,} rows used, {summary['rows_rejected']:,} rejected"
                 + (f"; report {summary['report']}" if summary.get("report") else ""))
    return summary


def _remove_outputs_of_previous_run(out, config, plan):
    """Outputs an earlier run wrote that this run will not replace would be read as this run's (by the report too).

    Only what the earlier run's summary.json says it wrote is removed, never a directory the job did not create.
    The summary itself goes first: it is written last, so a DIR without one holds a run that did not finish.
    """
    summary_path = os.path.join(out, "summary.json")
    try:
        with open(summary_path, encoding="utf-8") as handle:
            previous = json.load(handle)
    except (OSError, ValueError):
        return
    if not isinstance(previous, dict) or previous.get("out") != os.path.abspath(out):
        return
    os.remove(summary_path)
    runs_now = {"clients": bool(config.traffic), "topics": bool(config.traffic and plan)}
    stale = [name for stage in set(previous.get("stages") or {}) & set(OUTPUTS_OF_STAGE) if not runs_now[stage]
             for name in OUTPUTS_OF_STAGE[stage]]
    if previous.get("report") and not config.report:
        stale.append("report")
    for name in stale:
        path = os.path.join(out, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)


def _spark_facts(spark):
    """Where the job ran: the master, Spark's version and the settings that decide its shape."""
    context = spark.sparkContext
    return {"master": context.master, "version": spark.version, "default_parallelism": context.defaultParallelism,
            "shuffle_partitions": int(spark.conf.get("spark.sql.shuffle.partitions")),
            "driver_host": context.getConf().get("spark.driver.host", None)}


def _settings(config):
    return {key: value for key, value in vars(config).items() if key not in ("spark_conf",)}


def _write_rejected(frames, path):
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame)
    combined.coalesce(1).write.mode("overwrite").partitionBy("input").json(path)


def _rejected_counts(spark, path):
    if not os.path.exists(path):
        return {}
    rows = spark.read.json(path).groupBy("input").count().collect() if any(
        name.startswith("input=") for name in os.listdir(path)) else []
    return {row["input"]: row["count"] for row in rows}


def _account(summary):
    """rows_read = rows_used + rows_rejected, per input and in total; a mismatch is a bug, never a rounding."""
    inputs = summary["inputs"]
    for name, figures in inputs.items():
        if figures["read"] != figures["used"] + figures["rejected"]:
            raise JobError(f"{name}: {figures['read']} records read but {figures['used']} used + {figures['rejected']} rejected")
    for key in ("read", "used", "rejected"):
        summary[f"rows_{key}"] = sum(figures[key] for figures in inputs.values())


def _decision_counts(spark, path):
    from pyspark.sql import functions as F

    frame = spark.read.parquet(path)
    row = frame.agg(F.count(F.lit(1)).alias("rows"), F.countDistinct("cluster").alias("clusters"),
                    F.sum(F.when(F.col("state") != "OPEN", 1).otherwise(0)).alias("not_open"),
                    F.sum(F.when(F.col("fallback_applied"), 1).otherwise(0)).alias("fallback_applied")).first()
    return {key: int(row[key] or 0) for key in ("rows", "clusters", "not_open", "fallback_applied")}


def _forecast_counts(spark, path):
    from pyspark.sql import functions as F

    row = spark.read.parquet(path).agg(F.count(F.lit(1)).alias("volumes"),
                                       F.count("crosses_hard_limit_at").alias("crossing_hard_limit")).first()
    return {key: int(row[key] or 0) for key in ("volumes", "crossing_hard_limit")}


def _client_counts(spark, out):
    from pyspark.sql import functions as F

    row = spark.read.parquet(os.path.join(out, "clients")).agg(
        F.count(F.lit(1)).alias("windows"), F.sum(F.when(F.col("throttle_time_ms") > 0, 1).otherwise(0)).alias("windows_throttled")).first()
    return {"windows": int(row["windows"] or 0), "windows_throttled": int(row["windows_throttled"] or 0),
            "clients": _count(spark, os.path.join(out, "client_recommendations"))}


def _write_summary(out, summary):
    path = os.path.join(out, "summary.json")
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2, sort_keys=True, default=str)
        handle.write("\n")
    os.replace(temporary, path)
