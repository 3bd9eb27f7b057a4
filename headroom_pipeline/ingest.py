"""Read the inputs into the normalized frames, and every record that cannot be used into ``rejected`` with a reason.

Nothing is dropped silently: each input record ends up in exactly one of the two, so rows read = rows used + rows
rejected (the job checks it and writes the three counts to the summary).
"""

import dataclasses
import json

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from headroom_pipeline import schemas, sources
from headroom_pipeline.collection import ensure_importable
from headroom_pipeline.config import ConfigError

ensure_importable()

# pylint: disable=wrong-import-position
from ansible_collections.headroom.kafka.plugins.module_utils import quota_spec  # noqa: E402
from ansible_collections.headroom.kafka.plugins.module_utils.volume_limits import SNAPSHOT_LIMIT_NAMES  # noqa: E402

# ISO 8601 date-time with a zone, as module_utils.snapshots accepts it (normalized below into the form Spark casts).
TIMESTAMP_WITH_ZONE = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}([.,]\d{1,9})?)?([Zz]|[+-]\d{2}(:?\d{2})?)$"
LIMIT_TYPE_OF_NAME = {name: limit_type for limit_type, name in SNAPSHOT_LIMIT_NAMES.items()}
REJECTED_COLUMNS = ["input", "source", "record", "reason"]
# Raw frames read from Parquet carry the timestamp-typed columns as they are, under this prefix.
NATIVE_TIME_PREFIX = "native_time_"


@dataclasses.dataclass
class Ingested:
    """Accepted rows, rejected rows (input, source, record, reason) and how many records were read."""
    rows: DataFrame
    rejected: DataFrame
    read: int


def parse_timestamp(text: Column) -> Column:
    """A timestamp from ISO 8601 text with a zone; null when the text is not one (no exception, even under ANSI).

    Spark casts the common forms; lower-case z, a comma before the fraction and times without seconds, which
    module_utils.snapshots also accepts, are rewritten first.
    """
    normalized = F.regexp_replace(F.translate(text, ",z", ".Z"), r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2})([Z+-])", "$1T$2:00$3")
    return F.when(text.rlike(TIMESTAMP_WITH_ZONE), normalized.try_cast("timestamp"))


def time_field(raw: DataFrame, field: str):
    """(value, missing) of a time field of the raw records: the Parquet timestamp where the files have one (its text
    form is then only rendered for rejected records), else the timestamp parsed from the text (null when unparsable)."""
    native = NATIVE_TIME_PREFIX + field
    if native in raw.columns:
        return F.col(native), F.col(native).isNull()
    return parse_timestamp(F.col("parsed")[field]), F.col("parsed")[field].isNull()


def _first_reason(*checks):
    """The first (condition, reason) that holds, else null."""
    return F.coalesce(*[F.when(condition, F.lit(reason)) for condition, reason in checks])


# -- raw records -------------------------------------------------------------------------------------------------
def _raw_json(spark, files, schema):
    """(source, record, parsed, not_object) from JSON-lines files; blank lines are not records."""
    lines = spark.read.text(files).withColumn("source", F.input_file_name())
    lines = lines.where(F.trim("value") != "")
    parsed = lines.select("source", F.col("value").alias("record"), F.from_json("value", schema).alias("parsed"))
    return parsed.withColumn("not_object", not_json_object(F.col("record"), F.col("parsed")))


def _raw_parquet(spark, files, schema):
    """(source, record, parsed) from Parquet; columns missing from the files are null, extra columns are ignored."""
    frame = spark.read.parquet(*files)
    present = set(frame.columns)
    columns, native = [], []
    for field in schema.fields:
        if field.name not in present:
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
        elif field.dataType == schemas.T.StringType() and isinstance(frame.schema[field.name].dataType, schemas.T.TimestampType):
            # A timestamp column is already a point in time: used as it is (see native_time), and rendered in the
            # text form the text path parses for the record and the checks.
            columns.append(F.date_format(field.name, "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX").alias(field.name))
            native.append(F.col(field.name).alias(NATIVE_TIME_PREFIX + field.name))
        else:
            columns.append(F.col(field.name).cast(field.dataType).alias(field.name))
    # Every Parquet row is an object. Its text form is only needed for the rows that are rejected; the optimizer
    # prunes the to_json from the accepted rows, so reading stays a columnar scan.
    parsed = frame.select(F.input_file_name().alias("source"), F.struct(*columns).alias("parsed"), *native)
    native_names = [NATIVE_TIME_PREFIX + field.name for field in schema.fields if NATIVE_TIME_PREFIX + field.name in parsed.columns]
    return parsed.select("source", F.to_json("parsed").alias("record"), "parsed", F.lit(False).alias("not_object"), *native_names)


