"""Test lanes: every test file is in one lane, chosen by its directory (kafka_testbed/lanes.py), and a test whose lane
may not start a cluster, a fleet, Spark or Prometheus fails at once with a message that names it, its lane and where it
belongs; in a subprocess too, and never outside pytest."""

import glob
import os
import re
import subprocess
import sys
import time

import pytest

from kafka_testbed import lanes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(ROOT, "tests")
PROBES = "tests/unit/lane_probes/unit_tests_that_start_clusters.py"


def test_every_test_file_is_in_a_lane():
    files = [os.path.relpath(path, TESTS) for path in glob.glob(os.path.join(TESTS, "**", "test_*.py"), recursive=True)]
    assert files
    assert [path for path in files if lanes.lane_of(path) is None] == []


def test_no_two_test_files_share_a_name():
    # The test directories are not packages, so pytest imports each file by its name: a run that collects two files of
    # one name (the conformance run collects every lane's files) stops with "import file mismatch".
    by_name = {}
    for path in glob.glob(os.path.join(TESTS, "**", "test_*.py"), recursive=True):
        by_name.setdefault(os.path.basename(path), []).append(os.path.relpath(path, TESTS))
    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}


@pytest.mark.parametrize(
    ("path", "lane"),
    [
        ("unit/test_docs_links.py", "unit"),
        ("unit/plugins/module_utils/test_snapshots.py", "unit"),
        ("kafka_testbed/unit/test_ports.py", "unit"),
        ("kafka_testbed/test_topics.py", "conformance"),
        ("integration/test_site.py", "integration"),
        ("hosts/test_fleet.py", "hosts"),
        ("pipeline/test_job.py", "pipeline"),
        ("molecule/test_molecule.py", "molecule"),
        ("test_at_the_top.py", None),
        ("elsewhere/test_x.py", None),
        ("unit_like/test_x.py", None),
    ],
)
def test_the_directory_gives_the_lane(path, lane):
    assert lanes.lane_of(path) == lane


def test_every_lane_is_a_registered_marker(pytestconfig):
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(lanes.LANES) <= registered
    assert set(lanes.LANE_DIRECTORIES.values()) == set(lanes.LANES)


def test_this_test_runs_in_the_unit_lane(request):
    assert os.environ[lanes.LANE_VARIABLE] == "unit"
    assert request.node.get_closest_marker("unit") is not None


@pytest.mark.parametrize("what", sorted(lanes.ALLOWED_LANES))
def test_outside_pytest_anything_may_start(monkeypatch, what):
    monkeypatch.delenv(lanes.LANE_VARIABLE)
    lanes.require_lane(what)


@pytest.mark.parametrize("what", sorted(lanes.ALLOWED_LANES))
def test_the_unit_lane_may_start_nothing_and_every_thing_has_a_lane(what):
    with pytest.raises(lanes.LaneError, match=re.escape(f"in lane unit started {what}; move it to tests/")):
        lanes.require_lane(what)
    for lane in lanes.ALLOWED_LANES[what]:
        assert lane in lanes.LANES


def test_an_allowed_lane_passes(monkeypatch):
    monkeypatch.setenv(lanes.LANE_VARIABLE, "integration")
    lanes.require_lane(lanes.KAFKA_CLUSTER)
    monkeypatch.setenv(lanes.LANE_VARIABLE, "pipeline")
    with pytest.raises(lanes.LaneError, match="in lane pipeline started a Prometheus server; move it to tests/integ"):
        lanes.require_lane(lanes.PROMETHEUS)


def _run(command, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HEADROOM_TEST_"))}
    environment.update(env)
    return subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300, check=False)


def test_unit_tests_that_start_clusters_fail_naming_the_test_its_lane_and_where_it_belongs():
    result = _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", PROBES])
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    expected = {
        "test_starts_a_kafka_cluster": "a Kafka cluster; move it to tests/integration",
        "test_starts_a_model_cluster": "a model cluster; move it to tests/integration",
        "test_starts_a_fleet": "a fleet of test hosts; move it to tests/hosts",
        "test_starts_prometheus": "a Prometheus server; move it to tests/integration",
        "test_starts_a_spark_session": "a Spark session; move it to tests/pipeline",
        "test_starts_a_spark_standalone_cluster": "a Spark standalone cluster; move it to tests/pipeline",
    }
    for test, started in expected.items():
        assert f"LaneError: test {PROBES}::{test} in lane unit started {started}" in output, output
    assert " passed" not in output, output


