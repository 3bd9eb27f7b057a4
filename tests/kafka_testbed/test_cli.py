"""Conformance: the cluster's command line (``python -m kafka_testbed ...``) and the cluster lifecycle it drives.

- ``up`` writes cluster.json (bootstrap servers, protocol, cluster id, metadata dir, per broker its id, host, port,
  properties, log dirs, pid and log file, volumes, notes; tls and sasl with --tls/--scram; mode 0600) and returns only
  once every broker answers and is in the cluster.
- ``status`` reports each broker's process and membership; ``stop``, ``start``, ``restart``, ``kill``, ``pause``,
  ``resume``, ``latency`` and ``offline-log-dir`` act on one broker, ``add-scram-user`` on the cluster metadata;
  ``down`` stops every process and unmounts the volumes.
- A broker started alone with ``broker --config <its server.properties>`` joins the cluster and leaves it on SIGTERM.
- ``up`` on a configuration a broker refuses fails with the broker's reason and leaves no process running.
"""
# pylint: disable=missing-function-docstring

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

import pytest
from clients import RawClient, confluent_config, kafka_python_config
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka.protocol.admin.cluster import DescribeLogDirsRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from kafka_testbed.cluster import Cluster, process_alive
from kafka_testbed.model.broker import wait_for
from kafka_testbed.testing import base_port_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BROKER_KEYS = {"id", "host", "port", "properties", "log_dirs", "pid", "log_file"}


def cli(*args, timeout=90):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, "-m", "kafka_testbed", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
        check=False,
    )


def ok(*args):
    result = cli(*args)
    assert result.returncode == 0, f"{args}: {result.stderr}"
    return result


def api_versions_answered(host, port):
    with RawClient(host, port, timeout=5) as raw:
        return (
            raw.request(
                ApiVersionsRequest(client_software_name="conformance", client_software_version="1.0"), 3
            ).error_code
            == 0
        )


def metadata_brokers(cluster):
    return sorted(AdminClient(confluent_config(cluster)).list_topics(timeout=10).brokers)


def status(directory):
    return {row["id"]: row for row in json.loads(ok("status", "--dir", directory).stdout)}


class CliCluster:
    def __init__(self, directory, result, first_look):
        self.directory = directory
        self.result = result
        self.first_look = first_look

    @property
    def cluster(self):
        return Cluster(self.directory)


@pytest.fixture(scope="module")
def cli_cluster(kafka_cluster_root):
    directory = tempfile.mkdtemp(prefix="cli-", dir=kafka_cluster_root)
    base = base_port_for(3)
    result = cli(
        "up",
        "--dir",
        directory,
        "--brokers",
        3,
        "--base-port",
        base,
        "--volume-size",
        "8M",
        "--log-dirs-per-broker",
        2,
        "--catch-up-ms",
        1000,
    )
    try:
        assert result.returncode == 0, result.stderr
        # Right after ``up`` returned: every broker answers and every broker is in the cluster.
        cluster = Cluster(directory)
        first_look = {
            "answers": [api_versions_answered(b["host"], b["port"]) for b in cluster.broker_nodes],
            "brokers": metadata_brokers(cluster),
        }
        yield CliCluster(directory, result, first_look)
    finally:
        cli("down", "--dir", directory)
        if Cluster(directory).info:
            Cluster(directory).down()


def test_up_writes_cluster_json_and_returns_when_every_broker_answers(cli_cluster):
    cluster = cli_cluster.cluster
    info = cluster.info
    assert cli_cluster.first_look == {"answers": [True, True, True], "brokers": [1, 2, 3]}
    assert stat.S_IMODE(os.stat(cluster.path).st_mode) == 0o600
    assert info["security_protocol"] == "PLAINTEXT" and "tls" not in info and "sasl" not in info
    assert len(info["cluster_id"]) == 22 and info["cluster_id"] in cli_cluster.result.stdout
    brokers = cluster.broker_nodes
    assert info["bootstrap_servers"] == ",".join(f"{b['host']}:{b['port']}" for b in brokers)
    assert info["bootstrap_servers"] in cli_cluster.result.stdout
    # The model's nodes share one metadata dir; each real node has its own.
    assert all(
        os.path.isdir(path)
        for path in [info.get("metadata_dir")] + [n.get("metadata_dir") for n in info["brokers"]]
        if path
    )
    assert [b["id"] for b in brokers] == [1, 2, 3]
    for broker in brokers:
        assert BROKER_KEYS <= set(broker)
        assert process_alive(broker["pid"])
        assert os.path.isfile(broker["properties"]) and os.path.isfile(broker["log_file"])
        assert len(broker["log_dirs"]) == 2 and all(os.path.isdir(path) for path in broker["log_dirs"])
        with open(broker["properties"], encoding="utf-8") as handle:
            text = handle.read()
        assert f"node.id={broker['id']}" in text and f"CLIENT://{broker['host']}:{broker['port']}" in text
    assert isinstance(info["notes"], list)
    unmounted = [note for note in info["notes"] if note.startswith("cannot mount")]
    if unmounted:
        pytest.skip(f"volumes not mounted here: {unmounted}")
    log_dir_volumes = [v for v in info["volumes"] if any(v["path"] in b["log_dirs"] for b in brokers)]
    assert sorted(v["path"] for v in log_dir_volumes) == sorted(p for b in brokers for p in b["log_dirs"])
    for volume in log_dir_volumes:
        assert volume["size"] == 8 << 20 and volume["type"] == "tmpfs" and os.path.ismount(volume["path"])
        st = os.statvfs(volume["path"])
        assert st.f_blocks * st.f_frsize == 8 << 20


