# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Volumes of a Kafka node that DescribeLogDirs does not report (``metadata.log.dir``, a controller-only node's
disks), as rows of the same shape as log_dirs_info's, so that the same limits judge them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, List, Optional, Sequence, cast

from ansible_collections.headroom.kafka.plugins.module_utils.log_dirs import log_dir_row
from ansible_collections.headroom.kafka.plugins.module_utils.snapshots import SnapshotError, normalize_log_dirs

# What each kind of path is, in the order a node's paths are listed (a path listed twice is reported once), and
# "path" for a path asked for by name.
KINDS = ("metadata", "log_dir")
ALL_KINDS = KINDS + ("path",)


class NodeVolumesError(ValueError):
    """Node volumes handed to log_dirs_info that cannot be used; the message names the item, the field and the
    value."""


def volume_row(
    node_id: int, path: str, kind: str, statvfs: Optional[Any], error: Optional[str] = None
) -> Dict[str, Any]:
    """One row for ``path`` on node ``node_id``: the filesystem's total and usable bytes as statvfs gives them
    (f_blocks and f_bavail in units of f_frsize, usable being what an unprivileged writer such as Kafka may use), or
    null sizes and ``error`` when the path could not be read."""
    if statvfs is None:
        sizes: Dict[str, Any] = {"log_dir": path, "error": error or "NOT_FOUND"}
    else:
        sizes = {
            "log_dir": path,
            "total_bytes": statvfs.f_blocks * statvfs.f_frsize,
            "usable_bytes": statvfs.f_bavail * statvfs.f_frsize,
            "error": None,
        }
    row = log_dir_row(node_id, sizes)
    row["kind"] = kind
    return row


def node_paths(metadata_log_dir: Optional[str], log_dirs: Sequence[str], roles: str) -> List[Dict[str, str]]:
    """The paths of a node that Kafka does not describe: its metadata log dir (on every node) and, on a node that is
    not a broker, its log dirs. A broker's data log dirs are left to DescribeLogDirs, also when the metadata log
    dir is one of them (Kafka's default: the first of log.dirs)."""
    paths: List[Dict[str, str]] = []
    is_broker = "broker" in [role.strip() for role in roles.split(",")]
    seen = set(log_dirs) if is_broker else set()
    candidates = [(metadata_log_dir, "metadata")] + ([] if is_broker else [(path, "log_dir") for path in log_dirs])
    for path, kind in candidates:
        if path and path not in seen:
            seen.add(path)
            paths.append({"path": path, "kind": kind})
    return paths


def with_node_volumes(view: Dict[str, Any], given: object, option: str = "node_volumes") -> Dict[str, Any]:
    """log_dirs_info's ``view`` with the rows node_volumes_info read on the hosts (``given``, from any number of
    hosts) beside Kafka's own, ordered by node id and path. Kafka's row wins where both describe one path (a broker's
    metadata dir that is also a data log dir). Every given row is checked first, NodeVolumesError naming the item."""
    try:
        rows = normalize_log_dirs(given, option)
    except SnapshotError as error:
        raise NodeVolumesError(str(error)) from error
    described = {(row["broker_id"], row["log_dir"]) for row in view["log_dirs"]}
    added = []
    for index, (row, original) in enumerate(zip(rows, cast(List[Dict[str, Any]], given))):
        kind = original.get("kind", "path")
        if kind not in ALL_KINDS:
            raise NodeVolumesError(
                "{0}[{1}].kind must be one of {2} (got {3!r})".format(option, index, ", ".join(ALL_KINDS), kind)
            )
        if (row["broker_id"], row["log_dir"]) in described:
            continue
        merged = log_dir_row(row["broker_id"], row)
        merged["kind"] = kind
        added.append(merged)
    result = dict(view)
    result["log_dirs"] = sorted(view["log_dirs"] + added, key=lambda row: (row["broker_id"], row["log_dir"]))
    return result
