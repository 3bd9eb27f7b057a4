"""The disk guard's memory on disk: what is written is read back, and a file that is not a memory is no memory."""

import os

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import guard_memory
from ansible_collections.headroom.kafka.plugins.module_utils.disk_guard import GuardMemory

VOLUME = {"broker_id": 2, "log_dir": "/data/0", "total_bytes": 1000, "usable_bytes": 50}


def test_what_is_saved_is_loaded_and_no_temporary_file_is_left(tmp_path):
    path = tmp_path / "guard.json"
    memory = GuardMemory(1700000000.5, {2: {"observed_at": 1700000000.5, "volumes": [VOLUME]}})
    guard_memory.save_memory(str(path), memory)
    loaded = guard_memory.load_memory(str(path))
    assert (loaded.observed_at, loaded.brokers) == (
        1700000000.5,
        {2: {"observed_at": 1700000000.5, "volumes": [VOLUME]}},
    )
    assert os.listdir(tmp_path) == ["guard.json"]


@pytest.mark.parametrize("content", ["", "{", "[]", '{"observed_at": "soon", "brokers": {}}', "\xff"])
def test_a_file_that_is_not_a_memory_is_no_memory(tmp_path, content):
    path = tmp_path / "guard.json"
    path.write_text(content, encoding="latin-1")
    loaded = guard_memory.load_memory(str(path))
    assert (loaded.observed_at, loaded.brokers) == (None, {})


@pytest.mark.parametrize("path", [None, "", "missing.json"])
def test_no_file_is_no_memory(tmp_path, path):
    loaded = guard_memory.load_memory(str(tmp_path / path) if path else path)
    assert (loaded.observed_at, loaded.brokers) == (None, {})


def test_a_failed_write_keeps_the_previous_memory(tmp_path):
    path = tmp_path / "guard.json"
    guard_memory.save_memory(str(path), GuardMemory(1.0, {}))
    with pytest.raises(TypeError):
        guard_memory.save_memory(str(path), GuardMemory(2.0, {3: {"observed_at": 2.0, "volumes": [object()]}}))
    assert guard_memory.load_memory(str(path)).observed_at == 1.0
    assert os.listdir(tmp_path) == ["guard.json"]


def test_what_the_guard_applied_and_a_factor_another_writer_holds_are_kept_and_older_files_load_without_them(
    tmp_path,
):
    path = tmp_path / "guard.json"
    memory = GuardMemory(5.0, {}, applied=0.5, foreign={"factor": 0.0, "since": 4.0})
    guard_memory.save_memory(str(path), memory)
    loaded = guard_memory.load_memory(str(path))
    assert (loaded.applied, loaded.foreign) == (0.5, {"factor": 0.0, "since": 4.0})
    path.write_text('{"observed_at": 5.0, "brokers": {}}', encoding="utf-8")
    older = guard_memory.load_memory(str(path))
    assert (older.observed_at, older.applied, older.foreign) == (5.0, None, None)


@pytest.mark.parametrize(
    "path, said",
    [
        ("state\x00.json", "state_file: 'state\\x00.json' contains a null byte"),
        ("ü" * 200, "is 400 bytes long; a file name may have at most 255"),
        (
            "/no/such/directory/state.json",
            "state_file: the directory of '/no/such/directory/state.json' does not exist",
        ),
    ],
)
def test_a_state_file_that_cannot_be_written_is_named_before_anything_is_asked(path, said):
    assert said in guard_memory.path_problem("state_file", path)


def test_a_state_file_in_a_directory_that_exists_is_fine(tmp_path):
    assert guard_memory.path_problem("state_file", str(tmp_path / "state.json")) is None