def test_status(cli_cluster):
    rows = status(cli_cluster.directory)
    brokers = cli_cluster.cluster.broker_nodes
    assert sorted(rows) == sorted(n["id"] for n in cli_cluster.cluster.info["brokers"])
    for broker in brokers:
        row = {key: rows[broker["id"]][key] for key in ("id", "port", "pid", "running", "in_cluster")}
        assert row == {
            "id": broker["id"],
            "port": broker["port"],
            "pid": broker["pid"],
            "running": True,
            "in_cluster": True,
        }


def test_stop_start_restart_kill(cli_cluster):
    directory = cli_cluster.directory
    ok("stop", "--dir", directory, "--broker", 2)
    rows = status(directory)
    assert (rows[2]["running"], rows[2]["in_cluster"]) == (False, False)
    assert metadata_brokers(cli_cluster.cluster) == [1, 3]

    ok("start", "--dir", directory, "--broker", 2)
    rows = status(directory)
    assert (rows[2]["running"], rows[2]["in_cluster"]) == (True, True)
    assert metadata_brokers(cli_cluster.cluster) == [1, 2, 3]
    entry = cli_cluster.cluster.broker(2)
    assert api_versions_answered(entry["host"], entry["port"])

    before = rows[3]["pid"]
    ok("restart", "--dir", directory, "--broker", 3)
    rows = status(directory)
    assert rows[3]["pid"] != before and (rows[3]["running"], rows[3]["in_cluster"]) == (True, True)
    assert not process_alive(before)
    assert metadata_brokers(cli_cluster.cluster) == [1, 2, 3]

    ok("kill", "--dir", directory, "--broker", 3)
    assert status(directory)[3]["running"] is False
    ok("start", "--dir", directory, "--broker", 3)  # a killed broker starts again at once
    assert status(directory)[3]["in_cluster"] is True

    result = cli("start", "--dir", directory, "--broker", 3)
    assert result.returncode == 1 and "already running" in result.stderr
    result = cli("stop", "--dir", directory, "--broker", 9)
    assert result.returncode == 1 and "no such broker" in result.stderr


def _process_state(pid):
    with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


def test_pause_resume(cli_cluster):
    directory = cli_cluster.directory
    pid = status(directory)[1]["pid"]
    ok("pause", "--dir", directory, "--broker", 1)
    try:
        # SIGSTOP takes hold of every thread of a busy JVM a moment after kill() returns: poll for the stopped state.
        assert wait_for(lambda: _process_state(pid) == "T", 10), _process_state(pid)
        assert status(directory)[1]["running"] is True
    finally:
        ok("resume", "--dir", directory, "--broker", 1)
    assert wait_for(lambda: _process_state(pid) != "T", 10)


@pytest.mark.model_only("added response latency")
def test_latency(cli_cluster):
    directory = cli_cluster.directory
    entry = cli_cluster.cluster.broker(1)
    # A second: an answer without the latency takes a fraction of it even on one busy core (0.31 s seen there).
    ok("latency", "--dir", directory, "--broker", 1, "--ms", 1000)
    try:
        started = time.monotonic()
        assert api_versions_answered(entry["host"], entry["port"])
        assert time.monotonic() - started >= 1.0
    finally:
        ok("latency", "--dir", directory, "--broker", 1, "--ms", 0)
    started = time.monotonic()
    assert api_versions_answered(entry["host"], entry["port"])
    assert time.monotonic() - started < 1.0


