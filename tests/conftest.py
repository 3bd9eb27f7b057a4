"""Make the collection importable as ``ansible_collections.headroom.kafka`` and the test cluster package importable;
one local SparkSession for every test that runs the pipeline in-process; every test in one lane.

Lanes: the directory of a test file gives its lane (``kafka_testbed.lanes.LANE_DIRECTORIES``: tests/unit and
tests/kafka_testbed/unit are ``unit``, tests/kafka_testbed ``conformance``, the others their own name), and each test
is marked with it, so that ``make unit`` (``pytest -m unit``) and the other lanes select by marker. A test marked with a
lane itself (``@pytest.mark.integration``) keeps that one. A test file in no lane's directory fails at collection.
While a test runs, its lane is in ``HEADROOM_TEST_LANE``, where the launchers of clusters, Spark and Prometheus check it
(``kafka_testbed.lanes.require_lane``)."""

import os
import sys
import uuid

import pytest
from xdist.scheduler import LoadScopeScheduling

from kafka_testbed import lanes, leftovers, test_run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
LANE_KEY = pytest.StashKey[str]()


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
# Every Spark JVM the tests start reads tests/spark-conf (the JIT settings of many small jobs), not a developer's own.
os.environ["SPARK_CONF_DIR"] = os.path.join(TESTS, "spark-conf")


def _lane(item):
    """The lane a test is marked with, else its directory's."""
    marked = sorted({marker.name for marker in item.iter_markers() if marker.name in lanes.LANES})
    if len(marked) > 1:
        raise pytest.UsageError(f"{item.nodeid} is marked with the lanes {', '.join(marked)}: one lane per test")
    if marked:
        return marked[0]
    return lanes.lane_of(os.path.relpath(str(item.path), TESTS))


class _FileInNoLane(pytest.File):
    def collect(self):
        directories = ", ".join(f"tests/{directory} ({lane})" for directory, lane in lanes.LANE_DIRECTORIES.items())
        raise pytest.Collector.CollectError(
            f"{os.path.relpath(str(self.path), ROOT)} is in no test lane: put it in one of the lanes' directories, "
            f"{directories} (kafka_testbed/lanes.py)"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    """A test file outside the lanes' directories fails at collection, before it is imported."""
    if lanes.lane_of(os.path.relpath(str(module_path), TESTS)) is None:
        return _FileInNoLane.from_parent(parent, path=module_path)
    return None


# The longest test files, longest first (measured in make test's run on two workers). make test hands whole files to its
# workers in collection order (--dist loadfile --no-loadscope-reorder): started first, they run beside the many short
# files instead of alone at the end.
LONGEST_FIRST = (
    "hosts/test_site_on_hosts.py",
    "molecule/test_molecule.py",
    "integration/test_guard_history_on_kafka.py",
    "hosts/test_site_refusals_on_hosts.py",
    "hosts/test_disk_guard_on_host.py",
    "compat/test_plays.py",
    "integration/test_site.py",
    "integration/test_integration_targets.py",
    "integration/test_alerts_on_kafka.py",
    "compat/test_throttling.py",
    "integration/test_rolling_restart_under_traffic.py",
    "integration/test_jmx_exporter_role.py",
    "pipeline/test_spark_cluster.py",
)


def _longest_first(item):
    path = os.path.relpath(str(item.path), TESTS)
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


# make's targets run pytest-xdist with --dist loadfile, whose scheduler this conftest replaces with one that groups the
# tests that start a fleet of test hosts into one group (kafka_testbed.lanes.scheduling_group): one worker runs a group
# from start to end, so two fleets never run at once (on two cores each took twice as long and ran past its timeout),
# while the other worker runs everything else. Every other file stays a group of its own. (pytest-xdist's own
# --dist loadgroup does not group anything under pytest 9.2, whose node ids no longer come from the attribute that
# pytest-xdist suffixes with the group.)
class FleetsTakeTurns(LoadScopeScheduling):
    def _split_scope(self, nodeid):
        return lanes.scheduling_group(nodeid)


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadfile":
        return FleetsTakeTurns(config, log)
    return None


# Timeouts: kafka_testbed.lanes.LONG_TESTS gives the long test files theirs (at least HEADROOM times their measured
# time); the end of every run lists the tests with a smaller margin (pytest_terminal_summary below).
TIMEOUT_PROPERTY = "timeout_seconds"


def _timeout(item):
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(item.config.getini("timeout") or 0)


def pytest_collection_modifyitems(items):
    items.sort(key=_longest_first)  # stable: the order within a file, and of every other file, stays
    for item in items:
        if os.path.commonpath([str(item.path), TESTS]) != TESTS:
            continue  # not a test of this directory (a molecule scenario's testinfra checks)
        lane = _lane(item)
        item.add_marker(getattr(pytest.mark, lane))
        path = os.path.relpath(str(item.path), TESTS)
        long_test = lanes.LONG_TESTS.get(path)
        if long_test is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(long_test[1]))
        item.user_properties.append((TIMEOUT_PROPERTY, _timeout(item)))
        item.stash[LANE_KEY] = lane
        if lanes.left_out_of_ci(path + "::" + item.nodeid.split("::", 1)[-1]):
            item.add_marker(getattr(pytest.mark, lanes.LONG_MARKER))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """The test's lane in the environment from its fixtures' setup to their teardown (also for subprocesses)."""
    lane = item.stash.get(LANE_KEY, None)
    saved = os.environ.get(lanes.LANE_VARIABLE)
    if lane is not None:
        os.environ[lanes.LANE_VARIABLE] = lane
    try:
        return (yield)
    finally:
        if saved is None:
            os.environ.pop(lanes.LANE_VARIABLE, None)
        else:
            os.environ[lanes.LANE_VARIABLE] = saved


