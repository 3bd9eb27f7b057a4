"""The usage_pipeline role applied in a play on localhost, as the role's tests run it."""

import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")  # linked by tests/conftest.py


def run_role(tmp_path, role_vars, *args, environment=None, timeout=300):
    """A play on localhost applying the role, then writing the summary fact to fact.json; the ansible-playbook result.
    ``environment``: ansible-playbook's (and so the job's) environment, default this process's."""
    fact = tmp_path / "fact.json"
    play = [
        {
            "name": "usage pipeline",
            "hosts": "localhost",
            "gather_facts": False,
            "vars": {"ansible_python_interpreter": sys.executable},
            "roles": [{"role": "headroom.kafka.usage_pipeline", "vars": role_vars}],
            "post_tasks": [
                {
                    "name": "Keep the fact",
                    "ansible.builtin.copy": {"content": "{{ usage_pipeline_summary | to_json }}", "dest": str(fact)},
                    "when": "usage_pipeline_summary is defined",
                    "changed_when": False,  # the play's changes are the role's
                }
            ],
        }
    ]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play))
    env = dict(
        os.environ if environment is None else environment,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
    )
    env.pop("ANSIBLE_CONFIG", None)
    command = [
        os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
        "-i",
        "localhost,",
        "-c",
        "local",
        str(playbook),
        *args,
    ]
    return subprocess.run(
        command, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=timeout, check=False
    )