def test_a_cluster_started_by_a_subprocess_of_a_unit_test_fails_and_starts_nothing(tmp_path):
    result = _run(
        [sys.executable, "-m", "kafka_testbed", "up", "--engine", "sim", "--brokers", "1", "--dir", str(tmp_path)],
        HEADROOM_TEST_LANE="unit",
        PYTEST_CURRENT_TEST="tests/unit/test_x.py::test_y (call)",
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.strip() == (
        "error: test tests/unit/test_x.py::test_y in lane unit started a model cluster; "
        "move it to tests/integration or mark it @pytest.mark.integration (lanes that may start a model cluster: "
        "integration, hosts, pipeline, molecule, conformance, compat)"
    )
    assert os.listdir(tmp_path) == []


def test_the_fleets_take_turns_and_every_other_file_is_a_group_of_its_own():
    """One worker runs a scheduling group from start to end: every test that starts a fleet of test hosts is in one
    group (two fleets at once on two cores each ran past their timeouts), every other file in its own."""
    assert lanes.scheduling_group("tests/hosts/test_fleet.py::test_down_removes_every_host") == "fleets"
    assert lanes.scheduling_group("tests/hosts/test_site_on_hosts.py::test_x[a::b]") == "fleets"
    assert lanes.scheduling_group("tests/molecule/test_molecule.py::test_molecule_scenario[hosts]") == "fleets"
    assert (
        lanes.scheduling_group("tests/molecule/test_molecule.py::test_molecule_scenario[default]")
        == "tests/molecule/test_molecule.py"
    )
    assert lanes.scheduling_group("tests/unit/test_lanes.py::test_y") == "tests/unit/test_lanes.py"
    assert lanes.scheduling_group("tests/integration/test_site.py::Test::test_z") == "tests/integration/test_site.py"
    scenarios = sorted(os.listdir(lanes.MOLECULE_DIR))
    assert [name for name in scenarios if lanes.molecule_scenario_starts_a_fleet(name)] == ["hosts"]


def test_make_s_scheduler_is_the_one_that_groups_the_fleets():
    """make's targets run --dist loadfile; the conftest's scheduler replaces pytest-xdist's for it."""
    result = _run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile", "-v"]
        + ["tests/kafka_testbed/unit/test_ports.py", "tests/kafka_testbed/unit/test_kafka_versions.py"]
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    by_file = {}
    for line in output.splitlines():
        if " PASSED " in line:
            by_file.setdefault(re.search(r"tests/[^:]+", line).group(0), set()).add(line.split("]", 1)[0])
    assert len(by_file) == 2, output
    assert all(len(seen) == 1 for seen in by_file.values()), f"a file's tests ran on more than one worker: {by_file}"


def test_a_run_that_leaves_a_node_behind_fails_naming_it_and_removes_it(tmp_path):
    """Its only test passes; the run fails all the same, and the process is gone (the end-of-run check in
    tests/conftest.py, kafka_testbed/leftovers.py)."""
    pid_file = tmp_path / "pid"
    probe = "tests/unit/lane_probes/leaves_a_node_behind.py"
    result = _run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", probe],
        PROBE_PID_FILE=str(pid_file),
        HEADROOM_LEFTOVER_GRACE="0",
    )
    output = result.stdout + result.stderr
    pid = int(pid_file.read_text(encoding="utf-8"))
    assert result.returncode == 1, output
    assert "1 passed" in output, output
    assert "left behind by the tests: 1 (now removed; the fixture that started each must stop it)" in output, output
    assert f"a Kafka node (pid {pid}): " in output and "kafka.Kafka leftover.properties" in output, output
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}"), "the leftover process was killed"


def test_every_long_test_s_timeout_leaves_at_least_two_and_a_half_times_its_measured_time():
    assert lanes.DEFAULT_TIMEOUT >= lanes.HEADROOM * 120
    for path, (measured, timeout) in lanes.LONG_TESTS.items():
        assert os.path.exists(os.path.join(TESTS, path)), path
        assert timeout >= lanes.HEADROOM * measured, path


def test_every_test_left_out_of_ci_exists_and_says_why():
    for key, reason in lanes.LEFT_OUT_OF_CI.items():
        path, _separator, name = key.partition("::")
        with open(os.path.join(TESTS, path), encoding="utf-8") as handle:
            source = handle.read()
        test = name.split("[", 1)[0]
        assert not name or re.search(rf"^def {re.escape(test)}\(", source, re.M), key
        assert len(reason) > 40, key


@pytest.mark.parametrize(
    ("nodeid", "left_out"),
    [
        ("pipeline/test_bench_baselines.py::test_decision_vector[case-1]", True),
        ("pipeline/test_spark_cluster.py::test_spark_submit_on_the_cluster_writes_the_outputs_of_local_mode", True),
        (
            "pipeline/test_spark_cluster.py::test_the_role_with_launcher_spark_submit_on_the_cluster_writes_the_outputs_"
            "of_local_mode",
            False,
        ),
        ("pipeline/test_job.py::test_the_command_line_runs_the_job", False),
        ("compat/test_modules.py::test_scram_connection[4.4.0-kraft]", True),
        ("compat/test_modules.py::test_scram_connection[3.3.2-zookeeper]", False),
    ],
)
def test_make_test_leaves_out_the_listed_files_and_tests_only(nodeid, left_out):
    assert bool(lanes.left_out_of_ci(nodeid)) is left_out


def test_make_test_deselects_the_tests_left_out_and_make_test_long_selects_them():
    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-m",
            "long",
            "-p",
            "no:cacheprovider",
            "tests/pipeline",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    selected = [line for line in listed.stdout.splitlines() if "::" in line]
    assert selected and all(lanes.left_out_of_ci(line[len("tests/") :]) for line in selected), listed.stdout[-3000:]
    assert any("test_bench_baselines.py" in line for line in selected)
