"""Rolling restarts under live traffic on a fleet of real hosts: site.yml against cp-ansible's way, what a producer
sees.

On a fleet of 3 broker hosts and 1 controller host started here (containers with systemd and sshd, Kafka under
kafka.service), configured once by site.yml, the traffic witness (``kafka_testbed.witness``: 400 records a second,
``acks=all``, idempotent, a topic of replication factor 3 and ``min.insync.replicas`` 2) runs while

* ``site.yml`` rolls every node (the brokers, then the controller) through systemd, ``--rolls`` times in a row
  (default 10), health-gated by the rolling_restart role;
* cp-ansible's way rolls every node once: ``systemctl restart``, a fixed 20 s wait, then a poll every 5 s until no
  partition is under-replicated, one node at a time.

Reported for each: the time per roll, the longest wait for an acknowledgement of the records sent around each restart
(from the previous node's start to this one's) and the longest gap between any two acknowledgements there, records
acknowledged but lost, duplicated and refused (all must be 0). Run from the repository root:
``.venv/bin/python bench/rolling_restart_traffic_bench.py [--rolls N]``.
"""

import argparse
import itertools
import json
import os
import statistics
import sys
import time

from local_ansible import (
    ensure_collection_link,
    measure_in_scratch_dir,
    progress,
    without_interrupts,
    write_yaml,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
sys.path[:0] = [ROOT, COLLECTIONS]

from hosts_bench import SITE, SITE_VARS, cp_ansible_restart, run_playbook  # noqa: E402

from kafka_testbed.client_config import confluent_config  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.hosts import image  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.hosts.docker import ensure_daemon  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.hosts.fleet import HostFleet  # noqa: E402  pylint: disable=wrong-import-position
from kafka_testbed.witness import Witness  # noqa: E402  pylint: disable=wrong-import-position

BROKERS = 3
ROLLS = 10


def _started(fleet):
    """{node id: when its unit last started its main process}, on the witness's clock."""
    return {entry["id"]: fleet.main_process_started(entry["id"]) for entry in fleet.info["brokers"]}


def _under_traffic(fleet, rolls, roll):
    """``roll()`` ``rolls`` times under the witness: the seconds of each roll, the restarts' start times, the report."""
    seconds, restarts = [], []
    with Witness(confluent_config(fleet)) as witness:
        for number in range(1, rolls + 1):
            before = _started(fleet)
            began = time.perf_counter()
            roll()
            seconds.append(time.perf_counter() - began)
            after = _started(fleet)
            if any(after[node] <= before[node] for node in before):
                raise RuntimeError(f"roll {number} did not restart every node: {before} -> {after}")
            restarts += sorted(after.values())
            progress(f"  roll {number}/{rolls}: {seconds[-1]:.1f} s")
    return seconds, restarts, witness.report


def _figures(label, seconds, restarts, report):
    windows = list(itertools.pairwise([report.began, *restarts]))
    waits = [report.longest_wait_in(start, end) for start, end in windows]
    stalls = [report.longest_stall_in(start, end) for start, end in windows]
    return {
        "label": label,
        "rolls": len(seconds),
        "restarts": len(restarts),
        "roll_seconds": [round(value, 2) for value in seconds],
        "roll_seconds_median": round(statistics.median(seconds), 2),
        "longest_wait_per_restart": [round(value, 3) for value in waits],
        "longest_wait_max": round(max(waits), 3),
        "longest_wait_median": round(statistics.median(waits), 3),
        "longest_stall_per_restart": [round(value, 3) for value in stalls],
        "longest_stall_max": round(max(stalls), 3),
        "produced": report.produced,
        "acknowledged": report.acknowledged,
        "lost": len(report.missing),
        "duplicates": len(report.duplicates),
        "refused": sum(report.refused.values()),
    }


def _measure(args, workdir):
    ensure_daemon(image.IMAGE_DIR)
    fleet = HostFleet(os.path.join(workdir, "fleet"))
    try:
        progress(f"fleet: {BROKERS} broker hosts and 1 controller host")
        fleet.up_fleet(BROKERS, 1)
        site_vars = dict(
            SITE_VARS,
            quota_plugin_admin={"bootstrap_servers": fleet.info["bootstrap_servers"]},
            kafka_usage_replication_factor=BROKERS,
        )
        inventories = [
            fleet.info["inventory"],
            write_yaml(os.path.join(workdir, "site-vars.yml"), {"kafka": {"vars": site_vars}}),
        ]
        progress("site.yml from the bare fleet")
        run_playbook(inventories, SITE, workdir)
        every_node = ["-e", json.dumps({"kafka_restart_needed": True})]
        progress(f"site.yml rolling every node, {args.rolls} times under traffic")
        role = _figures(
            "site.yml (rolling_restart)",
            *_under_traffic(fleet, args.rolls, lambda: run_playbook(inventories, SITE, workdir, *every_node)),
        )
        progress("cp-ansible's way, every node once under traffic")
        baseline = _figures(
            "cp-ansible's way",
            *_under_traffic(fleet, 1, lambda: cp_ansible_restart(fleet, workdir, controllers=True)),
        )
    finally:
        without_interrupts(fleet.down)
    return {"role": role, "baseline": baseline}


def _report(figures):
    print(f"cores: {os.cpu_count()}; fleet: {BROKERS} broker hosts and 1 controller host, Kafka under systemd")
    header = (
        "way",
        "rolls",
        "s per roll (median)",
        "longest wait per restart: max / median",
        "longest gap",
        "lost",
        "duplicates",
        "refused",
    )
    print(" | ".join(header))
    for way in (figures["role"], figures["baseline"]):
        print(
            f"{way['label']} | {way['rolls']} | {way['roll_seconds_median']:.1f} | {way['longest_wait_max']:.2f} / "
            f"{way['longest_wait_median']:.2f} s | {way['longest_stall_max']:.2f} s | {way['lost']} | "
            f"{way['duplicates']} | {way['refused']}"
        )
    for way in (figures["role"], figures["baseline"]):
        print(f"{way['label']}: seconds per roll {way['roll_seconds']}")
        print(f"{way['label']}: longest wait per restart {way['longest_wait_per_restart']}")
        print(f"{way['label']}: {way['acknowledged']:,} of {way['produced']:,} records acknowledged")
    ratio = figures["baseline"]["roll_seconds_median"] / figures["role"]["roll_seconds_median"]
    print(f"cp-ansible's way / site.yml per roll: {ratio:.2f}x")
    verdict = all(way["lost"] == 0 and way["duplicates"] == 0 for way in (figures["role"], figures["baseline"]))
    print(f"{'PASS' if verdict else 'FAIL'}  0 acknowledged records lost and none duplicated, both ways")
    return verdict


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rolls", type=int, default=ROLLS, help=f"rolls of site.yml in a row (default {ROLLS})")
    args = parser.parse_args()
    ensure_collection_link(ROOT, COLLECTIONS)
    figures = measure_in_scratch_dir(lambda workdir: _measure(args, workdir), "bench-rolling-traffic-")
    if figures is None:
        return 130
    return 0 if _report(figures) else 1


if __name__ == "__main__":
    sys.exit(main())
