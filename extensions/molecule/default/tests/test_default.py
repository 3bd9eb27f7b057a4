"""Verify the default scenario: files, effective broker config, client quotas and one broker down at a time."""

import datetime
import json
import os
import re

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter
from kafka_testbed.cluster import Cluster

testinfra_hosts = ["local://"]

CLUSTER_DIR = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "cluster")
MARKER = "# BEGIN headroom.kafka quota plugin (managed, do not edit)"
CALLBACK = "io.strimzi.kafka.quotas.StaticQuotaCallback"
PLUGIN_KEYS = (
    "client.quota.callback.static.produce",
    "client.quota.callback.static.fetch",
    "client.quota.callback.static.excluded.principal.name.list",
    "client.quota.callback.static.storage.check-interval",
)
SHUTDOWN = re.compile(r"starting controlled shutdown|Transition from STARTED to SHUTTING_DOWN")
LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] \w+ (.*)$")


def cluster_info():
    with open(os.path.join(CLUSTER_DIR, "cluster.json"), encoding="utf-8") as handle:
        return json.load(handle)


def brokers(info):
    """The nodes with the broker role (a KRaft cluster may also have controller-only nodes)."""
    return [entry for entry in info["brokers"] if "broker" in entry.get("roles", ["broker"])]


def test_properties_files_hold_the_managed_block(host):
    for entry in brokers(cluster_info()):
        content = host.file(entry["properties"]).content_string
        assert MARKER in content
        assert f"client.quota.callback.class={CALLBACK}" in content
        assert "client.quota.callback.static.excluded.principal.name.list=User:ops" in content
        assert "client.quota.callback.static.storage.check-interval=30" in content
        assert f"node.id={entry['id']}" in content


def test_effective_broker_config_after_restart():
    info = cluster_info()
    admin = AdminClient({"bootstrap.servers": info["bootstrap_servers"]})
    for entry in brokers(info):
        resource = ConfigResource(ResourceType.BROKER, str(entry["id"]))
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
        assert configs["client.quota.callback.class"].value == CALLBACK
        for key in PLUGIN_KEYS:
            assert key in configs, key
            assert configs[key].is_sensitive, key
            assert configs[key].value is None, key
        assert int(configs["node.id"].value) == entry["id"]
        assert configs["log.dirs"].value == ",".join(entry["log_dirs"])


def test_client_quotas_read_back_with_a_second_client():
    adapter = KafkaAdapter(bootstrap_servers())
    quotas = {tuple(sorted(entity.items())): values for entity, values in adapter.describe_client_quotas()}
    assert quotas[(("user", "alice"),)] == {"producer_byte_rate": 4096.0, "consumer_byte_rate": 8192.0}
    assert quotas[(("client-id", None),)] == {"request_percentage": 50.0}


def bootstrap_servers():
    return cluster_info()["bootstrap_servers"].split(",")


def down_windows(log_file):
    """[(stopped, started)] of a broker from its log: a controlled shutdown until the next start."""
    windows, stopped = [], None
    with open(log_file, encoding="utf-8") as handle:
        for line in handle:
            match = LOG_LINE.match(line)
            if not match:
                continue
            when = datetime.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f")
            if SHUTDOWN.search(match.group(2)) and stopped is None:
                stopped = when
            elif "Kafka Server started" in match.group(2) and stopped is not None:
                windows.append((stopped, when))
                stopped = None
    assert stopped is None, f"{log_file}: stopped and not started again"
    return windows


def test_no_two_brokers_were_down_at_once():
    info = cluster_info()
    in_cluster = {row["id"] for row in Cluster(CLUSTER_DIR).status() if row["in_cluster"]}
    windows = []
    for entry in brokers(info):
        assert entry["id"] in in_cluster, f"broker {entry['id']} is back in the cluster"
        broker_windows = down_windows(entry["log_file"])
        assert len(broker_windows) == 1, f"broker {entry['id']} restarted once: {broker_windows}"
        windows.extend((start, end, entry["id"]) for start, end in broker_windows)
    windows.sort()
    for (start, end, node), (next_start, next_end, next_node) in zip(windows, windows[1:], strict=False):
        assert end <= next_start, (
            f"brokers {node} ({start}-{end}) and {next_node} ({next_start}-{next_end}) were down at once"
        )
