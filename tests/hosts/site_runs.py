"""site.yml on a fleet of test hosts, as the fleet tests run it: the site's settings layered over the fleet's inventory
as a user layers group variables, and the topics the fleet's brokers made that would keep a broker from stopping.

A module of its own (not conftest): test files import helpers by module name."""

import os

import yaml
from confluent_kafka.admin import AdminClient
from fleet_playbooks import ROLL, SITE, run_playbook

from kafka_testbed.client_config import confluent_config
from kafka_testbed.traffic import wait_until

BASE_RATE = 1 << 20  # the plugin's produce quota, bytes/s
LIMIT = 32 << 20  # min.available.bytes per volume, of 64 MiB volumes
CHECK_INTERVAL = 5
SITE_VARS = {
    "kafka_quotas": {
        "type": "strimzi",
        "producer_byte_rate": BASE_RATE,
        "min_available_bytes_per_volume": LIMIT,
        "excluded_principals": ["User:ops"],
        "check_interval": CHECK_INTERVAL,
    },
    "kafka_jmx_exporter": True,
    "kafka_client_quotas": [{"entity": {"user": "alice"}, "producer_byte_rate": 4096}],
    "rolling_restart_health_timeout": 120,
    "rolling_restart_poll_interval": 0.5,
}


def site_inventory(fleet, directory, restart_hosts=(), **overrides):
    """The fleet's inventory and a second one with the site's settings, as a user layers group variables;
    ``restart_hosts``: hosts marked as needing a restart (kafka_restart_needed as a host variable)."""
    variables = dict(SITE_VARS, quota_plugin_admin={"bootstrap_servers": fleet.info["bootstrap_servers"]})
    variables.update(overrides)
    group = {"vars": variables}
    if restart_hosts:
        group["hosts"] = {host: {"kafka_restart_needed": True} for host in restart_hosts}
    path = os.path.join(directory, "site-vars.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"kafka": group}, handle)
    return [fleet.info["inventory"], path]


def site(fleet, directory, *args, restart_hosts=(), **overrides):
    return run_playbook(site_inventory(fleet, directory, restart_hosts, **overrides), SITE, *args)


def rolling_restart(fleet, directory, restart_hosts, **overrides):
    """playbooks/rolling_restart.yml with the site's settings: the roll alone, as an operator runs it after a patch."""
    return run_playbook(site_inventory(fleet, directory, restart_hosts, **overrides), ROLL)


def delete_topics(fleet, *names):
    admin = AdminClient(confluent_config(fleet))
    existing = [name for name in names if name in admin.list_topics(timeout=30).topics]
    for future in admin.delete_topics(existing, operation_timeout=30).values() if existing else ():
        future.result(60)
    wait_until(lambda: not set(existing) & set(admin.list_topics(timeout=30).topics), 60, what="topics deleted")


def started_times(fleet):
    """{node id: when its unit last started its main process}."""
    return {entry["id"]: fleet.main_process_started(entry["id"]) for entry in fleet.info["brokers"]}
