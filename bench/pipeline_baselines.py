"""The pipeline's decision timeline and forecast in pandas and in DuckDB SQL: the baselines of bench/pipeline_bench.py.

Both read usage snapshots in the snapshot schema from Parquet (SnapshotAt a timestamp column or ISO 8601 text) into
the normalized messages (cluster, broker_id, at, soft/hard limit type and level in module_utils' names, volumes of
(log_dir, total_bytes, usable_bytes)) and produce from them what headroom_pipeline.decisions.decision_timeline and
headroom_pipeline.forecast.volume_forecast produce. They skip ingest's record checks (the benchmark's data holds only
valid records): a missing ClusterId becomes the cluster "default", usable = Capacity - Consumed, and a size that is
null or negative is unknown. Each stage also runs on normalized messages directly, so the tests can give both
baselines the shared vectors.

Times are integer microseconds since the epoch; durations from the settings are rounded to whole microseconds.

Decision timeline (per cluster; I = check_interval, V = throttle_factor_validity, F = freshness), the rules of
tests/decision_timeline_reference.py:

* Duplicates (same cluster, broker_id and at): the message with the least total usable bytes of its volumes of known
  size is kept; ties go to the smallest sorted volume list ((log_dir, total, usable), unknown sizes -1), then the
  smallest soft and hard limit ((type, level), a missing one ("", -1)).
* Instants: every multiple t of I from ceil(first at / I) * I through ceil(last at / I) * I. A message at ``at`` is
  its broker's latest one for the instants from ceil(at / I) * I up to, excluding, the broker's next message, so
  each message is expanded into the (few) instants it can matter for and the instants are aggregated.
* strimzi (with min_available_bytes or min_available_ratio): t is observed iff a message has t - I < at <= t. Then a
  broker counts when its latest message has at > t - I or t < at + V, and the factor is 0.0 when a volume of known
  size of those brokers has usable <= bytes, or usable / total <= ratio (ratio 0 for total 0), else 1.0; violations
  are those volumes ordered by (usable bytes or ratio, broker_id, log_dir). Not observed: the factor of the last
  observed instant while t - that instant <= V, strictly after it the fallback factor with fallback_applied; no
  violations and nothing considered.
* graded: a broker is known from its first message on and fresh while t - at <= F for its latest message; the data
  is complete when every known broker is fresh. Fresh brokers' volumes of known size are judged with their own
  message's soft and hard limits (skipped when a limit is missing or volume_limits.validate_graded_limits would
  refuse them): volume factor 1.0 short of the soft limit, 0.0 at or past the hard limit, linear in between; position
  the same line unclamped ((free - hard) / (soft - hard), (hard - consumed) / (hard - soft) for consumed_space), at
  most 0 at the hard limit. The instant's position is the least of them. Its factor: with incomplete data and
  missing_data_action pause 0.0 and fallback_applied; else with no volume judged 1.0; else, with throttle_factor_step
  s > 0, in steps of s with hysteresis (plugins/module_utils/factor_steps.py): with n = round(1 / s), falling =
  floor(position * n + 1e-9) / n and rising = floor((position - s / 2) * n + 1e-9) / n, both clamped to 0..1, and
  held = the factor of the cluster's previous instant, the factor is falling at the cluster's first instant or when
  falling <= held, else max(held, rising); with s = 0 the position clamped to 0..1. observed = some fresh broker.
  Violations: judged volumes at or past their soft limit, ordered by (volume factor, usable bytes, broker_id, log_dir).
* Columns: cluster, at, policy, throttle_factor, state (OPEN at factor >= 1, PAUSE at <= 0, else THROTTLE),
  fallback_applied, observed, violations (list of (broker_id, log_dir)), volumes_considered (volumes judged),
  brokers_considered (brokers counted for strimzi, fresh brokers for graded).

Forecast, per volume (cluster, broker_id, log_dir) over every message's volumes (duplicates included), the algorithm
of headroom_pipeline/forecast.py:

1. earliest and last_at = the earliest and latest at; k = the smallest k >= 0 with 23 * 2^k >= min(last_at - earliest,
   forecast_window); bucket = floor(at / 2^k) in integer microseconds (fixed in time, from the epoch).
2. Rows with bucket >= floor((last_at - forecast_window) / 2^k) are kept (``samples``), first_at the earliest.
3. Per bucket the peak used bytes and its at (the later one among equal peaks).
4. slope = regr_slope(peak, (at - first_at) seconds) when there are at least 3 buckets; bytes_per_hour = slope * 3600.
5. The row at last_at (the one with more used bytes on a tie) gives the latest total, usable, used bytes and hard
   limit. Limits as usable bytes: min_free_bytes level, min_free_percentage total * level / 100, consumed_space
   total - level; the plugin's min_available_bytes or total * min_available_ratio.
6. Crossing: at last_at when usable <= limit, else after (usable - limit) / slope seconds when slope > 0 (rounded to
   the microsecond), else never; a crossing after 9999-12-31 counts as never.
7. rank: earliest crossing of either limit first (never last), then least usable / total (0 for total 0), then
   cluster, broker_id, log_dir.
8. Fill rate (module_utils.limit_sizing's rule), over the rows kept in 1 in order of (at, usable, total): each row
   and the one before it (pandas: the rows sorted by volume, at, usable, total and shifted by one; DuckDB: LAG over
   that window) give max(previous usable - usable, 0) / seconds between, none at one instant or across a size change;
   peak_fill_bytes_per_sec = the highest (null when none). recommended_limit_bytes = ceil(rate * seconds + (0.0 +
   rate * 2.0)) with seconds = limit_sizing.reaction_seconds(check_interval, 1.0, 0.6) (the plugin's measured parts,
   limit_sizing.plugin_parts; the Spark stage's operations in its order), null without a rate and null at 2^63 or
   more. plugin_limit_covers_peak and hard_limit_covers_peak: the limit's usable bytes (5) >= the recommended bytes
   (false at 2^63 or more), null without the limit or without a rate.
"""

import glob
import os

import numpy as np

from ansible_collections.headroom.kafka.plugins.module_utils import limit_sizing

LIMIT_TYPE_OF_NAME = {
    "MinFreeBytes": "min_free_bytes",
    "MinFreePercentage": "min_free_percentage",
    "ConsumedSpace": "consumed_space",
}
LIMIT_TYPES = ("min_free_bytes", "min_free_percentage", "consumed_space")
MIN_FREE_BYTES, MIN_FREE_PERCENTAGE, CONSUMED_SPACE = range(len(LIMIT_TYPES))
OTHER_LIMIT, NO_LIMIT = len(LIMIT_TYPES), -1
NEVER = np.iinfo(np.int64).max
MICROS = 1_000_000
BUCKETS = 24
MIN_TREND_BUCKETS = 3
SECONDS_PER_HOUR = 3600.0
MAX_TIMESTAMP_US = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z
MAX_WINDOW_US = 2**62
# As plugins/module_utils/factor_steps.py: a position times the number of steps that should be whole (0.15 x 20) can
# come out a hair below it.
STEP_ROUNDING = 1e-9


class Settings:
    """The settings the stages use, durations in whole microseconds."""

    def __init__(self, config):
        self.interval = round(config.check_interval * MICROS)
        self.validity = round(config.throttle_factor_validity * MICROS)
        self.freshness = round(config.freshness * MICROS)
        self.window = min(round(config.forecast_window * MICROS), MAX_WINDOW_US)
        # the forecast's recommended limit: seconds of fill until the plugin throttles, as the Spark stage sums them
        self.reaction_seconds = limit_sizing.reaction_seconds(
            config.check_interval, limit_sizing.PLUGIN_OBSERVATION_SECONDS, limit_sizing.PLUGIN_PROPAGATION_SECONDS
        )
        self.fallback = float(config.throttle_factor_fallback)
        self.min_available_bytes = config.min_available_bytes
        self.min_available_ratio = config.min_available_ratio
        self.strimzi = config.min_available_bytes is not None or config.min_available_ratio is not None
        self.pause_on_missing_data = config.missing_data_action == "pause"
        self.factor_step = float(config.throttle_factor_step)
        self.steps = round(1.0 / self.factor_step) if self.factor_step > 0 else 0


def snapshot_files(location):
    """The Parquet files of a file, a directory (hidden and _-prefixed files skipped) or a glob."""
    if os.path.isdir(location):
        files = sorted(
            os.path.join(root, name)
            for root, dirs, names in os.walk(location)
            for name in names
            if name.endswith(".parquet") and not name.startswith((".", "_"))
        )
    elif os.path.isfile(location):
        files = [location]
    else:
        files = sorted(glob.glob(location, recursive=True))
    if not files:
        raise FileNotFoundError(f"no Parquet file matches {location!r}")
    return files


def state_names(factor):
    return np.where(factor >= 1.0, "OPEN", np.where(factor <= 0.0, "PAUSE", "THROTTLE"))


# == pandas =========================================================================================================
#
# Normalized input: ``messages`` (cluster category, broker_id, at microseconds, soft_type, soft_level, hard_type,
# hard_level) and ``volumes`` (message = row number in messages, log_dir, total_bytes, usable_bytes; -1 = unknown).


