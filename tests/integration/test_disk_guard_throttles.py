"""headroom.kafka.disk_guard really throttles real Apache Kafka brokers, through Kafka's own client quotas (no plugin).

Two brokers and a controller, SCRAM, each data log dir on a 128 MiB tmpfs. The topic producers write to lives on
broker 1; broker 2's volume is the one that fills, so what slows the producers is the cluster-wide quota set the
guard made Kafka hold, not broker 1's disk. Every figure asserted below comes from the broker: the bytes it
acknowledged to a producer and the throttle time in its produce responses.

How a rate is measured. Kafka judges a client over quota.window.num=11 samples of quota.window.size.seconds=1, and
a client it has not seen yet counts as if 10 empty seconds preceded it: a fresh client is allowed about
quota x T bytes in its first T seconds once T reaches 10 s, and the samples of its first seconds expire at 11 s, so
it may burst again after each whole window. Each measurement therefore runs as a user that has not produced before
(a fresh sensor: nothing left over from an earlier rate), offers twice the quota it should get (clearly more, and
spread over the window rather than one burst), and is judged over two whole windows from its start.
"""

import concurrent.futures
import json
import os
import queue
import subprocess
import sys
import threading
import time
import types

import pytest
import yaml
from ansible_run import run_module
from guard_processes import start_guard, stop_guard
from test_integration_targets import ROOT, connection_options

from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter
from kafka_testbed.log_dir_probe import fill_volume
from kafka_testbed.testing import ClusterFactory, skip_without_own_volumes
from kafka_testbed.traffic import (
    allow_all_on_topic,
    assert_at_floor,
    assert_rate_near,
    create_topic,
    produce,
    wait_until,
)

MIB = 1 << 20
UNLIMITED = 9223372036854775807  # Long.MAX_VALUE: the rate the guard gives an excluded principal

# -- the declaration --------------------------------------------------------------------------------------------------
# Low enough that neither the producers nor the brokers on this machine's two cores are ever the bottleneck.
BASE_RATE = 256 << 10  # default_producer_byte_rate: every user no declared entity covers
BATCH_RATE = 2 * BASE_RATE  # a declared user entity, scaled like the <default> user
BATCH_FETCH = 4 * MIB  # a key the factor never scales
DECLARED = [{"entity": {"user": "batch"}, "producer_byte_rate": BATCH_RATE, "consumer_byte_rate": BATCH_FETCH}]
DECLARATION = {
    "quotas": DECLARED,
    "default_producer_byte_rate": BASE_RATE,
    "excluded_principals": ["User:ops"],
    "expected_brokers": [1, 2],
}
# What Kafka must hold at factor 1, entity by entity: the declaration, the <default> user, the excluded principal.
HELD_AT_FACTOR_1 = {
    (("user", "<default>"),): {"producer_byte_rate": BASE_RATE},
    (("user", "batch"),): {"producer_byte_rate": BATCH_RATE, "consumer_byte_rate": BATCH_FETCH},
    (("user", "ops"),): {"producer_byte_rate": UNLIMITED},
}

# -- the volumes and the policies -------------------------------------------------------------------------------------
VOLUME_SIZE = 128 * MIB  # room for everything the producers below write to broker 1 (about 30 MiB)
SOFT_FREE = 64 * MIB  # graded: throttling starts at 64 MiB free...
HARD_FREE = 16 * MIB  # ...and producers are held at 1 byte/s at 16 MiB free
SOFT_FILL_LEAVE = HARD_FREE + 2 * (SOFT_FREE - HARD_FREE) // 5  # ~35 MiB free: a graded factor of about 0.4
HARD_FILL_LEAVE = HARD_FREE // 2  # past the hard limit
GRADED = {
    "policy": "graded",
    "soft_limit": {"type": "min_free_bytes", "level": SOFT_FREE},
    "hard_limit": {"type": "min_free_bytes", "level": HARD_FREE},
    "missing_data_action": "pause",
}
STRIMZI = {"policy": "strimzi", "min_available_ratio": 0.1}  # violated by no volume unless filled
FALLBACK = 0.5