# The in-process sessions' JVMs compile with C1 alone, as every Spark JVM of the tests does (tests/spark-conf):
# test_decisions.py alone took 54 s of CPU with C1 alone, 77 s with both tiers, the same wall time.
TEST_SPARK_SETTINGS = {"spark.sql.shuffle.partitions": "2"}
GATEWAY_EXIT_SECONDS = 60


@pytest.fixture(scope="session")
def spark():
    """Starting a JVM costs seconds: one session per pytest process, which no test may stop (a job run in-process
    leaves a caller's session running)."""
    lanes.require_lane(lanes.SPARK_SESSION)
    from headroom_pipeline.session import spark_session

    session = spark_session("local[2]", app_name="headroom-pipeline-tests", conf=TEST_SPARK_SETTINGS)
    yield session
    session.stop()
    stop_spark_gateway()


def stop_spark_gateway():
    """Ends the JVM PySpark started for the session: SparkSession.stop() leaves it running until Python exits, and
    the end-of-run check (which runs before that in a pytest without workers) would find it left behind."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway  # pylint: disable=protected-access  # PySpark has no public way to end it
    if gateway is None:
        return
    gateway.shutdown()
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.stdin.close()  # the JVM exits when its stdin closes
        process.wait(timeout=GATEWAY_EXIT_SECONDS)
    SparkContext._gateway = None  # pylint: disable=protected-access
    SparkContext._jvm = None  # pylint: disable=protected-access


# -- nothing left behind ---------------------------------------------------------------------------------------------
# The run's controller (the only process without workerinput: pytest-xdist's, or pytest alone) gives the run an id and
# lists the processes, tmpfs mounts and fleet containers of the run when it begins, and again once every worker is
# done. Whatever is new is removed and fails the run, by name (kafka_testbed/leftovers.py, kafka_testbed/test_run.py).
CENSUS_KEY = pytest.StashKey[object]()


def _is_controller(config):
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session):
    """The run's id in the environment before pytest-xdist starts its workers (its own sessionstart hook runs last),
    so that the workers and everything the tests start carry it; then the first census."""
    if _is_controller(session.config):
        os.environ[test_run.VARIABLE] = uuid.uuid4().hex
        session.config.stash[CENSUS_KEY] = leftovers.Census.take(test_run.current())


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    before = session.config.stash.get(CENSUS_KEY, None)
    if before is None or not _is_controller(session.config):
        return
    left = leftovers.collect_leftovers(before)
    if not left:
        return
    found = left.describe()
    left.remove()
    leftovers.stop_fleet_daemon(before.run_id)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"left behind by the tests: {len(found)} (now removed; the fixture that started each must stop it)"]
    lines += [f"  {thing}" for thing in found]
    if reporter is not None:
        reporter.write_sep("=", "left behind", red=True)
        reporter.write_line("\n".join(lines))
    else:
        print("\n".join(lines), file=sys.stderr)
    if exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# -- margins ---------------------------------------------------------------------------------------------------------
# Each test's time (setup, call and teardown) against its timeout, in the process that reports (the controller under
# pytest-xdist): a test that used more than 1 / lanes.HEADROOM of its timeout is listed at the end of the run.
_DURATIONS = {}


def pytest_runtest_logreport(report):
    timeout = dict(report.user_properties).get(TIMEOUT_PROPERTY)
    if timeout:
        seconds = _DURATIONS.get(report.nodeid, (0.0, timeout))[0]
        _DURATIONS[report.nodeid] = (seconds + report.duration, timeout)


def short_margins(durations, headroom=lanes.HEADROOM):
    """(nodeid, seconds, timeout) of each test that took more than timeout / headroom, the smallest margin first."""
    short = [
        (nodeid, seconds, timeout) for nodeid, (seconds, timeout) in durations.items() if seconds * headroom > timeout
    ]
    return sorted(short, key=lambda entry: -entry[1] / entry[2])


def pytest_terminal_summary(terminalreporter):
    short = short_margins(_DURATIONS)
    if not short:
        return
    terminalreporter.write_sep("=", f"tests with less than {lanes.HEADROOM}x headroom under their timeout", yellow=True)
    for nodeid, seconds, timeout in short:
        terminalreporter.write_line(f"{seconds:7.1f} s of {timeout:.0f} s  {nodeid}")
    terminalreporter.write_line("measure them again and raise their timeouts in LONG_TESTS (kafka_testbed/lanes.py)")
