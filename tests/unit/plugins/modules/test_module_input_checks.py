"""Each module refuses input that can never work, naming the option, the value and what is allowed, before it
contacts Kafka (the bootstrap server below is a closed port: any attempt to connect would fail differently)."""

import pytest
from module_runner import run_module

NOWHERE = ["127.0.0.1:1"]
SOFT = {"type": "min_free_bytes", "level": 100}
HARD = {"type": "min_free_bytes", "level": 10}
ROW = {"broker_id": 1, "log_dir": "/data", "total_bytes": 1000, "usable_bytes": 500}
PUBLISH = {"soft_limit": SOFT, "hard_limit": HARD, "log_dirs": [ROW]}
NAN = float("nan")
INF = float("inf")
RELIEF = {
    "relieve_at": {"type": "min_free_bytes", "level": 100},
    "relieve_to": {"type": "min_free_bytes", "level": 200},
}


def refused(module, args, *expected):
    run = run_module(module, dict({"bootstrap_servers": NOWHERE}, **args))
    assert run.failed, run.result
    for text in expected:
        assert text in run.msg, run.msg
    assert "Unable to bootstrap" not in run.msg and "cannot connect" not in run.msg
    assert run.elapsed < 1.0
    return run


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"wait_timeout": NAN}, "wait_timeout must be a number of seconds from 0 to 86400 (got nan)"),
        ({"wait_timeout": INF}, "wait_timeout must be a number of seconds from 0 to 86400 (got inf)"),
        ({"wait_timeout": 1e308}, "wait_timeout must be a number of seconds from 0 to 86400 (got 1e+308)"),
        ({"wait_timeout": -1}, "wait_timeout must be a number of seconds from 0 to 86400 (got -1.0)"),
        ({"wait_interval": 1e308}, "wait_interval must be a number of seconds from 0.05 to 3600"),
        ({"wait_interval": -1}, "wait_interval must be a number of seconds from 0.05 to 3600 (got -1.0)"),
        ({"wait_interval": NAN}, "(got nan)"),
        ({"wait_interval": INF}, "(got inf)"),
        ({"wait_interval": 0}, "wait_interval must be a number of seconds from 0.05 to 3600 (got 0.0)"),
        ({"wait_consecutive": 0}, "wait_consecutive must be a whole number from 1 to 1000 (got 0)"),
        ({"wait_consecutive": -3}, "wait_consecutive must be a whole number from 1 to 1000 (got -3)"),
        (
            {"expected_brokers": [1, -1]},
            "expected_brokers[1] must be a broker id, a whole number from 0 to 2147483647 (got -1)",
        ),
        ({"expected_brokers": [2**31]}, "expected_brokers[0] must be a broker id"),
        ({"expected_brokers": [1, 1]}, "expected_brokers lists 1 twice"),
        ({"stopping_broker": -1}, "stopping_broker must be a broker id, a whole number from 0 to 2147483647 (got -1)"),
        (
            {"rejoining_broker": 2**31, "rejoin_partitions": []},
            "rejoining_broker must be a broker id, a whole number from 0 to 2147483647",
        ),
        (
            {"rejoining_broker": 1, "rejoin_partitions": [{"topic": "t", "partition": -2}]},
            "rejoin_partitions[0].partition must be a whole number from 0 to 2147483647 (got -2)",
        ),
        ({"rejoining_broker": 1}, "parameters are required together: rejoining_broker, rejoin_partitions"),
        (
            {"stopping_broker": 1, "rejoining_broker": 1, "rejoin_partitions": []},
            "parameters are mutually exclusive: stopping_broker|rejoining_broker",
        ),
        ({"rejoining_broker": 1, "rejoin_partitions": [{"topic": "t"}]}, "missing required arguments: partition"),
    ],
)
def test_health_gate_options(args, expected):
    refused("cluster_health_info", args, expected)


