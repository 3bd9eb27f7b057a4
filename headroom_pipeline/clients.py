"""Stage 3: client traffic per window against Kafka's client quotas (KIP-13), and recommended quotas.

The rules are client_quota_math's (read its docstring for the precedence, the sharing of a quota, the
throttle-time window W and the recommendation); this module applies them with DataFrame expressions only, and both
pass the vectors in tests/vectors/client_quotas.json.

Windows are epoch-aligned, ``--client-window`` seconds long, and hold the traffic rows whose interval ends inside
them (a row stamped exactly at a window's end belongs to that window). A window's rate is its bytes divided by the
window's length. Traffic without a user is unauthenticated traffic that only client-id quotas can match.

Which quota applies is decided once per distinct (user, client_id): one left join per precedence level against a
small broadcast table of that level's entities (levels made of defaults only are literals), then per quota key the
first level that sets it (coalesce). A quota's use is the bytes of everyone sharing it (the group Kafka measures with
one sensor) on the broker in the window: a window sum over (broker, window, group).
"""

from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from headroom_pipeline import client_quota_math
from headroom_pipeline.config import PipelineConfig

DIRECTIONS = client_quota_math.DIRECTIONS
WINDOW_KEYS = ["user", "client_id", "broker_id", "window_start", "window_end"]
CLIENT_KEYS = ["user", "client_id"]


def client_analysis(
    traffic: DataFrame, quotas: list[dict[str, Any]], proposed: list[dict[str, Any]] | None, config: PipelineConfig
) -> tuple[DataFrame, DataFrame]:
    """(windows_df, recommendations_df) from TRAFFIC_ROWS and quota entries as ingest.load_quotas returns them.

    windows_df: one row per (user, client_id, broker_id, window) with the bytes and rates of both directions, the
    quota that applies, the entity it comes from, the group that shares it and that group's rate on the broker, the
    fraction of the quota used and Kafka's and KIP-13's throttle times; with ``proposed`` (a whole quota set) the same
    figures prefixed ``proposed_``. recommendations_df: one row per (user, client_id).
    """
    window_seconds = float(config.client_window)
    window_us = client_quota_math.window_length_us(window_seconds)
    window_ms = client_quota_math.kafka_window_ms(config.quota_window_num, config.quota_window_size)
    windows = _window_bytes(traffic, window_us, window_seconds)
    clients = windows.select(*CLIENT_KEYS).distinct()
    quota_sets = [("", quotas or [])] + ([("proposed_", proposed)] if proposed is not None else [])
    for prefix, entries in quota_sets:
        clients = _resolve(clients, entries, prefix)
    windows = _with_quotas(windows, clients)
    for prefix, _entries in quota_sets:
        windows = _quota_figures(windows, prefix, window_seconds, window_ms)
    windows = windows.select(*_window_columns(proposed is not None))
    recommendations = _recommendations(
        windows, config.recommend_percentile, config.recommend_headroom, proposed is not None
    )
    return windows, recommendations


# -- windows ------------------------------------------------------------------------------------------------------
def _window_bytes(traffic: DataFrame, window_us: int, window_seconds: float) -> DataFrame:
    """Bytes per (user, client_id, broker_id, window), with the window's rates."""
    ts_us = F.unix_micros("ts")
    window_end_us = ts_us + F.pmod(-ts_us, F.lit(window_us).cast("long"))
    grouped = traffic.groupBy("user", "client_id", "broker_id", window_end_us.alias("window_end_us")).agg(
        F.sum("bytes_in").alias("produce_bytes"), F.sum("bytes_out").alias("fetch_bytes")
    )
    return grouped.select(
        "user",
        "client_id",
        "broker_id",
        "window_end_us",
        F.timestamp_micros(F.col("window_end_us") - window_us).alias("window_start"),
        F.timestamp_micros("window_end_us").alias("window_end"),
        "produce_bytes",
        (F.col("produce_bytes") / F.lit(window_seconds)).alias("produce_bytes_per_sec"),
        "fetch_bytes",
        (F.col("fetch_bytes") / F.lit(window_seconds)).alias("fetch_bytes_per_sec"),
    )


def _with_quotas(windows: DataFrame, resolved: DataFrame) -> DataFrame:
    """Each window with its client's quota columns; null names match null names (unauthenticated, no client id)."""
    renamed = resolved.withColumnsRenamed({key: f"resolved_{key}" for key in CLIENT_KEYS})
    condition = None
    for key in CLIENT_KEYS:
        equal = windows[key].eqNullSafe(renamed[f"resolved_{key}"])
        condition = equal if condition is None else condition & equal
    return windows.join(renamed, condition, "left").drop(*[f"resolved_{key}" for key in CLIENT_KEYS])


# -- which quota applies ------------------------------------------------------------------------------------------
def _present(column: Column) -> Column:
    return column.isNotNull() & (column != "")


def _applies(level: int) -> Column:
    """The client has the names the level needs (see client_quota_math.level_applies)."""
    condition = F.lit(True)
    for key in client_quota_math.SHARED_BY[level]:
        condition = condition & _present(F.col(key))
    return condition


