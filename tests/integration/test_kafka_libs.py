"""Getting real Kafka for the test cluster: what fails, and how, before anything is downloaded or started."""
# pylint: disable=missing-function-docstring

import os
import stat

import pytest

from kafka_testbed import kafka_libs, storage_format
from kafka_testbed.nodes import ClusterError


def _fake_java(directory, version_line):
    """A ``java`` that prints ``version_line`` as ``java -version`` does (on standard error)."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(parents=True)
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n", encoding="utf-8")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return directory


@pytest.fixture
def empty_build(tmp_path, monkeypatch):
    """Nothing fetched yet: the jars would land in an empty build directory."""
    monkeypatch.setattr(kafka_libs, "BUILD", str(tmp_path / "build"))
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.delenv("KAFKA_VERSION", raising=False)
    return tmp_path / "build"


def test_no_java_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterError, match=r"no 'java' found .*Java 17 or newer.*openjdk-17-jdk-headless"):
        kafka_libs.ensure_libs()


def test_java_older_than_17_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path / "jdk11", 'openjdk version "11.0.22" 2024-01-16')))
    with pytest.raises(ClusterError, match=r"is Java 11: Apache Kafka 4.x needs Java 17 or newer"):
        kafka_libs.ensure_libs()


def test_java_8_version_scheme_is_read_as_8(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path / "jdk8", 'java version "1.8.0_402"')))
    with pytest.raises(ClusterError, match=r"is Java 8:"):
        kafka_libs.ensure_libs()


def test_no_maven_names_it_and_the_alternative(monkeypatch, empty_build):
    java = kafka_libs.java_command()
    monkeypatch.setenv("JAVA_HOME", os.path.dirname(os.path.dirname(os.path.realpath(java))))
    monkeypatch.setenv("PATH", str(empty_build.parent))  # no mvn there
    with pytest.raises(ClusterError, match=r"no 'mvn' on PATH: .*install it .*or set KAFKA_HOME"):
        kafka_libs.ensure_libs()
    assert not empty_build.exists() or not any(empty_build.iterdir())


def test_an_unreachable_repository_fails_naming_the_version(monkeypatch, empty_build, tmp_path):
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    # Every repository mirrored to a closed local port, and nothing cached: Maven cannot fetch anything.
    (home / ".m2" / "settings.xml").write_text(
        f"""<settings>
  <localRepository>{tmp_path / "repository"}</localRepository>
  <mirrors><mirror><id>closed</id><mirrorOf>*</mirrorOf><url>http://127.0.0.1:9/</url></mirror></mirrors>
</settings>
""",
        encoding="utf-8",
    )
    monkeypatch.setenv("MAVEN_OPTS", f"-Duser.home={home}")
    with pytest.raises(
        ClusterError, match=r"fetching Apache Kafka 4\.3\.1 with Maven failed \(is Maven Central reachable\?\)"
    ):
        kafka_libs.ensure_libs()
    assert not os.path.exists(empty_build / "kafka-4.3.1" / "libs"), "a failed fetch left a libs directory behind"


@pytest.mark.parametrize("version", ["4.3", "latest", "4.3.1-rc0"])
def test_kafka_version_must_be_a_release(monkeypatch, empty_build, version):
    del empty_build
    monkeypatch.setenv("KAFKA_VERSION", version)
    with pytest.raises(
        ClusterError, match=rf"KAFKA_VERSION='{version}': expected an Apache Kafka release such as 3\.9\.1 or 4\.3\.1"
    ):
        kafka_libs.ensure_libs()


@pytest.mark.parametrize("version", ["3.2.3", "2.8.2"])
def test_releases_before_3_3_are_refused_naming_why(monkeypatch, empty_build, version):
    del empty_build
    monkeypatch.setenv("KAFKA_VERSION", version)
    with pytest.raises(
        ClusterError, match=rf"KAFKA_VERSION='{version}': the test cluster runs Apache Kafka 3\.3 or newer"
    ):
        kafka_libs.ensure_libs()


def test_kafka_home_without_libs_is_refused(monkeypatch, empty_build, tmp_path):
    del empty_build
    monkeypatch.setenv("KAFKA_HOME", str(tmp_path))
    with pytest.raises(ClusterError, match=r"KAFKA_HOME=.*: no libs/kafka_2\.13-\*\.jar there"):
        kafka_libs.ensure_libs()


# -- the formatter's report ------------------------------------------------------------------------------------------
NODES = [
    {"id": 1, "properties": "/c/broker-1/server.properties"},
    {"id": 4, "properties": "/c/controller-4/server.properties"},
]


@pytest.mark.parametrize(
    "returncode, output, expected",
    [
        (
            0,
            "Formatting metadata directory /c/broker-1/metadata with metadata.version 4.3-IV0.\n"
            "@@formatted 0 /c/broker-1/server.properties\n"
            "Formatting metadata directory /c/controller-4/metadata with metadata.version 4.3-IV0.\n"
            "@@formatted 0 /c/controller-4/server.properties\n",
            [
                (1, 0, "Formatting metadata directory /c/broker-1/metadata with metadata.version 4.3-IV0."),
                (4, 0, "Formatting metadata directory /c/controller-4/metadata with metadata.version 4.3-IV0."),
            ],
        ),
        (
            1,
            "@@formatted 0 /c/broker-1/server.properties\n"
            "java.lang.IllegalArgumentException: requirement failed: There must be at least one broker advertised "
            "listener.\n"
            "@@formatted 1 /c/controller-4/server.properties\n",
            [
                (1, 0, ""),
                (
                    4,
                    1,
                    "java.lang.IllegalArgumentException: requirement failed: There must be at least one broker "
                    "advertised listener.",
                ),
            ],
        ),
        # The JVM died before the second node: that node gets the formatter's exit code and its last words.
        (
            134,
            "@@formatted 0 /c/broker-1/server.properties\n"
            "# A fatal error has been detected by the Java Runtime Environment\n",
            [(1, 0, ""), (4, 134, "# A fatal error has been detected by the Java Runtime Environment")],
        ),
        # No output at all, exit 0 (it cannot happen, but a node without its marker never counts as formatted).
        (0, "", [(1, 1, ""), (4, 1, "")]),
    ],
    ids=["both-formatted", "second-refused", "jvm-died", "no-markers"],
)
def test_formatter_output_is_attributed_to_each_node(returncode, output, expected):
    outcomes = storage_format.formatter_outcomes((returncode, output), NODES)
    assert [(entry["id"], code, text) for entry, code, text in outcomes] == expected
