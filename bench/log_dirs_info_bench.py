"""log_dirs_info on 5 and on 50 brokers: the 50-broker run may take at most 2x the 5-broker one.

Measures, in one run and against test clusters started here:
* the module's work (connect, DescribeCluster, DescribeLogDirs to every broker in parallel) called in-process,
  median of several runs, each with a fresh connection as every task run has;
* the whole Ansible task (``ansible-playbook`` running headroom.kafka.log_dirs_info), median of a few runs;
* a sequential baseline (one DescribeLogDirs after the other, as kafka-python's own describe_log_dirs does) on 50.
Run from the repository root: ``.venv/bin/python bench/log_dirs_info_bench.py [--runs N]``.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from local_ansible import ensure_collection_link, localhost_play, playbook_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
sys.path[:0] = [ROOT, COLLECTIONS]

from kafka_testbed.cluster import Cluster  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.testing import free_port_block  # noqa: E402  pylint: disable=wrong-import-position


def _collect_once(bootstrap):
    from ansible_collections.headroom.kafka.plugins.module_utils import log_dirs  # pylint: disable=import-outside-toplevel
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter  # pylint: disable=import-outside-toplevel

    adapter = KafkaAdapter(bootstrap)
    started = time.perf_counter()
    try:
        view = log_dirs.collect(adapter)
    finally:
        adapter.close()
    assert view["complete"], view["failures"]
    return time.perf_counter() - started, len(view["log_dirs"])


def _sequential_once(bootstrap):
    from kafka.admin import KafkaAdminClient  # pylint: disable=import-outside-toplevel

    started = time.perf_counter()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        brokers = [b["broker_id"] for b in admin.describe_cluster()["brokers"]]
        admin.describe_log_dirs(brokers=brokers)
    finally:
        admin.close()
    return time.perf_counter() - started


def _task_once(bootstrap, workdir):
    playbook = os.path.join(workdir, "play.yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        json.dump(
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "headroom.kafka.log_dirs_info": {
                                "bootstrap_servers": bootstrap.split(",")[:3],
                                "fail_on_missing": True,
                            }
                        }
                    ],
                }
            ],
            handle,
        )
    started = time.perf_counter()
    subprocess.run(localhost_play(playbook), env=playbook_environment(COLLECTIONS), check=True, capture_output=True)
    return time.perf_counter() - started


def _measure(brokers, runs, task_runs, workdir):
    directory = tempfile.mkdtemp(prefix="bench-cluster-", dir=workdir)
    cluster = Cluster(directory, "sim")  # the model: 50 brokers do not fit two cores as JVMs
    cluster.create(brokers, base_port=free_port_block(brokers))
    try:
        cluster.up(120)
        bootstrap = cluster.info["bootstrap_servers"]
        _collect_once(bootstrap)  # warm the imports
        collect = [_collect_once(bootstrap)[0] for _ignored in range(runs)]
        task = [_task_once(bootstrap, workdir) for _ignored in range(task_runs)]
        sequential = [_sequential_once(bootstrap) for _ignored in range(max(runs // 2, 1))]
        return {
            "brokers": brokers,
            "collect_s": statistics.median(collect),
            "task_s": statistics.median(task),
            "sequential_s": statistics.median(sequential),
        }
    finally:
        cluster.down()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--task-runs", type=int, default=3)
    args = parser.parse_args()
    ensure_collection_link(ROOT, COLLECTIONS)
    workdir = tempfile.mkdtemp(prefix="bench-log-dirs-")
    small = _measure(5, args.runs, args.task_runs, workdir)
    large = _measure(50, args.runs, args.task_runs, workdir)
    print(f"cores: {os.cpu_count()}")
    print(f"{'brokers':>8} {'module work (s)':>16} {'ansible task (s)':>17} {'sequential baseline (s)':>24}")
    for row in (small, large):
        print(f"{row['brokers']:>8} {row['collect_s']:>16.3f} {row['task_s']:>17.3f} {row['sequential_s']:>24.3f}")
    print(f"50/5 ratio, module work: {large['collect_s'] / small['collect_s']:.2f} (target <= 2.0)")
    print(f"50/5 ratio, ansible task: {large['task_s'] / small['task_s']:.2f} (target <= 2.0)")
    print(f"50 brokers, parallel vs sequential: {large['sequential_s'] / large['collect_s']:.2f}x faster")


if __name__ == "__main__":
    main()