def pandas_read(location):
    """(messages, volumes) from snapshot Parquet files."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    table = ds.dataset(snapshot_files(location), format="parquet").to_table()
    snapshot_at = table["SnapshotAt"]
    if pa.types.is_timestamp(snapshot_at.type):
        at = pc.cast(snapshot_at, pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
    else:
        at = (
            pd.to_datetime(snapshot_at.to_pandas(), utc=True, format="ISO8601")
            .dt.as_unit("us")
            .astype("int64")
            .to_numpy()
        )
    messages = pd.DataFrame(
        {
            "cluster": pc.fill_null(table["ClusterId"], "default").dictionary_encode().to_pandas(),
            "broker_id": table["BrokerId"].to_numpy(),
            "at": at,
        }
    )
    for prefix, column in (("soft", "SoftLimit"), ("hard", "HardLimit")):
        limit = table[column].combine_chunks()
        present = limit.is_valid()
        names = pc.if_else(present, pc.struct_field(limit, "type"), None).dictionary_encode().to_pandas()
        messages[f"{prefix}_type"] = names.cat.rename_categories(lambda name: LIMIT_TYPE_OF_NAME.get(name, name))
        messages[f"{prefix}_level"] = pc.if_else(present, pc.struct_field(limit, "level"), None).to_numpy(
            zero_copy_only=False
        )
    lists = table["Volumes"].combine_chunks()
    flat = pc.list_flatten(lists)
    capacity = pc.fill_null(pc.struct_field(flat, "Capacity"), -1).to_numpy()
    consumed = pc.fill_null(pc.struct_field(flat, "Consumed"), -1).to_numpy()
    known = (capacity >= 0) & (consumed >= 0)
    volumes = pd.DataFrame(
        {
            "message": pc.list_parent_indices(lists).to_numpy().astype(np.int64),
            "log_dir": pc.struct_field(flat, "VolumeName").dictionary_encode().to_pandas(),
            "total_bytes": capacity,
            "usable_bytes": np.where(known & (consumed <= capacity), capacity - consumed, -1),
        }
    )
    return messages, volumes


def pandas_frames(rows):
    """(messages, volumes) from normalized message dicts (cluster, broker_id, at microseconds, soft_limit, hard_limit,
    volumes)."""
    import pandas as pd

    def limit_part(limit, part):
        return limit.get(part) if isinstance(limit, dict) else None

    messages = pd.DataFrame(
        {
            "cluster": pd.Categorical([row["cluster"] for row in rows]),
            "broker_id": np.array([row["broker_id"] for row in rows], dtype=np.int64),
            "at": np.array([row["at"] for row in rows], dtype=np.int64),
            "soft_type": pd.Categorical([limit_part(row.get("soft_limit"), "type") for row in rows]),
            "soft_level": np.array([limit_part(row.get("soft_limit"), "level") for row in rows], dtype=np.float64),
            "hard_type": pd.Categorical([limit_part(row.get("hard_limit"), "type") for row in rows]),
            "hard_level": np.array([limit_part(row.get("hard_limit"), "level") for row in rows], dtype=np.float64),
        }
    )
    entries = [(index, volume) for index, row in enumerate(rows) for volume in row["volumes"]]

    def size(value):
        return value if value is not None and value >= 0 else -1

    volumes = pd.DataFrame(
        {
            "message": np.array([index for index, volume in entries], dtype=np.int64),
            "log_dir": pd.Categorical([volume["log_dir"] for index, volume in entries]),
            "total_bytes": np.array([size(volume.get("total_bytes")) for index, volume in entries], dtype=np.int64),
            "usable_bytes": np.array([size(volume.get("usable_bytes")) for index, volume in entries], dtype=np.int64),
        }
    )
    return messages, volumes


def _name_ordered(values):
    """A categorical whose codes follow the names' order, so that sorting by code sorts by name."""
    categorical = values.astype("category")
    return categorical.cat.reorder_categories(sorted(categorical.cat.categories))


