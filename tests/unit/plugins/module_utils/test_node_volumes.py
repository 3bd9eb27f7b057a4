"""The disks of a Kafka node that DescribeLogDirs does not report, as rows the volume limits judge."""

import collections

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.node_volumes import node_paths, volume_row

StatVfs = collections.namedtuple("StatVfs", "f_blocks f_bavail f_frsize")


@pytest.mark.parametrize(
    "metadata, log_dirs, roles, expected",
    [
        # A broker's data log dirs are DescribeLogDirs' business: only its metadata dir.
        ("/m", ["/d0", "/d1"], "broker", [("/m", "metadata")]),
        ("/m", ["/d0"], "broker,controller", [("/m", "metadata")]),
        # A broker's metadata in its first log dir (Kafka's default) is described by DescribeLogDirs already.
        ("/d0", ["/d0", "/d1"], "broker", []),
        # A controller-only node is not described by any broker: everything it writes to.
        ("/m", ["/c0"], "controller", [("/m", "metadata"), ("/c0", "log_dir")]),
        # metadata.log.dir defaults to the first log dir: listed once.
        ("/c0", ["/c0", "/c1"], " controller ", [("/c0", "metadata"), ("/c1", "log_dir")]),
        (None, ["/c0"], "controller", [("/c0", "log_dir")]),
        (None, [], "broker", []),
    ],
)
def test_node_paths(metadata, log_dirs, roles, expected):
    assert [(p["path"], p["kind"]) for p in node_paths(metadata, log_dirs, roles)] == expected


@pytest.mark.parametrize(
    "statvfs, error, sizes",
    [
        (StatVfs(16384, 4096, 4096), None, (67108864, 16777216, 50331648, 0.25, None)),
        (StatVfs(0, 0, 4096), None, (0, 0, 0, 0.0, None)),
        (None, "EACCES", (None, None, None, None, "EACCES")),
        (None, None, (None, None, None, None, "NOT_FOUND")),
    ],
)
def test_volume_row(statvfs, error, sizes):
    row = volume_row(4, "/var/lib/kafka/metadata", "metadata", statvfs, error)
    assert row["broker_id"] == 4 and row["log_dir"] == "/var/lib/kafka/metadata" and row["kind"] == "metadata"
    assert (row["total_bytes"], row["usable_bytes"], row["used_bytes"], row["available_ratio"], row["error"]) == sizes
