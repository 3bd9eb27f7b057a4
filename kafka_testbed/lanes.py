"""Test lanes: which tests may start which clusters.

The tests are split into lanes, each with its own ``make`` target (``make unit``, ``make integration``, ...); the
directory of a test file gives its lane (``LANE_DIRECTORIES``), and tests/conftest.py marks every test with it. While
pytest runs a test, the conftest puts the test's lane in ``HEADROOM_TEST_LANE`` (pytest itself puts its name in
``PYTEST_CURRENT_TEST``); every launcher of a cluster calls ``require_lane`` first, also in the subprocesses a test runs
(``python -m kafka_testbed up`` from a playbook, molecule's create step), since they inherit the environment. A unit
test that starts a cluster, a Spark session or a server fails at once, naming itself, its lane and where it belongs,
instead of making the unit lane slow and dependent on Java, Maven or Docker.

Outside pytest (scripts, the demo, the benchmarks) the variable is not set and nothing is checked.
"""

import os

from kafka_testbed.nodes import ClusterError

LANE_VARIABLE = "HEADROOM_TEST_LANE"
TEST_VARIABLE = "PYTEST_CURRENT_TEST"

# Every lane; a test is in exactly one.
LANES = ("unit", "integration", "hosts", "pipeline", "molecule", "conformance", "compat")

# Directories below tests/ and their lane; the longest matching directory wins.
LANE_DIRECTORIES = {
    "unit": "unit",
    "kafka_testbed/unit": "unit",
    "integration": "integration",
    "hosts": "hosts",
    "pipeline": "pipeline",
    "molecule": "molecule",
    "kafka_testbed": "conformance",
    "compat": "compat",
}

KAFKA_CLUSTER = "a Kafka cluster"
MODEL_CLUSTER = "a model cluster"
HOST_FLEET = "a fleet of test hosts"
SPARK_SESSION = "a Spark session"
SPARK_STANDALONE = "a Spark standalone cluster"
PROMETHEUS = "a Prometheus server"

# What each launcher may be started by, and the directory to suggest first to a test that may not.
_CLUSTER_LANES = ("integration", "hosts", "pipeline", "molecule", "conformance", "compat")
ALLOWED_LANES = {
    KAFKA_CLUSTER: _CLUSTER_LANES,
    MODEL_CLUSTER: _CLUSTER_LANES,
    HOST_FLEET: ("hosts", "molecule"),
    SPARK_SESSION: ("pipeline", "integration"),
    SPARK_STANDALONE: ("pipeline",),
    PROMETHEUS: ("integration",),
}


# Timeouts. pytest.ini's timeout (DEFAULT_TIMEOUT) is for every test that takes at most DEFAULT_TIMEOUT / HEADROOM
# in make test. The longer ones get their own: each file's longest test, its module fixtures' setup included
# (pytest-timeout counts a module fixture's setup to the module's first test), as measured in make test on two cores,
# and a timeout of at least HEADROOM times that, so that a machine twice as slow still passes. The end of every run
# lists the tests whose margin is less (tests/conftest.py): their line here is measured again.
HEADROOM = 2.5
DEFAULT_TIMEOUT = 300
LONG_TESTS = {
    # test file: (seconds its longest test took, timeout), measured in make test-fresh on two cores on 2026-12-02
    # (Kafka's downloads and a first site.yml included where a module's setup does them). A fleet's tests get more than
    # HEADROOM: on one core (make test-one-core) the first site.yml on a fleet and the molecule scenario hosts ran past
    # 540 s, as the four containers' JVMs, sshd and Ansible share that core with the other worker.
    # Its first site.yml now runs under the traffic witness and is the roll of every node: 348 s on 2026-12-03 in a warm
    # make test on a machine as slow as that day's fresh runs; 562 s in CI's run of 2026-12-03.
    "hosts/test_site_on_hosts.py": (562, 1410),
    "molecule/test_molecule.py": (234, 1080),  # the scenario's own limit (at most 900 s) and molecule destroy (120 s)
    "compat/test_plays.py": (157, 420),
    "integration/test_guard_history_on_kafka.py": (172, 480),  # 152 s in the run before
    # Its module's shared site.yml run (the exporter and the pipeline) took 205 s on 2026-12-03, on a machine 1.3 to
    # 1.5 times slower than the others here; the next run, beside make demo, passed 330 s; 244 s on 2026-12-03.
    "integration/test_site.py": (244, 620),
    # make test-fresh on 2026-12-03, the same slow machine: under the default 300 s with less than HEADROOM.
    "integration/test_alerts_on_kafka.py": (130, 330),
    "integration/test_jmx_exporter_role.py": (124, 320),
    # Job runs, each mostly Spark's fixed costs, in make test-fresh on 2026-12-06: thirteen took 237 s (130 s warm); the
    # live guard history's ten, 132 s.
    "pipeline/test_incremental_runs.py": (237, 600),
    "pipeline/test_guard_history.py": (132, 330),
}

