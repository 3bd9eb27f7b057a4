"""Run every integration target (tests/integration/targets/NAME/tasks/main.yml) against a fresh test cluster.

Every target has an ``aliases`` file (``needs/root``: skipped unless root, see _aliases). A target may carry
``cluster.yml`` with the cluster's options (brokers, tls, scram, volume_size, log_dirs_per_broker, catch_up_ms,
extra_properties), and ``also_on_model: true`` to run once more on the model. The play gets the cluster's
connection options as ``module_defaults`` for the collection's action group, and these variables:

* ``kafka_cluster``: the cluster's cluster.json (bootstrap servers, brokers, TLS files, SASL credentials).
* ``kafka_connection``: the connection options as the modules take them.
* ``kafka_testbed``: a command prefix that drives the test cluster (``{{ kafka_testbed }} stop --broker 2``).
* ``output_dir``: a scratch directory for the target.
"""

import json
import os
import shlex
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGETS = os.path.join(HERE, "targets")
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")


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


def connection_options(info):
    options = {
        "bootstrap_servers": info["bootstrap_servers"].split(","),
        "security_protocol": info["security_protocol"],
    }
    if "tls" in info:
        options.update(ssl_cafile=info["tls"]["ca"], ssl_certfile=info["tls"]["cert"], ssl_keyfile=info["tls"]["key"])
    if "sasl" in info:
        options.update(
            sasl_mechanism=info["sasl"]["mechanism"],
            sasl_username=info["sasl"]["username"],
            sasl_password=info["sasl"]["password"],
        )
    return options


def run_target(name, cluster, output_dir):
    driver = " ".join(shlex.quote(part) for part in (sys.executable, "-m", "kafka_testbed"))
    variables = {
        "kafka_cluster": cluster.info,
        "kafka_connection": connection_options(cluster.info),
        "kafka_testbed": driver,
        "kafka_testbed_dir": cluster.directory,
        "output_dir": output_dir,
        "ansible_python_interpreter": sys.executable,
    }
    vars_file = os.path.join(output_dir, "vars.json")
    with open(vars_file, "w", encoding="utf-8") as handle:
        json.dump(variables, handle)
    playbook = os.path.join(output_dir, "play.yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        yaml.safe_dump(
            [
                {
                    "name": f"integration target {name}",
                    "hosts": "localhost",
                    "gather_facts": False,
                    "vars_files": [vars_file],
                    "module_defaults": {"group/headroom.kafka.kafka": "{{ kafka_connection }}"},
                    "roles": [{"role": name}],
                }
            ],
            handle,
        )
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_ROLES_PATH=TARGETS,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    env.pop("ANSIBLE_CONFIG", None)
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    return subprocess.run(
        [playbook_bin, "-i", "localhost,", "-c", "local", playbook],
        env=env,
        cwd=output_dir,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


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
    result = run_target(name, cluster, str(tmp_path))
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