@pytest.mark.model_only("starts the model's broker process by itself (python -m kafka_testbed broker)")
def test_broker_started_alone_joins(cli_cluster):
    directory = cli_cluster.directory
    cluster = cli_cluster.cluster
    entry = cluster.broker(2)
    ok("stop", "--dir", directory, "--broker", 2)
    assert metadata_brokers(cluster) == [1, 3]
    env = dict(os.environ, PYTHONPATH=ROOT)
    with subprocess.Popen(
        [sys.executable, "-m", "kafka_testbed", "broker", "--config", entry["properties"]],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as process:
        try:
            assert wait_for(lambda: metadata_brokers(cluster) == [1, 2, 3], 20, 0.1), (
                "the broker started alone did not join"
            )
            assert api_versions_answered(entry["host"], entry["port"])
        finally:
            process.send_signal(signal.SIGTERM)
            output = process.communicate(timeout=15)[0]
        assert process.returncode == 0, output
    assert "Kafka Server started" in output and "shut down completed" in output
    assert metadata_brokers(cluster) == [1, 3]  # a controlled shutdown: gone at once
    ok("start", "--dir", directory, "--broker", 2)
    assert metadata_brokers(cluster) == [1, 2, 3]


def test_offline_log_dir_and_add_scram_user(cli_cluster):
    directory = cli_cluster.directory
    cluster = cli_cluster.cluster
    lost, kept = cluster.broker(3)["log_dirs"]
    ok("offline-log-dir", "--dir", directory, "--broker", 3, "--log-dir", lost)
    entry = cluster.broker(3)
    with RawClient(entry["host"], entry["port"]) as raw:
        results = {r.log_dir: r for r in raw.request(DescribeLogDirsRequest(topics=None), 4).results}
    assert (results[lost].error_code, results[lost].total_bytes, results[lost].usable_bytes) == (56, -1, -1)
    assert results[kept].error_code == 0
    if (
        cluster.engine == "sim"
    ):  # the model unmounts the volume; real Kafka's dir is filled instead (kafka_testbed/README.md)
        assert not os.path.ismount(lost) and lost not in [v["path"] for v in cli_cluster.cluster.info["volumes"]]

    ok(
        "add-scram-user",
        "--dir",
        directory,
        "--user",
        "alice",
        "--password",
        "alice-secret",
        "--mechanism",
        "SCRAM-SHA-256",
    )
    assert scram_mechanisms(cluster, "alice") == ["SCRAM-SHA-256"]


def scram_mechanisms(cluster, user):
    """The SCRAM mechanisms a user has credentials for: the model's metadata file, or Kafka's
    DescribeUserScramCredentials."""
    if cluster.engine == "sim":
        return list(cluster.state.read()["scram"][user])
    admin = KafkaAdminClient(**kafka_python_config(cluster))
    try:
        described = admin.describe_user_scram_credentials([user])[user]
    finally:
        admin.close()
    return [info["mechanism"].name.replace("_", "-") for info in described["credential_infos"]]


def test_down_stops_every_process_and_unmounts(cli_cluster):
    directory = cli_cluster.directory
    pids = [row["pid"] for row in status(directory).values()]
    mounted = [v["path"] for v in cli_cluster.cluster.info["volumes"]]
    ok("down", "--dir", directory)
    assert not any(process_alive(pid) for pid in pids)
    assert not any(os.path.ismount(path) for path in mounted)
    assert cli_cluster.cluster.info["volumes"] == []
    assert all(not row["running"] and not row["in_cluster"] for row in status(directory).values())


@pytest.mark.parametrize("problem", ["bad-value", "port-taken"])
def test_up_with_a_refused_config_fails_and_leaves_no_process(kafka_cluster_root, problem):
    directory = tempfile.mkdtemp(prefix="cli-bad-", dir=kafka_cluster_root)
    base = base_port_for(3)
    args = ["up", "--dir", directory, "--brokers", 3, "--base-port", base, "--timeout", 30]
    blocker = None
    if problem == "bad-value":
        args += ["--set", "broker.session.timeout.ms=soon"]
        reason = "Invalid value soon for configuration broker.session.timeout.ms: Not a number of type INT"
    else:
        blocker = socket.socket()
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        blocker.bind(("127.0.0.1", base + 1))
        blocker.listen(1)
        reason = f"Socket server failed to bind to 127.0.0.1:{base + 1}: Address already in use"
    try:
        result = cli(*args)
    finally:
        if blocker is not None:
            blocker.close()
    try:
        assert result.returncode == 1
        # The model's broker refuses the value at start; Kafka's storage tool already refuses it at format time.
        assert result.stderr.startswith(("error: broker ", "error: kafka-storage format failed"))
        assert reason in result.stderr
        info = Cluster(directory).info
        assert not any(process_alive(b["pid"]) for b in info["brokers"] if b.get("pid"))  # controller nodes included
    finally:
        if Cluster(directory).info:
            Cluster(directory).down()


def test_up_with_tls_and_scram_writes_client_credentials(kafka_cluster_root):
    directory = tempfile.mkdtemp(prefix="cli-tls-", dir=kafka_cluster_root)
    result = cli("up", "--dir", directory, "--brokers", 1, "--base-port", base_port_for(1), "--tls", "--scram")
    try:
        assert result.returncode == 0, result.stderr
        cluster = Cluster(directory)
        info = cluster.info
        assert info["security_protocol"] == "SASL_SSL"
        assert all(os.path.isfile(info["tls"][key]) for key in ("ca", "cert", "key"))
        assert info["sasl"]["mechanism"] == "SCRAM-SHA-512" and info["sasl"]["username"] and info["sasl"]["password"]
        assert metadata_brokers(cluster) == [1]
    finally:
        cli("down", "--dir", directory)