# -- the measurements -------------------------------------------------------------------------------------------------
TOPIC = "guarded"
WINDOW = 11  # seconds: Kafka's quota window (11 samples of 1 s)
MEASURED = 2 * WINDOW - 0.5  # two whole windows, ending before the third one's burst may start
OFFERED = 2  # a throttled producer offers twice the quota it should get
FLOOR_SECONDS = 5  # at 1 byte/s, one batch is all that gets through in this time
MESSAGE_SIZE = 8192  # traffic.produce's record size; a batch holds one or two records
EXCLUDED_OFFERED = 4 * BASE_RATE  # the excluded principal offers four times the unthrottled default rate
# Every measurement runs as a user of its own, so that Kafka judges it with a fresh quota sensor.
USERS = ("alice", "batch", "bob", "ops", "carol", "dave", "erin", "frank")


@pytest.fixture(scope="module")
def guarded(kafka_cluster_root, tmp_path_factory):
    """The cluster (real Kafka, no plugin), its users with ACLs on the topic, and a directory for module runs."""
    factory = ClusterFactory(kafka_cluster_root, engine="kafka")
    cluster = factory(2, scram=True, volume_size=f"{VOLUME_SIZE // MIB}M")
    try:
        skip_without_own_volumes(cluster)
        for user in USERS:
            cluster.add_scram_user(user, password_of(user), "SCRAM-SHA-512")
        create_topic(cluster, TOPIC, replicas_on=1)
        allow_all_on_topic(cluster, TOPIC, *USERS)
        yield types.SimpleNamespace(cluster=cluster, workdir=str(tmp_path_factory.mktemp("disk-guard")))
    finally:
        factory.close()


def password_of(user):
    return f"{user}-secret"


def guard(guarded, **options):
    """One run of headroom.kafka.disk_guard as a play's task, with the declaration above."""
    return run_module(
        "disk_guard", dict(connection_options(guarded.cluster.info), **DECLARATION, **options), guarded.workdir
    )


def held_quotas(guarded):
    """{entity: values} of every client quota Kafka holds, read back with client_quota_info."""
    described = run_module("client_quota_info", connection_options(guarded.cluster.info), guarded.workdir)
    return {tuple(sorted(item["entity"].items())): item["quota_values"] for item in described["quotas"]}


def filler_volume(cluster):
    return cluster.broker(2)["log_dirs"][0]


def fill_to(cluster, leave):
    """Broker 2's volume with exactly ``leave`` bytes available (a filler file written beside Kafka's data)."""
    free_volume(cluster)
    fill_volume(filler_volume(cluster), leave=leave)


def free_volume(cluster):
    filler = os.path.join(filler_volume(cluster), "filler.bin")
    if os.path.exists(filler):
        os.remove(filler)


def scaled(base, factor):
    """The rate the guard sets at ``factor``: max(floor(base x factor), 1)."""
    return max(int(base * factor), 1)


def offer_twice(cluster, user, quota, **settings):
    """``user`` offers twice ``quota`` for two quota windows; what the broker acknowledged."""
    return produce(
        cluster,
        TOPIC,
        seconds=MEASURED,
        user=user,
        password=password_of(user),
        offered_rate=OFFERED * quota,
        message_size=MESSAGE_SIZE,
        **settings,
    )


def as_fast_as_taken(cluster, user, seconds=FLOOR_SECONDS, **settings):
    return produce(
        cluster, TOPIC, seconds=seconds, user=user, password=password_of(user), message_size=MESSAGE_SIZE, **settings
    )


def concurrently(**runs):
    """Run the producers at the same time; {name: Measured} (a producer's exception is raised here)."""
    with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
        futures = {name: pool.submit(run) for name, run in runs.items()}
        return {name: future.result() for name, future in futures.items()}


