"""A systemctl stand-in for machines without systemd (tests and molecule scenarios):
``python -m kafka_testbed.fake_systemctl``.

Units are read from ``$HEADROOM_FAKE_SYSTEMD_DIR/units``; the state of each service (enabled, the pid it runs) is kept
in ``$HEADROOM_FAKE_SYSTEMD_DIR/systemd.json``; every call is logged to ``systemctl.log`` there. ``start`` and
``restart`` run the unit's ExecStart (with its WorkingDirectory and one Environment line) as a background process, its
output in ``<unit>.log``; ``stop`` sends SIGTERM and waits for it. Answers what ansible.builtin.systemd_service asks:
daemon-reload, show, is-enabled, enable, disable, start, stop, restart.
"""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

DIRECTORY_VARIABLE = "HEADROOM_FAKE_SYSTEMD_DIR"


def alive(pid):
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _unit_fields(path):
    fields = {}
    with open(path, encoding="utf-8") as unit:
        for line in unit:
            key, sep, value = line.strip().partition("=")
            if sep and key in ("ExecStart", "WorkingDirectory", "Environment"):
                fields[key] = value
    return fields


def _stop(entry):
    os.kill(entry["pid"], signal.SIGTERM)
    deadline = time.monotonic() + 60
    while alive(entry["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    entry["pid"] = None


def _start(directory, name, entry):
    fields = _unit_fields(os.path.join(directory, "units", name + ".service"))
    env = dict(os.environ)
    if "Environment" in fields:
        key, _sep, value = fields["Environment"].partition("=")
        env[key] = value
    with open(os.path.join(directory, name + ".log"), "a", encoding="utf-8") as out:
        entry["pid"] = subprocess.Popen(
            shlex.split(fields["ExecStart"]),
            cwd=fields.get("WorkingDirectory"),
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,
        ).pid


def main(argv=None):
    directory = os.environ[DIRECTORY_VARIABLE]
    args = [arg.strip("'") for arg in (sys.argv[1:] if argv is None else argv) if arg != "-l"]
    with open(os.path.join(directory, "systemctl.log"), "a", encoding="utf-8") as log:
        log.write(" ".join(args) + "\n")
    if args == ["daemon-reload"]:
        return 0
    state_path = os.path.join(directory, "systemd.json")
    state = {}
    if os.path.exists(state_path):
        with open(state_path, encoding="utf-8") as handle:
            state = json.load(handle)
    command, name = args[0], args[1].removesuffix(".service")
    entry = state.setdefault(name, {"enabled": False, "pid": None})
    running = bool(entry["pid"]) and alive(entry["pid"])
    status = 0
    if command == "show":
        loaded = os.path.exists(os.path.join(directory, "units", name + ".service"))
        print(
            f"Id={name}.service\nLoadState={'loaded' if loaded else 'not-found'}\n"
            f"ActiveState={'active' if running else 'inactive'}\nSubState={'running' if running else 'dead'}"
        )
    elif command == "is-enabled":
        print("enabled" if entry["enabled"] else "disabled")
        status = 0 if entry["enabled"] else 1
    elif command in ("enable", "disable"):
        entry["enabled"] = command == "enable"
    elif command in ("start", "stop", "restart"):
        if running and command in ("stop", "restart"):
            _stop(entry)
        if command == "restart" or (command == "start" and not running):
            _start(directory, name, entry)
    else:
        print("unexpected systemctl call: " + " ".join(args), file=sys.stderr)
        return 1
    with open(state_path, "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    return status


def install(directory, python=sys.executable):
    """Write ``directory/bin/systemctl`` (put ``directory/bin`` first on PATH) and ``directory/units``; returns the bin
    dir."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.makedirs(os.path.join(directory, "units"), exist_ok=True)
    os.makedirs(os.path.join(directory, "bin"), exist_ok=True)
    path = os.path.join(directory, "bin", "systemctl")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            f"#!{python}\nimport sys\nsys.path.insert(0, {root!r})\n"
            "from kafka_testbed.fake_systemctl import main\nsys.exit(main())\n"
        )
    os.chmod(path, 0o755)
    return os.path.join(directory, "bin")


def stop_all(directory):
    """Stop every service the stand-in started (test teardown)."""
    state_path = os.path.join(directory, "systemd.json")
    if not os.path.exists(state_path):
        return
    with open(state_path, encoding="utf-8") as handle:
        for entry in json.load(handle).values():
            if entry.get("pid") and alive(entry["pid"]):
                _stop(entry)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "install":
        print(install(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
