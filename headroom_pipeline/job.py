"""The job: check the inputs, run the stages (PIPELINE) in order, write the summary.

The outputs in DIR are listed in stage_registry.OUTPUTS (what each holds: docs/docsite/rst/guide_pipeline.rst,
"Outputs"). Each run writes them into a generation of its own and publishes them all at once when it finishes
(publication.py): a reader sees the last finished run's outputs or the new ones, never a mix, and a run that fails
leaves the published outputs as they were (and its unfinished generation, which the next run removes). Outputs an
earlier run wrote that this one does not are removed then; other files in DIR are left alone.

With a state directory (--state, run_state) a run whose settings and input files are those of the last run that
finished starts no Spark and changes nothing; any other run is a full one, and the state is recorded after it.

Bad input fails before Spark's JVM starts: _check_inputs runs, and the output directory is prepared, before the first
stage, "start Spark", starts it. Importing this module loads pyspark's Python code but starts no JVM; the command
line imports it once the arguments are parsed.
"""

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

from headroom_pipeline import incremental, ingest, publication, run_state, sources, stage_registry, stages, topics
from headroom_pipeline.config import ConfigError, PipelineConfig
from headroom_pipeline.decisions import TimelineTooLarge

# The stages in the order they run, each with the function that does its work (stages.py). The progress count,
# the progress lines and the removal of a previous run's outputs follow from this table and the registry,
# stage_registry.py, which says when each stage runs and which outputs it writes.
PIPELINE = (
    (stage_registry.START_SPARK, stages.start_spark),
    (stage_registry.READ_SNAPSHOTS, stages.read_snapshots),
    (stage_registry.READ_TRAFFIC, stages.read_traffic),
    (stage_registry.READ_GUARD_DECISIONS, stages.read_guard_decisions),
    (stage_registry.REJECT, stages.reject_unusable_records),
    (
        stage_registry.FORECAST,
        stages.forecast_volumes,
    ),  # before the timeline: its observation bounds the timeline's size
    (stage_registry.DECISIONS, stages.build_decision_timeline),
    (stage_registry.GUARD_COMPARISON, stages.compare_guard_decisions),  # reads the timeline back
    (stage_registry.CLIENTS, stages.analyse_client_quotas),
    (stage_registry.TOPICS, stages.analyse_topic_thresholds),
    (stage_registry.CHECKPOINT, incremental.record_checkpoint),
    (stage_registry.REPORT, stages.write_report),
)
# An incremental run's (incremental.py): the new snapshot records added to the last run's outputs; the guard's
# decisions, which are few, are read and compared whole; the traffic analyses, whose input is unchanged, carried over.
INCREMENTAL_PIPELINE = (
    (stage_registry.START_SPARK, stages.start_spark),
    (stage_registry.READ_SNAPSHOTS, incremental.read_new_snapshots),
    (stage_registry.READ_GUARD_DECISIONS, stages.read_guard_decisions),
    (stage_registry.REJECT, incremental.add_rejected),
    (stage_registry.FORECAST, incremental.forecast_with_new_rows),
    (stage_registry.DECISIONS, incremental.resume_decision_timeline),
    (stage_registry.GUARD_COMPARISON, stages.compare_guard_decisions),
    (stage_registry.CARRY_TRAFFIC, incremental.carry_traffic_analyses),
    (stage_registry.CHECKPOINT, incremental.record_checkpoint),
    (stage_registry.REPORT, stages.write_report),
)


SUMMARY = run_state.SUMMARY  # written last into its generation, and published with the other outputs


class JobError(RuntimeError):
    """The job could not finish; the message says which stage and why."""


