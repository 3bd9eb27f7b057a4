"""site.yml over SSH onto brokers run by systemd, from a fleet with no quota plugin and no metrics exporter: once the
roles installed both, every broker's exporter shows the plugin loaded, the real plugin throttles a producer from this
machine when a volume fills, a cp-ansible inventory drives the same plays, and playbooks/relieve.yml moves a replica
off a filling volume to another broker. The first run restarts every node to
load them, under the traffic witness (an idempotent acks=all producer to a topic of replication factor 3 and
min.insync.replicas 2), and loses nothing; so do rolls with faults during the roll: a broker killed while another
restarts, the host being restarted cut off from the network for 30 s, the controller restarted mid-roll, a volume
past the quota plugin's limit (these with playbooks/rolling_restart.yml, the same roll without the roles that find
nothing to change). Each time the play stops or waits as the rolling_restart role says, and no second broker is down
by the play's doing (a watcher samples every broker's unit).

What the roles installed on the hosts (the units, the jars with their checksums, the properties, the exporter's
drop-in loaded by the running node) is checked over SSH with the molecule scenario hosts' own testinfra checks
(extensions/molecule/hosts/tests), and a second run that changes nothing is the cp-ansible inventory's: so make test
runs that scenario's claims here, on this fleet, and the scenario itself is make test-long's
(kafka_testbed/lanes.py). One more run that changes nothing comes from an execution environment built with
ansible-builder, as AWX runs the collection."""

import importlib.util
import itertools
import json
import os
import re
import time

import pytest
import testinfra
from confluent_kafka.admin import AdminClient
from execution_environment import build_execution_environment, run_in_execution_environment
from fleet_playbooks import RELIEVE, SITE, changed_counts, playbook_command, run_playbook
from roll_watch import OnRestart, UnitWatch
from site_runs import (
    BASE_RATE,
    CHECK_INTERVAL,
    LIMIT,
    delete_topics,
    rolling_restart,
    site,
    site_inventory,
    started_times,
)

from kafka_testbed.client_config import confluent_config
from kafka_testbed.traffic import create_topic, metric, produce, wait_until
from kafka_testbed.witness import Witness

REACTION = CHECK_INTERVAL + 10
MIB = 1 << 20
TOPIC = "traffic"
CUT_SECONDS = 30
# The PLAY RECAP of a run that finds nothing to change on the fleet's four hosts.
NOTHING_CHANGED = dict.fromkeys(("broker-1", "broker-2", "broker-3", "controller-4"), 0)
FAULT_SITE = {"kafka_usage_replication_factor": 3, "rolling_restart_health_timeout": 40}


def exporter(fleet, entry, name, **labels):
    return metric(entry, name, **labels)


@pytest.fixture(scope="module")
def configured(fleet, tmp_path_factory):
    """The fleet after a first site.yml run, made while the traffic witness writes: installing the plugin and the
    exporter needs every node restarted, so this run is also the roll of every node under traffic. The snapshot topic
    it creates gets three replicas (with the brokers' default of one, no broker could stop in the rolls below)."""
    directory = str(tmp_path_factory.mktemp("site"))
    before = started_times(fleet)
    with Witness(confluent_config(fleet)) as witness:
        started = time.monotonic()
        first = site(fleet, directory, "-e", json.dumps({"kafka_usage_replication_factor": 3}))
        elapsed = time.monotonic() - started
    assert first.returncode == 0, first.stdout[-20000:] + first.stderr[-3000:]
    # Its records grow with the roll's time on every broker's 64 MiB volume: on one busy core, past the room the relief
    # test needs on another broker above the plugin's limit. The tests that watch a roll later make the topic again.
    delete_topics(fleet, witness.topic)
    print(f"site.yml from a bare fleet: {elapsed:.1f} s")
    return {
        "directory": directory,
        "first": first,
        "before": before,
        "after": started_times(fleet),
        "witness": witness.report,
    }


def test_every_broker_exporter_shows_the_plugin_loaded_with_factor_one(fleet, configured):
    for entry in fleet.broker_nodes:
        wait_until(
            lambda e=entry: exporter(fleet, e, "strimzi_quotas_throttle_factor") == 1.0,
            60,
            what=f"broker {entry['id']}'s exporter showing throttle factor 1.0",
        )


SCENARIO_CHECKS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "extensions",
    "molecule",
    "hosts",
    "tests",
    "test_hosts.py",
)


def scenario_checks():
    """The molecule scenario hosts' testinfra checks: each test_ function of its test file, by name."""
    spec = importlib.util.spec_from_file_location("molecule_hosts_checks", SCENARIO_CHECKS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: check for name, check in vars(module).items() if name.startswith("test_") and callable(check)}


