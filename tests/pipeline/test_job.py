"""The whole job, in-process and through the command line: outputs, accounting, and bad input refused before Spark."""

import json
import os
import subprocess
import sys

import pytest
from pipeline_cli import run_cli

from headroom_pipeline import generate, job, stage_registry
from headroom_pipeline.config import ConfigError, PipelineConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fleet")
    paths = generate.write(str(directory), clusters=2, brokers=2, hours=3)
    with open(paths["snapshots.jsonl"], "a", encoding="utf-8") as handle:
        handle.write("{broken\n")
        handle.write(
            json.dumps(
                {
                    "SnapshotAt": "2026-11-20T00:10:00Z",
                    "BrokerId": 1,
                    "ClusterId": "cluster-1",
                    "Volumes": [{"VolumeName": "/d", "Capacity": 10, "Consumed": -1}],
                }
            )
            + "\n"
        )
    return paths


def test_the_job_writes_every_output_and_accounts_for_every_record(spark, fleet, tmp_path):
    out = str(tmp_path / "out")
    config = PipelineConfig(
        snapshots=fleet["snapshots.jsonl"],
        out=out,
        traffic=fleet["traffic.jsonl"],
        quotas=fleet["quotas.json"],
        topic_thresholds=fleet["topic-thresholds.json"],
        min_available_ratio=0.1,
        progress=False,
    )
    summary = job.run(config)
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as handle:
        written = json.load(handle)
    assert written["rows_read"] == written["rows_used"] + written["rows_rejected"]
    assert written["inputs"]["snapshots"]["rejected"] == 2
    assert written["inputs"]["snapshots"]["read"] == sum(
        1 for line in open(fleet["snapshots.jsonl"], encoding="utf-8") if line.strip()
    )
    assert summary["rows_read"] == written["rows_read"]
    decisions = spark.read.parquet(os.path.join(out, "decisions"))
    assert {"cluster", "at", "policy", "throttle_factor", "state", "fallback_applied"} <= set(decisions.columns)
    assert {row.policy for row in decisions.select("policy").distinct().collect()} == {"strimzi", "graded"}
    forecast = spark.read.parquet(os.path.join(out, "forecast"))
    assert {"cluster", "broker_id", "log_dir", "bytes_per_hour", "crosses_hard_limit_at"} <= set(forecast.columns)
    assert forecast.count() == 2 * 2 * 2
    clients = spark.read.parquet(os.path.join(out, "clients"))
    required = {
        "user",
        "client_id",
        "window_start",
        "produce_bytes_per_sec",
        "producer_byte_rate",
        "quota_used_fraction",
        "throttle_time_ms",
    }
    assert required <= set(clients.columns)
    assert os.path.isdir(os.path.join(out, "topics"))
    reasons = {row.reason for row in spark.read.json(os.path.join(out, "rejected")).collect()}
    assert reasons == {"not a JSON object in the usage snapshot schema", "a volume has a negative size"}
    assert os.path.isfile(os.path.join(out, "report", "index.html"))
    assert written["stages"]["decisions"]["rows"] == decisions.count()
    assert written["stages"]["clients"]["windows_throttled"] > 0, "the generated 'ingest' client surges above its quota"

    # A later run without traffic and report into the same DIR leaves none of the earlier analyses to be taken for its
    # own.
    with open(os.path.join(out, "notes.txt"), "w", encoding="utf-8") as handle:
        handle.write("not the job's")
    job.run(PipelineConfig(snapshots=fleet["snapshots.jsonl"], out=out, report=False, progress=False))
    left = set(os.listdir(out))
    assert not left & {"clients", "client_recommendations", "topics", "topic_thresholds", "report"}
    assert {"notes.txt", "summary.json", "decisions", "forecast", "volumes", "rejected"} <= left


def test_bad_settings_fail_before_spark_starts(tmp_path, fleet):
    with pytest.raises(ConfigError, match="--min-available-bytes and --min-available-ratio are mutually exclusive"):
        job.run(
            PipelineConfig(
                snapshots=fleet["snapshots.jsonl"], out=str(tmp_path), min_available_bytes=1, min_available_ratio=0.1
            )
        )
    with pytest.raises(ConfigError, match="--snapshots: no file matches"):
        job.run(PipelineConfig(snapshots=str(tmp_path / "nothing-*.jsonl"), out=str(tmp_path)))
    with pytest.raises(ConfigError, match="give --traffic too"):
        job.run(PipelineConfig(snapshots=fleet["snapshots.jsonl"], out=str(tmp_path), quotas=fleet["quotas.json"]))


