"""The jmx_exporter role on local hosts: the agent's jar, its configuration and the unit's drop-in under temporary
directories, the restart mark, check mode and the refusals. The jar is the real agent the test cluster runs."""

import os

import pytest
import yaml
from local_hosts import host_files, one_line, restart_marks, run_role_marking_restarts
from test_integration_targets import ROOT

from kafka_testbed.kafka_libs import ensure_libs

AGENT_JAR = "jmx_prometheus_javaagent-1.0.1.jar"
NODES = {"broker-1": "broker", "controller-2": "controller", "combined-3": "broker,controller"}
RULES = os.path.join(ROOT, "roles", "jmx_exporter", "files", "jmx-exporter.yml")


@pytest.fixture(scope="module")
def agent_jar():
    return ensure_libs().agent


def paths(tmp_path, host):
    base = tmp_path / host
    return {
        "dir": base / "opt" / "prometheus-jmx-exporter",
        "config": base / "etc" / "kafka" / "jmx-exporter.yml",
        "units": base / "systemd",
        "dropin": base / "systemd" / "kafka.service.d" / "headroom-jmx-exporter.conf",
    }


def snapshot(tmp_path):
    return host_files(tmp_path, NODES)


def run_role(tmp_path, group_vars, host_vars=None, args=()):
    hosts = {}
    for host, roles in NODES.items():
        where = paths(tmp_path, host)
        (tmp_path / host).mkdir(exist_ok=True)
        hosts[host] = {
            "kafka_process_roles": roles,
            "jmx_exporter_dir": str(where["dir"]),
            "jmx_exporter_config_file": str(where["config"]),
            "jmx_exporter_unit_dir": str(where["units"]),
            **(host_vars or {}).get(host, {}),
        }
    settings = {
        "jmx_exporter_owner": os.getuid(),
        "jmx_exporter_group": os.getgid(),
        "broker_jar_cache_dir": str(tmp_path / "cache"),
        **group_vars,
    }
    return run_role_marking_restarts(
        tmp_path, "headroom.kafka.jmx_exporter", hosts, settings, "jmx_exporter_restart_needed", args
    )


def restart_needed(tmp_path):
    return restart_marks(tmp_path, NODES)


