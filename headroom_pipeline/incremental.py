"""An incremental run: the snapshot records new since the last run are read, checked and added to its outputs, which
are then those a full run over every file writes. run_state decides when a run is one (only snapshot files new, or
the guard's files of the current hour grown or compressed); job.py runs INCREMENTAL_STAGES.

What a run leaves in the state for the next one (``resume``, saved in the state file):
- ``seeds``: per cluster, the clock after its timeline's last instant (decisions.SEED_COLUMNS);
- ``latest``: of each broker, its volume rows of its latest snapshot time (VOLUMES, ``at`` in microseconds), where
  decisions.checkpoint_rows finds each broker's clock;
- ``stamps``: the earliest and latest snapshot stamps the time checks judged, over every run;
- ``consumed``: what was read of each of the guard's files of the current hour (sources.resolve_input).
Beside its outputs, in its generation, the forecast's buckets (stages.FORECAST_BUCKETS, forecast_buckets.py).

A run resumes only when a full run would read the earlier records and decide the earlier instants as the earlier runs
did. It stops (NotResumable) and the job runs in full, saying why, when
- a new record is at or before its cluster's last decided instant (a late hour, a record repeated, a clock set back):
  the instants it belongs to are decided already;
- the stamps of all the records span more than --plausible-window: the median of their stamps, which the time checks
  hold each record to, could then reject a record an earlier run accepted, or the reverse;
- a file read in part no longer begins with what the last run read of it.
volumes/, decisions/ and rejected/ keep the last run's files, hard-linked into the new generation beside the new ones;
the forecast adds the new rows to the last run's buckets (forecast_buckets.py), which every run that keeps a state
leaves in its generation; the traffic analyses, whose inputs did not change, are carried over as they are.
"""

import os
import shutil
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from headroom_pipeline import (
    decisions,
    forecast_buckets,
    ingest,
    publication,
    schemas,
    sources,
    stage_registry,
    stages,
)
from headroom_pipeline.session import timeline_settings

INCOMING = ".incoming"  # in the run's generation: what the new records make, before it joins the outputs
SEEDS_SCHEMA = "cluster string, " + ", ".join(f"{name} {kind}" for name, kind in decisions.SEED_COLUMNS.items())
LATEST_COLUMNS = [field.name for field in schemas.VOLUMES.fields]


class NotResumable(Exception):
    """The run cannot add the new records to the last run's outputs; the message says why (a full run follows)."""