@pytest.mark.parametrize(
    "module, extra",
    [
        ("cluster_health_info", {}),
        ("log_dirs_info", {}),
        ("client_quota_info", {}),
        ("client_quota", {"quotas": [{"entity": {"user": "a"}, "producer_byte_rate": 1024}]}),
        ("volume_limits", {"min_available_bytes": 1}),
        ("usage_snapshot", dict(PUBLISH, path="/tmp/x.jsonl")),
        ("usage_snapshot_info", {"path": "/tmp/x.jsonl"}),
        ("disk_guard", {"min_available_bytes": 1, "default_producer_byte_rate": 1024}),
        ("log_dir_relief", {"relieve_at": SOFT, "relieve_to": {"type": "min_free_bytes", "level": 200}}),
    ],
)
@pytest.mark.parametrize("timeout", [NAN, INF, -INF, 0, -5, 1e308, 0.01, 3601])
def test_request_timeout_in_every_module(module, extra, timeout):
    refused(
        module, dict(extra, request_timeout=timeout), "request_timeout must be a number of seconds from 0.1 to 3600"
    )


@pytest.mark.parametrize(
    "servers, expected",
    [
        ([], "bootstrap_servers must list at least one broker"),
        (["kafka-1"], "bootstrap_servers[0] must be host:port with a port from 1 to 65535 (got 'kafka-1')"),
        (["kafka-1:9092", "kafka-2:0"], "bootstrap_servers[1] must be host:port"),
        (["kafka-1:70000"], "bootstrap_servers[0]"),
        (["[::1]:99999"], "bootstrap_servers[0]"),
    ],
)
def test_bootstrap_servers_are_host_and_port(servers, expected):
    run = run_module("log_dirs_info", {"bootstrap_servers": servers})
    assert run.failed and expected in run.msg


def test_options_of_another_security_protocol_are_refused():
    refused(
        "log_dirs_info",
        {"sasl_mechanism": "PLAIN", "sasl_username": "u", "sasl_password": "secret-password"},
        "sasl_mechanism and sasl_username and sasl_password applies to security_protocol "
        "SASL_PLAINTEXT or SASL_SSL only",
    )
    refused(
        "log_dirs_info", {"ssl_cafile": "/etc/hostname"}, "ssl_cafile applies to security_protocol SSL or SASL_SSL only"
    )
    refused(
        "log_dirs_info",
        {"security_protocol": "SSL", "ssl_cafile": "/nonexistent/ca.pem"},
        "ssl_cafile must be a readable file (got '/nonexistent/ca.pem': no such file)",
    )


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            {"min_available_bytes": 1, "produce_byte_rate": INF},
            "produce_byte_rate must be a number of bytes per second greater than 0",
        ),
        ({"min_available_bytes": 1, "produce_byte_rate": NAN}, "(got nan)"),
        ({"min_available_bytes": 1, "produce_byte_rate": 0}, "produce_byte_rate must be"),
        (
            {"min_available_bytes": 2**63},
            "min_available_bytes must be a whole number of bytes from 0 to 9223372036854775807",
        ),
        ({"min_available_bytes": -1}, "min_available_bytes must be"),
        ({"min_available_ratio": NAN}, "min_available_ratio must be a number from 0 to 1 (got nan)"),
        (
            {"policy": "graded", "soft_limit": {"type": "min_free_bytes", "level": INF}, "hard_limit": HARD},
            "soft_limit.level must be",
        ),
        ({"min_available_bytes": 1, "expected_brokers": [-1]}, "expected_brokers[0] must be a broker id"),
        ({"min_available_bytes": 1, "log_dirs": [ROW, ROW]}, "log_dirs[1] is broker 1's log dir '/data' again"),
        (
            {"min_available_bytes": 1, "log_dirs": [dict(ROW, broker_id=2**31)]},
            "log_dirs[0].broker_id must be a broker id",
        ),
        (
            {"min_available_bytes": 1, "log_dirs": [dict(ROW, total_bytes=2**63)]},
            "log_dirs[0].total_bytes must be a whole number of bytes",
        ),
        (
            {
                "min_available_bytes": 1,
                "snapshots": [{"SnapshotAt": "9999-12-31T23:59:59-23:59", "Volumes": [], "BrokerId": 1}],
            },
            "snapshots[0]: SnapshotAt must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z "
            "(got '9999-12-31T23:59:59-23:59')",
        ),
        (
            {
                "min_available_bytes": 1,
                "snapshots": [{"SnapshotAt": "0001-01-01T00:00:00+23:59", "Volumes": [], "BrokerId": 1}],
            },
            "snapshots[0]: SnapshotAt must be between",
        ),
        (
            {
                "min_available_bytes": 1,
                "snapshots": [
                    {
                        "SnapshotAt": "2026-11-22T04:07:09Z",
                        "BrokerId": 1,
                        "Volumes": [{"VolumeName": "/d", "Capacity": 10, "Consumed": 50}],
                    }
                ],
            },
            "snapshots[0]: Volumes[0].Consumed 50 exceeds its Capacity 10",
        ),
        (
            {
                "min_available_bytes": 1,
                "snapshots": [
                    {
                        "SnapshotAt": "2026-11-22T04:07:09Z",
                        "BrokerId": 1,
                        "Volumes": [{"VolumeName": "/d", "Capacity": 10, "Consumed": 5}] * 2,
                    }
                ],
            },
            "snapshots[0]: Volumes[1].VolumeName '/d' appears twice",
        ),
    ],
)
def test_volume_limits_numbers_and_volumes(args, expected):
    refused("volume_limits", args, expected)