def _ceil_to(values, step):
    return -(-values // step) * step


def _expand(start, count, step):
    """(owner, value) for each i and each of start[i], start[i] + step, ... (count[i] values)."""
    owner = np.repeat(np.arange(count.size), count)
    position = np.arange(owner.size) - np.repeat(np.cumsum(count) - count, count)
    return owner, start[owner] + position * step


class Grid:
    """The check instants of every cluster, numbered densely: cluster by cluster, in time order."""

    def __init__(self, cluster, bucket, clusters, interval):
        self.interval = interval
        self.first = np.full(clusters, NEVER, dtype=np.int64)
        self.last = np.full(clusters, -NEVER, dtype=np.int64)
        np.minimum.at(self.first, cluster, bucket)
        np.maximum.at(self.last, cluster, bucket)
        counts = (self.last - self.first) // interval + 1
        self.base = np.cumsum(counts) - counts
        self.size = int(counts.sum())
        self.cluster = np.repeat(np.arange(clusters), counts)
        self.t = self.first[self.cluster] + (np.arange(self.size) - self.base[self.cluster]) * interval

    def index(self, cluster, t):
        return self.base[cluster] + (t - self.first[cluster]) // self.interval

    def count(self, index, weights=None):
        return np.bincount(index, weights=weights, minlength=self.size)


def _known(volumes):
    return (volumes["total_bytes"].to_numpy() >= 0) & (volumes["usable_bytes"].to_numpy() >= 0)


def _duplicate_preference(messages, volumes, row):
    """The reference's tie-break among duplicates with the same usable total (rare: run in Python)."""
    mine = volumes[volumes["message"] == row]
    listed = sorted(zip(mine["log_dir"].astype(str), mine["total_bytes"], mine["usable_bytes"], strict=True))

    def limit_key(prefix):
        limit_type, level = messages[f"{prefix}_type"].iloc[row], messages[f"{prefix}_level"].iloc[row]
        # A missing type reads back from the categorical column as None or NaN: both are "no limit".
        return (limit_type if isinstance(limit_type, str) else "", float(level) if np.isfinite(level) else -1.0)

    return listed, limit_key("soft"), limit_key("hard")


def _deduplicated(messages, volumes):
    """(kept, cluster codes, cluster names): the kept messages' row numbers sorted by cluster (name order), broker_id,
    at."""
    clusters = _name_ordered(messages["cluster"])
    cluster = clusters.cat.codes.to_numpy().astype(np.int64)
    broker, at = messages["broker_id"].to_numpy().astype(np.int64), messages["at"].to_numpy()
    if len(broker) and broker.min() >= 0:
        order = np.lexsort((at, cluster * (int(broker.max()) + 1) + broker))  # one key for (cluster, broker)
    else:
        order = np.lexsort((at, broker, cluster))
    same = (
        (cluster[order][1:] == cluster[order][:-1])
        & (broker[order][1:] == broker[order][:-1])
        & (at[order][1:] == at[order][:-1])
    )
    if same.any():
        order = _prefer_among_duplicates(messages, volumes, order, same)
    return order, cluster, np.asarray(clusters.cat.categories, dtype=object)


def _prefer_among_duplicates(messages, volumes, order, same):
    """``order`` without the duplicates that lose: the least total usable bytes wins, ties as the reference breaks
    them."""
    import pandas as pd

    in_run = np.append(same, False) | np.insert(same, 0, False)
    run = np.cumsum(np.insert(~same, 0, True))  # the run of equal (cluster, broker, at) each sorted row is in
    known = _known(volumes)
    usable = np.bincount(
        volumes["message"].to_numpy()[known], weights=volumes["usable_bytes"].to_numpy()[known], minlength=len(messages)
    )
    candidates = pd.DataFrame({"run": run[in_run], "message": order[in_run], "usable": usable[order[in_run]]})
    least = candidates.groupby("run")["usable"].transform("min")
    candidates = candidates[candidates["usable"] == least]
    winners = candidates.drop_duplicates("run", keep="first").set_index("run")["message"]
    tied = candidates[candidates.duplicated("run", keep=False)]
    for run_number, group in tied.groupby("run"):
        winners[run_number] = min(
            group["message"], key=lambda message: _duplicate_preference(messages, volumes, message)
        )
    keep = ~in_run
    keep[np.nonzero(in_run)[0][np.isin(order[in_run], winners.to_numpy())]] = True
    return order[keep]


class Timeline:
    """The kept messages, their instants and their volumes, shared by both policies."""

    def __init__(self, messages, volumes, settings):
        kept, cluster, self.clusters = _deduplicated(messages, volumes)
        self.settings = settings
        self.cluster = cluster[kept]
        broker, self.at = messages["broker_id"].to_numpy()[kept], messages["at"].to_numpy()[kept]
        self.count = len(kept)
        same_broker_next = np.append((self.cluster[1:] == self.cluster[:-1]) & (broker[1:] == broker[:-1]), False)
        self.next_at = np.where(same_broker_next, np.append(self.at[1:], NEVER), NEVER)
        self.bucket = _ceil_to(self.at, settings.interval)
        self.first_of_broker = (
            np.nonzero(np.insert(~same_broker_next[:-1], 0, True))[0] if self.count else np.zeros(0, dtype=np.int64)
        )
        self.grid = Grid(self.cluster, self.bucket, len(self.clusters), settings.interval)

        # the kept messages' volumes, with the message's broker and limits, numbered by kept message
        position = np.full(len(messages), -1, dtype=np.int64)
        position[kept] = np.arange(self.count)
        chosen = position[volumes["message"].to_numpy()]
        selected = chosen >= 0
        self.volume_message = chosen[selected]
        source = kept[self.volume_message]
        self.volume_broker = broker[self.volume_message]
        log_dirs = _name_ordered(volumes["log_dir"])
        self.log_dir_names = np.asarray(log_dirs.cat.categories, dtype=object)
        self.log_dir_order = log_dirs.cat.codes.to_numpy()[selected]
        self.total = volumes["total_bytes"].to_numpy()[selected]
        self.usable = volumes["usable_bytes"].to_numpy()[selected]
        self.known = (self.total >= 0) & (self.usable >= 0)
        self.limits = {
            "soft_kind": limit_kinds(messages["soft_type"])[source],
            "soft_level": messages["soft_level"].to_numpy(dtype=np.float64)[source],
            "hard_kind": limit_kinds(messages["hard_type"])[source],
            "hard_level": messages["hard_level"].to_numpy(dtype=np.float64)[source],
        }

    def covered(self, end_exclusive):
        """(message, instant number) for each message and each instant from its bucket up to end_exclusive."""
        end = np.minimum(end_exclusive, self.grid.last[self.cluster] + 1)
        count = np.where(
            end > self.bucket, (end - self.bucket + self.settings.interval - 1) // self.settings.interval, 0
        )
        owner, t = _expand(self.bucket, count, self.settings.interval)
        return owner, self.grid.index(self.cluster[owner], t)

    def per_message(self, flags):
        return np.bincount(self.volume_message, weights=flags, minlength=self.count)

    def violation_lists(self, message_at_instant, instant, volume_flags, sort_keys):
        """Per grid instant, the flagged volumes of the messages counted there, ordered by sort_keys then broker, log
        dir."""
        import pandas as pd
        import pyarrow as pa

        flagged = np.nonzero(volume_flags)[0]
        entries = pd.DataFrame({"message": message_at_instant, "instant": instant})
        entries = entries[np.isin(message_at_instant, self.volume_message[flagged])]
        pairs = entries.merge(pd.DataFrame({"message": self.volume_message[flagged], "volume": flagged}), on="message")
        rows, where = pairs["volume"].to_numpy(), pairs["instant"].to_numpy()
        order = np.lexsort(
            (self.log_dir_order[rows], self.volume_broker[rows])
            + tuple(reversed([key[rows] for key in sort_keys]))
            + (where,)
        )
        rows, where = rows[order], where[order]
        offsets = np.concatenate([[0], np.cumsum(self.grid.count(where))]).astype(np.int32)
        log_dirs = self.log_dir_names[self.log_dir_order[rows]]
        values = pa.StructArray.from_arrays(
            [pa.array(self.volume_broker[rows], type=pa.int64()), pa.array(log_dirs, type=pa.string())],
            names=["broker_id", "log_dir"],
        )
        return pa.ListArray.from_arrays(pa.array(offsets), values)


def _strimzi(timeline):
    settings, grid = timeline.settings, timeline.grid
    total, usable, known = timeline.total, timeline.usable, timeline.known
    if settings.min_available_bytes is not None:
        violates, key = known & (usable <= settings.min_available_bytes), usable.astype(np.float64)
    else:
        key = np.divide(usable, total, out=np.zeros(total.size), where=total > 0)
        violates = known & (key <= settings.min_available_ratio)
    known_count = timeline.per_message(known)
    violated = timeline.per_message(violates) > 0

    observed = grid.count(grid.index(timeline.cluster, timeline.bucket)) > 0
    message, instant = timeline.covered(
        np.minimum(timeline.next_at, timeline.at + max(settings.interval, settings.validity))
    )
    brokers = grid.count(instant)
    considered = grid.count(instant, known_count[message])
    factor_seen = np.where(grid.count(instant, violated[message]) > 0, 0.0, 1.0)

    last_seen = np.maximum.accumulate(
        np.where(observed, np.arange(grid.size), -1)
    )  # a cluster's first instant is observed
    fallback_applied = ~observed & (grid.t - grid.t[last_seen] > settings.validity)
    factor = np.where(observed, factor_seen, np.where(fallback_applied, settings.fallback, factor_seen[last_seen]))
    at_observed = observed[instant]
    violations = timeline.violation_lists(message[at_observed], instant[at_observed], violates, [key])
    return {
        "throttle_factor": factor,
        "fallback_applied": fallback_applied,
        "observed": observed,
        "violations": violations,
        "volumes_considered": np.where(observed, considered, 0),
        "brokers_considered": np.where(observed, brokers, 0),
    }


def limit_kinds(types):
    """Limit types as small integers (the index in LIMIT_TYPES; NO_LIMIT for none, OTHER_LIMIT for an unknown type)."""
    import pandas as pd

    categorical = types if isinstance(types.dtype, pd.CategoricalDtype) else types.astype("category")
    kinds = np.array(
        [LIMIT_TYPES.index(name) if name in LIMIT_TYPES else OTHER_LIMIT for name in categorical.cat.categories]
        + [NO_LIMIT],
        dtype=np.int8,
    )
    return kinds[categorical.cat.codes.to_numpy()]  # code -1 (no limit) picks the last entry


def graded_volume_figures(limits, total, usable, known):
    """Per volume: judged (known size, usable limits), volume factor, soft breach, position (the factor before it is
    clamped to 0..1, at most 0 at the hard limit)."""
    soft_kind, hard_kind = limits["soft_kind"], limits["hard_kind"]
    soft, hard = limits["soft_level"], limits["hard_level"]
    free = (soft_kind == MIN_FREE_BYTES) | (soft_kind == MIN_FREE_PERCENTAGE)
    consumed = soft_kind == CONSUMED_SPACE

    def level_ok(kind, level):
        with np.errstate(invalid="ignore"):
            return (
                (kind >= 0)
                & (kind < OTHER_LIMIT)
                & np.isfinite(level)
                & (level >= 0)
                & ((kind != MIN_FREE_PERCENTAGE) | (level <= 100))
            )

    with np.errstate(invalid="ignore"):
        ordered = (free & (soft > hard)) | (consumed & (soft < hard))  # the soft limit trips first
        judged = known & level_ok(soft_kind, soft) & level_ok(hard_kind, hard) & (soft_kind == hard_kind) & ordered
        percent_free = np.divide(usable, total, out=np.zeros(total.size), where=total > 0) * 100.0
        measure = np.where(
            soft_kind == MIN_FREE_BYTES,
            usable.astype(np.float64),
            np.where(soft_kind == MIN_FREE_PERCENTAGE, percent_free, (total - usable).astype(np.float64)),
        )
        soft_breach = judged & np.where(free, measure <= soft, measure >= soft)
        hard_breach = judged & np.where(free, measure <= hard, measure >= hard)
        between = np.where(free, (measure - hard) / (soft - hard), (hard - measure) / (hard - soft))
    factor = np.where(hard_breach, 0.0, np.where(~soft_breach, 1.0, np.clip(between, 0.0, 1.0)))
    position = np.where(hard_breach, np.minimum(between, 0.0), between)
    return judged, factor, soft_breach, position


def step_at_or_below(value, steps):
    """The number of the highest step at or below ``value`` (0 to ``steps``)."""
    return np.clip(np.floor(value * steps + STEP_ROUNDING), 0, steps).astype(np.int64)


def held_steps(falling, rising, steps, start):
    """Per grid instant, the step held: the falling step when it is at or below the previous instant's, else the
    previous one raised to the rising step; ``start``: the number of each instant's cluster's first instant.

    Held at or below L exactly when some instant so far fell to L or below and none after it rose above L, so the
    running last instant of each (one accumulated maximum per step, no loop over the instants) gives the smallest step
    that holds. Instants are numbered cluster by cluster, so a last instant before ``start`` belongs to another
    cluster: none."""
    index = np.arange(falling.size)
    held = np.full(falling.size, steps, dtype=np.int64)  # every instant falls to the top step or below
    for level in range(steps - 1, -1, -1):
        fell = np.maximum.accumulate(np.where(falling <= level, index, -1))
        rose = np.maximum.accumulate(np.where(rising > level, index, -1))
        held = np.where((fell >= start) & (fell > rose), level, held)
    return held


def _graded(timeline):
    settings, grid = timeline.settings, timeline.grid
    judged, volume_factor, soft_breach, volume_position = graded_volume_figures(
        timeline.limits, timeline.total, timeline.usable, timeline.known
    )
    judged_count = timeline.per_message(judged)
    least_position = np.full(timeline.count, np.inf)  # inf: nothing judged
    np.minimum.at(least_position, timeline.volume_message[judged], volume_position[judged])

    message, instant = timeline.covered(np.minimum(timeline.next_at, timeline.at + settings.freshness + 1))
    fresh = grid.count(instant)
    considered = grid.count(instant, judged_count[message])
    position = np.full(grid.size, np.inf)
    np.minimum.at(position, instant, least_position[message])

    firsts = timeline.first_of_broker
    joined = grid.count(grid.index(timeline.cluster[firsts], timeline.bucket[firsts]))
    running = np.cumsum(joined)
    start = grid.base[grid.cluster]
    known_brokers = running - running[start] + joined[start]
    fallback_applied = (fresh != known_brokers) & settings.pause_on_missing_data
    nothing_judged = np.isinf(position)
    if settings.steps:
        falling = step_at_or_below(position, settings.steps)
        rising = step_at_or_below(position - settings.factor_step / 2.0, settings.steps)
        # the pause falls and rises to step 0, nothing judged to the top step: held_steps holds them like any other
        falling = np.where(fallback_applied, 0, np.where(nothing_judged, settings.steps, falling))
        rising = np.where(fallback_applied, 0, np.where(nothing_judged, settings.steps, rising))
        factor = held_steps(falling, rising, settings.steps, start) / settings.steps
    else:
        factor = np.where(fallback_applied, 0.0, np.where(nothing_judged, 1.0, np.clip(position, 0.0, 1.0)))
    usable_key = timeline.usable.astype(np.float64)
    violations = timeline.violation_lists(message, instant, soft_breach, [volume_factor, usable_key])
    return {
        "throttle_factor": factor,
        "fallback_applied": fallback_applied,
        "observed": fresh > 0,
        "violations": violations,
        "volumes_considered": considered,
        "brokers_considered": fresh,
    }


def pandas_decision_timeline(messages, volumes, config):
    """The decision timeline as a pyarrow table (the columns of headroom_pipeline.decisions.decision_timeline)."""
    import pyarrow as pa

    settings = Settings(config)
    timeline = Timeline(messages, volumes, settings)
    grid = timeline.grid
    tables = []
    for policy, stage in ([("strimzi", _strimzi)] if settings.strimzi else []) + [("graded", _graded)]:
        result = stage(timeline)
        tables.append(
            pa.table(
                {
                    "cluster": pa.array(timeline.clusters[grid.cluster], type=pa.string()),
                    "at": pa.array(grid.t, type=pa.timestamp("us", tz="UTC")),
                    "policy": pa.array(np.full(grid.size, policy), type=pa.string()),
                    "throttle_factor": pa.array(result["throttle_factor"].astype(np.float64)),
                    "state": pa.array(state_names(result["throttle_factor"]), type=pa.string()),
                    "fallback_applied": pa.array(np.asarray(result["fallback_applied"], dtype=bool)),
                    "observed": pa.array(np.asarray(result["observed"], dtype=bool)),
                    "violations": result["violations"],
                    "volumes_considered": pa.array(np.asarray(result["volumes_considered"]).astype(np.int64)),
                    "brokers_considered": pa.array(np.asarray(result["brokers_considered"]).astype(np.int64)),
                }
            )
        )
    return pa.concat_tables(tables)


def pandas_volumes(messages, volumes):
    """The VOLUMES frame: one row per volume of every message (duplicates included)."""
    import pandas as pd

    rows = volumes["message"].to_numpy()
    frame = volumes.drop(columns="message")
    for column in ("cluster", "broker_id", "at", "hard_type", "hard_level"):
        values = messages[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            frame[column] = pd.Categorical.from_codes(values.cat.codes.to_numpy()[rows], values.cat.categories)
        else:
            frame[column] = values.to_numpy()[rows]
    return frame


def limit_usable_bytes(limit_type, level, total):
    """Usable bytes at which a hard limit trips; NaN without one."""
    return np.where(
        limit_type == "min_free_bytes",
        level,
        np.where(
            limit_type == "min_free_percentage",
            total * level / 100.0,
            np.where(limit_type == "consumed_space", total - level, np.nan),
        ),
    )


def _seconds_to_limit(usable, limit, slope, last_us):
    """0 when already at the limit, the time to reach it when growing, NaN when never (or past the year 9999)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        seconds = (usable - limit) / slope
        reachable = (slope > 0) & (seconds <= (MAX_TIMESTAMP_US - last_us) / MICROS)
        return np.where(np.isnan(limit), np.nan, np.where(usable <= limit, 0.0, np.where(reachable, seconds, np.nan)))


def _crossing_us(last_us, seconds):
    """last_at + seconds rounded half up to the microsecond; -1 for never."""
    finite = np.isfinite(seconds)
    return np.where(finite, last_us + np.floor(np.where(finite, seconds, 0.0) * MICROS + 0.5).astype(np.int64), -1)


def _peak_fill_rates(keys, at, usable, total, volumes):
    """Per volume (``keys`` numbers them 0 .. volumes - 1, each with a row): the highest fill rate between successive
    rows in order of (at, usable, total), NaN when no pair gives one. The rows sorted by volume and at, the few rows
    at one volume's same instant then by usable and total (sorting every row by four keys costs ten times as much),
    and each row against the one before it."""
    if not volumes:
        return np.zeros(0)
    order = np.lexsort((at, keys))
    keys, at = keys[order], at[order]
    tied = (keys[1:] == keys[:-1]) & (at[1:] == at[:-1])
    if tied.any():  # the runs of rows at one instant are contiguous: reordering them keeps (volume, at) in order
        positions = np.flatnonzero(np.concatenate([tied, [False]]) | np.concatenate([[False], tied]))
        run = order[positions]
        order[positions] = run[np.lexsort((total[run], usable[run], at[positions], keys[positions]))]
    usable, total = usable[order], total[order]
    del order, tied
    paired = (keys[1:] == keys[:-1]) & (at[1:] > at[:-1]) & (total[1:] == total[:-1])
    lost = np.maximum(usable[:-1] - usable[1:], 0).astype(np.float64)
    seconds = (at[1:] - at[:-1]).astype(np.float64) / MICROS
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(paired, lost / seconds, -1.0)  # rates are >= 0: -1 is no rate
    del paired, lost, seconds
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    # row i's rate is its pair with row i - 1, and a volume's first row has none
    peak = np.maximum.reduceat(np.concatenate([[-1.0], rate]), starts)
    return np.where(peak >= 0.0, peak, np.nan)


def _recommended_limit_bytes(rate, reaction_seconds):
    """limit_sizing.least_limit_bytes at each rate with the plugin's measured parts, in the Spark stage's operations:
    (whole bytes as floats, known: a rate, and less than 2^63 bytes, over: 2^63 bytes or more)."""
    least = np.ceil(rate * reaction_seconds + (0.0 + rate * limit_sizing.PLUGIN_AFTER_THROTTLE_SECONDS))
    rated = ~np.isnan(least)
    with np.errstate(invalid="ignore"):
        over = rated & (least >= 2.0**63)
    return least, rated & ~over, over


def _covers(limit, least, known, over):
    """Whether each limit (usable bytes) is at least the recommended bytes (false past 2^63); null without the limit
    or a rate."""
    import pandas as pd

    missing = np.isnan(limit) | ~(known | over)
    with np.errstate(invalid="ignore"):
        return pd.arrays.BooleanArray(np.where(missing | over, False, limit >= least), missing)


def _bucket_shifts(held):
    """Per volume the k of the buckets' width 2^k: the smallest with 23 * 2^k >= ``held`` microseconds."""
    shifts = np.zeros(len(held), dtype=np.int64)
    while True:
        short = np.left_shift(np.int64(BUCKETS - 1), shifts) < held
        if not short.any():
            return shifts
        shifts += short


def pandas_volume_forecast(frame, config):
    """The forecast as a pandas DataFrame (the columns of headroom_pipeline.forecast.volume_forecast)."""
    import pandas as pd

    settings = Settings(config)
    keys = frame.groupby(["cluster", "broker_id", "log_dir"], observed=True, sort=False).ngroup().to_numpy()
    at = frame["at"].to_numpy()
    by_volume = pd.Series(at).groupby(keys)
    last, earliest = by_volume.max().to_numpy(), by_volume.min().to_numpy()
    shift = _bucket_shifts(np.minimum(last - earliest, settings.window))
    bucket = at >> shift[keys]
    in_window = bucket >= ((last - settings.window) >> shift)[keys]
    bucket = bucket - (last >> shift)[keys] + BUCKETS - 1  # 0 .. 23 in the window: 24 buckets hold it
    rows = frame[in_window].reset_index(drop=True)
    keys, at, bucket = keys[in_window], at[in_window], bucket[in_window]
    used = rows["total_bytes"].to_numpy() - rows["usable_bytes"].to_numpy()
    by_key = pd.Series(at).groupby(keys)
    first = by_key.min().to_numpy()
    samples = by_key.size().to_numpy()

    # per bucket the peak and its time (the later on a tie), then the trend through the peaks
    cells = pd.DataFrame({"cell": keys * BUCKETS + bucket, "used": used, "at": at})
    peak_used = cells.groupby("cell")["used"].transform("max").to_numpy()
    peaks = cells[used == peak_used].groupby("cell").agg(used=("used", "first"), at=("at", "max"))
    peak_key = peaks.index.to_numpy() // BUCKETS
    points = pd.DataFrame(
        {
            "key": peak_key,
            "x": (peaks["at"].to_numpy() - first[peak_key]) / MICROS,
            "y": peaks["used"].to_numpy().astype(np.float64),
        }
    )
    grouped = points.groupby("key")
    bucket_count = grouped.size()
    centered_x = points["x"] - grouped["x"].transform("mean")
    centered_y = points["y"] - grouped["y"].transform("mean")
    sums = (
        pd.DataFrame({"key": points["key"], "xy": centered_x * centered_y, "xx": centered_x * centered_x})
        .groupby("key")[["xy", "xx"]]
        .sum()
    )
    buckets = np.zeros(len(last), dtype=np.int64)
    buckets[bucket_count.index.to_numpy()] = bucket_count.to_numpy()
    slope = np.full(len(last), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope[sums.index.to_numpy()] = (sums["xy"] / sums["xx"]).to_numpy()
    slope[buckets < MIN_TREND_BUCKETS] = np.nan

    # the latest row (more used bytes on a tie)
    at_last = at == last[keys]
    candidates = pd.DataFrame({"key": keys[at_last], "used": used[at_last], "row": np.nonzero(at_last)[0]})
    latest_row = (
        candidates.sort_values(["key", "used"]).drop_duplicates("key", keep="last").sort_values("key")["row"].to_numpy()
    )
    latest = rows.iloc[latest_row].reset_index(drop=True)
    total = latest["total_bytes"].to_numpy()
    usable = latest["usable_bytes"].to_numpy()
    hard_type = latest["hard_type"].astype(object).to_numpy()
    hard_level = latest["hard_level"].to_numpy(dtype=np.float64)
    hard_limit = limit_usable_bytes(hard_type, hard_level, total.astype(np.float64))
    if settings.min_available_bytes is not None:
        plugin_limit = np.full(len(last), float(settings.min_available_bytes))
    elif settings.min_available_ratio is not None:
        plugin_limit = total * float(settings.min_available_ratio)
    else:
        plugin_limit = np.full(len(last), np.nan)
    hard_seconds = _seconds_to_limit(usable, hard_limit, slope, last)
    plugin_seconds = _seconds_to_limit(usable, plugin_limit, slope, last)
    hard_at, plugin_at = _crossing_us(last, hard_seconds), _crossing_us(last, plugin_seconds)
    usable_ratio = np.divide(usable, total, out=np.zeros(total.size), where=total > 0)
    peak_fill = _peak_fill_rates(keys, at, rows["usable_bytes"].to_numpy(), rows["total_bytes"].to_numpy(), len(last))
    least, known, over = _recommended_limit_bytes(peak_fill, settings.reaction_seconds)
    result = pd.DataFrame(
        {
            "cluster": latest["cluster"].astype(str).to_numpy(),
            "broker_id": latest["broker_id"].to_numpy(),
            "log_dir": latest["log_dir"].astype(str).to_numpy(),
            "first_at": first,
            "last_at": last,
            "samples": samples,
            "buckets": buckets,
            "total_bytes": total,
            "usable_bytes": usable,
            "used_bytes": total - usable,
            "usable_ratio": usable_ratio,
            "hard_limit_type": hard_type,
            "hard_limit_level": hard_level,
            "hard_limit_usable_bytes": hard_limit,
            "bytes_per_hour": slope * SECONDS_PER_HOUR,
            "crosses_hard_limit_at": hard_at,
            "hours_to_hard_limit": hard_seconds / SECONDS_PER_HOUR,
            "plugin_limit_usable_bytes": plugin_limit,
            "crosses_plugin_limit_at": plugin_at,
            "hours_to_plugin_limit": plugin_seconds / SECONDS_PER_HOUR,
            "peak_fill_bytes_per_sec": peak_fill,
            "recommended_limit_bytes": pd.arrays.IntegerArray(np.where(known, least, 0.0).astype(np.int64), ~known),
            "plugin_limit_covers_peak": _covers(plugin_limit, least, known, over),
            "hard_limit_covers_peak": _covers(hard_limit, least, known, over),
        }
    )
    crossing = np.where(hard_at < 0, plugin_at, np.where(plugin_at < 0, hard_at, np.minimum(hard_at, plugin_at)))
    never = crossing < 0
    order = np.lexsort(
        (
            result["log_dir"].to_numpy(),
            result["broker_id"].to_numpy(),
            result["cluster"].to_numpy(),
            usable_ratio,
            np.where(never, 0, crossing),
            never,
        )
    )
    rank = np.empty(len(result), dtype=np.int64)
    rank[order] = np.arange(1, len(result) + 1)
    result["rank"] = rank
    for column in ("first_at", "last_at", "crosses_hard_limit_at", "crosses_plugin_limit_at"):
        micros = result[column].to_numpy()
        result[column] = pd.Series(
            np.where(micros < 0, np.iinfo(np.int64).min, micros).astype("datetime64[us]")
        ).dt.tz_localize("UTC")
    return result


def pandas_run(location, out, config, on_lap=None):
    """Read, both stages, write out/decisions.parquet and out/forecast.parquet; (rows written per stage, seconds per
    phase)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(out, exist_ok=True)
    clock = PhaseClock(on_lap)
    messages, volumes = pandas_read(location)
    clock.lap("read")
    decisions = pandas_decision_timeline(messages, volumes, config)
    pq.write_table(decisions, os.path.join(out, "decisions.parquet"))
    clock.lap("decision timeline")
    forecast = pandas_volume_forecast(pandas_volumes(messages, volumes), config)
    pq.write_table(pa.Table.from_pandas(forecast, preserve_index=False), os.path.join(out, "forecast.parquet"))
    clock.lap("forecast")
    return {"decisions": decisions.num_rows, "forecast": len(forecast)}, clock.phases


class PhaseClock:
    """Seconds per phase, each measured from the end of the previous one."""

    def __init__(self, on_lap=None):
        import time

        self.now = time.monotonic
        self.mark, self.phases, self.on_lap = self.now(), {}, on_lap

    def lap(self, name):
        now = self.now()
        self.phases[name] = round(now - self.mark, 3)
        self.mark = now
        if self.on_lap:
            self.on_lap(name, self.phases[name])


# == DuckDB =========================================================================================================
#
# Normalized input: the table ``messages`` (cluster, broker_id, at_us, soft_type, soft_level, hard_type, hard_level,
# volumes STRUCT(log_dir, total_bytes, usable_bytes)[]); sizes that are null or negative are unknown.
#
MESSAGES_DDL = """
CREATE OR REPLACE TEMP TABLE messages (
    cluster VARCHAR, broker_id BIGINT, at_us BIGINT, soft_type VARCHAR, soft_level DOUBLE, hard_type VARCHAR,
        hard_level DOUBLE,
    volumes STRUCT(log_dir VARCHAR, total_bytes BIGINT, usable_bytes BIGINT)[])
"""

MACROS = """
CREATE OR REPLACE TEMP MACRO known_size(v) AS coalesce(v.total_bytes >= 0 AND v.usable_bytes >= 0, false);
CREATE OR REPLACE TEMP MACRO size_or_unknown(size) AS CASE WHEN size >= 0 THEN size ELSE -1 END;
CREATE OR REPLACE TEMP MACRO level_or_unknown(level) AS CASE WHEN isfinite(level) THEN level ELSE -1.0::DOUBLE END;
CREATE OR REPLACE TEMP MACRO ceil_to(x, step) AS CASE WHEN x >= 0 THEN (x + step - 1) // step * step
    ELSE x // step * step END;
CREATE OR REPLACE TEMP MACRO level_ok(kind, level) AS coalesce(
    kind IN ('min_free_bytes', 'min_free_percentage', 'consumed_space') AND isfinite(level) AND level >= 0
    AND (kind <> 'min_free_percentage' OR level <= 100), false);
CREATE OR REPLACE TEMP MACRO limits_ok(soft_kind, soft, hard_kind, hard) AS coalesce(
    level_ok(soft_kind, soft) AND level_ok(hard_kind, hard) AND soft_kind = hard_kind
    AND ((soft_kind IN ('min_free_bytes', 'min_free_percentage') AND soft > hard)
        OR (soft_kind = 'consumed_space' AND soft < hard)), false);
CREATE OR REPLACE TEMP MACRO measure(kind, total, usable) AS CASE kind
    WHEN 'min_free_bytes' THEN usable::DOUBLE
    WHEN 'min_free_percentage' THEN (CASE WHEN total > 0 THEN usable / total ELSE 0.0::DOUBLE END) * 100.0::DOUBLE
    ELSE (total - usable)::DOUBLE END;
CREATE OR REPLACE TEMP MACRO breaches(kind, value, level) AS CASE WHEN kind = 'consumed_space' THEN value >= level
    ELSE value <= level END;
CREATE OR REPLACE TEMP MACRO between_limits(kind, value, soft, hard) AS CASE
    WHEN kind = 'consumed_space' THEN (hard - value) / (hard - soft) ELSE (value - hard) / (soft - hard) END;
CREATE OR REPLACE TEMP MACRO graded_factor(kind, value, soft, hard) AS CASE
    WHEN breaches(kind, value, hard) THEN 0.0::DOUBLE
    WHEN NOT breaches(kind, value, soft) THEN 1.0::DOUBLE
    ELSE greatest(least(between_limits(kind, value, soft, hard), 1.0::DOUBLE), 0.0::DOUBLE) END;
CREATE OR REPLACE TEMP MACRO graded_position(kind, value, soft, hard) AS CASE
    WHEN breaches(kind, value, hard) THEN least(between_limits(kind, value, soft, hard), 0.0::DOUBLE)
    ELSE between_limits(kind, value, soft, hard) END;
CREATE OR REPLACE TEMP MACRO step_at_or_below(value, steps) AS
    greatest(least(floor(value * steps + {step_rounding}), steps), 0)::BIGINT;
CREATE OR REPLACE TEMP MACRO held_at(fell, rose) AS fell IS NOT NULL AND (rose IS NULL OR fell > rose);
CREATE OR REPLACE TEMP MACRO state_of(factor) AS CASE WHEN factor >= 1.0 THEN 'OPEN' WHEN factor <= 0.0 THEN 'PAUSE'
    ELSE 'THROTTLE' END;
CREATE OR REPLACE TEMP MACRO seconds_to(usable, limit_bytes, slope, last_us) AS CASE
    WHEN limit_bytes IS NULL THEN NULL
    WHEN usable <= limit_bytes THEN 0.0::DOUBLE
    WHEN slope > 0 AND (usable - limit_bytes) / slope <= (253402300799999999 - last_us)::DOUBLE / 1000000.0::DOUBLE
        THEN (usable - limit_bytes) / slope
    END;
CREATE OR REPLACE TEMP MACRO timestamp_of(micros) AS make_timestamp(micros)::TIMESTAMPTZ;
"""

READ_SNAPSHOTS = """
INSERT INTO messages
SELECT coalesce(ClusterId, 'default'), BrokerId, epoch_us(SnapshotAt::TIMESTAMPTZ),
       {soft_type}, SoftLimit.level, {hard_type}, HardLimit.level,
       list_transform(Volumes, lambda v: struct_pack(log_dir := v.VolumeName, total_bytes := v.Capacity,
                                                      usable_bytes := CASE WHEN v.Consumed <= v.Capacity
                                                          THEN v.Capacity - v.Consumed ELSE -1 END))
FROM read_parquet({files})
"""

# Kept messages (duplicates resolved as in the reference), with their instant (bucket) and the broker's next message.
KEPT = """
CREATE OR REPLACE TEMP TABLE duplicated AS SELECT cluster, broker_id, at_us FROM messages
    GROUP BY ALL HAVING count(*) > 1;
CREATE OR REPLACE TEMP TABLE kept AS
WITH preferred AS (
    SELECT m.* FROM messages m SEMI JOIN duplicated USING (cluster, broker_id, at_us)
    QUALIFY row_number() OVER (PARTITION BY cluster, broker_id, at_us ORDER BY
        coalesce(list_sum(list_transform(volumes, lambda v: CASE WHEN known_size(v) THEN v.usable_bytes
            ELSE 0 END)), 0),
        list_sort(list_transform(volumes, lambda v: struct_pack(d := v.log_dir, t := size_or_unknown(v.total_bytes),
            u := size_or_unknown(v.usable_bytes)))),
        coalesce(soft_type, ''), level_or_unknown(soft_level), coalesce(hard_type, ''),
            level_or_unknown(hard_level)) = 1
), single AS (
    SELECT m.* FROM messages m ANTI JOIN duplicated USING (cluster, broker_id, at_us)
), unique_messages AS (
    SELECT * FROM single UNION ALL SELECT * FROM preferred
)
SELECT *, ceil_to(at_us, {interval}) AS bucket,
       coalesce(lead(at_us) OVER (PARTITION BY cluster, broker_id ORDER BY at_us), 9223372036854775807) AS next_us
FROM unique_messages;
CREATE OR REPLACE TEMP TABLE bounds AS SELECT cluster, min(bucket) AS first_t, max(bucket) AS last_t FROM kept
    GROUP BY cluster;
CREATE OR REPLACE TEMP TABLE instants AS SELECT cluster, unnest(range(first_t, last_t + 1, {interval})) AS t
    FROM bounds;
"""

# Per kept message what either policy needs of its volumes; violating volumes as sortable structs.
FIGURES = """
CREATE OR REPLACE TEMP TABLE figures AS
WITH judged AS (
    SELECT k.cluster, k.broker_id, k.at_us, k.bucket, k.next_us, b.last_t,
           len(list_filter(k.volumes, lambda v: known_size(v))) AS known_volumes,
           list_transform(list_filter(k.volumes, lambda v: known_size(v) AND {strimzi_violates}),
                          lambda v: struct_pack(k := {strimzi_key}, b := k.broker_id, d := v.log_dir))
                              AS strimzi_violating,
           CASE WHEN limits_ok(k.soft_type, k.soft_level, k.hard_type, k.hard_level) THEN
               list_transform(list_filter(k.volumes, lambda v: known_size(v)), lambda v: struct_pack(
                   f := graded_factor(k.soft_type, measure(k.soft_type, v.total_bytes, v.usable_bytes), k.soft_level,
                       k.hard_level),
                   p := graded_position(k.soft_type, measure(k.soft_type, v.total_bytes, v.usable_bytes),
                       k.soft_level, k.hard_level),
                   u := v.usable_bytes, b := k.broker_id, d := v.log_dir,
                   soft := breaches(k.soft_type, measure(k.soft_type, v.total_bytes, v.usable_bytes), k.soft_level)))
           ELSE [] END AS graded
    FROM kept k JOIN bounds b USING (cluster)
)
SELECT cluster, broker_id, at_us, bucket, next_us, last_t, known_volumes, strimzi_violating,
       len(graded) AS judged_volumes,
       list_min(list_transform(graded, lambda g: g.p)) AS least_position,
       list_transform(list_filter(graded, lambda g: g.soft),
           lambda g: struct_pack(f := g.f, u := g.u, b := g.b, d := g.d)) AS graded_violating
FROM judged
"""

VIOLATIONS_TYPE = "STRUCT(broker_id BIGINT, log_dir VARCHAR)[]"

STRIMZI = """
CREATE OR REPLACE TEMP TABLE strimzi_seen AS
SELECT cluster, t, count(*) AS brokers, sum(known_volumes) AS volumes, bool_or(len(strimzi_violating) > 0) AS violated,
       list_sort(flatten(list(strimzi_violating) FILTER (WHERE len(strimzi_violating) > 0))) AS violating
FROM (SELECT cluster, known_volumes, strimzi_violating,
             unnest(range(bucket, least(next_us, at_us + {remembered}, last_t + 1), {interval})) AS t FROM figures)
GROUP BY cluster, t;
CREATE OR REPLACE TEMP TABLE strimzi_rows AS
WITH observed AS (SELECT DISTINCT cluster, bucket AS t FROM kept),
base AS (
    SELECT i.cluster, i.t, o.t IS NOT NULL AS observed, s.brokers, s.volumes, s.violating,
           CASE WHEN coalesce(s.violated, false) THEN 0.0::DOUBLE ELSE 1.0::DOUBLE END AS factor_seen
    FROM instants i LEFT JOIN observed o USING (cluster, t) LEFT JOIN strimzi_seen s USING (cluster, t)
), clocked AS (
    SELECT *, max(CASE WHEN observed THEN t END) OVER w AS valid_from,
           last_value(CASE WHEN observed THEN factor_seen END IGNORE NULLS) OVER w AS kept_factor
    FROM base WINDOW w AS (PARTITION BY cluster ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
), decided AS (
    SELECT *, NOT observed AND t - valid_from > {validity} AS fallback_applied,
           CASE WHEN observed THEN factor_seen WHEN t - valid_from <= {validity} THEN kept_factor ELSE {fallback} END
               AS throttle_factor
    FROM clocked
)
SELECT cluster, timestamp_of(t) AS at, 'strimzi' AS policy, throttle_factor, state_of(throttle_factor) AS state,
    fallback_applied, observed,
       CASE WHEN observed AND violating IS NOT NULL THEN
           list_transform(violating, lambda v: struct_pack(broker_id := v.b, log_dir := v.d))
            ELSE []::{violations_type} END AS violations,
       CASE WHEN observed THEN coalesce(volumes, 0) ELSE 0 END::BIGINT AS volumes_considered,
       CASE WHEN observed THEN coalesce(brokers, 0) ELSE 0 END::BIGINT AS brokers_considered
FROM decided
"""

GRADED = """
CREATE OR REPLACE TEMP TABLE graded_seen AS
SELECT cluster, t, count(*) AS fresh, sum(judged_volumes) AS volumes, min(least_position) AS position,
       list_sort(flatten(list(graded_violating) FILTER (WHERE len(graded_violating) > 0))) AS violating
FROM (SELECT cluster, judged_volumes, least_position, graded_violating,
             unnest(range(bucket, least(next_us, at_us + {freshness} + 1, last_t + 1), {interval})) AS t FROM figures)
GROUP BY cluster, t;
CREATE OR REPLACE TEMP TABLE graded_rows AS
WITH joined AS (
    SELECT cluster, t, count(*) AS brokers
        FROM (SELECT cluster, min(bucket) AS t FROM figures GROUP BY cluster, broker_id) GROUP BY cluster, t
), base AS (
    SELECT i.cluster, i.t, coalesce(s.fresh, 0) AS fresh, coalesce(s.volumes, 0) AS volumes, s.position, s.violating,
           sum(coalesce(j.brokers, 0)) OVER (PARTITION BY i.cluster ORDER BY i.t ROWS BETWEEN UNBOUNDED PRECEDING
               AND CURRENT ROW) AS known
    FROM instants i LEFT JOIN joined j USING (cluster, t) LEFT JOIN graded_seen s USING (cluster, t)
), decided AS (
    SELECT *, fresh <> known AND {pause} AS fallback_applied FROM base
), {factored}
SELECT cluster, timestamp_of(t) AS at, 'graded' AS policy, throttle_factor, state_of(throttle_factor) AS state,
    fallback_applied, fresh > 0 AS observed,
       coalesce(list_transform(violating, lambda v: struct_pack(broker_id := v.b, log_dir := v.d)),
           []::{violations_type}) AS violations,
       volumes::BIGINT AS volumes_considered, fresh::BIGINT AS brokers_considered
FROM factored
"""

# The graded factor of GRADED's ``factored``: with a step of 0 the exact one.
EXACT_FACTOR = """factored AS (
    SELECT *, CASE WHEN fallback_applied THEN 0.0::DOUBLE WHEN position IS NULL THEN 1.0::DOUBLE
        ELSE greatest(least(position, 1.0::DOUBLE), 0.0::DOUBLE) END AS throttle_factor
    FROM decided
)"""

# In steps, with hysteresis: the previous instant's step is held unless the position falls to a lower step or rises
# half a step past a higher one. A sequence no window carries as such, but the step held is at most L exactly when
# some instant so far fell to L or below and none after it rose above L: per step below the top ({last_moves}), the
# last instant so far of each in one window, then the smallest step that holds ({held_cases}).
STEPPED_FACTOR = """stepped AS (
    -- the missing-data pause falls and rises to step 0, nothing judged to the top step; both held like any step
    SELECT *, CASE WHEN fallback_applied THEN 0 WHEN position IS NULL THEN {steps}
                   ELSE step_at_or_below(position, {steps}) END AS falling,
              CASE WHEN fallback_applied THEN 0 WHEN position IS NULL THEN {steps}
                   ELSE step_at_or_below(position - {half_step}, {steps}) END AS rising
    FROM decided
), last_moves AS (
    SELECT *, {last_moves} FROM stepped
    WINDOW so_far AS (PARTITION BY cluster ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
), factored AS (
    SELECT *, (CASE {held_cases} ELSE {steps} END)::DOUBLE / {steps} AS throttle_factor FROM last_moves
)"""


def graded_factor_sql(settings):
    """GRADED's ``factored``: the exact factor, or the one in steps with one pair of columns per step below the top."""
    if not settings.steps:
        return EXACT_FACTOR
    steps = range(settings.steps)
    return STEPPED_FACTOR.format(
        steps=_sql_literal(settings.steps),
        half_step=_sql_literal(settings.factor_step / 2.0),
        last_moves=",\n        ".join(
            f"max(CASE WHEN falling <= {step} THEN t END) OVER so_far AS fell_{step}, "
            f"max(CASE WHEN rising > {step} THEN t END) OVER so_far AS rose_{step}"
            for step in steps
        ),
        held_cases=" ".join(f"WHEN held_at(fell_{step}, rose_{step}) THEN {step}" for step in steps),
    )


# The VOLUMES frame: one row per volume of every message (duplicates included).
VOLUME_ROWS = """
CREATE OR REPLACE TEMP TABLE volume_rows AS
SELECT cluster, broker_id, at_us, hard_type, hard_level, v.log_dir AS log_dir, v.total_bytes AS total_bytes,
    v.usable_bytes AS usable_bytes
FROM (SELECT cluster, broker_id, at_us, hard_type, hard_level, unnest(volumes) AS v FROM messages)
"""

FORECAST = """
CREATE OR REPLACE TEMP TABLE forecast AS
WITH spans AS (
    -- volume: a number for the volume, which partitions the fill rates' window faster than its three columns
    SELECT cluster, broker_id, log_dir, max(at_us) AS last_us, min(at_us) AS earliest_us, row_number() OVER () AS volume
    FROM volume_rows GROUP BY cluster, broker_id, log_dir
), lasts AS (
    -- the buckets' width 2^shift: the smallest with 23 * 2^shift >= min(span, window)
    SELECT *, list_position(list_transform(range(0, 59),
        lambda k: (23::BIGINT << k) >= least(last_us - earliest_us, {window})), true) - 1 AS shift
    FROM spans
), windowed AS (
    SELECT r.*, l.last_us, l.volume, l.shift, r.total_bytes - r.usable_bytes AS used_bytes
    FROM volume_rows r JOIN lasts l USING (cluster, broker_id, log_dir)
    WHERE r.at_us >> l.shift >= (l.last_us - {window}) >> l.shift
), firsts AS (
    SELECT cluster, broker_id, log_dir, min(at_us) AS first_us FROM windowed GROUP BY ALL
), successive AS (
    SELECT volume, at_us, usable_bytes, total_bytes, lag(at_us) OVER previous AS previous_us,
           lag(usable_bytes) OVER previous AS previous_usable, lag(total_bytes) OVER previous AS previous_total
    FROM windowed
    WINDOW previous AS (PARTITION BY volume ORDER BY at_us, usable_bytes, total_bytes)
), fills AS (
    SELECT l.cluster, l.broker_id, l.log_dir, f.peak_fill_bytes_per_sec
    FROM (SELECT volume,
                 max(CASE WHEN at_us > previous_us AND total_bytes = previous_total
                     THEN greatest(previous_usable - usable_bytes, 0)::DOUBLE
                         / ((at_us - previous_us)::DOUBLE / 1000000.0::DOUBLE) END) AS peak_fill_bytes_per_sec
          FROM successive GROUP BY volume) f
    JOIN lasts l USING (volume)
), bucketed AS (
    SELECT w.*, f.first_us,
           w.at_us >> w.shift AS bucket
    FROM windowed w JOIN firsts f USING (cluster, broker_id, log_dir)
), peaks AS (
    SELECT cluster, broker_id, log_dir, first_us, last_us, bucket, count(*) AS rows_in_bucket,
           max(struct_pack(u := used_bytes, a := at_us)) AS peak,
           max(struct_pack(a := at_us, u := used_bytes, t := total_bytes, s := usable_bytes, ht := hard_type,
               hl := hard_level)) AS latest
    FROM bucketed GROUP BY ALL
), centered AS (
    -- least squares in two passes, on values centred on their means, as the pandas baseline: DuckDB's regr_slope
    -- accumulates the raw peaks (tens of gigabytes), which costs a nearly flat trend parts in a billion
    SELECT *, x - avg(x) OVER per_volume AS cx, y - avg(y) OVER per_volume AS cy
    FROM (SELECT *, (peak.a - first_us) / 1000000.0::DOUBLE AS x, peak.u::DOUBLE AS y FROM peaks)
    WINDOW per_volume AS (PARTITION BY cluster, broker_id, log_dir)
), trends AS (
    SELECT cluster, broker_id, log_dir, first_us, last_us, count(*) AS buckets,
        sum(rows_in_bucket)::BIGINT AS samples, max(latest) AS latest,
           CASE WHEN count(*) >= 3 THEN sum(cx * cy) / nullif(sum(cx * cx), 0.0) END AS slope
    FROM centered GROUP BY ALL
), limits AS (
    SELECT *, latest.t AS total_bytes, latest.s AS usable_bytes, latest.u AS used_bytes, latest.ht AS hard_limit_type,
        latest.hl AS hard_limit_level,
           CASE WHEN latest.t > 0 THEN latest.s / latest.t ELSE 0.0::DOUBLE END AS usable_ratio,
           CASE latest.ht WHEN 'min_free_bytes' THEN latest.hl
               WHEN 'min_free_percentage' THEN latest.t * latest.hl / 100.0::DOUBLE
                          WHEN 'consumed_space' THEN latest.t - latest.hl END AS hard_limit_usable_bytes,
           {plugin_limit} AS plugin_limit_usable_bytes
    FROM trends LEFT JOIN fills USING (cluster, broker_id, log_dir)
), timed AS (
    SELECT *, seconds_to(usable_bytes, hard_limit_usable_bytes, slope, last_us) AS hard_seconds,
           seconds_to(usable_bytes, plugin_limit_usable_bytes, slope, last_us) AS plugin_seconds,
           -- the Spark stage's operations in its order, not rounded yet
           peak_fill_bytes_per_sec * {reaction_seconds}
               + (0.0::DOUBLE + peak_fill_bytes_per_sec * {after_throttle_seconds}) AS least_limit
    FROM limits
), crossing AS (
    SELECT *, CASE WHEN least_limit < 9223372036854775808.0::DOUBLE THEN ceil(least_limit)::BIGINT END
               AS recommended_limit_bytes,
        last_us + round(hard_seconds * 1000000.0::DOUBLE)::BIGINT AS hard_us,
        last_us + round(plugin_seconds * 1000000.0::DOUBLE)::BIGINT AS plugin_us
    FROM timed
)
SELECT cluster, broker_id, log_dir, timestamp_of(first_us) AS first_at, timestamp_of(last_us) AS last_at, samples,
    buckets,
       total_bytes, usable_bytes, used_bytes, usable_ratio, hard_limit_type, hard_limit_level, hard_limit_usable_bytes,
       slope * 3600.0::DOUBLE AS bytes_per_hour, timestamp_of(hard_us) AS crosses_hard_limit_at,
           hard_seconds / 3600.0::DOUBLE AS hours_to_hard_limit,
       plugin_limit_usable_bytes, timestamp_of(plugin_us) AS crosses_plugin_limit_at,
           plugin_seconds / 3600.0::DOUBLE AS hours_to_plugin_limit,
       peak_fill_bytes_per_sec, recommended_limit_bytes,
       CASE WHEN recommended_limit_bytes IS NOT NULL THEN plugin_limit_usable_bytes >= recommended_limit_bytes
            WHEN least_limit IS NOT NULL AND plugin_limit_usable_bytes IS NOT NULL THEN false
       END AS plugin_limit_covers_peak,
       CASE WHEN recommended_limit_bytes IS NOT NULL THEN hard_limit_usable_bytes >= recommended_limit_bytes
            WHEN least_limit IS NOT NULL AND hard_limit_usable_bytes IS NOT NULL THEN false
       END AS hard_limit_covers_peak,
       row_number() OVER (ORDER BY least(hard_us, plugin_us) ASC NULLS LAST, usable_ratio, cluster, broker_id,
           log_dir) AS rank
FROM crossing
"""


def _sql_literal(value):
    """A number as SQL text (the settings are numbers; nothing else is ever formatted into the statements)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    return repr(int(value)) if isinstance(value, int) else f"{float(value)!r}::DOUBLE"


def duckdb_connect(threads=None):
    import duckdb

    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    if threads:
        connection.execute(f"SET threads = {int(threads)}")
    connection.execute(MESSAGES_DDL)
    for statement in MACROS.format(step_rounding=_sql_literal(STEP_ROUNDING)).strip().split(";\n"):
        connection.execute(statement)
    return connection


def duckdb_read(connection, location):
    """Snapshot Parquet files into the messages table."""

    def limit_type(column):
        cases = " ".join(f"WHEN '{name}' THEN '{limit_type}'" for name, limit_type in LIMIT_TYPE_OF_NAME.items())
        return f"CASE {column}.type {cases} END"

    files = "[" + ", ".join("'" + path.replace("'", "''") + "'" for path in snapshot_files(location)) + "]"
    connection.execute(
        READ_SNAPSHOTS.format(soft_type=limit_type("SoftLimit"), hard_type=limit_type("HardLimit"), files=files)
    )


def duckdb_load(connection, rows):
    """Normalized message dicts (as pandas_frames takes them) into the messages table."""
    import pyarrow as pa

    def limit_part(limit, part):
        return limit.get(part) if isinstance(limit, dict) else None

    volume_type = pa.struct([("log_dir", pa.string()), ("total_bytes", pa.int64()), ("usable_bytes", pa.int64())])
    loaded = pa.table(
        {
            "cluster": pa.array([row["cluster"] for row in rows], pa.string()),
            "broker_id": pa.array([row["broker_id"] for row in rows], pa.int64()),
            "at_us": pa.array([row["at"] for row in rows], pa.int64()),
            "soft_type": pa.array([limit_part(row.get("soft_limit"), "type") for row in rows], pa.string()),
            "soft_level": pa.array([limit_part(row.get("soft_limit"), "level") for row in rows], pa.float64()),
            "hard_type": pa.array([limit_part(row.get("hard_limit"), "type") for row in rows], pa.string()),
            "hard_level": pa.array([limit_part(row.get("hard_limit"), "level") for row in rows], pa.float64()),
            "volumes": pa.array(
                [
                    [
                        {key: volume.get(key) for key in ("log_dir", "total_bytes", "usable_bytes")}
                        for volume in row["volumes"]
                    ]
                    for row in rows
                ],
                pa.list_(volume_type),
            ),
        }
    )
    connection.register("loaded_messages", loaded)
    connection.execute("INSERT INTO messages SELECT * FROM loaded_messages")
    connection.unregister("loaded_messages")


def duckdb_decision_timeline(connection, config):
    """Creates the table ``decisions`` from ``messages``."""
    settings = Settings(config)
    numbers = {
        "interval": _sql_literal(settings.interval),
        "validity": _sql_literal(settings.validity),
        "remembered": _sql_literal(max(settings.interval, settings.validity)),
        "freshness": _sql_literal(settings.freshness),
        "fallback": _sql_literal(settings.fallback),
        "pause": "true" if settings.pause_on_missing_data else "false",
        "violations_type": VIOLATIONS_TYPE,
    }
    if settings.min_available_bytes is not None:
        violates, key = f"v.usable_bytes <= {_sql_literal(settings.min_available_bytes)}", "v.usable_bytes::DOUBLE"
    elif settings.min_available_ratio is not None:
        key = "CASE WHEN v.total_bytes > 0 THEN v.usable_bytes / v.total_bytes ELSE 0.0::DOUBLE END"
        violates = f"{key} <= {_sql_literal(float(settings.min_available_ratio))}"
    else:
        violates, key = "false", "0.0::DOUBLE"
    for script in (
        KEPT.format(**numbers),
        FIGURES.format(strimzi_violates=violates, strimzi_key=key),
        GRADED.format(**numbers, factored=graded_factor_sql(settings)),
    ):
        _execute_script(connection, script)
    if settings.strimzi:
        _execute_script(connection, STRIMZI.format(**numbers))
        connection.execute(
            "CREATE OR REPLACE TEMP TABLE decisions AS SELECT * FROM strimzi_rows UNION ALL SELECT * FROM graded_rows"
        )
    else:
        connection.execute("CREATE OR REPLACE TEMP TABLE decisions AS SELECT * FROM graded_rows")


def duckdb_volume_forecast(connection, config, volume_rows=None):
    """Creates the table ``forecast`` from ``messages``, or from the VOLUMES rows in ``volume_rows`` (a pyarrow
    table)."""
    settings = Settings(config)
    if settings.min_available_bytes is not None:
        plugin_limit = f"{_sql_literal(float(settings.min_available_bytes))}"
    elif settings.min_available_ratio is not None:
        plugin_limit = f"latest.t * {_sql_literal(float(settings.min_available_ratio))}"
    else:
        plugin_limit = "NULL::DOUBLE"
    if volume_rows is None:
        connection.execute(VOLUME_ROWS)
    else:
        connection.register("given_volume_rows", volume_rows)
        connection.execute(
            "CREATE OR REPLACE TEMP TABLE volume_rows AS SELECT cluster, broker_id, at_us, hard_type, hard_level, "
            "log_dir, total_bytes, usable_bytes FROM given_volume_rows"
        )
        connection.unregister("given_volume_rows")
    connection.execute(
        FORECAST.format(
            window=_sql_literal(settings.window),
            plugin_limit=plugin_limit,
            reaction_seconds=_sql_literal(settings.reaction_seconds),
            after_throttle_seconds=_sql_literal(float(limit_sizing.PLUGIN_AFTER_THROTTLE_SECONDS)),
        )
    )


def _execute_script(connection, script):
    for statement in script.strip().split(";\n"):
        if statement.strip():
            connection.execute(statement)


def duckdb_run(location, out, config, threads=None, on_lap=None):
    """Read, both stages, write out/decisions.parquet and out/forecast.parquet; (rows written per stage, seconds per
    phase)."""
    os.makedirs(out, exist_ok=True)
    clock = PhaseClock(on_lap)
    connection = duckdb_connect(threads)
    duckdb_read(connection, location)
    clock.lap("read")
    counts = {}
    for table, stage, phase in (
        ("decisions", duckdb_decision_timeline, "decision timeline"),
        ("forecast", duckdb_volume_forecast, "forecast"),
    ):
        stage(connection, config)
        path = os.path.join(out, f"{table}.parquet").replace("'", "''")
        connection.execute(f"COPY {table} TO '{path}' (FORMAT parquet)")
        counts[table] = connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        clock.lap(phase)
    connection.close()
    return counts, clock.phases
