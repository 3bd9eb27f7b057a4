"""What each stage of the job does: read an input or compute an analysis, write its outputs under DIR and put its
figures in the summary. job.PIPELINE pairs each function with its stage (stage_registry.py) and runs them in order;
each takes the run's shared state (Run) and returns the detail of its progress line.

Each stage reads its input where it is cheapest: the snapshots are read once, checked as they are read, never held in
memory or on local disk, and the write of volumes/, first, also finds their median time stamp (ingest._checked);
volumes/ feeds the forecast, which first collects every volume's span, from which the decision timeline's size is also
bounded before it is built, and then the decision timeline, which never reads the snapshots again; rejected records are
read only when the first pass counted some.
"""

import dataclasses
import os
import shutil
from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from headroom_pipeline import (
    clients,
    decisions,
    forecast,
    forecast_buckets,
    guard_comparison,
    ingest,
    report,
    schemas,
    sources,
    stage_registry,
    topics,
)
from headroom_pipeline.checks import TimeWindow
from headroom_pipeline.config import PipelineConfig
from headroom_pipeline.session import global_window_warnings_quiet, spark_session, timeline_settings

# Cached inputs are kept on local disk, so that the heap is left to the aggregations and sorts (a driver with a
# 1.25 GiB heap runs 10 million snapshot rows in local mode; in memory, the cached rows alone would crowd it out).
CACHE_LEVEL = StorageLevel.DISK_ONLY
# In a run's generation, beside its outputs: the forecast's buckets, from which the next incremental run's forecast
# starts (forecast_buckets.save_buckets).
FORECAST_BUCKETS = ".forecast-buckets"
# The columns of decisions/ the guard comparison reads back (with a schema: a timeline of no rows has no files).
TIMELINE_READ = (
    "cluster string, at timestamp, throttle_factor double, state string, fallback_applied boolean, "
    "observed boolean, policy string"
)


class CheckedInputs(NamedTuple):
    """The inputs the job read and checked before Spark started (job._check_inputs)."""

    quotas: list[dict[str, Any]]  # ingest.load_quotas; empty without --quotas
    proposed: list[dict[str, Any]] | None  # the same for --proposed-quotas
    plan: dict[str, Any] | None  # topics.load_plan of --topic-thresholds
    kafka_records: list[sources.KafkaRecord] | None  # the snapshot topic's records of a kafka:// --snapshots


@dataclasses.dataclass
class Resumed:
    """What an incremental run resumes from, and what it finds for the next one."""

    reads: Mapping[str, sources.Tail]  # the snapshot files to read, and what of each (run_state.Decision.reads)
    resume: Mapping[str, Any]  # the last run's: seeds, latest, stamps, consumed
    summary: dict[str, Any]  # the last run's summary.json
    generation: str  # the last run's generation, whose outputs this run extends
    new_timeline: DataFrame | None = None  # this run's rows of decisions/, None without any

    def output(self, name: str) -> str:
        return os.path.join(self.generation, name)


