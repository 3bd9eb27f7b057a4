"""The usage_pipeline role with a schedule, over SSH onto a host with systemd: it installs the job as a service and a
timer and enables the timer, and a second run changes nothing; a start of the service runs the job to its end (its
outputs in a directory whose name has a space, its arguments passed by systemd as they were given, % and $ and quotes
included), and a second start with nothing new starts no Spark; a changed schedule moves the timer's next run; a
schedule systemd does not read fails the play naming it, before anything changes.

The host sees this machine's Python with PySpark, the checkout and the installed collection read-only at the same
paths: the Spark driver's host of a user, with the collection and a Python with PySpark installed."""

import json
import os
import sys

import pytest
from fleet_playbooks import changed_counts, installed_collections, run_playbook

from kafka_testbed.traffic import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "usage_pipeline.yml")
HOST = 1  # the playbook's kafka[0]
UNIT = "headroom-usage-pipeline"
WORK = "/srv/headroom"
HISTORY = f"{WORK}/history"  # generated: snapshots.jsonl, traffic.jsonl, quotas.json
OUT = f"{WORK}/usage out"
STATE = f"{WORK}/state"
# systemd expands % and $ in every word of ExecStart=, quoted or not: the job must get this value as it is.
CLUSTER = 'fleet "a" at 50%n of ${HOME}'
# What an environment file must carry exactly: non-ASCII, quotes, backslash, dollar, percent, backquote.
SECRET = "pä\"s\\$w%rd`x'"

SECRETS_FILE = f"/etc/headroom-kafka/{UNIT}.env"
# Far in the future, so that the timer itself never starts a run during the test (the test starts the service).
SCHEDULE = "2099-01-01 00:00:00 UTC"
MOVED = "2098-06-01 12:30:00 UTC"
START_SECONDS = 600  # one run of the job on a host of a slow machine: a JVM, a Spark session, a small history


def shared_paths():
    """What the host must see for this machine's Python with PySpark to run there: the checkout, the virtual
    environment and the installation it was made from (unless a distribution's /usr, which the host has), and the
    collection as installed for the fleet's plays."""
    paths = [ROOT, installed_collections()]
    for prefix in (os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)):
        if prefix != "/usr" and not any(prefix == path or prefix.startswith(path + os.sep) for path in paths):
            paths.append(prefix)
    return paths


@pytest.fixture(scope="module")
def host(fleet_factory):
    fleet = fleet_factory(1, 1, read_only_paths=shared_paths())
    fleet.exec(HOST, "install", "-d", "-m", "0755", WORK)
    fleet.exec(
        HOST,
        sys.executable,
        "-m",
        "headroom_pipeline",
        "generate",
        "--out",
        HISTORY,
        "--clusters",
        "1",
        "--brokers",
        "2",
        "--hours",
        "4",
        timeout=300,
    )
    return fleet


