"""broker_libs_info run as Ansible runs it, on directories of small jars made here."""

import os
import zipfile

import pytest
from ansible.module_utils import basic
from module_runner import run_module

PLUGIN = "io.strimzi.kafka.quotas.StaticQuotaCallback"


def jar(directory, name, *class_names):
    with zipfile.ZipFile(os.path.join(directory, name), "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for class_name in class_names:
            archive.writestr(class_name.replace(".", "/") + ".class", b"\xca\xfe\xba\xbe")


@pytest.fixture
def libs(tmp_path):
    jar(tmp_path, "kafka_2.13-4.3.1.jar", "kafka.Kafka")
    jar(tmp_path, "kafka-server-4.3.1.jar", "org.apache.kafka.server.Thing")
    jar(tmp_path, "kafka-quotas-plugin-0.3.1.jar", PLUGIN, "io.strimzi.kafka.quotas.StaticQuotaCallback$Quota")
    (tmp_path / "README").write_text("not a jar")
    return tmp_path


def test_lists_the_jars_the_version_and_the_providers(libs):
    run = run_module(
        "broker_libs_info",
        {"libs_dir": str(libs), "classes": [PLUGIN, "io.strimzi.kafka.quotas.StaticQuotaCallback$Quota", "a.Missing"]},
    )
    assert not run.failed, run.msg
    assert run.result["changed"] is False
    assert run.result["jars"] == ["kafka-quotas-plugin-0.3.1.jar", "kafka-server-4.3.1.jar", "kafka_2.13-4.3.1.jar"]
    assert run.result["kafka_version"] == "4.3.1" and run.result["kafka_versions"] == ["4.3.1"]
    assert run.result["classes"] == {
        PLUGIN: "kafka-quotas-plugin-0.3.1.jar",
        "io.strimzi.kafka.quotas.StaticQuotaCallback$Quota": "kafka-quotas-plugin-0.3.1.jar",
        "a.Missing": None,
    }
    assert run.result["missing_classes"] == ["a.Missing"]
    assert run.result["unreadable_jars"] == []


def test_check_mode_reads_the_same(libs):
    run = run_module("broker_libs_info", {"libs_dir": str(libs), "classes": [PLUGIN]}, check_mode=True)
    assert not run.failed, run.msg
    assert run.result["classes"] == {PLUGIN: "kafka-quotas-plugin-0.3.1.jar"}


def test_two_versions_and_a_broken_jar_are_warned_about(libs, monkeypatch):
    # Recorded where the module gives them: once the controller's code is imported in this process (another test
    # may have), ansible-core routes module warnings to its display instead of the result.
    warned = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda module, message: warned.append(message))
    jar(libs, "kafka-quotas-plugin-0.3.0.jar", PLUGIN)
    jar(libs, "kafka_2.13-3.9.0.jar", "kafka.Kafka")
    (libs / "broken.jar").write_bytes(b"not a zip")
    run = run_module("broker_libs_info", {"libs_dir": str(libs), "classes": [PLUGIN]})
    assert not run.failed, run.msg
    assert run.result["classes"] == {PLUGIN: "kafka-quotas-plugin-0.3.0.jar"}
    assert run.result["kafka_version"] is None and run.result["kafka_versions"] == ["3.9.0", "4.3.1"]
    assert run.result["unreadable_jars"] == ["broken.jar"]
    warnings = " ".join(warned)
    assert f"{PLUGIN} is in 2 jars of {libs} (kafka-quotas-plugin-0.3.0.jar, kafka-quotas-plugin-0.3.1.jar)" in warnings
    assert "holds the server jars of Kafka 3.9.0 and 4.3.1" in warnings
    assert f"broken.jar in {libs} could not be read as a jar" in warnings


def test_without_classes_no_jar_is_opened(libs):
    (libs / "broken.jar").write_bytes(b"not a zip")
    run = run_module("broker_libs_info", {"libs_dir": str(libs)})
    assert not run.failed, run.msg
    assert run.result["classes"] == {} and run.result["unreadable_jars"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"libs_dir": "{tmp}/gone"}, "libs_dir {tmp}/gone does not exist on this host"),
        ({"libs_dir": "{tmp}/file.txt"}, "libs_dir {tmp}/file.txt is not a directory"),
        ({"libs_dir": "{tmp}", "classes": ["io/strimzi/Thing"]}, "classes[0] must hold Java class names"),
        ({}, "missing required arguments: libs_dir"),
    ],
)
def test_refusals_name_the_option(tmp_path, args, message):
    (tmp_path / "file.txt").write_text("x")
    args = {
        key: value.replace("{tmp}", str(tmp_path)) if isinstance(value, str) else value for key, value in args.items()
    }
    run = run_module("broker_libs_info", args)
    assert run.failed
    assert message.replace("{tmp}", str(tmp_path)) in run.msg
