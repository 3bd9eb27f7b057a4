# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Volume-usage snapshots of the first volume-usage proposal, with no I/O.

One JSON message per broker, keyed by the broker id (as text) on a compacted topic or one per line in a file::

    {"SnapshotAt": "2026-11-22T04:07:09.123Z",
     "HardLimit": {"type": "MinFreeBytes", "level": 1073741824},
     "SoftLimit": {"type": "MinFreeBytes", "level": 5368709120},
     "Volumes": [{"VolumeName": "/var/lib/kafka/data-0", "Capacity": 107374182400, "Consumed": 53687091200}],
     "BrokerId": 1, "ClusterId": "q1Sh-9_ISia_zwGINzRvyQ"}

SnapshotAt, HardLimit, SoftLimit and Volumes are the proposal's schema (limit types under the proposal's names
ConsumedSpace, MinFreeBytes, MinFreePercentage); BrokerId and ClusterId are added so that a message read from a
file still says whose it is. Freshness is judged on SnapshotAt, never on the record timestamp.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import json
import math
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ansible_collections.headroom.kafka.plugins.module_utils.option_checks import (
    BROKER_ID,
    BYTES,
    OptionError,
    parse_datetime,
)
from ansible_collections.headroom.kafka.plugins.module_utils.volume_limits import (
    SNAPSHOT_LIMIT_NAMES,
    LimitError,
    validate_graded_limits,
    validate_limit,
    volume_problem,
)

LIMIT_TYPES_BY_NAME = dict((name, limit_type) for limit_type, name in SNAPSHOT_LIMIT_NAMES.items())
_UTC = datetime.timezone.utc
# A record as select_latest reads it: (where, key, value), value None for a tombstone.
Record = Tuple[str, Optional[Union[bytes, str]], object]


class SnapshotError(ValueError):
    """A log dir row, message or timestamp that does not fit; the message says where and what is expected."""


# -- timestamps --------------------------------------------------------------------------------------------------
def now_utc() -> datetime.datetime:
    return datetime.datetime.now(_UTC)


