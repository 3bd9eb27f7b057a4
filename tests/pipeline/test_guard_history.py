"""The disk guard's history directory as the pipeline's input: snapshots read from its plain and compressed hour files
(also while the guard appends), its decision records checked and compared with the replay of the rules, and a line
broken by a guard killed mid-write costing that one record.

The histories are written by the guard's own code (disk_guard.decide, guard_history's records, HistoryWriter) for a
simulated cluster, so that they are what a guard writes; only Kafka is left out.
"""

import datetime
import glob
import gzip
import hashlib
import json
import os
import shutil

import pytest
from pyspark.sql import Observation

from ansible_collections.headroom.kafka.plugins.module_utils import disk_guard, guard_history, snapshots
from headroom_guard.history import HistoryWriter
from headroom_pipeline import guard_comparison, job, sources
from headroom_pipeline.cli import config_from_args, parser
from headroom_pipeline.config import ConfigError, PipelineConfig

UTC = datetime.timezone.utc
# The guard decides every minute, 17.25 s past it: each decision falls in the check instant at the next full minute.
START = datetime.datetime(2026, 11, 28, 4, 20, 17, 250000, tzinfo=UTC)
CAPACITY = 1_000_000
BROKERS = (1, 2, 3)
LOG_DIRS = ("/data/a", "/data/b")
CLUSTER = "cluster-x"
DAY = 86400.0


def usable_bytes(broker_id, log_dir, minute):
    """Broker 1's /data/a fills from 30 % free by 0.5 % a minute until retention frees it at minute 65; the rest
    stay half free."""
    if (broker_id, log_dir) == (1, "/data/a"):
        return 300_000 - 5_000 * minute if minute < 65 else 300_000
    return 500_000


def volumes_at(minute, answering):
    return [
        {
            "broker_id": broker,
            "log_dir": log_dir,
            "total_bytes": CAPACITY,
            "usable_bytes": usable_bytes(broker, log_dir, minute),
        }
        for broker in answering
        for log_dir in LOG_DIRS
    ]


def simulate_guard(directory, policy, minutes, silent=()):
    """Run the guard's decisions on the simulated cluster once a minute for ``minutes`` minutes and record them as the
    guard does; broker 3 does not answer in the minutes ``silent``. Returns the decision records written."""
    writer = HistoryWriter(str(directory), retention=DAY)
    memory, applied, records = disk_guard.GuardMemory(), None, []
    for minute in range(minutes):
        now = START + datetime.timedelta(minutes=minute)
        answering = [broker for broker in BROKERS if not (broker == 3 and minute in silent)]
        missing = [broker for broker in BROKERS if broker not in answering]
        view = {"volumes": volumes_at(minute, answering), "complete": not missing, "missing_brokers": missing}
        decision, memory = disk_guard.decide(policy, view, now.timestamp(), memory, applied)
        changes = []
        if applied is None or decision["throttle_factor"] != applied:
            changes = [
                {
                    "entity": {"user": "<default>"},
                    "before": None if applied is None else {"producer_byte_rate": 1_000_000 * applied},
                    "after": {"producer_byte_rate": 1_000_000 * decision["throttle_factor"]},
                }
            ]
        applied = decision["throttle_factor"]
        result = dict(
            decision,
            volumes=view["volumes"],
            missing_brokers=missing,
            cluster_id=CLUSTER,
            complete=view["complete"],
            decided_at=now.timestamp(),
            changes=changes,
        )
        result.setdefault("missing_data_applied", False)
        messages = guard_history.snapshot_messages(result, policy)
        record = guard_history.decision_record(result, "enforce")
        writer.append("snapshots", [snapshots.encode_message(message) for message in messages], result["decided_at"])
        writer.append("decisions", [snapshots.encode_message(record)], result["decided_at"])
        records.append(record)
    writer.close()
    return records


STRIMZI = disk_guard.Policy("strimzi", min_available_ratio=0.1)
GRADED = disk_guard.Policy(
    "graded",
    soft_limit={"type": "min_free_percentage", "level": 20.0},
    hard_limit={"type": "min_free_percentage", "level": 5.0},
)


