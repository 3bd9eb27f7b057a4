"""The real engine of the test cluster: how it formats and starts Apache Kafka nodes, and from which jars.

The conformance suite (tests/kafka_testbed) covers what the nodes do once they run; these tests cover the launcher's own
work: one formatter JVM for every node (Kafka's StorageTool per node without a JDK), the class archive every node maps,
and an existing Kafka installation (``KAFKA_HOME``) instead of the jars Maven fetched.
"""

import glob
import os

import pytest

from kafka_testbed import storage_format
from kafka_testbed.cluster import Cluster, ClusterError
from kafka_testbed.kafka_libs import AGENT_PREFIX, PLUGIN_PREFIX, ensure_libs
from kafka_testbed.testing import base_port_for


def _meta(path):
    with open(os.path.join(path, "meta.properties"), encoding="utf-8") as handle:
        return dict(line.strip().split("=", 1) for line in handle if "=" in line and not line.startswith("#"))


def _formatted_ids(cluster):
    """{node id: (cluster.id, node.id)} from the meta.properties kafka-storage format wrote in every node's dirs."""
    seen = {}
    for entry in cluster.info["brokers"]:
        for path in [entry["metadata_dir"], *entry["log_dirs"]]:
            meta = _meta(path)
            assert seen.setdefault(entry["id"], (meta["cluster.id"], meta["node.id"])) == (
                meta["cluster.id"],
                meta["node.id"],
            )
    return seen


def _created(root, brokers=2, **options):
    cluster = Cluster(os.path.join(root, f"cluster-{len(os.listdir(root))}"), "kafka")
    cluster.create(brokers, base_port=base_port_for(brokers, engine="kafka"), **options)
    return cluster


@pytest.fixture(params=["one-jvm", "no-jdk"])
def formatter(request, monkeypatch):
    """Both ways of formatting: the launcher's one-JVM formatter, and (a runtime-only Java) one StorageTool per node."""
    if request.param == "no-jdk":
        monkeypatch.setattr(storage_format, "tool_classpath", lambda java, name: None)
    return request.param


def test_every_node_is_formatted_with_one_cluster_id(tmp_path, formatter):
    del formatter
    cluster = _created(str(tmp_path), scram=True)
    cluster_id = cluster.info["cluster_id"]
    assert _formatted_ids(cluster) == {1: (cluster_id, "1"), 2: (cluster_id, "2"), 3: (cluster_id, "3")}
    # The admin's SCRAM credentials are in the bootstrap metadata the controller starts from.
    controller = cluster.info["brokers"][-1]
    assert os.path.getsize(os.path.join(controller["metadata_dir"], "bootstrap.checkpoint")) > 0


def test_a_refused_format_names_each_node_and_kafkas_reason(tmp_path, formatter):
    del formatter
    with pytest.raises(ClusterError) as raised:
        _created(str(tmp_path), extra_properties={"node.id": "first"})
    message = str(raised.value)
    assert message.startswith("kafka-storage format failed:")
    for node_id in (1, 2, 3):
        assert f"node {node_id}: " in message
    assert "Invalid value first for configuration" in message
    assert "\tat " not in message, "stack frames push the reason out of the message"
    assert "warning" not in message.lower()


def test_every_node_maps_the_class_archive(kafka_cluster_factory):
    libs = ensure_libs()
    assert os.path.exists(libs.class_archive), (
        "python -m kafka_testbed libs writes it (make test and make demo run that)"
    )
    cluster = kafka_cluster_factory(1, engine="kafka", combined=1)
    for entry in cluster.info["brokers"]:
        with open(f"/proc/{entry['pid']}/maps", encoding="utf-8") as handle:
            assert libs.class_archive in handle.read(), f"node {entry['id']} loaded its classes itself"


def test_an_installation_in_kafka_home_runs_the_cluster(tmp_path, monkeypatch, kafka_cluster_factory):
    fetched = ensure_libs()
    home = tmp_path / "kafka_2.13-installed"
    (home / "libs").mkdir(parents=True)
    # An installation's libs/ holds Kafka and its dependencies, not the plugin or the exporter.
    for jar in glob.glob(os.path.join(fetched.kafka_libs, "*.jar")):
        if not os.path.basename(jar).startswith((PLUGIN_PREFIX, AGENT_PREFIX)):
            os.symlink(jar, home / "libs" / os.path.basename(jar))
    monkeypatch.setenv("KAFKA_HOME", str(home))
    libs = ensure_libs()
    assert (libs.version, libs.kafka_libs) == (fetched.version, str(home / "libs"))
    assert libs.plugin and os.path.dirname(libs.plugin) != fetched.kafka_libs
    cluster = kafka_cluster_factory(1, engine="kafka", combined=1)
    assert cluster.info["kafka_version"] == fetched.version
    assert cluster.status()[0]["in_cluster"]
    with open(f"/proc/{cluster.info['brokers'][0]['pid']}/cmdline", "rb") as handle:
        assert str(home / "libs") in handle.read().decode()
