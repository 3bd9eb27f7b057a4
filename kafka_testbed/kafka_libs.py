"""The jars a real test cluster runs on: fetched once from Maven Central with ``kafka_testbed/maven/pom.xml``.

``python -m kafka_testbed libs`` (run by ``make test`` and ``make demo``) copies Apache Kafka's runtime jars, the
Strimzi quota plugin and the Prometheus JMX exporter agent into ``build/kafka-<version>/``; later runs find the
stamp there and download nothing.

- ``KAFKA_VERSION`` picks another Apache Kafka release, 3.3.0 or newer (default: the pom's, 4.3.1); each release's
  jars go into a directory of their own, with the release's logging (Log4j2 from 4.0, reload4j before).
- ``KAFKA_HOME`` uses an existing Apache Kafka installation's ``libs/`` instead of fetching Kafka; the plugin and
  the agent are still fetched, into ``build/kafka-home-plugins/``.
"""

import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess

from kafka_testbed.kafka_versions import KafkaRelease
from kafka_testbed.nodes import ClusterError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POM = os.path.join(ROOT, "kafka_testbed", "maven", "pom.xml")
BUILD = os.path.join(ROOT, "build")


def _pom_property(name):
    with open(POM, encoding="utf-8") as handle:
        return re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", handle.read()).group(1)


DEFAULT_VERSION = _pom_property("kafka.version")
AGENT_PREFIX = "jmx_prometheus_javaagent"
PLUGIN_PREFIX = "kafka-quotas-plugin"
_STAMP = ".complete"


class KafkaLibs:
    """Where the broker's classpath, the plugin and the agent are; ``java`` is the command that runs them."""

    def __init__(self, version, kafka_libs, extras, java, kafka_home=None):
        self.version = version
        self.kafka_libs = kafka_libs
        self.extras = extras
        self.java = java
        self.kafka_home = kafka_home

    @property
    def logging(self):
        """``log4j2`` or ``reload4j``: what the jars log with (an installation's libs/ tell by their jars)."""
        if self.kafka_home:
            return "log4j2" if glob.glob(os.path.join(self.kafka_libs, "log4j-core-*.jar")) else "reload4j"
        return KafkaRelease(self.version).logging

    @property
    def classpath(self):
        """Every jar of Kafka's libs/ plus the plugin, as bin/kafka-run-class.sh builds it (no test or source jars)."""
        jars = sorted(
            set(glob.glob(os.path.join(self.kafka_libs, "*.jar")) + glob.glob(os.path.join(self.extras, "*.jar")))
        )
        return os.pathsep.join(
            path
            for path in jars
            if not re.search(r"-(test|sources|javadoc|scaladoc)\.jar$", path)
            and not os.path.basename(path).startswith(AGENT_PREFIX)
        )

    @property
    def agent(self):
        found = sorted(glob.glob(os.path.join(self.extras, f"{AGENT_PREFIX}-*.jar")))
        if not found:
            raise ClusterError(f"no {AGENT_PREFIX} jar in {self.extras}; run 'python -m kafka_testbed libs'")
        return found[-1]

    @property
    def class_archive(self):
        """Where the nodes' class-data-sharing archive is (it may not exist yet): one per classpath and JVM, since
        Java maps an archive only into the JVM and classpath that wrote it."""
        key = "\n".join([os.path.realpath(self.java), self.classpath])
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return os.path.join(BUILD, "class-archives", f"kafka-{self.version}-{digest}.jsa")

    def sharing_options(self):
        """JVM options that map the class archive, once ``python -m kafka_testbed libs`` wrote it (else none)."""
        archive = self.class_archive
        return [f"-XX:SharedArchiveFile={archive}"] if os.path.exists(archive) else []

    @property
    def plugin(self):
        found = sorted(glob.glob(os.path.join(self.extras, f"{PLUGIN_PREFIX}-*.jar")))
        return found[-1] if found else None