def format_timestamp(moment: datetime.datetime) -> str:
    """ISO 8601 in UTC with milliseconds and Z, as log_dirs_info's snapshot_at (naive datetimes count as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_UTC)
    return moment.astimezone(_UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_timestamp(text: object, field: str = "SnapshotAt") -> datetime.datetime:
    """An aware UTC datetime from ISO 8601 date-time text with a zone (option_checks.parse_datetime's rules)."""
    try:
        return parse_datetime(text, field)
    except OptionError as exc:
        raise SnapshotError(str(exc)) from exc


# -- log dir rows ------------------------------------------------------------------------------------------------
def _integer(value):
    """An int from an int, an integral float or digits; None when it is none of those."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.match(r"^-?[0-9]+$", value.strip()):
        return int(value.strip())
    return None


def _size(value, where, field):
    """A size in bytes; null and negative sizes (Kafka's -1) mean unknown."""
    if value is None:
        return None
    number = _integer(value)
    if number is None or number > BYTES.maximum:
        raise SnapshotError(
            "{0}.{1} must be a whole number of bytes up to {2}, or null (got {3!r})".format(
                where, field, BYTES.maximum, value
            )
        )
    return number if number >= 0 else None


def _broker_id(value):
    """A broker id (0 to 2^31-1) from an int, an integral float or digits; None when it is not one."""
    number = _integer(value)
    return None if number is None or BROKER_ID.problem(number) else number


def normalize_log_dirs(rows: object, option: str = "log_dirs") -> List[Dict[str, Any]]:
    """Check the log dir rows a module was given (log_dirs_info's RV log_dirs, or hand-made ones).

    Every row needs broker_id, log_dir, total_bytes and usable_bytes (null or -1 when unknown); other keys are
    ignored except error. Returns rows with sizes as ints or None.
    """
    if not isinstance(rows, list):
        raise SnapshotError("{0} must be a list of log dirs (got {1!r})".format(option, rows))
    result = []
    seen: Dict[Tuple[int, str], str] = {}
    for index, row in enumerate(rows):
        where = "{0}[{1}]".format(option, index)
        if not isinstance(row, dict):
            raise SnapshotError(
                "{0} must be a dict with broker_id, log_dir, total_bytes and usable_bytes (got {1!r})".format(
                    where, row
                )
            )
        missing = [key for key in ("broker_id", "log_dir", "total_bytes", "usable_bytes") if key not in row]
        if missing:
            raise SnapshotError(
                "{0} lacks {1}: every log dir needs broker_id, log_dir, total_bytes and usable_bytes "
                "(null when unknown), as log_dirs_info returns them".format(where, ", ".join(missing))
            )
        broker_id = _broker_id(row["broker_id"])
        if broker_id is None:
            raise SnapshotError(
                "{0}.broker_id must be {1} (got {2!r})".format(where, BROKER_ID.describe(), row["broker_id"])
            )
        if not isinstance(row["log_dir"], str) or not row["log_dir"]:
            raise SnapshotError("{0}.log_dir must be the log dir's path (got {1!r})".format(where, row["log_dir"]))
        if (broker_id, row["log_dir"]) in seen:
            raise SnapshotError(
                "{0} is broker {1}'s log dir {2!r} again (the first is {3}); each log dir once".format(
                    where, broker_id, row["log_dir"], seen[(broker_id, row["log_dir"])]
                )
            )
        seen[(broker_id, row["log_dir"])] = where
        result.append(
            {
                "broker_id": broker_id,
                "log_dir": row["log_dir"],
                "total_bytes": _size(row["total_bytes"], where, "total_bytes"),
                "usable_bytes": _size(row["usable_bytes"], where, "usable_bytes"),
                "error": row.get("error"),
            }
        )
    return result


# -- limits ------------------------------------------------------------------------------------------------------
def message_limit(limit: Dict[str, Any]) -> Dict[str, Any]:
    """A graded limit ({type: min_free_bytes, level}) in the proposal's form ({type: MinFreeBytes, level})."""
    return {"type": SNAPSHOT_LIMIT_NAMES[limit["type"]], "level": limit["level"]}


def graded_limit(limit: object, field: str) -> Dict[str, Any]:
    """A message's limit ({type: MinFreeBytes, level}) in the graded form; SnapshotError when it is not one."""
    if not isinstance(limit, dict) or limit.get("type") not in LIMIT_TYPES_BY_NAME:
        raise SnapshotError(
            "{0} must be {{type, level}} with type one of {1} (got {2!r})".format(
                field, ", ".join(sorted(LIMIT_TYPES_BY_NAME)), limit
            )
        )
    converted = {"type": LIMIT_TYPES_BY_NAME[limit["type"]], "level": limit.get("level")}
    try:
        validate_limit(field, converted)
    except LimitError as exc:
        raise SnapshotError(str(exc)) from exc
    return converted


# -- building messages -------------------------------------------------------------------------------------------
# The snapshot topic's configuration when it is created: compacted by broker id, the latest snapshot of each broker.
COMPACTED_TOPIC_CONFIGS = {"cleanup.policy": "compact"}


def build_messages(
    rows: List[Dict[str, Any]],
    soft_limit: Dict[str, Any],
    hard_limit: Dict[str, Any],
    snapshot_at: Union[str, datetime.datetime],
    cluster_id: Optional[str] = None,
    check_limits: bool = True,
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """One message per broker that has log dir rows; returns (messages, skipped log dirs).

    ``check_limits``: the soft and hard limits must be a graded pair (soft trips first). The guard under the plugin's
    policy records its one binary limit as both, checked one by one.

    A log dir with an error or an unknown size is left out of its broker's Volumes (the proposal's schema has no
    way to say "unknown") and listed in the skipped log dirs; a broker whose every log dir is skipped still gets a
    message, with no volumes, so that readers see it is alive.
    """
    if check_limits:
        validate_graded_limits(soft_limit, hard_limit)
    else:
        validate_limit("soft_limit", soft_limit)
        validate_limit("hard_limit", hard_limit)
    rows = normalize_log_dirs(rows)
    stamp = format_timestamp(parse_timestamp(snapshot_at, "snapshot_at"))
    by_broker: Dict[int, List[Dict[str, Any]]] = {}
    skipped = []
    for row in sorted(rows, key=lambda r: (r["broker_id"], r["log_dir"])):
        volumes = by_broker.setdefault(row["broker_id"], [])
        total, usable = row["total_bytes"], row["usable_bytes"]
        reason = volume_problem(row)
        if reason:
            skipped.append(
                {"broker_id": row["broker_id"], "log_dir": row["log_dir"], "error": row.get("error"), "reason": reason}
            )
            continue
        volumes.append({"VolumeName": row["log_dir"], "Capacity": total, "Consumed": total - usable})
    messages: List[Dict[str, Any]] = []
    for broker_id in sorted(by_broker):
        messages.append(
            {
                "SnapshotAt": stamp,
                "HardLimit": message_limit(hard_limit),
                "SoftLimit": message_limit(soft_limit),
                "Volumes": by_broker[broker_id],
                "BrokerId": broker_id,
                "ClusterId": cluster_id,
            }
        )
    return messages, skipped


def message_key(message: Dict[str, Any]) -> bytes:
    """The record key: the broker id as text."""
    return str(message["BrokerId"]).encode("ascii")


def encode_message(message: Dict[str, Any]) -> str:
    """The record value (and the JSON-lines line without its newline): compact JSON in the schema's field order."""
    return json.dumps(message, separators=(",", ":"))


# -- parsing messages --------------------------------------------------------------------------------------------
def _key_broker(key):
    if key is None:
        return None
    if isinstance(key, bytes):
        try:
            key = key.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return _broker_id(key)


def parse_message(value: object, key: Optional[Union[bytes, str]] = None) -> Dict[str, Any]:
    """A checked message in the schema's field order (BrokerId taken from the key when the value lacks it)."""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise SnapshotError("not UTF-8 text") from None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise SnapshotError("not JSON: {0}".format(exc)) from exc
    if not isinstance(value, dict):
        raise SnapshotError("a snapshot must be a JSON object (got {0})".format(type(value).__name__))
    key_broker = _key_broker(key)
    if value.get("BrokerId") is None and key is None:
        raise SnapshotError("BrokerId is missing")
    broker_id = _broker_id(value.get("BrokerId")) if value.get("BrokerId") is not None else key_broker
    if broker_id is None:
        raise SnapshotError(
            "BrokerId must be "
            + BROKER_ID.describe()
            + ", and the record key the same id as text (got BrokerId {0!r}, key {1!r})".format(
                value.get("BrokerId"), key
            )
        )
    if key is not None and key_broker is not None and key_broker != broker_id:
        raise SnapshotError("BrokerId {0} does not match the record key {1!r}".format(broker_id, key))
    if "SnapshotAt" not in value:
        raise SnapshotError("SnapshotAt is missing")
    parse_timestamp(value["SnapshotAt"])
    volumes = value.get("Volumes")
    if not isinstance(volumes, list):
        raise SnapshotError("Volumes must be a list of {{VolumeName, Capacity, Consumed}} (got {0!r})".format(volumes))
    checked: List[Dict[str, Any]] = []
    for index, volume in enumerate(volumes):
        where = "Volumes[{0}]".format(index)
        if (
            not isinstance(volume, dict)
            or not isinstance(volume.get("VolumeName"), str)
            or not volume.get("VolumeName")
        ):
            raise SnapshotError(
                "{0} must be {{VolumeName, Capacity, Consumed}} with a VolumeName (got {1!r})".format(where, volume)
            )
        if any(other["VolumeName"] == volume["VolumeName"] for other in checked):
            raise SnapshotError(
                "{0}.VolumeName {1!r} appears twice; each volume once".format(where, volume["VolumeName"])
            )
        capacity, consumed = (
            _size(volume.get("Capacity"), where, "Capacity"),
            _size(volume.get("Consumed"), where, "Consumed"),
        )
        if capacity is not None and consumed is not None and consumed > capacity:
            raise SnapshotError("{0}.Consumed {1} exceeds its Capacity {2}".format(where, consumed, capacity))
        checked.append({"VolumeName": volume["VolumeName"], "Capacity": capacity, "Consumed": consumed})
    message = {"SnapshotAt": value["SnapshotAt"]}
    for field in ("HardLimit", "SoftLimit"):
        if value.get(field) is not None:
            graded_limit(value[field], field)
            message[field] = {"type": value[field]["type"], "level": value[field]["level"]}
    message["Volumes"] = checked
    message["BrokerId"] = broker_id
    message["ClusterId"] = value.get("ClusterId")
    return message


def snapshot_time(message: Dict[str, Any]) -> datetime.datetime:
    return parse_timestamp(message["SnapshotAt"])


def is_fresh(message: Dict[str, Any], now: datetime.datetime, max_age: Optional[datetime.timedelta]) -> bool:
    """Fresh while now - SnapshotAt <= max_age (a snapshot from the future, clock skew, is fresh)."""
    return max_age is None or now - snapshot_time(message) <= max_age


def select_latest(
    records: Iterable[Record],
    now: datetime.datetime,
    max_age: Optional[datetime.timedelta] = None,
    cluster_id: Optional[str] = None,
) -> Dict[str, Any]:
    """The latest snapshot per broker (by SnapshotAt; on a tie the later record), then the freshness check.

    records: (where, key, value) in log order, where is a label for error messages ("line 3", "offset 7");
    value None is a tombstone and drops what came before for its key. Messages that do not parse are listed in
    invalid_messages and ignored; with cluster_id, messages of another cluster (ClusterId set and different) too.
    """
    latest: Dict[int, Tuple[datetime.datetime, int, Dict[str, Any]]] = {}
    invalid = []
    read = other_cluster = 0
    for position, (where, key, value) in enumerate(records):
        read += 1
        if value is None:
            broker_id = _key_broker(key)
            if broker_id is None:
                invalid.append("{0}: a tombstone whose key {1!r} is not a broker id".format(where, key))
            else:
                latest.pop(broker_id, None)
            continue
        try:
            message = parse_message(value, key)
            moment = snapshot_time(message)
        except SnapshotError as exc:
            invalid.append("{0}: {1}".format(where, exc))
            continue
        if cluster_id is not None and message.get("ClusterId") not in (None, cluster_id):
            other_cluster += 1
            continue
        current = latest.get(message["BrokerId"])
        if current is None or (moment, position) >= (current[0], current[1]):
            latest[message["BrokerId"]] = (moment, position, message)
    fresh, stale = [], []
    for broker_id in sorted(latest):
        moment, position, message = latest[broker_id]
        if max_age is None or now - moment <= max_age:
            fresh.append(message)
        else:
            stale.append(broker_id)
    return {
        "snapshots": fresh,
        "stale_brokers": stale,
        "invalid_messages": invalid,
        "messages_read": read,
        "other_cluster_messages": other_cluster,
    }


def missing_brokers(
    brokers_with_data: Iterable[int], active_brokers: Iterable[int] = (), expected_brokers: Optional[Iterable[int]] = ()
) -> List[int]:
    """Active or expected brokers without data, sorted."""
    have = set(brokers_with_data)
    return sorted((set(active_brokers) | set(expected_brokers or ())) - have)


def read_result(
    records: Iterable[Record],
    now: datetime.datetime,
    max_age: Optional[datetime.timedelta],
    active_brokers: Sequence[int],
    expected_brokers: Optional[Iterable[int]] = (),
    cluster_id: Optional[str] = None,
) -> Dict[str, Any]:
    """What usage_snapshot_info returns: fresh snapshots, stale brokers, brokers without a fresh snapshot."""
    result = select_latest(records, now, max_age, cluster_id)
    without = missing_brokers([m["BrokerId"] for m in result["snapshots"]], active_brokers, expected_brokers)
    result.update(brokers_without_snapshot=without, complete=not without, active_brokers=sorted(active_brokers))
    return result


# -- snapshots to volumes ----------------------------------------------------------------------------------------
def snapshot_volumes(messages: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The volumes (broker_id, log_dir, total_bytes, usable_bytes) of snapshot messages, for the limit rules.

    usable = Capacity - Consumed, so free space round-trips exactly; unknown or inconsistent sizes become None
    (skipped by the rules, like an offline log dir).
    """
    volumes = []
    for message in messages:
        for volume in message["Volumes"]:
            capacity, consumed = volume.get("Capacity"), volume.get("Consumed")
            known = capacity is not None and consumed is not None and consumed <= capacity
            volumes.append(
                {
                    "broker_id": message["BrokerId"],
                    "log_dir": volume["VolumeName"],
                    "total_bytes": capacity if known else None,
                    "usable_bytes": capacity - consumed if known else None,
                }
            )
    return volumes


def parse_snapshots(items: object, option: str = "snapshots") -> List[Dict[str, Any]]:
    """Check a list of snapshot messages given to a module (usage_snapshot_info's RV snapshots);
    SnapshotError names the item."""
    if not isinstance(items, list):
        raise SnapshotError("{0} must be a list of snapshot messages (got {1!r})".format(option, items))
    messages: List[Dict[str, Any]] = []
    for index, item in enumerate(items):
        try:
            messages.append(parse_message(item))
        except SnapshotError as exc:
            raise SnapshotError("{0}[{1}]: {2}".format(option, index, exc)) from exc
    return messages