def test_usable_above_total_is_skipped_with_its_reason_not_judged():
    run = run_module(
        "volume_limits",
        {
            "bootstrap_servers": NOWHERE,
            "min_available_ratio": 0.1,
            "log_dirs": [dict(ROW, usable_bytes=5000), dict(ROW, log_dir="/other")],
        },
    )
    assert not run.failed and "skipped" not in run.result
    assert [(v["log_dir"], v["reason"]) for v in run.result["skipped_volumes"]] == [
        ("/data", "usable bytes exceed total bytes")
    ]
    assert run.result["least_headroom"]["log_dir"] == "/other" and run.result["violations"] == []


def test_an_offline_log_dir_is_data_not_a_skipped_task():
    run = run_module(
        "volume_limits",
        {
            "bootstrap_servers": NOWHERE,
            "min_available_bytes": 1,
            "log_dirs": [dict(ROW, total_bytes=None, usable_bytes=None, error="KAFKA_STORAGE_ERROR")],
        },
    )
    assert not run.failed and "skipped" not in run.result
    assert run.result["skipped_volumes"][0]["reason"] == "log dir error KAFKA_STORAGE_ERROR"


@pytest.mark.parametrize(
    "args, expected",
    [
        (dict(PUBLISH, path=""), "path must name a file (got '')"),
        (dict(PUBLISH, path="   "), "path must name a file"),
        (dict(PUBLISH, topic=""), "topic must be a topic name Kafka accepts"),
        (dict(PUBLISH, topic="usage snapshots"), "(got 'usage snapshots')"),
        (dict(PUBLISH, topic="t" * 250), "1 to 249 characters"),
        (dict(PUBLISH, topic=".."), "Kafka refuses . and .. as topic names"),
        (
            dict(PUBLISH, topic="usage", replication_factor=0),
            "replication_factor must be -1 (the brokers' default) or a whole number from 1 to 32767 (got 0)",
        ),
        (dict(PUBLISH, topic="usage", replication_factor=-2), "replication_factor must be -1"),
        (dict(PUBLISH, topic="usage", replication_factor=40000), "replication_factor must be -1"),
        (dict(PUBLISH, path="/tmp/x.jsonl", replication_factor=1), "replication_factor applies to topic"),
        (dict(PUBLISH, path="/"), "path must be a file, not a directory (got '/')"),
        (
            dict(PUBLISH, path="/nonexistent-dir/usage.jsonl"),
            "path is inside a directory that does not exist ('/nonexistent-dir')",
        ),
        (dict(PUBLISH, path="/tmp/x.jsonl", expected_brokers=[1]), "expected_brokers belong(s) to state read"),
        (dict(PUBLISH, path="/tmp/x.jsonl", max_age="PT5M"), "max_age belong(s) to state read"),
        (dict(PUBLISH, path="/tmp/x.jsonl", snapshot_at="9999-12-31T23:59:59-23:59"), "snapshot_at must be between"),
        (dict(PUBLISH, path="/tmp/x.jsonl", snapshot_at="1969-12-31T23:59:59Z"), "snapshot_at must be between"),
        (
            dict(PUBLISH, path="/tmp/x.jsonl", snapshot_at="2026-11-22T04:07:09+24:00"),
            "snapshot_at has a time zone offset of 24 hours or more",
        ),
        (
            {"soft_limit": SOFT, "hard_limit": HARD, "path": "/tmp/x.jsonl", "cluster_id": "c1"},
            "cluster_id go(es) with log_dirs",
        ),
        (
            {"state": "read", "path": "/tmp/x.jsonl", "replication_factor": 1},
            "replication_factor belong(s) to state publish",
        ),
    ],
)
def test_usage_snapshot_settings_that_can_never_work(args, expected):
    refused("usage_snapshot", args, expected)


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"path": "/tmp/x.jsonl", "expected_brokers": [-4]}, "expected_brokers[0] must be a broker id"),
        ({"path": "/"}, "path must be a file, not a directory"),
        ({"topic": ""}, "topic must be a topic name"),
        ({"topic": "usage", "max_age": "P1M"}, "years, months and weeks are periods"),
    ],
)
def test_usage_snapshot_info_settings_that_can_never_work(args, expected):
    refused("usage_snapshot_info", args, expected)


