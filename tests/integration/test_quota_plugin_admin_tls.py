"""The Strimzi plugin's admin client over mutual TLS, on real Kafka: brokers whose listener requires a client
certificate, site.yml with the admin client's PEM files (admin_client_tls_files) and no quota_plugin_admin of its own.
The plugin then connects with the files the admin_client_tls role placed: it observes every broker, throttles a
producer while a volume is past its limit and releases it once freed. With a certificate the brokers do not trust, it
observes nothing, and both its metrics and the broker's log say so."""

import os
import shutil
import subprocess
import sys

import pytest
from ansible_plays import run_site, scrape, write_inventory

from kafka_testbed.log_dir_probe import fill_volume
from kafka_testbed.security import make_ca, make_certificate
from kafka_testbed.traffic import create_topic, produce, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE_EXPORTER_RULES = os.path.join(ROOT, "roles", "jmx_exporter", "files", "jmx-exporter.yml")
MIB = 1 << 20
LIMIT = 24 * MIB  # min.available.bytes per volume
BASE_RATE = MIB  # every producer's rate at factor 1, bytes/s
SPEC = {
    "type": "strimzi",
    "producer_byte_rate": BASE_RATE,
    "min_available_bytes_per_volume": LIMIT,
    "check_interval": 2,
    "throttle_factor_validity": "PT10S",
}
TOPIC = "traffic"
# A check of the plugin (2 s) and a scrape, with room for a busy machine.
OBSERVED_WITHIN = 60


def metric(entry, name):
    """{labels: value} of one metric on a broker's exporter."""
    return {tuple(sorted(labels.items())): value for labels, value in scrape(entry["metrics_url"]).get(name, [])}


def active_brokers(entry):
    found = metric(entry, "strimzi_quotas_active_brokers")
    return int(max(found.values())) if found else None


def factor(entry):
    found = metric(entry, "strimzi_quotas_throttle_factor")
    return min(found.values()) if found else None


def every_factor(cluster, wanted):
    """Each broker's plugin checks on its own clock: the partition's leader may see the volume a check later."""
    return all(factor(entry) == wanted for entry in cluster.broker_nodes)


def logs_since(cluster, offsets):
    """What each broker logged since its offset, all together: the plugin's admin client may reach either broker."""
    logged = []
    for entry in cluster.broker_nodes:
        with open(entry["log_file"], encoding="utf-8", errors="replace") as handle:
            handle.seek(offsets[entry["id"]])
            logged.append(handle.read())
    return "\n".join(logged)


def rejection_logged(cluster, offsets):
    logged = logs_since(cluster, offsets).lower()
    return any(said in logged for said in REJECTED)


# The server logs "Failed authentication with ... (SSL handshake failed)"; the client side, "failed authentication
# due to: SSL handshake failed". Which of them a rejected certificate leaves depends on the TLS version's handshake.
REJECTED = ("ssl handshake failed", "failed authentication")


@pytest.fixture(scope="module")
def configured(kafka_cluster_root, tmp_path_factory):
    from kafka_testbed.testing import ClusterFactory

    factory = ClusterFactory(kafka_cluster_root, engine="kafka")
    try:
        cluster = factory(2, tls=True, volume_size="64M", catch_up_ms=500)  # the listener requires a certificate
        shutil.copyfile(ROLE_EXPORTER_RULES, cluster.info["exporter_config"])
        tmp_path = tmp_path_factory.mktemp("admin-tls")
        tls = cluster.info["tls"]
        inventory = write_inventory(
            cluster,
            tmp_path,
            {
                "kafka_quotas": SPEC,
                "quota_plugin_admin": {},
                "admin_client_tls_files": {"ca_pem": tls["ca"], "cert_pem": tls["cert"], "key_pem": tls["key"]},
                # Each node its own directory, as each broker host has its own.
                "admin_client_tls_dir": str(tmp_path / "admin-client") + "/{{ inventory_hostname }}",
                "admin_client_tls_client_properties": str(tmp_path / "admin-client")
                + "/{{ inventory_hostname }}/client.properties",
                "admin_client_tls_owner": os.getuid(),
                "admin_client_tls_group": os.getgid(),
                "admin_client_tls_bootstrap_servers": cluster.info["bootstrap_servers"],
            },
        )
        result = run_site(inventory)
        assert result.returncode == 0, result.stdout[-15000:]
        create_topic(cluster, TOPIC, replicas_on=2)
        yield {"cluster": cluster, "inventory": inventory, "tmp_path": tmp_path, "first": result}
    finally:
        factory.close()


