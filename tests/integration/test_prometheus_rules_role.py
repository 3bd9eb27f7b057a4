"""The prometheus_rules role on a local host: check mode writes nothing and shows the diff, a run writes the rendered
rules (checked by promtool) and has a real Prometheus reload them, a second run changes nothing; the brokers come from
the inventory; a declaration that cannot work and a file promtool refuses change nothing."""

import json
import os
import shutil
import sys
import urllib.request

import pytest
import yaml
from local_hosts import one_line, run_playbook

from ansible_collections.headroom.kafka.plugins.module_utils import alert_rules
from kafka_testbed.prometheus import PrometheusServer

PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
GIB = 1024**3
QUOTAS = {"type": "strimzi", "min_available_bytes_per_volume": 10 * GIB, "check_interval": 30}
# Broker 2's exporter listens on another port; broker 4 is scraped under another name; node 3 is a controller only.
KAFKA_HOSTS = {
    "kafka-1": {"kafka_node_id": 1},
    "kafka-2": {"kafka_node_id": 2, "jmx_exporter_port": 9404},
    "controller-3": {"kafka_node_id": 3, "kafka_process_roles": "controller"},
    "kafka-4": {
        "kafka_node_id": 4,
        "kafka_process_roles": "broker,controller",
        "prometheus_rules_instance": "10.0.0.4:7071",
    },
}
INVENTORY_BROKERS = [
    {"broker_id": 1, "instance": "kafka-1:7071"},
    {"broker_id": 2, "instance": "kafka-2:9404"},
    {"broker_id": 4, "instance": "10.0.0.4:7071"},
]


def inventory(**prometheus_vars):
    """Group kafka (only read from, never reached) and the Prometheus host, this machine."""
    return {
        "all": {
            "vars": {"kafka_quotas": QUOTAS},
            "children": {
                "kafka": {"hosts": KAFKA_HOSTS},
                "prometheus": {
                    "hosts": {"prometheus-1": {}},
                    "vars": {
                        "ansible_connection": "local",
                        "ansible_python_interpreter": sys.executable,
                        **prometheus_vars,
                    },
                },
            },
        }
    }


def run_role(tmp_path, role_vars, args=(), **prometheus_vars):
    play = [
        {
            "hosts": "prometheus",
            "gather_facts": False,
            "roles": [{"role": "headroom.kafka.prometheus_rules", "vars": role_vars}],
        }
    ]
    return run_playbook(tmp_path, inventory(**prometheus_vars), play, args)


def base_vars(tmp_path, **more):
    return {
        "prometheus_rules_cluster": "prod-eu",
        "prometheus_rules_dir": str(tmp_path / "rules"),
        "prometheus_rules_owner": os.getuid(),
        "prometheus_rules_group": os.getgid(),
        **more,
    }


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


@pytest.fixture
def prometheus(tmp_path):
    """A Prometheus that loads tmp_path/rules/*.yml and reloads on POST /-/reload; its address."""
    if PROMETHEUS is None:
        pytest.skip("needs prometheus (Debian: apt install prometheus)")
    with PrometheusServer({}, [str(tmp_path / "rules" / "*.yml")]) as server:
        yield server.url


def loaded_alerts(address):
    groups = get_json(address + "/api/v1/rules")["data"]["groups"]
    return {group["name"]: [rule["name"] for rule in group["rules"] if rule["type"] == "alerting"] for group in groups}


