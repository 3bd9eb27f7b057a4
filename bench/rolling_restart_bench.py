"""rolling_restart on 3 brokers: overhead per broker above the test cluster's own restart plus catch-up, and a baseline.

Measures, in one run and against a 3-broker test cluster started here with one topic of replication factor 3 (so
every restart leaves every partition under-replicated until the restarted broker's replicas have caught up):
* the known minimum per broker: the test cluster's own restart (``python -m kafka_testbed restart``, timed directly,
  median) plus the cluster's catch-up time;
* the role through ``ansible-playbook`` with all 3 brokers needing a restart, and the same play with none needing
  one (the playbook's fixed cost); overhead per broker = (total - fixed cost - 3 x minimum) / 3, median over runs;
* a baseline of a common practice: restart a broker, wait a fixed 20 s, then poll every 5 s until the cluster is
  healthy, then the next broker (a small playbook, run once).
Run from the repository root: ``.venv/bin/python bench/rolling_restart_bench.py [--runs N]``.
"""

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from xml.etree import ElementTree

import yaml
from local_ansible import (
    PLAYBOOK,
    cluster_healthy,
    ensure_collection_link,
    measure_in_scratch_dir,
    playbook_environment,
    progress,
    timed_playbook,
    wait_healthy,
    without_interrupts,
    write_yaml,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
sys.path[:0] = [ROOT, COLLECTIONS]

from kafka_testbed.cluster import Cluster, process_alive  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.testing import base_port_for  # noqa: E402  pylint: disable=wrong-import-position

BROKERS = 3
TOPIC = "rolled"
OVERHEAD_TARGET_S = 2.0
SPEEDUP_TARGET = 3.0
BASELINE_PAUSE_S = 20
BASELINE_POLL_S = 5


def _driver(cluster):
    """The restart command for broker {node_id}, as the role's command method takes it."""
    return (
        " ".join(
            shlex.quote(part) for part in (sys.executable, "-m", "kafka_testbed", "restart", "--dir", cluster.directory)
        )
        + " --broker {node_id}"
    )


def _env(workdir):
    return playbook_environment(
        COLLECTIONS,
        ANSIBLE_ROLES_PATH=os.path.join(ROOT, "roles"),
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
        ANSIBLE_CALLBACKS_ENABLED="ansible.builtin.junit",
        JUNIT_OUTPUT_DIR=os.path.join(workdir, "junit"),
    )


def _connection(cluster):
    return {
        "bootstrap_servers": cluster.info["bootstrap_servers"].split(","),
        "security_protocol": cluster.info["security_protocol"],
    }


def _incarnations(cluster):
    """node id -> pid of the running nodes, as the launcher recorded them."""
    current = Cluster(cluster.directory)
    return {
        entry["id"]: entry["pid"]
        for entry in current.info["brokers"]
        if entry.get("pid") and process_alive(entry["pid"])
    }


def _create_topic(cluster):
    from confluent_kafka.admin import AdminClient, NewTopic  # pylint: disable=import-outside-toplevel

    admin = AdminClient({"bootstrap.servers": cluster.info["bootstrap_servers"]})
    admin.create_topics([NewTopic(TOPIC, BROKERS, BROKERS)])[TOPIC].result(15)


def _wait_healthy(cluster):
    """Seconds until the cluster is healthy (every broker active, no under-replicated partition), polled tightly."""
    return wait_healthy(cluster.info["bootstrap_servers"], range(1, BROKERS + 1), timeout=60.0)


def _direct_restart(cluster, node_id):
    """The test cluster's own restart of one broker, and from its start how long until the cluster is healthy again."""
    command = shlex.split(_driver(cluster).replace("{node_id}", str(node_id)))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=120)
    restart = time.perf_counter() - started
    return restart, restart + _wait_healthy(cluster)