GUARD = {"min_available_ratio": 0.1, "default_producer_byte_rate": 1024}


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            {"default_producer_byte_rate": None},
            "default_producer_byte_rate is required (or a quotas entry for user <default>",
        ),
        (
            {"default_producer_byte_rate": 0.5},
            "default_producer_byte_rate must be a whole number of bytes per second from 1",
        ),
        ({"min_available_ratio": 1.5}, "min_available_ratio must be between 0.0 and 1.0 inclusive (got 1.5)"),
        ({"min_available_bytes": 5}, "parameters are mutually exclusive: min_available_bytes|min_available_ratio"),
        ({"soft_limit": SOFT, "hard_limit": HARD}, "soft_limit and hard_limit belong to policy graded"),
        (
            {"policy": "graded", "min_available_ratio": None, "soft_limit": HARD, "hard_limit": SOFT},
            "soft_limit.level must be greater than hard_limit.level for min_free_bytes",
        ),
        ({"throttle_factor_fallback": 2}, "throttle_factor_fallback must be a number from 0 to 1 (got 2.0)"),
        (
            {"throttle_factor_validity": "5 minutes"},
            "throttle_factor_validity must be an ISO 8601 duration such as PT5M",
        ),
        (
            {"excluded_principals": ["admin"]},
            "excluded_principals[0] must be a principal User:<name>, such as User:admin (got 'admin')",
        ),
        (
            {"quotas": [{"entity": {"user": "a"}, "producer_byte_rate": 0}]},
            "quotas[0].producer_byte_rate must be greater than 0",
        ),
        (
            {"quotas": [{"entity": {"user": "a"}, "state": "absent"}]},
            "quotas[0].state: the guard holds the whole quota set",
        ),
        ({"log_dirs": [dict(ROW, usable_bytes="x")]}, "log_dirs[0]"),
        ({"max_age": "PT5M"}, "max_age applies to snapshots only"),
        (
            {"state_file": "/nonexistent-dir/guard.json"},
            "state_file: the directory of '/nonexistent-dir/guard.json' does not exist",
        ),
    ],
)
def test_disk_guard_refuses_a_declaration_it_cannot_enforce_before_any_request(args, expected):
    refused("disk_guard", dict(GUARD, **args), expected)