def run(config: PipelineConfig) -> dict[str, Any]:
    """Run every stage that the settings ask for; return the summary (also written to DIR/summary.json).

    Raises ConfigError for bad input found before Spark starts and JobError for anything that fails after: an error
    inside Spark or its JVM (out of memory, a file that cannot be read, the JVM gone) ends as a JobError naming the
    stage, never as a summary of a run that did not finish.
    """
    # Taken before _check_inputs reads them: an edit in between is a change for the next run.
    named_files = run_state.settings_file_digests(_files_named_by_settings(config)) if config.state else {}
    inputs, listed = _check_inputs(config)
    if config.state is None:
        return _run_stages(config, inputs).summary
    with run_state.locked(config.state):
        current = run_state.fingerprint(vars(config), named_files)
        # Listed before anything is read: what the guard appends meanwhile is new to the next run.
        current_manifest = run_state.manifest(listed) if listed is not None else None
        if current_manifest is None:
            decision = run_state.Decision(run_state.FULL, "a kafka:// snapshot topic is read whole on every run")
        else:
            previous = run_state.load(config.state)
            decision = run_state.decide(previous, current, current_manifest, run_state.output_listing(config.out))
        progress = Progress(config.progress, 0)
        if decision.mode == run_state.UNCHANGED:
            progress.say(f"nothing to do: {decision.reason}; {config.out} is up to date")
            summary = _read_summary(os.path.join(config.out, SUMMARY))
            summary["incremental"] = decision.as_summary()
            return summary
        run = None
        if decision.mode == run_state.INCREMENTAL:
            assert previous is not None, "a run resumes from the state of the one before"
            progress.say(f"an incremental run: {decision.reason}")
            resumed = stages.Resumed(
                decision.reads,
                previous["resume"],
                _read_summary(os.path.join(config.out, SUMMARY)),
                incremental.previous_generation(config.out),
            )
            try:
                run = _run_stages(config, inputs, decision.as_summary(), resumed)
            except incremental.NotResumable as exc:
                decision = run_state.Decision(run_state.FULL, f"{decision.reason}, but {exc}")
        if run is None:
            progress.say(f"a full run: {decision.reason}")
            run = _run_stages(config, inputs, decision.as_summary())
        if current_manifest is not None:
            resume = _kept_reads(run.checkpoint, current_manifest)
            _save_state(
                config,
                run_state.record(
                    current, current_manifest, run_state.output_listing(config.out), resume, run.no_resume
                ),
                run.summary,
            )
        return run.summary


def _kept_reads(checkpoint, current_manifest):
    """The checkpoint with what was read of the guard's files of the current hour kept for the files still listed
    (or whose .jsonl.gz is): the others will never be read in part."""
    if checkpoint is None:
        return None
    listed = {row[0] for row in current_manifest.get(run_state.SNAPSHOTS, [])}
    consumed = {path: read for path, read in checkpoint["consumed"].items() if path in listed or path + ".gz" in listed}
    return {**checkpoint, "consumed": consumed}


def _save_state(config, state, summary):
    """The run finished and its outputs stand: a state that cannot be saved costs the next run a full one, said."""
    try:
        run_state.save(config.state, state)
    except OSError as exc:
        summary.setdefault("warnings", []).append(
            f"--state: cannot save the state in {config.state!r} ({exc.strerror or exc}): the next run is a full one"
        )


def _run_stages(config, inputs, incremental_summary=None, resumed=None):
    """Every stage the settings ask for, in order (those of an incremental run with ``resumed``); the run's state,
    its summary among it."""
    table = PIPELINE if resumed is None else INCREMENTAL_PIPELINE
    pipeline = [(stage, work) for stage, work in table if stage.runs(config, inputs.plan)]
    out = config.out
    try:
        os.makedirs(out, exist_ok=True)
        with publication.locked(out):
            return _run_in_generation(config, inputs, pipeline, incremental_summary, resumed)
    except OSError as exc:
        raise ConfigError(f"--out: cannot write to {out!r}: {exc.strerror or exc}") from None


