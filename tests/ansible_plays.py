"""Ansible runs of the collection's plays against a test cluster, shared by the integration and compatibility
suites: site.yml with an inventory of the cluster's nodes, and the rolling_restart role on its own."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import yaml

from kafka_testbed.client_config import module_connection_options as connection_options
from kafka_testbed.cluster import Cluster, process_alive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The collection as ansible sees it installed (tests/conftest.py links it there).
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
ROLES = os.path.join(ROOT, "roles")
SITE = os.path.join(ROOT, "playbooks", "site.yml")
SPEC = {
    "type": "strimzi",
    "producer_byte_rate": 1048576,
    "consumer_byte_rate": 2097152,
    "min_available_ratio_per_volume": 0.1,
    "excluded_principals": ["User:ops"],
    "check_interval": "PT30S",
}


def write_inventory(cluster, tmp_path, extra=None):
    hosts = {}
    for entry in cluster.info["brokers"]:
        hosts[f"broker-{entry['id']}"] = {
            "kafka_node_id": entry["id"],
            "kafka_listener_host": entry["host"],
            "kafka_listener_port": entry["port"],
            "kafka_properties_file": entry["properties"],
            "kafka_process_roles": ",".join(entry["roles"]),
        }
    group_vars = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "kafka_connection": connection_options(cluster.info),
        # The test cluster's nodes are processes of this user, whose classpath holds the quota plugin's jar already.
        "kafka_become": False,
        "kafka_libs_dir": os.path.dirname(cluster.info["quota_plugin_jar"]),
        "quota_plugin_jar_source": "none",
        "kafka_quotas": SPEC,
        "quota_plugin_admin": {"bootstrap_servers": cluster.info["bootstrap_servers"]},
        "quota_plugin_owner": "root",
        "quota_plugin_group": "root",
        "kafka_client_quotas": [{"entity": {"user": "alice"}, "producer_byte_rate": 4096}],
        "rolling_restart_method": "command",
        "rolling_restart_command": (
            f"{sys.executable} -m kafka_testbed restart --dir {cluster.directory} --broker {{node_id}}"
        ),
        "rolling_restart_poll_interval": 0.2,
        "rolling_restart_health_timeout": 60,
        "rolling_restart_port_timeout": 30,
    }
    group_vars.update(extra or {})
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"kafka": {"hosts": hosts, "vars": group_vars}}}}))
    return str(path)


def run_play(inventory, playbook, *args):
    """``ansible-playbook -i inventory playbook args`` with the collection as the tests install it."""
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_NOCOLOR="1",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory, playbook, *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)


def run_site(inventory, *args):
    return run_play(inventory, SITE, *args)


def changed_counts(stdout):
    return {host: int(changed) for host, changed in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", stdout, re.M)}


def pids(cluster):
    """Process ids of the running nodes, by node id, as the launcher recorded them."""
    current = Cluster(cluster.directory)
    return {
        entry["id"]: entry["pid"]
        for entry in current.info["brokers"]
        if entry.get("pid") and process_alive(entry["pid"])
    }


def scrape(url):
    """{name: [(labels, value)]} from a node's /metrics."""
    series = {}
    with urllib.request.urlopen(url, timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line and not line.startswith("#"):
                head, _space, value = line.rpartition(" ")
                name, _brace, labels = head.partition("{")
                series.setdefault(name, []).append((dict(re.findall(r'(\w+)="([^"]*)"', labels)), float(value)))
    return series


def serving(url, name):
    """A node's metrics once they hold ``name``, else None."""
    series = scrape(url)
    return series if name in series else None


def run_roll(cluster, tmp_path, needs_restart, extra_vars=None, host_vars=None, path_prefix=None):
    driver = f"{sys.executable} -m kafka_testbed"
    inventory = {"all": {"hosts": {}}}
    for entry in cluster.info["brokers"]:
        inventory["all"]["hosts"][f"broker-{entry['id']}"] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "kafka_node_id": entry["id"],
            "kafka_listener_host": entry["host"],
            "kafka_listener_port": entry["port"],
            "kafka_restart_needed": entry["id"] in needs_restart,
            "kafka_process_roles": ",".join(entry.get("roles", ["broker"])),
            **(host_vars or {}).get(entry["id"], {}),
        }
    variables = {
        "rolling_restart_method": "command",
        "rolling_restart_command": f"{driver} restart --dir {cluster.directory} --broker {{node_id}}",
        "rolling_restart_health_timeout": 30,
        "rolling_restart_port_timeout": 30,
        "rolling_restart_poll_interval": 0.2,
        "kafka_connection": connection_options(cluster.info),
        # The test cluster's nodes are processes of this user, whose classpath holds the quota plugin's jar already.
        "kafka_become": False,
        "kafka_libs_dir": os.path.dirname(cluster.info["quota_plugin_jar"]),
        "quota_plugin_jar_source": "none",
    }
    variables.update(extra_vars or {})
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "vars.json").write_text(json.dumps(variables))
    (tmp_path / "play.yml").write_text(
        yaml.safe_dump(
            [
                {
                    "name": "roll",
                    "hosts": "all",
                    "gather_facts": False,
                    "vars_files": [str(tmp_path / "vars.json")],
                    "module_defaults": {"group/headroom.kafka.kafka": "{{ kafka_connection }}"},
                    "roles": [{"role": "rolling_restart"}],
                }
            ]
        )
    )
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_ROLES_PATH=ROLES,
        ANSIBLE_NOCOLOR="1",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    if path_prefix:
        env["PATH"] = str(path_prefix) + os.pathsep + env["PATH"]
    command = [
        os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
        "-i",
        str(tmp_path / "inventory.yml"),
        str(tmp_path / "play.yml"),
    ]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)


def incarnations(cluster):
    """node id -> (pid, start time in ms) of the running nodes, as the launcher recorded them."""
    current = Cluster(cluster.directory)
    return {
        entry["id"]: (entry["pid"], int(entry["started_at"] * 1000))
        for entry in current.info["brokers"]
        if entry.get("pid") and process_alive(entry["pid"])
    }


def roll_every_node_and_find_the_last(cluster, tmp_path, timeout=15.0):
    """The active controller once the cluster has one, then every node rolled by the rolling_restart role: (that
    controller, the restart order, the incarnations before, the incarnations after)."""
    deadline = time.monotonic() + timeout
    while cluster.active_controller() not in (1, 2, 3) and time.monotonic() < deadline:
        time.sleep(0.1)  # the controllers (or ZooKeeper) elect one within a heartbeat or two
    leader = cluster.active_controller()
    assert leader in (1, 2, 3)
    before = incarnations(cluster)
    result = run_roll(cluster, tmp_path, needs_restart={1, 2, 3})
    assert result.returncode == 0, result.stdout[-10000:]
    after = incarnations(cluster)
    return leader, sorted(after, key=lambda node_id: after[node_id][1]), before, after