@dataclasses.dataclass
class Run:  # pylint: disable=too-many-instance-attributes
    """What the stages share: the settings, the checked inputs, the summary they fill in, and what one
    hands the next."""

    config: PipelineConfig
    inputs: CheckedInputs
    summary: dict[str, Any]
    write_to: str  # the run's generation (publication.py): the outputs are written there, and published when it ends
    warnings: list[str]  # found before the stages ran, for summary.json's "warnings"
    spark: Optional[SparkSession] = None
    owned: bool = False  # the job started the session (and stops it); a caller's is left running
    # per input ("snapshots", "traffic", "guard_decisions"): as ingest read it
    ingested: dict[str, ingest.Ingested] = dataclasses.field(default_factory=dict)
    traffic: Optional[DataFrame] = None  # the traffic rows, cached for the analyses until release()
    guard_decisions: Optional[DataFrame] = None  # the guard's decision records, cached for the comparison
    # every volume's span, as the forecast found it (it bounds the decision timeline's size)
    volume_spans: Optional[forecast.VolumeSpans] = None
    # With --state: what this run read of each of the guard's files of the current hour (sources.resolve_input), and
    # what the next run resumes from (incremental.checkpoint), or why it cannot
    consumed: dict[str, tuple[int, str]] = dataclasses.field(default_factory=dict)
    checkpoint: Optional[dict[str, Any]] = None
    no_resume: Optional[str] = None
    resumed: Optional[Resumed] = None  # an incremental run's: what it resumes from (incremental.py)

    @property
    def started_spark(self) -> SparkSession:
        """The session start_spark made, in which every later stage runs."""
        assert self.spark is not None, "start_spark runs before the other stages"
        return self.spark

    def path(self, name: str) -> str:
        """Where the run writes output ``name`` (and later stages read it back)."""
        return os.path.join(self.write_to, name)

    def published(self, path: str) -> str:
        """The path a reader of --out finds ``path`` (one this run writes) at once the run is published."""
        return os.path.join(self.config.out, os.path.relpath(path, self.write_to))

    def time_window(self) -> TimeWindow:
        since, until = self.config.since, self.config.until
        assert not isinstance(since, str) and not isinstance(until, str), "the job validates the settings first"
        return TimeWindow(since=since, until=until, spread=self.config.plausible_window)

    def release(self) -> None:
        """Drop the cached traffic and guard decisions once the stages are done with them."""
        self.release_traffic()
        self.release_guard_decisions()

    def release_traffic(self) -> None:
        if self.traffic is not None:
            self.traffic.unpersist()
            self.traffic = None

    def release_guard_decisions(self) -> None:
        if self.guard_decisions is not None:
            self.guard_decisions.unpersist()
            self.guard_decisions = None


def start_spark(run: Run) -> str:
    config = run.config
    owned = SparkSession.getActiveSession() is None
    run.spark = spark_session(config.master, driver_memory=config.driver_memory, conf=config.spark_conf)
    run.owned = owned
    run.summary["spark"] = _spark_facts(run.spark)
    return ""


def read_snapshots(run: Run) -> str:
    config = run.config
    snapshots = ingest.load_snapshots(
        run.started_spark,
        config.snapshots,
        config.cluster,
        kafka_records=run.inputs.kafka_records,
        window=run.time_window(),
        first_use=lambda checked: write_output(schemas.volume_rows(checked.accepted_raw), run.path("volumes")),
        consumed=run.consumed,
    )
    run.ingested["snapshots"] = snapshots
    figures = run.summary["inputs"]["snapshots"] = input_figures(snapshots)
    return f"({snapshots.read:,} records, {figures['used']:,} used)"


def read_traffic(run: Run) -> str:
    location = run.config.traffic
    assert location is not None, "the stage runs only with --traffic"

    def keep(checked):
        run.release_traffic()  # the rows of a first use whose time bounds rejected some records
        run.traffic = checked.rows.persist(CACHE_LEVEL)
        run.traffic.count()

    loaded = ingest.load_traffic(run.started_spark, location, window=run.time_window(), first_use=keep)
    run.ingested["traffic"] = loaded
    run.summary["inputs"]["traffic"] = input_figures(loaded)
    return f"({loaded.read:,} records)"


def read_guard_decisions(run: Run) -> str:
    location = run.config.guard_decisions
    assert location is not None, "the stage runs only with guard decisions"

    def keep(checked):
        run.release_guard_decisions()  # the rows of a first use whose time bounds rejected some records
        run.guard_decisions = checked.rows.persist(CACHE_LEVEL)
        run.guard_decisions.count()

    loaded = ingest.load_guard_decisions(
        run.started_spark, location, run.config.cluster, window=run.time_window(), first_use=keep
    )
    run.ingested["guard_decisions"] = loaded
    run.summary["inputs"]["guard_decisions"] = input_figures(loaded)
    return f"({loaded.read:,} records)"


def reject_unusable_records(run: Run) -> str:
    counts = reject_into(run, run.path("rejected"))
    return f"({sum(counts.values()):,} rejected)"