def _raw_kafka(spark, url, schema, records=None):
    if records is None:
        records = sources.read_kafka_records(url)
    rows = [(where, key, value) for where, key, value in records if value is not None]   # tombstones are deletions, not records
    frame = spark.createDataFrame(rows, "source string, key string, record string")
    parsed = frame.select("source", "record", F.from_json("record", schema).alias("parsed"), "key")
    return parsed.withColumn("not_object", not_json_object(F.col("record"), F.col("parsed")))


def _raw(spark, location, schema, option, kafka_records=None):
    if sources.is_kafka(location):
        return _raw_kafka(spark, location, schema, kafka_records)
    kind, files = sources.resolve_files(location, option)
    raw = _raw_json(spark, files, schema) if kind == "json" else _raw_parquet(spark, files, schema)
    return raw.withColumn("key", F.lit(None).cast("string"))


def _split(raw, reason, accepted_columns, input_name):
    """Accepted rows and rejected rows from raw records and their first failing check."""
    checked = raw.withColumn("reason", reason)
    accepted = checked.where(F.col("reason").isNull()).select(*accepted_columns)
    rejected = checked.where(F.col("reason").isNotNull()).select(F.lit(input_name).alias("input"), "source", "record", "reason")
    return accepted, rejected


# -- snapshots ---------------------------------------------------------------------------------------------------
def _limit_reason(limit: Column, field: str):
    names = list(LIMIT_TYPE_OF_NAME)
    return [
        (limit.isNotNull() & (limit["type"].isNull() | ~limit["type"].isin(names)), f"{field}.type must be one of {', '.join(sorted(names))}"),
        (limit.isNotNull() & (limit["level"].isNull() | (limit["level"] < 0) | F.isnan(limit["level"])), f"{field}.level must be a number >= 0"),
        (limit.isNotNull() & (limit["type"] == "MinFreePercentage") & (limit["level"] > 100),
         f"{field}.level is a percentage for MinFreePercentage and must be between 0 and 100"),
    ]


def _limit_type(limit: Column) -> Column:
    mapping = F.create_map(*[item for pair in LIMIT_TYPE_OF_NAME.items() for item in (F.lit(pair[0]), F.lit(pair[1]))])
    return mapping[limit["type"]]


def has_null(values: Column) -> Column:
    """True when an array holds a null element."""
    return F.size(F.array_compact(values)) != F.size(values)


def not_json_object(record: Column, parsed: Column) -> Column:
    """True for text that is not one JSON object (Spark's permissive parser yields a struct of nulls for it)."""
    return parsed.isNull() | ~F.ltrim(record).startswith("{") | F.get_json_object(record, "$").isNull()


def snapshot_checks(not_object: Column, parsed: Column, at: Column, key: Column, at_missing: Column):
    """(condition, reason) pairs in the order they are checked; the first that holds rejects the record."""
    volumes = parsed["Volumes"]
    # The volumes' fields as arrays (a missing volume gives a null element): array functions, which Spark compiles,
    # where a per-element lambda is not needed.
    names, capacities, consumed = volumes["VolumeName"], volumes["Capacity"], volumes["Consumed"]
    soft, hard = parsed["SoftLimit"], parsed["HardLimit"]
    return [
        (not_object, "not a JSON object in the usage snapshot schema"),
        (at_missing, "SnapshotAt is missing"),
        (at.isNull(), "SnapshotAt must be an ISO 8601 date-time with a time zone, such as 2026-11-22T04:07:09.123Z"),
        (parsed["BrokerId"].isNull() & key.isNull(), "BrokerId is missing (or not a whole number)"),
        (F.coalesce(parsed["BrokerId"], key.try_cast("long")) < 0, "BrokerId must be a broker id, a whole number >= 0"),
        (key.isNotNull() & parsed["BrokerId"].isNotNull() & (key.try_cast("long").isNull() | (key.try_cast("long") != parsed["BrokerId"])),
         "BrokerId does not match the record key"),
        (volumes.isNull(), "Volumes is missing (or not a list of {VolumeName, Capacity, Consumed})"),
        (has_null(names) | F.array_contains(names, ""), "a volume lacks its VolumeName"),
        (has_null(capacities) | has_null(consumed), "a volume lacks Capacity or Consumed (or they are not whole numbers of bytes)"),
        ((F.array_min(capacities) < 0) | (F.array_min(consumed) < 0), "a volume has a negative size"),
        (F.exists(volumes, lambda v: v["Consumed"] > v["Capacity"]), "a volume's Consumed exceeds its Capacity"),
        (F.size(F.array_distinct(names)) != F.size(volumes), "a VolumeName appears twice"),
        *_limit_reason(soft, "SoftLimit"),
        *_limit_reason(hard, "HardLimit"),
    ]


