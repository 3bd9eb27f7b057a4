"""site.yml over SSH onto brokers run by systemd, from a fleet with no quota plugin and no metrics exporter: the roles
install both, write the properties and restart each node through systemd; then the real plugin throttles a producer
from this machine when a volume fills, as the brokers' own exporters show."""

import os
import re
import time

import pytest
import yaml
from fleet_playbooks import SITE, run_playbook

from kafka_testbed.traffic import create_topic, metric, produce, wait_until

PLUGIN_JAR = "kafka-quotas-plugin-0.3.1.jar"
PLUGIN_SHA256 = "6f1fd30adbe26adb0e7411b653077ea920e13f6ac0adb769b6348ee47876175d"
AGENT_JAR = "jmx_prometheus_javaagent-1.0.1.jar"
AGENT_SHA256 = "7d61f737fd661610ccc14aea79764faa1ea94a340cbc8f0029b3d2edea3d80c1"
BASE_RATE = 1 << 20  # the plugin's produce quota, bytes/s
LIMIT = 32 << 20  # min.available.bytes per volume, of 64 MiB volumes
CHECK_INTERVAL = 5
REACTION = CHECK_INTERVAL + 10
TOPIC = "traffic"
SITE_VARS = {
    "kafka_quotas": {
        "type": "strimzi",
        "producer_byte_rate": BASE_RATE,
        "min_available_bytes_per_volume": LIMIT,
        "excluded_principals": ["User:ops"],
        "check_interval": CHECK_INTERVAL,
    },
    "kafka_jmx_exporter": True,
    "kafka_client_quotas": [{"entity": {"user": "alice"}, "producer_byte_rate": 4096}],
    "rolling_restart_health_timeout": 120,
    "rolling_restart_poll_interval": 0.5,
}


def site_inventory(fleet, directory, **overrides):
    """The fleet's inventory and a second one with the site's settings, as a user layers group variables."""
    variables = dict(SITE_VARS, quota_plugin_admin={"bootstrap_servers": fleet.info["bootstrap_servers"]})
    variables.update(overrides)
    path = os.path.join(directory, "site-vars.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"kafka": {"vars": variables}}, handle)
    return [fleet.info["inventory"], path]


def site(fleet, directory, *args, **overrides):
    return run_playbook(site_inventory(fleet, directory, **overrides), SITE, *args)


def invocations(fleet):
    """Each node's kafka.service invocation id: a new one every time systemd starts the unit."""
    return {
        entry["id"]: fleet.systemctl(entry["id"], "show", "-p", "InvocationID", "--value", "kafka").strip()
        for entry in fleet.info["brokers"]
    }


def changed_counts(stdout):
    return {host: int(changed) for host, changed in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", stdout, re.M)}


def sha256_on_host(fleet, node_id, path):
    return fleet.exec(node_id, "sha256sum", path).split()[0]


def exporter(fleet, entry, name, **labels):
    return metric(entry, name, **labels)


@pytest.fixture(scope="module")
def configured(fleet, tmp_path_factory):
    """The fleet after a first site.yml run (the run's result and the invocations before and after)."""
    directory = str(tmp_path_factory.mktemp("site"))
    before = invocations(fleet)
    started = time.monotonic()
    first = site(fleet, directory)
    elapsed = time.monotonic() - started
    assert first.returncode == 0, first.stdout[-20000:] + first.stderr[-3000:]
    print(f"site.yml from a bare fleet: {elapsed:.1f} s")
    return {"directory": directory, "first": first, "before": before, "after": invocations(fleet)}


def test_site_installs_the_jars_and_restarts_every_node_through_systemd(fleet, configured):
    assert all(configured["after"][node] != configured["before"][node] for node in configured["before"]), (
        "every node restarted once (the plugin on brokers, the exporter everywhere)"
    )
    for entry in fleet.broker_nodes:
        assert sha256_on_host(fleet, entry["id"], f"/opt/kafka/libs/{PLUGIN_JAR}") == PLUGIN_SHA256
        text = fleet.exec(entry["id"], "cat", "/etc/kafka/server.properties")
        assert "client.quota.callback.class=io.strimzi.kafka.quotas.StaticQuotaCallback" in text
    for entry in fleet.info["brokers"]:
        listing = fleet.exec(entry["id"], "find", "/", "-xdev", "-name", AGENT_JAR)
        [agent] = listing.split()
        assert sha256_on_host(fleet, entry["id"], agent) == AGENT_SHA256
    controller = [e for e in fleet.info["brokers"] if "broker" not in e["roles"]][0]
    assert PLUGIN_JAR not in fleet.exec(controller["id"], "ls", "/opt/kafka/libs")


def test_every_broker_exporter_shows_the_plugin_loaded_with_factor_one(fleet, configured):
    for entry in fleet.broker_nodes:
        wait_until(
            lambda e=entry: exporter(fleet, e, "strimzi_quotas_throttle_factor") == 1.0,
            60,
            what=f"broker {entry['id']}'s exporter showing throttle factor 1.0",
        )


def test_a_second_run_changes_and_restarts_nothing(fleet, configured):
    second = site(fleet, configured["directory"])
    assert second.returncode == 0, second.stdout[-20000:]
    assert set(changed_counts(second.stdout).values()) == {0}, second.stdout[-20000:]
    assert invocations(fleet) == configured["after"]


def test_a_full_volume_throttles_a_producer_and_freeing_it_lifts_the_throttle(fleet, configured):
    create_topic(fleet, TOPIC, replicas_on=1)
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
    assert changed_counts(result.stdout) == dict.fromkeys(("broker-1", "broker-2", "broker-3", "controller-4"), 0)