def test_the_roles_installed_what_the_molecule_scenario_checks_on_every_host(fleet, configured):
    """The units, the plugin's jar with its pinned checksum and the properties block on brokers only, the exporter's
    agent loaded through a drop-in: the scenario's checks, over SSH, on each host as the fleet's inventory reaches
    it."""
    checks = scenario_checks()
    assert len(checks) == 3, sorted(checks)
    for entry in fleet.info["brokers"]:  # every node, the controller too
        name = entry["inventory_host"]
        host = testinfra.get_host(f"ansible://{name}", ansible_inventory=fleet.info["inventory"])
        for check_name, check in sorted(checks.items()):
            try:
                check(host)
            except AssertionError as error:
                raise AssertionError(f"{name}: {check_name}: {error}") from error


def test_a_full_volume_throttles_a_producer_and_freeing_it_lifts_the_throttle(fleet, configured):
    create_topic(fleet, TOPIC, replicas_on=1)
    try:
        assert_throttled_while_a_volume_is_full(fleet)
    finally:
        delete_topics(fleet, TOPIC)  # a topic of one replica would keep its broker from stopping in the rolls below


def assert_throttled_while_a_volume_is_full(fleet):
    observer = fleet.broker(1)
    before = produce(fleet, TOPIC, seconds=3)
    assert before.rate > BASE_RATE / 4, f"the producer produces freely before: {before.rate:.0f} B/s"
    fleet.fill_volume(2, leave_bytes=LIMIT // 2)
    try:
        wait_until(
            lambda: exporter(fleet, observer, "strimzi_quotas_throttle_factor") == 0.0,
            REACTION,
            what="the exporter showing throttle factor 0",
        )
        throttled = produce(fleet, TOPIC, seconds=5)
        assert throttled.throttles_ms and max(throttled.throttles_ms) > 1000, "produce responses carry the throttle"
        assert throttled.rate_after_first_throttle() < before.rate / 20
    finally:
        fleet.free_volume(2)
    wait_until(
        lambda: exporter(fleet, observer, "strimzi_quotas_throttle_factor") == 1.0,
        REACTION,
        what="the throttle lifting",
    )
    after = produce(fleet, TOPIC, seconds=3)
    assert after.rate > BASE_RATE / 4, f"the producer produces again: {after.rate:.0f} B/s"


def test_a_cp_ansible_inventory_drives_the_same_plays(fleet, configured, tmp_path):
    """The same hosts in cp-ansible's groups, with group kafka mapped onto them: site.yml runs unchanged (and finds
    nothing to change)."""
    layered = site_inventory(fleet, configured["directory"])
    cp_ansible = fleet.write_inventory(str(tmp_path / "cp-ansible.yml"), layout="cp-ansible")
    result = run_playbook([cp_ansible, layered[1]], SITE)
    assert result.returncode == 0, result.stdout[-20000:]
    assert changed_counts(result.stdout) == NOTHING_CHANGED


def test_site_from_an_execution_environment_built_with_ansible_builder_changes_nothing(fleet, configured, tmp_path):
    """The EE AWX would run: ansible-builder over a definition that lists the collection's artifact, on a Debian base
    made here. Its ansible-builder run installs the collection's Python requirements from the artifact's
    meta/execution-environment.yml; site.yml from inside it then reaches every host over SSH, and Kafka from the EE's
    own Python (the modules delegated to it), and finds nothing to change."""
    tag = build_execution_environment(str(tmp_path / "ee"))
    inventories = site_inventory(fleet, configured["directory"])
    files = [*inventories, fleet.info["ssh"]["key"], fleet.info["ssh"]["known_hosts"]]
    result = run_in_execution_environment(tag, fleet, playbook_command("ansible-playbook", inventories), files)
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-3000:]
    assert changed_counts(result.stdout) == NOTHING_CHANGED


def replicas_of(fleet, topic):
    admin = AdminClient(confluent_config(fleet))  # kept referenced until the answer
    return sorted(admin.list_topics(topic, timeout=30).topics[topic].partitions[0].replicas)


