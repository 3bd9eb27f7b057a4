"""The guard's command line refuses a snapshot publisher it cannot keep out of the throttle before it connects, and
--check-config (what the disk_guard role runs before it replaces the service's configuration) refuses it too."""

import json

import pytest

from headroom_guard import cli

TOPIC = "__headroom_volume_usage"


@pytest.fixture
def certificate_config(tmp_path):
    for name in ("ca.pem", "guard.pem", "guard.key"):
        (tmp_path / name).write_text("not read by --check-config\n", encoding="utf-8")
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {
                "bootstrap_servers": ["127.0.0.1:1"],
                "security_protocol": "SSL",
                "ssl_cafile": str(tmp_path / "ca.pem"),
                "ssl_certfile": str(tmp_path / "guard.pem"),
                "ssl_keyfile": str(tmp_path / "guard.key"),
                "min_available_ratio": 0.1,
                "default_producer_byte_rate": 1024,
            }
        ),
        encoding="utf-8",
    )
    return str(path)


def test_a_certificate_publisher_without_its_principal_is_refused_naming_the_option(certificate_config, capsys):
    assert cli.main(["--config", certificate_config, "--check-config", "--snapshot-topic", TOPIC]) == 2
    said = capsys.readouterr().err
    assert "--snapshot-publisher-principal is required with snapshot topic '__headroom_volume_usage' over a " in said
    assert "is valid" not in said


def test_a_certificate_publisher_with_its_principal_is_valid(certificate_config, capsys):
    argv = ["--config", certificate_config, "--check-config", "--snapshot-topic", TOPIC]
    assert cli.main([*argv, "--snapshot-publisher-principal", "User:CN=guard"]) == 0
    assert "is valid" in capsys.readouterr().err


def test_a_guard_that_sets_no_quotas_needs_no_principal(certificate_config, capsys):
    argv = ["--config", certificate_config, "--check-config", "--snapshot-topic", TOPIC, "--observe-only"]
    assert cli.main(argv) == 0
    assert "is valid" in capsys.readouterr().err


def test_a_principal_without_a_snapshot_topic_is_a_usage_error(certificate_config, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["--config", certificate_config, "--check-config", "--snapshot-publisher-principal", "User:CN=g"])
    assert exited.value.code == 2
    assert "--snapshot-publisher-principal names the publisher of --snapshot-topic" in capsys.readouterr().err
