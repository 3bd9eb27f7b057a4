# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the disk guard records of each decision, and how its history directory is laid out (no I/O here).

Every complete observation becomes the proposal's snapshot messages (one per broker, with the limits in force), and
every decision one decision record. Both go to JSON-lines files of one UTC hour each, ``snapshots-YYYY-MM-DDTHH.jsonl``
and ``decisions-YYYY-MM-DDTHH.jsonl``; an hour's file is compressed (``.jsonl.gz``) once the hour is over, and removed
once its hour ended longer than the retention ago. The pipeline reads the directory as it is: the snapshot files as
its ``--snapshots``, the decision files as the guard's own account beside its replay of the rules.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ansible_collections.headroom.kafka.plugins.module_utils import snapshots

if TYPE_CHECKING:
    from ansible_collections.headroom.kafka.plugins.module_utils.disk_guard import Policy

KINDS = ("snapshots", "decisions")
HOUR_FORMAT = "%Y-%m-%dT%H"
FILE_PATTERN = re.compile(r"^(snapshots|decisions)-(\d{4}-\d\d-\d\dT\d\d)\.jsonl(\.gz)?$")
SECONDS_PER_HOUR = 3600


def hour_of(seconds: float) -> str:
    """The UTC hour an instant falls in, as the file names give it (2026-11-28T04)."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime(HOUR_FORMAT)


def file_name(kind: str, hour: str, compressed: bool = False) -> str:
    return "{0}-{1}.jsonl{2}".format(kind, hour, ".gz" if compressed else "")


def parse_name(name: str) -> Optional[Tuple[str, str, bool]]:
    """(kind, hour, compressed) of a history file's name; None for any other name (left alone)."""
    match = FILE_PATTERN.match(name)
    if not match:
        return None
    return match.group(1), match.group(2), bool(match.group(3))


def hour_end(hour: str) -> float:
    """Epoch seconds at which the hour ``hour`` is over."""
    start = datetime.datetime.strptime(hour, HOUR_FORMAT).replace(tzinfo=datetime.timezone.utc)
    return start.timestamp() + SECONDS_PER_HOUR


def housekeeping(names: Iterable[str], now: float, retention: float) -> Dict[str, List[str]]:
    """What to do with the files of a history directory at ``now``: ``remove`` the files whose hour ended more than
    ``retention`` seconds ago, ``compress`` the uncompressed files of hours that are over (a guard stopped or killed
    before it closed them). A file already compressed is never compressed again; other names are left alone."""
    plan: Dict[str, List[str]] = {"remove": [], "compress": []}
    for name in sorted(names):
        parsed = parse_name(name)
        if parsed is None:
            continue
        _kind, hour, compressed = parsed
        end = hour_end(hour)
        if end + retention <= now:
            plan["remove"].append(name)
        elif end <= now and not compressed:
            plan["compress"].append(name)
    return plan


def history_limits(policy: "Policy") -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(soft, hard) limits in force, in the graded form the snapshot schema carries. The plugin's policy has one
    binary limit, recorded as both: its min_available_bytes as MinFreeBytes, its ratio as a MinFreePercentage."""
    if policy.name == "graded":
        return dict(policy.soft_limit or {}), dict(policy.hard_limit or {})
    if policy.min_available_bytes is not None:
        limit = {"type": "min_free_bytes", "level": policy.min_available_bytes}
    else:
        limit = {"type": "min_free_percentage", "level": round(float(policy.min_available_ratio or 0.0) * 100.0, 9)}
    return dict(limit), dict(limit)


def snapshot_messages(result: Mapping[str, Any], policy: "Policy") -> List[Dict[str, Any]]:
    """The snapshot messages of a decision's observation, one per broker that answered; none unless the observation
    was complete (a partial one would read, to the pipeline, as brokers gone quiet)."""
    if not result.get("complete") or not result.get("volumes"):
        return []
    soft, hard = history_limits(policy)
    messages, _skipped = snapshots.build_messages(
        list(result["volumes"]),
        soft,
        hard,
        snapshots.format_timestamp(datetime.datetime.fromtimestamp(result["decided_at"], datetime.timezone.utc)),
        result.get("cluster_id"),
        check_limits=policy.name == "graded",
    )
    return messages


def decision_record(result: Mapping[str, Any], mode: str) -> Dict[str, Any]:
    """One decision as the guard records it: when, the factor and state, why, and the quota entities it changed (each
    {entity, before, after}; planned ones in dry_run). ``mode``: enforce, dry_run (Kafka validated, nothing applied)
    or observe_only (quotas not touched)."""
    return {
        "DecidedAt": snapshots.format_timestamp(
            datetime.datetime.fromtimestamp(result["decided_at"], datetime.timezone.utc)
        ),
        "ClusterId": result.get("cluster_id"),
        "Policy": result["policy"],
        "ThrottleFactor": float(result["throttle_factor"]),
        "State": result["state"],
        "Reason": result["reason"],
        "Observed": bool(result.get("observed")),
        "Complete": bool(result.get("complete")),
        "FallbackApplied": bool(result.get("fallback_applied")),
        "MissingDataApplied": bool(result.get("missing_data_applied")),
        "MissingBrokers": list(result.get("missing_brokers") or []),
        "Mode": mode,
        "QuotaChanges": list(result.get("changes") or []),
    }
