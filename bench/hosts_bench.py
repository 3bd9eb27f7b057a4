"""The fleet of real test hosts: image build, fleet start, site.yml over SSH, and the rolling restart through real
systemd against cp-ansible's way, in one run.

Measured, on a fleet of 3 broker hosts and 1 controller host started here (containers with systemd and sshd, Kafka
under kafka.service):
* the image: built cold (``--cold`` removes the cached images and root filesystem first) and found cached;
* the fleet's start until every broker is registered unfenced;
* ``site.yml`` from the bare fleet (installs the quota plugin and the JMX exporter, restarts every node) and a second
  run (changes nothing);
* the rolling restart of every broker through systemd (a topic of 3 partitions x RF 3, so that each restart leaves
  partitions under-replicated until the broker has caught up): the known minimum per broker (``systemctl restart``
  on the host, then polled every 50 ms until the cluster is healthy), the role's total with every broker needing a
  restart and with none (the play's fixed cost), overhead per broker = (total - fixed - 3 x minimum) / 3; and
  cp-ansible's way in one run: restart a broker through systemd, wait a fixed 20 s, poll every 5 s until no
  partition is under-replicated, then the next broker.
Run from the repository root: ``.venv/bin/python bench/hosts_bench.py [--cold] [--runs N] [--no-baseline]``.
"""

import argparse
import os
import shutil
import statistics
import sys
import time

