"""Run every integration target (tests/integration/targets/NAME/tasks/main.yml) against a fresh test cluster.

Every target has an ``aliases`` file (``needs/root``: skipped unless root, see _aliases). A target may carry
``cluster.yml`` with the cluster's options (brokers, tls, scram, volume_size, log_dirs_per_broker, catch_up_ms,
extra_properties), and ``also_on_model: true`` to run once more on the model. The play gets the cluster's
connection options as ``module_defaults`` for the collection's action group, and the variables ``kafka_cluster``,
``kafka_connection``, ``kafka_testbed``, ``kafka_testbed_dir`` and ``output_dir`` (``kafka_testbed.ansible_targets``,
which runs the compatibility suite's targets too).
"""

import os

import pytest
import yaml

from kafka_testbed.ansible_targets import COLLECTIONS, ROOT, run_target
from kafka_testbed.client_config import module_connection_options as connection_options

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(HERE, "targets")
# COLLECTIONS, ROOT and connection_options are imported from here by the other integration tests.
__all__ = ["COLLECTIONS", "ROOT", "TARGETS", "connection_options", "run_target"]


def _targets():
    return sorted(
        name for name in os.listdir(TARGETS) if os.path.isfile(os.path.join(TARGETS, name, "tasks", "main.yml"))
    )


def _settings(name):
    path = os.path.join(TARGETS, name, "cluster.yml")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle) or {}


def _aliases(name):
    """The target's aliases file, one alias per line (as ansible-test reads them): ``context/controller`` (the modules
    run on the control node), ``needs/root`` (a log dir is filled or taken offline on its own tmpfs volume)."""
    path = os.path.join(TARGETS, name, "aliases")
    with open(path, encoding="utf-8") as handle:
        return {line.split("#", 1)[0].strip() for line in handle} - {""}


def _runs():
    """(target, engine): every target on the session's engine; one whose cluster.yml says ``also_on_model: true`` once
    more on the model (what it proves does not depend on a broker's throttling)."""
    runs = []
    for name in _targets():
        runs.append(pytest.param(name, None, id=name))
        if _settings(name).get("also_on_model"):
            runs.append(pytest.param(name, "sim", id=f"{name}-sim"))
    return runs


@pytest.mark.parametrize("name, engine", _runs())
def test_target(name, engine, kafka_cluster_factory, tmp_path):
    options = {"brokers": 3, "volume_size": "16M"}
    options.update(_settings(name))
    options.pop("also_on_model", None)
    if engine:
        options["engine"] = engine
    if os.geteuid() != 0:
        if "needs/root" in _aliases(name):
            pytest.skip(f"target {name} fills or takes offline a log dir on its own tmpfs volume, which needs root")
        options.pop("volume_size", None)
    cluster = kafka_cluster_factory(**options)
    result = run_target(name, cluster, str(tmp_path), TARGETS)
    assert result.returncode == 0, f"target {name} failed:\n{result.stdout[-20000:]}\n{result.stderr[-5000:]}"


def test_every_target_has_its_aliases_and_no_task_file_over_300_lines():
    for name in _targets():
        assert "context/controller" in _aliases(name), f"{name}/aliases"
        tasks = os.path.join(TARGETS, name, "tasks")
        for file_name in os.listdir(tasks):
            with open(os.path.join(tasks, file_name), encoding="utf-8") as handle:
                assert len(handle.readlines()) <= 300, (
                    f"{name}/tasks/{file_name}: split it by behaviour into test_*.yml files"
                )
