"""Faults during a roll of site.yml on a fleet of systemd hosts, under the traffic witness (an idempotent acks=all
producer to a topic of replication factor 3 and min.insync.replicas 2): a broker killed while another restarts, the
host being restarted cut off from the network for 30 s, the controller restarted mid-roll, and a volume past the quota
plugin's limit. Each time the play stops or waits as the rolling_restart role says, no second broker is down by the
play's doing (a watcher samples every broker's unit), and no acknowledged record is lost."""

import json
import re
import threading
import time

import pytest
from site_runs import LIMIT, SNAPSHOT_TOPIC, delete_topics, site, started_times

from kafka_testbed.client_config import confluent_config
from kafka_testbed.witness import Witness

CUT_SECONDS = 30
FAULT_SITE = {"kafka_usage_replication_factor": 3, "rolling_restart_health_timeout": 40}


@pytest.fixture(scope="module")
def configured(fleet, tmp_path_factory):
    """The fleet after a first site.yml run (the plugin and the exporter loaded), with no topic of one replica."""
    directory = str(tmp_path_factory.mktemp("site"))
    delete_topics(fleet, SNAPSHOT_TOPIC)
    first = site(fleet, directory, **FAULT_SITE)
    assert first.returncode == 0, first.stdout[-20000:] + first.stderr[-3000:]
    return directory


class UnitWatch:
    """Samples which brokers' units are not active, every half second, while a play runs."""

    def __init__(self, fleet):
        self.fleet, self.samples = fleet, []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self.stopped.is_set():
            down = {entry["id"] for entry in self.fleet.broker_nodes if not self.fleet.unit_active(entry)}
            self.samples.append(down)
            self.stopped.wait(0.5)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stopped.set()
        self.thread.join(30)

    def most_down_at_once(self, besides=()):
        """The most brokers seen down in one sample, leaving out the ones a fault took down."""
        return max((len(down - set(besides)) for down in self.samples), default=0)


class OnRestart:
    """Runs ``action`` in a thread as soon as node ``node_id``'s unit has started a new main process (the play has
    restarted it); ``ran`` says whether it did. Leaving the block stops the watch."""

    def __init__(self, fleet, node_id, action):
        self.fleet, self.node_id, self.action = fleet, node_id, action
        self.before = fleet.main_process_started(node_id)
        self.stopped, self.ran = threading.Event(), False
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        while not self.stopped.wait(0.2):
            if self.fleet.main_process_started(self.node_id) > self.before:
                self.action()
                self.ran = True
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stopped.set()
        self.thread.join(CUT_SECONDS + 60)


def roll(fleet, directory, hosts, **overrides):
    """site.yml with ``hosts`` needing a restart; (result, restart times before, after)."""
    before = started_times(fleet)
    result = site(fleet, directory, restart_hosts=hosts, **dict(FAULT_SITE, **overrides))
    return result, before, started_times(fleet)


def restarted(before, after):
    return sorted(node for node in before if after[node] > before[node])


def assert_nothing_lost(report):
    summary = report.as_dict()
    assert report.acknowledged > 1000, summary
    assert (report.missing, report.duplicates) == ([], []), summary
    print(f"witness: {json.dumps(summary)[:600]}")


def test_a_volume_past_the_plugins_limit_stops_the_roll_before_any_restart(fleet, configured):
    fleet.fill_volume(3, leave_bytes=LIMIT // 2)
    try:
        result, before, after = roll(fleet, configured, ["broker-1", "broker-3"])
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
                result, before, after = roll(fleet, configured, ["broker-1", "broker-2"])
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
    assert_nothing_lost(report)
    sent, waited = max(report.waits, key=lambda item: item[1])
    print(
        f"longest wait {waited:.1f} s: sent {sent - report.began:.1f} s into the run, acknowledged "
        f"{sent + waited - play_ended:.1f} s after the play stopped; broker 3 was started again "
        f"{broker_3_back - play_ended:.1f} s after the play stopped"
    )


def test_the_controller_restarted_mid_roll_is_waited_for(fleet, configured):
    with Witness(confluent_config(fleet)) as witness, UnitWatch(fleet) as units:
        with OnRestart(fleet, 1, lambda: fleet.systemctl(4, "restart", fleet.broker(4)["service"])) as fault:
            result, before, after = roll(fleet, configured, ["broker-1", "broker-2"])
    assert fault.ran
    assert result.returncode == 0, result.stdout[-20000:]
    assert restarted(before, after) == [1, 2, 4], "both brokers restarted, and the controller by the fault"
    assert units.most_down_at_once() <= 1
    assert_nothing_lost(witness.report)


def test_the_host_being_restarted_cut_off_for_30_seconds_is_waited_for(fleet, configured):
    def cut_off():
        fleet.cut_network(2)
        time.sleep(CUT_SECONDS)
        fleet.restore_network(2)

    with Witness(confluent_config(fleet)) as witness, UnitWatch(fleet) as units:
        with OnRestart(fleet, 2, cut_off) as fault:
            result, before, after = roll(fleet, configured, ["broker-2"], rolling_restart_health_timeout=120)
    assert fault.ran
    print(result.stdout[-4000:])
    assert result.returncode == 0, result.stdout[-20000:]
    assert restarted(before, after) == [2]
    assert units.most_down_at_once() <= 1
    assert_nothing_lost(witness.report)
