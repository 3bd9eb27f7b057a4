"""node_volumes_info run as Ansible runs it: statvfs of the paths a node's host has."""

import os

from module_runner import run_module


def test_the_module_reads_the_filesystems_of_the_paths(tmp_path):
    run = run_module("node_volumes_info", {"node_id": 4, "metadata_log_dir": str(tmp_path), "process_roles": "broker"})
    assert not run.failed, run.msg
    [row] = run.result["volumes"]
    statvfs = os.statvfs(str(tmp_path))
    assert row["total_bytes"] == statvfs.f_blocks * statvfs.f_frsize
    assert row["error"] is None and row["kind"] == "metadata"


def test_a_missing_path_is_a_row_with_its_error(tmp_path):
    run = run_module("node_volumes_info", {"node_id": 4, "paths": [str(tmp_path / "gone")]})
    assert not run.failed, run.msg
    assert run.result["volumes"][0]["error"] == "ENOENT"


def test_paths_and_metadata_log_dir_exclude_each_other(tmp_path):
    run = run_module("node_volumes_info", {"node_id": 4, "paths": ["/"], "metadata_log_dir": "/"})
    assert run.failed and "mutually exclusive" in run.msg
    run = run_module("node_volumes_info", {"node_id": 4})
    assert run.failed and "one of the following is required" in run.msg
