"""The compatibility suite: the same checks on every Kafka release and metadata mode it is given.

``HEADROOM_COMPAT_RELEASES`` selects them (``3.3.2/kraft 3.3.2/zookeeper``, ``all`` for the matrix of
``kafka_testbed.kafka_versions``; default ``ci``: the oldest 3.x line in both modes and the newest 4.x). Every test
that takes ``kafka_release`` runs once per selected release, with the id ``<version>-<mode>``; ``release_cluster``
creates clusters of that release, and a test that needs what the release lacks (SCRAM in KRaft before 3.5) is skipped
with the launcher's reason. Each outcome is recorded in ``build/compat/results/`` for ``make compat``'s table
(``kafka_testbed.compat_report``).
"""

import json
import os

import pytest

from kafka_testbed.compat_report import RESULTS_DIR, record_line
from kafka_testbed.kafka_versions import parse_selection

SELECTION_VARIABLE = "HEADROOM_COMPAT_RELEASES"


class Release:
    """One entry of the selection: the release and its metadata mode."""

    def __init__(self, release, mode):
        self.release = release
        self.mode = mode
        self.version = release.version
        self.id = f"{release.version}-{mode}"

    def __repr__(self):
        return self.id

    # pytest reuses a module-scoped fixture of the next test only for a parameter equal to the one it was made with,
    # and every test function gets Release objects of its own.
    def __eq__(self, other):
        return isinstance(other, Release) and other.id == self.id

    def __hash__(self):
        return hash(self.id)


def pytest_generate_tests(metafunc):
    if "kafka_release" in metafunc.fixturenames:
        selection = [
            Release(release, mode) for release, mode in parse_selection(os.environ.get(SELECTION_VARIABLE, ""))
        ]
        metafunc.parametrize("kafka_release", selection, ids=[entry.id for entry in selection], scope="module")


@pytest.fixture(scope="module")
def release_cluster_root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("compat-clusters"))


class ReleaseClusters:
    """Fresh clusters of one release and mode (``kafka_testbed.testing.ClusterFactory`` with the release's options,
    which skips the test, with the reason, when the release cannot run the cluster asked for)."""

    def __init__(self, factory, release):
        self.factory = factory
        self.release = release

    def __call__(self, brokers=3, **options):
        options.setdefault("kafka_version", self.release.version)
        options.setdefault("metadata", self.release.mode)
        return self.factory(brokers, **options)


@pytest.fixture
def release_cluster(kafka_release, kafka_cluster_factory):
    return ReleaseClusters(kafka_cluster_factory, kafka_release)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase of a test that ran on a release, recorded where the test ran (a worker, or pytest itself)."""
    report = yield
    release = getattr(item, "callspec", None) and item.callspec.params.get("kafka_release")
    if release is not None:
        check = f"{os.path.basename(str(item.path))}::{item.originalname}"
        line = record_line(release.id, check, report)
        os.makedirs(RESULTS_DIR, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(RESULTS_DIR, f"results-{worker}.jsonl"), "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
    return report
