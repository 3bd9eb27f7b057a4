# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Apache Kafka releases speak which protocol versions, with no I/O.

A broker tells the versions of each API it speaks (ApiVersions), not its release; when a module cannot use a broker,
it names the releases that broker can be, and the release it needs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Union

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
