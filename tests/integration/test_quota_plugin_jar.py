"""The quota_plugin role puts the plugin's jar on each broker before it writes a property, and stops before any
broker's properties change when a broker could not load the plugin's class. Local hosts: each has a libs directory
(Kafka's server jar made here, named for a version) and a properties file in a temporary directory; the plugin's jar
is the real one the test cluster runs."""

import functools
import hashlib
import http.server
import os
import shutil
import threading
import zipfile

import pytest
from local_hosts import host_files, one_line, restart_marks, run_role_marking_restarts

from kafka_testbed.kafka_libs import ensure_libs

PLUGIN_CLASS = "io.strimzi.kafka.quotas.StaticQuotaCallback"
PINNED = "0.3.1"
PINNED_JAR = f"kafka-quotas-plugin-{PINNED}.jar"
SPEC = {"type": "strimzi", "producer_byte_rate": 1048576, "min_available_ratio_per_volume": 0.1}
CALLBACK_LINE = f"client.quota.callback.class={PLUGIN_CLASS}"
# broker-1 and broker-2 are brokers, controller-3 a controller-only node (the plugin must not run there).
NODES = {"broker-1": "broker", "broker-2": "broker", "controller-3": "controller"}


@pytest.fixture(scope="module")
def plugin_jar():
    return ensure_libs().plugin


def make_jar(path, *class_names):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for class_name in class_names:
            archive.writestr(class_name.replace(".", "/") + ".class", b"\xca\xfe\xba\xbe")


def make_hosts(tmp_path, kafka="4.3.1"):
    """Each node's libs directory (Kafka's server and clients jars) and properties file."""
    for host in NODES:
        libs = tmp_path / host / "libs"
        libs.mkdir(parents=True)
        make_jar(libs / f"kafka_2.13-{kafka}.jar", "kafka.Kafka")
        make_jar(libs / f"kafka-clients-{kafka}.jar", "org.apache.kafka.clients.Thing")
        (tmp_path / host / "server.properties").write_text(f"node.id={host[-1]}\nlog.dirs=/var/lib/kafka\n")


def snapshot(tmp_path):
    """Every node's files: relative path -> content."""
    return host_files(tmp_path, NODES)


def run_role(tmp_path, group_vars, host_vars=None, args=()):
    hosts = {
        host: {
            "kafka_process_roles": roles,
            "kafka_properties_file": str(tmp_path / host / "server.properties"),
            "kafka_libs_dir": str(tmp_path / host / "libs"),
            **(host_vars or {}).get(host, {}),
        }
        for host, roles in NODES.items()
    }
    settings = {
        "kafka_quotas": SPEC,
        "quota_plugin_admin": {"bootstrap_servers": "127.0.0.1:9092"},
        "quota_plugin_owner": os.getuid(),
        "quota_plugin_group": os.getgid(),
        "quota_plugin_jar_owner": os.getuid(),
        "quota_plugin_jar_group": os.getgid(),
        "broker_jar_cache_dir": str(tmp_path / "cache"),
        **group_vars,
    }
    return run_role_marking_restarts(
        tmp_path, "headroom.kafka.quota_plugin", hosts, settings, "quota_plugin_restart_needed", args
    )


def restart_needed(tmp_path):
    return restart_marks(tmp_path, NODES)


def test_file_source_installs_the_jar_before_the_properties_and_marks_the_restart(tmp_path, plugin_jar):
    make_hosts(tmp_path)
    (tmp_path / "broker-1" / "libs" / "kafka-quotas-plugin-0.3.0.jar").write_bytes(b"an older plugin")
    settings = {"quota_plugin_jar_source": "file", "quota_plugin_jar_file": plugin_jar}

    before = snapshot(tmp_path)
    checked = run_role(tmp_path, settings, args=["--check", "--diff"])
    assert checked.returncode == 0, checked.stdout[-8000:]
    assert snapshot(tmp_path) == before, "check mode changes nothing, and the jar it would install counts as present"
    assert "broker-1: would remove kafka-quotas-plugin-0.3.0.jar" in one_line(checked)

    first = run_role(tmp_path, settings)
    assert first.returncode == 0, first.stdout[-8000:]
    for broker in ("broker-1", "broker-2"):
        libs = tmp_path / broker / "libs"
        assert sorted(os.listdir(libs)) == ["kafka-clients-4.3.1.jar", PINNED_JAR, "kafka_2.13-4.3.1.jar"]
        assert (libs / PINNED_JAR).read_bytes() == open(plugin_jar, "rb").read()
        assert CALLBACK_LINE in (tmp_path / broker / "server.properties").read_text()
    assert "broker-1: removed kafka-quotas-plugin-0.3.0.jar" in one_line(first)
    assert PINNED_JAR not in os.listdir(tmp_path / "controller-3" / "libs"), "controller-only nodes are left alone"
    assert CALLBACK_LINE not in (tmp_path / "controller-3" / "server.properties").read_text()
    assert restart_needed(tmp_path) == {"broker-1": True, "broker-2": True, "controller-3": False}

    second = run_role(tmp_path, settings)
    assert second.returncode == 0, second.stdout[-8000:]
    assert "changed=1" not in second.stdout and "changed=2" not in second.stdout, second.stdout[-3000:]
    assert restart_needed(tmp_path) == {"broker-1": False, "broker-2": False, "controller-3": False}