def _run_in_generation(config, inputs, pipeline, incremental_summary, resumed):
    """The stages, writing into a new generation of --out (whose lock the caller holds), published when done."""
    out = config.out
    writes = [
        output.name
        for output in stage_registry.OUTPUTS
        if output.stage is None or output.stage.runs(config, inputs.plan)
    ]
    earlier_layout = _outputs_of_earlier_layout(out)
    publication.check(out, writes, earlier_layout)
    generation = publication.begin(out)
    progress = Progress(config.progress, len(pipeline))
    summary: dict[str, Any] = {
        "out": os.path.abspath(out),
        "inputs": {},
        "stages": {},
        "settings": _settings(config),
        "warnings": [],
    }
    if incremental_summary is not None:
        summary["incremental"] = incremental_summary
    state = stages.Run(config, inputs, summary, generation.path, generation.warnings, resumed=resumed)
    with failures_named(progress):
        try:
            for stage, work in pipeline:
                if stage.reads_summary:  # written before such a stage, and again at the end
                    _finish(state, progress)
                with progress.stage(stage.name) as line:
                    line.detail = work(state)
            _finish(state, progress)
        finally:
            if state.owned:
                _stop(state.spark)
        incremental.discard_incoming(state)
        progress.current = "publish"
        # summary.json last: while it is still the earlier layout's real file, it says which directories were the job's.
        outputs = sorted((output.name for output in stage_registry.OUTPUTS), key=lambda name: name == SUMMARY)
        publication.publish(generation, outputs, earlier_layout)
    progress.say(
        f"wrote {out}: {summary['rows_used']:,} rows used, {summary['rows_rejected']:,} rejected"
        + (f"; report {summary['report']}" if summary.get("report") else "")
    )
    return state


def _finish(state, progress):
    """The summary of what the stages did, checked (rows read = used + rejected) and written to DIR/summary.json."""
    state.release()
    summary = state.summary
    _account(summary)
    summary["warnings"] = _nothing_usable(summary["inputs"]) + state.warnings
    summary["timings_seconds"] = progress.timings
    _ensure_spark_ran_through(state.spark)
    _write_summary(state.write_to, summary)


