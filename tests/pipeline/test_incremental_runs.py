"""--state: a run reads only the snapshot files new since the last one (or what the guard appended to the current
hour's), and its outputs equal a full run's, row for row, at every step of a generated week replayed hour by hour.

The week is a disk guard's history directory (snapshots-HOUR.jsonl.gz, the current hour's file plain and growing)
with rejected records, a broker silent for longer than the validity, a message repeated across an hour boundary, a
late hour, a broker's clock set back, a file rewritten and a new traffic file. The runs that cannot resume (a record
at or before its cluster's last decided instant, an input changed other than by new snapshots) say why and run in
full; the others read only what is new.
"""

import gzip
import json
import os
import shutil

import pytest

from headroom_pipeline import cli, generate, job

INTERVAL = 600.0  # seconds between a broker's snapshots: a week stays small
HOURS = 168
FIRST_RUN_HOURS = 140  # the full run the replay starts from reads these
LATE_HOUR = 120  # held back until a later step
SILENT = ("cluster-1", 2)  # silent for over an hour, far longer than the validity
SET_BACK = ("cluster-2", 1)  # its clock set back three hours in one file
OUTPUTS = ("volumes", "decisions", "forecast", "clients", "client_recommendations", "topics", "topic_thresholds")


@pytest.fixture(scope="module")
def week():
    """The generated week's snapshot messages by hour (as the guard names its files)."""
    by_hour = {}
    for message in generate.snapshots(clusters=2, brokers=2, hours=HOURS, interval=INTERVAL):
        by_hour.setdefault(message["SnapshotAt"][:13], []).append(message)
    return [by_hour[hour] for hour in sorted(by_hour)], sorted(by_hour)


class History:
    """The guard's history directory of the replay, and the files beside it."""

    def __init__(self, base, week):
        self.messages, self.hours = week
        self.directory = os.path.join(base, "history")
        os.makedirs(self.directory)
        self.traffic = os.path.join(base, "traffic")
        os.makedirs(self.traffic)
        paths = generate.write(os.path.join(base, "fleet"), brokers=2, hours=2)
        shutil.copy(paths["traffic.jsonl"], os.path.join(self.traffic, "traffic-1.jsonl"))
        self.quotas, self.plan = paths["quotas.json"], paths["topic-thresholds.json"]
        self.base = base

    def path(self, index, compressed=True):
        suffix = ".jsonl.gz" if compressed else ".jsonl"
        return os.path.join(self.directory, f"snapshots-{self.hours[index]}{suffix}")

    def write_hour(self, index, messages=None, extra_lines=(), compressed=True):
        lines = [json.dumps(message) for message in (self.messages[index] if messages is None else messages)]
        data = ("\n".join([*lines, *extra_lines]) + "\n").encode("utf-8")
        opener = gzip.open if compressed else open
        with opener(self.path(index, compressed), "wb") as handle:
            handle.write(data)

    def arguments(self, out, *extra):
        return [
            "run",
            "--snapshots",
            self.directory,
            "--traffic",
            self.traffic,
            "--quotas",
            self.quotas,
            "--topic-thresholds",
            self.plan,
            "--out",
            os.path.join(self.base, out),
            "--min-available-ratio",
            "0.1",
            "--no-report",
            "--quiet",
            *extra,
        ]

    def run(self, out, *extra):
        return job.run(cli.config_from_args(cli.parser().parse_args(self.arguments(out, *extra))))


def assert_outputs_equal(spark, history, incremental, full):
    for name in OUTPUTS:
        ours = spark.read.parquet(os.path.join(history.base, "incremental", name))
        theirs = spark.read.parquet(os.path.join(history.base, "full", name))
        assert ours.count() == theirs.count(), name
        assert ours.exceptAll(theirs).count() == 0 and theirs.exceptAll(ours).count() == 0, name
    for key in ("rows_read", "rows_used", "rows_rejected", "inputs", "stages"):
        assert incremental[key] == full[key] or _without_bounds(incremental[key]) == _without_bounds(full[key]), key


