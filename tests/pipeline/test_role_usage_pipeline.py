"""The usage_pipeline role with a stand-in for the job: the command line it builds, its environment, the summary it
reads back.

The stand-in records its argv, working directory and environment, writes DIR/summary.json like the job and can fail
or hang on request (through --cluster), so these tests need neither Spark nor a cluster.
"""

import json
import os
import re
import sys
import time

import pytest
from role_play import run_role

from kafka_testbed.nodes import process_alive

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_ROOT = os.path.realpath(ROOT)
SECRET = "pa55-w0rd-for-sasl"
SUMMARY = {
    "rows_read": 10,
    "rows_used": 9,
    "rows_rejected": 1,
    "inputs": {"snapshots": {"read": 10, "used": 9, "rejected": 1}},
    "stages": {"decisions": {"rows": 4, "not_open": 1}, "forecast": {"volumes": 2, "crossing_hard_limit": 1}},
}

STAND_IN = """\
#!{python}
import json, os, sys, time

record = {{"argv": sys.argv[1:], "cwd": os.getcwd(), "pythonpath": os.environ.get("PYTHONPATH"),
           "sasl_password": os.environ.get("HEADROOM_KAFKA_SASL_PASSWORD"),
           "ssl_password": os.environ.get("HEADROOM_KAFKA_SSL_PASSWORD"),
           "pid": os.getpid()}}
with open({record!r}, "w") as handle:
    json.dump(record, handle)
arguments = sys.argv[1:]
cluster = arguments[arguments.index("--cluster") + 1] if "--cluster" in arguments else None
if cluster == "fail":
    print("headroom_pipeline: failed: could not log in with " + str(record["sasl_password"]), file=sys.stderr)
    sys.exit(1)
if cluster == "hang":
    time.sleep(120)
out = os.path.abspath(arguments[arguments.index("--out") + 1])
os.makedirs(out, exist_ok=True)
summary = dict({summary}, out=out, report=os.path.join(out, "report", "index.html"))
with open(os.path.join(out, "summary.json"), "w") as handle:
    json.dump(summary, handle)
line = {{"out": out}}
if "--state" in arguments:  # the job's answer with a state: nothing new once the state exists
    state = arguments[arguments.index("--state") + 1]
    line["incremental"] = {{"mode": "unchanged" if os.path.isdir(state) else "full", "reason": "stand-in"}}
    os.makedirs(state, exist_ok=True)
print(json.dumps(line))
"""


@pytest.fixture
def stand_in(tmp_path):
    """An executable that plays the job (or spark-submit); returns (path, record file)."""
    record = tmp_path / "record.json"
    path = tmp_path / "fake-python"
    path.write_text(STAND_IN.format(python=sys.executable, record=str(record), summary=repr(SUMMARY)))
    path.chmod(0o755)
    return str(path), record


def recorded(record):
    return json.loads(record.read_text())


