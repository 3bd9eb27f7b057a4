"""--state: a run with nothing new to read starts no Spark and changes nothing; a run after any change to what the
outputs depend on (an input file, a setting, the quotas) is a full one that says why."""

import json
import os

from pipeline_cli import run_cli

from headroom_pipeline import cli, generate, job

# A master no Spark can reach: a run that started Spark with it would fail.
UNREACHABLE_MASTER = "spark://127.0.0.1:1"


def arguments(paths, out, state, *extra):
    return [
        "run",
        "--snapshots",
        paths["snapshots.jsonl"],
        "--traffic",
        paths["traffic.jsonl"],
        "--quotas",
        paths["quotas.json"],
        "--out",
        out,
        "--state",
        state,
        "--min-available-ratio",
        "0.1",
        "--no-report",
        "--quiet",
        *extra,
    ]


def run_in_process(argv):
    """The job as the command line configures it, on the tests' Spark session."""
    return job.run(cli.config_from_args(cli.parser().parse_args(argv)))


def test_a_run_with_nothing_new_starts_no_spark_and_changes_nothing(spark, tmp_path):
    del spark  # the in-process runs use the tests' session
    paths = generate.write(str(tmp_path / "fleet"), clusters=1, brokers=2, hours=2)
    out, state = str(tmp_path / "out"), str(tmp_path / "state")
    summary_path = os.path.join(out, "summary.json")

    first = run_in_process(arguments(paths, out, state))
    assert first["incremental"] == {"mode": "full", "reason": "no state from an earlier run"}
    with open(summary_path, "rb") as handle:
        written = handle.read()
    before = os.stat(summary_path).st_mtime_ns

    again = run_cli(*arguments(paths, out, state, "--master", UNREACHABLE_MASTER))
    assert again.returncode == 0, again.stderr[-3000:]
    result = json.loads(again.stdout)
    assert result["incremental"] == {
        "mode": "unchanged",
        "reason": "no input file is new or changed since the last run",
    }
    assert result["rows_read"] == first["rows_read"]
    with open(summary_path, "rb") as handle:
        assert handle.read() == written and os.stat(summary_path).st_mtime_ns == before

    with open(paths["snapshots.jsonl"], "a", encoding="utf-8") as handle:
        handle.write("{broken\n")
    appended = run_in_process(arguments(paths, out, state))
    assert appended["incremental"] == {
        "mode": "full",
        "reason": f"input files since the last run: 1 changed; {paths['snapshots.jsonl']} changed, and not by a guard "
        "appending to it",
    }
    assert appended["rows_rejected"] == first["rows_rejected"] + 1

    other = run_in_process(arguments(paths, out, state, "--check-interval", "30"))
    assert other["incremental"]["mode"] == "full"
    assert other["incremental"]["reason"] == "the state is of another configuration: --check-interval changed"
    assert run_in_process(arguments(paths, out, state, "--check-interval", "30"))["incremental"]["mode"] == "unchanged"