def test_relieve_yml_over_ssh_moves_a_replica_off_a_filling_volume_to_a_broker_with_room(fleet, configured, tmp_path):
    """playbooks/relieve.yml with the fleet's inventory: broker 2's volume at its relief threshold (above the plugin's
    limit) gives its 8 MiB replica to another broker, under the replication throttle; a second run changes nothing."""
    topic = "relief"
    create_topic(fleet, topic, replicas_on=2)
    try:
        # Idempotent, so that a batch retried on a busy machine is not written twice.
        written = produce(fleet, topic, seconds=60, max_bytes=8 * MIB, **{"enable.idempotence": True})
        assert written.acked >= 8 * MIB, f"{written.acked} bytes written"
        # Room above the plugin's limit for the relief threshold and the move: the topics the tests before deleted
        # keep their files for the broker's delete delay (a minute), and on a slow machine the volume can hold less
        # than the fill would leave (the fill then writes nothing).
        wait_until(
            lambda: fleet.free_bytes(2) > LIMIT + 8 * MIB,
            180,
            what="broker 2's volume with room above the plugin's limit for the relief threshold",
        )
        fleet.fill_volume(2, leave_bytes=LIMIT + 16 * MIB)
        free = fleet.free_bytes(2)
        # A destination keeps its relieve_at (free + 1 MiB) after taking the replica (8 MiB and its batches' headers).
        wait_until(
            lambda: max(fleet.free_bytes(node) for node in (1, 3)) > free + 10 * MIB,
            180,
            what="another broker's volume with room for the replica above the relief threshold",
        )
        relief = {
            "relieve_at": {"type": "min_free_bytes", "level": free + MIB},
            "relieve_to": {"type": "min_free_bytes", "level": free + 6 * MIB},
            "limit": {"type": "min_free_bytes", "level": LIMIT},
            "timeout": 240,
        }
        inventory = site_inventory(fleet, str(tmp_path))
        moved = run_playbook(inventory, RELIEVE, "-e", json.dumps({"kafka_relief": relief}))
        assert moved.returncode == 0, moved.stdout[-20000:]
        assert sum(changed_counts(moved.stdout).values()) == 1, moved.stdout[-5000:]
        assert replicas_of(fleet, topic) in ([1], [3]), moved.stdout[-5000:]
        again = run_playbook(inventory, RELIEVE, "-e", json.dumps({"kafka_relief": relief}))
        assert again.returncode == 0, again.stdout[-20000:]
        assert set(changed_counts(again.stdout).values()) == {0}, again.stdout[-5000:]
    finally:
        fleet.free_volume(2)
        delete_topics(fleet, topic)  # a topic of one replica would keep its broker from stopping in the rolls below


def test_site_does_not_stop_a_broker_whose_partitions_would_fall_below_min_insync(fleet, configured):
    """A topic whose only replica is on broker 1: restarting broker 1 would take it offline, so the roll stops before
    any node restarts, naming the partition."""
    create_topic(fleet, "single", replicas_on=1)
    try:
        before = started_times(fleet)
        # A condition that lasts: the roll waits the stop check's timeout for it to clear, then refuses.
        settings = {"kafka_restart_needed": True, "rolling_restart_stop_check_timeout": 5}
        result = site(fleet, configured["directory"], "-e", json.dumps(settings))
        assert result.returncode != 0
        refusal = re.search(
            r"broker-1 was not restarted: stopping broker 1 would leave \d+ partitions below "
            r"min.insync.replicas: [^\n]*single-0 \(isr \[1\], min.insync.replicas 1\)",
            result.stdout,
        )
        assert refusal, result.stdout[-5000:]
        after = started_times(fleet)
        assert after == before, "no node restarted"
    finally:
        delete_topics(fleet, "single")


def test_site_rolls_every_node_through_systemd_under_traffic_and_loses_nothing(configured):
    """The first site.yml restarted every node (the brokers, then the controller) while an idempotent acks=all producer
    wrote to a topic of replication factor 3 and min.insync.replicas 2."""
    before, after = configured["before"], configured["after"]
    assert all(after[node] > before[node] for node in before), f"every node restarted: {before} -> {after}"
    report = configured["witness"]
    summary = report.as_dict()
    assert report.acknowledged == report.produced > 1000, summary
    assert (report.missing, report.duplicates, report.refused) == ([], [], {}), summary
    windows = list(itertools.pairwise([report.began, *sorted(after.values())]))
    waits = [round(report.longest_wait_in(start, end), 3) for start, end in windows]
    stalls = [round(report.longest_stall_in(start, end), 3) for start, end in windows]
    print(f"witness on hosts: {summary}; per restart: longest wait {waits}, longest stall {stalls}")
    assert max(waits) < 30, f"longest waits for an acknowledgement per restart: {waits}"


# -- faults during a roll (no topic of one replica is left, the snapshot topic has three) --------------------------


def roll(fleet, directory, hosts, **overrides):
    """playbooks/rolling_restart.yml with ``hosts`` needing a restart (the roll site.yml runs, without the roles that
    find nothing to change); (result, restart times before, after)."""
    before = started_times(fleet)
    result = rolling_restart(fleet, directory, hosts, **dict(FAULT_SITE, **overrides))
    return result, before, started_times(fleet)


