"""The rolling_restart role against a 3-broker test cluster driven with the command restart method."""

import os
import sys

import pytest
from ansible_plays import incarnations, roll_every_node_and_find_the_last, run_roll


def create_replicated_topic(cluster):
    from confluent_kafka.admin import AdminClient, NewTopic  # pylint: disable=import-outside-toplevel

    admin = AdminClient({"bootstrap.servers": cluster.info["bootstrap_servers"]})
    admin.create_topics([NewTopic("rolled", 3, 3)])["rolled"].result(15)


@pytest.fixture(scope="module")
def untouched_cluster(kafka_cluster_root):
    """For the rolls that restart nothing: each asserts that no node's incarnation changed."""
    from kafka_testbed.testing import module_cluster

    yield from module_cluster(kafka_cluster_root, 3)


def test_restarts_only_what_needs_it_one_at_a_time(kafka_cluster_factory, tmp_path):
    cluster = kafka_cluster_factory(3, catch_up_ms=1500)
    create_replicated_topic(cluster)
    before = incarnations(cluster)
    result = run_roll(cluster, tmp_path, needs_restart={1, 3})
    assert result.returncode == 0, result.stdout[-10000:]
    after = incarnations(cluster)
    assert after[2] == before[2], "broker 2 did not need a restart"
    assert after[1][0] != before[1][0] and after[3][0] != before[3][0]
    # One at a time: broker 3 went down only after broker 1 was back and its replicas had caught up.
    assert after[3][1] >= after[1][1] + 1500


def test_a_broker_that_fails_to_start_stops_the_roll(kafka_cluster_factory, tmp_path):
    cluster = kafka_cluster_factory(3)
    before = incarnations(cluster)
    properties = cluster.broker(2)["properties"]
    with open(properties, "a", encoding="utf-8") as handle:  # a plugin config the plugin rejects reaches broker 2
        handle.write("client.quota.callback.class=io.strimzi.kafka.quotas.StaticQuotaCallback\n")
    result = run_roll(cluster, tmp_path, needs_restart={2, 3})
    assert result.returncode != 0
    failed = result.stdout[result.stdout.rindex("TASK [") :]
    assert failed.startswith("TASK [rolling_restart : Restart with the restart command broker-2]"), failed[-10000:]
    assert '"--broker", "2"]' in failed and "error: broker 2 exited during startup" in failed, failed[-10000:]
    assert "kafka.admin.bootstrap.servers" in failed, failed[-10000:]
    assert incarnations(cluster).get(3) == before[3], "broker 3 must not be restarted after broker 2 failed"


def test_an_unhealthy_cluster_is_not_rolled_unless_forced(kafka_cluster_factory, tmp_path):
    cluster = kafka_cluster_factory(3)
    cluster.stop(2)
    before = incarnations(cluster)
    result = run_roll(cluster, tmp_path, needs_restart={1})
    assert result.returncode != 0
    assert "brokers not active: 2" in result.stdout
    assert incarnations(cluster)[1] == before[1]


def test_combined_nodes_restart_with_the_active_controller_last(kafka_cluster_factory, tmp_path):
    cluster = kafka_cluster_factory(3, combined=3, catch_up_ms=1000)
    leader, order, before, after = roll_every_node_and_find_the_last(cluster, tmp_path)
    assert all(after[n][0] != before[n][0] for n in before)
    assert order[-1] == leader, f"restart order {order}, active controller was {leader}"


FAKE_SYSTEMCTL = """#!{python}
# systemctl for machines without systemd: units kafka-node-<id> are the test cluster's brokers; every call is logged.
import subprocess, sys
args = [arg.strip("'") for arg in sys.argv[1:]]
with open({log!r}, "a", encoding="utf-8") as log:
    log.write(" ".join(args) + "\\n")
if args[:1] == ["show"]:
    print(f"Id={{args[1]}}.service\\nLoadState=loaded\\nActiveState=active\\nSubState=running")
elif args[:1] == ["daemon-reload"]:
    pass
elif args[:1] == ["restart"]:
    node_id = args[1].rsplit("-", 1)[1]
    command = [{python!r}, "-m", "kafka_testbed", "restart", "--dir", {directory!r}, "--broker", node_id]
    sys.exit(subprocess.call(command))
else:
    sys.exit("unexpected systemctl call: " + " ".join(args))
"""


def test_the_systemd_method_restarts_each_nodes_own_unit(kafka_cluster_factory, tmp_path):
    cluster = kafka_cluster_factory(3, catch_up_ms=500)
    before = incarnations(cluster)
    bin_dir, log = tmp_path / "bin", tmp_path / "systemctl.log"
    bin_dir.mkdir()
    systemctl = bin_dir / "systemctl"
    systemctl.write_text(FAKE_SYSTEMCTL.format(python=sys.executable, log=str(log), directory=str(cluster.directory)))
    systemctl.chmod(0o755)
    result = run_roll(
        cluster,
        tmp_path,
        needs_restart={2, 3},
        extra_vars={"rolling_restart_method": "systemd"},
        host_vars={node_id: {"rolling_restart_service": f"kafka-node-{node_id}"} for node_id in (1, 2, 3)},
        path_prefix=bin_dir,
    )
    assert result.returncode == 0, result.stdout[-10000:]
    calls = log.read_text().splitlines()
    restarts = [line for line in calls if line.startswith("restart")]
    assert restarts == ["restart kafka-node-2", "restart kafka-node-3"]
    assert calls.index("daemon-reload") < calls.index("restart kafka-node-2"), "units are reloaded before a restart"
    after = incarnations(cluster)
    assert after[1] == before[1]
    assert after[2][0] != before[2][0] and after[3][0] != before[3][0]
    assert after[3][1] >= after[2][1] + 500, "one at a time: node 3 went down only after node 2 had caught up"