def _entries_by_level(entries):
    """{level: [(entity, producer value or None, consumer value or None)]} for entries that set a byte rate."""
    by_level = {}
    for entry in entries:
        level = client_quota_math.entity_level(entry.get("entity"))
        values = entry.get("quota_values") or {}
        rates = [values.get(key) for key in client_quota_math.QUOTA_KEYS]
        if level is None or all(rate is None for rate in rates):
            continue
        by_level.setdefault(level, []).append(
            (entry["entity"], *[None if rate is None else float(rate) for rate in rates])
        )
    return by_level


def _join_keys(level):
    """The client columns a level's entities are matched on by name (default parts match any name)."""
    unused_level, user_part, client_part = client_quota_math.LEVELS[level - 1]
    return [key for key, part in (("user", user_part), ("client_id", client_part)) if part == "name"]


def _level_values(
    clients: DataFrame, level: int, items: list[tuple[Any, ...]], spark: SparkSession
) -> tuple[DataFrame, dict[str, Column]]:
    """The level's candidate values per client: joined from a broadcast table, or literals for default-only levels."""
    columns = [f"level{level}_{key}" for key in client_quota_math.QUOTA_KEYS] + [f"level{level}_entity"]
    keys = _join_keys(level)
    if not keys:
        entity, *rates = items[0]  # a default-only level holds one entity at most
        literals = [F.lit(rate).cast("double") for rate in rates] + [F.lit(client_quota_math.describe_entity(entity))]
        return clients, dict(zip(columns, literals, strict=True))
    rows = [
        tuple(entity[key] for key in keys) + tuple(rates) + (client_quota_math.describe_entity(entity),)
        for entity, *rates in items
    ]
    key_columns = [f"level{level}_match_{key}" for key in keys]
    table = spark.createDataFrame(
        rows,
        ", ".join(
            [f"{name} string" for name in key_columns]
            + [f"{name} double" for name in columns[:-1]]
            + [f"{columns[-1]} string"]
        ),
    )
    condition = None
    for key, name in zip(keys, key_columns, strict=True):
        equal = clients[key] == table[name]
        condition = equal if condition is None else condition & equal
    joined = clients.join(F.broadcast(table), condition, "left").drop(*key_columns)
    return joined, {name: F.col(name) for name in columns}


def _resolve(clients: DataFrame, entries: list[dict[str, Any]], prefix: str) -> DataFrame:
    """Per client and quota key: the value, entity and sharing group of the first level that sets the key."""
    spark = clients.sparkSession
    candidates = {}
    for level, items in sorted(_entries_by_level(entries).items()):
        clients, candidates[level] = _level_values(clients, level, items, spark)
    for direction, key in DIRECTIONS:
        names = client_quota_math.column_names(prefix, direction, key)
        levels = [
            (level, columns[f"level{level}_{key}"], columns[f"level{level}_entity"])
            for level, columns in sorted(candidates.items())
        ]
        chosen = [(level, _applies(level) & value.isNotNull(), value, entity) for level, value, entity in levels]
        value = F.coalesce(
            *[F.when(hit, value) for unused_level, hit, value, unused_entity in chosen], F.lit(None).cast("double")
        )
        entity = F.coalesce(
            *[F.when(hit, entity) for unused_level, hit, unused_value, entity in chosen], F.lit(None).cast("string")
        )
        level = F.coalesce(
            *[F.when(hit, F.lit(level)) for level, hit, unused_value, unused_entity in chosen], F.lit(None).cast("int")
        )
        clients = (
            clients.withColumn(names["quota"], value)
            .withColumn(names["entity"], entity)
            .withColumn(names["group"], _group(level))
        )
    scratch = [name for columns in candidates.values() for name in columns if name in clients.columns]
    return clients.drop(*scratch)


def _group(level: Column) -> Column:
    """The group sharing the quota, named as client_quota_math.quota_group names it."""
    both = F.concat(F.lit("user="), F.col("user"), F.lit(",client_id="), F.col("client_id"))
    user = F.concat(F.lit("user="), F.col("user"))
    client = F.concat(F.lit("client_id="), F.col("client_id"))
    groups = {1: both, 2: both, 3: user, 4: both, 5: both, 6: user, 7: client, 8: client}
    cases = iter(groups.items())
    number, name = next(cases)
    expression = F.when(level == number, name)
    for number, name in cases:
        expression = expression.when(level == number, name)
    return expression


# -- throttling ---------------------------------------------------------------------------------------------------
def kafka_throttle_time_ms(rate: Column, quota: Column, window_ms: int) -> Column:
    """client_quota_math.kafka_throttle_time_ms as a column: 0 within quota or without one."""
    return F.when(rate > quota, F.floor((rate - quota) / quota * F.lit(window_ms).cast("long") + F.lit(0.5))).otherwise(
        F.lit(0).cast("long")
    )


def kip13_throttle_time_ms(window_bytes: Column, quota: Column, window_seconds: float) -> Column:
    """client_quota_math.kip13_throttle_time_ms as a column."""
    bound = quota * F.lit(window_seconds)
    return F.when(window_bytes > bound, F.floor((window_bytes - bound) / quota * F.lit(1000.0) + F.lit(0.5))).otherwise(
        F.lit(0).cast("long")
    )


