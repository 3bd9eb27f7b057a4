"""Conformance tests of the test cluster: the helper modules next to this file (``clients``) are importable by name.

The suite pins down the model's behaviour. It runs on the model by default; ``HEADROOM_CONFORMANCE_ENGINE=kafka``
runs the same tests against real Apache Kafka brokers, which is how the model's differences from Kafka are found
(see kafka_testbed/README.md).
"""

import os
import sys

import pytest

from kafka_testbed.testing import ClusterFactory

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

CONFORMANCE_ENGINE = "HEADROOM_CONFORMANCE_ENGINE"


def pytest_collection_modifyitems(items):
    """On real Kafka, tests of the model's own features are skipped with the reason the model differs."""
    if os.environ.get(CONFORMANCE_ENGINE, "sim") == "sim":
        return
    for item in items:
        marker = item.get_closest_marker("model_only")
        if marker is not None:
            item.add_marker(pytest.mark.skip(reason=f"model only: {marker.kwargs.get('reason') or marker.args[0]}"))


# Module scope: this directory is no Python package (it would shadow the kafka_testbed package), so a package-scoped
# fixture would last the whole session and leave every later test file of the same worker on the model.
@pytest.fixture(scope="module", autouse=True)
def conformance_engine():
    """Clusters created by this suite's fixtures use the conformance engine (the model unless told otherwise)."""
    saved = os.environ.get("HEADROOM_TEST_ENGINE")
    os.environ["HEADROOM_TEST_ENGINE"] = os.environ.get(CONFORMANCE_ENGINE, "sim")
    yield os.environ["HEADROOM_TEST_ENGINE"]
    if saved is None:
        os.environ.pop("HEADROOM_TEST_ENGINE", None)
    else:
        os.environ["HEADROOM_TEST_ENGINE"] = saved


# The clusters of this suite's tests, of the conformance engine whatever fixtures other suites have set up before: the
# session's kafka_cluster of another suite (real Kafka) must not answer a test that pins the model, nor the reverse.
@pytest.fixture(scope="session")
def kafka_cluster(kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root, engine=os.environ.get(CONFORMANCE_ENGINE, "sim"))
    cluster = factory(3)
    yield cluster
    factory.close()


@pytest.fixture
def kafka_cluster_factory(kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root, engine=os.environ.get(CONFORMANCE_ENGINE, "sim"))
    yield factory
    factory.close()


# Admin clients of both libraries for a module's ``cluster`` fixture (each test module defines the cluster it needs).
@pytest.fixture(scope="module")
def confluent_admin(cluster):
    from clients import confluent_config
    from confluent_kafka.admin import AdminClient

    return AdminClient(confluent_config(cluster))


@pytest.fixture(scope="module")
def kafka_python_admin(cluster):
    from clients import kafka_python_config
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(**kafka_python_config(cluster))
    yield admin
    admin.close()
