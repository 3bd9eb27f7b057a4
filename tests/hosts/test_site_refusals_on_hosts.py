"""site.yml on a fleet with no quota plugin: a jar that cannot be had fails before any broker file changes, and a
broker that cannot start stops the rolling restart at that host with its journal in the error."""

import os
import re

import pytest
import yaml
from fleet_playbooks import SITE, run_playbook

from kafka_testbed.traffic import wait_until

SPEC = {
    "type": "strimzi",
    "producer_byte_rate": 1 << 20,
    "min_available_ratio_per_volume": 0.1,
    "check_interval": 5,
}


def broker_files(fleet):
    """What site.yml may change on each host: the properties, the libs dir and the unit's drop-ins."""
    script = (
        "sha256sum /etc/kafka/server.properties; ls -la /opt/kafka/libs; "
        "ls -la /etc/systemd/system/kafka.service.d 2>/dev/null; systemctl show -p InvocationID --value kafka"
    )
    return {entry["id"]: fleet.exec(entry["id"], "sh", "-c", script) for entry in fleet.info["brokers"]}


def run_site(fleet, directory, **variables):
    settings = {"kafka_quotas": SPEC, "quota_plugin_admin": {"bootstrap_servers": fleet.info["bootstrap_servers"]}}
    settings.update(variables)
    path = os.path.join(directory, "site-vars.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"kafka": {"vars": settings}}, handle)
    return run_playbook([fleet.info["inventory"], path], SITE)


@pytest.mark.parametrize(
    ("variables", "said"),
    [
        (
            {"quota_plugin_jar_checksum": "sha256:" + "0" * 64},
            "checksum",
        ),
        (
            {"quota_plugin_jar_source": "url", "quota_plugin_jar_url": "http://127.0.0.1:9/kafka-quotas-plugin.jar"},
            "127.0.0.1:9",
        ),
        (
            {"quota_plugin_jar_source": "none"},
            "io.strimzi.kafka.quotas.StaticQuotaCallback",
        ),
    ],
    ids=["wrong-checksum", "unreachable-url", "none-without-the-jar"],
)
def test_a_jar_that_cannot_be_had_fails_before_any_broker_file_changes(fleet, tmp_path, variables, said):
    before = broker_files(fleet)
    result = run_site(fleet, str(tmp_path), **variables)
    assert result.returncode != 0, result.stdout[-10000:]
    assert said in result.stdout, result.stdout[-10000:]
    if variables.get("quota_plugin_jar_source") == "none":
        # The refusal names the host and the libs dir where the class was looked for.
        assert "/opt/kafka/libs" in result.stdout and "broker-1" in result.stdout, result.stdout[-10000:]
    assert broker_files(fleet) == before


@pytest.mark.parametrize(
    ("restart", "said"),
    [
        # Kafka's unit as our hosts ship it: the JVM exits and the unit fails.
        (
            "no",
            re.escape(
                "kafka is not running after its restart: the unit is failed (failed, result exit-code): its main "
                "process exited with status 1"
            ),
        ),
        # Restart=on-failure (common in distributions' units): systemd starts it again, and it dies again. Seen while
        # systemd waits to restart it, the status of the exit is known; seen once the next process runs, it is not.
        (
            "on-failure",
            r"kafka is not running after its restart: its main process (exited with status 1|ended) and systemd",
        ),
    ],
    ids=["restart-no", "restart-on-failure"],
)
def test_a_broker_that_cannot_start_stops_the_roll_at_that_host(fleet, tmp_path, restart, said):
    """A bad property on broker 1 (restarted first): its unit dies a moment after a restart that succeeded
    (Type=simple), the play fails at once (not at the end of the 300 s health wait) naming the host, the unit, how
    it ended and the journal's last lines, and no other broker is restarted."""
    fleet.exec(1, "sh", "-c", "cp /etc/kafka/server.properties /etc/kafka/server.properties.good")
    fleet.exec(1, "sh", "-c", "echo 'num.network.threads=none' >> /etc/kafka/server.properties")
    drop_in = "/etc/systemd/system/kafka.service.d/restart.conf"
    if restart != "no":
        fleet.exec(1, "mkdir", "-p", os.path.dirname(drop_in))
        fleet.put_file(1, drop_in, f"[Service]\nRestart={restart}\nRestartSec=1\n")
        fleet.systemctl(1, "daemon-reload")
    before = broker_files(fleet)
    try:
        result = run_site(fleet, str(tmp_path), kafka_quotas={}, kafka_restart_needed=True)
        assert result.returncode != 0, result.stdout[-10000:]
        text = " ".join(result.stdout.split())
        assert (
            "broker-1: kafka did not come back after its restart (Wait on the host until the restarted unit listens"
            in text
        ), text[-10000:]
        assert re.search(said, text), text[-10000:]
        assert "num.network.threads" in text, "the journal's lines say what Kafka refused"
        after = broker_files(fleet)
        assert after[2] == before[2] and after[3] == before[3], "no further broker was restarted"
    finally:
        fleet.exec(1, "sh", "-c", f"rm -f {drop_in}; cp /etc/kafka/server.properties.good /etc/kafka/server.properties")
        fleet.systemctl(1, "daemon-reload")
        fleet.systemctl(1, "reset-failed", "kafka", check=False)
        fleet.start(1)


def test_a_full_metadata_disk_stops_the_preflight(fleet, tmp_path):
    """DescribeLogDirs says nothing of a controller's metadata disk: the pre-flight reads it on the host and judges it
    with the same limits."""
    controller = next(entry for entry in fleet.info["brokers"] if "broker" not in entry["roles"])
    before = broker_files(fleet)
    fleet.fill_volume(controller["id"], controller["metadata_dir"], leave_bytes=12 << 20)
    try:
        result = run_site(
            fleet, str(tmp_path), kafka_preflight_limits={"min_available_ratio": 0.25, "fail_on": "pause"}
        )
    finally:
        fleet.free_volume(controller["id"], controller["metadata_dir"])
    text = " ".join(result.stdout.split())
    assert result.returncode != 0, result.stdout[-10000:]
    assert "Stop before changing anything if a volume is at its limit" in result.stdout
    assert f"{controller['metadata_dir']}" in text, result.stdout[-10000:]
    assert broker_files(fleet) == before


def test_a_broker_cut_off_from_the_others_stops_the_preflight(fleet, tmp_path):
    before = broker_files(fleet)
    fleet.cut_network(3)
    try:
        wait_until(lambda: 3 not in fleet.unfenced_brokers(), 60, what="broker 3 fenced once cut off")
        result = run_site(fleet, str(tmp_path))
    finally:
        fleet.restore_network(3)
    wait_until(lambda: 3 in fleet.unfenced_brokers(), 90, what="broker 3 back once reconnected")
    text = " ".join(result.stdout.split())
    assert result.returncode != 0, result.stdout[-10000:]
    assert "The cluster is incomplete, so nothing was changed: fenced brokers [3]" in text, result.stdout[-10000:]
    assert broker_files(fleet) == before


def test_a_full_metadata_disk_stops_the_roll_before_its_first_restart(fleet, tmp_path):
    """rolling_restart's volume gate judges the disks Kafka does not report too: no broker is restarted while a
    controller's metadata disk is past the limit."""
    controller = next(entry for entry in fleet.info["brokers"] if "broker" not in entry["roles"])
    before = broker_files(fleet)
    fleet.fill_volume(controller["id"], controller["metadata_dir"], leave_bytes=12 << 20)
    try:
        result = run_site(
            fleet,
            str(tmp_path),
            kafka_quotas={},
            kafka_restart_needed=True,
            rolling_restart_volume_gate={"min_available_ratio": 0.25, "fail_on": "pause"},
        )
    finally:
        fleet.free_volume(controller["id"], controller["metadata_dir"])
    assert result.returncode != 0, result.stdout[-10000:]
    assert "Check the volumes before the first restart" in result.stdout, result.stdout[-10000:]
    assert controller["metadata_dir"] in " ".join(result.stdout.split()), result.stdout[-10000:]
    assert broker_files(fleet) == before, "no node was restarted"
