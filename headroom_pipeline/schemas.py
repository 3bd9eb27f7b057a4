"""Explicit schemas: the inputs as written by their producers, and the normalized frames the stages share."""

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

LIMIT = T.StructType([T.StructField("type", T.StringType()), T.StructField("level", T.DoubleType())])
VOLUME = T.StructType(
    [
        T.StructField("VolumeName", T.StringType()),
        T.StructField("Capacity", T.LongType()),
        T.StructField("Consumed", T.LongType()),
    ]
)
# One usage snapshot message (usage_snapshot's JSON lines, the compacted topic's values, or Parquet with these columns).
SNAPSHOT = T.StructType(
    [
        T.StructField("SnapshotAt", T.StringType()),
        T.StructField("HardLimit", LIMIT),
        T.StructField("SoftLimit", LIMIT),
        T.StructField("Volumes", T.ArrayType(VOLUME)),
        T.StructField("BrokerId", T.LongType()),
        T.StructField("ClusterId", T.StringType()),
    ]
)
# Client traffic exported from broker metrics: bytes in the interval ending at ts.
TRAFFIC = T.StructType(
    [
        T.StructField("ts", T.StringType()),
        T.StructField("broker_id", T.LongType()),
        T.StructField("user", T.StringType()),
        T.StructField("client_id", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("bytes_in", T.LongType()),
        T.StructField("bytes_out", T.LongType()),
    ]
)
# One decision record of the disk guard (its history directory's decisions-*.jsonl[.gz], guard_history.decision_record).
# QuotaChanges ({entity, before, after} per quota entity changed) is carried as its JSON text.
GUARD_DECISION = T.StructType(
    [
        T.StructField("DecidedAt", T.StringType()),
        T.StructField("ClusterId", T.StringType()),
        T.StructField("Policy", T.StringType()),
        T.StructField("ThrottleFactor", T.DoubleType()),
        T.StructField("State", T.StringType()),
        T.StructField("Reason", T.StringType()),
        T.StructField("Observed", T.BooleanType()),
        T.StructField("Complete", T.BooleanType()),
        T.StructField("FallbackApplied", T.BooleanType()),
        T.StructField("MissingDataApplied", T.BooleanType()),
        T.StructField("MissingBrokers", T.ArrayType(T.LongType())),
        T.StructField("Mode", T.StringType()),
    ]
)

# Normalized frames (what ingest hands to the stages).
# messages: one row per accepted snapshot message; limits in the graded rules' names (min_free_bytes, ...).
# ingest also hands them over with the snapshot's own volume structs (VOLUME); the stages take either (volume_fields).
MESSAGE_VOLUME = T.StructType(
    [
        T.StructField("log_dir", T.StringType(), False),
        T.StructField("total_bytes", T.LongType(), False),
        T.StructField("usable_bytes", T.LongType(), False),
    ]
)
MESSAGES = T.StructType(
    [
        T.StructField("cluster", T.StringType(), False),
        T.StructField("broker_id", T.LongType(), False),
        T.StructField("at", T.TimestampType(), False),
        T.StructField("soft_type", T.StringType()),
        T.StructField("soft_level", T.DoubleType()),
        T.StructField("hard_type", T.StringType()),
        T.StructField("hard_level", T.DoubleType()),
        T.StructField("volumes", T.ArrayType(MESSAGE_VOLUME, False), False),
    ]
)
# volumes: messages exploded, one row per (cluster, broker_id, log_dir, at), and per message without volumes one row
# without log_dir and sizes; ``message`` names the message a row comes from (see volume_rows).
VOLUMES = T.StructType(
    [f for f in MESSAGES.fields if f.name != "volumes"]
    + [T.StructField("message", T.LongType(), False)]
    + [T.StructField(f.name, f.dataType, True) for f in MESSAGE_VOLUME.fields]
)
# traffic: accepted traffic rows.
TRAFFIC_ROWS = T.StructType(
    [
        T.StructField("ts", T.TimestampType(), False),
        T.StructField("broker_id", T.LongType(), False),
        T.StructField("user", T.StringType()),
        T.StructField("client_id", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("bytes_in", T.LongType(), False),
        T.StructField("bytes_out", T.LongType(), False),
    ]
)

# guard_decisions: accepted guard decision records.
GUARD_DECISION_ROWS = T.StructType(
    [
        T.StructField("cluster", T.StringType(), False),
        T.StructField("decided_at", T.TimestampType(), False),
        T.StructField("policy", T.StringType(), False),
        T.StructField("throttle_factor", T.DoubleType(), False),
        T.StructField("state", T.StringType(), False),
        T.StructField("decision_reason", T.StringType()),
        T.StructField("mode", T.StringType()),
        T.StructField("observed", T.BooleanType()),
        T.StructField("complete", T.BooleanType()),
        T.StructField("fallback_applied", T.BooleanType()),
        T.StructField("missing_data_applied", T.BooleanType()),
        T.StructField("missing_brokers", T.ArrayType(T.LongType())),
        T.StructField("entities_changed", T.IntegerType()),
        T.StructField("quota_changes", T.StringType()),
        T.StructField("source", T.StringType()),
    ]
)


def volume_fields(volume: Column, element: T.StructType) -> tuple[Column, Column, Column]:
    """(log_dir, total_bytes, usable_bytes) of a volume struct: the normalized form (log_dir, total_bytes,
    usable_bytes), or the snapshot's own (VolumeName, Capacity, Consumed) that ingest passes through (a per-message
    lambda to rename it would cost more than the rest of the read; after an explode it is one subtraction per row)."""
    if "usable_bytes" in element.fieldNames():
        return volume["log_dir"], volume["total_bytes"], volume["usable_bytes"]
    return volume["VolumeName"], volume["Capacity"], volume["Capacity"] - volume["Consumed"]


def volume_element(frame: DataFrame, column: str = "volumes") -> T.StructType:
    """The struct type of the elements of ``frame``'s array column ``column`` (MESSAGE_VOLUME or VOLUME)."""
    volumes = frame.schema[column].dataType
    if not (isinstance(volumes, T.ArrayType) and isinstance(volumes.elementType, T.StructType)):
        raise TypeError(f"{column} must be an array of structs (got {volumes.simpleString()})")
    return volumes.elementType


def volume_rows(messages: DataFrame) -> DataFrame:
    """The VOLUMES frame of ``messages`` (MESSAGES, or as ingest reads them): one row per volume of each message.

    ``message`` names the message the row comes from: a 64-bit hash (xxhash64) of its whole content, so that the
    rows of one message are found together after any shuffle, and two copies of one message (read twice) are one
    message; a message without volumes gives one row whose log_dir and sizes are null, as it still tells that its
    broker reported (ingest accepts no volume without a name).
    """
    message_columns = [name for name in MESSAGES.fieldNames() if name != "volumes"]
    exploded = messages.select(
        *message_columns,
        F.xxhash64(*message_columns, "volumes").alias("message"),
        F.explode_outer("volumes").alias("volume"),
    )
    log_dir, total, usable = volume_fields(F.col("volume"), volume_element(messages))
    return exploded.select(
        *message_columns,
        "message",
        log_dir.alias("log_dir"),
        total.alias("total_bytes"),
        usable.alias("usable_bytes"),
    )


def reported_volumes(volume_rows: DataFrame) -> DataFrame:
    """The rows of VOLUMES that are volumes: a row without log_dir tells only that a broker without volumes
    reported (volume_rows)."""
    return volume_rows.where(F.col("log_dir").isNotNull())