def lines_of(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return handle.read().splitlines()


def rewrite(path, lines):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


def read_back(spark, out, name):
    return spark.read.parquet(os.path.join(out, name))


# -- the files ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def strimzi_history(tmp_path_factory):
    """70 minutes of a strimzi guard from 04:20: the hour of 04 compressed, 05 plain; broker 3 silent for three
    minutes while the volume is past the limit; the guard killed while writing the last snapshot line. The directory's
    name has a ':' and a glob character: Spark reads its files through links, which must keep the .gz suffix."""
    directory = tmp_path_factory.mktemp("history") / "guard:[1]"
    records = simulate_guard(directory, STRIMZI, 70, silent=(44, 45, 46))
    with open(directory / "snapshots-2026-11-28T05.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"SnapshotAt":"2026-11-28T05:30:17.250Z","BrokerId":1,"ClusterId":"cluster-x","Vol')
    return directory, records


def test_a_history_directory_reads_its_own_kind_of_files_and_holds_the_growing_ones(strimzi_history):
    directory, unused_records = strimzi_history
    assert sorted(os.listdir(directory)) == [
        "decisions-2026-11-28T04.jsonl.gz",
        "decisions-2026-11-28T05.jsonl",
        "snapshots-2026-11-28T04.jsonl.gz",
        "snapshots-2026-11-28T05.jsonl",
    ]
    resolved = sources.resolve_input(str(directory), "--snapshots", "snapshots")
    assert resolved.format == "json"
    assert resolved.files == [str(directory / "snapshots-2026-11-28T04.jsonl.gz")], "the hour that is over"
    plain = lines_of(directory / "snapshots-2026-11-28T05.jsonl")
    assert [line for unused_source, line in resolved.held] == plain, "the current hour, read once, broken line too"
    assert {source for source, unused_line in resolved.held} == {str(directory / "snapshots-2026-11-28T05.jsonl")}
    decisions = sources.resolve_input(str(directory), "--guard-decisions", "decisions")
    assert decisions.files == [str(directory / "decisions-2026-11-28T04.jsonl.gz")]
    # A glob leaves the other kind out too; a file named on its own is read as it is.
    assert sources.resolve_files(os.path.join(glob.escape(str(directory)), "*"), "--snapshots", "snapshots")[1] == [
        str(directory / "snapshots-2026-11-28T04.jsonl.gz"),
        str(directory / "snapshots-2026-11-28T05.jsonl"),
    ]
    named = str(directory / "decisions-2026-11-28T05.jsonl")
    assert sources.resolve_files(named, "--snapshots", "snapshots")[1] == [named]
    assert sources.has_history_files(str(directory), "decisions")


def test_a_file_compressed_while_it_is_listed_is_read_once(tmp_path):
    plain = tmp_path / "snapshots-2026-11-28T04.jsonl"
    plain.write_text('{"n":1}\n{"n":2}\n', encoding="utf-8")
    with gzip.open(str(plain) + ".gz", "wb") as handle:
        handle.write(b'{"n":0}\n{"n":1}\n{"n":2}\n')  # an hour the clock went back into: its earlier records first
    resolved = sources.resolve_input(str(tmp_path), "--snapshots", "snapshots")
    assert resolved.files == [str(plain) + ".gz"] and resolved.held == [], "the .gz that replaces it holds it"

    plain.write_text('{"n":3}\n', encoding="utf-8")  # appended to again after that hour's .gz was written
    resolved = sources.resolve_input(str(tmp_path), "--snapshots", "snapshots")
    assert resolved.files == [str(plain) + ".gz"] and [line for unused, line in resolved.held] == ['{"n":3}']


def test_a_file_compressed_after_it_was_listed_is_read_from_its_gz(tmp_path, monkeypatch):
    plain = tmp_path / "decisions-2026-11-28T04.jsonl"
    plain.write_text('{"d":1}\n', encoding="utf-8")
    listed = sources.resolve_files(str(tmp_path), "--guard-decisions", "decisions")
    with gzip.open(str(plain) + ".gz", "wb") as handle:
        handle.write(b'{"d":1}\n')
    plain.unlink()
    monkeypatch.setattr(sources, "resolve_files", lambda *unused_args: listed)
    consumed = {}
    resolved = sources.resolve_input(str(tmp_path), "--guard-decisions", "decisions", consumed=consumed)
    # Held, as the plain file would have been: the next incremental run knows what was read of the hour.
    assert resolved.files == [] and resolved.held == [(sources.shown_path(str(plain) + ".gz"), '{"d":1}')]
    assert consumed == {str(plain): (8, hashlib.sha256(b'{"d":1}\n').hexdigest())}


def test_a_link_to_a_compressed_file_keeps_its_suffix(tmp_path):
    """Spark decompresses by the suffix: a .gz read through a link (a path Hadoop cannot name) stays a .gz."""
    odd = tmp_path / "guard:[1]"
    odd.mkdir()
    path = odd / "snapshots-2026-11-28T04.jsonl.gz"
    path.write_bytes(gzip.compress(b"{}\n"))
    unused_locations, links = sources.spark_locations([str(path)])
    (link,) = list(links)
    assert link.endswith(".jsonl.gz") and links[link] == str(path)


def test_a_history_directory_without_files_of_the_kind_is_refused(tmp_path):
    (tmp_path / "decisions-2026-11-28T04.jsonl").write_text("{}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="--snapshots: the guard history directory .* holds no snapshots-"):
        sources.resolve_files(str(tmp_path), "--snapshots", "snapshots")


def test_the_command_line_takes_guard_decisions():
    args = parser().parse_args(["run", "--snapshots", "h", "--out", "o", "--guard-decisions", "d/decisions-*"])
    assert config_from_args(args).guard_decisions == "d/decisions-*"
    assert config_from_args(parser().parse_args(["run", "--snapshots", "h", "--out", "o"])).guard_decisions is None


# -- the comparison on its own -------------------------------------------------------------------------------------
GUARD_ROWS = (
    "cluster string, decided_at timestamp, policy string, throttle_factor double, state string, "
    "decision_reason string, mode string, observed boolean, complete boolean, fallback_applied boolean, "
    "missing_data_applied boolean, missing_brokers array<bigint>, entities_changed int, quota_changes string, "
    "source string"
)
TIMELINE = (
    "cluster string, at timestamp, policy string, throttle_factor double, state string, observed boolean, "
    "fallback_applied boolean"
)


def instant(minute, second=0.0):
    return datetime.datetime(2026, 11, 28, 4, 0, tzinfo=UTC) + datetime.timedelta(minutes=minute, seconds=second)


def test_each_guard_decision_meets_the_replay_at_its_check_instant(spark):
    def guard(minute, second, policy, factor, state, cluster="c"):
        decided = instant(minute, second)
        return (
            cluster,
            decided,
            policy,
            factor,
            state,
            "observed",
            "enforce",
            True,
            True,
            False,
            False,
            [],
            0,
            "[]",
            "f",
        )

    guard_rows = [
        guard(0, 0.0, "graded", 1.0, "OPEN"),  # on the instant itself: that instant
        guard(0, 10.0, "graded", 0.5 + 1e-10, "THROTTLE"),  # the next instant; within the tolerance
        guard(1, 20.0, "graded", 0.0, "PAUSE"),  # superseded by the one at 1:40
        guard(1, 40.0, "graded", 0.25, "THROTTLE"),  # differs in factor
        guard(2, 30.0, "graded", 0.5, "PAUSE"),  # a state that is not its factor's: only the state differs
        guard(3, 30.0, "graded", 1.0, "OPEN"),  # the timeline has no instant 4:00
        guard(0, 30.0, "strimzi", 1.0, "OPEN"),  # strimzi not replayed
        guard(0, 30.0, "graded", 1.0, "OPEN", cluster="other"),  # a cluster the replay does not know
    ]
    timeline_rows = [
        ("c", instant(0), "graded", 1.0, "OPEN", True, False),
        ("c", instant(1), "graded", 0.5, "THROTTLE", True, False),
        ("c", instant(2), "graded", 0.5, "THROTTLE", True, False),
        ("c", instant(3), "graded", 0.5, "THROTTLE", True, False),
    ]
    config = PipelineConfig(snapshots="unused", out="unused", check_interval=60.0)
    observation = Observation("comparison")
    result = guard_comparison.guard_comparison(
        spark.createDataFrame(guard_rows, GUARD_ROWS),
        spark.createDataFrame(timeline_rows, TIMELINE),
        config,
        observation,
    )
    rows = sorted(result.collect(), key=lambda row: (row.cluster, row.policy, row.decided_at))
    assert result.columns == guard_comparison.COMPARISON_COLUMNS
    got = [(row.cluster, row.policy, row.at.minute, row.outcome, row.differs_in) for row in rows]
    assert got == [
        ("c", "graded", 0, "agrees", []),
        ("c", "graded", 1, "agrees", []),
        ("c", "graded", 2, "superseded", None),
        ("c", "graded", 2, "differs", ["throttle_factor"]),
        ("c", "graded", 3, "differs", ["state"]),
        ("c", "graded", 4, "no replay at this instant", None),
        ("c", "strimzi", 1, "policy not replayed", None),
        ("other", "graded", 1, "no replay at this instant", None),
    ]
    assert dict(observation.get) == {
        "decisions": 8,
        "compared": 4,
        "agreeing": 2,
        "differences": 2,
        "superseded": 1,
        "not_replayed": 3,
    }


# -- the job -------------------------------------------------------------------------------------------------------
def test_a_guard_history_is_read_whole_and_the_guard_agrees_with_the_replay(spark, strimzi_history, tmp_path):
    directory, records = strimzi_history
    out = str(tmp_path / "out")
    summary = job.run(
        PipelineConfig(
            snapshots=str(directory),
            out=out,
            cluster=CLUSTER,
            min_available_ratio=0.1,
            check_interval=60.0,
            progress=False,
        )
    )
    snapshot_lines = sum(
        len(lines_of(directory / name)) for name in os.listdir(directory) if name.startswith("snapshots")
    )
    assert summary["inputs"]["snapshots"]["read"] == snapshot_lines == 3 * (70 - 3) + 1
    assert summary["inputs"]["snapshots"]["rejected"] == 1, "the line the killed guard broke, nothing more"
    assert summary["inputs"]["guard_decisions"] == dict(
        summary["inputs"]["guard_decisions"], read=70, used=70, rejected=0
    )
    assert summary["settings"]["guard_decisions"] == str(directory), "the decisions beside the snapshots"
    (rejected,) = spark.read.json(os.path.join(out, "rejected")).collect()
    assert rejected.input == "snapshots" and rejected.source == str(directory / "snapshots-2026-11-28T05.jsonl")
    figures = summary["stages"]["guard_comparison"]
    assert figures == {
        "decisions": 70,
        "compared": 70,
        "agreeing": 70,
        "differences": 0,
        "superseded": 0,
        "not_replayed": 0,
    }
    comparison = read_back(spark, out, "guard_comparison")
    states = {row.guard_state for row in comparison.select("guard_state").distinct().collect()}
    assert states == {"OPEN", "PAUSE"}, "the history holds both, the silent minutes' kept factor among them"
    kept = comparison.where("not complete").collect()
    assert len(kept) == 3 and {row.guard_state for row in kept} == {"PAUSE"}
    assert sum(row.entities_changed for row in comparison.collect()) == sum(len(r["QuotaChanges"]) for r in records)
    with open(summary["report"], encoding="utf-8") as handle:
        page = handle.read()
    assert "What the guard did beside the replay" in page
    assert "No difference: at every compared check instant" in page
    assert "agree with the replay of the rules at all 70 compared check instants" in page


def test_every_difference_between_the_guard_and_the_replay_is_listed(spark, tmp_path):
    """A graded guard's history with one decision altered, one decided twice in an instant, one of a policy the run
    does not replay and one broken line: that difference, listed, and nothing else.

    Broker 3 is silent for a minute: the guard pauses at once (missing data), and so does the replay when a snapshot
    is fresh for less than the check interval, as the guard's observation is (--max-age just under it)."""
    directory = tmp_path / "history"
    records = simulate_guard(directory, GRADED, 50, silent=(20,))
    assert records[20]["MissingDataApplied"] and records[20]["State"] == "PAUSE"
    hour = directory / "decisions-2026-11-28T04.jsonl.gz"
    lines = lines_of(hour)
    altered = json.loads(lines[30])  # 04:50:17.250, throttled by the filling volume
    assert altered["State"] == "THROTTLE"
    altered.update(ThrottleFactor=1.0, State="OPEN", Reason="altered")
    lines[30] = json.dumps(altered)
    earlier = dict(json.loads(lines[31]), DecidedAt="2026-11-28T04:51:05.000Z", ThrottleFactor=0.0, State="PAUSE")
    strimzi = dict(json.loads(lines[32]), Policy="strimzi")
    rewrite(hour, lines + [json.dumps(earlier), json.dumps(strimzi)])
    with open(directory / "decisions-2026-11-28T05.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"DecidedAt":"2026-11-28T05:10:17.250Z","Policy":"gra')
    out = str(tmp_path / "out")
    summary = job.run(
        PipelineConfig(snapshots=str(directory), out=out, cluster=CLUSTER, max_age=59.999, progress=False)
    )
    assert summary["inputs"]["guard_decisions"]["read"] == len(records) + 3
    assert summary["inputs"]["guard_decisions"]["rejected"] == 1
    assert summary["inputs"]["snapshots"]["rejected"] == 0
    assert summary["stages"]["guard_comparison"] == {
        "decisions": len(records) + 2,
        "compared": len(records),
        "agreeing": len(records) - 1,
        "differences": 1,
        "superseded": 1,
        "not_replayed": 1,
    }
    (difference,) = read_back(spark, out, "guard_comparison").where("outcome = 'differs'").collect()
    assert (difference.cluster, difference.policy, difference.guard_state, difference.guard_reason) == (
        CLUSTER,
        "graded",
        "OPEN",
        "altered",
    )
    assert difference.replay_state == "THROTTLE" and 0.0 < difference.replay_throttle_factor < 1.0
    assert difference.at.isoformat().startswith("2026-11-28T04:51:00")
    assert difference.differs_in == ["throttle_factor", "state"]
    with open(summary["report"], encoding="utf-8") as handle:
        page = handle.read()
    assert "differ from the replay of the rules at <strong>1</strong> of" in page
    section = page[page.index('<h2 id="guard">') :]
    table = section[: section.index("<h2>")]
    assert "2026-11-28 04:50:17.250 UTC" in table and "altered" in table
    assert table.count("<tr>") == 2, "the header and the one difference"


def test_guard_decisions_given_on_their_own_and_an_empty_comparison(spark, strimzi_history, tmp_path):
    """--guard-decisions names the records; without a plugin limit the strimzi guard's decisions are not replayed."""
    directory, unused_records = strimzi_history
    snapshots_only = tmp_path / "snapshots"
    snapshots_only.mkdir()
    for name in os.listdir(directory):
        if name.startswith("snapshots"):
            shutil.copy(directory / name, snapshots_only / name)
    out = str(tmp_path / "out")
    summary = job.run(
        PipelineConfig(
            snapshots=str(snapshots_only),
            guard_decisions=os.path.join(glob.escape(str(directory)), "decisions-*"),
            out=out,
            cluster=CLUSTER,
            report=False,
            progress=False,
        )
    )
    assert summary["stages"]["guard_comparison"]["not_replayed"] == 70
    assert summary["stages"]["guard_comparison"]["compared"] == 0
    # A later run without guard decisions removes the comparison this one wrote.
    job.run(PipelineConfig(snapshots=str(snapshots_only), out=out, report=False, progress=False))
    assert not os.path.exists(os.path.join(out, "guard_comparison"))


def test_a_live_guard_history_is_read_hour_by_hour_and_compares_as_a_full_run_does(spark, tmp_path):
    """The guard's history as an hourly job finds it: the next hour's files appear, the current hour's snapshot file
    grows and is then compressed. Each run with a state reads only that, and its outputs (the guard comparison among
    them) are a full run's."""
    written = tmp_path / "written"
    simulate_guard(written, GRADED, 130, silent=(70, 71, 72))  # 04:20 to 06:30, broker 3 silent across 05:30
    live = tmp_path / "live"
    live.mkdir()
    current = "snapshots-2026-11-28T06.jsonl"
    lines = lines_of(written / current)

    def run(out, state=None, report=False):
        return job.run(
            PipelineConfig(
                snapshots=str(live),
                out=str(tmp_path / out),
                cluster=CLUSTER,
                check_interval=60.0,
                report=report,
                progress=False,
                state=state,
            )
        )

    def add(*names):
        for name in names:
            shutil.copy(written / name, live / name)

    def begin_current_hour():
        add("decisions-2026-11-28T06.jsonl")
        rewrite(live / current, lines[: len(lines) // 2])

    def append_to_current_hour():
        with open(live / current, "a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines[len(lines) // 2 :]))

    def compress_current_hour():
        rewrite(live / (current + ".gz"), lines)
        os.remove(live / current)

    steps = [
        (lambda: add("snapshots-2026-11-28T04.jsonl.gz", "decisions-2026-11-28T04.jsonl.gz"), "full"),
        (lambda: add("snapshots-2026-11-28T05.jsonl.gz", "decisions-2026-11-28T05.jsonl.gz"), "incremental"),
        (begin_current_hour, "incremental"),
        (append_to_current_hour, "incremental"),
        (compress_current_hour, "incremental"),
    ]
    for change, mode in steps:
        change()
        ours = run("incremental", str(tmp_path / "state"), report=True)  # the report of an incremental run
        theirs = run("full")
        assert ours["incremental"]["mode"] == mode, ours["incremental"]
        for name in ("volumes", "decisions", "guard_comparison", "forecast"):
            mine, full = read_back(spark, ours["out"], name), read_back(spark, theirs["out"], name)
            assert mine.count() == full.count() and mine.exceptAll(full).count() == 0, name
        assert ours["stages"] == theirs["stages"]
        for name in ("snapshots", "guard_decisions"):
            assert {key: ours["inputs"][name][key] for key in ("read", "used", "rejected")} == {
                key: theirs["inputs"][name][key] for key in ("read", "used", "rejected")
            }
    with open(ours["report"], encoding="utf-8") as handle:
        assert "What the guard did beside the replay" in handle.read(), "the report of an incremental run"
