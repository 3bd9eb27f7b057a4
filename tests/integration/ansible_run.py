"""Run one of the collection's modules as a task of a one-play playbook, as a user's play would, and return its
result."""

import json
import os
import subprocess
import sys

import yaml
from test_integration_targets import COLLECTIONS, ROOT


def run_module(module, args, workdir):
    """``headroom.kafka.<module>`` with ``args`` on localhost; the registered result (a failed task raises)."""
    playbook = os.path.join(workdir, f"{module}.yml")
    result_file = os.path.join(workdir, f"{module}.json")
    with open(playbook, "w", encoding="utf-8") as handle:
        yaml.safe_dump(
            [
                {
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [
                        {f"headroom.kafka.{module}": args, "register": "result"},
                        {"ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": result_file}},
                    ],
                }
            ],
            handle,
        )
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    command = [
        os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        playbook,
    ]
    completed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, f"{module} failed:\n{completed.stdout[-5000:]}"
    with open(result_file, encoding="utf-8") as handle:
        return json.load(handle)
