# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Apache Kafka releases speak which protocol versions, with no I/O.

A broker tells the versions of each API it speaks (ApiVersions), not its release; when a module cannot use a broker,
it names the releases that broker can be, and the release it needs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from typing import List, Optional, Tuple, Union

# DescribeLogDirs: the newest version a release line answers (Kafka's DescribeLogDirsRequest.json): v3 added the
# top-level error code (KIP-784, Kafka 3.1), v4 the volume's total and usable bytes (KIP-827, Kafka 3.3).
DESCRIBE_LOG_DIRS_SIZES_VERSION = 4
DESCRIBE_LOG_DIRS_SIZES_RELEASE = "3.3"
_DESCRIBE_LOG_DIRS_RELEASES = {3: "Kafka 3.1 or 3.2"}


def describe_log_dirs_release(max_version: int) -> str:
    """The releases whose brokers answer DescribeLogDirs up to ``max_version`` at most, in words."""
    if max_version >= DESCRIBE_LOG_DIRS_SIZES_VERSION:
        return "Kafka {0} or later".format(DESCRIBE_LOG_DIRS_SIZES_RELEASE)
    return _DESCRIBE_LOG_DIRS_RELEASES.get(max_version, "Kafka older than 3.1")


def describe_log_dirs_too_old(broker: Union[int, str], max_version: int) -> str:
    """Why a broker answering DescribeLogDirs only up to ``max_version`` cannot give log dir sizes, and what it
    needs."""
    return (
        "broker {0} answers DescribeLogDirs only up to v{1}, so it runs {2}; total and usable bytes need v{3} "
        "(KIP-827, Kafka {4} or later): upgrade the broker to Kafka {4} or newer".format(
            broker,
            max_version,
            describe_log_dirs_release(max_version),
            DESCRIBE_LOG_DIRS_SIZES_VERSION,
            DESCRIBE_LOG_DIRS_SIZES_RELEASE,
        )
    )


# KAFKA-20746 (strimzi/kafka-quotas-plugin#71): from 4.0 a KRaft broker hands a client quota callback a view of the
# cluster it builds on every metadata change; that view leaves fenced brokers out, and a partition still listing a
# fenced broker's replica makes it throw a NullPointerException. With a callback such as the Strimzi plugin configured,
# every metadata change while a broker is stopped logs "Encountered metadata publishing fault"; the brokers keep
# serving. Measured by the compatibility suite: 4.0.2, 4.1.2, 4.2.1 and 4.3.1 throw, 4.2.2 and 4.4.0 do not; the fix
# was merged on the 4.3 branch after 4.3.1, so the 4.3 line counts as fixed from its next patch release.
_FENCED_BROKER_VIEW_FAULT = (((4, 0, 0), (4, 2, 2)), ((4, 3, 0), (4, 3, 2)))
FENCED_BROKER_VIEW_FIXED_IN = "4.2.2, 4.3.2 or 4.4.0"
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


def parse_release(version: str) -> Optional[Tuple[int, int, int]]:
    """(major, minor, patch) of ``4.1.2`` (a suffix such as ``-rc1`` is ignored), None when it is not a release."""
    match = _RELEASE.match(str(version or ""))
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def has_fenced_broker_view_fault(version: str) -> bool:
    """True for a Kafka release whose quota callback view throws while a broker is fenced (KAFKA-20746)."""
    release = parse_release(version)
    return release is not None and any(low <= release < high for low, high in _FENCED_BROKER_VIEW_FAULT)


def quota_callback_faults(version: str) -> List[str]:
    """What a quota callback meets on this Kafka release, as warnings for the play (none for a sound release)."""
    if not has_fenced_broker_view_fault(version):
        return []
    return [
        "Kafka {0} has KAFKA-20746: while a broker is stopped, every metadata change logs a NullPointerException "
        '("Encountered metadata publishing fault") from the cluster view it hands the quota plugin; the brokers keep '
        "serving and throttling, but the fault is logged until the broker is back. Upgrade to Kafka {1} or later, "
        "or use the disk guard, which needs no callback.".format(version, FENCED_BROKER_VIEW_FIXED_IN)
    ]