def reject_into(run: Run, path: str) -> dict[str, int]:
    """The rejected records of the inputs this run read, written to ``path``; each input's figures get their count
    (as written, in place of the count on the way); returns the counts per input that has some."""
    counted = {name: figures.pop("rejected_counted") for name, figures in run.summary["inputs"].items()}
    written = [run.ingested[name].rejected for name, count in counted.items() if count]
    write_rejected(written, path)
    counts = rejected_counts(run.started_spark, path) if written else {}
    for name, figures in run.summary["inputs"].items():
        figures["rejected"] = counts.get(name, 0)
    return counts


def forecast_volumes(run: Run) -> str:
    volumes = read_volumes(run)
    spans = forecast.volume_spans(volumes, run.config)
    return write_forecast(run, forecast_buckets.buckets_of_rows(volumes, run.config, spans))


def write_forecast(run: Run, buckets: forecast_buckets.Buckets) -> str:
    """forecast/ of the volumes' buckets, which a run that keeps a state also leaves for the next (FORECAST_BUCKETS);
    their spans bound the decision timeline."""
    observation = Observation("forecast")
    run.volume_spans = buckets.spans
    with global_window_warnings_quiet(run.started_spark):  # the ranking of all volumes is one window on purpose
        write_output(forecast.forecast_of_buckets(buckets, run.config, observation), run.path("forecast"))
    if run.config.state is not None and not sources.is_kafka(run.config.snapshots):
        forecast_buckets.save_buckets(buckets, run.path(FORECAST_BUCKETS))
    observed = observation.get
    counts = stage_registry.FORECAST.record(run.summary, {key: int(observed[key]) for key in forecast.FORECAST_COUNTS})
    return f"({counts['volumes']:,} volumes)"


def build_decision_timeline(run: Run) -> str:
    config = run.config
    interval = decisions.check_interval_micros(config)
    assert run.volume_spans is not None, "the forecast runs before the decision timeline"
    size = (
        decisions.timeline_size_of_volume_spans(run.volume_spans.spans, interval)
        if config.max_timeline_rows is not None
        else None
    )
    observation = Observation("decisions")
    timeline = decisions.decision_timeline(read_volumes(run), config, size=size, observation=observation)
    with timeline_settings(run.started_spark):  # the query is planned and run by the write
        write_output(timeline, run.path("decisions"), "policy")
    observed = observation.get
    counts = stage_registry.DECISIONS.record(
        run.summary, {key: int(observed[key]) for key in decisions.DECISION_COUNTS}
    )
    return f"({counts['rows']:,} rows)"


def compare_guard_decisions(run: Run) -> str:
    assert run.guard_decisions is not None, "read_guard_decisions runs before the comparison"
    timeline = run.started_spark.read.schema(TIMELINE_READ).parquet(run.path("decisions"))
    observation = Observation("guard comparison")
    write_output(
        guard_comparison.guard_comparison(run.guard_decisions, timeline, run.config, observation),
        run.path("guard_comparison"),
    )
    observed = observation.get
    counts = stage_registry.GUARD_COMPARISON.record(
        run.summary, {key: int(observed[key]) for key in guard_comparison.COMPARISON_COUNTS}
    )
    run.release_guard_decisions()
    return f"({counts['compared']:,} compared, {counts['differences']:,} differ)"


def analyse_client_quotas(run: Run) -> str:
    assert run.traffic is not None, "read_traffic runs before the analyses"
    windows, recommendations = clients.client_analysis(run.traffic, run.inputs.quotas, run.inputs.proposed, run.config)
    write_output(windows, run.path("clients"))
    write_output(recommendations, run.path("client_recommendations"))
    counts = stage_registry.CLIENTS.record(run.summary, _client_counts(run))
    return f"({counts['windows']:,} windows)"


