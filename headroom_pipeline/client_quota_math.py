"""Kafka client byte-rate quotas (KIP-13) applied to measured traffic, with no I/O.

Quota entries are in the form client_quota_info returns and the pipeline loads them: ``{"entity": {"user": name,
"client_id": name}, "quota_values": {"producer_byte_rate": 1048576.0, ...}}`` with ``<default>`` for a default entity.
Entities with ``ip`` carry no byte rates and are ignored.

Which quota applies (Kafka's ClientQuotaManager and its DefaultQuotaCallback), decided per quota key: only entities
that set the key count, so a client's produce quota and fetch quota may come from different entities. Precedence:

  1. user=U,client_id=C            5. user=<default>,client_id=<default>
  2. user=U,client_id=<default>     6. user=<default>
  3. user=U                         7. client_id=C
  4. user=<default>,client_id=C     8. client_id=<default>

Levels 1, 2, 4 and 5 need both a user and a client id, levels 3 and 6 a user, levels 7 and 8 a client id. A traffic
row without a user (null or empty) is taken as unauthenticated traffic that only client-id entities (levels 7 and 8)
can match. Kafka itself names unauthenticated connections ``ANONYMOUS``: traffic exported with that user name matches
user entities and the default user exactly as the broker does. A row without a client id matches levels 3 and 6 only.

A quota is shared by the connections that the broker measures with one sensor (the sensor's metric tags): a level 1,
2, 4 or 5 quota by one user's one client id, a level 3 or 6 quota by all client ids of the user, a level 7 or 8 quota
by all users of the client id. Byte-rate quotas apply per broker, so the shared rate is the group's bytes on one
broker in one analysis window.

Throttle time, as Kafka computes it (QuotaUtils.throttleTime): ``round((rate - quota) / quota * W)`` when the rate is
above the quota, else 0, with no upper bound for byte-rate quotas (Kafka bounds only request-percentage and
controller-mutation throttle times). W is Rate.windowSize: the time from the start of the oldest retained sample to
now. For a client sending steadily it lies between (quota.window.num - 1) and quota.window.num sample windows up to
Kafka 3.7, and between quota.window.num and quota.window.num + 1 from Kafka 3.8 on (samples overlapping the window
are kept since then); a client seen for the first time counts as (quota.window.num - 1) windows. We use
``W = quota.window.num * quota.window.size.seconds`` (11 s by default): the boundary between the two ranges, never
more than one sample window away from the broker's figure. KIP-13's original formula ``(bytes in window - quota *
window) / quota`` is reported next to it, over the analysis window; the two agree only when W is that window.

Recommendation: the given percentile of a client's per-window rates (one rate per broker and window in which it was
seen), times the headroom factor, rounded up to a whole KiB and at least 1 KiB; none when the client moved no bytes
in that direction. The percentile interpolates linearly between the two nearest ranks, as Spark's percentile does.
"""

import math
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, cast

DEFAULT_NAME = "<default>"
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate")
KIB = 1024
# Kafka's precedence levels: (level, the entity's user part, its client-id part); "name" is the client's own name.
LEVELS = (
    (1, "name", "name"),
    (2, "name", "default"),
    (3, "name", None),
    (4, "default", "name"),
    (5, "default", "default"),
    (6, "default", None),
    (7, None, "name"),
    (8, None, "default"),
)
# Which of (user, client id) a quota of each level is shared by: the metric tags of the broker's sensor.
SHARED_BY = {
    1: ("user", "client_id"),
    2: ("user", "client_id"),
    3: ("user",),
    4: ("user", "client_id"),
    5: ("user", "client_id"),
    6: ("user",),
    7: ("client_id",),
    8: ("client_id",),
}
# (direction, its quota key): produce is the traffic's bytes_in, fetch its bytes_out.
DIRECTIONS = (("produce", "producer_byte_rate"), ("fetch", "consumer_byte_rate"))


def present(name: Optional[str]) -> bool:
    """A user or client id the traffic names (null and empty mean none)."""
    return name is not None and name != ""


def _part(name):
    """How an entity part matches: absent (None), the default entity, or a name."""
    if name is None:
        return None
    return "default" if name == DEFAULT_NAME else "name"