def apply_role(fleet, directory, name, **variables):
    path = os.path.join(directory, f"{name}.json")
    settings = {
        "usage_pipeline_python": sys.executable,
        "usage_pipeline_collection_root": os.path.join(
            installed_collections(), "ansible_collections", "headroom", "kafka"
        ),
        "usage_pipeline_chdir": WORK,
        "usage_pipeline_snapshots": f"{HISTORY}/snapshots.jsonl",
        "usage_pipeline_traffic": f"{HISTORY}/traffic.jsonl",
        "usage_pipeline_quotas": f"{HISTORY}/quotas.json",
        "usage_pipeline_out": OUT,
        "usage_pipeline_state": STATE,
        "usage_pipeline_cluster": CLUSTER,
        "usage_pipeline_master": "local[2]",
        "usage_pipeline_report": False,
        "usage_pipeline_schedule": SCHEDULE,
        "usage_pipeline_sasl_password": SECRET,
        **variables,
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(settings, handle)
    return run_playbook(fleet.info["inventory"], PLAYBOOK, "-e", f"@{path}", timeout=600)


def changed_count(stdout):
    """The changed= of the play's one host (kafka[0])."""
    (count,) = changed_counts(stdout).values()
    return count


def timer(fleet, name):
    return fleet.unit_property(HOST, f"{UNIT}.timer", name)


def next_run(fleet):
    """The timer's next run as systemctl prints it, without the weekday ('2099-01-01 00:00:00 UTC'; the hosts run on
    UTC)."""
    text = timer(fleet, "NextElapseUSecRealtime")
    return text.split(" ", 1)[1]


def last_run_output(fleet):
    """What the service's last run wrote to the journal (its invocation's lines, whatever the second it ran in)."""
    invocation = fleet.unit_property(HOST, f"{UNIT}.service", "InvocationID")
    return fleet.exec(HOST, "journalctl", f"_SYSTEMD_INVOCATION_ID={invocation}", "-o", "cat", "--no-pager")


def result_line(fleet):
    """The JSON result line of the service's last run (journald may index a stream's last line a moment after the run
    ended)."""

    def lines():
        return [json.loads(line) for line in last_run_output(fleet).splitlines() if line.startswith("{")]

    (line,) = wait_until(lines, 30, what="the run's result line in the journal")
    return line


def start_service(fleet):
    """systemctl start of the Type=oneshot service: it returns once the run has ended."""
    fleet.exec(HOST, "systemctl", "start", f"{UNIT}.service", timeout=START_SECONDS)


def test_the_role_installs_an_enabled_timer_and_a_second_run_changes_nothing(host, tmp_path):
    first = apply_role(host, tmp_path, "first")
    assert first.returncode == 0, first.stdout[-3000:]
    assert changed_count(first.stdout) > 0
    assert SECRET not in first.stdout + first.stderr
    # The password reaches the service from a file only root reads, never from the unit.
    assert host.exec(HOST, "stat", "-c", "%a %U %G", SECRETS_FILE).split() == ["600", "root", "root"]
    assert SECRET not in host.exec(HOST, "cat", f"/etc/systemd/system/{UNIT}.service")
    assert SECRETS_FILE in host.unit_property(HOST, f"{UNIT}.service", "EnvironmentFiles")
    # As systemd reads the file into a service's environment: the password exactly.
    printed = host.exec(
        HOST,
        "systemd-run",
        "--wait",
        "--pipe",
        "--quiet",
        "-p",
        f"EnvironmentFile={SECRETS_FILE}",
        "/usr/bin/printenv",
        "HEADROOM_KAFKA_SASL_PASSWORD",
    )
    assert printed == SECRET + "\n"
    assert host.systemctl(HOST, "is-enabled", f"{UNIT}.timer").strip() == "enabled"
    assert timer(host, "ActiveState") == "active"
    assert next_run(host) == SCHEDULE
    # The play installed the job and did not run it.
    assert host.exec(HOST, "ls", WORK).split() == ["history"]
    second = apply_role(host, tmp_path, "second")
    assert second.returncode == 0, second.stdout[-3000:]
    assert changed_count(second.stdout) == 0, second.stdout[-3000:]


def test_a_start_of_the_service_runs_the_job_and_a_second_start_with_nothing_new_starts_no_spark(host, tmp_path):
    assert apply_role(host, tmp_path, "installed").returncode == 0
    start_service(host)
    assert host.unit_property(HOST, f"{UNIT}.service", "Result") == "success"
    summary = json.loads(host.exec(HOST, "cat", f"{OUT}/summary.json"))
    assert summary["rows_used"] > 0 and summary["rows_rejected"] == 0
    assert summary["settings"]["cluster"] == CLUSTER
    assert summary["settings"]["out"] == OUT
    first = result_line(host)
    assert first["incremental"]["mode"] == "full"
    start_service(host)
    second = result_line(host)
    assert second["incremental"]["mode"] == "unchanged"
    assert "nothing to do" in last_run_output(host)


def test_a_changed_schedule_moves_the_next_run_and_a_schedule_systemd_does_not_read_changes_nothing(host, tmp_path):
    moved = apply_role(host, tmp_path, "moved", usage_pipeline_schedule=MOVED)
    assert moved.returncode == 0, moved.stdout[-3000:]
    assert changed_count(moved.stdout) > 0
    assert next_run(host) == MOVED
    unit_file = host.exec(HOST, "cat", f"/etc/systemd/system/{UNIT}.timer")
    refused = apply_role(host, tmp_path, "refused", usage_pipeline_schedule="every hour")
    assert refused.returncode != 0
    assert 'usage_pipeline_schedule "every hour" is not a systemd calendar expression' in refused.stdout
    assert host.exec(HOST, "cat", f"/etc/systemd/system/{UNIT}.timer") == unit_file
    assert next_run(host) == MOVED


def test_absent_removes_the_timer_the_service_and_the_passwords_and_a_second_run_changes_nothing(host, tmp_path):
    removed = apply_role(host, tmp_path, "removed", usage_pipeline_timer_state="absent")
    assert removed.returncode == 0, removed.stdout[-3000:]
    assert changed_count(removed.stdout) > 0
    for path in (f"/etc/systemd/system/{UNIT}.timer", f"/etc/systemd/system/{UNIT}.service", SECRETS_FILE):
        assert not host.path_exists(HOST, path), path
    assert host.systemctl(HOST, "list-timers", "--all", "--no-legend", check=False).find(UNIT) == -1
    again = apply_role(host, tmp_path, "removed-again", usage_pipeline_timer_state="absent")
    assert again.returncode == 0 and changed_count(again.stdout) == 0, again.stdout[-3000:]
