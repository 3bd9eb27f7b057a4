"""A run's outputs are published whole: a run killed halfway leaves --out as the last finished run left it, and the
next run finishes the work (publication.py)."""

import json
import os
import signal
import subprocess
import sys
import time

from pipeline_cli import ROOT, run_cli

from headroom_pipeline import generate, run_state

# The run is killed once it has written outputs into its generation: the timeline comes after volumes/ and forecast/.
KILLED_AT = "decision timeline ..."
KILL_WAIT_SECONDS = 300  # a few seconds here; Spark's start on a machine twice as slow and busy is far less


def arguments(paths, out):
    return ["run", "--snapshots", paths["snapshots.jsonl"], "--out", out, "--min-available-ratio", "0.1"]


def test_a_run_killed_halfway_leaves_the_last_finished_run_and_the_next_run_publishes_its_own(tmp_path):
    paths = generate.write(str(tmp_path / "fleet"), clusters=1, brokers=2, hours=6)
    out = str(tmp_path / "out")
    first = run_cli(*arguments(paths, out), "--no-report")
    assert first.returncode == 0, first.stderr[-3000:]
    published = run_state.output_listing(out)
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as handle:
        first_summary = handle.read()

    killed_generation = _kill_a_run_at(KILLED_AT, arguments(paths, out), while_running=_a_second_run_is_refused)
    assert os.path.isdir(os.path.join(killed_generation, "volumes")), "the killed run had written outputs"
    assert run_state.output_listing(out) == published, "--out still publishes exactly the first run's files"
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as handle:
        assert handle.read() == first_summary

    finished = run_cli(*arguments(paths, out))
    assert finished.returncode == 0, finished.stderr[-3000:]
    summary = json.loads(finished.stdout)
    assert not os.path.exists(killed_generation), "the next run removes the killed run's work"
    assert summary["report"] == os.path.join(os.path.abspath(out), "report", "index.html")
    assert os.path.isfile(summary["report"])
    assert os.path.realpath(os.path.join(out, "decisions")).startswith(os.path.realpath(os.path.join(out, "current")))
    assert summary["rows_used"] == json.loads(first_summary)["rows_used"]


def _a_second_run_is_refused(argv):
    second = run_cli(*argv)
    assert second.returncode == 2, second.stderr[-3000:]
    assert (
        "--out: another run is writing" in second.stderr and "(it holds .generations/lock); try later" in second.stderr
    )


def _kill_a_run_at(progress_line, argv, while_running):
    """Start the command line, call ``while_running(argv)`` once it prints ``progress_line``, then kill it and its JVM
    (SIGKILL: no clean-up of its own); the generation it was writing."""
    process = subprocess.Popen(  # noqa: S603  # our own command line
        [sys.executable, "-m", "headroom_pipeline", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
        start_new_session=True,
    )
    seen = []
    try:
        deadline = time.monotonic() + KILL_WAIT_SECONDS
        for line in process.stderr:
            seen.append(line)
            if progress_line in line or time.monotonic() > deadline:
                break
        assert any(progress_line in line for line in seen), "".join(seen[-40:])
        while_running(argv)
        out = argv[argv.index("--out") + 1]
        numbers = [name for name in os.listdir(os.path.join(out, ".generations")) if name.isdigit()]
        generation = os.path.realpath(os.path.join(out, ".generations", max(numbers, key=int)))
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        process.stderr.close()
    assert generation != os.path.realpath(os.path.join(out, "current"))
    return generation