def entity_level(entity: object) -> Optional[int]:
    """The precedence level (1-8) of a user/client-id entity; None for ip entities and anything else."""
    if not isinstance(entity, dict) or not entity or set(entity) - set(("user", "client_id")):
        return None
    shape = (_part(entity.get("user")), _part(entity.get("client_id")))
    for level, user_part, client_part in LEVELS:
        if (user_part, client_part) == shape:
            return level
    return None


def level_applies(level: int, user: Optional[str], client_id: Optional[str]) -> bool:
    """Whether a client with this user and client id can be matched at this level at all (a level needs the names
    its quota is shared by: both for levels 1, 2, 4 and 5, the user for 3 and 6, the client id for 7 and 8)."""
    names = {"user": user, "client_id": client_id}
    return all(present(names[key]) for key in SHARED_BY[level])


def _matches(entity, user, client_id):
    """Name parts must equal the client's names; default parts match any name (applicability is checked apart)."""
    for key, value in (("user", user), ("client_id", client_id)):
        name = entity.get(key)
        if name is not None and name != DEFAULT_NAME and name != value:
            return False
    return True


def describe_entity(entity: Dict[str, str]) -> str:
    """``user=alice,client_id=<default>``: user before client_id, as quota_spec names entities."""
    return ",".join("{0}={1}".format(key, entity[key]) for key in ("user", "client_id", "ip") if key in entity)


def quota_group(level: int, user: Optional[str], client_id: Optional[str]) -> str:
    """The connections sharing a level's quota, named like an entity: ``user=alice``, ``client_id=app``, or both."""
    names = {"user": user, "client_id": client_id}
    return ",".join("{0}={1}".format(key, names[key]) for key in SHARED_BY[level])


def resolve_quota(
    entries: Optional[Iterable[Dict[str, Any]]], user: Optional[str], client_id: Optional[str], key: str
) -> Optional[Dict[str, Any]]:
    """The quota ``key`` that applies to (user, client_id): {value, entity, level, quota_entity, quota_group},
    or None."""
    by_level: Dict[int, List[Dict[str, Any]]] = {}
    for entry in entries or []:
        value = (entry.get("quota_values") or {}).get(key)
        level = entity_level(entry.get("entity"))
        if value is None or level is None:
            continue
        by_level.setdefault(level, []).append(entry)
    for level, _user_part, _client_part in LEVELS:
        if level not in by_level or not level_applies(level, user, client_id):
            continue
        for entry in by_level[level]:
            if _matches(entry["entity"], user, client_id):
                return {
                    "value": float(entry["quota_values"][key]),
                    "entity": entry["entity"],
                    "level": level,
                    "quota_entity": describe_entity(entry["entity"]),
                    "quota_group": quota_group(level, user, client_id),
                }
    return None


# -- throttle time ------------------------------------------------------------------------------------------------
def kafka_window_ms(quota_window_num: float, quota_window_size_seconds: float) -> int:
    """W in milliseconds for a client sending steadily: quota.window.num sample windows (see the module notes)."""
    return int(round(quota_window_num * quota_window_size_seconds * 1000.0))


def java_round(value: float) -> int:
    """Java's Math.round for the positive values used here: halves round up."""
    return int(math.floor(value + 0.5))


def kafka_throttle_time_ms(rate: float, quota: Optional[float], window_ms: float) -> int:
    """Kafka's throttle time for a measured rate (bytes/s) over quota: round((rate - quota) / quota * W);
    0 within quota."""
    if quota is None or not rate > quota:
        return 0
    return java_round((rate - quota) / quota * window_ms)


def kip13_throttle_time_ms(window_bytes: float, quota: Optional[float], window_seconds: float) -> int:
    """KIP-13's delay: (bytes in the window - quota * window) / quota, in whole milliseconds; 0 within quota."""
    if quota is None:
        return 0
    bound = quota * window_seconds
    if not window_bytes > bound:
        return 0
    return java_round((window_bytes - bound) / quota * 1000.0)


# -- windows ------------------------------------------------------------------------------------------------------
def window_end_us(ts_us: int, window_us: int) -> int:
    """The end of the epoch-aligned window holding an interval that ends at ts (windows include their end)."""
    return ts_us + (-ts_us) % window_us


def window_length_us(window_seconds: float) -> int:
    return int(round(window_seconds * 1000000.0))