def test_the_plugin_connects_with_the_placed_files_observes_throttles_and_releases(configured):
    cluster = configured["cluster"]
    block = open(cluster.broker(1)["properties"], encoding="utf-8").read()
    admin_dir = str(configured["tmp_path"] / "admin-client" / "broker-1")
    assert "client.quota.callback.static.kafka.admin.security.protocol=SSL" in block
    assert f"client.quota.callback.static.kafka.admin.ssl.keystore.location={admin_dir}/admin.pem" in block
    assert f"client.quota.callback.static.kafka.admin.ssl.truststore.location={admin_dir}/ca.crt" in block
    assert "client.quota.callback.static.kafka.admin.ssl.keystore.type=PEM" in block

    for entry in cluster.broker_nodes:
        wait_until(
            lambda e=entry: active_brokers(e) == 2,
            OBSERVED_WITHIN,
            what=f"broker {entry['id']}'s plugin observing both",
        )
    free = produce(cluster, TOPIC, seconds=3)
    assert free.rate > BASE_RATE / 4, f"{free.rate:.0f} B/s before the fill"

    volume = cluster.broker(2)["log_dirs"][0]
    filler = fill_volume(volume, leave=LIMIT // 2)
    try:
        wait_until(lambda: every_factor(cluster, 0), OBSERVED_WITHIN, what="every plugin's factor 0")
        throttled = produce(cluster, TOPIC, seconds=4)
        assert throttled.throttles_ms and max(throttled.throttles_ms) > 1000, "produce responses carry the throttle"
        assert throttled.rate_after_first_throttle() < BASE_RATE / 20
    finally:
        os.remove(filler)
    wait_until(lambda: every_factor(cluster, 1), OBSERVED_WITHIN, what="every plugin's factor 1 again")
    assert produce(cluster, TOPIC, seconds=3).rate > BASE_RATE / 4


def test_a_certificate_the_brokers_do_not_trust_is_reported_by_the_plugins_metrics_and_the_brokers_log(
    configured, tmp_path
):
    cluster = configured["cluster"]
    placed = configured["tmp_path"] / "admin-client" / "broker-1" / "admin.pem"
    kept = placed.read_text(encoding="utf-8")
    ca_cert, ca_key = make_ca(str(tmp_path / "stranger"), "a CA the brokers do not know")
    stranger = make_certificate(str(tmp_path / "stranger"), "admin", ca_cert, ca_key, "headroom-admin", server=False)
    shutil.copyfile(stranger["pem"], placed)  # its key and chain, as the role writes the PEM key store
    offsets = {node["id"]: os.path.getsize(node["log_file"]) for node in cluster.broker_nodes}
    restart = [sys.executable, "-m", "kafka_testbed", "restart", "--dir", cluster.directory, "--broker", "1"]
    try:
        subprocess.run(restart, cwd=ROOT, check=True, timeout=180, capture_output=True)
        # The plugin of broker 1 observes no broker; broker 2's, with the right certificate, still observes both.
        wait_until(lambda: active_brokers(cluster.broker(1)) == 0, OBSERVED_WITHIN, what="broker 1's plugin blind")
        # Its check may have fallen while broker 1 restarted: the next one sees both again.
        wait_until(
            lambda: active_brokers(cluster.broker(2)) == 2, OBSERVED_WITHIN, what="broker 2's plugin seeing both"
        )
        wait_until(
            lambda: rejection_logged(cluster, offsets),
            OBSERVED_WITHIN,
            what="a broker's log saying the plugin's certificate was rejected",
        )
    finally:
        placed.write_text(kept, encoding="utf-8")
        subprocess.run(restart, cwd=ROOT, check=True, timeout=180, capture_output=True)
    wait_until(lambda: active_brokers(cluster.broker(1)) == 2, OBSERVED_WITHIN, what="broker 1's plugin seeing again")