# -- a filling volume -----------------------------------------------------------------------------------------------
def test_past_the_soft_limit_producers_get_the_declared_rates_times_the_graded_factor(guarded):
    cluster = guarded.cluster
    fill_to(cluster, SOFT_FILL_LEAVE)
    result = guard(guarded, **GRADED)
    factor = result["throttle_factor"]
    worst = result["least_headroom"]
    print(
        f"graded factor {factor:.4f}: broker {worst['broker_id']} has {worst['usable_bytes']} bytes usable "
        f"(soft {SOFT_FREE}, hard {HARD_FREE})"
    )
    assert result["state"] == "THROTTLE" and worst["broker_id"] == 2
    assert 0.3 < factor < 0.5, "broker 2's volume sits between the limits, about 2/5 of the way up from the hard one"
    # The default user (alice) and a declared user entity (batch) slow down in proportion to the factor, at once.
    quotas = {"alice": scaled(BASE_RATE, factor), "batch": scaled(BATCH_RATE, factor)}
    measured = concurrently(**{user: (lambda u=user: offer_twice(cluster, u, quotas[u])) for user in quotas})
    for user, quota in quotas.items():
        assert_rate_near(measured[user], quota, user)


@pytest.fixture(scope="module")
def past_the_hard_limit(guarded):
    """Broker 2's volume past the hard limit and the guard run once; then, at the same time, a producer the <default>
    user's rate covers (bob) and the excluded principal (ops), both offering more than the unthrottled base rate."""
    cluster = guarded.cluster
    fill_to(cluster, HARD_FILL_LEAVE)
    result = guard(guarded, **GRADED)
    measured = concurrently(
        bob=lambda: as_fast_as_taken(cluster, "bob"),
        ops=lambda: produce(
            cluster,
            TOPIC,
            seconds=FLOOR_SECONDS + 3,
            user="ops",
            password=password_of("ops"),
            offered_rate=EXCLUDED_OFFERED,
            message_size=MESSAGE_SIZE,
        ),
    )
    return result, measured


def test_past_the_hard_limit_producers_are_held_at_one_byte_per_second(past_the_hard_limit):
    result, measured = past_the_hard_limit
    assert (result["throttle_factor"], result["state"]) == (0.0, "PAUSE")
    assert_at_floor(measured["bob"], "bob past the hard limit")


def test_the_excluded_principal_keeps_full_speed_while_the_others_are_held(past_the_hard_limit):
    _result, measured = past_the_hard_limit
    ops = measured["ops"]
    print(
        f"ops: offered {EXCLUDED_OFFERED} B/s, achieved {ops.rate:.0f} B/s over {ops.elapsed:.1f} s, "
        f"throttled {len(ops.throttles_ms)} times"
    )
    assert not ops.throttles_ms, "the broker never throttled the excluded principal"
    assert ops.rate > 2 * BASE_RATE, (
        "it produces faster than even the unthrottled default rate, while bob is held at 1 B/s"
    )
    assert ops.rate >= 0.7 * EXCLUDED_OFFERED, "it gets through about all it offers"


SNAPSHOT_TOPIC = "__headroom_volume_usage"
PUBLISHING_SECONDS = 12  # a dozen decisions at the guard's fastest interval of 1 s


def snapshot_records(cluster):
    adapter = KafkaAdapter.from_module_params(connection_options(cluster.info))
    try:
        return adapter.read_all(SNAPSHOT_TOPIC)
    finally:
        adapter.close()


