"""The Ansible inventory of a fleet, as a user would write it for hosts reached over SSH: one host per node in group
``kafka`` with the variables the collection's roles read, and the connection options of the modules.

``layout="cp-ansible"`` writes the same hosts in cp-ansible's groups (``kafka_broker``, ``kafka_controller``) with
group ``kafka`` mapped onto them, to show that such an inventory drives the same plays unchanged.
"""

import yaml

from kafka_testbed.hosts import image

LAYOUTS = ("headroom", "cp-ansible")


def host_variables(entry):
    """What the roles read of one node: its id and roles, where Kafka is installed, the unit, the data volumes."""
    variables = {
        "ansible_host": entry["host"],
        "kafka_node_id": entry["id"],
        "kafka_process_roles": ",".join(entry["roles"]),
        "kafka_listener_host": entry["host"],
        "kafka_listener_port": entry["port"],
        "kafka_log_dirs": list(entry["log_dirs"]),
        "kafka_metadata_log_dir": entry["metadata_dir"],
    }
    return variables


def group_variables(info):
    """Connection and installation settings shared by every host of the fleet."""
    ssh = info["ssh"]
    connection = {"bootstrap_servers": info["bootstrap_servers"].split(",")}
    if info["security_protocol"] != "PLAINTEXT":
        connection["security_protocol"] = info["security_protocol"]
    if "sasl" in info:
        connection.update(
            {
                "sasl_mechanism": info["sasl"]["mechanism"],
                "sasl_username": info["sasl"]["username"],
                "sasl_password": info["sasl"]["password"],
            }
        )
    if "tls" in info:
        connection.update(
            {"ssl_cafile": info["tls"]["ca"], "ssl_certfile": info["tls"]["cert"], "ssl_keyfile": info["tls"]["key"]}
        )
    return {
        "ansible_connection": "ssh",
        "ansible_user": ssh["user"],
        "ansible_ssh_private_key_file": ssh["key"],
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={ssh['known_hosts']} -o StrictHostKeyChecking=yes",
        "ansible_python_interpreter": "/usr/bin/python3",
        "kafka_properties_file": image.KAFKA_PROPERTIES,
        "kafka_libs_dir": image.KAFKA_LIBS,
        "kafka_service_name": image.KAFKA_SERVICE,
        "kafka_connection": connection,
    }


def render_inventory(info, layout="headroom"):
    """The inventory YAML of the fleet ``info`` (cluster.json's content)."""
    if layout not in LAYOUTS:
        raise ValueError(f"inventory layout {layout!r}: expected one of {', '.join(LAYOUTS)}")
    hosts = {entry["inventory_host"]: host_variables(entry) for entry in info["brokers"]}
    if layout == "headroom":
        groups = {"kafka": {"hosts": hosts, "vars": group_variables(info)}}
    else:
        by_group = {"kafka_broker": {}, "kafka_controller": {}}
        for entry in info["brokers"]:
            group = "kafka_broker" if "broker" in entry["roles"] else "kafka_controller"
            by_group[group][entry["inventory_host"]] = hosts[entry["inventory_host"]]
        groups = {name: {"hosts": members} for name, members in by_group.items()}
        # The collection's plays run on group kafka: an existing cp-ansible inventory only adds this mapping.
        groups["kafka"] = {"children": {"kafka_broker": {}, "kafka_controller": {}}, "vars": group_variables(info)}
    header = "# Ansible inventory of a headroom.kafka test fleet: Kafka on hosts reached over SSH.\n"
    return header + yaml.safe_dump({"all": {"children": groups}}, sort_keys=False)
