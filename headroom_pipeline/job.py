"""The job: check inputs, ingest, run the stages, write the outputs and the summary.

Output directory (each run replaces these; other files in DIR are left alone):
  summary.json                 counts (rows_read = rows_used + rows_rejected), per-stage counts, timings, settings,
                               the time bounds each input was held to, warnings (an input with no usable record)
  volumes/                     the normalized history: one row per volume and snapshot (Parquet)
  decisions/policy=<policy>/   the decision timeline per cluster and check instant (Parquet)
  forecast/                    per volume: growth trend and when it crosses its limits, ranked (Parquet)
  clients/, client_recommendations/   client quota analysis (with --traffic)
  topics/, topic_thresholds/   topic threshold analysis (with --traffic and --topic-thresholds)
  rejected/                    every input record that could not be used, with the reason (JSON lines)
  report/index.html            the HTML report with its PNG charts
"""

import contextlib
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
        self.current = "start"          # the stage a failure is reported in

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
        self.progress.current = self.name
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


def _has_parquet(path):
    """Whether an output directory holds data files: Spark writes none for an empty frame partitioned by a column,
    and reading such a directory back without a schema fails (UNABLE_TO_INFER_SCHEMA)."""
    return os.path.isdir(path) and any(name.endswith(".parquet") for unused_root, unused_dirs, names in os.walk(path) for name in names)


def _count(spark, path):
    return spark.read.parquet(path).count() if _has_parquet(path) else 0


def run(config):
    """Run every stage; return the summary (also written to DIR/summary.json).

    Raises ConfigError for bad input found before Spark starts and JobError for anything that fails after: an error
    inside Spark or its JVM (out of memory, a file that cannot be read, the JVM gone) ends as a JobError naming the
    stage, never as a summary of a run that did not finish.
    """
    quotas, proposed, plan, kafka_records = _check_inputs(config)
    from headroom_pipeline.session import spark_session

    out = config.out
    try:
        os.makedirs(out, exist_ok=True)
        _remove_outputs_of_previous_run(out, config, plan)
    except OSError as exc:
        raise ConfigError(f"--out: cannot write to {out!r}: {exc.strerror or exc}") from None
    stages = 5 + (2 if config.traffic else 0) + (1 if config.traffic and plan else 0) + (1 if config.report else 0)
    progress = Progress(config.progress, stages)
    summary = {"out": os.path.abspath(out), "inputs": {}, "stages": {}, "settings": _settings(config), "warnings": []}
    from pyspark.sql import SparkSession

    owned = SparkSession.getActiveSession() is None      # a caller's session (tests, notebooks) is left running
    with failures_named(progress):
        with progress.stage("start Spark"):
            spark = spark_session(config.master, driver_memory=config.driver_memory, conf=config.spark_conf)
            summary["spark"] = _spark_facts(spark)
        try:
            _run_stages(spark, config, summary, progress, (quotas, proposed, plan, kafka_records))
        finally:
            if owned:
                _stop(spark)
    progress.say(f"wrote {out}: {summary['rows_used']:,} rows used, {summary['rows_rejected']:,} rejected"
                 + (f"; report {summary['report']}" if summary.get("report") else ""))
    return summary


