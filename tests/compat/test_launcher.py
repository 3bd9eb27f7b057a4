"""The test cluster runs each release as that release: its own jars and logging, KRaft or ZooKeeper mode, and it
refuses what the release does not have before anything starts."""

import os

import pytest

from kafka_testbed.cluster import KafkaCluster
from kafka_testbed.kafka_versions import NotInRelease
from kafka_testbed.testing import base_port_for


def test_the_brokers_run_the_release_asked_for(kafka_release, release_cluster):
    cluster = release_cluster(2)
    for entry in cluster.broker_nodes:
        with open(entry["log_file"], encoding="utf-8") as handle:
            log = handle.read()
        # AppInfoParser logs the version of the kafka-clients jar the broker loaded, at every start.
        assert f"Kafka version: {kafka_release.version}" in log, f"broker {entry['id']}"
        assert "ERROR" not in log.split("Kafka version:", 1)[0], "the broker logged errors while it started"
    assert cluster.info["kafka_version"] == kafka_release.version
    assert cluster.info["logging"] == kafka_release.release.logging
    controller = cluster.active_controller()
    if kafka_release.mode == "zookeeper":
        assert cluster.info["metadata_mode"] == "zookeeper"
        assert {entry["id"] for entry in cluster.info["brokers"]} == {1, 2}, "no controller nodes, ZooKeeper instead"
        assert controller in (1, 2), "a broker is the controller"
        assert cluster.info["cluster_id"], "the cluster id ZooKeeper holds, recorded once the brokers registered"
    else:
        assert controller == 3, "the controller-only node leads the quorum"
    assert cluster.unfenced_brokers() == {1, 2}


def test_scram_in_kraft_before_3_5_is_refused_before_anything_starts(tmp_path):
    cluster = KafkaCluster(str(tmp_path / "cluster"))
    with pytest.raises(NotInRelease, match=r"Apache Kafka 3\.4\.1 in KRaft mode has no SCRAM credentials \(KIP-900"):
        cluster.create(1, base_port=base_port_for(1), scram=True, kafka_version="3.4.1", metadata="kraft")
    assert not os.path.exists(tmp_path / "cluster" / "cluster.json")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"kafka_version": "4.0.2", "metadata": "zookeeper"}, r"4\.0\.2 has no ZooKeeper mode \(removed in 4\.0\)"),
        ({"kafka_version": "3.9.1", "metadata": "zookeeper", "combined": 1}, r"--combined and --controllers-only"),
    ],
    ids=["zookeeper-on-4.0", "combined-in-zookeeper-mode"],
)
def test_layouts_the_release_has_no_place_for_are_refused(tmp_path, options, said):
    cluster = KafkaCluster(str(tmp_path / "cluster"))
    with pytest.raises(Exception, match=said):
        cluster.create(1, base_port=base_port_for(1, options.get("combined", 0)), **options)
    assert not os.path.exists(tmp_path / "cluster" / "cluster.json")