def test_bad_input_fails_before_the_jvm_starts(tmp_path, fleet):
    """In an interpreter of its own (no test's session running): bad input is refused and no JVM was started."""
    config = (
        f"PipelineConfig(snapshots={fleet['snapshots.jsonl']!r}, out={str(tmp_path)!r}, "
        f"quotas={fleet['quotas.json']!r})"
    )
    code = "\n".join(
        [
            "import sys",
            "from pyspark import SparkContext",
            "from headroom_pipeline import job",
            "from headroom_pipeline.config import ConfigError, PipelineConfig",
            "try:",
            f"    job.run({config})",
            "except ConfigError:",
            "    sys.exit(0 if SparkContext._gateway is None else 3)",
            "sys.exit(4)",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_the_stages_run_in_order_and_every_output_has_one():
    names = [stage.name for stage, unused_work in job.PIPELINE]
    assert names == [
        "start Spark",
        "read snapshots",
        "read traffic",
        "read guard decisions",
        "reject unusable records",
        "volume forecast",
        "decision timeline",
        "guard comparison",
        "client quota analysis",
        "topic thresholds",
        "checkpoint",
        "report",
    ], "the forecast comes first: it sizes the decision timeline"
    assert {output.stage for output in stage_registry.OUTPUTS} - {None} <= {
        stage for stage, unused_work in job.PIPELINE
    }
    # An incremental run writes the same outputs; the traffic analyses are carried, not read again.
    incremental = [stage.name for stage, unused_work in job.INCREMENTAL_PIPELINE]
    assert incremental == [
        "start Spark",
        "read snapshots",
        "read guard decisions",
        "reject unusable records",
        "volume forecast",
        "decision timeline",
        "guard comparison",
        "carry traffic analyses",
        "checkpoint",
        "report",
    ]


def test_the_command_line_refuses_bad_input_with_the_option_named(tmp_path, fleet):
    result = run_cli("run", "--snapshots", fleet["snapshots.jsonl"], "--out", str(tmp_path), "--check-interval", "PT1Y")
    assert result.returncode == 2
    assert "--check-interval" in result.stderr
    bad_quotas = tmp_path / "quotas.json"
    bad_quotas.write_text(
        json.dumps({"quotas": [{"entity": {"user": "a"}, "quota_values": {"producer_byte_rate": -1}}]})
    )
    result = run_cli(
        "run",
        "--snapshots",
        fleet["snapshots.jsonl"],
        "--traffic",
        fleet["traffic.jsonl"],
        "--quotas",
        str(bad_quotas),
        "--out",
        str(tmp_path),
    )
    assert result.returncode == 2
    assert "--quotas: quotas[0].producer_byte_rate must be greater than 0 (got -1)" in result.stderr
    assert not os.path.exists(tmp_path / "decisions")


def test_an_unreachable_snapshot_topic_is_a_failure_not_bad_input_and_comes_before_spark(tmp_path):
    result = run_cli(
        "run", "--snapshots", "kafka://127.0.0.1:1/snapshots?request_timeout=2", "--out", str(tmp_path / "out")
    )
    assert result.returncode == 1
    assert "--snapshots: cannot read topic 'snapshots'" in result.stderr
    assert "start Spark" not in result.stderr, "the topic is read before the JVM starts"
    result = run_cli(
        "run", "--snapshots", "kafka://127.0.0.1:1/snapshots?request_timeout=soon", "--out", str(tmp_path / "out")
    )
    assert result.returncode == 2
    assert (
        "request_timeout in the kafka:// URL must be a number of seconds greater than 0 (got 'soon')" in result.stderr
    )


def test_the_same_job_runs_under_spark_submit_with_the_local_settings(tmp_path, fleet):
    spark_submit = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    out = tmp_path / "out"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)  # __main__.py run as a script finds its package by itself
    result = subprocess.run(
        [
            spark_submit,
            "--master",
            "local[1]",
            "--driver-memory",
            "512m",
            os.path.join(ROOT, "headroom_pipeline", "__main__.py"),
            "run",
            "--snapshots",
            fleet["snapshots.jsonl"],
            "--out",
            str(out),
            "--no-report",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
        cwd=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr[-5000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rows_read"] == summary["rows_used"] + summary["rows_rejected"]
    assert summary["spark"]["master"] == "local[1]", "spark-submit's master, not the job's default"
    assert summary["spark"]["driver_host"] == "127.0.0.1", (
        "a local master listens on loopback only, under spark-submit too"
    )
    assert summary["spark"]["shuffle_partitions"] == 4, "two per thread, at least 4"


def test_a_directory_the_job_did_not_write_is_never_removed(spark, fleet, tmp_path):
    out = tmp_path / "shared"
    for name, marker in (("topics", "_SUCCESS"), ("report", "index.html"), ("clients", "_SUCCESS")):
        (out / name).mkdir(parents=True)
        (out / name / marker).write_text("someone else's")
    job.run(PipelineConfig(snapshots=fleet["snapshots.jsonl"], out=str(out), report=False, progress=False))
    for name, marker in (("topics", "_SUCCESS"), ("report", "index.html"), ("clients", "_SUCCESS")):
        assert (out / name / marker).read_text() == "someone else's"


def test_the_help_shows_defaults_of_options_not_of_flags():
    text = run_cli("run", "--help").stdout
    assert "(default: True)" not in text and "(default: [])" not in text
    assert "decision when no snapshot is fresh (default: pause)" in " ".join(text.split())


def test_the_command_line_runs_the_job(tmp_path, fleet):
    out = tmp_path / "out"
    result = run_cli(
        "run",
        "--snapshots",
        fleet["snapshots.jsonl"],
        "--out",
        str(out),
        "--min-available-bytes",
        "1073741824",
        "--check-interval",
        "PT1M",
        "--no-report",
    )
    assert result.returncode == 0, result.stderr[-5000:]
    printed = json.loads(result.stdout.strip().splitlines()[-1])
    assert printed["rows_read"] == printed["rows_used"] + printed["rows_rejected"]
    assert "decision timeline done" in result.stderr, "progress lines on stderr"
    assert (out / "summary.json").is_file() and not (out / "report").exists()