from local_ansible import (
    PLAYBOOK,
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

from kafka_testbed.hosts import image  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.hosts.docker import docker, ensure_daemon  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.hosts.fleet import HostFleet  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.kafka_libs import ensure_libs  # noqa: E402  pylint: disable=wrong-import-position

BROKERS = 3
TOPIC = "rolled"
BASELINE_PAUSE_S = 20
BASELINE_POLL_S = 5
SITE = os.path.join(ROOT, "playbooks", "site.yml")
SITE_VARS = {
    "kafka_quotas": {"type": "strimzi", "producer_byte_rate": 1 << 20, "min_available_ratio_per_volume": 0.1},
    "kafka_jmx_exporter": True,
    "rolling_restart_health_timeout": 120,
}


def run_playbook(inventories, playbook, workdir, *args):
    """ansible-playbook with these inventories (and ``args``) as a user runs it; its wall seconds."""
    command = [PLAYBOOK]
    for inventory in inventories:
        command += ["-i", inventory]
    env = playbook_environment(COLLECTIONS, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return timed_playbook([*command, playbook, *args], env, workdir, 1800, playbook)[0]


def _image_figures(cold):
    libs = ensure_libs()
    figures = {}
    if cold:
        for tag in docker("images", "--format", "{{.Repository}}:{{.Tag}}").split():
            if tag.startswith(("headroom-host-base:", "headroom-kafka-host:")):
                docker("rmi", "-f", tag, check=False)
        shutil.rmtree(image.IMAGE_DIR, ignore_errors=True)
        progress("image: cold build (debootstrap, import, Kafka layer)")
        started = time.perf_counter()
        image.kafka_image(libs)
        figures["image_cold_s"] = time.perf_counter() - started
    image.kafka_image(libs)
    started = time.perf_counter()
    image.kafka_image(libs)
    figures["image_cached_s"] = time.perf_counter() - started
    return figures


def _wait_healthy(fleet):
    """Seconds until the fleet is healthy (every broker active, no under-replicated partition), polled tightly."""
    return wait_healthy(fleet.info["bootstrap_servers"], range(1, BROKERS + 1), timeout=120.0)


def _direct_restart(fleet, node_id):
    """systemctl restart on the host, and from its start until the cluster is healthy again."""
    started = time.perf_counter()
    fleet.systemctl(node_id, "restart", "kafka")
    return time.perf_counter() - started + _wait_healthy(fleet)


def _roll(fleet, workdir, needs_restart):
    hosts = {
        entry["inventory_host"]: {"kafka_restart_needed": entry["id"] in needs_restart}
        for entry in fleet.info["brokers"]
    }
    extra = write_yaml(os.path.join(workdir, "roll-vars.yml"), {"kafka": {"hosts": hosts}})
    play = [
        {
            "name": "Roll",
            "hosts": "kafka",
            "gather_facts": False,
            "become": True,
            "module_defaults": {"group/headroom.kafka.kafka": "{{ kafka_connection }}"},
            "roles": [{"role": "headroom.kafka.rolling_restart"}],
        }
    ]
    return run_playbook([fleet.info["inventory"], extra], write_yaml(os.path.join(workdir, "roll.yml"), play), workdir)


def cp_ansible_restart(fleet, workdir, controllers=False):
    """cp-ansible's way: restart through systemd, a fixed 20 s wait, then poll every 5 s; one broker at a time (and
    each controller-only node too with ``controllers``)."""
    restarted = "true" if controllers else "'broker' in kafka_process_roles"
    play = [
        {
            "name": "Restart like cp-ansible",
            "hosts": "kafka",
            "serial": 1,
            "gather_facts": False,
            "become": True,
            "module_defaults": {"group/headroom.kafka.kafka": "{{ kafka_connection }}"},
            "tasks": [
                {
                    "name": "Restart the broker",
                    "ansible.builtin.systemd_service": {"name": "kafka", "state": "restarted"},
                    "when": restarted,
                },
                {
                    "name": "Wait a fixed time",
                    "ansible.builtin.pause": {"seconds": BASELINE_PAUSE_S},
                    "when": restarted,
                },
                {
                    "name": "Poll until no partition is under-replicated",
                    "headroom.kafka.cluster_health_info": {"expected_brokers": list(range(1, BROKERS + 1))},
                    "delegate_to": "localhost",
                    "become": False,
                    "register": "health",
                    "until": "health.healthy | default(false)",
                    "retries": 60,
                    "delay": BASELINE_POLL_S,
                    "when": restarted,
                },
            ],
        }
    ]
    return run_playbook([fleet.info["inventory"]], write_yaml(os.path.join(workdir, "baseline.yml"), play), workdir)


def _measure(args, workdir):
    ensure_daemon(image.IMAGE_DIR)
    figures = _image_figures(args.cold)
    fleet = HostFleet(os.path.join(workdir, "fleet"))
    try:
        progress("fleet: 3 broker hosts and 1 controller host")
        fleet.up_fleet(BROKERS, 1)
        figures["fleet_start_s"] = fleet.info["timings"]["total_seconds"]
        site_vars = dict(SITE_VARS, quota_plugin_admin={"bootstrap_servers": fleet.info["bootstrap_servers"]})
        site_inventory = write_yaml(os.path.join(workdir, "site-vars.yml"), {"kafka": {"vars": site_vars}})
        progress("site.yml from the bare fleet")
        figures["site_first_s"] = run_playbook([fleet.info["inventory"], site_inventory], SITE, workdir)
        progress("site.yml again")
        figures["site_second_s"] = run_playbook([fleet.info["inventory"], site_inventory], SITE, workdir)
        from confluent_kafka.admin import AdminClient, NewTopic  # pylint: disable=import-outside-toplevel

        admin = AdminClient({"bootstrap.servers": fleet.info["bootstrap_servers"]})
        admin.create_topics([NewTopic(TOPIC, BROKERS, BROKERS)])[TOPIC].result(30)
        _wait_healthy(fleet)
        runs = []
        for number in range(1, args.runs + 1):
            progress(
                f"run {number}/{args.runs}: direct restarts, a roll with nothing to restart, a roll of every broker"
            )
            minimum = statistics.median(_direct_restart(fleet, node_id) for node_id in range(1, BROKERS + 1))
            fixed = _roll(fleet, workdir, set())
            total = _roll(fleet, workdir, set(range(1, BROKERS + 1)))
            runs.append({"minimum": minimum, "fixed": fixed, "total": total})
        figures["runs"] = runs
        figures["minimum_s"] = statistics.median(run["minimum"] for run in runs)
        figures["role_total_s"] = statistics.median(run["total"] for run in runs)
        figures["role_fixed_s"] = statistics.median(run["fixed"] for run in runs)
        figures["overhead_per_broker_s"] = statistics.median(
            (run["total"] - run["fixed"] - BROKERS * run["minimum"]) / BROKERS for run in runs
        )
        if not args.no_baseline:
            progress(f"baseline: restart, wait {BASELINE_PAUSE_S} s, poll every {BASELINE_POLL_S} s")
            figures["baseline_total_s"] = cp_ansible_restart(fleet, workdir)
    finally:
        without_interrupts(fleet.down)
    return figures


def _report(figures):
    rows = [
        ("image, cold build (debootstrap, import, Kafka layer)", figures.get("image_cold_s")),
        ("image, cached", figures["image_cached_s"]),
        ("fleet start until every broker is unfenced (3 brokers, 1 controller)", figures["fleet_start_s"]),
        ("site.yml from the bare fleet", figures["site_first_s"]),
        ("site.yml second run (changes nothing)", figures["site_second_s"]),
        ("known minimum per broker: systemctl restart until healthy (median)", figures["minimum_s"]),
        ("rolling_restart, nothing to restart (fixed cost, median)", figures["role_fixed_s"]),
        (f"rolling_restart of {BROKERS} brokers (median)", figures["role_total_s"]),
        ("overhead per broker above the minimum (median)", figures["overhead_per_broker_s"]),
        (
            f"cp-ansible's way: restart, {BASELINE_PAUSE_S} s, poll every {BASELINE_POLL_S} s",
            figures.get("baseline_total_s"),
        ),
    ]
    print(f"cores: {os.cpu_count()}")
    width = max(len(label) for label, _value in rows)
    print(f"{'figure':<{width}} {'seconds':>8}")
    for label, value in rows:
        print(f"{label:<{width}} {'-' if value is None else f'{value:.2f}':>8}")
    if figures.get("baseline_total_s"):
        print(f"cp-ansible's way / rolling_restart: {figures['baseline_total_s'] / figures['role_total_s']:.2f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="build the image from nothing first (about 1 min)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-baseline", action="store_true", help="skip cp-ansible's way (about 80 s)")
    args = parser.parse_args()
    ensure_collection_link(ROOT, COLLECTIONS)
    figures = measure_in_scratch_dir(lambda workdir: _measure(args, workdir), "bench-hosts-")
    if figures is None:
        return 130
    _report(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
