"""The broker_jar role on local hosts: every source, the checks that stop every host before any file changes, check
mode, and the removal of other versions. The jars are small zip files made here, served over HTTP from a directory
laid out as a Maven repository."""

import functools
import grp
import hashlib
import http.server
import os
import pwd
import threading
import zipfile

import pytest
from local_hosts import local_inventory, one_line, record_task, recorded, run_playbook

GROUP_ID = "io.example"
ARTIFACT = "example-plugin"
VERSION = "1.2.0"
JAR = f"{ARTIFACT}-{VERSION}.jar"


def make_jar(path, class_name="io.example.Plugin"):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        archive.writestr(class_name.replace(".", "/") + ".class", b"\xca\xfe\xba\xbe")
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


@pytest.fixture
def repository(tmp_path):
    """A Maven repository served over HTTP on 127.0.0.1: (base URL, sha256 of the jar)."""
    root = tmp_path / "repository"
    folder = root / GROUP_ID.replace(".", "/") / ARTIFACT / VERSION
    folder.mkdir(parents=True)
    checksum = make_jar(folder / JAR)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # the test's output is Ansible's
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", checksum
    server.shutdown()
    server.server_close()


def run_role(tmp_path, role_vars, hosts=("host-1", "host-2"), host_vars=None, args=()):
    """broker_jar on local hosts whose destination is tmp_path/<host>; the completed ansible-playbook."""
    owner = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    inventory = local_inventory(
        {host: {"jar_dir": str(tmp_path / host), **(host_vars or {}).get(host, {})} for host in hosts}
    )
    variables = {
        "broker_jar_group_id": GROUP_ID,
        "broker_jar_artifact_id": ARTIFACT,
        "broker_jar_version": VERSION,
        "broker_jar_dest_dir": "{{ jar_dir }}",
        "broker_jar_cache_dir": str(tmp_path / "cache"),
        "broker_jar_owner": owner,
        "broker_jar_group": group,
        **role_vars,
    }
    outcome = "{'changed': broker_jar_changed, 'removed': broker_jar_removed, 'path': broker_jar_installed_path}"
    play = [
        {
            "hosts": "all",
            "gather_facts": False,
            "tasks": [
                {"ansible.builtin.include_role": {"name": "headroom.kafka.broker_jar"}, "vars": variables},
                record_task(tmp_path, "result", outcome),
            ],
        }
    ]
    return run_playbook(tmp_path, inventory, play, args)


def result_of(tmp_path, host):
    return recorded(tmp_path, "result", host)


def listing(tmp_path, hosts=("host-1", "host-2")):
    """Every host's directory: file name -> content."""
    return {
        host: {name: (tmp_path / host / name).read_bytes() for name in sorted(os.listdir(tmp_path / host))}
        for host in hosts
        if (tmp_path / host).is_dir()
    }


def prepare_hosts(tmp_path, hosts=("host-1", "host-2")):
    for host in hosts:
        (tmp_path / host).mkdir()
        (tmp_path / host / "kafka-clients-4.3.1.jar").write_bytes(b"kafka's own")
    # An older version of the plugin on host-1, and its sources jar, which is not on a classpath.
    (tmp_path / "host-1" / f"{ARTIFACT}-1.1.0.jar").write_bytes(b"old")
    (tmp_path / "host-1" / f"{ARTIFACT}-1.1.0-sources.jar").write_bytes(b"old sources")


def test_file_source_installs_removes_older_versions_and_is_idempotent(tmp_path):
    prepare_hosts(tmp_path)
    jar = tmp_path / "offline" / JAR
    jar.parent.mkdir()
    checksum = make_jar(jar)
    role_vars = {"broker_jar_source": "file", "broker_jar_file": str(jar), "broker_jar_checksum": "sha256:" + checksum}

    before = listing(tmp_path)
    checked = run_role(tmp_path, role_vars, args=["--check", "--diff"])
    assert checked.returncode == 0, checked.stdout[-5000:]
    assert listing(tmp_path) == before, "check mode changes nothing"
    assert f"host-1: would remove {ARTIFACT}-1.1.0.jar from {tmp_path / 'host-1'}" in one_line(checked)
    assert result_of(tmp_path, "host-1")["changed"] and result_of(tmp_path, "host-2")["changed"]

    first = run_role(tmp_path, role_vars)
    assert first.returncode == 0, first.stdout[-5000:]
    assert (
        f"host-1: removed {ARTIFACT}-1.1.0.jar from {tmp_path / 'host-1'}, so that only {JAR} is on the classpath"
        in (one_line(first))
    )
    assert sorted(listing(tmp_path)["host-1"]) == [f"{ARTIFACT}-1.1.0-sources.jar", JAR, "kafka-clients-4.3.1.jar"]
    assert sorted(listing(tmp_path)["host-2"]) == [JAR, "kafka-clients-4.3.1.jar"]
    assert (tmp_path / "host-2" / JAR).read_bytes() == jar.read_bytes()
    assert oct((tmp_path / "host-2" / JAR).stat().st_mode & 0o777) == "0o644"
    assert result_of(tmp_path, "host-1") == {
        "changed": True,
        "removed": [str(tmp_path / "host-1" / f"{ARTIFACT}-1.1.0.jar")],
        "path": str(tmp_path / "host-1" / JAR),
    }

    second = run_role(tmp_path, role_vars)
    assert second.returncode == 0, second.stdout[-5000:]
    assert " changed=0 " in second.stdout and "changed=1" not in second.stdout, second.stdout[-3000:]
    assert not result_of(tmp_path, "host-1")["changed"]