def load_snapshots(spark, location, cluster_default="default", option="--snapshots", kafka_records=None) -> Ingested:
    """Usage snapshot messages as the MESSAGES frame (one row per accepted message).

    ``kafka_records``: the records of a kafka:// location when the caller has read them already.
    """
    raw = _raw(spark, location, schemas.SNAPSHOT, option, kafka_records)
    at, at_missing = time_field(raw, "SnapshotAt")
    raw = raw.withColumns({"at": at, "at_missing": at_missing})
    parsed = F.col("parsed")
    reason = _first_reason(*snapshot_checks(F.col("not_object"), parsed, F.col("at"), F.col("key"), F.col("at_missing")))
    soft, hard = parsed["SoftLimit"], parsed["HardLimit"]
    accepted_columns = [
        F.coalesce(parsed["ClusterId"], F.lit(cluster_default)).alias("cluster"),
        F.coalesce(parsed["BrokerId"], F.col("key").try_cast("long")).alias("broker_id"),
        F.col("at"),
        _limit_type(soft).alias("soft_type"), soft["level"].alias("soft_level"),
        _limit_type(hard).alias("hard_type"), hard["level"].alias("hard_level"),
        F.transform(parsed["Volumes"], lambda v: F.struct(
            v["VolumeName"].alias("log_dir"), v["Capacity"].alias("total_bytes"),
            (v["Capacity"] - v["Consumed"]).alias("usable_bytes"))).alias("volumes"),
    ]
    accepted, rejected = _split(raw, reason, accepted_columns, "snapshots")
    return Ingested(accepted, rejected, raw.count())


def explode_volumes(messages: DataFrame) -> DataFrame:
    """The VOLUMES frame: one row per (cluster, broker_id, log_dir, at)."""
    exploded = messages.select("cluster", "broker_id", "at", "soft_type", "soft_level", "hard_type", "hard_level",
                               F.explode("volumes").alias("volume"))
    return exploded.select("*", "volume.*").drop("volume")


# -- traffic -----------------------------------------------------------------------------------------------------
def traffic_checks(not_object: Column, parsed: Column, ts: Column, ts_missing: Column):
    return [
        (not_object, "not a JSON object with ts, broker_id, user, client_id, topic, bytes_in and bytes_out"),
        (ts_missing, "ts is missing"),
        (ts.isNull(), "ts must be an ISO 8601 date-time with a time zone, such as 2026-11-22T04:07:09Z"),
        (parsed["broker_id"].isNull(), "broker_id is missing (or not a whole number)"),
        (parsed["broker_id"] < 0, "broker_id must be a whole number >= 0"),
        (parsed["bytes_in"].isNull() | parsed["bytes_out"].isNull(), "bytes_in and bytes_out are required (whole numbers of bytes)"),
        ((parsed["bytes_in"] < 0) | (parsed["bytes_out"] < 0), "bytes_in and bytes_out must be >= 0"),
    ]


def load_traffic(spark, location, option="--traffic") -> Ingested:
    """Client traffic rows as the TRAFFIC_ROWS frame."""
    raw = _raw(spark, location, schemas.TRAFFIC, option)
    ts, ts_missing = time_field(raw, "ts")
    raw = raw.withColumns({"ts_parsed": ts, "ts_missing": ts_missing})
    parsed = F.col("parsed")
    reason = _first_reason(*traffic_checks(F.col("not_object"), parsed, F.col("ts_parsed"), F.col("ts_missing")))
    accepted_columns = [F.col("ts_parsed").alias("ts")] + [parsed[name].alias(name) for name in schemas.TRAFFIC.fieldNames() if name != "ts"]
    accepted, rejected = _split(raw, reason, accepted_columns, "traffic")
    return Ingested(accepted, rejected, raw.count())


# -- quotas ------------------------------------------------------------------------------------------------------
def load_quotas(path, option="--quotas"):
    """Quota entries [{entity, values}] from client_quota_info's JSON (its whole result, or just its quotas list).

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
        raise ConfigError(f"{option}: {path!r} must hold client_quota_info's result ({{\"quotas\": [{{entity, values}}]}}) or its quotas list")
    items = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("values"), dict):
            raise ConfigError(f"{option}: quotas[{index}] must be {{entity: {{user|client_id|ip: name}}, values: {{key: number}}}} (got {entry!r})")
        items.append(dict(entry["values"], entity=entry.get("entity")))
    try:
        desired = quota_spec.desired_state(items)
    except quota_spec.QuotaSpecError as exc:
        raise ConfigError(f"{option}: {exc}") from None
    result = []
    for entity, values in desired.values():
        result.append({"entity": quota_spec.entity_to_spec(entity), "values": values})
    return result
