"""Read the inputs into the normalized frames, and every record that cannot be used into ``rejected`` with a reason.

Nothing is dropped silently: each input record ends up in exactly one of the two, so rows read = rows used + rows
rejected (the job checks it and writes the three counts to the summary). The checks themselves, time stamps'
plausible window included, are checks.py's; where files come from and how Spark is given them, sources.py's.
"""

import dataclasses
import functools
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from ansible_collections.headroom.kafka.plugins.module_utils import quota_spec
from headroom_pipeline import checks, schemas, sources
from headroom_pipeline.checks import TimeBounds, TimeWindow
from headroom_pipeline.config import ConfigError

REJECTED_COLUMNS = ["input", "source", "record", "reason"]
# Raw frames read from Parquet carry the timestamp-typed columns as they are, under this prefix.
NATIVE_TIME_PREFIX = "native_time_"


@dataclasses.dataclass
class Ingested:
    """Accepted rows, rejected rows (input, source, record, reason), how many records were read and the time
    bounds the records were held to.

    ``rows``: the accepted records, normalized. ``accepted_raw``: the same records with fields kept as the input has
    them where the normalized form would cost a per-record lambda (a snapshot's Volumes), for the stages that take
    either. ``check_counts``: an Observation that counts, during the first action on ``rows`` or ``accepted_raw`` (no
    pass of its own), the records checked and those rejected (``counts()``).
    """

    rows: DataFrame
    rejected: DataFrame
    read: int
    time_bounds: TimeBounds
    accepted_raw: DataFrame
    check_counts: Observation

    def counts(self) -> dict[str, int]:
        """{"checked", "rejected"} as counted during the first action on the accepted rows (it blocks
        until one ran)."""
        figures = self.check_counts.get
        return {"checked": int(figures["checked"]), "rejected": int(figures["rejected"])}


# The caller's first action on an input's frames (the job's write of volumes/), which load_snapshots and load_traffic
# run themselves when given one (see _checked).
FirstUse = Callable[[Ingested], None]


def time_field(raw: DataFrame, field: str) -> tuple[Column, Column, Column]:
    """(value, missing, well_formed) of a time field of the raw records: the Parquet timestamp where the files have
    one (its text form is then only rendered for rejected records), else the timestamp parsed from the text (null
    when unparsable; well_formed says whether the text has the ISO 8601 form at all)."""
    native = NATIVE_TIME_PREFIX + field
    if native in raw.columns:
        return F.col(native), F.col(native).isNull(), F.lit(True)
    text = F.col("parsed")[field]
    return checks.parse_timestamp(text), text.isNull(), checks.is_timestamp_text(text)


# -- raw records -------------------------------------------------------------------------------------------------
def _source_column(links: dict[str, str]) -> Column:
    """The file a record came from as a plain path: Spark reports it as a URI (percent-encoded; "+" is itself, so it
    is protected from the decoder, which reads it as a space), and files read through a link by the link's path."""
    uri = F.regexp_replace(F.input_file_name(), r"\+", "%2B")
    path = F.regexp_replace(F.coalesce(F.try_url_decode(uri), F.input_file_name()), "^file:(//)?", "")
    if not links:
        return path
    originals = F.create_map(
        *[F.lit(item) for pair in links.items() for item in (pair[0], sources.shown_path(pair[1]))]
    )
    return F.coalesce(originals[path], path)


def _raw_json(spark, files, schema, held=()):
    """(source, record, parsed, not_object) from JSON-lines files, and from ``held``: (source, line) read on the
    driver already (sources.resolve_input); blank lines are not records.

    Read as text and parsed with the explicit schema: nothing is inferred, so no content can make reading fail.
    """
    parts = []
    if files:
        locations, links = sources.spark_locations(files)
        text = spark.read.options(**sources.LOCAL_READ_OPTIONS).text(locations)
        parts.append(text.select(F.col("value"), _source_column(links).alias("source")))
    if held or not parts:
        parts.append(spark.createDataFrame([(line, source) for source, line in held], "value string, source string"))
    lines = functools.reduce(DataFrame.unionByName, parts).where(F.trim("value") != "")
    parsed = lines.select("source", F.col("value").alias("record"), F.from_json("value", schema).alias("parsed"))
    return parsed.withColumn("not_object", checks.not_json_object(F.col("record"), F.col("parsed")))


def _castable(frame, name, data_type):
    """Whether Spark can cast the column at all (a list where a number belongs cannot): checked by analysis only,
    with PySpark's logging of the refusal (a page of JSON on stderr per column) silenced, as the refusal is expected."""
    query_context_log = logging.getLogger("DataFrameQueryContextLogger")
    disabled, query_context_log.disabled = query_context_log.disabled, True
    try:
        # Reading the schema has Spark analyse the cast, which raises where it cannot cast.
        analysed = frame.select(F.col(name).try_cast(data_type)).schema
    except AnalysisException:
        return False
    finally:
        query_context_log.disabled = disabled
    return len(analysed.fields) == 1


