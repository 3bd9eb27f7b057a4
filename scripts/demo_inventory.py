"""Write an Ansible inventory for the demo test cluster: one host per broker, connection options, a quotas spec."""

import json
import os
import sys

import yaml

# The repository root: the pipeline's output goes to its .demo/ whichever directory the playbook runs from.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(cluster_file, out):
    with open(cluster_file, encoding="utf-8") as handle:
        info = json.load(handle)
    hosts = {}
    for entry in info["brokers"]:
        hosts[f"broker-{entry['id']}"] = {
            "kafka_node_id": entry["id"],
            "kafka_process_roles": ",".join(entry.get("roles", ["broker"])),
            "kafka_listener_host": entry["host"],
            "kafka_listener_port": entry["port"],
            "kafka_properties_file": entry["properties"],
        }
    group_vars = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "kafka_connection": {"bootstrap_servers": info["bootstrap_servers"].split(",")},
        # The demo cluster's nodes are processes of this user, whose classpath holds the quota plugin's jar already.
        "kafka_become": False,
        "kafka_libs_dir": os.path.dirname(info["quota_plugin_jar"]),
        "quota_plugin_jar_source": "none",
        "kafka_quotas": {
            "type": "strimzi",
            "producer_byte_rate": 1048576,
            "consumer_byte_rate": 2097152,
            "min_available_ratio_per_volume": 0.1,
            "excluded_principals": ["User:ops"],
            "check_interval": "PT5S",
        },
        "quota_plugin_admin": {"bootstrap_servers": info["bootstrap_servers"]},
        "quota_plugin_owner": "root",
        "quota_plugin_group": "root",
        "kafka_client_quotas": [
            {"entity": {"user": "analytics"}, "producer_byte_rate": 524288, "consumer_byte_rate": 1048576},
            {"entity": {"client_id": "<default>"}, "request_percentage": 50},
        ],
        "kafka_preflight_limits": {"min_available_ratio": 0.05, "fail_on": "pause"},
        "rolling_restart_method": "command",
        "rolling_restart_command": (
            f"{sys.executable} -m kafka_testbed restart --dir {info['directory']} --broker {{node_id}}"
        ),
        "rolling_restart_poll_interval": 0.2,
        # site.yml's last play: the usage pipeline over the snapshot topic, with the quota plugin's volume limit.
        "usage_pipeline_out": os.path.join(ROOT, ".demo", "pipeline-live"),
        "usage_pipeline_min_available_ratio": 0.1,
    }
    with open(out, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"children": {"kafka": {"hosts": hosts, "vars": group_vars}}}}, handle, sort_keys=False)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
