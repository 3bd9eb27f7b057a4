"""The test fleet as a user's hosts: SSH with a non-root user and sudo, Kafka in the Apache layout under systemd,
each data log dir its own filesystem, no quota plugin and no metrics exporter until the roles install them."""

import json
import os
import subprocess

import yaml
from fleet_playbooks import run_ansible

from kafka_testbed.hosts import image
from kafka_testbed.hosts.docker import docker

SIZE = 64 << 20


def test_the_inventory_reaches_every_host_over_ssh_as_a_user_with_sudo(fleet):
    inventory = fleet.info["inventory"]
    variables = yaml.safe_load(open(inventory, encoding="utf-8"))["all"]["children"]["kafka"]["vars"]
    assert variables["ansible_connection"] == "ssh"
    assert variables["ansible_user"] != "root"
    who = run_ansible(inventory, "kafka", "ansible.builtin.command", "id -un")
    assert who.returncode == 0, who.stdout + who.stderr
    assert who.stdout.count(f"rc=0 >>\n{variables['ansible_user']}") == 4
    root = run_ansible(inventory, "kafka", "ansible.builtin.command", "id -un", "--become")
    assert root.returncode == 0, root.stdout + root.stderr
    assert root.stdout.count("rc=0 >>\nroot") == 4


def test_kafka_runs_under_systemd_as_the_kafka_user(fleet):
    for entry in fleet.info["brokers"]:
        assert fleet.exec(entry["id"], "ps", "-o", "comm=", "-p", "1").strip() == "systemd"
        assert fleet.systemctl(entry["id"], "is-active", "kafka").strip() == "active"
        pid = fleet.systemctl(entry["id"], "show", "-p", "MainPID", "--value", "kafka").strip()
        assert fleet.exec(entry["id"], "ps", "-o", "user=", "-p", pid).strip() == "kafka"
        command = fleet.exec(entry["id"], "cat", f"/proc/{pid}/cmdline").replace("\0", " ")
        assert "kafka.Kafka /etc/kafka/server.properties" in command


def test_kafka_is_laid_out_as_apache_ships_it_without_plugin_or_exporter(fleet):
    for entry in fleet.info["brokers"]:
        listing = fleet.exec(entry["id"], "ls", "-l", image.KAFKA_LIBS)
        assert f"kafka_2.13-{fleet.info['kafka_version']}.jar" in listing
        assert "kafka-quotas-plugin" not in listing
        assert "jmx_prometheus_javaagent" not in fleet.exec(entry["id"], "find", "/", "-xdev", "-name", "*.jar")
        assert fleet.exec(entry["id"], "stat", "-c", "%U", image.KAFKA_LIBS).strip() == "kafka"
        assert fleet.exec(entry["id"], "stat", "-c", "%U %a", image.KAFKA_PROPERTIES).split() == ["kafka", "600"]


def test_each_data_log_dir_and_the_metadata_dir_is_a_filesystem_of_its_own(fleet):
    for entry in fleet.broker_nodes:
        mounts = fleet.exec(entry["id"], "findmnt", "-n", "-o", "TARGET,FSTYPE,SIZE", "-t", "tmpfs").split("\n")
        targets = {line.split()[0]: line.split()[2] for line in mounts if line.strip()}
        assert targets[entry["log_dirs"][0]] == "64M"
        assert entry["metadata_dir"] in targets


def test_a_filled_volume_shows_in_what_kafka_reports(fleet):
    entry = fleet.broker_nodes[0]
    fleet.fill_volume(entry["id"], leave_bytes=1 << 20)
    try:
        available, block = map(int, fleet.exec(entry["id"], "stat", "-f", "-c", "%a %S", entry["log_dirs"][0]).split())
        assert available * block <= 1 << 20
    finally:
        fleet.free_volume(entry["id"])


def test_the_cp_ansible_layout_maps_its_groups_onto_kafka(fleet, tmp_path):
    path = fleet.write_inventory(str(tmp_path / "cp.yml"), layout="cp-ansible")
    listed = subprocess.run(
        [os.path.join(os.path.dirname(os.sys.executable), "ansible-inventory"), "-i", path, "--list"],
        capture_output=True,
        text=True,
        check=True,
    )
    groups = json.loads(listed.stdout)
    assert sorted(groups["kafka_broker"]["hosts"]) == ["broker-1", "broker-2", "broker-3"]
    assert groups["kafka_controller"]["hosts"] == ["controller-4"]
    assert sorted(groups["kafka"]["children"]) == ["kafka_broker", "kafka_controller"]


def test_down_removes_every_host_and_a_second_fleet_has_addresses_of_its_own(fleet_factory, fleet):
    small = fleet_factory(1, 1)
    assert len(docker("ps", "-q", "--filter", f"label=headroom.fleet={small.directory}").split()) == 2
    assert small.info["brokers"][0]["host"] not in {entry["host"] for entry in fleet.info["brokers"]}
    small.down()
    assert docker("ps", "-aq", "--filter", f"label=headroom.fleet={small.directory}").split() == []
    assert docker("network", "ls", "-q", "--filter", f"label=headroom.fleet={small.directory}").split() == []