def test_maven_and_url_sources_download_once_on_the_control_node(tmp_path, repository):
    prepare_hosts(tmp_path)
    base, checksum = repository
    result = run_role(tmp_path, {"kafka_maven_repository": base + "/", "broker_jar_checksum": checksum})
    assert result.returncode == 0, result.stdout[-5000:]
    cached = list((tmp_path / "cache").glob(f"{checksum}/*/{JAR}"))
    assert len(cached) == 1, "one download into the control node's cache, keyed by checksum and URL"
    assert (
        (tmp_path / "host-1" / JAR).read_bytes() == (tmp_path / "host-2" / JAR).read_bytes() == cached[0].read_bytes()
    )

    mirror = f"{base}/{GROUP_ID.replace('.', '/')}/{ARTIFACT}/{VERSION}/{JAR}"
    for host in ("host-1", "host-2"):
        (tmp_path / host / JAR).unlink()
    again = run_role(tmp_path, {"broker_jar_source": "url", "broker_jar_url": mirror, "broker_jar_checksum": checksum})
    assert again.returncode == 0, again.stdout[-5000:]
    assert (tmp_path / "host-2" / JAR).is_file()


@pytest.mark.parametrize(
    ("role_vars", "said"),
    [
        (
            {"broker_jar_checksum": "0" * 64},
            f"has sha256 {{checksum}}, not {'0' * 64} (broker_jar_checksum). No host was changed.",
        ),
        (
            {
                "broker_jar_source": "url",
                "broker_jar_url": "http://mirror-user:mirror-secret@127.0.0.1:9/x.jar",
                "broker_jar_checksum": "0" * 64,
            },
            "from http://********@127.0.0.1:9/x.jar (broker_jar_source=url) could not be fetched",
        ),
        (
            {"broker_jar_source": "url", "broker_jar_url": "{url}/missing.jar", "broker_jar_checksum": "0" * 64},
            "could not be fetched: Request failed",
        ),
        (
            {"broker_jar_source": "file", "broker_jar_file": "/nonexistent/plugin.jar"},
            "broker_jar_file=/nonexistent/plugin.jar is not a file on the control node. No host was changed.",
        ),
        (
            {"broker_jar_checksum": "abc"},
            "broker_jar_checksum must be the sha256 of example-plugin-1.2.0.jar, 64 hex digits (optionally prefixed "
            "'sha256:'), with broker_jar_source=maven (got 'abc')",
        ),
        (
            {"broker_jar_source": "file", "broker_jar_file": "relative/plugin.jar"},
            "broker_jar_file must be an absolute path on the control node with broker_jar_source=file "
            "(got 'relative/plugin.jar')",
        ),
        (
            {"broker_jar_version": "../1", "broker_jar_checksum": "0" * 64},
            "broker_jar_version must be a version such as 0.3.1",
        ),
    ],
    ids=[
        "wrong-checksum",
        "unreachable-url",
        "missing-url",
        "missing-file",
        "bad-checksum",
        "relative-file",
        "version",
    ],
)
def test_a_bad_source_fails_on_every_host_before_any_change(tmp_path, repository, role_vars, said):
    prepare_hosts(tmp_path)
    base, checksum = repository
    role_vars = {key: value.replace("{url}", base) for key, value in role_vars.items()}
    role_vars.setdefault("kafka_maven_repository", base)
    before = listing(tmp_path)
    result = run_role(tmp_path, role_vars)
    assert result.returncode != 0
    text = one_line(result)
    assert said.replace("{checksum}", checksum) in text, text[-3000:]
    assert "mirror-secret" not in text, "a password in a URL is never shown"
    assert text.count("fatal: [host-") >= 2, "every host stops"
    assert listing(tmp_path) == before


def test_one_hosts_failure_stops_every_host_before_any_change(tmp_path):
    prepare_hosts(tmp_path)
    jar = tmp_path / JAR
    checksum = make_jar(jar)
    before = listing(tmp_path)
    result = run_role(
        tmp_path,
        {"broker_jar_source": "file", "broker_jar_file": "{{ jar_file }}", "broker_jar_checksum": checksum},
        host_vars={"host-1": {"jar_file": str(jar)}, "host-2": {"jar_file": str(tmp_path / "elsewhere.jar")}},
    )
    assert result.returncode != 0
    assert f"host-2: broker_jar_file={tmp_path / 'elsewhere.jar'} is not a file" in one_line(result)
    assert listing(tmp_path) == before, "host-1's check passed, yet nothing changed there either"


def test_a_missing_destination_fails_unless_created(tmp_path):
    jar = tmp_path / JAR
    checksum = make_jar(jar)
    role_vars = {"broker_jar_source": "file", "broker_jar_file": str(jar), "broker_jar_checksum": checksum}
    result = run_role(tmp_path, role_vars, hosts=("host-1",))
    assert result.returncode != 0
    assert f"host-1: broker_jar_dest_dir={tmp_path / 'host-1'} does not exist on the host" in one_line(result)

    created = dict(role_vars, broker_jar_create_dest_dir=True)
    checked = run_role(tmp_path, created, hosts=("host-1",), args=["--check"])
    assert checked.returncode == 0, checked.stdout[-5000:]
    assert not (tmp_path / "host-1").exists(), "check mode creates nothing"
    applied = run_role(tmp_path, created, hosts=("host-1",))
    assert applied.returncode == 0, applied.stdout[-5000:]
    assert os.listdir(tmp_path / "host-1") == [JAR]


def test_source_none_installs_nothing(tmp_path):
    prepare_hosts(tmp_path)
    before = listing(tmp_path)
    result = run_role(tmp_path, {"broker_jar_source": "none"})
    assert result.returncode == 0, result.stdout[-5000:]
    assert listing(tmp_path) == before
    assert result_of(tmp_path, "host-1") == {"changed": False, "removed": [], "path": None}