def test_volume_limits_given_log_dirs_needs_no_connection_options():
    run = run_module("volume_limits", {"log_dirs": [ROW], "min_available_bytes": 600})
    assert not run.failed, run.msg
    assert run.result["throttle_factor"] == 0.0 and run.result["source"] == "log_dirs"


def test_usage_snapshot_publishing_given_log_dirs_to_a_file_needs_no_connection_options(tmp_path):
    run = run_module("usage_snapshot", dict(PUBLISH, path=str(tmp_path / "snapshots.jsonl")))
    assert not run.failed, run.msg


@pytest.mark.parametrize(
    "module, args, why",
    [
        ("log_dirs_info", {}, "to read every log dir"),
        (
            "volume_limits",
            {"min_available_bytes": 1},
            "to read every log dir (give log_dirs to judge volumes without a cluster)",
        ),
        ("client_quota", {"quotas": []}, "to read and alter its client quotas"),
        ("cluster_health_info", {}, "to read the brokers, partitions and controller"),
        ("disk_guard", GUARD, "to read every log dir and to read and set its client quotas"),
        ("usage_snapshot_info", {"path": "/tmp/none.jsonl"}, "to read its active brokers"),
        ("log_dir_relief", RELIEF, "to read its log dirs and move replicas"),
    ],
)
def test_a_task_that_talks_to_kafka_without_bootstrap_servers_says_which_option_and_why(module, args, why):
    run = run_module(module, args)
    assert run.failed and run.msg.startswith(f"bootstrap_servers is required: this task talks to Kafka {why}"), run.msg


MOVE = {
    "topic": "t",
    "partition": 0,
    "from_broker": 1,
    "from_log_dir": "/a",
    "to_broker": 2,
    "to_log_dir": "/a",
    "bytes": 1,
    "kind": "broker",
}


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"relieve_to": RELIEF["relieve_at"]}, "relieve_to.level must be greater than relieve_at.level"),
        (
            {"relieve_to": {"type": "min_free_percentage", "level": 50}},
            "relieve_at.type and relieve_to.type must be the same (got min_free_bytes and min_free_percentage)",
        ),
        ({"relieve_at": {"type": "consumed_space", "level": 1}}, "value of type must be one of: min_free_bytes"),
        ({"relieve_at": {"type": "min_free_percentage", "level": 150}}, "relieve_at.level"),
        ({"limit": {"type": "min_free_bytes", "level": -1}}, "limit.level must be a number from 0 to"),
        ({"max_bytes": 0}, "max_bytes must be a whole number of bytes from 1 to"),
        ({"max_partitions": -1}, "max_partitions must be a whole number from 1 to 2147483647 (got -1)"),
        ({"throttle_rate": 0}, "throttle_rate must be a whole number of bytes per second from 1 to"),
        ({"timeout": 0}, "timeout must be a number of seconds greater than 0 up to 86400 (got 0.0)"),
        ({"poll_interval": NAN}, "poll_interval must be a number of seconds from 0.1 to 3600 (got nan)"),
        ({"pending": {"moves": "t-0"}}, "pending must be an earlier run's pending result"),
        ({"pending": {"moves": [dict(MOVE, kind="disk")]}}, "pending.moves[0].kind must be log_dir or broker"),
        ({"pending": {"moves": [{"topic": "t"}]}}, "pending.moves[0] lacks partition, from_broker"),
    ],
)
def test_log_dir_relief_refuses_bad_thresholds_bounds_and_pending_before_any_request(args, expected):
    refused("log_dir_relief", dict(RELIEF, **args), expected)