# make test-long: the tests CI's make test leaves out to stay within its time budget (45 minutes on a fresh machine of
# two cores), each with why make test proves its claim without it. A key is a test file below tests/, or a test in one
# (``file::name``, every parametrization of it), or one parametrization (``file::name[id]``). make test runs pytest
# -m "not long"; make test-long runs the rest.
LEFT_OUT_OF_CI = {
    "pipeline/test_incremental_runs.py::test_the_whole_week_hour_by_hour_gives_a_full_runs_outputs_every_hour": (
        "168 hours, each run twice (about an hour); make test replays hour by hour every case that decides how a run "
        "resumes (test_a_replay_hour_by_hour_gives_a_full_runs_outputs_at_every_step), and an hour added to a long "
        "history is an hour added to a short one"
    ),
    "pipeline/test_spark_cluster.py::test_spark_submit_on_the_cluster_writes_the_outputs_of_local_mode": (
        "the same spark-submit on the same standalone cluster, checked against the same local-mode outputs, is what "
        "test_the_role_with_launcher_spark_submit_on_the_cluster_writes_the_outputs_of_local_mode runs through the "
        "usage_pipeline role"
    ),
    "pipeline/test_bench_baselines.py": (
        "it checks the benchmark's pandas and DuckDB baselines, not the collection: the Spark stages it compares them "
        "with are held to the shared vectors by tests/pipeline/test_decisions.py and test_forecast.py"
    ),
    "integration/test_rolling_restart_under_traffic.py::"
    "test_rolls_under_an_idempotent_acks_all_producer_lose_nothing": (
        "rolls of every node under the same idempotent acks=all producer losing nothing is proven on systemd hosts, "
        "as users run Kafka, by tests/hosts/test_site_on_hosts.py (the first site.yml's roll of every node, and three "
        "faults mid-roll)"
    ),
    "molecule/test_molecule.py::test_molecule_scenario[hosts]": (
        "its claims run on tests/hosts/test_site_on_hosts.py's fleet: the same site.yml from a bare fleet (the "
        "module's first run), the scenario's own testinfra checks over SSH (imported by "
        "test_the_roles_installed_what_the_molecule_scenario_checks_on_every_host) and a second run that changes "
        "nothing on any host (test_a_cp_ansible_inventory_drives_the_same_plays); the scenario starts a fleet of its "
        "own for them"
    ),
    "molecule/test_molecule.py::test_molecule_scenario[disk_guard]": (
        "the disk_guard role installed by site.yml, its unit running the guard from its virtual environment with a "
        "configuration only it reads, the guard holding the declared quota set and a second run changing nothing: on "
        "a systemd host by tests/hosts/test_disk_guard_on_host.py (its own user, its virtual environment, a producer "
        "throttled, a second run that changes and restarts nothing), and through the role on real brokers by "
        "tests/integration/test_disk_guard_role.py (the declared quotas applied, a second run changing nothing); the "
        "scenario runs the same role under a systemctl stand-in"
    ),
    "molecule/test_molecule.py::test_molecule_scenario[preflight]": (
        "site.yml stopping at its pre-flight task with no broker file changed is proven on systemd hosts by "
        "tests/hosts/test_site_refusals_on_hosts.py (a full metadata disk, the same task and limits); that a full data "
        "log dir counts in that verdict is the volume_limits integration target's, and a data volume past the plugin's "
        "limit stopping a roll before any restart is tests/hosts/test_site_on_hosts.py's"
    ),
    "compat/test_plays.py::test_site_converges_and_a_second_run_changes_nothing[4.4.0-kraft]": (
        "what site.yml asks of the release is its modules' requests (test_modules on 4.4.0) and the plugin loading and "
        "throttling (test_throttling on 4.4.0); the plays' own steps do not depend on the release and converge twice "
        "in make test on 3.3.2 in both modes and, in the full suite, on 4.3.1"
    ),
    "compat/test_plays.py::test_the_active_controller_restarts_last[4.4.0-kraft]": (
        "the roll's order comes from the quorum's description, whose request test_modules runs on 4.4.0 "
        "(cluster_health_info); the order itself is proven in make test on 3.3.2 in both modes and in the full suite"
    ),
    "compat/test_plays.py::test_site_converges_and_a_second_run_changes_nothing[3.3.2-kraft]": (
        "site.yml's steps in KRaft mode do not depend on the release: they converge twice on 4.3.1 in "
        "integration/test_site.py, on the fleet (hosts/test_site_on_hosts.py) and in the molecule scenario default; "
        "what the plays ask of 3.3.2 is its modules' requests (test_modules on 3.3.2-kraft) and the plugin loading "
        "and throttling (test_throttling on 3.3.2-kraft), and the roll's order on it is "
        "test_the_active_controller_restarts_last's"
    ),
    "compat/test_plays.py::test_the_active_controller_restarts_last[3.3.2-kraft]": (
        "the roll's order comes from the quorum's description, whose request test_modules runs on 3.3.2 in KRaft mode "
        "(cluster_health_info); the order itself is proven in make test on 3.3.2 in ZooKeeper mode, on 4.3.1 by "
        "integration/test_rolling_restart.py (combined nodes) and on systemd hosts by hosts/test_site_on_hosts.py"
    ),
    "compat/test_throttling.py::test_the_guard_throttles_through_client_quotas[3.3.2-kraft]": (
        "the guard's requests on 3.3.2 are the disk_guard module's in test_modules (3.3.2-kraft), and client quotas "
        "are enforced by the broker the same way on every KRaft release: a producer throttled through them is proven "
        "on 4.3.1 by integration/test_disk_guard_throttles.py and on 3.3.2 in ZooKeeper mode here"
    ),
    "compat/test_throttling.py::test_the_guard_throttles_through_client_quotas[4.4.0-kraft]": (
        "the guard's requests on 4.4.0 are the disk_guard module's in test_modules (4.4.0-kraft), and client quotas "
        "are enforced by the broker the same way on every KRaft release: a producer throttled through them is proven "
        "on 4.3.1 by integration/test_disk_guard_throttles.py and on 3.3.2 in ZooKeeper mode here"
    ),
    "hosts/test_site_on_hosts.py::test_site_does_not_stop_a_broker_whose_partitions_would_fall_below_min_insync": (
        "the refusal is the rolling_restart role's question to the cluster before it stops a broker, not systemd's: "
        "the same role refuses on real brokers, naming the partition with its ISR and restarting nothing, and restarts "
        "once the check is turned off, in integration/test_rolling_restart_under_traffic.py"
    ),
    "integration/test_integration_targets.py::test_target[disk_guard-sim]": (
        "the disk_guard target's tasks pass on real Kafka in test_target[disk_guard]; this run only shows that the "
        "model answers the guard's requests as Kafka does, which the conformance suite checks on both engines"
    ),
    "compat/test_modules.py::test_scram_connection[4.4.0-kraft]": (
        "SCRAM in KRaft mode on 4.x is the integration target connection_scram's, on 4.3.1; the compatibility suite "
        "keeps it where SCRAM differs, ZooKeeper mode (3.3.2), and make compat runs it on every release"
    ),
}
LONG_MARKER = "long"


