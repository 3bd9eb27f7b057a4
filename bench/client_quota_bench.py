"""client_quota with 5,000 entities: ours (1 describe + 1 validate + 1 apply) against one AlterClientQuotas per entity.

Run from the repository root:
``.venv/bin/python bench/client_quota_bench.py [--entities N] [--runs N] [--baseline-runs N] [--no-playbook]``.

Starts its own 3-broker test cluster (real Apache Kafka unless ``--engine sim``) in a temporary directory on free
loopback ports and tears it down at the end, also on an error or Ctrl-C. Every request goes through the collection's
adapter (KafkaAdapter), wrapped to count the requests each approach sends. Measured, each from a cluster without
client quotas unless said otherwise:

* ours, first apply: the module's core (``desired_state`` + ``reconcile`` of plugins/module_utils/quota_apply.py, with a
  fresh connection as every task run has), 5,000 users with producer and consumer byte rates;
* ours, idempotent re-run: the same spec against the applied quotas (one DescribeClientQuotas, nothing to change);
* naive baseline, first apply: one AlterClientQuotas request per entity, sent one after the other through the same
  adapter and connection; naive re-run: the same loop again (it cannot tell that nothing changes);
* the whole Ansible task (``ansible-playbook`` running headroom.kafka.client_quota with the 5,000 entities), first
  apply and re-run, unless ``--no-playbook``.

Times are medians over ``--runs`` runs (3) for ours and the Ansible task and ``--baseline-runs`` (1) for the naive
loop, which takes minutes at 5,000 entities; the cluster's quotas are cleared before every first apply (not timed) and
every result is checked against DescribeClientQuotas. On real Kafka each AlterClientQuotas is forwarded to the active
controller, which appends the records to the metadata log; the model (``--engine sim``) rewrites its whole quota store
per request instead, so the naive loop costs more per request there as the store grows and flatters our ratio.
"""

import argparse
import json
import os
import shutil
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
from kafka_testbed.testing import base_port_for  # noqa: E402  pylint: disable=wrong-import-position

TARGET_SPEEDUP = 20.0


def _imports():
    # pylint: disable=import-outside-toplevel
    from ansible_collections.headroom.kafka.plugins.module_utils import quota_apply, quota_spec
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter

    return quota_spec, KafkaAdapter, quota_apply


class CountingAdapter:
    """The adapter, counting the client quota requests sent through it."""

    def __init__(self, adapter):
        self.adapter = adapter
        self.counts = {"describe": 0, "validate": 0, "alter": 0}

    def describe_client_quotas(self, components=None, strict=False):
        self.counts["describe"] += 1
        return self.adapter.describe_client_quotas(components=components, strict=strict)

    def alter_client_quotas(self, entries, validate_only):
        self.counts["validate" if validate_only else "alter"] += 1
        return self.adapter.alter_client_quotas(entries, validate_only)

    def close(self):
        self.adapter.close()


def _spec(entities):
    return [
        {
            "entity": {"user": "bench-user-{0:05d}".format(i)},
            "producer_byte_rate": 1048576 + i,
            "consumer_byte_rate": 2097152 + 2 * i,
        }
        for i in range(entities)
    ]


def _stored(bootstrap):
    quota_spec, adapter_class, _module = _imports()
    adapter = adapter_class(bootstrap)
    try:
        return dict((quota_spec.describe_entity(e), v) for e, v in adapter.describe_client_quotas())
    finally:
        adapter.close()


def _check_applied(bootstrap, spec):
    stored = _stored(bootstrap)
    expected = dict(
        (
            "user=" + item["entity"]["user"],
            {
                "producer_byte_rate": float(item["producer_byte_rate"]),
                "consumer_byte_rate": float(item["consumer_byte_rate"]),
            },
        )
        for item in spec
    )
    if stored != expected:
        missing = len(set(expected) - set(stored))
        raise SystemExit(
            "the cluster does not hold the applied quotas ({0} of {1} entities missing or different)".format(
                missing or sum(1 for k in expected if stored.get(k) != expected[k]), len(expected)
            )
        )


def _clear(bootstrap):
    quota_spec, adapter_class, quota_apply = _imports()
    adapter = adapter_class(bootstrap)
    try:
        quota_apply.reconcile(adapter, quota_spec.desired_state([]), exclusive=True)
    finally:
        adapter.close()
    if _stored(bootstrap):
        raise SystemExit("could not clear the cluster's client quotas")


