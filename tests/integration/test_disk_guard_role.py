"""The disk_guard role on a machine without systemd: a systemctl stand-in first on PATH records every call and runs the
rendered unit's ExecStart for start and restart (kafka_testbed.fake_systemctl), so what the role installs is what runs.
The guard runs as this machine's current user (switching users needs the real systemd: tests/hosts does that).
Proven: the role builds the guard's wheel, installs it into a virtual environment of its own (without Ansible) and the
guard it starts from there applies the declared quotas on the cluster and writes its metrics; a second run changes
nothing and restarts nothing; a configuration the guard refuses fails the play with the guard's message and leaves the
running service alone; no secret reaches Ansible's output, and a vault-encrypted one reaches the guard as its value;
check mode writes and restarts nothing; stopped and absent do what they say. Python writes bytecode as it does on any
host (the collection root holds some, the guard writes its own): the role's second run must still change nothing."""

import compileall
import grp
import json
import os
import pwd
import subprocess
import sys

import pytest
import yaml
from held_quotas import held_quotas

import headroom_guard
from kafka_testbed import fake_systemctl
from kafka_testbed.prometheus_text import sample
from kafka_testbed.traffic import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
# The control node's wheelhouse, kept across runs (kafka-python is fetched once).
WHEELHOUSE = os.path.join(ROOT, "build", "disk-guard-wheels")
SERVICE = "headroom-disk-guard"
SECRET = "guard-secret-never-shown"


@pytest.fixture(scope="module")
def machine(kafka_cluster_root, tmp_path_factory):
    """A test cluster and a directory tree standing in for the guard's host, with the systemctl stand-in."""
    from kafka_testbed.testing import ClusterFactory

    factory = ClusterFactory(kafka_cluster_root)
    cluster = factory(2)
    base = tmp_path_factory.mktemp("guard-host")
    fake_systemctl.install(str(base))
    try:
        yield cluster, base
    finally:
        fake_systemctl.stop_all(str(base))
        factory.close()


def role_vars(cluster, base, **extra):
    variables = {
        "disk_guard_config": {
            "bootstrap_servers": cluster.info["bootstrap_servers"].split(","),
            "min_available_ratio": 0.01,
            "default_producer_byte_rate": 3000,
            "quotas": [{"entity": {"user": "app"}, "producer_byte_rate": 6000}],
            "excluded_principals": ["User:ops"],
        },
        "disk_guard_interval": 1,
        "disk_guard_python": sys.executable,
        "disk_guard_install_dir": str(base / "opt"),
        "disk_guard_config_dir": str(base / "etc"),
        "disk_guard_state_dir": str(base / "var"),
        "disk_guard_unit_dir": str(base / "units"),
        "disk_guard_metrics_file": str(base / "guard.prom"),
        "disk_guard_wheelhouse": WHEELHOUSE,
        "disk_guard_user": pwd.getpwuid(os.getuid()).pw_name,
        "disk_guard_group": grp.getgrgid(os.getgid()).gr_name,
    }
    variables.update(extra)
    return variables


def apply_role(base, variables, name, *args, vars_files=()):
    vars_file = base / f"{name}.json"
    vars_file.write_text(json.dumps(variables), encoding="utf-8")
    playbook = base / f"{name}.yml"
    playbook.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "the disk guard",
                    "hosts": "localhost",
                    "gather_facts": False,
                    "vars_files": [*vars_files, str(vars_file)],
                    "roles": ["headroom.kafka.disk_guard"],
                }
            ]
        ),
        encoding="utf-8",
    )
    env = dict(
        os.environ,
        PATH=str(base / "bin") + os.pathsep + os.environ["PATH"],
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        HEADROOM_FAKE_SYSTEMD_DIR=str(base),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
    )
    env.pop("ANSIBLE_CONFIG", None)
    env.pop(
        "PYTHONDONTWRITEBYTECODE", None
    )  # the check and the guard write bytecode beside the copied code, as on a host
    return subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-v",
            "-e",
            "ansible_python_interpreter=" + sys.executable,
            *args,
            str(playbook),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def calls(base):
    return [line.split() for line in (base / "systemctl.log").read_text().splitlines()]


def service_pid(base):
    return json.loads((base / "systemd.json").read_text())[SERVICE]["pid"]


def test_the_role_installs_a_guard_that_applies_the_declared_quotas_and_a_second_run_changes_nothing(machine):
    cluster, base = machine
    # A checkout whose code something imported holds bytecode (its own, which differs from what the guard writes).
    for package in ("headroom_guard", os.path.join("plugins", "module_utils")):
        compileall.compile_dir(os.path.join(ROOT, package), quiet=1)
    first = apply_role(base, role_vars(cluster, base), "first")
    assert first.returncode == 0, first.stdout[-8000:]
    unit = (base / "units" / f"{SERVICE}.service").read_text()
    assert (
        f"ExecStart={base}/opt/venv/bin/headroom-guard --config {base}/etc/config.json --interval 1 "
        f"--state-file {base}/var/state.json --metrics-file {base}/guard.prom "
        f"--history-dir {base}/var/history --history-retention P7D\n" in unit
    )
    assert f"ReadWritePaths={base}/var\nReadWritePaths={base}/var/history\nReadWritePaths={base}\n" in unit, (
        "the state's, the history's and the metrics' directories"
    )
    assert oct((base / "etc" / "config.json").stat().st_mode & 0o777) == "0o600"
    wheels = sorted(os.listdir(base / "opt" / "wheels"))
    assert (
        len(wheels) == 3
        and wheels[0].startswith(f"headroom_guard-{headroom_guard.__version__}+")
        and wheels[1].startswith("kafka_python-3.")
        and wheels[2].startswith("prometheus_client-0.21.")
    )
    venv_python = str(base / "opt" / "venv" / "bin" / "python")
    for module in ("ansible", "yaml", "headroom_pipeline"):
        found = subprocess.run([venv_python, "-c", f"import {module}"], capture_output=True, check=False, cwd=base)
        assert found.returncode != 0, f"{module} is not importable in the guard's virtual environment"
    assert ["enable", SERVICE] in calls(base) and any(call[:1] in (["start"], ["restart"]) for call in calls(base))
    assert wait_until(
        lambda: (
            held_quotas(cluster.info["bootstrap_servers"])
            == {
                "user=app": {"producer_byte_rate": 6000},
                "user=<default>": {"producer_byte_rate": 3000},
                "user=ops": {"producer_byte_rate": 9223372036854775807},
            }
        ),
        60,
        what="the declared set",
    )
    assert wait_until(
        lambda: (
            (base / "guard.prom").exists()
            and sample((base / "guard.prom").read_text(), "headroom_guard_throttle_factor") == 1
        ),
        30,
        what="the metrics file",
    )
    pid, before = service_pid(base), len(calls(base))
    second = apply_role(base, role_vars(cluster, base), "second")
    assert second.returncode == 0, second.stdout[-8000:]
    assert "changed=0" in second.stdout, second.stdout[-4000:]
    assert not [call for call in calls(base)[before:] if call[0] in ("start", "restart", "stop")], "nothing restarted"
    assert service_pid(base) == pid