def _raw_parquet(spark, files, schema):
    """(source, record, parsed) from Parquet; columns missing from the files are null, extra columns are ignored,
    and a column of a type that cannot be cast reads as missing (its records are rejected for it)."""
    locations, links = sources.spark_locations(files)
    frame = spark.read.options(**sources.LOCAL_READ_OPTIONS).parquet(*locations)
    present = set(frame.columns)
    columns, native = [], []
    for field in schema.fields:
        if field.name not in present or not _castable(frame, field.name, field.dataType):
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
        elif field.dataType == schemas.T.StringType() and isinstance(
            frame.schema[field.name].dataType, schemas.T.TimestampType
        ):
            # A timestamp column is already a point in time: used as it is (see native_time), and rendered in the
            # text form the text path parses for the record and the checks.
            columns.append(F.date_format(field.name, "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX").alias(field.name))
            native.append(F.col(field.name).alias(NATIVE_TIME_PREFIX + field.name))
        else:
            columns.append(F.col(field.name).try_cast(field.dataType).alias(field.name))
    # Every Parquet row is an object. Its text form is only needed for the rows that are rejected; the optimizer
    # prunes the to_json from the accepted rows, so reading stays a columnar scan.
    parsed = frame.select(_source_column(links).alias("source"), F.struct(*columns).alias("parsed"), *native)
    native_names = [
        NATIVE_TIME_PREFIX + field.name for field in schema.fields if NATIVE_TIME_PREFIX + field.name in parsed.columns
    ]
    return parsed.select(
        "source", F.to_json("parsed").alias("record"), "parsed", F.lit(False).alias("not_object"), *native_names
    )


def _raw_kafka(spark, url, schema, records=None):
    if records is None:
        records = sources.read_kafka_records(url)
    rows = [
        (where, key, value) for where, key, value in records if value is not None
    ]  # tombstones are deletions, not records
    frame = spark.createDataFrame(rows, "source string, key string, record string")
    parsed = frame.select("source", "record", F.from_json("record", schema).alias("parsed"), "key")
    return parsed.withColumn("not_object", checks.not_json_object(F.col("record"), F.col("parsed")))


def _raw(spark, location, schema, option, kafka_records=None, history_kind=None, only=None, consumed=None):
    """The raw records of an input; ``history_kind``: the kind of the disk guard's history files it reads (see
    sources.resolve_files); ``only`` and ``consumed`` as sources.resolve_input takes them."""
    if sources.is_kafka(location):
        return _raw_kafka(spark, location, schema, kafka_records)
    resolved = sources.resolve_input(location, option, history_kind, only, consumed)
    if resolved.format == "json":
        raw = _raw_json(spark, resolved.files, schema, resolved.held)
    else:
        raw = _raw_parquet(spark, resolved.files, schema)
    return raw.withColumn("key", F.lit(None).cast("string"))


def _split(raw, reason, raw_columns, input_name, observed=None):
    """(accepted raw, rejected, observation) from raw records and their first failing check.

    The observation counts the records checked and rejected during the first action on the accepted rows; it sits
    after the projection to the accepted columns, so that Spark still prunes what the accepted rows do not use
    (the text form of a record, for one, is only rendered for the rejected). ``observed``: (columns, aggregates) it
    also computes (checks.observed_bounds).
    """
    inputs, aggregates = observed or ({}, [])
    observation = Observation(f"{input_name} checked")
    checked = raw.withColumn("reason", reason)
    observed_rows = checked.select(*raw_columns, "reason", *[column.alias(name) for name, column in inputs.items()])
    observed_rows = observed_rows.observe(
        observation, F.count(F.lit(1)).alias("checked"), F.count("reason").alias("rejected"), *aggregates
    )
    accepted_raw = observed_rows.where(F.col("reason").isNull()).drop("reason", *inputs)
    rejected = checked.where(F.col("reason").isNotNull()).select(
        F.lit(input_name).alias("input"), "source", "record", "reason"
    )
    return accepted_raw, rejected, observation


def _timed(raw, field):
    """(``raw`` with the time field's columns, whether its stamp is usable: well-formed and in the instant range)."""
    at, missing, well_formed = time_field(raw, field)
    raw = raw.withColumns({"at": at, "at_missing": missing, "at_well_formed": well_formed})
    return raw, F.col("at_well_formed") & F.col("at").isNotNull() & checks.in_instant_range(F.col("at"))


