"""One local SparkSession for every pipeline test (starting a JVM costs seconds)."""

import pytest


@pytest.fixture(scope="session")
def spark():
    from headroom_pipeline.session import spark_session

    session = spark_session("local[2]", app_name="headroom-pipeline-tests", conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()