def test_the_python_launcher_runs_the_job_with_every_option(tmp_path, stand_in):
    python, record = stand_in
    role_vars = {
        "usage_pipeline_python": python,
        "usage_pipeline_snapshots": "snapshots/*.jsonl",
        "usage_pipeline_out": "out",
        "usage_pipeline_traffic": "traffic.jsonl",
        "usage_pipeline_quotas": "quotas.json",
        "usage_pipeline_proposed_quotas": "proposed.json",
        "usage_pipeline_topic_thresholds": "plan.json",
        "usage_pipeline_cluster": "east",
        "usage_pipeline_master": "local[2]",
        "usage_pipeline_driver_memory": "2g",
        "usage_pipeline_conf": {"spark.executor.memory": "4g"},
        "usage_pipeline_min_available_ratio": 0.1,
        "usage_pipeline_check_interval": "PT30S",
        "usage_pipeline_throttle_factor_validity": 600,
        "usage_pipeline_throttle_factor_fallback": 0.5,
        "usage_pipeline_max_age": "PT5M",
        "usage_pipeline_missing_data_action": "open",
        "usage_pipeline_forecast_window": "P3D",
        "usage_pipeline_client_window": 30,
        "usage_pipeline_report": False,
        "usage_pipeline_quiet": True,
        "usage_pipeline_quota_window_num": 30,
        "usage_pipeline_quota_window_size": 2,
        "usage_pipeline_recommend_percentile": 0.95,
        "usage_pipeline_recommend_headroom": 1.5,
        "usage_pipeline_extra_args": ["--cluster", "west"],
    }
    result = run_role(tmp_path, role_vars)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    job = recorded(record)
    assert job["argv"] == [
        "-m",
        "headroom_pipeline",
        "run",
        "--snapshots",
        "snapshots/*.jsonl",
        "--out",
        "out",
        "--traffic",
        "traffic.jsonl",
        "--quotas",
        "quotas.json",
        "--proposed-quotas",
        "proposed.json",
        "--topic-thresholds",
        "plan.json",
        "--cluster",
        "east",
        "--master",
        "local[2]",
        "--driver-memory",
        "2g",
        "--min-available-ratio",
        "0.1",
        "--check-interval",
        "PT30S",
        "--throttle-factor-validity",
        "600",
        "--throttle-factor-fallback",
        "0.5",
        "--max-age",
        "PT5M",
        "--missing-data-action",
        "open",
        "--forecast-window",
        "P3D",
        "--client-window",
        "30",
        "--quota-window-num",
        "30",
        "--quota-window-size",
        "2",
        "--recommend-percentile",
        "0.95",
        "--recommend-headroom",
        "1.5",
        "--no-report",
        "--quiet",
        "--conf",
        "spark.executor.memory=4g",
        "--cluster",
        "west",
    ]
    assert job["pythonpath"] == REAL_ROOT and os.path.isfile(
        os.path.join(job["pythonpath"], "headroom_pipeline", "__main__.py")
    )
    assert job["cwd"] == str(tmp_path), "relative paths are relative to the playbook's directory"
    assert job["sasl_password"] is None and job["ssl_password"] is None
    fact = json.loads((tmp_path / "fact.json").read_text())
    assert fact["rows_read"] == 10 and fact["stages"]["forecast"]["crossing_hard_limit"] == 1
    assert f"Report: {tmp_path}/out/report/index.html" in result.stdout
    assert "Rows read 10, used 9, rejected 1" in result.stdout
    assert "forecast: volumes: 2, crossing_hard_limit: 1" in result.stdout
    assert re.search(
        r"TASK \[headroom\.kafka\.usage_pipeline : Run the pipeline job\][^\n]*\n"
        r"(ASYNC[^\n]*\n)?changed: \[localhost\]",
        result.stdout,
    ), "the job rewrites its outputs: changed, by design"


def test_defaults_pass_only_the_required_options(tmp_path, stand_in):
    python, record = stand_in
    out = tmp_path / "absolute-out"
    result = run_role(
        tmp_path,
        {
            "usage_pipeline_python": python,
            "usage_pipeline_snapshots": "kafka://k1:9092,k2:9092/usage",
            "usage_pipeline_out": str(out),
            "usage_pipeline_timeout": 0,
        },
    )
    assert result.returncode == 0, result.stdout[-8000:]
    assert recorded(record)["argv"] == [
        "-m",
        "headroom_pipeline",
        "run",
        "--snapshots",
        "kafka://k1:9092,k2:9092/usage",
        "--out",
        str(out),
        "--master",
        "local[*]",
        "--missing-data-action",
        "pause",
    ]
    assert (tmp_path / "fact.json").exists()


def test_with_a_state_directory_a_run_with_nothing_new_reports_no_change(tmp_path, stand_in):
    python, record = stand_in
    role_vars = {"usage_pipeline_python": python, "usage_pipeline_snapshots": "s.jsonl", "usage_pipeline_out": "out"}

    def changed(result):
        assert result.returncode == 0, result.stdout[-8000:]
        return int(re.search(r"localhost\s+: ok=\d+\s+changed=(\d+) ", result.stdout).group(1))

    assert changed(run_role(tmp_path, dict(role_vars, usage_pipeline_state="state"))) == 1
    assert recorded(record)["argv"][-2:] == ["--state", "state"]
    assert json.loads((tmp_path / "fact.json").read_text())["incremental"]["mode"] == "full"
    assert changed(run_role(tmp_path, dict(role_vars, usage_pipeline_state="state"))) == 0
    assert json.loads((tmp_path / "fact.json").read_text())["incremental"] == {
        "mode": "unchanged",
        "reason": "stand-in",
    }
    assert changed(run_role(tmp_path, role_vars)) == 1, "without a state every run replaces the outputs"


