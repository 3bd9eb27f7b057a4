"""run_state: whether a run with --state has anything to do, and the state directory's file and lock."""

import json
import os

import pytest

from headroom_pipeline import __version__, publication, run_state
from headroom_pipeline.config import ConfigError

SETTINGS = {"snapshots": "/h", "out": "/o", "check_interval": 60.0, "master": "local[2]", "state": "/s"}


def fingerprint(**changes):
    return run_state.fingerprint(dict(SETTINGS, **changes), {})


MANIFEST = {
    "--snapshots": [["/h/snapshots-2026-12-01T10.jsonl.gz", 100, 1], ["/h/snapshots-2026-12-01T11.jsonl", 7, 2]]
}
OUTPUTS = [["/o/summary.json", 900, 5, 5, 11], ["/o/decisions/part-0.parquet", 4000, 5, 5, 12]]
STATE = run_state.record(fingerprint(), MANIFEST, OUTPUTS)


@pytest.mark.parametrize(
    "previous, current, manifest, summary, mode, reason",
    [
        (STATE, fingerprint(), MANIFEST, OUTPUTS, "unchanged", "no input file is new or changed since the last run"),
        (None, fingerprint(), MANIFEST, OUTPUTS, "full", "no state from an earlier run"),
        (dict(STATE, format=0), fingerprint(), MANIFEST, OUTPUTS, "full", "the state is of another format (0, "),
        (STATE, fingerprint(check_interval=30.0), MANIFEST, OUTPUTS, "full", "--check-interval changed"),
        # How the job runs is not what it writes: another master or state directory reads the same state.
        (STATE, fingerprint(master="spark://m:7077", state="/t"), MANIFEST, OUTPUTS, "unchanged", "no input file"),
        (
            STATE,
            fingerprint(),
            {"--snapshots": [MANIFEST["--snapshots"][0], ["/h/snapshots-2026-12-01T11.jsonl", 9, 3]]},
            OUTPUTS,
            "full",
            "input files since the last run: 1 changed",
        ),
        (
            STATE,
            fingerprint(),
            {"--snapshots": [*MANIFEST["--snapshots"], ["/h/snapshots-2026-12-01T12.jsonl", 1, 4]], "--traffic": []},
            OUTPUTS,
            "full",
            "input files since the last run: 1 new",
        ),
        (STATE, fingerprint(), {"--snapshots": MANIFEST["--snapshots"][:1]}, OUTPUTS, "full", ": 1 gone"),
        (STATE, fingerprint(), MANIFEST, None, "full", "summary.json of the last run is missing from --out"),
        (STATE, fingerprint(), MANIFEST, OUTPUTS[:1], "full", "--out no longer holds exactly what the last run wrote"),
        (
            STATE,
            fingerprint(spark_conf={"spark.sql.session.timeZone": "UTC"}),
            MANIFEST,
            OUTPUTS,
            "full",
            "--conf changed",
        ),
    ],
)
def test_a_run_has_nothing_to_do_only_when_nothing_it_reads_changed(previous, current, manifest, summary, mode, reason):
    decision = run_state.decide(previous, current, manifest, summary)
    assert decision.mode == mode and reason in decision.reason


def test_another_version_of_the_job_runs_in_full():
    older = dict(STATE, fingerprint=dict(STATE["fingerprint"], version="0.9.0"))
    decision = run_state.decide(older, fingerprint(), MANIFEST, OUTPUTS)
    assert decision.mode == "full" and f"headroom_pipeline 0.9.0, this is {__version__}" in decision.reason


def test_the_content_of_a_quotas_file_is_part_of_the_fingerprint(tmp_path):
    quotas = tmp_path / "quotas.json"
    quotas.write_text("[]", encoding="utf-8")
    before = run_state.fingerprint(SETTINGS, run_state.settings_file_digests([str(quotas)]))
    quotas.write_text('[{"entity": {"user": "a"}, "producer_byte_rate": 1}]', encoding="utf-8")
    now = run_state.fingerprint(SETTINGS, run_state.settings_file_digests([str(quotas)]))
    decision = run_state.decide(run_state.record(before, MANIFEST, OUTPUTS), now, MANIFEST, OUTPUTS)
    assert decision.mode == "full" and decision.reason == f"the content of {quotas} changed"


def test_the_state_holds_digests_of_the_settings_never_their_values():
    secret = "kafka://user:hunter2@k1:9092/usage?sasl_password=hunter2"
    state = json.dumps(run_state.record(run_state.fingerprint(dict(SETTINGS, snapshots=secret), {}), MANIFEST, None))
    assert "hunter2" not in state and "k1:9092" not in state


def test_the_manifest_lists_size_times_and_inode_and_leaves_out_a_file_gone_since_it_was_listed(tmp_path):
    path = tmp_path / "snapshots.jsonl"
    path.write_text("{}\n", encoding="utf-8")
    listed = run_state.manifest({"--snapshots": [str(path), str(tmp_path / "compressed-meanwhile.jsonl")]})
    stat = os.stat(path)
    assert listed == {"--snapshots": [[str(path), 3, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]]}


def test_the_outputs_listing_is_none_without_a_summary_and_lists_what_is_published_otherwise(tmp_path):
    generation = publication.begin(str(tmp_path))
    os.makedirs(generation.output("decisions"))
    with open(generation.output("decisions/part-0.parquet"), "wb") as handle:
        handle.write(b"x")
    assert run_state.output_listing(str(tmp_path)) is None
    with open(generation.output("summary.json"), "w", encoding="utf-8") as handle:
        handle.write("{}")
    publication.publish(generation, ["decisions", "summary.json"])
    listing = run_state.output_listing(str(tmp_path))
    assert [row for row in listing if len(row) == 2] == [
        ["current", ".generations/000001"],
        ["decisions", "current/decisions"],
        ["summary.json", "current/summary.json"],
    ]
    assert [row[0] for row in listing if len(row) > 2] == [
        str(tmp_path / "current" / "decisions" / "part-0.parquet"),
        str(tmp_path / "current" / "summary.json"),
    ]