FAKE_JOURNALCTL = """#!{python}
# journalctl for machines without systemd: the journal of unit kafka-node-<id> is that broker's log.
import json, sys
args = sys.argv[1:]
unit, lines = args[args.index("--unit") + 1], int(args[args.index("--lines") + 1])
with open({cluster_file!r}, encoding="utf-8") as handle:
    brokers = {{str(entry["id"]): entry for entry in json.load(handle)["brokers"]}}
with open(brokers[unit.rsplit("-", 1)[1]]["log_file"], encoding="utf-8", errors="replace") as log:
    sys.stdout.write("".join(log.readlines()[-lines:]))
"""


def test_a_unit_that_does_not_come_back_stops_the_roll_with_its_journal(kafka_cluster_factory, tmp_path):
    cluster = kafka_cluster_factory(3)
    before = incarnations(cluster)
    with open(cluster.broker(2)["properties"], "a", encoding="utf-8") as handle:  # broker 2 will not start
        handle.write("client.quota.callback.class=io.strimzi.kafka.quotas.StaticQuotaCallback\n")
    bin_dir, log = tmp_path / "bin", tmp_path / "systemctl.log"
    bin_dir.mkdir()
    for name, text in (
        ("systemctl", FAKE_SYSTEMCTL.format(python=sys.executable, log=str(log), directory=str(cluster.directory))),
        (
            "journalctl",
            FAKE_JOURNALCTL.format(
                python=sys.executable, cluster_file=os.path.join(str(cluster.directory), "cluster.json")
            ),
        ),
    ):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    result = run_roll(
        cluster,
        tmp_path,
        needs_restart={2, 3},
        extra_vars={"rolling_restart_method": "systemd", "rolling_restart_journal_lines": 40},
        host_vars={node_id: {"kafka_service_name": f"kafka-node-{node_id}"} for node_id in (1, 2, 3)},
        path_prefix=bin_dir,
    )
    assert result.returncode != 0
    text = result.stdout + result.stderr
    assert "broker-2: kafka-node-2 did not come back after its restart (Restart with systemd broker-2:" in text, text[
        -10000:
    ]
    assert "no further node was restarted." in text
    assert "Last lines of journalctl -u kafka-node-2 on broker-2:" in text
    assert "kafka.admin.bootstrap.servers" in text, "the broker's own reason, from its journal"
    assert [line for line in log.read_text().splitlines() if line.startswith("restart")] == ["restart kafka-node-2"]
    assert incarnations(cluster).get(3) == before[3], "broker 3 must not be restarted after broker 2 failed"


# The rolls that restart nothing share one cluster, started at the first of them: they run last, one after the other.
def test_nothing_to_do(untouched_cluster, tmp_path):
    cluster = untouched_cluster
    before = incarnations(cluster)
    result = run_roll(cluster, tmp_path, needs_restart=set())
    assert result.returncode == 0, result.stdout[-10000:]
    assert "No node needs a restart" in result.stdout
    assert incarnations(cluster) == before


@pytest.mark.parametrize(
    ("gate", "said"),
    [
        # A volume at the limit (here every volume, with a ratio limit of 1.0).
        ({"min_available_ratio": 1.0}, ["throttle factor 0.0 (PAUSE)"]),
        # A misspelt limit would otherwise be a gate that checks nothing.
        ({"min_available_ration": 0.1}, ["min_available_ration", "volume_gate_limits"]),
    ],
    ids=["volume-at-its-limit", "unknown-key"],
)
def test_the_volume_gate_stops_the_roll_before_any_restart(untouched_cluster, tmp_path, gate, said):
    cluster = untouched_cluster
    before = incarnations(cluster)
    result = run_roll(cluster, tmp_path, needs_restart={1, 2, 3}, extra_vars={"rolling_restart_volume_gate": gate})
    assert result.returncode != 0
    for text in said:
        assert text in result.stdout, result.stdout[-5000:]
    assert incarnations(cluster) == before


def test_a_health_wait_typo_stops_the_roll_before_any_restart(untouched_cluster, tmp_path):
    cluster = untouched_cluster
    before = incarnations(cluster)
    for number, settings in enumerate(
        (
            {"rolling_restart_poll_interval": "nan"},
            {"rolling_restart_poll_interval": 1e308},
            {"rolling_restart_healthy_polls": 0},
            {"rolling_restart_health_timeout": 1, "rolling_restart_poll_interval": 2},
            {"rolling_restart_stop_check_timeout": -1},
        )
    ):
        run_dir = tmp_path / str(number)
        run_dir.mkdir()
        result = run_roll(cluster, run_dir, needs_restart={1, 2, 3}, extra_vars=settings)
        assert result.returncode != 0, settings
        assert "rolling_restart_poll_interval 0.05 to 3600 seconds" in result.stdout, result.stdout[-3000:]
        assert incarnations(cluster) == before, f"a broker was restarted with {settings}"
