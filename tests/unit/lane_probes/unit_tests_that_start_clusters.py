"""Unit tests that start what the unit lane may not: run by tests/unit/test_lanes.py in a pytest of its own, each must
fail before anything starts. The file name keeps them out of the suite (pytest.ini's test_*.py)."""

import os
import sys

from kafka_testbed.hosts.fleet import HostFleet
from kafka_testbed.prometheus import PrometheusServer

# tests/pipeline is no package: its helper is imported by name, as its own tests do.
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "pipeline")
)
from spark_standalone import standalone_cluster  # noqa: E402  pylint: disable=wrong-import-position


def test_starts_a_kafka_cluster(kafka_cluster_factory):
    kafka_cluster_factory(1, engine="kafka")


def test_starts_a_model_cluster(kafka_cluster_factory):
    kafka_cluster_factory(1, engine="sim")


def test_starts_a_fleet(tmp_path):
    HostFleet(str(tmp_path)).up_fleet(1, 1)


def test_starts_prometheus():
    with PrometheusServer({"none": []}):
        pass


def test_starts_a_spark_session(spark):
    del spark


def test_starts_a_spark_standalone_cluster(tmp_path):
    with standalone_cluster(tmp_path):
        pass
