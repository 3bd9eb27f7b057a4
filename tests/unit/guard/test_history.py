"""The guard's history directory as files: hour files appended, compressed when the hour is over (and only then),
removed after the retention, and a line broken by a guard killed mid-write costs that line only."""

import datetime
import gzip
import json
import os

from headroom_guard.history import HistoryWriter

# 2026-11-28T04:30:00Z
AT = datetime.datetime(2026, 11, 28, 4, 30, tzinfo=datetime.timezone.utc).timestamp()
DAY = 86400.0


def lines_of(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return handle.read().splitlines()


def test_records_go_to_the_file_of_their_hour_and_an_hour_over_is_compressed(tmp_path):
    writer = HistoryWriter(str(tmp_path), retention=DAY)
    writer.append("snapshots", ['{"n":1}', '{"n":2}'], AT)
    writer.append("decisions", ['{"d":1}'], AT)
    assert lines_of(str(tmp_path / "snapshots-2026-11-28T04.jsonl")) == ['{"n":1}', '{"n":2}']
    writer.append("snapshots", ['{"n":3}'], AT + 1200)
    assert sorted(os.listdir(tmp_path)) == ["decisions-2026-11-28T04.jsonl", "snapshots-2026-11-28T04.jsonl"]

    writer.append("snapshots", ['{"n":4}'], AT + 1800)  # 05:00: the hour of 04 is over
    assert sorted(os.listdir(tmp_path)) == [
        "decisions-2026-11-28T04.jsonl.gz",
        "snapshots-2026-11-28T04.jsonl.gz",
        "snapshots-2026-11-28T05.jsonl",
    ]
    assert lines_of(str(tmp_path / "snapshots-2026-11-28T04.jsonl.gz")) == ['{"n":1}', '{"n":2}', '{"n":3}']
    assert lines_of(str(tmp_path / "decisions-2026-11-28T04.jsonl.gz")) == ['{"d":1}']
    writer.close()


def test_files_past_the_retention_are_removed_and_other_files_left_alone(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    writer = HistoryWriter(str(tmp_path), retention=DAY)
    writer.append("snapshots", ['{"n":1}'], AT)
    writer.append("snapshots", ['{"n":2}'], AT + 1800 + DAY)  # a day after 04's end
    assert sorted(os.listdir(tmp_path)) == ["notes.txt", "snapshots-2026-11-29T05.jsonl"]
    writer.close()


def test_a_line_broken_by_a_kill_costs_that_line_only(tmp_path):
    path = tmp_path / "snapshots-2026-11-28T04.jsonl"
    path.write_text('{"n":1}\n{"n":2,"Vol', encoding="utf-8")  # the guard was killed while writing record 2
    writer = HistoryWriter(str(tmp_path), retention=DAY)
    writer.append("snapshots", ['{"n":3}'], AT)
    writer.close()
    parsed = []
    for line in lines_of(str(path)):
        try:
            parsed.append(json.loads(line))
        except ValueError:
            parsed.append(None)
    assert parsed == [{"n": 1}, None, {"n": 3}]


def test_a_guard_started_after_an_hour_it_left_open_compresses_that_hour(tmp_path):
    (tmp_path / "decisions-2026-11-28T02.jsonl").write_text('{"d":1}\n', encoding="utf-8")
    writer = HistoryWriter(str(tmp_path), retention=DAY)
    assert writer.tidy(AT) == ["compressed decisions-2026-11-28T02.jsonl"]
    assert os.listdir(tmp_path) == ["decisions-2026-11-28T02.jsonl.gz"]


def test_records_of_an_hour_already_compressed_are_added_to_it(tmp_path):
    """The clock set back into an hour that is over: its new records join the compressed file, none is lost."""
    writer = HistoryWriter(str(tmp_path), retention=DAY)
    writer.append("decisions", ['{"d":1}'], AT)
    writer.append("decisions", ['{"d":2}'], AT + 1800)
    writer.append("decisions", ['{"d":3}'], AT)  # back in 04
    writer.append("decisions", ['{"d":4}'], AT + 1800)
    writer.close()
    assert lines_of(str(tmp_path / "decisions-2026-11-28T04.jsonl.gz")) == ['{"d":1}', '{"d":3}']
    assert lines_of(str(tmp_path / "decisions-2026-11-28T05.jsonl")) == ['{"d":2}', '{"d":4}']
