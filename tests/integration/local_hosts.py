"""A role's play on local hosts: hosts that Ansible reaches with the local connection and this Python, each with its
own directories under the test's temporary directory. Writes the inventory and the play there, runs
``ansible-playbook`` with the collection as the tests install it, and reads back what each host recorded."""

import os
import subprocess
import sys

import yaml
from test_integration_targets import COLLECTIONS, ROOT


def local_inventory(hosts, group_vars=None, group=None):
    """An inventory of ``hosts`` (name -> host variables) reached locally, with ``group_vars``; in group ``group`` if
    one is named, else directly under ``all``."""
    members = {
        "hosts": hosts,
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **(group_vars or {})},
    }
    return {"all": {"children": {group: members}}} if group else {"all": members}


def record_task(tmp_path, name, expression):
    """A task that writes ``expression`` (Jinja, without braces) as JSON to tmp_path/<name>-<host>.json, in check mode
    too and never reported as a change; ``recorded`` reads it back."""
    return {
        "ansible.builtin.copy": {
            "content": "{{ " + expression + " | to_json }}",
            "dest": str(tmp_path / (name + "-{{ inventory_hostname }}.json")),
            "mode": "0644",
        },
        "check_mode": False,
        "changed_when": False,
    }


def recorded(tmp_path, name, host):
    """What ``record_task`` wrote for ``host``."""
    return yaml.safe_load((tmp_path / f"{name}-{host}.json").read_text())


def run_playbook(tmp_path, inventory, play, args=()):
    """Write tmp_path/inventory.yml and tmp_path/play.yml and run the play; the completed ansible-playbook."""
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_NOCOLOR="1",
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    command = [
        os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
        "-i",
        str(tmp_path / "inventory.yml"),
        str(tmp_path / "play.yml"),
        *args,
    ]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)


def run_role_marking_restarts(tmp_path, role, hosts, group_vars, restart_fact, args=()):
    """``role`` on group kafka of the local ``hosts`` (name -> host variables) with ``group_vars``; then each host's
    ``restart_fact`` (false where unset) is recorded as restart-<host>.json (``restart_marks``). The completed
    ansible-playbook."""
    play = [
        {
            "hosts": "kafka",
            "gather_facts": False,
            "roles": [{"role": role}],
            "post_tasks": [record_task(tmp_path, "restart", f"{restart_fact} | default(false)")],
        }
    ]
    return run_playbook(tmp_path, local_inventory(hosts, group_vars, group="kafka"), play, args)


def restart_marks(tmp_path, hosts):
    """Host -> the restart mark ``run_role_marking_restarts`` recorded for it."""
    return {host: recorded(tmp_path, "restart", host) for host in hosts}


def host_files(tmp_path, hosts):
    """Every file under each host's directory tmp_path/<host>: path relative to tmp_path -> content."""
    return {
        str(path.relative_to(tmp_path)): path.read_bytes()
        for host in hosts
        for path in sorted((tmp_path / host).rglob("*"))
        if path.is_file()
    }


def one_line(result):
    """ansible-playbook's output and errors with every run of white space one blank, to find a message in."""
    return " ".join((result.stdout + result.stderr).split())
