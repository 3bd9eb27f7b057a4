"""Verify the disk_guard scenario: the unit site.yml installed runs, and the guard holds the declared quota set."""

import json
import os
import time

from kafka_testbed.prometheus_text import sample
from tests.held_quotas import held_quotas

testinfra_hosts = ["local://"]

EPHEMERAL = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]
HOST = os.path.join(EPHEMERAL, "host")
EXPECTED = {
    "user=alice": {"producer_byte_rate": 4096, "consumer_byte_rate": 8192},
    "client_id=<default>": {"request_percentage": 50.0},
    "user=<default>": {"producer_byte_rate": 3000},
    "user=ops": {"producer_byte_rate": 9223372036854775807},
}


def cluster_servers():
    with open(os.path.join(EPHEMERAL, "cluster", "cluster.json"), encoding="utf-8") as handle:
        return json.load(handle)["bootstrap_servers"]


def test_the_unit_runs_the_guard_from_its_virtual_environment_with_its_configuration(host):
    unit = host.file(os.path.join(HOST, "units", "headroom-disk-guard.service"))
    assert unit.exists
    assert f"ExecStart={HOST}/opt/venv/bin/headroom-guard --config {HOST}/etc/config.json" in unit.content_string
    assert "--interval 2" in unit.content_string
    config = host.file(os.path.join(HOST, "etc", "config.json"))
    assert config.mode == 0o600
    with open(os.path.join(HOST, "systemd.json"), encoding="utf-8") as handle:
        service = json.load(handle)["headroom-disk-guard"]
    assert service["enabled"] and service["pid"] and os.path.exists(f"/proc/{service['pid']}")


def test_the_guard_holds_the_declared_quota_set_and_writes_its_metrics():
    deadline = time.monotonic() + 60
    while held_quotas(cluster_servers()) != EXPECTED and time.monotonic() < deadline:
        time.sleep(0.5)
    assert held_quotas(cluster_servers()) == EXPECTED
    with open(os.path.join(HOST, "guard.prom"), encoding="utf-8") as handle:
        assert sample(handle.read(), "headroom_guard_throttle_factor") == 1