def test_the_state_is_saved_whole_and_an_unreadable_one_is_none(tmp_path):
    assert run_state.load(str(tmp_path)) is None
    run_state.save(str(tmp_path), STATE)
    assert run_state.load(str(tmp_path)) == STATE
    assert sorted(os.listdir(tmp_path)) == ["current.json"]
    assert os.stat(tmp_path / "current.json").st_mode & 0o777 == 0o600
    (tmp_path / "current.json").write_text("{half", encoding="utf-8")
    assert run_state.load(str(tmp_path)) is None


def test_a_second_run_on_the_same_state_is_refused_while_the_first_holds_it(tmp_path):
    directory = str(tmp_path / "state")
    with run_state.locked(directory):
        with pytest.raises(ConfigError, match=r"--state: another run is using .* \(it holds lock\); try later"):
            with run_state.locked(directory):
                pass
    with run_state.locked(directory):  # released with the first run
        pass


def test_a_state_directory_that_cannot_be_made_is_refused_naming_the_option(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="--state: cannot use"):
        with run_state.locked(str(blocker / "state")):
            pass


# -- incremental runs ------------------------------------------------------------------------------------------------
HOUR = "/h/snapshots-2026-12-01T{}.jsonl"
RESUME = {"seeds": [], "latest": [], "stamps": None, "consumed": {HOUR.format(12): [70, "d12"]}}
BEFORE = {
    "--snapshots": [[HOUR.format(11) + ".gz", 100, 1, 1, 1], [HOUR.format(12), 70, 2, 2, 2]],
    "--traffic": [["/t/traffic-1.jsonl", 5, 1, 1, 3]],
}
RESUMABLE = run_state.record(fingerprint(), BEFORE, OUTPUTS, RESUME)


def now(*snapshot_rows, traffic=None):
    """The manifest of this run: the first hour's file as it was, ``snapshot_rows`` after it, the traffic as it was."""
    return {
        "--snapshots": [*BEFORE["--snapshots"][:1], *snapshot_rows],
        "--traffic": list(BEFORE["--traffic"] if traffic is None else traffic),
    }


@pytest.mark.parametrize(
    "manifest, mode, reason, reads",
    [
        (BEFORE, "unchanged", "no input file is new or changed", {}),
        (
            now(BEFORE["--snapshots"][1], [HOUR.format(13), 9, 3, 3, 4]),
            "incremental",
            "1 new",
            {HOUR.format(13): (0, None)},
        ),
        # The guard appended to its current hour: the rest of the file after what the last run read.
        (now([HOUR.format(12), 90, 3, 3, 2]), "incremental", "1 changed", {HOUR.format(12): (70, "d12")}),
        # ... and compressed it: the rest of its .jsonl.gz after the same bytes.
        (
            now([HOUR.format(12) + ".gz", 30, 4, 4, 5]),
            "incremental",
            "1 new, 1 gone",
            {HOUR.format(12) + ".gz": (70, "d12")},
        ),
        (now([HOUR.format(12), 60, 3, 3, 2]), "full", f"{HOUR.format(12)} changed, and not by a guard appending", None),
        (
            {
                "--snapshots": [[HOUR.format(11) + ".gz", 101, 5, 5, 1], BEFORE["--snapshots"][1]],
                "--traffic": BEFORE["--traffic"],
            },
            "full",
            f"{HOUR.format(11)}.gz changed, and not by a guard appending",
            None,
        ),
        (
            {"--snapshots": BEFORE["--snapshots"][1:], "--traffic": BEFORE["--traffic"]},
            "full",
            ".jsonl.gz is gone",
            None,
        ),
        # The guard's decisions are read whole by every run, incremental or not.
        (
            dict(
                now(BEFORE["--snapshots"][1], [HOUR.format(13), 9, 3, 3, 4]),
                **{"--guard-decisions": [["/h/d", 1, 1, 1, 9]]},
            ),
            "incremental",
            "2 new",
            {HOUR.format(13): (0, None)},
        ),
        (
            now(BEFORE["--snapshots"][1], traffic=[*BEFORE["--traffic"], ["/t/traffic-2.jsonl", 5, 1, 1, 6]]),
            "full",
            "--traffic files changed too (an incremental run reads new snapshots only)",
            None,
        ),
    ],
)
def test_a_run_reads_only_new_snapshot_files_and_what_the_guard_appended(manifest, mode, reason, reads):
    decision = run_state.decide(RESUMABLE, fingerprint(), manifest, OUTPUTS)
    assert decision.mode == mode and reason in decision.reason
    if reads is not None:
        assert {path: tuple(tail) for path, tail in decision.reads.items()} == reads


def test_new_files_after_a_run_that_left_no_checkpoint_are_a_full_run_that_says_why():
    state = run_state.record(fingerprint(), BEFORE, OUTPUTS, None, "the snapshot stamps span more than a year")
    decision = run_state.decide(
        state, fingerprint(), now(BEFORE["--snapshots"][1], [HOUR.format(13), 9, 3, 3, 4]), OUTPUTS
    )
    assert decision == run_state.Decision(
        "full", "input files since the last run: 1 new; the snapshot stamps span more than a year"
    )
    assert decision.as_summary() == {"mode": "full", "reason": decision.reason}
