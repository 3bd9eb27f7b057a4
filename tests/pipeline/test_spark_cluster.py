"""The job on a Spark standalone cluster (a master and two workers on loopback, each its own JVM) writes exactly the
outputs it writes in local mode: run with spark-submit, and through the usage_pipeline role with launcher spark-submit.

The job runs as subprocesses only (the session-wide in-process ``spark`` fixture is not used); the outputs are read
back with pyarrow. The input is a small, eventful fleet from the benchmark's generator, in several Parquet files so
that the read has a task per file, plus one file of records the job must reject.
"""

import contextlib
import datetime
import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from bench_modules import bench_module
from role_play import run_role
from spark_standalone import standalone_cluster

HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = os.path.dirname(os.path.dirname(HERE))
JOB_SCRIPT = os.path.join(ROOT, "headroom_pipeline", "__main__.py")
APP_NAME = "headroom-pipeline"
# 10 clusters of 4 brokers over 10 hours (each limit kind once), with outages, stopping brokers and republished
# messages.
FLEET = {
    "brokers_per_cluster": 4,
    "minutes": 600,
    "broker_gaps": 3.0,
    "cluster_gaps": 2.0,
    "stopping_share": 0.1,
    "duplicate_share": 0.01,
}
ROWS = 10 * 4 * 600
ROWS_PER_FILE = 4000
JOB_OPTIONS = ["--min-available-ratio", "0.1", "--no-report", "--quiet"]
EXECUTOR_MEMORY_MIB = 640  # each worker offers 1 GiB; the executor's heap must fit in it
SPARK_SUBMIT_SETTINGS = [
    "--driver-memory",
    "1g",
    "--conf",
    "spark.driver.host=127.0.0.1",
    "--conf",
    "spark.driver.bindAddress=127.0.0.1",
    "--conf",
    "spark.executor.cores=1",
]
PARQUET_OUTPUTS = ("volumes", "decisions", "forecast")
SUMMARY_FIGURES = ("rows_read", "rows_used", "rows_rejected", "stages", "inputs", "warnings")
RELATIVE_TOLERANCE = 1e-12
RUN_TIMEOUT = 600


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    """The fleet's snapshots as Parquet files, and one more file of the same schema whose records are each unusable."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    bench = bench_module("pipeline_bench")
    directory = str(tmp_path_factory.mktemp("snapshots"))
    parameters = dict(bench.fleet_parameters(ROWS, **FLEET), rows_per_file=ROWS_PER_FILE)
    assert bench.generate(directory, parameters) == math.ceil(ROWS / ROWS_PER_FILE)
    good = pq.read_table(os.path.join(directory, "part-00000.parquet")).slice(0, 3)
    volumes = good.column("Volumes").combine_chunks()
    volume = volumes.flatten()
    capacity = volume.field("Capacity")
    consumed = pa.array(
        [-1, capacity[1].as_py() + 1, volume.field("Consumed")[2].as_py()], type=volume.field("Consumed").type
    )
    volume = pa.StructArray.from_arrays(
        [volume.field("VolumeName"), capacity, consumed], names=["VolumeName", "Capacity", "Consumed"]
    )
    bad = good.set_column(
        good.schema.get_field_index("Volumes"), "Volumes", pa.ListArray.from_arrays(volumes.offsets, volume)
    )
    epoch = pa.scalar(0, type=good.schema.field("SnapshotAt").type)
    stamps = pc.if_else(pa.array([False, False, True]), epoch, good.column("SnapshotAt").combine_chunks())
    bad = bad.set_column(bad.schema.get_field_index("SnapshotAt"), "SnapshotAt", stamps)
    pq.write_table(bad, os.path.join(directory, "part-unusable.parquet"))
    return directory


@pytest.fixture(scope="module")
def local_job(snapshots, tmp_path_factory):
    """The job in local mode, started in the background: it runs while the cluster starts (see local_out)."""
    directory = tmp_path_factory.mktemp("local")
    out = str(directory / "out")
    env = dict(os.environ, PYTHONPATH=ROOT)
    with open(directory / "stdout", "wb") as stdout, open(directory / "stderr", "wb") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headroom_pipeline",
                "run",
                "--snapshots",
                snapshots,
                "--out",
                out,
                *JOB_OPTIONS,
                "--master",
                "local[2]",
            ],
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        yield process, out, directory
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def cluster(local_job, tmp_path_factory):  # pylint: disable=unused-argument  # started after the local job, to overlap with it
    with standalone_cluster(
        str(tmp_path_factory.mktemp("spark-cluster")), workers=2, cores_per_worker=1, worker_memory="1g"
    ) as running:
        yield running


@pytest.fixture(scope="module")
def local_out(local_job):
    """The outputs of the job in local mode, the reference every cluster run must equal."""
    process, out, directory = local_job
    status = process.wait(timeout=RUN_TIMEOUT)
    assert status == 0, (directory / "stderr").read_text(errors="replace")[-5000:]
    assert _summary(out)["spark"]["master"] == "local[2]"
    return out


def test_spark_submit_on_the_cluster_writes_the_outputs_of_local_mode(cluster, snapshots, local_out, tmp_path):
    out = str(tmp_path / "out")
    before = _application_ids(cluster)
    env = dict(cluster.env)
    env.pop("PYTHONPATH", None)  # __main__.py run as a script imports the installed headroom-kafka package
    command = [
        cluster.spark_submit,
        "--master",
        cluster.master_url,
        *SPARK_SUBMIT_SETTINGS,
        "--conf",
        f"spark.executor.memory={EXECUTOR_MEMORY_MIB}m",
        JOB_SCRIPT,
        "run",
        "--snapshots",
        snapshots,
        "--out",
        out,
        *JOB_OPTIONS,
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=RUN_TIMEOUT, check=False
    )
    assert result.returncode == 0, result.stderr[-8000:]
    assert json.loads(result.stdout.strip().splitlines()[-1])["out"] == out

    summary = _summary(out)
    assert summary["spark"]["master"] == cluster.master_url
    assert summary["spark"]["shuffle_partitions"] == 200, "a cluster's master: Spark's default, coalesced by AQE"
    assert summary["rows_rejected"] == 3 and summary["rows_read"] == ROWS + 3
    _assert_ran_on_the_workers(cluster, before)
    _assert_same_outputs(local_out, out)


def test_the_role_with_launcher_spark_submit_on_the_cluster_writes_the_outputs_of_local_mode(
    cluster, snapshots, local_out, tmp_path
):
    out = str(tmp_path / "out")
    before = _application_ids(cluster)
    role_vars = {
        "usage_pipeline_launcher": "spark-submit",
        "usage_pipeline_spark_submit": cluster.spark_submit,
        "usage_pipeline_master": cluster.master_url,
        "usage_pipeline_driver_memory": "1g",
        "usage_pipeline_spark_submit_args": SPARK_SUBMIT_SETTINGS[2:],
        "usage_pipeline_conf": {
            "spark.executor.memory": f"{EXECUTOR_MEMORY_MIB}m"
        },  # the job's --conf: set before its context starts
        "usage_pipeline_snapshots": snapshots,
        "usage_pipeline_out": out,
        "usage_pipeline_min_available_ratio": 0.1,
        "usage_pipeline_report": False,
        "usage_pipeline_quiet": True,
        "usage_pipeline_timeout": RUN_TIMEOUT,
        "usage_pipeline_state": str(tmp_path / "state"),
    }
    environment = dict(cluster.env)
    environment.pop("PYTHONPATH", None)  # the role puts the collection root there itself
    result = run_role(tmp_path, role_vars, environment=environment, timeout=RUN_TIMEOUT + 60)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    fact = json.loads((tmp_path / "fact.json").read_text())
    summary = _summary(out)
    assert fact == summary
    assert summary["spark"]["master"] == cluster.master_url
    application = _assert_ran_on_the_workers(cluster, before)
    assert application["memoryperexecutor"] == EXECUTOR_MEMORY_MIB, (
        "the executors got the memory the role's usage_pipeline_conf asked for"
    )
    _assert_same_outputs(local_out, out)

    # Nothing new since: the role changes nothing, and the cluster gets no application.
    before = _application_ids(cluster)
    again = run_role(tmp_path, role_vars, environment=environment, timeout=RUN_TIMEOUT + 60)
    assert again.returncode == 0, again.stdout[-8000:] + again.stderr[-4000:]
    assert re.search(r"localhost\s+: ok=\d+\s+changed=0 ", again.stdout), again.stdout[-4000:]
    assert json.loads((tmp_path / "fact.json").read_text())["incremental"]["mode"] == "unchanged"
    assert _application_ids(cluster) == before
    assert _summary(out) == summary


# -- the cluster's own record of the work --------------------------------------------------------------------------
def _application_ids(cluster):
    status = cluster.status()
    return {application["id"] for application in (status.get("activeapps") or []) + (status.get("completedapps") or [])}


def _assert_ran_on_the_workers(cluster, before):
    """The master lists the job as a finished application of its own, and each worker's executor for it ran tasks
    (from their logs in the workers' work directories); returns the master's record of the application."""
    deadline = time.monotonic() + 60
    while True:  # the master marks the application finished once the driver's disconnect reached it
        status = cluster.status()
        new = [application for application in status.get("completedapps") or [] if application["id"] not in before]
        if new or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert len(new) == 1, json.dumps(status)[:4000]
    application = new[0]
    assert application["name"] == APP_NAME and application["state"] == "FINISHED", application
    tasks = {}
    for work_dir in cluster.worker_dirs:
        logs = []
        for root, _dirs, names in os.walk(os.path.join(work_dir, application["id"])):
            logs.extend(os.path.join(root, name) for name in names if name == "stderr")
        tasks[os.path.basename(work_dir)] = sum(_finished_tasks(path) for path in logs)
    assert all(count > 0 for count in tasks.values()), f"tasks finished per worker: {tasks}"
    return application


def _finished_tasks(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return sum(1 for line in handle if "Executor: Finished task" in line)


# -- outputs ---------------------------------------------------------------------------------------------------------
def _summary(out):
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as handle:
        return json.load(handle)


def _assert_same_outputs(expected_out, actual_out):
    expected, actual = _summary(expected_out), _summary(actual_out)
    assert {key: actual.get(key) for key in SUMMARY_FIGURES} == {key: expected.get(key) for key in SUMMARY_FIGURES}
    assert expected["rows_rejected"] > 0 and expected["stages"]["decisions"]["rows"] > 0
    for name in PARQUET_OUTPUTS:
        assert _partitions(actual_out, name) == _partitions(expected_out, name), name
        columns, rows = _parquet_rows(os.path.join(expected_out, name))
        actual_columns, actual_rows = _parquet_rows(os.path.join(actual_out, name))
        assert actual_columns == columns, name
        assert len(rows) > 0 and len(actual_rows) == len(rows), name
        for index, (want, got) in enumerate(zip(rows, actual_rows, strict=True)):
            assert _same_row(want, got), f"{name}: sorted row {index} differs:\n local:   {want}\n cluster: {got}"
    assert _partitions(actual_out, "rejected") == _partitions(expected_out, "rejected") == ["input=snapshots"]
    assert _rejected(actual_out) == _rejected(expected_out)
    assert len(_rejected(expected_out)) == expected["rows_rejected"]


def _partitions(out, name):
    return sorted(entry for entry in os.listdir(os.path.join(out, name)) if "=" in entry)


def _parquet_rows(path):
    """(column names and types, rows sorted) of a Parquet output directory, its partition columns included."""
    import pyarrow.dataset as ds

    table = ds.dataset(path, format="parquet", partitioning="hive").to_table()
    table = table.select(sorted(table.column_names))
    columns = [(field.name, str(field.type)) for field in table.schema]
    rows = [tuple(row[name] for name, unused_type in columns) for row in table.to_pylist()]
    return columns, sorted(rows, key=_sort_key)


def _sort_key(row):
    """Orders rows by every value; floats by a rounded value, so that rows differing in the last bits sort alike."""
    return tuple(_sortable(value) for value in row)


def _sortable(value):
    if value is None:
        return (0, "")
    if isinstance(value, float):
        return (1, "nan") if math.isnan(value) else (2, float(f"{value:.9g}"))
    if isinstance(value, (datetime.datetime, datetime.date)):
        return (3, value.isoformat())
    if isinstance(value, (list, dict)):
        return (4, json.dumps(value, sort_keys=True, default=str))
    return (5, value) if isinstance(value, (int, str, bool)) else (6, repr(value))


def _same_row(want, got):
    return len(want) == len(got) and all(_same_value(left, right) for left, right in zip(want, got, strict=True))


def _same_value(want, got):
    if isinstance(want, float) and isinstance(got, float):
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        return want == got or math.isclose(want, got, rel_tol=RELATIVE_TOLERANCE, abs_tol=0.0)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_same_value(left, right) for left, right in zip(want, got, strict=True))
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(_same_value(want[key], got[key]) for key in want)
    return want == got


def _rejected(out):
    """Every rejected record (JSON lines under rejected/input=NAME/), with its input, sorted."""
    records = []
    directory = os.path.join(out, "rejected")
    for partition in _partitions(out, "rejected"):
        for name in sorted(os.listdir(os.path.join(directory, partition))):
            if name.startswith((".", "_")):
                continue
            with open(os.path.join(directory, partition, name), encoding="utf-8") as handle:
                records.extend(dict(json.loads(line), partition=partition) for line in handle if line.strip())
    return sorted(records, key=lambda record: json.dumps(record, sort_keys=True))
