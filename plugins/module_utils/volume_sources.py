# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the volumes a decision judges come from: log dirs given, snapshots given, or a fresh query of the cluster
(volume_limits, disk_guard and the guard process share it).

``given`` checks what a task hands over before anything talks to Kafka; ``gather`` asks the cluster only what the
source needs (its active brokers for snapshots, DescribeLogDirs for a fresh query).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Union, cast

from ansible_collections.headroom.kafka.plugins.module_utils import durations, log_dirs, snapshots

if TYPE_CHECKING:
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter


class VolumeSourceError(ValueError):
    """Volumes given to a task that cannot be used; the message names the option, the item and what is allowed."""


class Given(object):
    """The volumes a task was given, checked: log dir rows, snapshot messages (with their max_age), or neither."""

    def __init__(
        self,
        rows: Optional[List[Dict[str, Any]]] = None,
        messages: Optional[List[Dict[str, Any]]] = None,
        max_age: Optional[datetime.timedelta] = None,
    ) -> None:
        self.rows, self.messages, self.max_age = rows, messages, max_age

    @property
    def needs_kafka(self) -> bool:
        return self.rows is None


def given(
    log_dirs_given: Optional[List[Dict[str, Any]]] = None,
    snapshots_given: Optional[List[Any]] = None,
    max_age: Optional[Union[str, int, float]] = None,
) -> Given:
    """Check the log_dirs / snapshots / max_age options; VolumeSourceError names the option."""
    if log_dirs_given is not None and snapshots_given is not None:
        raise VolumeSourceError("log_dirs and snapshots are mutually exclusive: the volumes come from one of them")
    age = None
    if max_age is not None:
        if snapshots_given is None:
            raise VolumeSourceError("max_age applies to snapshots only; give snapshots or leave max_age out")
        try:
            age = durations.parse_positive_duration(max_age, "max_age")
        except durations.DurationError as exc:
            raise VolumeSourceError(str(exc)) from exc
    try:
        rows = snapshots.normalize_log_dirs(log_dirs_given) if log_dirs_given is not None else None
        messages = snapshots.parse_snapshots(snapshots_given) if snapshots_given is not None else None
    except snapshots.SnapshotError as exc:
        raise VolumeSourceError(str(exc)) from exc
    return Given(rows, messages, age)


def gather(
    adapter: Optional["KafkaAdapter"],
    source: Given,
    expected_brokers: Optional[Iterable[int]] = (),
    now: Optional[datetime.datetime] = None,
) -> Dict[str, Any]:
    """{volumes, source, missing_brokers, stale_brokers, cluster_id}: the volumes to judge, the brokers without data and
    the cluster's id (None when the volumes were given).

    ``adapter`` may be None when ``source`` needs no Kafka (log dirs given). A fresh query counts a broker that did
    not answer, a fenced one and an expected one that is not active as missing; snapshots count an active or expected
    broker without a fresh snapshot as missing. KafkaAdapterError when Kafka cannot be asked.
    """
    expected = expected_brokers or []
    if source.rows is not None:
        missing = snapshots.missing_brokers([row["broker_id"] for row in source.rows], (), expected)
        return {
            "volumes": source.rows,
            "source": "log_dirs",
            "missing_brokers": missing,
            "stale_brokers": [],
            "cluster_id": None,
        }
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if source.messages is not None:
        cluster = cast("KafkaAdapter", adapter).describe_cluster()  # adapter is None only for log dirs given
        chosen = snapshots.select_latest(
            [("snapshots[{0}]".format(i), None, m) for i, m in enumerate(source.messages)], now, source.max_age
        )
        known = [broker["id"] for broker in cluster["brokers"]] + cluster.get("fenced_brokers", [])
        missing = snapshots.missing_brokers([m["BrokerId"] for m in chosen["snapshots"]], known, expected)
        return {
            "volumes": snapshots.snapshot_volumes(chosen["snapshots"]),
            "source": "snapshots",
            "missing_brokers": missing,
            "stale_brokers": chosen["stale_brokers"],
            "cluster_id": cluster.get("cluster_id"),
        }
    view = log_dirs.collect(cast("KafkaAdapter", adapter), now)
    active = [broker["id"] for broker in view["brokers"]]
    # A broker that answered with no log dirs answered, as the plugin's DescribeLogDirs succeeds with it.
    answered = set(active) - set(view["missing_brokers"])
    missing = sorted(
        set(view["missing_brokers"])
        | set(view["fenced_brokers"])
        | set(snapshots.missing_brokers(answered, active, expected))
    )
    return {
        "volumes": view["log_dirs"],
        "source": "cluster",
        "missing_brokers": missing,
        "stale_brokers": [],
        "cluster_id": view["cluster_id"],
    }
