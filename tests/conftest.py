"""Make the collection importable as ``ansible_collections.headroom.kafka`` and the test cluster package importable;
one local SparkSession for every test that runs the pipeline in-process."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")


def _link_collection():
    namespace = os.path.join(COLLECTIONS, "ansible_collections", "headroom")
    link = os.path.join(namespace, "kafka")
    os.makedirs(namespace, exist_ok=True)
    if not os.path.islink(link):
        try:
            os.symlink(ROOT, link)
        except FileExistsError:
            pass
    for path in (COLLECTIONS, ROOT):
        if path not in sys.path:
            sys.path.insert(0, path)


_link_collection()


@pytest.fixture(scope="session")
def spark():
    """Starting a JVM costs seconds: one session per pytest process, which no test may stop (a job run in-process
    leaves a caller's session running)."""
    from headroom_pipeline.session import spark_session

    session = spark_session("local[2]", app_name="headroom-pipeline-tests", conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()
