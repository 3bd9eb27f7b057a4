"""The real Strimzi quota plugin, configured on real Apache Kafka brokers by site.yml, really throttles.

Two brokers and a controller, SCRAM, each data log dir on a 64 MiB tmpfs. site.yml writes the plugin block (limit:
32 MiB available per volume, storage checked every 5 s, ``User:ops`` excluded) and rolls the brokers. Then broker
2's volume is filled: what the brokers do about it is read from the brokers themselves - the throttle time in
produce responses, the rate a producer gets through, and the plugin's own metrics.
"""

import os
import time

import pytest
from ansible_plays import run_site, write_inventory
from ansible_run import run_module
from test_integration_targets import connection_options

from kafka_testbed.log_dir_probe import fill_volume
from kafka_testbed.nodes import tail
from kafka_testbed.traffic import (
    allow_all_on_topic,
    completed_plugin_checks,
    create_topic,
    log_since,
    plugin_gauge,
    produce,
    wait_until,
)

BASE_RATE = 1 << 20  # the plugin's produce quota, bytes/s
LIMIT = 32 << 20  # min.available.bytes per volume
CHECK_INTERVAL = 5  # storage.check-interval, seconds (each check may take interval - 1 s)
REACTION = CHECK_INTERVAL + 5  # what the issue allows: the check interval plus a few seconds
TOPIC = "traffic"
INTERNAL_TOPIC = "internal-traffic"  # on broker 2, whose volume fills: what the internal user writes stays off broker 1
USERS = {"alice": "alice-secret", "ops": "ops-secret"}
SPEC = {
    "type": "strimzi",
    "producer_byte_rate": BASE_RATE,
    "min_available_bytes_per_volume": LIMIT,
    "excluded_principals": ["User:ops"],
    "check_interval": CHECK_INTERVAL,
}


@pytest.fixture(scope="module")
def plugin_cluster(kafka_cluster_root, tmp_path_factory):
    from kafka_testbed.testing import ClusterFactory

    factory = ClusterFactory(kafka_cluster_root, engine="kafka")
    cluster = factory(2, scram=True, volume_size="64M")
    try:
        for user, password in USERS.items():
            cluster.add_scram_user(user, password, "SCRAM-SHA-512")
        sasl = cluster.info["sasl"]
        admin = {
            "bootstrap_servers": cluster.info["bootstrap_servers"],
            "security_protocol": "SASL_PLAINTEXT",
            "sasl": {"mechanism": sasl["mechanism"], "username": sasl["username"], "password": sasl["password"]},
        }
        inventory = write_inventory(
            cluster,
            tmp_path_factory.mktemp("site"),
            {"kafka_quotas": SPEC, "quota_plugin_admin": admin, "kafka_client_quotas": []},
        )
        result = run_site(inventory)
        assert result.returncode == 0, result.stdout[-15000:] + result.stderr[-3000:]
        create_topic(cluster, TOPIC, replicas_on=1)
        create_topic(cluster, INTERNAL_TOPIC, replicas_on=2)
        allow_all_on_topic(cluster, TOPIC, *USERS)
        yield cluster
    finally:
        factory.close()


def as_user(user):
    return {"user": user, "password": USERS[user]}


def test_every_broker_runs_the_plugin_site_yml_configured(plugin_cluster):
    for entry in plugin_cluster.broker_nodes:
        assert plugin_gauge(entry, "StaticQuotaCallback", "Produce") == BASE_RATE, (
            "the broker's own metric, not our file"
        )
        assert wait_until(
            lambda e=entry: plugin_gauge(e, "VolumeSource", "ActiveLogDirs") == 2,
            30,
            what=f"broker {entry['id']} observing both log dirs",
        )
        assert plugin_gauge(entry, "ThrottleFactor", "LimitViolated") == 0
        assert plugin_gauge(entry, "ThrottleFactor", "ThrottleFactor") == 1.0


