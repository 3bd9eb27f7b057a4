"""The test cluster behind one interface, with two engines: real Apache Kafka (``kafka``) and our model (``sim``).

``Cluster(directory)`` opens the cluster described by ``DIR/cluster.json`` with the engine that created it; a new
cluster gets ``engine``, else ``HEADROOM_TEST_ENGINE``, else real Kafka.
"""

import json
import os

from kafka_testbed.kafka_cluster import KafkaCluster
from kafka_testbed.model.sim_cluster import SimCluster, add_scram_user
from kafka_testbed.nodes import CLUSTER_FILE, ClusterError, parse_size, process_alive

__all__ = [
    "Cluster",
    "ClusterError",
    "ENGINES",
    "ENGINE_VARIABLE",
    "KafkaCluster",
    "SimCluster",
    "add_scram_user",
    "default_engine",
    "engine_class",
    "parse_size",
    "process_alive",
]

ENGINES = {"kafka": KafkaCluster, "sim": SimCluster}
ENGINE_VARIABLE = "HEADROOM_TEST_ENGINE"


def default_engine():
    engine = os.environ.get(ENGINE_VARIABLE) or "kafka"
    if engine not in ENGINES:
        raise ClusterError(f"{ENGINE_VARIABLE}={engine!r}: expected one of {', '.join(sorted(ENGINES))}")
    return engine


def engine_class(engine=None):
    engine = engine or default_engine()
    if engine not in ENGINES:
        raise ClusterError(f"--engine {engine!r}: expected one of {', '.join(sorted(ENGINES))}")
    return ENGINES[engine]


def Cluster(directory, engine=None):  # pylint: disable=invalid-name  # used like the class it returns
    """The cluster in ``directory``: the engine recorded in its cluster.json, else ``engine`` (or the default)."""
    path = os.path.join(os.path.abspath(directory), CLUSTER_FILE)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            recorded = json.load(handle).get("engine", "sim")
        if engine and engine != recorded:
            raise ClusterError(f"{path} holds a {recorded!r} cluster, not {engine!r}; run 'down' and use another --dir")
        engine = recorded
        if recorded == "hosts":
            from kafka_testbed.hosts.fleet import HostFleet  # pylint: disable=import-outside-toplevel  # Docker's only

            return HostFleet(directory)
    return engine_class(engine)(directory)