def _inventory(cluster, needs_restart):
    hosts = {}
    for entry in cluster.info["brokers"]:
        hosts[f"broker-{entry['id']}"] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "kafka_node_id": entry["id"],
            "kafka_listener_host": entry["host"],
            "kafka_listener_port": entry["port"],
            "kafka_restart_needed": entry["id"] in needs_restart,
            "kafka_process_roles": ",".join(entry.get("roles", ["broker"])),
        }
    return {"all": {"hosts": hosts}}


def _playbook(workdir, name, inventory, playbook):
    """Run one playbook; wall time and the junit task durations (task name -> seconds, summed)."""
    junit = os.path.join(workdir, "junit")
    shutil.rmtree(junit, ignore_errors=True)
    command = [
        PLAYBOOK,
        "-i",
        write_yaml(os.path.join(workdir, f"{name}-inventory.yml"), inventory),
        write_yaml(os.path.join(workdir, f"{name}-play.yml"), playbook),
    ]
    elapsed, result = timed_playbook(command, _env(workdir), workdir, 900, f"{name} playbook")
    tasks = {}
    for report in os.listdir(junit) if os.path.isdir(junit) else []:
        for case in ElementTree.parse(os.path.join(junit, report)).getroot().iter("testcase"):
            tasks[case.get("name")] = tasks.get(case.get("name"), 0.0) + float(case.get("time", 0))
    return elapsed, tasks, result.stdout


def _roll(cluster, workdir, needs_restart, role_vars):
    variables = {
        "rolling_restart_method": "command",
        "rolling_restart_command": _driver(cluster),
        "rolling_restart_health_timeout": 120,
        "rolling_restart_port_timeout": 60,
        "kafka_connection": _connection(cluster),
        # The test cluster's nodes are processes of this user, whose classpath holds the quota plugin's jar already.
        "kafka_become": False,
        "kafka_libs_dir": os.path.dirname(cluster.info["quota_plugin_jar"]),
        "quota_plugin_jar_source": "none",
    }
    variables.update(role_vars)
    play = [
        {
            "name": "roll",
            "hosts": "all",
            "gather_facts": False,
            "vars": variables,
            "module_defaults": {"group/headroom.kafka.kafka": "{{ kafka_connection }}"},
            "roles": [{"role": "rolling_restart"}],
        }
    ]
    before = _incarnations(cluster)
    elapsed, tasks, stdout = _playbook(
        workdir, "roll" if needs_restart else "noop", _inventory(cluster, needs_restart), play
    )
    after = _incarnations(cluster)
    restarted = {node_id for node_id in before if after.get(node_id) != before[node_id]}
    if restarted != set(needs_restart):
        raise RuntimeError(f"expected brokers {sorted(needs_restart)} restarted, got {sorted(restarted)}")
    if not needs_restart and "No node needs a restart" not in stdout:
        raise RuntimeError("the no-op run did not report that nothing needs a restart")
    return elapsed, tasks


def _baseline(cluster, workdir):
    """Restart, pause a fixed 20 s, then poll every 5 s until healthy; broker after broker."""
    one = [
        {
            "name": "Restart broker {{ broker_id }}",
            "ansible.builtin.command": _driver(cluster).replace("{node_id}", "{{ broker_id }}"),
            "changed_when": True,
        },
        {
            "name": "Wait a fixed time after restarting broker {{ broker_id }}",
            "ansible.builtin.pause": {"seconds": BASELINE_PAUSE_S},
        },
        {
            "name": "Poll until healthy after restarting broker {{ broker_id }}",
            "headroom.kafka.cluster_health_info": {"expected_brokers": list(range(1, BROKERS + 1))},
            "register": "health",
            "until": "health.healthy | default(false)",
            "retries": 60,
            "delay": BASELINE_POLL_S,
        },
    ]
    tasks_file = write_yaml(os.path.join(workdir, "baseline-one.yml"), one)
    play = [
        {
            "name": "baseline",
            "hosts": "localhost",
            "gather_facts": False,
            "vars": {"kafka_connection": _connection(cluster), "ansible_python_interpreter": sys.executable},
            "module_defaults": {"group/headroom.kafka.kafka": "{{ kafka_connection }}"},
            "tasks": [
                {
                    "name": "Restart one broker at a time",
                    "ansible.builtin.include_tasks": tasks_file,
                    "loop": list(range(1, BROKERS + 1)),
                    "loop_control": {"loop_var": "broker_id"},
                }
            ],
        }
    ]
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}}}}
    before = _incarnations(cluster)
    elapsed = _playbook(workdir, "baseline", inventory, play)[0]
    after = _incarnations(cluster)
    if any(after.get(node_id) == pid for node_id, pid in before.items() if node_id <= BROKERS):  # not the controller
        raise RuntimeError("the baseline did not restart every broker")
    return elapsed