def test_check_mode_writes_and_restarts_nothing(machine):
    cluster, base = machine
    pid, before = service_pid(base), len(calls(base))
    config = (base / "etc" / "config.json").read_text()
    changed = role_vars(cluster, base, disk_guard_interval=2)
    changed["disk_guard_config"] = dict(
        changed["disk_guard_config"], default_producer_byte_rate=2000, sasl_password=SECRET
    )
    result = apply_role(base, changed, "check", "--check", "--diff")
    assert result.returncode == 0, result.stdout[-6000:]
    assert SECRET not in result.stdout + result.stderr
    assert "--interval 2" in result.stdout, "the diff shows the unit's change"
    assert "--interval 1 " in (base / "units" / f"{SERVICE}.service").read_text()
    assert (base / "etc" / "config.json").read_text() == config
    assert not [call for call in calls(base)[before:] if call[0] not in ("show", "is-enabled")]
    assert service_pid(base) == pid


def test_a_configuration_the_guard_refuses_fails_the_play_and_leaves_the_service_running(machine):
    cluster, base = machine
    pid, before = service_pid(base), len(calls(base))
    config = (base / "etc" / "config.json").read_text()
    bad = role_vars(cluster, base)
    bad["disk_guard_config"] = dict(
        bad["disk_guard_config"], min_available_ratio=1.5, sasl_username="guard", sasl_password=SECRET
    )
    result = apply_role(base, bad, "bad")
    assert result.returncode != 0
    assert (
        "min_available_ratio must be between 0.0 and 1.0 inclusive (got 1.5)" in result.stdout
        or "applies to security_protocol SASL_PLAINTEXT or SASL_SSL only" in result.stdout
    ), result.stdout[-6000:]
    assert SECRET not in result.stdout + result.stderr
    assert (base / "etc" / "config.json").read_text() == config, "the file in use was not replaced"
    assert not [call for call in calls(base)[before:] if call[0] in ("start", "restart", "stop")]
    assert service_pid(base) == pid


def test_stopped_then_absent(machine):
    cluster, base = machine
    pid = service_pid(base)
    result = apply_role(base, role_vars(cluster, base, disk_guard_state="stopped"), "stopped")
    assert result.returncode == 0, result.stdout[-6000:]
    assert ["stop", SERVICE] in calls(base) and ["disable", SERVICE] in calls(base)
    assert wait_until(
        lambda: not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] == "Z",
        30,
        what="the guard stopped",
    )
    result = apply_role(base, role_vars(cluster, base, disk_guard_state="absent"), "absent")
    assert result.returncode == 0, result.stdout[-6000:]
    for path in ("units/headroom-disk-guard.service", "opt", "etc", "var", "guard.prom"):
        assert not (base / path).exists(), path


def test_a_vault_encrypted_secret_reaches_the_guard_as_its_value(machine):
    """ansible-core 2.19's to_nice_yaml writes a vaulted value as its !vault ciphertext, which the guard cannot read; a
    character outside the BMP must reach it whole (the guard checks the file as it reads it, with the standard
    library's JSON)."""
    cluster, base = machine
    secret = SECRET + "-\U0001f511"
    password_file = base / "vault-password"
    password_file.write_text("guard-vault-password\n", encoding="utf-8")
    encrypted = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible-vault"),
            "encrypt_string",
            "--vault-password-file",
            str(password_file),
            "--name",
            "guard_sasl_password",
            secret,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    (base / "vault-secret.yml").write_text(encrypted, encoding="utf-8")
    variables = role_vars(cluster, base, disk_guard_state="stopped")
    variables["disk_guard_config"] = dict(
        variables["disk_guard_config"],
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="guard",
        sasl_password="{{ guard_sasl_password }}",
    )
    result = apply_role(
        base,
        variables,
        "vault",
        "--vault-password-file",
        str(password_file),
        vars_files=[str(base / "vault-secret.yml")],
    )
    assert result.returncode == 0, result.stdout[-6000:]
    assert SECRET not in result.stdout + result.stderr
    assert json.loads((base / "etc" / "config.json").read_text(encoding="utf-8"))["sasl_password"] == secret
    result = apply_role(base, role_vars(cluster, base, disk_guard_state="absent"), "vault-absent")
    assert result.returncode == 0, result.stdout[-6000:]