def left_out_of_ci(relative_nodeid):
    """Why make test leaves out the test of ``relative_nodeid`` (below tests/: ``dir/test_x.py::test_y[param]``), or
    None when make test runs it."""
    path, _separator, name = relative_nodeid.partition("::")
    keys = (path, f"{path}::{name.split('[', 1)[0]}", f"{path}::{name}")
    return next((LEFT_OUT_OF_CI[key] for key in keys if key in LEFT_OUT_OF_CI), None)


class LaneError(ClusterError):
    """A test started a cluster its lane may not start."""


# Scheduling under make's pytest-xdist run (tests/conftest.py's scheduler): a group runs on one worker from start to
# end. Every test that starts a fleet of test hosts (four containers with systemd, sshd and a Kafka JVM each) is in
# FLEET_GROUP, so that two fleets never run at once; every other test file is a group of its own, so that a module's
# cluster is started once.
FLEET_GROUP = "fleets"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOLECULE_DIR = os.path.join(_ROOT, "extensions", "molecule")


def molecule_scenario_starts_a_fleet(scenario):
    """True when the molecule scenario's create step starts a fleet of test hosts (``kafka_testbed hosts up``)."""
    try:
        with open(os.path.join(MOLECULE_DIR, scenario, "create.yml"), encoding="utf-8") as handle:
            return "hosts, up" in handle.read()
    except FileNotFoundError:
        return False


def scheduling_group(nodeid):
    """The scheduling group of a test, from its node id (``tests/hosts/test_fleet.py::test_x``)."""
    path = nodeid.split("::", 1)[0]
    relative = path[len("tests/") :] if path.startswith("tests/") else path
    if lane_of(relative) == "hosts":
        return FLEET_GROUP
    if relative == "molecule/test_molecule.py" and "[" in nodeid:
        scenario = nodeid.rsplit("[", 1)[1].rstrip("]")
        if molecule_scenario_starts_a_fleet(scenario):
            return FLEET_GROUP
    return path


def lane_of(relative_path):
    """The lane of a test file given by its path below tests/ (``unit/test_x.py``), or None when it is in none."""
    parts = relative_path.replace(os.sep, "/").split("/")[:-1]
    for depth in range(len(parts), 0, -1):
        lane = LANE_DIRECTORIES.get("/".join(parts[:depth]))
        if lane is not None:
            return lane
    return None


def current_lane():
    """The lane of the test pytest is running in this process or a parent, None outside pytest."""
    return os.environ.get(LANE_VARIABLE) or None


def require_lane(what):
    """Raise LaneError when the running test's lane may not start ``what`` (one of the names above)."""
    lane = current_lane()
    allowed = ALLOWED_LANES[what]
    if lane is None or lane in allowed:
        return
    test = os.environ.get(TEST_VARIABLE, "").rsplit(" (", 1)[0] or "(unknown)"
    raise LaneError(
        f"test {test} in lane {lane} started {what}; move it to tests/{allowed[0]} or mark it "
        f"@pytest.mark.{allowed[0]} (lanes that may start {what}: {', '.join(allowed)})"
    )