def _phase(tasks, prefix):
    return sum(seconds for name, seconds in tasks.items() if prefix in name)


def _one_run(cluster, workdir, label, role_vars):
    """Direct restarts of every broker, the play with nothing to restart, and the rolling restart of every broker."""
    progress(f"{label}: direct restarts")
    direct = [_direct_restart(cluster, node_id) for node_id in range(1, BROKERS + 1)]
    progress(f"{label}: playbook with nothing to restart")
    fixed = _roll(cluster, workdir, set(), role_vars)[0]
    progress(f"{label}: rolling restart of {BROKERS} brokers")
    total, tasks = _roll(cluster, workdir, set(range(1, BROKERS + 1)), role_vars)
    progress(f"  total {total:.2f} s, fixed cost {fixed:.2f} s")
    return {
        "restarts": [row[0] for row in direct],
        "to_healthy": [row[1] for row in direct],
        "fixed": fixed,
        "total": total,
        "breakdown": {
            "restart": _phase(tasks, "Restart with the restart command") / BROKERS,
            "port": _phase(tasks, "Wait for the listener port") / BROKERS,
            "health": _phase(tasks, "Wait until the cluster is healthy again") / BROKERS,
        },
    }


def _measure(args, workdir):
    cluster = Cluster(tempfile.mkdtemp(prefix="cluster-", dir=workdir), args.engine)
    cluster.create(BROKERS, base_port=base_port_for(BROKERS, engine=cluster.engine), catch_up_ms=args.catch_up_ms)
    try:
        cluster.up(120)
        _create_topic(cluster)
        _wait_healthy(cluster)
        cluster_healthy(cluster.info["bootstrap_servers"], range(1, BROKERS + 1))  # warm the imports
        role_vars = {
            name: value
            for name, value in (
                ("rolling_restart_poll_interval", args.poll_interval),
                ("rolling_restart_healthy_polls", args.healthy_polls),
            )
            if value is not None
        }
        runs = [
            _one_run(cluster, workdir, f"run {number}/{args.runs}", role_vars) for number in range(1, args.runs + 1)
        ]
        baseline = None
        if not args.no_baseline:
            progress(f"baseline: restart, pause {BASELINE_PAUSE_S} s, poll every {BASELINE_POLL_S} s (about 70 s)")
            baseline = _baseline(cluster, workdir)
    finally:
        without_interrupts(cluster.down)
    restart = statistics.median(value for run in runs for value in run["restarts"])
    to_healthy = statistics.median(value for run in runs for value in run["to_healthy"])
    # The model holds replicas out of the ISR for catch_up_ms; real replicas catch up at their own pace, measured
    # directly as the restart until the cluster is healthy again.
    minimum = restart + args.catch_up_ms / 1000 if cluster.engine == "sim" else to_healthy
    overheads = [(run["total"] - run["fixed"] - BROKERS * minimum) / BROKERS for run in runs]
    return {
        "engine": cluster.engine,
        "restart": restart,
        "catch_up": minimum - restart,
        "minimum": minimum,
        "to_healthy": statistics.median(value for run in runs for value in run["to_healthy"]),
        "totals": [run["total"] for run in runs],
        "total": statistics.median(run["total"] for run in runs),
        "fixed": statistics.median(run["fixed"] for run in runs),
        "overheads": overheads,
        "overhead": statistics.median(overheads),
        "breakdown": {key: statistics.median(run["breakdown"][key] for run in runs) for key in runs[0]["breakdown"]},
        "baseline": baseline,
    }


