"""The snapshot topic as the usage pipeline's kafka:// URL (what the job's own parser reads back, no password) and
its passwords as the environment variables the job reads."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.pipeline_command import (
    SECRET_ENVIRONMENT,
    PipelineCommandError,
    kafka_topic_url,
    secret_environment,
)
from headroom_pipeline.sources import parse_kafka_url


@pytest.mark.parametrize(
    ("servers", "expected"),
    [
        (["k1:9092", "k2:9092"], "kafka://k1:9092,k2:9092/usage"),
        ("k1:9092, k2:9092,", "kafka://k1:9092,k2:9092/usage"),
        (["k1:9092,k2:9092", " k3:9092 "], "kafka://k1:9092,k2:9092,k3:9092/usage"),
    ],
)
def test_bootstrap_servers_as_the_modules_take_them(servers, expected):
    assert kafka_topic_url({"bootstrap_servers": servers}, "usage") == expected


def test_every_option_but_the_passwords_is_a_parameter_the_job_reads_back(monkeypatch, tmp_path):
    monkeypatch.delenv("HEADROOM_KAFKA_SASL_PASSWORD", raising=False)
    monkeypatch.delenv("HEADROOM_KAFKA_SSL_PASSWORD", raising=False)
    cafile = tmp_path / "ca file&odd=name.pem"
    cafile.write_text("-----BEGIN CERTIFICATE-----\n")
    connection = {
        "bootstrap_servers": ["k1:9093"],
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(cafile),
        "ssl_check_hostname": False,
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "pipe line",
        "sasl_password": "s3cret&x=1",
        "ssl_password": "other-secret",
        "request_timeout": 12.5,
        "ssl_certfile": None,
    }
    url = kafka_topic_url(connection, "__headroom_volume_usage")
    assert "secret" not in url
    options, topic = parse_kafka_url(url)
    assert topic == "__headroom_volume_usage"
    assert options == {
        "bootstrap_servers": ["k1:9093"],
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(cafile),
        "ssl_check_hostname": False,
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "pipe line",
        "request_timeout": 12.5,
    }


@pytest.mark.parametrize(
    ("connection", "topic", "message"),
    [
        ({}, "usage", "bootstrap_servers is required"),
        ({"bootstrap_servers": " , "}, "usage", "bootstrap_servers is required"),
        ({"bootstrap_servers": "k:9092"}, "bad topic", "'bad topic' is not a Kafka topic name"),
        ({"bootstrap_servers": "k:9092"}, "..", "'..' is not a Kafka topic name"),
        ({"bootstrap_servers": "k:9092", "ssl_key": "x"}, "usage", "unknown connection option(s) ssl_key; allowed:"),
        ("k:9092", "usage", "must be a dict (got a str)"),
    ],
)
def test_what_makes_no_url_is_named(connection, topic, message):
    with pytest.raises(PipelineCommandError) as error:
        kafka_topic_url(connection, topic)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("passwords", "environment"),
    [
        (
            {"sasl_password": "s", "ssl_password": "t"},
            {"HEADROOM_KAFKA_SASL_PASSWORD": "s", "HEADROOM_KAFKA_SSL_PASSWORD": "t"},
        ),
        ({"sasl_password": "", "ssl_password": None}, {}),
        ({}, {}),
    ],
)
def test_passwords_reach_the_job_as_the_variables_it_reads(passwords, environment):
    assert secret_environment(passwords) == environment
    assert set(environment) <= set(SECRET_ENVIRONMENT.values())


def test_an_unknown_password_is_named():
    with pytest.raises(PipelineCommandError) as error:
        secret_environment({"sasl_pasword": "x"})
    assert str(error.value) == "unknown password(s) sasl_pasword; allowed: sasl_password, ssl_password"
