"""incremental: when the stamps of every record let a run resume (no median of them can reject a record), and the
rest of a guard's file read after what an earlier run read of it."""

import gzip
import hashlib
import os

import pytest

from headroom_pipeline import incremental, sources

DAY_US = 86_400 * 1_000_000
YEAR = 366 * 86_400.0


def test_the_stamps_of_every_run_are_gathered_and_a_median_rejection_leaves_none():
    assert incremental.stamps_after(None, {"earliest": 5, "latest": 9, "median": 7}) == {"earliest": 5, "latest": 9}
    assert incremental.stamps_after({"earliest": 3, "latest": 8}, {"earliest": 5, "latest": 9}) == {
        "earliest": 3,
        "latest": 9,
    }
    assert incremental.stamps_after({"earliest": 3, "latest": 8}, {"earliest": None, "latest": None}) == {
        "earliest": 3,
        "latest": 8,
    }
    assert incremental.stamps_after({"earliest": 3, "latest": 8}, {"checked": 4, "rejected": 1}) is None


@pytest.mark.parametrize(
    "stamps, needs_median, problem",
    [
        ({"earliest": 0, "latest": 366 * DAY_US}, True, None),
        ({"earliest": 0, "latest": 366 * DAY_US + 1}, True, "span more than --plausible-window"),
        ({"earliest": 0, "latest": 900 * DAY_US}, False, None),  # --since and --until: no median
        ({"earliest": None, "latest": None}, True, None),
        (None, True, "rejected records by the median"),
    ],
)
def test_a_run_resumes_only_while_no_median_of_the_stamps_can_reject_one(stamps, needs_median, problem):
    found = incremental.stamps_problem(stamps, YEAR, needs_median)
    assert found == problem if problem is None else problem in found


def history_file(directory, hour, data, compressed=False):
    path = os.path.join(directory, f"snapshots-2026-12-01T{hour}.jsonl" + (".gz" if compressed else ""))
    with (gzip.open if compressed else open)(path, "wb") as handle:
        handle.write(data)
    return path


def test_the_rest_of_a_grown_or_compressed_file_is_read_after_what_the_last_run_read(tmp_path):
    directory = str(tmp_path)
    first = b'{"a": 1}\n{"a": 2}\n'
    path = history_file(directory, "10", first)
    consumed = {}
    resolved = sources.resolve_input(directory, "--snapshots", "snapshots", consumed=consumed)
    assert [line for unused, line in resolved.held] == ['{"a": 1}', '{"a": 2}']
    assert consumed == {path: (len(first), hashlib.sha256(first).hexdigest())}

    history_file(directory, "10", first + b'{"a": 3}\n')
    tail = {path: sources.Tail(*consumed[path])}
    again = {}
    resolved = sources.resolve_input(directory, "--snapshots", "snapshots", only=tail, consumed=again)
    assert [line for unused, line in resolved.held] == ['{"a": 3}'] and resolved.files == []
    assert again[path][0] == len(first) + 9

    # Compressed since the run was planned: the .jsonl.gz alone is read, after the same bytes.
    os.remove(path)
    history_file(directory, "10", first + b'{"a": 3}\n{"a": 4}\n', compressed=True)
    resolved = sources.resolve_input(directory, "--snapshots", "snapshots", only=tail)
    assert [line for unused, line in resolved.held] == ['{"a": 3}', '{"a": 4}']
    assert {source for source, unused in resolved.held} == {sources.shown_path(path + ".gz")}


@pytest.mark.parametrize(
    "now, complaint",
    [
        (b'{"a": 9}\n{"a": 2}\n{"a": 3}\n', "does not begin with what the last run read"),
        (b'{"a": 1}\n', "does not begin with what the last run read"),  # shorter than what was read
    ],
)
def test_a_file_that_no_longer_begins_with_what_was_read_cannot_be_read_in_part(tmp_path, now, complaint):
    first = b'{"a": 1}\n{"a": 2}\n'
    path = history_file(str(tmp_path), "10", now)
    tail = {path: sources.Tail(len(first), hashlib.sha256(first).hexdigest())}
    with pytest.raises(sources.PrefixChanged, match=complaint):
        sources.resolve_input(str(tmp_path), "--snapshots", "snapshots", only=tail)


def test_a_read_that_ended_inside_a_line_cannot_be_resumed(tmp_path):
    first = b'{"a": 1}\n{"a": '  # a guard killed mid-write: the last run rejected the half line
    path = history_file(str(tmp_path), "10", first + b"2}\n")
    tail = {path: sources.Tail(len(first), hashlib.sha256(first).hexdigest())}
    with pytest.raises(sources.PrefixChanged, match="up to the middle of a line"):
        sources.resolve_input(str(tmp_path), "--snapshots", "snapshots", only=tail)
