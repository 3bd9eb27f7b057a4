"""Conformance tests of the test cluster: the helper modules next to this file (``clients``) are importable by name."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


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