def _client_key(row):
    return (row.get("user"), row.get("client_id"))


def _sort_key(row):
    """Nulls first, then names (as Spark's ascending order puts them)."""
    return tuple((value is not None, value if value is not None else "") for value in row)


def _aggregate_windows(rows, window_us):
    """Bytes per (user, client_id, broker_id, window end): {key: [bytes_in, bytes_out]}."""
    totals = {}
    for row in rows:
        key = (row.get("user"), row.get("client_id"), row["broker_id"], window_end_us(row["ts_us"], window_us))
        figures = totals.setdefault(key, [0, 0])
        figures[0] += row["bytes_in"]
        figures[1] += row["bytes_out"]
    return totals


def _quota_figures(windows, entries, window_seconds, window_ms, prefix):
    """Quota columns for one set of entries (current or proposed), both directions, on the window rows in place."""
    resolved = {}
    for window in windows:
        client = _client_key(window)
        if client not in resolved:
            resolved[client] = dict((key, resolve_quota(entries, client[0], client[1], key)) for key in QUOTA_KEYS)
    group_bytes = {}
    for window in windows:
        for direction, key in DIRECTIONS:
            quota = resolved[_client_key(window)][key]
            if quota is not None:
                group = (direction, window["broker_id"], window["window_end"], quota["quota_group"])
                group_bytes[group] = group_bytes.get(group, 0) + window[direction + "_bytes"]
    for window in windows:
        for direction, key in DIRECTIONS:
            quota = resolved[_client_key(window)][key]
            names = column_names(prefix, direction, key)
            if quota is None:
                window.update(dict((name, None) for name in names.values()))
                window[names["throttle"]] = window[names["kip13"]] = 0  # no quota: Kafka never throttles
                continue
            shared = group_bytes[(direction, window["broker_id"], window["window_end"], quota["quota_group"])]
            rate = shared / window_seconds
            window[names["quota"]] = quota["value"]
            window[names["entity"]] = quota["quota_entity"]
            window[names["group"]] = quota["quota_group"]
            window[names["group_rate"]] = rate
            window[names["fraction"]] = rate / quota["value"]
            window[names["throttle"]] = kafka_throttle_time_ms(rate, quota["value"], window_ms)
            window[names["kip13"]] = kip13_throttle_time_ms(shared, quota["value"], window_seconds)


def column_names(prefix: str, direction: str, key: str) -> Dict[str, str]:
    """Output column names; produce keeps the short names (quota_entity, throttle_time_ms, ...), fetch is prefixed."""
    stem = "" if direction == "produce" else "fetch_"
    return {
        "quota": prefix + key,
        "entity": prefix + stem + "quota_entity",
        "group": prefix + stem + "quota_group",
        "group_rate": prefix + stem + "quota_group_bytes_per_sec",
        "fraction": prefix + stem + "quota_used_fraction",
        "throttle": prefix + stem + "throttle_time_ms",
        "kip13": prefix + stem + "throttle_time_ms_kip13",
    }


def client_windows(
    rows: Iterable[Dict[str, Any]],
    quotas: Optional[Sequence[Dict[str, Any]]],
    proposed: Optional[Sequence[Dict[str, Any]]] = None,
    window_seconds: float = 60.0,
    quota_window_num: int = 11,
    quota_window_size: float = 1.0,
) -> List[Dict[str, Any]]:
    """One dict per (user, client_id, broker_id, window): bytes, rates, the quota that applies and the throttle times.

    ``rows``: dicts with ts_us (end of the interval the bytes were counted in, microseconds since the epoch),
    broker_id, user, client_id, bytes_in, bytes_out. Window bounds are in microseconds. ``proposed`` (a whole quota
    set, not changes to the current one) adds the same figures with the prefix ``proposed_``.
    """
    window_us = window_length_us(window_seconds)
    window_ms = kafka_window_ms(quota_window_num, quota_window_size)
    windows = []
    for (user, client_id, broker_id, end), (bytes_in, bytes_out) in _aggregate_windows(rows, window_us).items():
        windows.append(
            {
                "user": user,
                "client_id": client_id,
                "broker_id": broker_id,
                "window_start": end - window_us,
                "window_end": end,
                "produce_bytes": bytes_in,
                "produce_bytes_per_sec": bytes_in / window_seconds,
                "fetch_bytes": bytes_out,
                "fetch_bytes_per_sec": bytes_out / window_seconds,
            }
        )
    _quota_figures(windows, quotas, window_seconds, window_ms, "")
    if proposed is not None:
        _quota_figures(windows, proposed, window_seconds, window_ms, "proposed_")
    windows.sort(key=lambda w: _sort_key((w["user"], w["client_id"])) + (w["broker_id"], w["window_start"]))
    return windows