def _time_checks(bounds):
    """The checks of a timed record's stamp (see _timed): well-formed, in the instant range, within ``bounds``."""
    at = F.col("at")
    return checks.time_checks(bounds.field, at, F.col("at_missing"), F.col("at_well_formed")) + bounds.checks(at)


# Builds an input's frames from its timed raw records, the bounds its stamps are held to, the records read, and what
# the observation also computes (checks.observed_bounds).
Frames = Callable[[DataFrame, TimeBounds, int, Any], "Ingested"]


def _checked(raw: DataFrame, field: str, window: TimeWindow, frames: Frames, first_use: FirstUse | None) -> "Ingested":
    """An input's frames, its records checked against the time bounds of ``window``.

    Without ``first_use``, one pass counts the records and finds the median first. With it, none: the frames are
    checked against the explicit bounds alone, and ``first_use``, the caller's first action on them (it must run
    one: the observation is read once it has), observes the count and the median on the way. The bounds from the
    median hold the records of almost every input (they exist for a broker whose clock was reset); when they would
    reject one, the frames are made again with them and ``first_use`` runs on those too, so that the result is the
    same either way.
    """
    raw, usable = _timed(raw, field)
    if first_use is None:
        read, bounds = checks.count_and_bounds(raw, field, F.col("at"), usable, window)
        return frames(raw, bounds, read, None)
    reaching = ~F.col("not_object") & usable
    provisional = frames(
        raw, TimeBounds(field, window, None), 0, checks.observed_bounds(F.col("at"), usable, reaching, window)
    )
    first_use(provisional)
    observed = provisional.check_counts.get
    bounds, held = checks.settle_bounds(field, window, observed)
    read = int(observed["checked"])
    exact = frames(raw, bounds, read, None)
    if held:
        # The rows are the provisional ones, and so are the figures their first use observed; later queries read the
        # exact frames, which observe no median again.
        return dataclasses.replace(exact, check_counts=provisional.check_counts)
    first_use(exact)
    return exact


# -- snapshots ---------------------------------------------------------------------------------------------------
def load_snapshots(
    spark: SparkSession,
    location: str,
    cluster_default: str = "default",
    option: str = "--snapshots",
    kafka_records: list[sources.KafkaRecord] | None = None,
    window: TimeWindow | None = None,
    first_use: FirstUse | None = None,
    only: Mapping[str, sources.Tail] | None = None,
    consumed: dict[str, tuple[int, str]] | None = None,
) -> Ingested:
    """Usage snapshot messages as the MESSAGES frame (one row per accepted message).

    ``kafka_records``: the records of a kafka:// location when the caller has read them already. ``window``: the
    TimeWindow of plausible SnapshotAt (default: 366 days either side of the median). ``first_use``: the caller's
    first action on the result, run here (see _checked): it saves the pass that otherwise finds the median. ``only``:
    read just these files of ``location``, and of each its Tail (an incremental run); ``consumed``: filled with what
    was read of each uncompressed history file (sources.resolve_input).
    """
    raw = _raw(spark, location, schemas.SNAPSHOT, option, kafka_records, "snapshots", only, consumed)
    frames = functools.partial(_snapshot_frames, cluster_default=cluster_default)
    return _checked(raw, "SnapshotAt", window or TimeWindow(), frames, first_use)


def _snapshot_frames(raw, bounds, read, observed, cluster_default):
    parsed = F.col("parsed")
    times = _time_checks(bounds)
    reason = checks.first_reason(*checks.snapshot_checks(F.col("not_object"), parsed, F.col("key"), times))
    soft, hard = parsed["SoftLimit"], parsed["HardLimit"]
    common = [
        F.coalesce(parsed["ClusterId"], F.lit(cluster_default)).alias("cluster"),
        F.coalesce(parsed["BrokerId"], F.col("key").try_cast("long")).alias("broker_id"),
        F.col("at"),
        checks.limit_type(soft).alias("soft_type"),
        soft["level"].alias("soft_level"),
        checks.limit_type(hard).alias("hard_type"),
        hard["level"].alias("hard_level"),
    ]
    accepted_raw, rejected, observation = _split(
        raw, reason, common + [parsed["Volumes"].alias("volumes")], "snapshots", observed
    )
    normalized = F.transform(
        "volumes",
        lambda v: F.struct(
            v["VolumeName"].alias("log_dir"),
            v["Capacity"].alias("total_bytes"),
            (v["Capacity"] - v["Consumed"]).alias("usable_bytes"),
        ),
    )
    rows = accepted_raw.withColumn("volumes", normalized)
    return Ingested(rows, rejected, read, bounds, accepted_raw, observation)


