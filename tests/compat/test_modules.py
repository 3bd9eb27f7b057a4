"""Every module of the collection works on each release: the target tests/compat/targets/compat_modules drives each
one against a cluster of the release (mutual TLS), and the modules that talk to Kafka once more over SCRAM-SHA-512."""

import os

from kafka_testbed.ansible_targets import run_target
from kafka_testbed.testing import running_as_root

TARGETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets")
TARGET = "compat_modules"


def _volumes():
    """Log dirs on 16 MiB tmpfs volumes of their own, which only root can mount; else on the host's disk."""
    return {"volume_size": "16M"} if running_as_root() else {}


def _run(cluster, tmp_path, **variables):
    result = run_target(TARGET, cluster, str(tmp_path), TARGETS, variables)
    assert result.returncode == 0, f"{result.stdout[-20000:]}\n{result.stderr[-5000:]}"


def test_every_module_works(kafka_release, release_cluster, tmp_path):
    cluster = release_cluster(3, tls=True, log_dirs_per_broker=2, **_volumes())
    assert cluster.info["security_protocol"] == "SSL"
    _run(cluster, tmp_path)


def test_scram_connection(kafka_release, release_cluster, tmp_path):
    cluster = release_cluster(3, scram=True)
    assert cluster.info["sasl"]["mechanism"] == "SCRAM-SHA-512"
    _run(cluster, tmp_path, compat_checks=["connection", "cluster", "quotas", "usage"])