def test_the_spark_submit_launcher(tmp_path, stand_in):
    spark_submit, record = stand_in
    result = run_role(
        tmp_path,
        {
            "usage_pipeline_launcher": "spark-submit",
            "usage_pipeline_spark_submit": spark_submit,
            "usage_pipeline_master": "spark://head:7077",
            "usage_pipeline_driver_memory": "3g",
            "usage_pipeline_spark_submit_args": ["--deploy-mode", "client"],
            "usage_pipeline_snapshots": "s.jsonl",
            "usage_pipeline_out": "out",
            "usage_pipeline_min_available_bytes": 1000,
        },
    )
    assert result.returncode == 0, result.stdout[-8000:]
    job = recorded(record)
    assert job["argv"] == [
        "--master",
        "spark://head:7077",
        "--driver-memory",
        "3g",
        "--deploy-mode",
        "client",
        os.path.join(REAL_ROOT, "headroom_pipeline", "__main__.py"),
        "run",
        "--snapshots",
        "s.jsonl",
        "--out",
        "out",
        "--min-available-bytes",
        "1000",
        "--missing-data-action",
        "pause",
    ]
    assert job["pythonpath"] == REAL_ROOT


def test_an_installed_collection_puts_its_collections_directory_on_the_path(tmp_path, stand_in):
    """Installed by ansible-galaxy, the collection sits in .../ansible_collections/headroom/kafka: the job finds the
    module_utils it shares with the modules by their own name from the directory holding ansible_collections."""
    python, record = stand_in
    installed = tmp_path / "site" / "ansible_collections" / "headroom" / "kafka"
    installed.mkdir(parents=True)
    result = run_role(
        tmp_path,
        {
            "usage_pipeline_python": python,
            "usage_pipeline_collection_root": str(installed),
            "usage_pipeline_snapshots": "s.jsonl",
            "usage_pipeline_out": "out",
        },
    )
    assert result.returncode == 0, result.stdout
    collections = os.path.realpath(tmp_path / "site")
    assert recorded(record)["pythonpath"] == os.path.realpath(installed) + os.pathsep + collections


def test_both_volume_limits_fail_before_the_job_runs(tmp_path, stand_in):
    python, record = stand_in
    result = run_role(
        tmp_path,
        {
            "usage_pipeline_python": python,
            "usage_pipeline_snapshots": "s.jsonl",
            "usage_pipeline_out": "out",
            "usage_pipeline_min_available_bytes": 1000,
            "usage_pipeline_min_available_ratio": 0.1,
        },
    )
    assert result.returncode != 0
    assert (
        "usage_pipeline_min_available_bytes and usage_pipeline_min_available_ratio are mutually exclusive"
        in result.stdout
    )
    assert not record.exists()


def test_the_required_options_are_named_when_missing(tmp_path, stand_in):
    python, record = stand_in
    result = run_role(tmp_path, {"usage_pipeline_python": python})
    assert result.returncode != 0
    assert "usage_pipeline_out" in result.stdout and "usage_pipeline_snapshots" in result.stdout
    assert not record.exists()


def test_passwords_reach_the_job_in_its_environment_and_never_the_output(tmp_path, stand_in):
    python, record = stand_in
    role_vars = {
        "usage_pipeline_python": python,
        "usage_pipeline_snapshots": "kafka://k1:9092/usage?security_protocol=SASL_SSL",
        "usage_pipeline_out": "out",
        "usage_pipeline_sasl_password": SECRET,
        "usage_pipeline_cluster": "fail",
    }
    result = run_role(tmp_path, role_vars, "-vvv")
    assert result.returncode != 0
    assert recorded(record)["sasl_password"] == SECRET, "the job gets the password"
    assert SECRET not in result.stdout + result.stderr
    assert "The pipeline job failed (exit code 1)" in result.stdout
    assert "could not log in with ********" in result.stdout, "the failure is explained, the password masked"
    assert SECRET not in json.dumps(recorded(record)["argv"])


