"""The history's cost to the disk guard, on 50 brokers of the model: time per decision with the history against
without it (the baseline), and the bytes the history takes per broker and day.

Runs ``python -m headroom_guard --interval 1`` (the service as users run it) against a 50-broker model cluster, in
alternating runs without and with ``--history-dir`` (and with ``--snapshot-topic`` too), and reads each decision's
duration from the line the guard writes per decision (``... in 0.214 s``: reads, decision, quota changes and, with a
history, the records). Bytes are what the history directory holds after the runs, per decision and broker, scaled to a
day at the default interval (30 s), plain and compressed as closed hours are.
Run from the repository root: ``.venv/bin/python bench/guard_history_bench.py [--decisions N] [--rounds N]``.
"""

import argparse
import gzip
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT]

from kafka_testbed.cluster import Cluster  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.testing import free_port_block  # noqa: E402  pylint: disable=wrong-import-position

BROKERS = 50
DEFAULT_INTERVAL = 30.0
DECISION_TIME = re.compile(r"^headroom_guard: \S+ factor .* in ([0-9.]+) s$")


def run_guard(config, decisions, extra):
    """The per-decision durations of one guard run of ``decisions`` decisions."""
    process = subprocess.Popen(
        [sys.executable, "-m", "headroom_guard", "--config", config, "--interval", "1", *extra],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    times = []
    try:
        for line in process.stderr:
            match = DECISION_TIME.match(line.strip())
            if match:
                times.append(float(match.group(1)))
                if len(times) == decisions:
                    break
            elif "decision failed" in line or "Traceback" in line:
                raise RuntimeError(line)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    return times[1:]  # the first decision also opens the connection


def history_bytes(directory):
    plain = compressed = 0
    for name in os.listdir(directory):
        with open(os.path.join(directory, name), "rb") as handle:
            data = handle.read()
        plain += len(data)
        compressed += len(gzip.compress(data))
    return plain, compressed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=21, help="decisions per run (the first is not counted)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each kind, alternating")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-guard-history-")
    cluster = Cluster(os.path.join(workdir, "cluster"), "sim")  # the model: 50 brokers do not fit two cores as JVMs
    cluster.create(BROKERS, base_port=free_port_block(BROKERS))
    try:
        cluster.up(180)
        config = os.path.join(workdir, "guard.yml")
        with open(config, "w", encoding="utf-8") as handle:
            yaml.safe_dump(
                {
                    "bootstrap_servers": cluster.info["bootstrap_servers"].split(",")[:3],
                    "policy": "graded",
                    "soft_limit": {"type": "min_free_percentage", "level": 20},
                    "hard_limit": {"type": "min_free_percentage", "level": 5},
                    "default_producer_byte_rate": 1 << 20,
                },
                handle,
            )
        without, with_history, with_topic = [], [], []
        history = os.path.join(workdir, "history")
        for round_number in range(args.rounds):
            print(f"round {round_number + 1}/{args.rounds}", file=sys.stderr)
            without += run_guard(config, args.decisions, [])
            shutil.rmtree(history, ignore_errors=True)
            with_history += run_guard(config, args.decisions, ["--history-dir", history])
            with_topic += run_guard(
                config,
                args.decisions,
                [
                    "--history-dir",
                    os.path.join(workdir, "history-topic"),
                    "--snapshot-topic",
                    "__headroom_volume_usage",
                ],
            )
        plain, compressed = history_bytes(history)
        recorded = args.decisions  # the last round's directory holds one run's decisions
        per_day = 86400.0 / DEFAULT_INTERVAL
    finally:
        cluster.down()
        shutil.rmtree(workdir, ignore_errors=True)
    base = statistics.fmean(without)
    print(f"brokers: {BROKERS} (model), decisions timed per kind: {len(without)}, cores: {os.cpu_count()}")
    print(f"{'run':<32} {'median s':>9} {'mean s':>9} {'ratio of means':>15}")
    for name, times in (
        ("without history (baseline)", without),
        ("with --history-dir", with_history),
        ("with --history-dir and a topic", with_topic),
    ):
        mean = statistics.fmean(times)
        print(f"{name:<32} {statistics.median(times):>9.4f} {mean:>9.4f} {mean / base:>15.2f}")
    scale = per_day / recorded / BROKERS
    print(
        f"history bytes per broker and day at a {DEFAULT_INTERVAL:g} s interval: "
        f"{plain * scale:,.0f} plain, {compressed * scale:,.0f} compressed"
    )


if __name__ == "__main__":
    main()
