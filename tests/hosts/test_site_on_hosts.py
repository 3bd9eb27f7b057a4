"""site.yml over SSH onto brokers run by systemd, from a fleet with no quota plugin and no metrics exporter: once the
roles installed both, every broker's exporter shows the plugin loaded, the real plugin throttles a producer from this
machine when a volume fills, and a cp-ansible inventory drives the same plays.

What the roles install on the hosts (the jars with their checksums, the properties, the exporter's drop-in loaded by
the running node) and that a second run changes nothing is the molecule scenario hosts (extensions/molecule/hosts,
with idempotence)."""

import os
import re
import time

import pytest
import yaml
from fleet_playbooks import SITE, run_playbook

from kafka_testbed.traffic import create_topic, metric, produce, wait_until

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


def changed_counts(stdout):
    return {host: int(changed) for host, changed in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", stdout, re.M)}


def exporter(fleet, entry, name, **labels):
    return metric(entry, name, **labels)


@pytest.fixture(scope="module")
def configured(fleet, tmp_path_factory):
    """The fleet after a first site.yml run."""
    directory = str(tmp_path_factory.mktemp("site"))
    started = time.monotonic()
    first = site(fleet, directory)
    elapsed = time.monotonic() - started
    assert first.returncode == 0, first.stdout[-20000:] + first.stderr[-3000:]
    print(f"site.yml from a bare fleet: {elapsed:.1f} s")
    return {"directory": directory, "first": first}


def test_every_broker_exporter_shows_the_plugin_loaded_with_factor_one(fleet, configured):
    for entry in fleet.broker_nodes:
        wait_until(
            lambda e=entry: exporter(fleet, e, "strimzi_quotas_throttle_factor") == 1.0,
            60,
            what=f"broker {entry['id']}'s exporter showing throttle factor 1.0",
        )


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