def _run_stages(spark, config, summary, progress, inputs):
    """The stages, each reading its input where it is cheapest: the snapshots are checked as they are read, never
    held in memory or on local disk; volumes/, written first, feeds the forecast, whose observation also gives every
    volume's span, from which the timeline's size is bounded before it is built; the decision timeline reads and
    checks the snapshots once more (a columnar scan costs less than keeping them); rejected records are read only
    when the first pass counted some."""
    from pyspark.sql import Observation

    from headroom_pipeline import decisions, forecast, ingest, schemas
    from headroom_pipeline.session import global_window_warnings_quiet

    quotas, proposed, plan, kafka_records = inputs
    out, window = config.out, _time_window(config)
    volumes_path = os.path.join(out, "volumes")
    with progress.stage("read snapshots") as stage:
        snapshots = ingest.load_snapshots(spark, config.snapshots, config.cluster, kafka_records=kafka_records, window=window)
        _write(ingest.explode_volumes(snapshots.as_read), volumes_path)
        summary["inputs"]["snapshots"] = _input_figures(snapshots)
        stage.detail = f"({snapshots.read:,} records, {summary['inputs']['snapshots']['used']:,} used)"
    ingested = {"snapshots": snapshots}
    traffic = None
    if config.traffic:
        with progress.stage("read traffic") as stage:
            loaded = ingest.load_traffic(spark, config.traffic, window=window)
            traffic = loaded.rows.persist(cache_level())
            traffic.count()
            ingested["traffic"] = loaded
            summary["inputs"]["traffic"] = _input_figures(loaded)
            stage.detail = f"({loaded.read:,} records)"
    with progress.stage("reject unusable records") as stage:
        path = os.path.join(out, "rejected")
        counted = {name: figures.pop("rejected_counted") for name, figures in summary["inputs"].items()}
        written = [ingested[name].rejected for name, count in counted.items() if count]
        _write_rejected(written, path)
        counts = _rejected_counts(spark, path) if written else {}
        for name, figures in summary["inputs"].items():
            figures["rejected"] = counts.get(name, 0)
        stage.detail = f"({sum(counts.values()):,} rejected)"
    with progress.stage("volume forecast") as stage:
        counted = Observation("forecast")
        with global_window_warnings_quiet(spark):      # the ranking of all volumes is one window on purpose
            _write(forecast.volume_forecast(spark.read.schema(schemas.VOLUMES).parquet(volumes_path), config, observation=counted),
                   os.path.join(out, "forecast"))
        observed = counted.get
        summary["stages"]["forecast"] = {key: int(observed[key]) for key in forecast.FORECAST_COUNTS}
        stage.detail = f"({summary['stages']['forecast']['volumes']:,} volumes)"
    with progress.stage("decision timeline") as stage:
        interval = decisions.check_interval_micros(config)
        size = decisions.timeline_size_of_volume_spans(observed[forecast.VOLUME_SPANS], interval) if config.max_timeline_rows is not None else None
        counted = Observation("decisions")
        _write(decisions.decision_timeline(snapshots.as_read, config, size=size, observation=counted), os.path.join(out, "decisions"), "policy")
        summary["stages"]["decisions"] = {key: int(counted.get[key]) for key in decisions.DECISION_COUNTS}
        stage.detail = f"({summary['stages']['decisions']['rows']:,} rows)"
    if traffic is not None:
        _client_and_topic_stages(spark, config, summary, progress, traffic, (quotas, proposed, plan))
    _account(summary)
    summary["warnings"] = _nothing_usable(summary["inputs"])
    summary["timings_seconds"] = progress.timings
    _ensure_spark_ran_through(spark)
    _write_summary(out, summary)
    if config.report:
        with progress.stage("report") as stage:
            from headroom_pipeline import report

            summary["report"] = report.write_report(spark, out, summary)
            stage.detail = summary["report"]
        summary["timings_seconds"] = progress.timings
        _ensure_spark_ran_through(spark)
        _write_summary(out, summary)


def _input_figures(ingested):
    """An input's figures once its accepted rows were first used: records read, used, and rejected as counted on
    the way (rejected/ is written only when that count is above 0; _account compares it with what was written)."""
    counts = ingested.counts()
    return {"read": ingested.read, "used": counts["checked"] - counts["rejected"], "rejected_counted": counts["rejected"],
            "time_bounds": ingested.time_bounds.describe()}


def _client_and_topic_stages(spark, config, summary, progress, traffic, analyses):
    quotas, proposed, plan = analyses
    out = config.out
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


def _time_window(config):
    from headroom_pipeline.checks import TimeWindow

    return TimeWindow(since=config.since, until=config.until, spread=config.plausible_window)


def _nothing_usable(inputs):
    """A warning per input of which no record could be used: the run is complete, but says nothing about the fleet."""
    warnings = []
    for name, figures in inputs.items():
        if figures["used"]:
            continue
        if not figures["read"]:
            warnings.append(f"--{name}: no records to read (empty input); its outputs are empty")
        else:
            warnings.append(f"--{name}: none of the {figures['read']:,} records read could be used (each is in rejected/ with "
                            "its reason); its outputs are empty")
    return warnings