def restarted(before, after):
    return sorted(node for node in before if after[node] > before[node])


def assert_nothing_lost(report, broker_lost_mid_request=False):
    """Every acknowledged record is where it was acknowledged. No record is stored twice, unless the fault took a
    broker away in the middle of a produce request (a kill, a network cut): the idempotent producer cannot tell then
    whether that request was written, and librdkafka may bump its epoch and send the batch again, which the broker
    takes as new (confluentinc/librdkafka#4953; only a transactional producer rules it out). Such a copy sits in the
    partition the record was sent to, never in another."""
    summary = report.as_dict()
    assert report.acknowledged > 1000, summary
    assert report.missing == [], summary
    if broker_lost_mid_request:
        partitions_of_each = [{partition for partition, _offset in places} for _key, places in report.duplicates]
        assert all(len(partitions) == 1 for partitions in partitions_of_each), summary
    else:
        assert report.duplicates == [], summary
    print(f"witness: {json.dumps(summary)[:600]}")


def test_a_volume_past_the_plugins_limit_stops_the_roll_before_any_restart(fleet, configured):
    fleet.fill_volume(3, leave_bytes=LIMIT // 2)
    try:
        result, before, after = roll(fleet, configured["directory"], ["broker-1", "broker-3"])
    finally:
        fleet.free_volume(3)
    assert result.returncode != 0
    assert restarted(before, after) == [], "no node restarted"
    said = (
        r"broker-1 was not restarted: broker 3 log dir \S+ has \d+ of \d+ bytes free, at or below the quota plugin's "
        r"limit \(min_available_bytes 33554432\)"
    )
    assert re.search(said, result.stdout), result.stdout[-5000:]
    assert "strimzi/kafka-quotas-plugin#40" in result.stdout


def test_a_broker_killed_while_another_restarts_stops_the_roll_there(fleet, configured):
    with Witness(confluent_config(fleet)) as witness, UnitWatch(fleet) as units:
        try:
            with OnRestart(fleet, 1, lambda: fleet.kill(3)) as fault:
                result, before, after = roll(fleet, configured["directory"], ["broker-1", "broker-2"])
            assert fault.ran
            assert result.returncode != 0
            assert restarted(before, after) == [1], "broker-2 was not restarted after the failure"
            assert not fleet.unit_active(fleet.broker(3)), "the killed broker was left as the fault left it"
            said = re.search(
                r"broker-1 came back after its restart, but the cluster did not recover \(Wait until the cluster is "
                r"healthy again after restarting broker-1: the cluster was not healthy 3 polls in a row within 40.0s: "
                r"brokers not active: 3[;)]",
                result.stdout,
            )
            assert said, result.stdout[-5000:]
        finally:
            play_ended = time.monotonic()
            fleet.start(3)
            broker_3_back = time.monotonic()
    assert units.most_down_at_once(besides=[3]) <= 1
    report = witness.report
    assert_nothing_lost(report, broker_lost_mid_request=True)
    sent, waited = max(report.waits, key=lambda item: item[1])
    print(
        f"longest wait {waited:.1f} s: sent {sent - report.began:.1f} s into the run, acknowledged "
        f"{sent + waited - play_ended:.1f} s after the play stopped; broker 3 was started again "
        f"{broker_3_back - play_ended:.1f} s after the play stopped"
    )


def test_the_controller_restarted_mid_roll_is_waited_for(fleet, configured):
    with Witness(confluent_config(fleet)) as witness, UnitWatch(fleet) as units:
        with OnRestart(fleet, 1, lambda: fleet.systemctl(4, "restart", fleet.broker(4)["service"])) as fault:
            result, before, after = roll(fleet, configured["directory"], ["broker-1"])
    assert fault.ran
    assert result.returncode == 0, result.stdout[-20000:]
    assert restarted(before, after) == [1, 4], "the broker restarted, and the controller by the fault"
    assert units.most_down_at_once() <= 1
    assert_nothing_lost(witness.report)


def test_the_host_being_restarted_cut_off_for_30_seconds_is_waited_for(fleet, configured):
    def cut_off():
        fleet.cut_network(2)
        time.sleep(CUT_SECONDS)
        fleet.restore_network(2)

    with Witness(confluent_config(fleet)) as witness, UnitWatch(fleet) as units:
        with OnRestart(fleet, 2, cut_off) as fault:
            result, before, after = roll(
                fleet, configured["directory"], ["broker-2"], rolling_restart_health_timeout=120
            )
    assert fault.ran
    assert result.returncode == 0, result.stdout[-20000:]
    assert restarted(before, after) == [2]
    assert units.most_down_at_once() <= 1
    assert_nothing_lost(witness.report, broker_lost_mid_request=True)