class Progress:
    """Stage lines on stderr (long runs show where they are); timings for the summary."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled, self.total, self.step = enabled, total, 0
        self.timings: dict[str, float] = {}
        self.started = time.monotonic()
        self.current = "start"  # the stage a failure is reported in

    def stage(self, name: str) -> "_Stage":
        return _Stage(self, name)

    def say(self, text: str) -> None:
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
            self.progress.say(
                f"{self.progress.step}/{self.progress.total} {self.name} done in {elapsed:.1f}s {self.detail}".rstrip()
            )
        return False


def _check_inputs(config):
    """Everything that can be checked without Spark, so that bad input fails in a second, not after JVM start.

    The snapshot topic of a kafka:// source is read here too: an unreachable cluster fails before Spark starts.
    """
    config.validate()
    listed: dict[str, list[str]] = {}
    if not sources.is_kafka(config.snapshots):
        listed["--snapshots"] = sources.resolve_files(config.snapshots, "--snapshots", history_kind="snapshots")[1]
        if config.guard_decisions is None and sources.has_history_files(config.snapshots, "decisions"):
            # A guard's history directory: what the guard decided is compared with the replay unless told otherwise.
            config.guard_decisions = config.snapshots
    else:
        sources.parse_kafka_url(config.snapshots)
    if config.traffic:
        listed["--traffic"] = sources.resolve_files(config.traffic, "--traffic")[1]
    if config.guard_decisions:
        listed["--guard-decisions"] = sources.resolve_files(
            config.guard_decisions, "--guard-decisions", history_kind="decisions"
        )[1]
    quotas = ingest.load_quotas(config.quotas) if config.quotas else []
    proposed = ingest.load_quotas(config.proposed_quotas, "--proposed-quotas") if config.proposed_quotas else None
    plan = topics.load_plan(config.topic_thresholds) if config.topic_thresholds else None
    if (config.quotas or config.proposed_quotas or config.topic_thresholds) and not config.traffic:
        raise ConfigError(
            "--quotas, --proposed-quotas and --topic-thresholds analyse client traffic: give --traffic too"
        )
    if os.path.exists(config.out) and not os.path.isdir(config.out):
        raise ConfigError(f"--out: {config.out!r} exists and is not a directory")
    kafka_records = sources.read_kafka_records(config.snapshots) if sources.is_kafka(config.snapshots) else None
    # A topic has no files to list: every run reads it whole (None: no manifest).
    return stages.CheckedInputs(quotas, proposed, plan, kafka_records), (None if kafka_records is not None else listed)


def _files_named_by_settings(config):
    """The files whose content the outputs depend on beside the inputs: quotas, proposed quotas, the threshold plan."""
    return [path for path in (config.quotas, config.proposed_quotas, config.topic_thresholds) if path]


def _read_summary(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise JobError(f"--out: cannot read {path!r}, which the last run wrote: {exc}") from None


def _nothing_usable(inputs):
    """A warning per input of which no record could be used: the run is complete, but says nothing about the fleet."""
    warnings = []
    for name, figures in inputs.items():
        if figures["used"]:
            continue
        option = "--" + name.replace("_", "-")
        if not figures["read"]:
            warnings.append(f"{option}: no records to read (empty input); its outputs are empty")
        else:
            warnings.append(
                f"{option}: none of the {figures['read']:,} records read could be used (each is in rejected/ with "
                "its reason); its outputs are empty"
            )
    return warnings


# -- failures ---------------------------------------------------------------------------------------------------
MAX_REASON = 600


@contextlib.contextmanager
def failures_named(progress: Progress) -> Iterator[None]:
    """Any error of Spark, its JVM or the machine inside the block becomes a JobError naming the stage it hit, with
    a one-line reason: the job never reports success after one, and never ends in a traceback for one."""
    try:
        yield
    except TimelineTooLarge as exc:
        raise JobError(f"{progress.current}: {exc}") from None
    except (Py4JError, PySparkException, OSError, EOFError, MemoryError) as exc:
        raise JobError(f"{progress.current}: {failure_reason(exc)}") from None


def failure_reason(exc: BaseException) -> str:
    """One line that says what went wrong, from an exception of Spark, Py4J or the JVM (whose texts run to pages)."""
    try:
        text = str(exc)
    except Exception:  # pylint: disable=broad-except  # a Py4J error asks the JVM for its text, and the JVM may be gone
        text = ""
    if "OutOfMemoryError" in text or isinstance(exc, MemoryError):
        return (
            "out of memory (java.lang.OutOfMemoryError): give the driver more with --driver-memory, or narrow the "
            "input (--since/--until, fewer files)"
        )
    if isinstance(exc, (ConnectionError, EOFError)) or type(exc).__name__ == "Py4JNetworkError":
        return f"lost Spark's JVM ({type(exc).__name__}: it stopped, ran out of memory or was killed; its log is above)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling"):
        lines = lines[1:]  # Py4J's own first line says only which call it was
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


def _outputs_of_earlier_layout(out):
    """The outputs that a run of the layout before generations wrote as real files and directories in DIR, as its
    summary.json (a real file, not a symlink) says; empty otherwise. Publication replaces or removes them, and never a
    directory the job did not write."""
    summary_path = os.path.join(out, SUMMARY)
    if os.path.islink(summary_path):
        return set()
    try:
        with open(summary_path, encoding="utf-8") as handle:
            previous = json.load(handle)
    except (OSError, ValueError):
        return set()
    if not isinstance(previous, dict) or previous.get("out") != os.path.abspath(out):
        return set()
    return {output.name for output in stage_registry.OUTPUTS if stage_registry.written(output.name, previous)}


def _settings(config):
    """The run's settings for the summary: locations with their secrets masked, instants in ISO 8601."""
    settings = {}
    for key, value in vars(config).items():
        if key == "spark_conf":  # Spark settings may carry credentials (spark.hadoop.fs.s3a.secret.key)
            continue
        settings[key] = (
            value.isoformat().replace("+00:00", "Z") if hasattr(value, "isoformat") else sources.mask_location(value)
        )
    return settings


def _account(summary):
    """rows_read = rows_used + rows_rejected, per input and in total; a mismatch is a bug, never a rounding."""
    inputs = summary["inputs"]
    for name, figures in inputs.items():
        if figures["read"] != figures["used"] + figures["rejected"]:
            raise JobError(
                f"{name}: {figures['read']} records read but {figures['used']} used + {figures['rejected']} rejected"
            )
    for key in ("read", "used", "rejected"):
        summary[f"rows_{key}"] = sum(figures[key] for figures in inputs.values())


def _write_summary(out, summary):
    path = os.path.join(out, SUMMARY)
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2, sort_keys=True, default=str)
        handle.write("\n")
    os.replace(temporary, path)