def _quota_figures(windows: DataFrame, prefix: str, window_seconds: float, window_ms: int) -> DataFrame:
    for direction, key in DIRECTIONS:
        names = client_quota_math.column_names(prefix, direction, key)
        quota = F.col(names["quota"])
        sharers = Window.partitionBy("broker_id", "window_end_us", names["group"])
        shared_bytes = F.when(quota.isNotNull(), F.sum(f"{direction}_bytes").over(sharers))
        windows = windows.withColumn(names["group_rate"], shared_bytes / F.lit(window_seconds))
        rate = F.col(names["group_rate"])
        windows = windows.select(
            "*",
            (rate / quota).alias(names["fraction"]),
            kafka_throttle_time_ms(rate, quota, window_ms).alias(names["throttle"]),
            kip13_throttle_time_ms(shared_bytes, quota, window_seconds).alias(names["kip13"]),
        )
    return windows


def _window_columns(with_proposed: bool) -> list[str]:
    columns = WINDOW_KEYS[:]
    for prefix in [""] + (["proposed_"] if with_proposed else []):
        for direction, key in DIRECTIONS:
            names = client_quota_math.column_names(prefix, direction, key)
            if not prefix:
                columns += [f"{direction}_bytes", f"{direction}_bytes_per_sec"]
            columns += [
                names[name] for name in ("quota", "entity", "group", "group_rate", "fraction", "throttle", "kip13")
            ]
    return columns


# -- recommendations ----------------------------------------------------------------------------------------------
def recommended_quota(rate_percentile: Column, peak: Column, headroom: float) -> Column:
    """client_quota_math.recommended_quota as a column: null without bytes, else at least 1 KiB, in whole KiB."""
    kib = F.lit(client_quota_math.KIB).cast("long")
    rounded = F.ceil(rate_percentile * F.lit(headroom) / kib) * kib
    return F.when(peak > 0, F.greatest(kib, rounded))


def _over(prefix: str) -> Column:
    return (F.col(f"{prefix}quota_used_fraction") > 1.0) | (F.col(f"{prefix}fetch_quota_used_fraction") > 1.0)


def _recommendations(windows: DataFrame, fraction: float, headroom: float, with_proposed: bool) -> DataFrame:
    figures = [
        F.count(F.lit(1)).alias("windows"),
        F.max("produce_bytes_per_sec").alias("peak_produce_bytes_per_sec"),
        F.percentile("produce_bytes_per_sec", F.lit(fraction)).alias("percentile_produce_bytes_per_sec"),
        F.max("fetch_bytes_per_sec").alias("peak_fetch_bytes_per_sec"),
        F.percentile("fetch_bytes_per_sec", F.lit(fraction)).alias("percentile_fetch_bytes_per_sec"),
        F.max("producer_byte_rate").alias("producer_byte_rate"),
        F.max("quota_entity").alias("quota_entity"),
        F.max("consumer_byte_rate").alias("consumer_byte_rate"),
        F.max("fetch_quota_entity").alias("fetch_quota_entity"),
        F.count(F.when(_over(""), 1)).alias("windows_over_quota"),
    ]
    if with_proposed:
        figures += [
            F.max("proposed_producer_byte_rate").alias("proposed_producer_byte_rate"),
            F.max("proposed_consumer_byte_rate").alias("proposed_consumer_byte_rate"),
            F.count(F.when(_over("proposed_"), 1)).alias("proposed_windows_over_quota"),
        ]
    per_client = windows.groupBy(*CLIENT_KEYS).agg(*figures)
    user, client_id = F.col("user"), F.col("client_id")
    entity = F.concat_ws(
        ",",
        F.when(_present(user), F.concat(F.lit("user="), user)),
        F.when(_present(client_id), F.concat(F.lit("client_id="), client_id)),
    )
    advice = [
        recommended_quota(
            F.col("percentile_produce_bytes_per_sec"), F.col("peak_produce_bytes_per_sec"), headroom
        ).alias("recommended_producer_byte_rate"),
        recommended_quota(F.col("percentile_fetch_bytes_per_sec"), F.col("peak_fetch_bytes_per_sec"), headroom).alias(
            "recommended_consumer_byte_rate"
        ),
        F.when(entity != "", entity).alias("recommended_entity"),
    ]
    columns = [
        "user",
        "client_id",
        "windows",
        "peak_produce_bytes_per_sec",
        "percentile_produce_bytes_per_sec",
        "producer_byte_rate",
        "quota_entity",
        "peak_fetch_bytes_per_sec",
        "percentile_fetch_bytes_per_sec",
        "consumer_byte_rate",
        "fetch_quota_entity",
        "recommended_producer_byte_rate",
        "recommended_consumer_byte_rate",
        "recommended_entity",
        "windows_over_quota",
    ]
    if with_proposed:
        columns += ["proposed_producer_byte_rate", "proposed_consumer_byte_rate", "proposed_windows_over_quota"]
    return per_client.select("*", *advice).select(*columns)