def test_a_new_jar_alone_marks_the_restart(tmp_path, plugin_jar):
    """The properties already configure the plugin (the jar was put there by hand): replacing an older jar with the
    pinned one needs a restart to load it, although the properties do not change."""
    make_hosts(tmp_path)
    settings = {"quota_plugin_jar_source": "file", "quota_plugin_jar_file": plugin_jar}
    assert run_role(tmp_path, settings).returncode == 0
    os.remove(tmp_path / "broker-2" / "libs" / PINNED_JAR)
    shutil.copy(plugin_jar, tmp_path / "broker-2" / "libs" / "kafka-quotas-plugin-0.3.0.jar")
    again = run_role(tmp_path, settings)
    assert again.returncode == 0, again.stdout[-8000:]
    assert restart_needed(tmp_path) == {"broker-1": False, "broker-2": True, "controller-3": False}


def test_a_wrong_checksum_fails_before_any_file_changes_on_any_host(tmp_path, plugin_jar):
    make_hosts(tmp_path)
    before = snapshot(tmp_path)
    result = run_role(
        tmp_path,
        {"quota_plugin_jar_source": "file", "quota_plugin_jar_file": plugin_jar, "quota_plugin_jar_checksum": "1" * 64},
    )
    assert result.returncode != 0
    text = one_line(result)
    sha256 = hashlib.sha256(open(plugin_jar, "rb").read()).hexdigest()
    assert (
        f"broker-1: quota_plugin_jar_file={plugin_jar} has sha256 {sha256}, not {'1' * 64} (quota_plugin_jar_checksum)"
        in (text)
    )
    assert snapshot(tmp_path) == before


def test_a_file_that_is_not_the_pinned_release_is_refused(tmp_path):
    """With quota_plugin_jar_file and no checksum, the pinned release's checksum holds: a jar claimed as 0.3.1 must be
    0.3.1."""
    make_hosts(tmp_path)
    fake = tmp_path / "plugin.jar"
    make_jar(fake, PLUGIN_CLASS)
    before = snapshot(tmp_path)
    result = run_role(tmp_path, {"quota_plugin_jar_source": "file", "quota_plugin_jar_file": str(fake)})
    assert result.returncode != 0
    assert "has sha256" in one_line(result) and "(quota_plugin_jar_checksum)" in one_line(result)
    assert snapshot(tmp_path) == before


def test_source_none_with_the_jar_missing_fails_naming_host_path_and_class(tmp_path, plugin_jar):
    make_hosts(tmp_path)
    # broker-1's distribution ships the plugin, broker-2's does not: neither broker's properties may change.
    shutil.copy(plugin_jar, tmp_path / "broker-1" / "libs" / "strimzi-quotas.jar")
    before = snapshot(tmp_path)
    result = run_role(tmp_path, {"quota_plugin_jar_source": "none"})
    assert result.returncode != 0
    libs = tmp_path / "broker-2" / "libs"
    assert (
        f"broker-2: no jar in {libs} provides {PLUGIN_CLASS}, the class kafka_quotas of type strimzi sets as "
        "client.quota.callback.class: the broker would not start with it (ClassNotFoundException)"
    ) in one_line(result)
    assert snapshot(tmp_path) == before

    shutil.copy(plugin_jar, libs / "strimzi-quotas.jar")
    shipped = run_role(tmp_path, {"quota_plugin_jar_source": "none"})
    assert shipped.returncode == 0, shipped.stdout[-8000:]
    assert CALLBACK_LINE in (tmp_path / "broker-2" / "server.properties").read_text()
    assert sorted(os.listdir(libs)) == ["kafka-clients-4.3.1.jar", "kafka_2.13-4.3.1.jar", "strimzi-quotas.jar"]


