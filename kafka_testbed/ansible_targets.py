"""Run a target (a role directory ``<targets_dir>/<name>`` with ``tasks/main.yml``) in one play against a test
cluster, shared by the integration suite (tests/integration/targets) and the compatibility suite (tests/compat/targets).

The play gets the cluster's connection options as ``module_defaults`` for the collection's action group, and these
variables (plus any the caller gives):

* ``kafka_cluster``: the cluster's cluster.json (bootstrap servers, brokers, TLS files, SASL credentials).
* ``kafka_connection``: the connection options as the modules take them.
* ``kafka_testbed``: a command prefix that drives the test cluster (``{{ kafka_testbed }} stop --broker 2``).
* ``kafka_testbed_dir``: the cluster's directory.
* ``output_dir``: a scratch directory for the target.
"""

import json
import os
import shlex
import subprocess
import sys

import yaml

from kafka_testbed.client_config import module_connection_options

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The collection as ansible sees it installed (tests/conftest.py links it there).
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")


def run_target(name, cluster, output_dir, targets_dir, extra_vars=None):
    """ansible-playbook with the target ``name`` of ``targets_dir`` as the play's only role; the CompletedProcess."""
    driver = " ".join(shlex.quote(part) for part in (sys.executable, "-m", "kafka_testbed"))
    variables = {
        "kafka_cluster": cluster.info,
        "kafka_connection": module_connection_options(cluster.info),
        "kafka_testbed": driver,
        "kafka_testbed_dir": cluster.directory,
        "output_dir": output_dir,
        "ansible_python_interpreter": sys.executable,
    }
    variables.update(extra_vars or {})
    vars_file = os.path.join(output_dir, "vars.json")
    with open(vars_file, "w", encoding="utf-8") as handle:
        json.dump(variables, handle)
    playbook = os.path.join(output_dir, "play.yml")
    with open(playbook, "w", encoding="utf-8") as handle:
        yaml.safe_dump(
            [
                {
                    "name": f"target {name}",
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
        ANSIBLE_ROLES_PATH=targets_dir,
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