def _ours_once(bootstrap, spec):
    quota_spec, adapter_class, quota_apply = _imports()
    started = time.perf_counter()
    adapter = CountingAdapter(adapter_class(bootstrap))
    try:
        result = quota_apply.reconcile(adapter, quota_spec.desired_state(spec), exclusive=False)
    finally:
        adapter.close()
    return time.perf_counter() - started, adapter.counts, result


def _naive_once(bootstrap, spec):
    quota_spec, adapter_class, _module = _imports()
    started = time.perf_counter()
    adapter = CountingAdapter(adapter_class(bootstrap))
    try:
        for item in spec:
            entity = quota_spec.entity_from_spec(item["entity"])
            ops = [(key, float(item[key]), False) for key in ("producer_byte_rate", "consumer_byte_rate")]
            for _entity, error, message in adapter.alter_client_quotas([(entity, ops)], validate_only=False):
                if error:
                    raise SystemExit("baseline: Kafka refused {0}: {1} {2}".format(item["entity"], error, message))
    finally:
        adapter.close()
    return time.perf_counter() - started, adapter.counts


def _playbook_once(bootstrap, spec, workdir):
    vars_file = os.path.join(workdir, "quotas.json")
    with open(vars_file, "w", encoding="utf-8") as handle:
        json.dump({"bench_quotas": spec}, handle)
    playbook = os.path.join(workdir, "play.yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        json.dump(
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "vars_files": [vars_file],
                    "tasks": [
                        {
                            "headroom.kafka.client_quota": {
                                "bootstrap_servers": bootstrap.split(","),
                                "quotas": "{{ bench_quotas }}",
                            },
                            "register": "result",
                        },
                        {
                            "ansible.builtin.copy": {
                                "content": (
                                    "{{ {'changed': result.changed, 'changes': result.changes | length} | to_json }}"
                                ),
                                "dest": os.path.join(workdir, "result.json"),
                            }
                        },
                    ],
                }
            ],
            handle,
        )
    started = time.perf_counter()
    run = subprocess.run(
        localhost_play(playbook), env=playbook_environment(COLLECTIONS), capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if run.returncode:
        raise SystemExit("ansible-playbook failed:\n" + run.stdout[-3000:] + run.stderr[-3000:])
    with open(os.path.join(workdir, "result.json"), encoding="utf-8") as handle:
        return elapsed, json.load(handle)


def _median(rows, index=0):
    return statistics.median(row[index] for row in rows)


def _measure(bootstrap, spec, runs, baseline_runs, playbook, workdir):
    entities = len(spec)
    figures = {}
    _imports()
    _clear(bootstrap)

    first = []
    for run in range(runs):
        if run:
            _clear(bootstrap)
        elapsed, counts, result = _ours_once(bootstrap, spec)
        assert result["changed"] and len(result["changes"]) == entities, "first apply did not change every entity"
        first.append((elapsed, counts))
    _check_applied(bootstrap, spec)
    figures["ours_first"] = (_median(first), first[-1][1])
    print("ours, first apply: {0:.3f} s".format(figures["ours_first"][0]), file=sys.stderr)

    rerun = []
    for _run in range(runs):
        elapsed, counts, result = _ours_once(bootstrap, spec)
        assert not result["changed"] and result["changes"] == [], "re-run changed something"
        rerun.append((elapsed, counts))
    figures["ours_rerun"] = (_median(rerun), rerun[-1][1])
    print("ours, re-run: {0:.3f} s".format(figures["ours_rerun"][0]), file=sys.stderr)

    if playbook:
        task_first, task_rerun = [], []
        for _run in range(runs):
            _clear(bootstrap)
            elapsed, outcome = _playbook_once(bootstrap, spec, workdir)
            assert outcome == {"changed": True, "changes": entities}, outcome
            task_first.append(elapsed)
            elapsed, outcome = _playbook_once(bootstrap, spec, workdir)
            assert outcome == {"changed": False, "changes": 0}, outcome
            task_rerun.append(elapsed)
        _check_applied(bootstrap, spec)
        figures["task_first"] = statistics.median(task_first)
        figures["task_rerun"] = statistics.median(task_rerun)
        print(
            "ansible task: {0:.3f} s / {1:.3f} s".format(figures["task_first"], figures["task_rerun"]), file=sys.stderr
        )

    naive = []
    for _run in range(baseline_runs):
        _clear(bootstrap)
        naive.append(_naive_once(bootstrap, spec))
    _check_applied(bootstrap, spec)
    figures["naive_first"] = (_median(naive), naive[-1][1])
    print("naive, first apply: {0:.3f} s".format(figures["naive_first"][0]), file=sys.stderr)
    naive_rerun = [_naive_once(bootstrap, spec) for _run in range(baseline_runs)]
    _check_applied(bootstrap, spec)
    figures["naive_rerun"] = (_median(naive_rerun), naive_rerun[-1][1])
    print("naive, re-run: {0:.3f} s".format(figures["naive_rerun"][0]), file=sys.stderr)
    return figures


def _requests(counts):
    parts = ["{0} {1}".format(counts[k], k) for k in ("describe", "validate", "alter") if counts[k]]
    return "{0} ({1})".format(sum(counts.values()), " + ".join(parts))


def _report(figures, entities, runs, baseline_runs):
    print(
        "client_quota, {0} entities (users with producer and consumer byte rates), 3 brokers, {1} cores; "
        "median of {2} run(s), naive baseline {3} run(s)".format(entities, os.cpu_count(), runs, baseline_runs)
    )
    rows = [
        ("ours (module core), first apply", figures["ours_first"]),
        ("ours (module core), re-run", figures["ours_rerun"]),
        ("naive, one AlterClientQuotas per entity, first apply", figures["naive_first"]),
        ("naive, one AlterClientQuotas per entity, re-run", figures["naive_rerun"]),
    ]
    width = max(len(name) for name, _ignored in rows) + 2
    print("{0:<{w}}{1:>10}  {2}".format("approach", "time (s)", "requests", w=width))
    for name, (elapsed, counts) in rows:
        print("{0:<{w}}{1:>10.3f}  {2}".format(name, elapsed, _requests(counts), w=width))
    if "task_first" in figures:
        print(
            "{0:<{w}}{1:>10.3f}  {2}".format(
                "ansible-playbook task, first apply", figures["task_first"], "3 (same core, not counted)", w=width
            )
        )
        print(
            "{0:<{w}}{1:>10.3f}  {2}".format(
                "ansible-playbook task, re-run", figures["task_rerun"], "1 (same core, not counted)", w=width
            )
        )
    print(
        "naive baseline per request: first apply {0:.1f} ms, re-run {1:.1f} ms".format(
            1000.0 * figures["naive_first"][0] / entities, 1000.0 * figures["naive_rerun"][0] / entities
        )
    )
    first = figures["naive_first"][0] / figures["ours_first"][0]
    rerun = figures["naive_rerun"][0] / figures["ours_rerun"][0]
    print("speed-up, first apply: {0:.1f}x (target >= {1:.0f}x)".format(first, TARGET_SPEEDUP))
    print("speed-up, re-run: {0:.1f}x (target >= {1:.0f}x)".format(rerun, TARGET_SPEEDUP))
    if "task_first" in figures:
        print(
            "speed-up of the whole ansible task against the naive core: first apply {0:.1f}x, re-run {1:.1f}x".format(
                figures["naive_first"][0] / figures["task_first"], figures["naive_rerun"][0] / figures["task_rerun"]
            )
        )
    constant = figures["ours_first"][1] == {"describe": 1, "validate": 1, "alter": 1} and figures["ours_rerun"][1] == {
        "describe": 1,
        "validate": 0,
        "alter": 0,
    }
    print("ours sends a constant number of requests (1 + 1 + 1, re-run 1): {0}".format("yes" if constant else "NO"))
    return constant and first >= TARGET_SPEEDUP and rerun >= TARGET_SPEEDUP


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=5000)
    parser.add_argument(
        "--engine", choices=("kafka", "sim"), default=None, help="test cluster engine (default: real Kafka)"
    )
    parser.add_argument("--runs", type=int, default=3, help="runs of ours and of the ansible task (median)")
    parser.add_argument("--baseline-runs", type=int, default=1, help="runs of the naive baseline (median)")
    parser.add_argument("--no-playbook", action="store_true", help="skip the ansible-playbook runs")
    args = parser.parse_args()
    ensure_collection_link(ROOT, COLLECTIONS)
    workdir = tempfile.mkdtemp(prefix="bench-client-quota-")
    cluster = None
    try:
        cluster = Cluster(os.path.join(workdir, "cluster"), args.engine)
        cluster.create(3, base_port=base_port_for(3, engine=cluster.engine))
        cluster.up(120)
        figures = _measure(
            cluster.info["bootstrap_servers"],
            _spec(args.entities),
            max(args.runs, 1),
            max(args.baseline_runs, 1),
            not args.no_playbook,
            workdir,
        )
    finally:
        if cluster is not None and cluster.info is not None:
            cluster.down()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if _report(figures, args.entities, max(args.runs, 1), max(args.baseline_runs, 1)) else 1


if __name__ == "__main__":
    sys.exit(main())
