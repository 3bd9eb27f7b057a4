"""``python -m headroom_guard`` as a service runs it: configuration refused before any request, one decision with
--once, the loop with its metrics over HTTP and in a textfile, a graceful stop on SIGTERM, and its state across a
restart. On real Kafka and on the model (nothing here measures a throttled rate)."""

import json
import os
import re
import signal
import subprocess
import time
import urllib.request

import pytest
import yaml
from guard_processes import start_guard
from held_quotas import held_quotas

from kafka_testbed.prometheus_text import sample, samples
from kafka_testbed.testing import ClusterFactory
from kafka_testbed.traffic import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DECLARED = [{"entity": {"user": "alice"}, "producer_byte_rate": 4000, "consumer_byte_rate": 9000}]
DEFAULT_RATE = 2000
DECISION = re.compile(
    r"^headroom_guard: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ "
    r"factor (\S+) (OPEN|THROTTLE|PAUSE) \((strimzi|graded), (.*)\): (.*)$"
)


@pytest.fixture(scope="module", params=["kafka", "sim"])
def cluster(request, kafka_cluster_root):
    factory = ClusterFactory(kafka_cluster_root, engine=request.param)
    try:
        yield factory(2)
    finally:
        factory.close()


def write_config(path, cluster, **options):
    config = {
        "bootstrap_servers": cluster.info["bootstrap_servers"].split(","),
        "min_available_ratio": 0.01,
        "default_producer_byte_rate": DEFAULT_RATE,
        "quotas": DECLARED,
        "excluded_principals": ["User:ops"],
    }
    config.update(options)
    config = {key: value for key, value in config.items() if value is not None}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


def guard(*args, **popen):
    return start_guard(*args, **{"stdout": subprocess.PIPE, "start_new_session": False, **popen})


def test_a_configuration_it_cannot_run_with_is_refused_naming_the_field_before_any_request(tmp_path):
    path = tmp_path / "guard.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "bootstrap_servers": ["127.0.0.1:1"],
                "min_available_ratio": 1.5,
                "default_producer_byte_rate": 10,
                "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "PLAIN",
                "sasl_username": "u",
                "sasl_password": "hunter2-secret",
            }
        ),
        encoding="utf-8",
    )
    started = time.monotonic()
    process = guard("--config", str(path), "--once")
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert "min_available_ratio must be between 0.0 and 1.0 inclusive (got 1.5)" in err
    assert "hunter2-secret" not in err
    assert time.monotonic() - started < 15, "refused before any connection attempt"
    path.write_text(
        yaml.safe_dump(
            {
                "bootstrap_servers": ["127.0.0.1:1"],
                "min_available_ratio": 0.1,
                "default_producer_byte_rate": 10,
                "sasl_password": "hunter2-secret",
            }
        ),
        encoding="utf-8",
    )
    process = guard("--config", str(path), "--check-config")
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 2 and "parameters are required together: sasl_username, sasl_password" in err
    assert "hunter2-secret" not in err
    for text, message in (
        ("[1, 2]", "must hold a mapping of the disk_guard module's options (got list)"),
        ("a: [", "is not YAML"),
    ):
        path.write_text(text, encoding="utf-8")
        process = guard("--config", str(path), "--check-config")
        _out, err = process.communicate(timeout=60)
        assert process.returncode == 2 and err.startswith("headroom_guard: --config: ") and message in err, err


def test_once_applies_the_declared_set_and_says_so_in_one_line(cluster, tmp_path):
    metrics = tmp_path / "guard.prom"
    process = guard("--config", write_config(tmp_path / "guard.yml", cluster), "--once", "--metrics-file", str(metrics))
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    (line,) = [line for line in err.splitlines() if DECISION.match(line)]
    factor, state, policy, reason, changed = DECISION.match(line).groups()
    assert (factor, state, policy, reason) == ("1", "OPEN", "strimzi", "observed")
    assert held_quotas(cluster.info["bootstrap_servers"]) == {
        "user=alice": {"producer_byte_rate": 4000, "consumer_byte_rate": 9000},
        "user=<default>": {"producer_byte_rate": DEFAULT_RATE},
        "user=ops": {"producer_byte_rate": 9223372036854775807},
    }
    text = metrics.read_text(encoding="utf-8")
    assert (
        sample(text, "headroom_guard_throttle_factor") == 1 and sample(text, "headroom_guard_state", state="OPEN") == 1
    )
    assert sample(text, "headroom_guard_active_brokers") == len(cluster.broker_nodes)
    available = [dict(labels) for name, labels in samples(text) if name == "headroom_guard_volume_available_bytes"]
    assert len(available) >= 2 and all(set(labels) == {"broker_id", "log_dir"} for labels in available)
    process = guard("--config", write_config(tmp_path / "guard.yml", cluster), "--once")
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 0 and re.search(r"quotas unchanged in \d+\.\d{3} s$", err.rstrip()), err


def test_the_loop_decides_every_interval_serves_metrics_and_stops_gracefully_on_sigterm(cluster, tmp_path):
    state = tmp_path / "state.json"
    config = write_config(tmp_path / "guard.yml", cluster, min_available_bytes=1 << 62, min_available_ratio=None)
    process = guard(
        "--config", config, "--interval", "1", "--metrics-port", "0", "--state-file", str(state), start_new_session=True
    )
    try:
        first = process.stderr.readline()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/metrics", first).group(1))

        def after_two_decisions():
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
                text = answer.read().decode()
            return text if sample(text, "headroom_guard_decisions_total", outcome="unchanged") == 1 else None

        page = wait_until(after_two_decisions, 60, what="two decisions on the metrics page")
        assert (
            sample(page, "headroom_guard_throttle_factor") == 0 and sample(page, "headroom_guard_limit_violated") == 1
        )
        assert sample(page, "headroom_guard_decisions_total", outcome="applied") == 1
        assert held_quotas(cluster.info["bootstrap_servers"])["user=<default>"] == {"producer_byte_rate": 1}
        assert json.loads(state.read_text(encoding="utf-8"))["observed_at"] > 0
    finally:
        process.send_signal(signal.SIGTERM)
        _out, rest = process.communicate(timeout=60)
    assert process.returncode == 0
    assert rest.rstrip().endswith("headroom_guard: stopped")
    assert len([line for line in rest.splitlines() if DECISION.match(line)]) >= 1


def test_a_cluster_it_cannot_reach_fails_once_and_leaves_the_quotas_alone(tmp_path):
    path = tmp_path / "guard.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "bootstrap_servers": ["127.0.0.1:1"],
                "min_available_ratio": 0.1,
                "default_producer_byte_rate": 10,
                "request_timeout": 2,
            }
        ),
        encoding="utf-8",
    )
    process = guard("--config", str(path), "--once")
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 1
    assert "decision failed, quotas left as they are: cannot connect to bootstrap servers 127.0.0.1:1" in err