def analyse_topic_thresholds(run: Run) -> str:
    assert run.traffic is not None, "read_traffic runs before the analyses"
    assert run.inputs.plan is not None, "the stage runs only with --topic-thresholds"
    thresholds, exceeded = topics.topic_analysis(run.traffic, run.inputs.plan, run.config)
    write_output(thresholds, run.path("topic_thresholds"))
    write_output(exceeded, run.path("topics"))
    counts = stage_registry.TOPICS.record(
        run.summary,
        {
            "thresholds": _count(run.spark, run.path("topic_thresholds")),
            "windows_exceeded": _count(run.spark, run.path("topics")),
        },
    )
    return f"({counts['windows_exceeded']:,} windows over threshold)"


def write_report(run: Run) -> str:
    return stage_registry.REPORT.record(
        run.summary, run.published(report.write_report(run.started_spark, run.write_to, run.summary))
    )


def _spark_facts(spark):
    """Where the job ran: the master, Spark's version and the settings that decide its shape."""
    context = spark.sparkContext
    return {
        "master": context.master,
        "version": spark.version,
        "default_parallelism": context.defaultParallelism,
        "shuffle_partitions": int(spark.conf.get("spark.sql.shuffle.partitions")),
        "driver_host": context.getConf().get("spark.driver.host", None),
    }


def input_figures(ingested: ingest.Ingested) -> dict[str, Any]:
    """An input's figures once its accepted rows were first used: records read, used, and rejected as counted on
    the way (rejected/ is written only when that count is above 0; job._account compares it with what was written)."""
    counts = ingested.counts()
    return {
        "read": ingested.read,
        "used": counts["checked"] - counts["rejected"],
        "rejected_counted": counts["rejected"],
        "time_bounds": ingested.time_bounds.describe(),
    }


def read_volumes(run: Run) -> DataFrame:
    """volumes/ as read_snapshots wrote it: the checked snapshots, which the forecast and the timeline read."""
    return run.started_spark.read.schema(schemas.VOLUMES).parquet(run.path("volumes"))


def write_output(frame: DataFrame, path: str, partition_by: Optional[str] = None) -> None:
    writer = frame.write.mode("overwrite")
    if partition_by:
        writer = writer.partitionBy(partition_by)
    writer.parquet(path)


def has_parquet(path: str) -> bool:
    """Whether an output directory holds data files: Spark writes none for an empty frame partitioned by a column,
    and reading such a directory back without a schema fails (UNABLE_TO_INFER_SCHEMA)."""
    return os.path.isdir(path) and any(
        name.endswith(".parquet") for unused_root, unused_dirs, names in os.walk(path) for name in names
    )


def _count(spark, path):
    return spark.read.parquet(path).count() if has_parquet(path) else 0


def write_rejected(frames: list[DataFrame], path: str) -> None:
    """The rejected records of the inputs that have some, one JSON-lines file per input: the records are filtered
    where they are read, in parallel, and only they are gathered (coalescing the unfiltered read instead would
    read and check every record in one task). With none, an empty rejected/ and no Spark job."""
    if not frames:
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        with open(os.path.join(path, "_SUCCESS"), "w", encoding="utf-8"):
            pass
        return
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame)
    combined.repartition(1).write.mode("overwrite").partitionBy("input").json(path)


def rejected_counts(spark: SparkSession, path: str) -> dict[str, int]:
    """Rejected rows per input, read back from what was written (with a schema: nothing to infer from no rows)."""
    if not os.path.isdir(path):
        return {}
    return {
        name[len("input=") :]: spark.read.schema("reason string").json(os.path.join(path, name)).count()
        for name in os.listdir(path)
        if name.startswith("input=")
    }


def _client_counts(run):
    if not has_parquet(run.path("clients")):
        return {"windows": 0, "windows_throttled": 0, "clients": _count(run.spark, run.path("client_recommendations"))}
    row = (
        run.spark.read.parquet(run.path("clients"))
        .agg(
            F.count(F.lit(1)).alias("windows"),
            F.sum(F.when(F.col("throttle_time_ms") > 0, 1).otherwise(0)).alias("windows_throttled"),
        )
        .first()
    )
    return {
        "windows": int(row["windows"] or 0),
        "windows_throttled": int(row["windows_throttled"] or 0),
        "clients": _count(run.spark, run.path("client_recommendations")),
    }