# -- traffic -----------------------------------------------------------------------------------------------------
def load_traffic(
    spark: SparkSession,
    location: str,
    option: str = "--traffic",
    window: TimeWindow | None = None,
    first_use: FirstUse | None = None,
) -> Ingested:
    """Client traffic rows as the TRAFFIC_ROWS frame; ``window``: the TimeWindow of plausible ts; ``first_use`` as
    for load_snapshots."""
    raw = _raw(spark, location, schemas.TRAFFIC, option)
    return _checked(raw, "ts", window or TimeWindow(), _traffic_frames, first_use)


def _traffic_frames(raw, bounds, read, observed):
    parsed = F.col("parsed")
    times = _time_checks(bounds)
    reason = checks.first_reason(*checks.traffic_checks(F.col("not_object"), parsed, times))
    accepted_columns = [F.col("at").alias("ts")] + [
        parsed[name].alias(name) for name in schemas.TRAFFIC.fieldNames() if name != "ts"
    ]
    accepted, rejected, observation = _split(raw, reason, accepted_columns, "traffic", observed)
    return Ingested(accepted, rejected, read, bounds, accepted, observation)


# -- the disk guard's decisions -----------------------------------------------------------------------------------
def load_guard_decisions(
    spark: SparkSession,
    location: str,
    cluster_default: str = "default",
    option: str = "--guard-decisions",
    window: TimeWindow | None = None,
    first_use: FirstUse | None = None,
) -> Ingested:
    """The disk guard's decision records as the GUARD_DECISION_ROWS frame (one row per accepted record).

    ``cluster_default``: the cluster of a record without ClusterId, as for snapshots. ``window``: the TimeWindow of
    plausible DecidedAt; ``first_use`` as for load_snapshots.
    """
    raw = _raw(spark, location, schemas.GUARD_DECISION, option, history_kind="decisions")
    frames = functools.partial(_guard_decision_frames, cluster_default=cluster_default)
    return _checked(raw, "DecidedAt", window or TimeWindow(), frames, first_use)


def _guard_decision_frames(raw, bounds, read, observed, cluster_default):
    parsed = F.col("parsed")
    quota_changes = F.get_json_object(F.col("record"), "$.QuotaChanges")
    times = _time_checks(bounds)
    reason = checks.first_reason(*checks.guard_decision_checks(F.col("not_object"), parsed, quota_changes, times))
    accepted_columns = [
        F.coalesce(parsed["ClusterId"], F.lit(cluster_default)).alias("cluster"),
        F.col("at").alias("decided_at"),
        parsed["Policy"].alias("policy"),
        parsed["ThrottleFactor"].alias("throttle_factor"),
        parsed["State"].alias("state"),
        parsed["Reason"].alias("decision_reason"),  # "reason" is the check's
        parsed["Mode"].alias("mode"),
        parsed["Observed"].alias("observed"),
        parsed["Complete"].alias("complete"),
        parsed["FallbackApplied"].alias("fallback_applied"),
        parsed["MissingDataApplied"].alias("missing_data_applied"),
        parsed["MissingBrokers"].alias("missing_brokers"),
        F.coalesce(F.json_array_length(quota_changes), F.lit(0)).alias("entities_changed"),
        quota_changes.alias("quota_changes"),
        F.col("source"),
    ]
    accepted, rejected, observation = _split(raw, reason, accepted_columns, "guard_decisions", observed)
    return Ingested(accepted, rejected, read, bounds, accepted, observation)


# -- quotas ------------------------------------------------------------------------------------------------------
def load_quotas(path: str, option: str = "--quotas") -> list[dict[str, Any]]:
    """Quota entries [{entity, quota_values}] from client_quota_info's JSON (its whole result, or just its quotas list).

    Entities use client_quota_info's keys (user, client_id, ip; ``<default>`` for a default entity). A bad file fails
    before Spark starts, naming the entry.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"{option}: cannot read {path!r}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"{option}: {path!r} is not JSON: {exc}") from None
    entries = document.get("quotas") if isinstance(document, dict) else document
    if not isinstance(entries, list):
        raise ConfigError(
            f"{option}: {path!r} must hold client_quota_info's result "
            '({"quotas": [{entity, quota_values}]}) or its quotas list'
        )
    items = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("quota_values"), dict):
            raise ConfigError(
                f"{option}: quotas[{index}] must be "
                f"{{entity: {{user|client_id|ip: name}}, quota_values: {{key: number}}}} (got {entry!r})"
            )
        items.append(dict(entry["quota_values"], entity=entry.get("entity")))
    try:
        desired = quota_spec.desired_state(items)
    except quota_spec.QuotaSpecError as exc:
        raise ConfigError(f"{option}: {exc}") from None
    result = []
    for entity, values in desired.values():
        result.append({"entity": quota_spec.entity_to_spec(entity), "quota_values": values})
    return result