@pytest.mark.skipif(PROMTOOL is None, reason="needs promtool (Debian: apt install prometheus)")
def test_check_mode_then_a_run_that_prometheus_reloads_then_nothing_to_change(tmp_path, prometheus):
    role_vars = base_vars(
        tmp_path, prometheus_rules_reload="http", prometheus_rules_reload_url=prometheus + "/-/reload"
    )
    rule_file = tmp_path / "rules" / "headroom-kafka-prod-eu.yml"

    checked = run_role(tmp_path, role_vars, ["--check", "--diff"])
    assert checked.returncode == 0, checked.stdout[-6000:]
    assert not (tmp_path / "rules").exists(), "check mode writes nothing"
    assert "+  - alert: KafkaLogDirAtLimit" in checked.stdout, "the diff shows the rules"
    assert "changed=2" in checked.stdout, checked.stdout[-2000:]

    first = run_role(tmp_path, role_vars)
    assert first.returncode == 0, first.stdout[-6000:]
    expected = alert_rules.render(
        {"cluster": "prod-eu", "kafka_quotas": QUOTAS, "brokers": INVENTORY_BROKERS, "jmx_exporter": False}
    )
    assert yaml.safe_load(rule_file.read_text()) == expected, "the brokers of the inventory, the plugin's limit"
    assert oct(rule_file.stat().st_mode & 0o777) == "0o644"
    assert "RUNNING HANDLER [headroom.kafka.prometheus_rules : Reload Prometheus over HTTP]" in first.stdout
    assert loaded_alerts(prometheus) == {
        "headroom-kafka-prod-eu": [name for name, _severity in alert_rules.alert_names(expected)]
    }, "Prometheus loaded the file on the reload"

    second = run_role(tmp_path, role_vars, ["--diff"])
    assert second.returncode == 0, second.stdout[-6000:]
    assert "changed=0" in second.stdout, second.stdout[-3000:]
    assert "RUNNING HANDLER" not in second.stdout

    gone = run_role(tmp_path, dict(role_vars, prometheus_rules_state="absent"))
    assert gone.returncode == 0, gone.stdout[-6000:]
    assert not rule_file.exists()
    assert loaded_alerts(prometheus) == {}, "the reload dropped the rules"


def test_a_declaration_that_cannot_work_fails_naming_the_field_and_writes_nothing(tmp_path):
    role_vars = base_vars(
        tmp_path,
        prometheus_rules_quotas={"type": "kafka"},
        prometheus_rules_disk_guard={
            "policy": "graded",
            "soft_limit": {"type": "min_free_bytes", "level": 10 * GIB},
            "hard_limit": {"type": "min_free_bytes", "level": 50 * GIB},
        },
    )
    result = run_role(tmp_path, role_vars)
    assert result.returncode != 0
    assert (
        "prometheus_alert_rules: kafka_disk_guard: soft_limit.level must be greater than hard_limit.level"
        in one_line(result)
    ), result.stdout[-3000:]
    assert not (tmp_path / "rules").exists()


def test_a_file_promtool_refuses_leaves_the_file_in_use(tmp_path):
    """The check runs on the new file before it replaces the one Prometheus loads."""
    refusing = tmp_path / "bin" / "promtool"
    refusing.parent.mkdir()
    refusing.write_text('#!/bin/sh\necho "refused: $*" >&2\nexit 1\n')
    refusing.chmod(0o755)
    rules = tmp_path / "rules"
    rules.mkdir()
    in_use = rules / "headroom-kafka-prod-eu.yml"
    in_use.write_text("groups: []\n")
    role_vars = base_vars(
        tmp_path,
        prometheus_rules_promtool=str(refusing),
        prometheus_rules_disk_guard={"min_available_ratio": 0.1},
        prometheus_rules_quotas={},
    )
    result = run_role(tmp_path, role_vars)
    assert result.returncode != 0
    assert "refused: check rules" in one_line(result), result.stdout[-3000:]
    assert in_use.read_text() == "groups: []\n"
    # Without promtool on the host, the file is written unchecked.
    unchecked = run_role(tmp_path, dict(role_vars, prometheus_rules_promtool=str(tmp_path / "bin" / "missing")))
    assert unchecked.returncode == 0, unchecked.stdout[-3000:]
    assert yaml.safe_load(in_use.read_text())["groups"][0]["name"] == "headroom-kafka-prod-eu"
