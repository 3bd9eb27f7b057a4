"""pytest fixtures for suites that need a running test cluster.

``kafka_cluster``: one 3-broker PLAINTEXT cluster for the whole session.
``kafka_cluster_factory``: fresh clusters with options, stopped at the end of the test.
"""

import contextlib
import os
import shutil
import tempfile

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import quota_plugin_spec
from kafka_testbed.cluster import Cluster, engine_class
from kafka_testbed.kafka_versions import NotInRelease
from kafka_testbed.nodes import HOST, free_port_block, port_range

__all__ = [
    "ClusterFactory",
    "base_port_for",
    "free_port_block",
    "kafka_cluster",
    "kafka_cluster_factory",
    "kafka_cluster_root",
    "running_as_root",
    "worker_ports",
]


def worker_ports(count):
    """The base ports this pytest process draws from: with pytest-xdist each worker (gw0, gw1, ...) gets a slice of
    its own, so that two workers never pick the same block between one's check and its brokers' bind."""
    first, last = port_range(count)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    if workers < 2 or not worker.startswith("gw"):
        return first, last
    width = (last + count - first) // workers
    start = first + int(worker[2:]) % workers * width
    return start, start + width - count


def base_port_for(brokers, combined=0, controllers_only=0, engine=None):
    """A base port with room for every port a cluster of ``engine`` takes (real nodes add controller and metrics
    ports)."""
    count = engine_class(engine).ports_needed(brokers, combined, controllers_only)
    return free_port_block(count, span=worker_ports(count))


def started_with_the_plugin(brokers, spec):
    """Options for a real-Kafka cluster of ``brokers`` whose every node starts with the Strimzi plugin block the
    collection renders for site.yml from ``kafka_quotas`` ``spec`` (no roll to load it): ``base_port`` and
    ``extra_properties``; a caller adds its own properties to the latter. The block names the brokers for the plugin's
    admin client, so it is rendered before the nodes exist: the launcher gives broker N the client port base + N - 1."""
    base = base_port_for(brokers, engine="kafka")
    bootstrap = ",".join(f"{HOST}:{base + index}" for index in range(brokers))
    block = quota_plugin_spec.quota_plugin_properties(spec, admin={"bootstrap_servers": bootstrap})
    return {"base_port": base, "extra_properties": block}


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
        options.setdefault(
            "base_port",
            base_port_for(brokers, options.get("combined", 0), options.get("controllers_only", 0), cluster.engine),
        )
        timeout = options.pop("timeout", 120.0)
        # Listed before it is created: a cluster that fails or times out half-way (some nodes started, volumes
        # mounted) is still stopped by close().
        self.clusters.append(cluster)
        try:
            cluster.create(brokers, **options)
        except NotInRelease as exc:
            # What the release lacks (SCRAM in KRaft before 3.5) is not a failure of the test: it does not apply.
            pytest.skip(str(exc))
        cluster.up(timeout)
        return cluster

    def close(self):
        for cluster in self.clusters:
            if cluster.info is not None:  # None: its creation failed before it described anything to stop
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


def skip_without_own_volumes(cluster):
    """Skip unless every data log dir is a volume of its own: without one (mounting tmpfs needs root), filling a log
    dir would fill the host's filesystem."""
    mounted = {volume["path"] for volume in cluster.info["volumes"]}
    if not all(path in mounted for entry in cluster.broker_nodes for path in entry["log_dirs"]):
        pytest.skip("needs every data log dir on a tmpfs volume of its own: " + "; ".join(cluster.info["notes"]))


def module_cluster(root, brokers, **options):
    """For a module-scoped fixture (``yield from``): one cluster that several tests share, stopped when the fixture
    ends, also when its start fails half-way. Sharing is for tests that leave it as they found it (a refusal, check
    mode), each asserting so: a cluster start is several seconds of both cores."""
    factory = ClusterFactory(root)
    try:
        yield factory(brokers, **options)
    finally:
        factory.close()


def own_volume_cluster(root, brokers, volume_size):
    """For a module-scoped fixture (``yield from``): a real-Kafka cluster whose data log dirs are volumes of
    ``volume_size`` bytes of their own, for tests that fill them; stopped when the fixture ends."""
    # Closed on the way out, a skip included: a traceback kept for the report would otherwise keep it (and the
    # cluster) alive.
    with contextlib.closing(module_cluster(root, brokers, engine="kafka", volume_size=f"{volume_size >> 20}M")) as made:
        for cluster in made:  # the one it makes
            skip_without_own_volumes(cluster)
            yield cluster
