"""Write the Ansible inventory of a kafka_testbed test cluster for a molecule scenario.

Usage: python write_inventory.py CLUSTER_DIR OUT [EXTRA_JSON]
EXTRA_JSON: {"group_vars": {...}, "host_vars": {"broker-N": {...}}} merged over the defaults.
"""

import json
import os
import sys

import yaml

QUOTAS = {
    "type": "strimzi",
    "producer_byte_rate": 1048576,
    "consumer_byte_rate": 2097152,
    "min_available_ratio_per_volume": 0.1,
    "excluded_principals": ["User:ops"],
    "check_interval": "PT30S",
}
CLIENT_QUOTAS = [
    {"entity": {"user": "alice"}, "producer_byte_rate": 4096, "consumer_byte_rate": 8192},
    {"entity": {"client_id": "<default>"}, "request_percentage": 50},
]


def main(cluster_dir, out, extra_json="{}"):
    with open(os.path.join(cluster_dir, "cluster.json"), encoding="utf-8") as handle:
        info = json.load(handle)
    extra = json.loads(extra_json)
    hosts = {}
    for entry in info["brokers"]:
        name = f"broker-{entry['id']}"
        hosts[name] = {
            "kafka_node_id": entry["id"],
            "kafka_process_roles": ",".join(entry.get("roles", ["broker"])),
            "kafka_listener_host": entry["host"],
            "kafka_listener_port": entry["port"],
            "kafka_properties_file": entry["properties"],
        }
        hosts[name].update(extra.get("host_vars", {}).get(name, {}))
    group_vars = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "kafka_cluster_dir": info["directory"],
        "kafka_connection": {"bootstrap_servers": info["bootstrap_servers"].split(",")},
        # The test cluster's nodes are processes of this user, whose classpath holds the quota plugin's jar already.
        "kafka_become": False,
        "kafka_libs_dir": os.path.dirname(info["quota_plugin_jar"]),
        "quota_plugin_jar_source": "none",
        "kafka_quotas": QUOTAS,
        "quota_plugin_admin": {"bootstrap_servers": info["bootstrap_servers"]},
        "quota_plugin_owner": "root",
        "quota_plugin_group": "root",
        "kafka_client_quotas": CLIENT_QUOTAS,
        "rolling_restart_method": "command",
        "rolling_restart_command": (
            f"{sys.executable} -m kafka_testbed restart --dir {info['directory']} --broker {{node_id}}"
        ),
        "rolling_restart_poll_interval": 0.2,
        "rolling_restart_health_timeout": 60,
        "rolling_restart_port_timeout": 30,
    }
    group_vars.update(extra.get("group_vars", {}))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"children": {"kafka": {"hosts": hosts, "vars": group_vars}}}}, handle, sort_keys=False)


if __name__ == "__main__":
    main(*sys.argv[1:])