def test_check_mode_shows_the_command_and_runs_nothing(tmp_path, stand_in):
    python, record = stand_in
    result = run_role(
        tmp_path,
        {"usage_pipeline_python": python, "usage_pipeline_snapshots": "s.jsonl", "usage_pipeline_out": "out"},
        "--check",
    )
    assert result.returncode == 0, result.stdout[-8000:]
    assert (
        f"Check mode, the job does not run: {python} -m headroom_pipeline run --snapshots s.jsonl --out out"
        in result.stdout
    )
    assert not record.exists()


def scheduled(python, units, **variables):
    """The role's variables for a scheduled job whose unit files go to ``units``."""
    return {
        "usage_pipeline_python": python,
        "usage_pipeline_snapshots": "kafka://k1:9092/usage?security_protocol=SASL_SSL",
        "usage_pipeline_out": "out",
        "usage_pipeline_sasl_password": SECRET,
        "usage_pipeline_schedule": "hourly",
        "usage_pipeline_unit_dir": str(units),
        **variables,
    }


@pytest.mark.parametrize(
    "variables, said",
    [
        (
            {"usage_pipeline_schedule": "every hour"},
            'usage_pipeline_schedule "every hour" is not a systemd calendar expression',
        ),
        ({"usage_pipeline_unit": "pipeline.service"}, 'usage_pipeline_unit "pipeline.service" is not a unit name'),
        ({"usage_pipeline_service_user": "nobody-here"}, 'usage_pipeline_service_user "nobody-here" is not a user'),
        ({"usage_pipeline_unit": "pipeline\n"}, 'usage_pipeline_unit "pipeline\\n" is not a unit name'),
        (
            {"usage_pipeline_chdir": "/no/such/directory"},
            'usage_pipeline_chdir "/no/such/directory" does not exist',
        ),
        (
            {"usage_pipeline_sasl_password": "two\nlines"},
            "HEADROOM_KAFKA_SASL_PASSWORD: the value holds a line break or another control character",
        ),
        ({"usage_pipeline_python": "/no/python3"}, 'usage_pipeline_python "/no/python3" does not exist'),
    ],
)
def test_a_schedule_the_host_cannot_take_fails_naming_the_setting_before_anything_is_written(
    tmp_path, stand_in, variables, said
):
    python, record = stand_in
    units = tmp_path / "units"
    result = run_role(tmp_path, scheduled(python, units, **variables))
    assert result.returncode != 0
    assert said in result.stdout
    assert not units.exists() and not record.exists()


def test_check_mode_with_a_schedule_shows_the_units_and_the_command_and_writes_nothing(tmp_path, stand_in):
    python, record = stand_in
    units = tmp_path / "units"
    units.mkdir()
    variables = scheduled(python, units, usage_pipeline_cluster='50% of "$HOME"')
    result = run_role(tmp_path, variables, "--check", "--diff", "-vvv")
    assert result.returncode == 0, result.stdout[-8000:]
    # systemd would expand % and $ in any word: doubled, the job gets the value as given.
    assert f'{python} -m headroom_pipeline run --snapshots "kafka://k1:9092/usage?security_protocol=SASL_SSL"' in (
        result.stdout
    )
    assert '--cluster "50%% of \\"$$HOME\\""' in result.stdout
    assert "+OnCalendar=hourly" in result.stdout and "+Type=oneshot" in result.stdout
    assert SECRET not in result.stdout + result.stderr
    assert list(units.iterdir()) == [] and not record.exists()


def test_a_job_past_its_timeout_is_stopped_and_fails_the_role(tmp_path, stand_in):
    python, record = stand_in
    started = time.monotonic()
    result = run_role(
        tmp_path,
        {
            "usage_pipeline_python": python,
            "usage_pipeline_snapshots": "s.jsonl",
            "usage_pipeline_out": "out",
            "usage_pipeline_cluster": "hang",
            "usage_pipeline_timeout": 2,
        },
    )
    assert result.returncode != 0
    assert time.monotonic() - started < 90
    assert "The pipeline job failed (exit code 124)" in result.stdout
    assert "the job ran longer than usage_pipeline_timeout (2 seconds) and was stopped" in result.stdout
    pid = recorded(record)["pid"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process_alive(pid):
        time.sleep(0.2)
    assert not process_alive(pid), "the job is killed at its time limit"
