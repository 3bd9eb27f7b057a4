"""Conformance: a broker configured with the Strimzi quota plugin refuses to start on a configuration the plugin
rejects.

Kafka instantiates ``client.quota.callback.class`` at startup and calls its ``configure()``; an exception there (or a
class that cannot be loaded) stops the broker with exit status 1, logging the reason. A valid configuration starts.
"""
# pylint: disable=missing-function-docstring

import os
import re
import subprocess
import sys
import tempfile

import pytest
from clients import RawClient
from kafka.protocol.metadata.api_versions import ApiVersionsRequest

from kafka_testbed.cluster import Cluster, ClusterError, process_alive
from kafka_testbed.testing import base_port_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALLBACK = "client.quota.callback.class"
STRIMZI = "io.strimzi.kafka.quotas.StaticQuotaCallback"
PREFIX = "client.quota.callback.static."
BOOTSTRAP = PREFIX + "kafka.admin.bootstrap.servers"
BYTES_LIMIT = PREFIX + "storage.per.volume.limit.min.available.bytes"
RATIO_LIMIT = PREFIX + "storage.per.volume.limit.min.available.ratio"
INTERVAL = PREFIX + "storage.check-interval"
CONFIG_EXCEPTION = "org.apache.kafka.common.config.ConfigException: "

VALID = {
    CALLBACK: STRIMZI,
    BOOTSTRAP: "127.0.0.1:9092",
    PREFIX + "produce": "1048576",
    PREFIX + "fetch": "2097152",
    INTERVAL: "30",
    BYTES_LIMIT: "1000000",
    PREFIX + "excluded.principal.name.list": "User:admin;User:CN=broker",
}

REFUSED = {
    "missing-admin-bootstrap": (
        {CALLBACK: STRIMZI, PREFIX + "produce": "1000"},
        CONFIG_EXCEPTION + f'Missing required configuration "{BOOTSTRAP}" which has no default value.',
    ),
    "both-limits-with-checks": (
        {**VALID, RATIO_LIMIT: "0.2"},
        "java.lang.IllegalStateException: Both limit types configured, only configure one of "
        f"[{BYTES_LIMIT},{RATIO_LIMIT}]",
    ),
    "ratio-above-one": (
        {CALLBACK: STRIMZI, BOOTSTRAP: "127.0.0.1:9092", RATIO_LIMIT: "1.5"},
        CONFIG_EXCEPTION + f"Invalid value 1.5 for configuration {RATIO_LIMIT}: Value must be no more than 1.0",
    ),
    "negative-fallback": (
        {CALLBACK: STRIMZI, BOOTSTRAP: "127.0.0.1:9092", PREFIX + "throttle.factor.fallback": "-0.1"},
        CONFIG_EXCEPTION
        + f"Invalid value -0.1 for configuration {PREFIX}throttle.factor.fallback: Value must be at least 0.0",
    ),
    "bad-validity-duration": (
        {CALLBACK: STRIMZI, BOOTSTRAP: "127.0.0.1:9092", PREFIX + "throttle.factor.validity.duration": "5m"},
        CONFIG_EXCEPTION
        + (
            f"Invalid value 5m for configuration {PREFIX}throttle.factor.validity.duration: "
            "Failed to parse iso8601 duration"
        ),
    ),
    "non-numeric-produce": (
        {CALLBACK: STRIMZI, BOOTSTRAP: "127.0.0.1:9092", PREFIX + "produce": "fast"},
        CONFIG_EXCEPTION + f"Invalid value fast for configuration {PREFIX}produce: Not a number of type DOUBLE",
    ),
    "unknown-callback-class": (
        {CALLBACK: "com.example.NoSuchCallback"},
        f"Invalid value com.example.NoSuchCallback for configuration {CALLBACK}: Class com.example.NoSuchCallback "
        "could not be found.",
    ),
}


def run_broker(properties, timeout=30):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, "-m", "kafka_testbed", "broker", "--config", properties],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
        check=False,
    )


def prepared(root, extra_properties):
    """A one-broker cluster with its files written but no process started."""
    cluster = Cluster(tempfile.mkdtemp(prefix="plugin-", dir=root))
    cluster.create(1, base_port=base_port_for(1), extra_properties=extra_properties)
    return cluster


@pytest.mark.model_only(
    "starts the model's broker process by itself; on real Kafka the cluster's up and the failure "
    "molecule scenario show the plugin's refusal"
)
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_broker_refuses_to_start(kafka_cluster_root, case):
    extra, reason = REFUSED[case]
    cluster = prepared(kafka_cluster_root, extra)
    (broker,) = cluster.broker_nodes
    result = run_broker(broker["properties"])
    assert result.returncode == 1
    assert f"Exiting Kafka due to fatal exception during startup: {reason}" in result.stderr
    assert "Kafka Server started" not in result.stderr
    assert not cluster.state.registrations(3000)  # it never joined


def test_cluster_up_reports_the_plugin_reason(kafka_cluster_factory):
    extra, reason = REFUSED["both-limits-with-checks"]
    with pytest.raises(ClusterError) as caught:
        kafka_cluster_factory(1, extra_properties=extra, timeout=20)
    # On real Kafka the controller-only node reads the plugin's settings too and refuses them the same way; whichever
    # process exits first is the one reported.
    assert re.match(r"(broker 1|controller 2) exited during startup:", str(caught.value)), str(caught.value)[:200]
    assert reason in str(caught.value)


def test_valid_plugin_config_starts(kafka_cluster_factory):
    cluster = kafka_cluster_factory(1, extra_properties=VALID)
    (broker,) = cluster.broker_nodes
    assert process_alive(broker["pid"])
    with RawClient.to_broker(cluster, 1) as raw:
        assert (
            raw.request(
                ApiVersionsRequest(client_software_name="conformance", client_software_version="1.0"), 3
            ).error_code
            == 0
        )


def test_edited_properties_refuse_then_start(kafka_cluster_factory):
    """Editing a running broker's server.properties takes effect at its next start, as with Kafka."""
    cluster = kafka_cluster_factory(1)
    (broker,) = cluster.broker_nodes
    with open(broker["properties"], encoding="utf-8") as handle:
        original = handle.read()
    cluster.stop(1)
    extra, reason = REFUSED["ratio-above-one"]
    with open(broker["properties"], "a", encoding="utf-8") as handle:
        handle.writelines(f"{key}={value}\n" for key, value in extra.items())
    with pytest.raises(ClusterError) as caught:
        cluster.start(1, timeout=20)
    assert reason in str(caught.value)
    with open(broker["properties"], "w", encoding="utf-8") as handle:
        handle.write(original + "".join(f"{key}={value}\n" for key, value in VALID.items()))
    cluster.start(1)
    assert process_alive(cluster.broker(1)["pid"])