def test_a_full_volume_throttles_every_producer_but_the_excluded_one(plugin_cluster, tmp_path):
    cluster = plugin_cluster
    observer = cluster.broker(1)  # the topic lives on broker 1; broker 2's volume fills
    before = produce(cluster, TOPIC, seconds=3, **as_user("alice"))
    assert before.rate > BASE_RATE / 4, f"alice produces freely before: {before.rate:.0f} B/s"

    violations_before = plugin_gauge(observer, "ThrottleFactor", "LimitViolated")
    filled_at = time.monotonic()
    filler = fill_volume(cluster.broker(2)["log_dirs"][0], leave=LIMIT // 2)
    try:
        wait_until(
            lambda: plugin_gauge(observer, "ThrottleFactor", "ThrottleFactor") == 0.0,
            REACTION,
            what="the plugin's throttle factor falling to 0",
        )
        reaction = time.monotonic() - filled_at
        # LimitViolated counts the violating volumes of every check (a counter, not a 0/1 gauge).
        assert plugin_gauge(observer, "ThrottleFactor", "LimitViolated") > violations_before
        limits = run_module(
            "volume_limits", dict(connection_options(cluster.info), min_available_bytes=LIMIT), str(tmp_path)
        )
        assert (limits["throttle_factor"], limits["state"]) == (0.0, "PAUSE"), "volume_limits agrees at that moment"

        throttled = produce(cluster, TOPIC, seconds=5, **as_user("alice"))
        excluded = produce(cluster, TOPIC, seconds=4, max_bytes=8 << 20, **as_user("ops"))
        # The plugin admin client's SASL user, which the role excludes without being told (seed 068), to a topic of
        # its own on broker 2: broker 1's volume must stay below the limit for the stopped-broker test (a held user is
        # throttled from its first batch on, so a few MiB tell).
        sasl = cluster.info["sasl"]
        internal = produce(
            cluster, INTERNAL_TOPIC, seconds=3, max_bytes=3 << 20, user=sasl["username"], password=sasl["password"]
        )
        floor_rate = throttled.rate_after_first_throttle()
        print(
            f"throttle reaction {reaction:.1f} s; alice {before.rate:.0f} -> {floor_rate:.0f} B/s after the first "
            f"throttled response ({throttled.rate:.0f} B/s over the run; "
            f"throttle {max(throttled.throttles_ms, default=0):.0f} ms); "
            f"ops {excluded.rate:.0f} B/s"
        )
        assert throttled.throttles_ms and max(throttled.throttles_ms) > 1000, (
            "produce responses carry the throttle time"
        )
        # The broker applies a new factor from its next quota update on: what it accepts from then on is the floor.
        assert floor_rate < before.rate / 20, "alice's rate collapses to the plugin's floor"
        assert not excluded.throttles_ms, "the excluded principal is never throttled"
        assert excluded.rate > BASE_RATE, "and produces faster than even the unthrottled quota"
        assert not internal.throttles_ms and internal.rate > BASE_RATE, "the plugin's admin user is excluded too"
    finally:
        os.remove(filler)

    freed_at = time.monotonic()
    wait_until(
        lambda: plugin_gauge(observer, "ThrottleFactor", "ThrottleFactor") == 1.0, REACTION, what="the throttle lifting"
    )
    print(f"throttle lifted {time.monotonic() - freed_at:.1f} s after the filler was deleted")
    after = produce(cluster, TOPIC, seconds=3, **as_user("alice"))
    assert after.rate > BASE_RATE / 4, f"alice produces again: {after.rate:.0f} B/s"


def test_a_stopped_broker_leaves_the_others_working_with_the_plugin_loaded(plugin_cluster):
    """KAFKA-20746: Kafka 4.2.0 threw a NullPointerException in the callback's updateClusterMetadata while a broker was
    fenced. The surviving broker must keep serving producers and keep observing volumes."""
    cluster = plugin_cluster
    survivor = cluster.broker(1)
    offset = os.path.getsize(survivor["log_file"])
    cluster.stop(2)
    try:
        # A check that runs while broker 2 shuts down may compute factor 0 (seen under load: 0 for one interval, 1.0
        # from the next check on), and the gauges can read one active broker and the factor of the check before that
        # one. The survivor is measured once a check completed after one active broker was seen, and left no
        # violation.
        wait_until(
            lambda: plugin_gauge(survivor, "VolumeSource", "ActiveBrokers") == 1,
            6 * REACTION,
            what="the plugin seeing one active broker",
        )
        checks_before = completed_plugin_checks(survivor["log_file"], offset)
        wait_until(
            lambda: (
                completed_plugin_checks(survivor["log_file"], offset) > checks_before
                and plugin_gauge(survivor, "VolumeSource", "ActiveBrokers") == 1
                and plugin_gauge(survivor, "ThrottleFactor", "ThrottleFactor") == 1.0
            ),
            6 * REACTION,
            what="a check of the plugin after that one, with no violation",
        )
        # Bootstrapped from the survivor: a client that first tries the stopped broker may spend the whole
        # measurement in reconnect backoff before it learns the metadata.
        during = produce(
            cluster,
            TOPIC,
            seconds=3,
            **as_user("alice"),
            **{"bootstrap.servers": f"{survivor['host']}:{survivor['port']}"},
        )
        assert during.rate > BASE_RATE / 4, (
            f"broker 1 keeps serving: {during.rate:.0f} B/s (throttled {len(during.throttles_ms)} times; the plugin's "
            f"factor {plugin_gauge(survivor, 'ThrottleFactor', 'ThrottleFactor')}, active log dirs "
            f"{plugin_gauge(survivor, 'VolumeSource', 'ActiveLogDirs')}):\n{tail(survivor['log_file'], 40)}"
        )
        assert "NullPointerException" not in log_since(survivor["log_file"], offset)
        assert plugin_gauge(survivor, "ThrottleFactor", "ThrottleFactor") == 1.0
    finally:
        cluster.start(2)
    assert 2 in cluster.unfenced_brokers()
