"""What the real-Kafka benchmarks share: the quota plugin loaded on a test cluster's brokers as site.yml configures it,
and a run's results printed and written as JSON."""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # a benchmark imports this before it puts the repository on the path itself
    sys.path.insert(0, ROOT)

# pylint: disable=wrong-import-position
from ansible_collections.headroom.kafka.plugins.module_utils import quota_plugin_spec  # noqa: E402
from kafka_testbed import properties  # noqa: E402

# pylint: enable=wrong-import-position


def plugin_spec(producer_byte_rate, min_available_bytes, check_interval):
    """``kafka_quotas`` for the Strimzi plugin: a produce quota, a per-volume limit and the storage check interval."""
    return {
        "type": "strimzi",
        "producer_byte_rate": producer_byte_rate,
        "min_available_bytes_per_volume": min_available_bytes,
        "check_interval": check_interval,
    }


def load_quota_plugin(cluster, spec, broker_ids=None):
    """Writes the Strimzi plugin's block for ``spec``, as the collection renders it for site.yml, into the properties
    of ``broker_ids`` (default: every broker) of a cluster that is not started yet; returns the block."""
    admin = {"bootstrap_servers": cluster.info["bootstrap_servers"]}
    block = quota_plugin_spec.quota_plugin_properties(spec, admin=admin)
    for entry in cluster.broker_nodes:
        if broker_ids is None or entry["id"] in broker_ids:
            props = properties.load(entry["properties"])
            props.update(block)
            properties.write_atomic(entry["properties"], properties.render(props), mode=0o600)
    return block


def finish(results, table, json_path=None):
    """Prints the run's table on stdout and writes every figure to ``json_path`` when given."""
    print(table)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as handle:
            json.dump(results, handle, indent=2)
            handle.write("\n")
