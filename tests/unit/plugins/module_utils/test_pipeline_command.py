"""The usage pipeline job's command line: the launcher, the options given, the flags and Spark settings, in order."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.pipeline_command import PipelineCommandError, pipeline_argv

OPTIONS = {
    "--snapshots": "kafka://k:9092/usage?x=1 2",
    "--out": "out dir",
    "--traffic": None,
    "--master": "local[2]",
    "--driver-memory": "",
    "--min-available-ratio": 0.1,
    "--max-age": 300,
}


def test_python_runs_the_package_with_every_option_given_in_order_and_nothing_empty():
    argv = pipeline_argv(
        {
            "launcher": "python",
            "python": "/venv/bin/python",
            "options": OPTIONS,
            "report": False,
            "quiet": True,
            "conf": {"spark.executor.memory": "4g", "spark.sql.adaptive.enabled": True},
            "extra_args": ["--x", 5],
        }
    )
    assert argv == [
        "/venv/bin/python",
        "-m",
        "headroom_pipeline",
        "run",
        "--snapshots",
        "kafka://k:9092/usage?x=1 2",
        "--out",
        "out dir",
        "--master",
        "local[2]",
        "--min-available-ratio",
        "0.1",
        "--max-age",
        "300",
        "--no-report",
        "--quiet",
        "--conf",
        "spark.executor.memory=4g",
        "--conf",
        "spark.sql.adaptive.enabled=true",
        "--x",
        "5",
    ]


def test_spark_submit_takes_the_master_and_driver_memory_itself():
    argv = pipeline_argv(
        {
            "launcher": "spark-submit",
            "spark_submit": "spark-submit",
            "master": "spark://m:7077",
            "driver_memory": "2g",
            "spark_submit_args": ["--executor-memory", "4g"],
            "collection_root": "/c",
            "options": OPTIONS,
        }
    )
    assert argv == [
        "spark-submit",
        "--master",
        "spark://m:7077",
        "--driver-memory",
        "2g",
        "--executor-memory",
        "4g",
        "/c/headroom_pipeline/__main__.py",
        "run",
        "--snapshots",
        "kafka://k:9092/usage?x=1 2",
        "--out",
        "out dir",
        "--min-available-ratio",
        "0.1",
        "--max-age",
        "300",
    ]


def test_an_unknown_launcher_is_named():
    with pytest.raises(PipelineCommandError, match=r"launcher must be one of python, spark-submit \(got 'java'\)"):
        pipeline_argv({"launcher": "java"})