# -- failures ---------------------------------------------------------------------------------------------------
MAX_REASON = 600


@contextlib.contextmanager
def failures_named(progress):
    """Any error of Spark, its JVM or the machine inside the block becomes a JobError naming the stage it hit, with
    a one-line reason: the job never reports success after one, and never ends in a traceback for one."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    from headroom_pipeline.decisions import TimelineTooLarge

    try:
        yield
    except TimelineTooLarge as exc:
        raise JobError(f"{progress.current}: {exc}") from None
    except (Py4JError, PySparkException, OSError, EOFError, MemoryError) as exc:
        raise JobError(f"{progress.current}: {failure_reason(exc)}") from None


def failure_reason(exc):
    """One line that says what went wrong, from an exception of Spark, Py4J or the JVM (whose texts run to pages)."""
    try:
        text = str(exc)
    except Exception:  # pylint: disable=broad-except  # a Py4J error asks the JVM for its text, and the JVM may be gone
        text = ""
    if "OutOfMemoryError" in text or isinstance(exc, MemoryError):
        return ("out of memory (java.lang.OutOfMemoryError): give the driver more with --driver-memory, or narrow the input "
                "(--since/--until, fewer files)")
    if isinstance(exc, (ConnectionError, EOFError)) or type(exc).__name__ == "Py4JNetworkError":
        return f"lost Spark's JVM ({type(exc).__name__}: it stopped, ran out of memory or was killed; its log is above)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling"):
        lines = lines[1:]                           # Py4J's own first line says only which call it was
    reason = lines[0].lstrip(": ") if lines else type(exc).__name__
    return reason if len(reason) <= MAX_REASON else reason[:MAX_REASON] + "..."


def _ensure_spark_ran_through(spark):
    """A SparkContext that stopped (its JVM hit a fatal error) leaves outputs that cannot be trusted."""
    if spark.sparkContext._jsc.sc().isStopped():  # pylint: disable=protected-access
        raise JobError("Spark stopped during the run (its log above says why): the outputs are incomplete")


def _stop(spark):
    """Stop a session the job started; a JVM that is already gone has nothing left to stop."""
    try:
        spark.stop()
    except Exception:  # pylint: disable=broad-except  # the failure that killed it is the one reported
        pass


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
    """The run's settings for the summary: locations with their secrets masked, instants in ISO 8601."""
    from headroom_pipeline.sources import mask_location

    settings = {}
    for key, value in vars(config).items():
        if key == "spark_conf":          # Spark settings may carry credentials (spark.hadoop.fs.s3a.secret.key)
            continue
        settings[key] = value.isoformat().replace("+00:00", "Z") if hasattr(value, "isoformat") else mask_location(value)
    return settings


def _write_rejected(frames, path):
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


def _rejected_counts(spark, path):
    """Rejected rows per input, read back from what was written (with a schema: nothing to infer from no rows)."""
    if not os.path.isdir(path):
        return {}
    return {name[len("input="):]: spark.read.schema("reason string").json(os.path.join(path, name)).count()
            for name in os.listdir(path) if name.startswith("input=")}


def _account(summary):
    """rows_read = rows_used + rows_rejected, per input and in total; a mismatch is a bug, never a rounding."""
    inputs = summary["inputs"]
    for name, figures in inputs.items():
        if figures["read"] != figures["used"] + figures["rejected"]:
            raise JobError(f"{name}: {figures['read']} records read but {figures['used']} used + {figures['rejected']} rejected")
    for key in ("read", "used", "rejected"):
        summary[f"rows_{key}"] = sum(figures[key] for figures in inputs.values())


def _client_counts(spark, out):
    from pyspark.sql import functions as F

    if not _has_parquet(os.path.join(out, "clients")):
        return {"windows": 0, "windows_throttled": 0, "clients": _count(spark, os.path.join(out, "client_recommendations"))}
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