def test_the_guard_publishes_as_an_excluded_principal_while_every_producer_is_held(past_the_hard_limit, guarded):
    """Seed 000: the volume-usage publisher is never throttled. The guard publishes as its SASL user, which it adds to
    the excluded principals: while the <default> user is held at 1 byte/s, Kafka holds the publisher's user at its
    unbounded rate and every decision's observation reaches the topic. (What Kafka does with an excluded user's
    produce, no throttle time at all, is measured with ops in past_the_hard_limit.)"""
    cluster = guarded.cluster
    config = os.path.join(guarded.workdir, "publishing-guard.yml")
    with open(config, "w", encoding="utf-8") as handle:
        yaml.safe_dump(dict(connection_options(cluster.info), **DECLARATION, **GRADED), handle)
    publisher = "User:" + cluster.info["sasl"]["username"]
    process = start_guard("--config", config, "--interval", "1", "--snapshot-topic", SNAPSHOT_TOPIC)
    try:
        wait_until(
            lambda: held_quotas(guarded).get((("user", cluster.info["sasl"]["username"]),)),
            60,
            what="the publisher excluded",
        )
        started = len(snapshot_records(cluster))
        time.sleep(PUBLISHING_SECONDS)  # the guard's decisions, each one publishing, during this window
        published = len(snapshot_records(cluster)) - started
    finally:
        said = stop_guard(process)
    held = held_quotas(guarded)
    assert held[(("user", "<default>"),)] == {"producer_byte_rate": 1}, "every other producer is held"
    assert held[(("user", cluster.info["sasl"]["username"]),)] == {"producer_byte_rate": UNLIMITED}
    print(f"{published} snapshot records in {PUBLISHING_SECONDS} s while paused")
    assert f"as {publisher}, excluded from the throttle as its publisher" in said
    assert "not published" not in said, said
    assert published >= 2 * (PUBLISHING_SECONDS // 2), "one record per broker at about every decision"


def test_a_freed_volume_restores_the_exact_declared_set_and_the_full_base_rate(guarded):
    cluster = guarded.cluster
    free_volume(cluster)
    result = guard(guarded, **GRADED)
    assert (result["throttle_factor"], result["state"], result["violations"]) == (1.0, "OPEN", [])
    held = held_quotas(guarded)
    for entity, values in HELD_AT_FACTOR_1.items():
        assert held.get(entity) == values, f"{dict(entity)}: Kafka holds {held.get(entity)}, declared {values}"
    assert sorted(held) == sorted(HELD_AT_FACTOR_1), "no entity beyond the declared set"
    assert_rate_near(offer_twice(cluster, "carol", BASE_RATE), BASE_RATE, "carol at factor 1")


# -- the guard polls faster as a volume closes in -------------------------------------------------------------------
POLL_INTERVAL, FASTEST = 10, 0.5
POLL_LIMIT = 16 * MIB  # strimzi min_available_bytes
FILL_RATE = 4 * MIB  # bytes a second written beside Kafka's data
ABOVE_LIMIT = 56 * MIB  # where the fill starts: the volume reaches the limit 14 s later, between two fixed decisions


class SteadyFill(threading.Thread):
    """Writes FILL_RATE into broker 2's volume in small steps and notes when its free space reaches POLL_LIMIT."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.path = os.path.join(filler_volume(cluster), "filler.bin")
        self.crossed_at = None
        self.done = threading.Event()

    def run(self):
        step = FILL_RATE // 10
        started = time.monotonic()
        with open(self.path, "ab") as handle:
            for count in range(1, 10_000):
                handle.write(b"\0" * step)
                handle.flush()
                stat = os.statvfs(os.path.dirname(self.path))
                if stat.f_bavail * stat.f_frsize <= POLL_LIMIT:
                    self.crossed_at = time.monotonic()
                    break
                time.sleep(max(started + count / 10 - time.monotonic(), 0))
        self.done.set()


def test_the_guard_polls_faster_as_a_volume_closes_in_and_sees_the_crossing_within_its_fastest_interval(
    guarded, tmp_path
):
    """The guard process at --interval 10 --fastest-interval 0.5, a volume filling at 4 MiB/s from 56 MiB above the
    limit, starting just after a decision: at a fixed interval the decision 10 s later would see it 4 s away and the
    next would come about 6 s after the crossing; shortened waits see it within the fastest interval."""
    cluster = guarded.cluster
    fill_to(cluster, leave=POLL_LIMIT + ABOVE_LIMIT)
    config = tmp_path / "guard.json"
    options = dict(connection_options(cluster.info), **DECLARATION, min_available_bytes=POLL_LIMIT)
    config.write_text(json.dumps(options), encoding="utf-8")
    command = [sys.executable, "-m", "headroom_guard", "--config", str(config), "--observe-only"]
    command += ["--interval", str(POLL_INTERVAL), "--fastest-interval", str(FASTEST)]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put((time.monotonic(), line)) for line in process.stderr], daemon=True
    ).start()

    def next_line(timeout):
        seen, line = lines.get(timeout=timeout)
        assert process.poll() is None or line, "the guard stopped"
        return seen, line.rstrip("\n")

    fill = SteadyFill(cluster)
    try:
        while " factor " not in next_line(60)[1]:
            pass  # the first decision: the volume is not filling yet
        fill.start()
        sooner, paused_at = [], None
        while paused_at is None:
            seen, line = next_line(60)
            if "next decision in" in line:
                sooner.append(line)
            elif " factor 0 PAUSE " in line:
                paused_at = seen
        assert fill.done.wait(10) and fill.crossed_at is not None
    finally:
        process.terminate()
        process.wait(30)
        free_volume(cluster)
    assert sooner, "a volume closing in shortened the wait"
    assert sooner[0].startswith("headroom_guard: next decision in ") and "broker 2 log dir" in sooner[0]
    lag = paused_at - fill.crossed_at
    # The fastest interval, the decision itself and reading its line; a fixed interval would leave about 6 s.
    assert -0.5 < lag < FASTEST + 2.5, f"the guard saw the crossing {lag:.2f} s after it (waits said: {sooner})"


# -- a broker that stops answering ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def broker_2_stopped(guarded, tmp_path_factory):
    """A complete observation under policy strimzi (factor 1, kept in the state file), then broker 2 stops; the
    topic's broker 1 keeps serving. Yields the state file and the producer settings that bootstrap from broker 1 (a
    client that first tries the stopped broker may spend a measurement in reconnect backoff).

    The tests below run in file order on purpose: strimzi keeps the factor it finds applied, so the factor-kept test
    comes first, while the complete observation's factor 1 is what Kafka holds."""
    cluster = guarded.cluster
    free_volume(cluster)
    state_file = str(tmp_path_factory.mktemp("guard-state") / "state.json")
    complete = guard(guarded, **STRIMZI, state_file=state_file)
    assert (complete["throttle_factor"], complete["observed"]) == (1.0, True)
    assert os.path.exists(state_file), "the complete observation is remembered"
    cluster.stop(2)
    try:
        wait_until(lambda: 2 not in cluster.unfenced_brokers(), 30, what="broker 2 leaving the cluster")
        survivor = cluster.broker(1)
        yield state_file, {"bootstrap.servers": f"{survivor['host']}:{survivor['port']}"}
    finally:
        cluster.start(2)