def fetched_plugin_jar(version=None):
    """The Strimzi quota plugin's jar among the jars ``libs`` fetched for ``version`` (default: the pom's Kafka), or
    None; fetches nothing and needs no Java (the model's clusters name it for the roles that check a broker's libs)."""
    found = sorted(
        glob.glob(os.path.join(BUILD, f"kafka-{version or DEFAULT_VERSION}", "libs", f"{PLUGIN_PREFIX}-*.jar"))
    )
    return found[-1] if found else None


def java_command():
    """``$JAVA_HOME/bin/java`` or ``java`` on PATH, checked to be Java 17 or newer."""
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise ClusterError(
            "no 'java' found (JAVA_HOME or PATH): Apache Kafka 4.x needs Java 17 or newer; "
            "install one (for example: apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
        )
    result = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr)
    major = int(match.group(1)) if match else 0
    if major == 1 and match.group(2):
        major = int(match.group(2))
    if major < 17:
        raise ClusterError(
            f"{java} is Java {major or 'unknown'}: Apache Kafka 4.x needs Java 17 or newer; "
            "install one (for example: apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
        )
    return java


def _maven_command():
    mvn = shutil.which("mvn")
    if not mvn:
        raise ClusterError(
            "no 'mvn' on PATH: the test cluster fetches Apache Kafka from Maven Central with Maven; "
            "install it (for example: apt-get install maven) or set KAFKA_HOME to an Apache Kafka installation"
        )
    return mvn


def _maven(args, what):
    mvn = _maven_command()
    result = subprocess.run([mvn, "-B", "-q", "-f", POM, *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()
        errors = [line for line in output if "ERROR" in line][:6] or output[-6:]
        raise ClusterError(f"fetching {what} with Maven failed (is Maven Central reachable?):\n" + "\n".join(errors))


def _copy(target, args, what):
    """Run copy-dependencies into ``target`` unless a previous run completed there. Test workers that need the same
    release at once take turns (a lock file beside it): the first fetches, the others find the stamp."""
    if os.path.exists(os.path.join(target, _STAMP)):
        return
    _maven_command()
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target + ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(target, _STAMP)):
            return
        staging = target + ".partial"
        shutil.rmtree(staging, ignore_errors=True)
        _maven(["dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={staging}", *args], what)
        open(os.path.join(staging, _STAMP), "w", encoding="utf-8").close()
        shutil.rmtree(target, ignore_errors=True)
        os.rename(staging, target)


def ensure_libs(version=None, kafka_home=None):
    """The jars for a real cluster, fetching them the first time; fails at once naming what is missing."""
    java = java_command()
    kafka_home = kafka_home if kafka_home is not None else os.environ.get("KAFKA_HOME")
    if kafka_home:
        libs = os.path.join(kafka_home, "libs")
        servers = glob.glob(os.path.join(libs, "kafka_2.13-*.jar"))
        if not servers:
            raise ClusterError(
                f"KAFKA_HOME={kafka_home}: no libs/kafka_2.13-*.jar there; point it at an Apache Kafka "
                "installation (the directory holding bin/ and libs/)"
            )
        found = re.search(r"kafka_2\.13-([^-]+(?:-[^-]+)?)\.jar$", os.path.basename(sorted(servers)[-1]))
        extras = os.path.join(BUILD, "kafka-home-plugins")
        _copy(extras, ["-Dkafka.home=" + kafka_home], "the Strimzi quota plugin and the JMX exporter")
        return KafkaLibs(found.group(1) if found else "unknown", libs, extras, java, kafka_home)
    version = version or os.environ.get("KAFKA_VERSION") or DEFAULT_VERSION
    release = KafkaRelease(version)
    target = os.path.join(BUILD, f"kafka-{version}", "libs")
    _copy(target, [f"-Dkafka.version={version}", f"-Pkafka,{release.logging}"], f"Apache Kafka {version}")
    return KafkaLibs(version, target, target, java)