# -- recommendations ----------------------------------------------------------------------------------------------
def percentile(values: Iterable[float], fraction: float) -> Optional[float]:
    """The exact percentile with linear interpolation between ranks, computed as Spark's percentile does."""
    ordered = sorted(values)
    if not ordered:
        return None
    position = (len(ordered) - 1) * fraction
    lower, higher = int(math.floor(position)), int(math.ceil(position))
    low_value, high_value = float(ordered[lower]), float(ordered[higher])
    if lower == higher or low_value == high_value:
        return low_value
    return (higher - position) * low_value + (position - lower) * high_value


def recommended_quota(rates: Sequence[float], fraction: float, headroom: float) -> Optional[int]:
    """Percentile rate times headroom, rounded up to a whole KiB (at least 1 KiB); None without any bytes."""
    if not rates or not any(rate > 0 for rate in rates):
        return None
    scaled = cast(float, percentile(rates, fraction)) * headroom  # some rate is above 0: rates is not empty
    return max(KIB, int(math.ceil(scaled / KIB)) * KIB)


def recommended_entity(user: Optional[str], client_id: Optional[str]) -> Optional[str]:
    """Where a recommendation belongs: the client's own most specific entity, which no other client shares."""
    parts = [("user", user), ("client_id", client_id)]
    return ",".join("{0}={1}".format(key, name) for key, name in parts if present(name)) or None


def client_recommendations(
    windows: Sequence[Dict[str, Any]], fraction: float = 0.99, headroom: float = 1.2
) -> List[Dict[str, Any]]:
    """One dict per (user, client_id) from client_windows' rows: counts, peak and percentile rates, quotas, advice."""
    by_client: Dict[Tuple[Optional[str], Optional[str]], List[Dict[str, Any]]] = {}
    for window in windows:
        by_client.setdefault(_client_key(window), []).append(window)
    with_proposed = any("proposed_producer_byte_rate" in window for window in windows)
    result = []
    for (user, client_id), rows in by_client.items():
        produce = [row["produce_bytes_per_sec"] for row in rows]
        fetch = [row["fetch_bytes_per_sec"] for row in rows]
        item = {
            "user": user,
            "client_id": client_id,
            "windows": len(rows),
            "peak_produce_bytes_per_sec": max(produce),
            "percentile_produce_bytes_per_sec": percentile(produce, fraction),
            "peak_fetch_bytes_per_sec": max(fetch),
            "percentile_fetch_bytes_per_sec": percentile(fetch, fraction),
            "producer_byte_rate": rows[0]["producer_byte_rate"],
            "quota_entity": rows[0]["quota_entity"],
            "consumer_byte_rate": rows[0]["consumer_byte_rate"],
            "fetch_quota_entity": rows[0]["fetch_quota_entity"],
            "recommended_producer_byte_rate": recommended_quota(produce, fraction, headroom),
            "recommended_consumer_byte_rate": recommended_quota(fetch, fraction, headroom),
            "recommended_entity": recommended_entity(user, client_id),
            "windows_over_quota": sum(1 for row in rows if _over(row, "")),
        }
        if with_proposed:
            item.update(
                {
                    "proposed_producer_byte_rate": rows[0]["proposed_producer_byte_rate"],
                    "proposed_consumer_byte_rate": rows[0]["proposed_consumer_byte_rate"],
                    "proposed_windows_over_quota": sum(1 for row in rows if _over(row, "proposed_")),
                }
            )
        result.append(item)
    result.sort(key=lambda item: _sort_key((item["user"], item["client_id"])))
    return result


def _over(row, prefix):
    """Over the produce or the fetch quota in this window (the rate the quota's sharers reach exceeds it)."""
    return any(
        row.get(prefix + name) is not None and row[prefix + name] > 1.0
        for name in ("quota_used_fraction", "fetch_quota_used_fraction")
    )