# -- what a run leaves for the next ------------------------------------------------------------------------------
def checkpoint(
    timeline: DataFrame, volume_rows: DataFrame, previous: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """{"seeds", "latest"} after a run: ``timeline`` and ``volume_rows`` are decisions/ and volumes/ as it wrote them
    (a full run), or only its new rows (an incremental one, whose ``previous`` resume holds the rest)."""
    previous = previous or {}
    seeds = {seed["cluster"]: seed for seed in previous.get("seeds", [])}
    for row in decisions.seeds_of(timeline).collect():
        before = seeds.get(row["cluster"], {})
        # A policy the new instants never observed keeps the clock the last run left (the plugin's last observation).
        seeds[row["cluster"]] = {
            "cluster": row["cluster"],
            **{name: row[name] if row[name] is not None else before.get(name) for name in decisions.SEED_COLUMNS},
        }
    spark = timeline.sparkSession
    rows = volume_rows.select(*LATEST_COLUMNS)
    if previous.get("latest"):
        rows = rows.unionByName(latest_frame(spark, previous))
    at = F.unix_micros("at")
    latest_at = rows.groupBy("cluster", "broker_id").agg(F.max(at).alias("latest_at"))
    latest = (
        rows.join(F.broadcast(latest_at), ["cluster", "broker_id"])
        .where(at == F.col("latest_at"))
        .select(*[at.alias("at") if name == "at" else name for name in LATEST_COLUMNS])
        .distinct()  # the rows of a message read twice are those of one message, as the timeline counts them
    )
    return {
        "seeds": [seeds[cluster] for cluster in sorted(seeds)],
        "latest": sorted((row.asDict() for row in latest.collect()), key=_latest_order),
    }


def _latest_order(row):
    return (row["cluster"], row["broker_id"], row["at"], row["message"], row["log_dir"] or "")


def stamps_after(previous: Mapping[str, Any] | None, observed: Mapping[str, Any]) -> dict[str, int | None] | None:
    """The earliest and latest stamps the time checks judged over every run, from the last run's and those the new
    records' check observed; None when the observation has none (the median's bounds rejected records: no resume)."""
    if "earliest" not in observed:
        return None
    found = [(previous or {}).get("earliest"), observed["earliest"]]
    last = [(previous or {}).get("latest"), observed["latest"]]
    return {
        "earliest": min((value for value in found if value is not None), default=None),
        "latest": max((value for value in last if value is not None), default=None),
    }


def stamps_problem(stamps: Mapping[str, Any] | None, spread_seconds: float, needs_median: bool) -> str | None:
    """Why the records' stamps rule out a resume, None when they do not: with a median to hold records to, every
    stamp must lie within --plausible-window of every other (then no median of them rejects any)."""
    if not needs_median:
        return None
    if stamps is None:
        return "the time checks rejected records by the median of the snapshot stamps (--plausible-window)"
    earliest, latest = stamps.get("earliest"), stamps.get("latest")
    if earliest is not None and latest is not None and latest - earliest > spread_seconds * 1_000_000:
        return "the snapshot stamps span more than --plausible-window, and their median could reject other records"
    return None


def seeds_frame(spark: SparkSession, resume: Mapping[str, Any]) -> DataFrame:
    return spark.createDataFrame(
        [tuple(seed[name] for name in ["cluster", *decisions.SEED_COLUMNS]) for seed in resume["seeds"]],
        SEEDS_SCHEMA,
    )


def latest_frame(spark: SparkSession, resume: Mapping[str, Any]) -> DataFrame:
    """The ``latest`` rows of a resume as VOLUMES rows."""
    schema = schemas.T.StructType(
        [
            schemas.T.StructField("at", schemas.T.LongType()) if field.name == "at" else field
            for field in schemas.VOLUMES.fields
        ]
    )
    frame = spark.createDataFrame([tuple(row[name] for name in LATEST_COLUMNS) for row in resume["latest"]], schema)
    return frame.withColumn("at", F.timestamp_micros("at"))


# -- the stages of an incremental run ----------------------------------------------------------------------------
def read_new_snapshots(run: stages.Run) -> str:
    """The new records (the Tails run_state planned), checked, their volume rows written aside; NotResumable when a
    full run would read them otherwise; volumes/ then holds the last run's files and the new ones."""
    config, resumed = run.config, run.resumed
    assert resumed is not None, "an incremental run has what the last run left"
    incoming = run.path(INCOMING)

    def first_use(checked):
        stages.write_output(schemas.volume_rows(checked.accepted_raw), os.path.join(incoming, "volumes"))

    try:
        snapshots = ingest.load_snapshots(
            run.started_spark,
            config.snapshots,
            config.cluster,
            window=run.time_window(),
            first_use=first_use,
            only=resumed.reads,
            consumed=run.consumed,
        )
    except sources.PrefixChanged as exc:
        raise NotResumable(str(exc)) from None
    run.ingested["snapshots"] = snapshots
    figures = run.summary["inputs"]["snapshots"] = stages.input_figures(snapshots)
    stamps = stamps_after(resumed.resume.get("stamps"), snapshots.check_counts.get)
    problem = stamps_problem(stamps, config.plausible_window, run.time_window().needs_median)
    if problem:
        raise NotResumable(problem)
    new_rows = read_incoming_volumes(run)
    seed_t = seeds_frame(run.started_spark, resumed.resume).select("cluster", "seed_t")
    late = new_rows.join(F.broadcast(seed_t), "cluster").where(F.unix_micros("at") <= F.col("seed_t"))
    late_messages = late.select("message").distinct().count()
    if late_messages:
        raise NotResumable(
            f"the new snapshot messages include {late_messages:,} at or before the last decided instant of their "
            "cluster (a late or repeated file, or a broker's clock set back): the instants they belong to are decided "
            "already"
        )
    link_files(resumed.output("volumes"), run.path("volumes"))
    link_files(os.path.join(incoming, "volumes"), run.path("volumes"))
    return f"({snapshots.read:,} new records, {figures['used']:,} used)"


def add_rejected(run: stages.Run) -> str:
    """rejected/: the last run's files of the inputs read in part (snapshots, traffic) and this run's rejected records
    (the new snapshots', the guard decisions', which every run reads whole); the snapshot figures become those of
    every run (the traffic's are carried with its analyses)."""
    resumed = run.resumed
    assert resumed is not None, "an incremental run has what the last run left"
    incoming = os.path.join(run.path(INCOMING), "rejected")
    new = stages.reject_into(run, incoming).get("snapshots", 0)
    for name in ("snapshots", "traffic"):
        link_files(os.path.join(resumed.output("rejected"), f"input={name}"), run.path(f"rejected/input={name}"))
    link_files(incoming, run.path("rejected"))
    before, figures = resumed.summary["inputs"]["snapshots"], run.summary["inputs"]["snapshots"]
    for key in ("read", "used", "rejected"):
        figures[key] += before[key]
    return f"({new:,} new rejected)"


def forecast_with_new_rows(run: stages.Run) -> str:
    """forecast/ from the last run's buckets and the new rows (forecast_buckets.buckets_with_new_rows): the forecast
    of every row without reading them again."""
    resumed = run.resumed
    assert resumed is not None, "an incremental run has what the last run left"
    saved = resumed.output(stages.FORECAST_BUCKETS)
    if not os.path.isdir(saved):
        raise NotResumable("the last run left no forecast buckets")
    try:
        buckets = forecast_buckets.buckets_with_new_rows(
            run.started_spark, saved, read_incoming_volumes(run), run.config
        )
    except ValueError as exc:
        raise NotResumable(str(exc)) from None
    return stages.write_forecast(run, buckets)


def resume_decision_timeline(run: stages.Run) -> str:
    """The timeline resumed after each cluster's last instant, from the new rows and each broker's latest rows;
    decisions/ holds the last run's files and the new ones, the counts those of the whole timeline."""
    config, resumed = run.config, run.resumed
    assert resumed is not None and run.volume_spans is not None, "the forecast runs before the decision timeline"
    interval = decisions.check_interval_micros(config)
    size = (
        decisions.timeline_size_of_volume_spans(run.volume_spans.spans, interval)
        if config.max_timeline_rows is not None
        else None
    )
    spark = run.started_spark
    seeds = seeds_frame(spark, resumed.resume)
    before = decisions.checkpoint_rows(latest_frame(spark, resumed.resume), seeds, config)
    rows = read_incoming_volumes(run).unionByName(before)
    observation = Observation("decisions")
    timeline = decisions.decision_timeline(rows, config, size=size, observation=observation, seeds=seeds)
    incoming = os.path.join(run.path(INCOMING), "decisions")
    with timeline_settings(spark):
        stages.write_output(timeline, incoming, "policy")
    link_files(resumed.output("decisions"), run.path("decisions"))
    link_files(incoming, run.path("decisions"))
    new_timeline = spark.read.schema(stages.TIMELINE_READ).parquet(incoming) if stages.has_parquet(incoming) else None
    resumed.new_timeline = new_timeline
    observed = observation.get
    counts_before = stage_registry.DECISIONS.recorded(resumed.summary)
    assert isinstance(counts_before, dict), "the last run recorded its timeline's counts"
    clusters = {seed["cluster"] for seed in resumed.resume["seeds"]}
    if new_timeline is not None:
        clusters |= {row["cluster"] for row in new_timeline.select("cluster").distinct().collect()}
    counts = {key: int(counts_before[key]) + int(observed[key]) for key in decisions.DECISION_COUNTS}
    counts["clusters"] = len(clusters)
    stage_registry.DECISIONS.record(run.summary, counts)
    return f"({int(observed['rows']):,} new rows)"


def carry_traffic_analyses(run: stages.Run) -> str:
    """The client and topic analyses as the last run wrote them: their input did not change."""
    resumed = run.resumed
    assert resumed is not None, "an incremental run has what the last run left"
    carried = []
    for stage in (stage_registry.CLIENTS, stage_registry.TOPICS):
        recorded = stage.recorded(resumed.summary)
        if recorded is None:
            continue
        stage.record(run.summary, recorded)
        for output in stage_registry.OUTPUTS:
            if output.stage is stage:
                link_files(resumed.output(output.name), run.path(output.name))
                carried.append(output.name)
    run.summary["inputs"]["traffic"] = dict(resumed.summary["inputs"]["traffic"])
    return f"({', '.join(carried)})"


def read_incoming_volumes(run: stages.Run) -> DataFrame:
    return run.started_spark.read.schema(schemas.VOLUMES).parquet(os.path.join(run.path(INCOMING), "volumes"))


def link_files(source: str, target: str) -> None:
    """Every file below ``source`` hard-linked at the same place below ``target`` (copied where the file system has
    no hard links), Spark's checksum files left out (nothing reads them back); Spark names its data files uniquely,
    so only its _SUCCESS markers meet, and are the same."""
    if os.path.isdir(source):
        ignore = shutil.ignore_patterns(".*")
        shutil.copytree(source, target, copy_function=_link_or_copy, ignore=ignore, dirs_exist_ok=True)


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:  # no hard links here, or a _SUCCESS marker already there
        shutil.copyfile(source, destination)


def previous_generation(out: str) -> str:
    """The generation DIR publishes now (the last run's), as a path."""
    return os.path.realpath(os.path.join(out, publication.CURRENT))


def record_checkpoint(run: stages.Run) -> str:
    """What the next incremental run resumes from (run.checkpoint), or why it cannot (run.no_resume)."""
    config, resumed = run.config, run.resumed
    spark = run.started_spark
    if sources.is_kafka(config.snapshots):
        return "(none: a snapshot topic is read whole on every run)"
    previous = resumed.resume if resumed is not None else {}
    stamps = stamps_after(previous.get("stamps"), run.ingested["snapshots"].check_counts.get)
    consumed = {**previous.get("consumed", {}), **run.consumed}
    if resumed is None:  # the whole of decisions/ and volumes/
        decisions_path = run.path("decisions")
        timeline = (
            spark.read.schema(stages.TIMELINE_READ).parquet(decisions_path)
            if stages.has_parquet(decisions_path)
            else None
        )
        volumes = stages.read_volumes(run)
    else:  # this run's rows of them; the resume holds the rest
        timeline, volumes = resumed.new_timeline, read_incoming_volumes(run)
    problem = stamps_problem(stamps, config.plausible_window, run.time_window().needs_median)
    if problem:
        run.no_resume = problem
        return "(none: the next run with new files is a full one)"
    if timeline is None:
        timeline = spark.createDataFrame([], stages.TIMELINE_READ)
    point = checkpoint(timeline, volumes, previous)
    run.checkpoint = {**point, "stamps": stamps, "consumed": {path: list(read) for path, read in consumed.items()}}
    return f"({len(point['seeds']):,} clusters, {len(point['latest']):,} latest rows)"


def discard_incoming(run: stages.Run) -> None:
    """The new rows' own copies, once the outputs hold them (hard links: nothing is copied)."""
    shutil.rmtree(run.path(INCOMING), ignore_errors=True)