def _report(args, figures):
    rows = [
        ("test cluster restart of one broker (kafka_testbed restart, median)", figures["restart"]),
        (
            "catch-up time (the model's catch_up_ms; on real Kafka measured: healthy again after the restart)",
            figures["catch_up"],
        ),
        ("known minimum per broker (restart + catch-up)", figures["minimum"]),
        ("observed: restart start until healthy, 50 ms polling (median)", figures["to_healthy"]),
        ("role, per broker: restart task", figures["breakdown"]["restart"]),
        ("role, per broker: wait for the listener port task", figures["breakdown"]["port"]),
        ("role, per broker: wait until healthy task", figures["breakdown"]["health"]),
        ("playbook fixed cost (nothing to restart, median)", figures["fixed"]),
        (f"role total, {BROKERS} brokers (median)", figures["total"]),
        ("role overhead per broker above the minimum (median)", figures["overhead"]),
    ]
    if figures["baseline"] is not None:
        rows.append(
            (f"baseline total: pause {BASELINE_PAUSE_S} s, poll every {BASELINE_POLL_S} s (1 run)", figures["baseline"])
        )
    print(f"cores: {os.cpu_count()}")
    print(
        f"cluster: {figures['engine']} engine, {BROKERS} brokers, topic {TOPIC!r} {BROKERS} partitions x RF {BROKERS}, "
        f"catch_up_ms {args.catch_up_ms} (the model's), runs {args.runs}"
    )
    with open(os.path.join(ROOT, "roles", "rolling_restart", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    interval = (
        f"{args.poll_interval} s"
        if args.poll_interval is not None
        else f"{defaults['rolling_restart_poll_interval']} s (default)"
    )
    polls = (
        str(args.healthy_polls)
        if args.healthy_polls is not None
        else f"{defaults['rolling_restart_healthy_polls']} (default)"
    )
    print(f"role settings: poll interval {interval}, healthy polls in a row {polls}")
    width = max(len(label) for label, value in rows)
    print(f"{'figure':<{width}} {'seconds':>8}")
    for label, value in rows:
        print(f"{label:<{width}} {value:>8.2f}")
    print(
        "role totals per run: "
        + ", ".join(f"{value:.2f}" for value in figures["totals"])
        + "; overhead per broker per run: "
        + ", ".join(f"{value:.2f}" for value in figures["overheads"])
    )
    verdict = "PASS" if figures["overhead"] <= OVERHEAD_TARGET_S else "FAIL"
    print(f"overhead per broker: {figures['overhead']:.2f} s (target <= {OVERHEAD_TARGET_S:.1f} s): {verdict}")
    if figures["baseline"] is not None:
        ratio = figures["baseline"] / figures["total"]
        verdict = "PASS" if ratio >= SPEEDUP_TARGET else "FAIL"
        print(f"baseline / role total: {ratio:.2f}x (target >= {SPEEDUP_TARGET:.1f}x): {verdict}")


def main():
    """Measure, print the figures and a verdict per target; exit status 0 done, 130 interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--engine", choices=("kafka", "sim"), default=None, help="test cluster engine (default: real Kafka)"
    )
    parser.add_argument(
        "--catch-up-ms", type=int, default=2000, help="the model's catch-up time (real replicas catch up on their own)"
    )
    parser.add_argument(
        "--poll-interval", type=float, help="rolling_restart_poll_interval for the role (default: the role's)"
    )
    parser.add_argument(
        "--healthy-polls", type=int, help="rolling_restart_healthy_polls for the role (default: the role's)"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the 20 s pause baseline (about 70 s)")
    args = parser.parse_args()
    ensure_collection_link(ROOT, COLLECTIONS)
    figures = measure_in_scratch_dir(lambda workdir: _measure(args, workdir), "bench-rolling-restart-")
    if figures is None:
        return 130
    _report(args, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