def test_strimzi_keeps_the_last_observed_factor_while_it_is_valid(guarded, broker_2_stopped):
    state_file, survivor = broker_2_stopped
    kept = guard(
        guarded, **STRIMZI, state_file=state_file, throttle_factor_validity="PT1H", throttle_factor_fallback=FALLBACK
    )
    print(f"strimzi, validity 1 h: factor {kept['throttle_factor']} ({kept['reason']})")
    assert (kept["throttle_factor"], kept["fallback_applied"], kept["observed"]) == (1.0, False, False)
    assert kept["missing_brokers"] == [2] and not kept["changed"], "the factor found applied is kept: nothing to change"
    assert_rate_near(offer_twice(guarded.cluster, "dave", BASE_RATE, **survivor), BASE_RATE, "dave, factor kept")


def test_strimzi_applies_the_fallback_factor_once_the_validity_has_run_out(guarded, broker_2_stopped):
    state_file, survivor = broker_2_stopped
    fallback = guard(
        guarded, **STRIMZI, state_file=state_file, throttle_factor_validity="PT0S", throttle_factor_fallback=FALLBACK
    )
    print(f"strimzi, validity 0 s: factor {fallback['throttle_factor']} ({fallback['reason']})")
    assert (fallback["throttle_factor"], fallback["fallback_applied"], fallback["missing_brokers"]) == (
        FALLBACK,
        True,
        [2],
    )
    quota = scaled(BASE_RATE, FALLBACK)
    assert_rate_near(offer_twice(guarded.cluster, "erin", quota, **survivor), quota, "erin, fallback factor")


def test_graded_pause_holds_producers_at_the_floor_while_an_expected_broker_is_silent(guarded, broker_2_stopped):
    _state_file, survivor = broker_2_stopped
    paused = guard(guarded, **GRADED)
    print(f"graded, broker 2 silent: factor {paused['throttle_factor']} ({paused['reason']})")
    assert (paused["throttle_factor"], paused["missing_data_applied"], paused["missing_brokers"]) == (0.0, True, [2])
    assert paused["violations"] == [], "no volume it saw is past a limit: the missing data alone pauses"
    assert_at_floor(as_fast_as_taken(guarded.cluster, "frank", **survivor), "frank, broker 2 silent")
