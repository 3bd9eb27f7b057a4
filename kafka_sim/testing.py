"""pytest fixtures for suites that need a running test cluster.

``kafka_cluster``: one 3-broker PLAINTEXT cluster for the whole session.
``kafka_cluster_factory``: fresh clusters with options, stopped at the end of the test.
"""

import os
import random
import shutil
import socket
import tempfile

import pytest

from kafka_sim.cluster import Cluster, engine_class


def port_range(count):
    """Where to look for broker ports: below the kernel's ephemeral range if there is room, so that no outgoing
    connection takes a port between the check and the broker's bind."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="utf-8") as handle:
            low, high = (int(value) for value in handle.read().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    if low - 10000 >= count:
        return 10000, low - count
    if high + count < 65535:
        return high + 1, 65535 - count
    return 20000, 60000 - count


def free_port_block(count, attempts=200):
    """A base port such that ``count`` consecutive loopback ports are free right now."""
    first, last = port_range(count)
    for _ignored in range(attempts):
        base = random.randint(first, last)
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", port))
                sockets.append(sock)
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError(f"no block of {count} free ports found")


def base_port_for(brokers, combined=0, controllers_only=0, engine=None):
    """A base port with room for every port a cluster of ``engine`` takes (real nodes add controller and metrics ports)."""
    return free_port_block(engine_class(engine).ports_needed(brokers, combined, controllers_only))


class ClusterFactory:
    """Fresh clusters of one engine (``engine``, else ``HEADROOM_TEST_ENGINE``, else real Kafka)."""

    def __init__(self, root, engine=None):
        self.root = root
        self.engine = engine
        self.clusters = []

    def __call__(self, brokers=3, **options):
        directory = tempfile.mkdtemp(prefix="cluster-", dir=self.root)
        engine = options.pop("engine", self.engine)
        cluster = Cluster(directory, engine)
        options.setdefault("base_port", base_port_for(brokers, options.get("combined", 0), options.get("controllers_only", 0),
                                                      cluster.engine))
        timeout = options.pop("timeout", 120.0)
        cluster.create(brokers, **options)
        self.clusters.append(cluster)
        cluster.up(timeout)
        return cluster

    def close(self):
        for cluster in self.clusters:
            cluster.down()


@pytest.fixture(scope="session")
def kafka_cluster_root():
    root = tempfile.mkdtemp(prefix="kafka-sim-")
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def kafka_cluster(kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root)
    cluster = factory(3)
    yield cluster
    factory.close()


@pytest.fixture
def kafka_cluster_factory(kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root)
    yield factory
    factory.close()


def running_as_root():
    return os.geteuid() == 0