def _without_bounds(value):
    """The inputs' figures without their time bounds: the median an incremental run saw is that of its new records."""
    if isinstance(value, dict):
        return {key: _without_bounds(item) for key, item in value.items() if key != "time_bounds"}
    return value


def moved(messages, broker, seconds):
    import datetime  # pylint: disable=import-outside-toplevel

    changed = []
    for message in messages:
        if (message["ClusterId"], message["BrokerId"]) == broker:
            at = datetime.datetime.fromisoformat(message["SnapshotAt"].replace("Z", "+00:00"))
            at += datetime.timedelta(seconds=seconds)
            message = dict(message, SnapshotAt=at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z")
        changed.append(message)
    return changed


def replay(spark, history, steps, state):
    """Each step's change, then a run with the state, in the mode and for the reason told; an incremental one's outputs
    equal a full run's (a run that fell back to a full one is a full run: what every other test of the job checks)."""
    for what, change, mode, reason in steps:
        change()
        ours = history.run("incremental", "--state", state)
        assert ours["incremental"]["mode"] == mode and reason in ours["incremental"]["reason"], (
            what,
            ours["incremental"],
        )
        if mode == "incremental":
            assert "read traffic" not in ours["timings_seconds"], "the traffic analyses are carried over"
            assert_outputs_equal(spark, history, ours, history.run("full"))


def test_a_replay_hour_by_hour_gives_a_full_runs_outputs_at_every_step(spark, tmp_path, week):
    history = History(str(tmp_path), week)
    for index in range(FIRST_RUN_HOURS):
        if index != LATE_HOUR:
            history.write_hour(index, extra_lines=("{broken", '{"SnapshotAt": 5}') if index == 100 else ())
    messages = history.messages

    def silent_hour(index):
        return [message for message in messages[index] if (message["ClusterId"], message["BrokerId"]) != SILENT]

    half = len(messages[143]) // 2

    def begin_current_hour():
        history.write_hour(143, messages[143][:half], compressed=False)

    def append_to_current_hour():
        with open(history.path(143, compressed=False), "a", encoding="utf-8") as handle:
            handle.writelines(json.dumps(message) + "\n" for message in messages[143][half:])

    def compress_current_hour():
        history.write_hour(143)
        os.remove(history.path(143, compressed=False))

    steps = [
        ("the first run", lambda: None, "full", "no state"),
        (
            # The broker falls silent in the new hours: the next run resumes with it silent past the validity.
            "three new hours: rejected records, a broker falling silent, a message repeated across their boundary",
            lambda: [
                history.write_hour(
                    140, extra_lines=("[1, 2]", '{"SnapshotAt": "2026-11-25T20:10:00Z", "BrokerId": -4}')
                ),
                history.write_hour(141, silent_hour(141)),
                history.write_hour(142, [messages[141][-1], *silent_hour(142)]),
            ],
            "incremental",
            "3 new",
        ),
        ("the broker back, in the guard's current hour", begin_current_hour, "incremental", "1 new"),
        ("the current hour appended to", append_to_current_hour, "incremental", "1 changed"),
        ("a late hour", lambda: history.write_hour(LATE_HOUR), "full", "at or before the last decided instant"),
        ("the current hour compressed", compress_current_hour, "incremental", "1 new, 1 gone"),
        (
            "a broker's clock set back",
            lambda: history.write_hour(144, moved(messages[144], SET_BACK, -3 * 3600)),
            "full",
            "at or before the last decided instant",
        ),
        ("the next hour", lambda: history.write_hour(145), "incremental", "1 new"),
    ]
    replay(spark, history, steps, str(tmp_path / "state"))


def test_the_whole_week_hour_by_hour_gives_a_full_runs_outputs_every_hour(spark, tmp_path, week):
    history = History(str(tmp_path), week)
    history.write_hour(0)
    steps = [("the first hour", lambda: None, "full", "no state")] + [
        (f"hour {index}", lambda index=index: history.write_hour(index), "incremental", "1 new")
        for index in range(1, HOURS)
    ]
    replay(spark, history, steps, str(tmp_path / "state"))
