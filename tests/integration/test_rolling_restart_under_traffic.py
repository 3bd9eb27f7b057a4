"""The rolling_restart role with producers attached: a broker whose stop would take a partition below its topic's
min.insync.replicas is not stopped; a restarted broker must be back in every ISR it was in; two rolls of every
broker under an idempotent acks=all producer lose nothing (the traffic witness reads everything back)."""

import itertools
import re
import time

from ansible_plays import incarnations, run_roll
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_testbed.client_config import confluent_config
from kafka_testbed.witness import Witness

ROLLS = 2
CATCH_UP_MS = 6000  # how long the model keeps a restarted broker out of every ISR
BROKERS = (1, 2, 3)  # the test cluster's brokers (its controller is a node of its own)


def create_topic(cluster, name, assignment, min_insync):
    admin = AdminClient(confluent_config(cluster))
    topic = NewTopic(
        name, len(assignment), replica_assignment=assignment, config={"min.insync.replicas": str(min_insync)}
    )
    admin.create_topics([topic])[name].result(30)


def test_a_broker_whose_stop_would_leave_a_partition_below_min_insync_is_not_stopped(kafka_cluster_factory, tmp_path):
    cluster = kafka_cluster_factory(3)
    # replication factor 2 and min.insync.replicas 2: nothing is under-replicated, and neither replica may stop
    create_topic(cluster, "strict", [[1, 2]], 2)
    before = incarnations(cluster)
    # A condition that lasts: the roll waits the stop check's timeout for it to clear, then refuses.
    result = run_roll(cluster, tmp_path, needs_restart={1}, extra_vars={"rolling_restart_stop_check_timeout": 3})
    assert result.returncode != 0
    text = result.stdout
    assert "broker-1 was not restarted: stopping broker 1 would leave 1 partitions below min.insync.replicas:" in text
    assert re.search(r"\(for [3-9]\.\d+ s\)", text), "it waited the stop check's timeout first"
    assert "strict-0 (isr [1, 2], min.insync.replicas 2)" in text or "strict-0 (isr [2, 1]" in text, text[-5000:]
    assert "Set rolling_restart_min_insync_check to false" in text
    assert incarnations(cluster) == before, "nothing restarted"
    # the owner's choice: restart it anyway; it must still be back in the ISR it left
    again = tmp_path / "anyway"
    again.mkdir()
    result = run_roll(cluster, again, needs_restart={1}, extra_vars={"rolling_restart_min_insync_check": False})
    assert result.returncode == 0, result.stdout[-10000:]
    assert incarnations(cluster)[1] != before[1]


def test_a_broker_not_back_in_its_isrs_in_time_stops_the_roll_naming_them(kafka_cluster_factory, tmp_path):
    # the model keeps a restarted broker out of every ISR for catch_up_ms: real replicas catch up too fast to test this
    cluster = kafka_cluster_factory(3, engine="sim", catch_up_ms=120_000)
    create_topic(cluster, "slow", [[1, 2, 3], [2, 3, 1]], 1)
    before = incarnations(cluster)
    result = run_roll(
        cluster,
        tmp_path,
        needs_restart={1, 2},
        extra_vars={"rolling_restart_health_timeout": 4, "rolling_restart_poll_interval": 0.2},
    )
    assert result.returncode != 0
    text = result.stdout
    assert "broker 1 is not back in the ISR of 2 partitions it was in sync for: slow-0 (isr [2, 3])" in text, text[
        -5000:
    ]
    assert "slow-1 (isr [2, 3])" in text
    after = incarnations(cluster)
    assert after[2] == before[2], "broker 2 must not stop while broker 1 lags"


def test_a_follower_still_catching_up_when_the_roll_starts_is_waited_for(kafka_cluster_factory, tmp_path):
    """A broker restarted just before the roll (the model keeps it out of every ISR for catch_up_ms, as a starved
    follower falls out): busy-0 is under-replicated, and stopping broker 2 would leave it below min.insync.replicas,
    until broker 1 is back. The check before the first restart waits for it (the check before each stop waits the same
    way, with the same module and timeout) instead of stopping the roll."""
    cluster = kafka_cluster_factory(3, engine="sim", catch_up_ms=CATCH_UP_MS)
    create_topic(cluster, "busy", [[1, 2, 3]], 2)
    cluster.restart(1)
    before = incarnations(cluster)
    started = time.monotonic()
    result = run_roll(cluster, tmp_path, needs_restart={2}, extra_vars={"rolling_restart_stop_check_timeout": 60})
    assert result.returncode == 0, result.stdout[-10000:]
    after = incarnations(cluster)
    assert after[2] != before[2] and after[1] == before[1] and after[3] == before[3]
    assert time.monotonic() - started >= CATCH_UP_MS / 1000 - 1, "the roll waited for broker 1 to catch up"


def test_rolls_under_an_idempotent_acks_all_producer_lose_nothing(kafka_cluster_factory, tmp_path):
    cluster = kafka_cluster_factory(3)
    restarts = []  # (node id, start time of its new process), wall-clock seconds
    with Witness(confluent_config(cluster), clock=time.time) as witness:
        for roll in range(ROLLS):
            run_dir = tmp_path / f"roll-{roll}"
            run_dir.mkdir()
            before = incarnations(cluster)
            result = run_roll(cluster, run_dir, needs_restart=set(BROKERS))
            assert result.returncode == 0, result.stdout[-10000:]
            after = incarnations(cluster)
            assert all(after[node][0] != before[node][0] for node in BROKERS), "every broker restarted"
            restarts += sorted(((node, after[node][1] / 1000.0) for node in BROKERS), key=lambda item: item[1])
    report = witness.report
    assert report.acknowledged > 1000 and report.produced == report.acknowledged, report.as_dict()
    assert report.missing == [], report.as_dict()
    assert report.duplicates == [], report.as_dict()
    assert report.refused == {}, report.as_dict()
    # one stall figure per restart: the window from the previous broker's start to this one's
    bounds = [report.began] + [started for _node, started in restarts]
    windows = list(itertools.pairwise(bounds))
    assert len(windows) == 3 * ROLLS
    stalls = [round(report.longest_stall_in(start, end), 3) for start, end in windows]
    waits = [round(report.longest_wait_in(start, end), 3) for start, end in windows]
    print(
        f"witness: {report.as_dict()}; per restart: longest stall {stalls}, longest wait for an acknowledgement {waits}"
    )
    # a restarted broker's partitions move to the other replicas at once (controlled shutdown): records wait seconds
    # at most, never the producer's delivery timeout
    assert max(waits) < 30, f"longest waits per restart: {waits}"