def test_check_mode_with_the_jar_missing_and_source_none_fails_too(tmp_path):
    make_hosts(tmp_path)
    before = snapshot(tmp_path)
    result = run_role(tmp_path, {"quota_plugin_jar_source": "none"}, args=["--check"])
    assert result.returncode != 0
    assert f"no jar in {tmp_path / 'broker-1' / 'libs'} provides {PLUGIN_CLASS}" in one_line(result)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("kafka", "host_vars", "said"),
    [
        (
            None,
            {},
            "the Kafka version is unknown (kafka_version is not set and no kafka_2.13-VERSION.jar or "
            "kafka-server-VERSION.jar is in {libs}); pinned: 3.x, 4.x (0.3.1). Set kafka_version, or "
            "quota_plugin_version and quota_plugin_jar_checksum.",
        ),
        ("2.8.2", {}, "no quota plugin release is pinned for Kafka 2.8.2; pinned: 3.x, 4.x (0.3.1)."),
        ("7.6.0-ccs", {}, "no quota plugin release is pinned for Kafka 7.6.0-ccs"),
        # The host variable wins over the jar names.
        ("4.3.1", {"kafka_version": "2.8.0"}, "no quota plugin release is pinned for Kafka 2.8.0"),
    ],
    ids=["no-server-jar", "kafka-2", "confluent-numbering", "host-variable"],
)
def test_the_release_is_picked_for_the_kafka_line_or_the_play_stops(tmp_path, plugin_jar, kafka, host_vars, said):
    make_hosts(tmp_path, kafka or "4.3.1")
    if kafka is None:
        for host in NODES:
            os.remove(tmp_path / host / "libs" / "kafka_2.13-4.3.1.jar")
    before = snapshot(tmp_path)
    result = run_role(
        tmp_path,
        {"quota_plugin_jar_source": "file", "quota_plugin_jar_file": plugin_jar},
        host_vars={"broker-1": host_vars, "broker-2": host_vars},
    )
    assert result.returncode != 0
    assert said.replace("{libs}", str(tmp_path / "broker-1" / "libs")) in one_line(result), one_line(result)[-3000:]
    assert snapshot(tmp_path) == before


def test_a_release_that_is_not_pinned_needs_its_checksum_to_be_downloaded(tmp_path):
    make_hosts(tmp_path)
    before = snapshot(tmp_path)
    result = run_role(tmp_path, {"quota_plugin_version": "0.4.0"})
    assert result.returncode != 0
    assert (
        "quota_plugin_jar_checksum must be the sha256 of kafka-quotas-plugin-0.4.0.jar, 64 hex digits (optionally "
        "prefixed 'sha256:'), with quota_plugin_jar_source=maven (got '')"
    ) in one_line(result)
    assert snapshot(tmp_path) == before


def test_kafka_3_gets_the_pinned_release_too(tmp_path, plugin_jar):
    make_hosts(tmp_path, "3.7.2")
    result = run_role(tmp_path, {"quota_plugin_jar_source": "file", "quota_plugin_jar_file": plugin_jar})
    assert result.returncode == 0, result.stdout[-8000:]
    assert PINNED_JAR in os.listdir(tmp_path / "broker-2" / "libs")


def test_a_missing_libs_dir_fails_naming_host_and_path(tmp_path, plugin_jar):
    make_hosts(tmp_path)
    before = snapshot(tmp_path)
    missing = tmp_path / "broker-2" / "no-libs"
    result = run_role(
        tmp_path,
        {"quota_plugin_jar_source": "file", "quota_plugin_jar_file": plugin_jar},
        host_vars={"broker-2": {"kafka_libs_dir": str(missing)}},
    )
    assert result.returncode != 0
    assert (
        f"broker-2: libs_dir {missing} does not exist on this host (quota_plugin_libs_dir, by default kafka_libs_dir)"
        in (one_line(result))
    )
    assert snapshot(tmp_path) == before


@pytest.fixture
def maven_repository(tmp_path, plugin_jar):
    """The plugin's jar in a Maven repository layout, served over HTTP on 127.0.0.1 (its base URL)."""
    root = tmp_path / "repository"
    folder = root / "io" / "strimzi" / "kafka-quotas-plugin" / PINNED
    folder.mkdir(parents=True)
    shutil.copy(plugin_jar, folder / PINNED_JAR)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_maven_source_fetches_the_pinned_release_on_the_control_node(tmp_path, maven_repository):
    make_hosts(tmp_path)
    before = snapshot(tmp_path)
    checked = run_role(tmp_path, {"kafka_maven_repository": maven_repository}, args=["--check"])
    assert checked.returncode == 0, checked.stdout[-8000:]
    assert snapshot(tmp_path) == before, "check mode: the jar that would be installed counts as present"
    result = run_role(tmp_path, {"kafka_maven_repository": maven_repository})
    assert result.returncode == 0, result.stdout[-8000:]
    assert PINNED_JAR in os.listdir(tmp_path / "broker-1" / "libs")
    assert CALLBACK_LINE in (tmp_path / "broker-1" / "server.properties").read_text()
