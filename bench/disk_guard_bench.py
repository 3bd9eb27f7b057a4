"""One disk guard decision on 50 brokers with 5,000 declared entities, against the same work as separate Ansible tasks.

Run from the repository root:
``.venv/bin/python bench/disk_guard_bench.py [--brokers 50] [--entities 5000] [--runs 3]``.

Starts its own test cluster of the model (``--engine sim``, the default: 50 real Kafka brokers do not fit this
machine) in a temporary directory on free loopback ports and tears it down at the end, also on an error or Ctrl-C.
The cluster's quotas are first set to the declared set (not timed); every timed run is then a decision that changes
nothing ("describe log dirs + quotas, decide, no change"), checked from each run's own result. Measured, each the
whole command a user runs, median of ``--runs``:

* **guard, one decision**: ``python -m headroom_guard --config FILE --once`` (interpreter start, imports, connection,
  DescribeClientQuotas, DescribeCluster, DescribeLogDirs on every broker, the decision, no change);
* **guard, in its loop**: the same decision inside the running service (``--interval``), as the service spends it every
  interval, read from its own decision lines; and the service's peak resident memory (VmHWM) after the runs;
* **module task**: ``ansible-playbook`` with one ``headroom.kafka.disk_guard`` task;
* **baseline, three tasks**: ``ansible-playbook`` with ``log_dirs_info`` (register), ``volume_limits`` (the
  registered log dirs, the same limit) and ``client_quota`` (the same quota set, exclusive), the way the decision is
  made without the guard.

Reported: the times, the ratios of the baseline over each guard figure (target: the guard at least 5x faster) and the
guard's memory (target: under 100 MiB).
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import yaml
from local_ansible import ensure_collection_link, localhost_play, playbook_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
sys.path[:0] = [ROOT, COLLECTIONS]

from kafka_testbed.cluster import Cluster  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.testing import base_port_for  # noqa: E402  pylint: disable=wrong-import-position

TARGET_SPEEDUP = 5.0
TARGET_RSS_MIB = 100.0
DEFAULT_RATE = 10485760
LIMIT_RATIO = 0.01
EXCLUDED = ["User:kafka-broker", "User:cruise-control"]
LINE = re.compile(
    r"factor (\S+) \S+ \(strimzi, [^)]*\): (quotas unchanged|\d+ quota entit\S+ changed) in (\d+\.\d+) s$"
)


def declared(entities):
    return [
        {
            "entity": {"user": f"bench-user-{index:05d}"},
            "producer_byte_rate": 1048576 + index,
            "consumer_byte_rate": 2097152,
        }
        for index in range(entities)
    ]


def guard_options(bootstrap, quotas):
    return {
        "bootstrap_servers": bootstrap.split(","),
        "min_available_ratio": LIMIT_RATIO,
        "default_producer_byte_rate": DEFAULT_RATE,
        "quotas": quotas,
        "excluded_principals": EXCLUDED,
    }


def client_quota_set(quotas):
    """The quota set the guard holds at factor 1, as client_quota takes it (what the baseline's third task applies)."""
    return (
        quotas
        + [{"entity": {"user": "<default>"}, "producer_byte_rate": DEFAULT_RATE}]
        + [
            {"entity": {"user": principal.split(":", 1)[1]}, "producer_byte_rate": 9223372036854775807}
            for principal in EXCLUDED
        ]
    )


def _timed(command, **kwargs):
    started = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT, **kwargs)
    elapsed = time.perf_counter() - started
    if run.returncode:
        raise SystemExit(f"{' '.join(command[:4])} failed:\n{run.stdout[-3000:]}{run.stderr[-3000:]}")
    return elapsed, run


def guard_once(config):
    elapsed, run = _timed([sys.executable, "-m", "headroom_guard", "--config", config, "--once"])
    match = LINE.search(run.stderr.strip().splitlines()[-1])
    if not match or match.group(2) != "quotas unchanged" or float(match.group(1)) != 1.0:
        raise SystemExit(f"the guard's decision was not 'factor 1, unchanged':\n{run.stderr[-2000:]}")
    return elapsed


def playbook(workdir, name, tasks, variables, connection):
    vars_file = os.path.join(workdir, f"{name}-vars.json")
    with open(vars_file, "w", encoding="utf-8") as handle:
        json.dump(variables, handle)
    path = os.path.join(workdir, f"{name}.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "vars_files": [vars_file],
                    "module_defaults": {"group/headroom.kafka.kafka": connection},
                    "tasks": tasks
                    + [
                        {
                            "ansible.builtin.copy": {
                                "content": "{{ outcome | to_json }}",
                                "dest": os.path.join(workdir, f"{name}-outcome.json"),
                            }
                        }
                    ],
                }
            ],
            handle,
        )
    command = localhost_play(path)

    def run():
        elapsed, _run = _timed(command, env=playbook_environment(COLLECTIONS))
        with open(os.path.join(workdir, f"{name}-outcome.json"), encoding="utf-8") as handle:
            outcome = json.load(handle)
        if outcome.get("changed") or outcome.get("factor") != 1.0:
            raise SystemExit(f"{name}: expected factor 1 and no change, got {outcome}")
        return elapsed

    return run


def module_task(workdir, options):
    task = {key: value for key, value in options.items() if key != "quotas"}
    task["quotas"] = "{{ declared }}"
    return playbook(
        workdir,
        "module",
        [
            {"headroom.kafka.disk_guard": task, "register": "decision"},
            {
                "ansible.builtin.set_fact": {
                    "outcome": {"changed": "{{ decision.changed }}", "factor": "{{ decision.throttle_factor }}"}
                }
            },
        ],
        {"declared": options["quotas"]},
        {"bootstrap_servers": options["bootstrap_servers"]},
    )