def test_installs_the_agent_on_every_node_and_marks_the_restart(tmp_path, agent_jar):
    settings = {"jmx_exporter_jar_source": "file", "jmx_exporter_jar_file": agent_jar}
    for host in NODES:
        (tmp_path / host).mkdir()
    checked = run_role(tmp_path, settings, args=["--check", "--diff"])
    assert checked.returncode == 0, checked.stdout[-8000:]
    assert snapshot(tmp_path) == {}, "check mode writes nothing"

    first = run_role(tmp_path, settings)
    assert first.returncode == 0, first.stdout[-8000:]
    with open(RULES, encoding="utf-8") as handle:
        rules = yaml.safe_load(handle)
    for host in NODES:
        where = paths(tmp_path, host)
        jar = where["dir"] / AGENT_JAR
        assert jar.read_bytes() == open(agent_jar, "rb").read()
        with open(where["config"], encoding="utf-8") as handle:
            assert yaml.safe_load(handle) == rules, "the role's rules, as files/jmx-exporter.yml has them"
        assert where["dropin"].read_text().splitlines()[-2:] == [
            "[Service]",
            f'Environment="KAFKA_OPTS=-javaagent:{jar}=7071:{where["config"]}"',
        ]
    assert restart_needed(tmp_path) == dict.fromkeys(NODES, True)

    second = run_role(tmp_path, settings)
    assert second.returncode == 0, second.stdout[-8000:]
    assert "changed=1" not in second.stdout and "changed=2" not in second.stdout, second.stdout[-3000:]
    assert restart_needed(tmp_path) == dict.fromkeys(NODES, False)

    # New rules: the exporter reads its file again, so no restart; a new port is in the drop-in: restart.
    extra = {"pattern": "kafka.network<type=SocketServer, name=(\\w+)><>Value", "name": "kafka_network_$1"}
    ruled = run_role(tmp_path, dict(settings, jmx_exporter_extra_rules=[extra]))
    assert ruled.returncode == 0, ruled.stdout[-8000:]
    with open(paths(tmp_path, "broker-1")["config"], encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["rules"] == rules["rules"] + [extra], "the role's rules first"
    assert restart_needed(tmp_path) == dict.fromkeys(NODES, False)
    ported = run_role(
        tmp_path,
        dict(settings, jmx_exporter_port=9404, jmx_exporter_address="127.0.0.1", jmx_exporter_kafka_opts="-Dx=1"),
        host_vars={"controller-2": {"jmx_exporter_port": 7071}},
    )
    assert ported.returncode == 0, ported.stdout[-8000:]
    where = paths(tmp_path, "broker-1")
    assert (
        f'Environment="KAFKA_OPTS=-Dx=1 -javaagent:{where["dir"] / AGENT_JAR}=127.0.0.1:9404:{where["config"]}"'
    ) in where["dropin"].read_text()
    assert restart_needed(tmp_path) == {"broker-1": True, "controller-2": True, "combined-3": True}


def test_the_unit_is_the_nodes_kafka_service_name(tmp_path, agent_jar):
    result = run_role(
        tmp_path,
        {
            "jmx_exporter_jar_source": "file",
            "jmx_exporter_jar_file": agent_jar,
            "kafka_service_name": "confluent-server",
        },
    )
    assert result.returncode == 0, result.stdout[-8000:]
    assert (
        paths(tmp_path, "broker-1")["units"] / "confluent-server.service.d" / "headroom-jmx-exporter.conf"
    ).is_file()


def test_source_none_uses_the_jar_on_the_host_or_stops(tmp_path, agent_jar):
    shipped = tmp_path / "shipped" / AGENT_JAR
    shipped.parent.mkdir()
    shipped.write_bytes(open(agent_jar, "rb").read())
    settings = {"jmx_exporter_jar_source": "none", "jmx_exporter_jar_path": str(shipped)}
    missing = str(tmp_path / "nowhere" / AGENT_JAR)
    result = run_role(tmp_path, settings, host_vars={"combined-3": {"jmx_exporter_jar_path": missing}})
    assert result.returncode != 0
    assert f"combined-3: jmx_exporter_jar_path={missing} is not a file on the host" in one_line(result)
    assert snapshot(tmp_path) == {}, "nothing changes on any node"

    result = run_role(tmp_path, settings)
    assert result.returncode == 0, result.stdout[-8000:]
    assert f"-javaagent:{shipped}=7071:" in paths(tmp_path, "broker-1")["dropin"].read_text()
    assert not paths(tmp_path, "broker-1")["dir"].exists(), "no jar installed"


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({"jmx_exporter_port": 70000}, "jmx_exporter_port must be a TCP port from 1 to 65535 (got 70000)"),
        ({"jmx_exporter_jar_path": "/opt/jmx exporter/agent.jar"}, "absolute paths without blanks"),
        ({"jmx_exporter_kafka_opts": '-Dx="y"'}, "jmx_exporter_kafka_opts without '%', quotes or backslashes"),
        ({"jmx_exporter_extra_rules": [{"name": "x"}]}, "jmx_exporter_extra_rules a list of rules with a pattern each"),
        (
            {"jmx_exporter_version": "1.1.0"},
            "jmx_exporter_jar_checksum must be the sha256 of jmx_prometheus_javaagent-1.1.0.jar",
        ),
    ],
    ids=["port", "blank-in-path", "quote-in-options", "rule-without-pattern", "unpinned-version"],
)
def test_bad_settings_change_nothing(tmp_path, settings, said):
    result = run_role(tmp_path, settings)
    assert result.returncode != 0
    assert said in one_line(result), one_line(result)[-3000:]
    assert snapshot(tmp_path) == {}
