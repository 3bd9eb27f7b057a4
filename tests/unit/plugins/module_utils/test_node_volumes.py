"""The disks of a Kafka node that DescribeLogDirs does not report, as rows the volume limits judge."""

import collections

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.node_volumes import (
    NodeVolumesError,
    node_paths,
    volume_row,
    with_node_volumes,
)

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


def kafka_view(*rows):
    return {"cluster_id": "c", "complete": True, "log_dirs": [{"broker_id": b, "log_dir": d} for b, d in rows]}


def node_row(node_id, path, kind="metadata", total=100, usable=40, **extra):
    row = {"broker_id": node_id, "log_dir": path, "total_bytes": total, "usable_bytes": usable, "kind": kind}
    row.update(extra)
    return row


def test_node_volumes_go_beside_kafkas_rows_in_order():
    view = kafka_view((1, "/d0"), (2, "/d0"))
    merged = with_node_volumes(view, [node_row(4, "/m"), node_row(1, "/m"), node_row(4, "/c0", "log_dir")])
    assert [(r["broker_id"], r["log_dir"], r.get("kind")) for r in merged["log_dirs"]] == [
        (1, "/d0", None),
        (1, "/m", "metadata"),
        (2, "/d0", None),
        (4, "/c0", "log_dir"),
        (4, "/m", "metadata"),
    ]
    row = merged["log_dirs"][1]
    assert (row["used_bytes"], row["available_ratio"], row["error"]) == (60, 0.4, None)
    assert merged["cluster_id"] == "c" and view["log_dirs"] == kafka_view((1, "/d0"), (2, "/d0"))["log_dirs"]


def test_a_path_kafka_describes_is_returned_once_as_kafka_describes_it():
    merged = with_node_volumes(kafka_view((1, "/d0")), [node_row(1, "/d0")])
    assert merged["log_dirs"] == [{"broker_id": 1, "log_dir": "/d0"}]


def test_unreadable_node_paths_keep_their_error():
    merged = with_node_volumes(kafka_view(), [node_row(4, "/m", total=None, usable=None, error="EACCES")])
    assert merged["log_dirs"][0]["error"] == "EACCES" and merged["log_dirs"][0]["available_ratio"] is None


@pytest.mark.parametrize(
    "given, said",
    [
        ("not a list", "node_volumes must be a list"),
        ([node_row(4, "/m", kind="disk")], "node_volumes[0].kind must be one of metadata, log_dir, path (got 'disk')"),
        ([{"broker_id": 4, "log_dir": "/m"}], "node_volumes[0] lacks total_bytes, usable_bytes"),
        ([node_row(4, "/m"), node_row("x", "/m")], "node_volumes[1].broker_id must be"),
        ([node_row(4, "/m"), node_row(4, "/m")], "node_volumes[1] is broker 4's log dir '/m' again"),
    ],
)
def test_wrong_node_volumes_are_refused_naming_the_item(given, said):
    with pytest.raises(NodeVolumesError) as raised:
        with_node_volumes(kafka_view(), given)
    assert said in str(raised.value)