def three_tasks(workdir, options):
    return playbook(
        workdir,
        "three-tasks",
        [
            {"headroom.kafka.log_dirs_info": {}, "register": "seen"},
            {
                "headroom.kafka.volume_limits": {
                    "log_dirs": "{{ seen.log_dirs }}",
                    "min_available_ratio": LIMIT_RATIO,
                    "produce_byte_rate": DEFAULT_RATE,
                },
                "register": "limits",
            },
            {"headroom.kafka.client_quota": {"quotas": "{{ quota_set }}", "exclusive": True}, "register": "applied"},
            {
                "ansible.builtin.set_fact": {
                    "outcome": {"changed": "{{ applied.changed }}", "factor": "{{ limits.throttle_factor }}"}
                }
            },
        ],
        {"quota_set": client_quota_set(options["quotas"])},
        {"bootstrap_servers": options["bootstrap_servers"]},
    )


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def loop_decisions(config, decisions):
    """Decision times inside the running service (its own figures) and its peak memory after ``decisions`` of them."""
    process = subprocess.Popen(
        [sys.executable, "-m", "headroom_guard", "--config", config, "--interval", "1"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    seconds = []
    try:
        while len(seconds) < decisions:
            line = process.stderr.readline()
            if not line:
                raise SystemExit("the guard stopped before its decisions were measured")
            match = LINE.search(line.strip())
            if match:
                seconds.append(float(match.group(3)))
        rss = peak_rss_mib(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    return seconds, rss, process.returncode


def measure(bootstrap, entities, runs, workdir):
    options = guard_options(bootstrap, declared(entities))
    config = os.path.join(workdir, "guard.yml")
    with open(config, "w", encoding="utf-8") as handle:
        yaml.safe_dump(options, handle)
    subprocess.run(
        [sys.executable, "-m", "headroom_guard", "--config", config, "--once"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    figures = {}
    print("guard --once ...", file=sys.stderr)
    figures["guard_once"] = statistics.median(guard_once(config) for _run in range(runs))
    print("guard in its loop ...", file=sys.stderr)
    seconds, rss, status = loop_decisions(config, runs + 1)
    figures["guard_loop"], figures["guard_rss_mib"], figures["guard_exit"] = statistics.median(seconds[1:]), rss, status
    print("module task ...", file=sys.stderr)
    task = module_task(workdir, options)
    figures["module_task"] = statistics.median(task() for _run in range(runs))
    print("three tasks ...", file=sys.stderr)
    baseline = three_tasks(workdir, options)
    figures["three_tasks"] = statistics.median(baseline() for _run in range(runs))
    return figures


def report(figures, brokers, entities, runs):
    print(
        f"disk guard, one decision that changes nothing: {brokers} brokers (sim), {entities:,} declared entities, "
        f"{os.cpu_count()} cores; median of {runs} run(s)"
    )
    rows = [
        ("guard, one decision: python -m headroom_guard --once", figures["guard_once"]),
        ("guard, one decision inside the running service", figures["guard_loop"]),
        ("module: ansible-playbook, one disk_guard task", figures["module_task"]),
        ("baseline: ansible-playbook, log_dirs_info + volume_limits + client_quota", figures["three_tasks"]),
    ]
    width = max(len(name) for name, _seconds in rows) + 2
    for name, seconds in rows:
        print(f"{name:<{width}}{seconds:>9.3f} s   baseline / this {figures['three_tasks'] / seconds:6.1f}x")
    once = figures["three_tasks"] / figures["guard_once"]
    print(
        f"guard service: peak resident memory {figures['guard_rss_mib']:.1f} MiB (target < {TARGET_RSS_MIB:.0f}); "
        f"stopped by SIGTERM with exit status {figures['guard_exit']}"
    )
    passed = once >= TARGET_SPEEDUP and figures["guard_rss_mib"] < TARGET_RSS_MIB and figures["guard_exit"] == 0
    print(
        f"{'PASS' if once >= TARGET_SPEEDUP else 'FAIL'}  one guard decision at least {TARGET_SPEEDUP:g}x faster "
        f"than the three tasks (the whole --once command): {once:.1f}x"
    )
    print(
        f"{'PASS' if figures['guard_rss_mib'] < TARGET_RSS_MIB else 'FAIL'}  "
        f"guard resident memory under {TARGET_RSS_MIB:g} MiB"
    )
    return passed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=50)
    parser.add_argument("--entities", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engine", choices=("kafka", "sim"), default="sim")
    parser.add_argument("--json", help="also write the figures as JSON to this file")
    args = parser.parse_args()
    ensure_collection_link(ROOT, COLLECTIONS)
    workdir = tempfile.mkdtemp(prefix="bench-disk-guard-")
    cluster = None
    try:
        cluster = Cluster(os.path.join(workdir, "cluster"), args.engine)
        cluster.create(args.brokers, base_port=base_port_for(args.brokers, engine=cluster.engine))
        print(f"starting {args.brokers} brokers ...", file=sys.stderr)
        cluster.up(300)
        figures = measure(cluster.info["bootstrap_servers"], args.entities, max(args.runs, 1), workdir)
    finally:
        if cluster is not None and cluster.info is not None:
            cluster.down()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(dict(figures, brokers=args.brokers, entities=args.entities, runs=args.runs), handle, indent=2)
    return 0 if report(figures, args.brokers, args.entities, max(args.runs, 1)) else 1


if __name__ == "__main__":
    sys.exit(main())
