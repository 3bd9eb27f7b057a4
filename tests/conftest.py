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

import pytest

from kafka_testbed import lanes

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


def pytest_collection_modifyitems(items):
    items.sort(key=_longest_first)  # stable: the order within a file, and of every other file, stays
    for item in items:
        if os.path.commonpath([str(item.path), TESTS]) != TESTS:
            continue  # not a test of this directory (a molecule scenario's testinfra checks)
        lane = _lane(item)
        item.add_marker(getattr(pytest.mark, lane))
        item.stash[LANE_KEY] = lane


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


@pytest.fixture(scope="session")
def spark():
    """Starting a JVM costs seconds: one session per pytest process, which no test may stop (a job run in-process
    leaves a caller's session running)."""
    lanes.require_lane(lanes.SPARK_SESSION)
    from headroom_pipeline.session import spark_session

    session = spark_session("local[2]", app_name="headroom-pipeline-tests", conf={"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()
