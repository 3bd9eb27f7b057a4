"""The test hosts' image, built from Debian packages: no registry is reachable, so there is no ``FROM debian``.

Two layers, each tagged by a digest of what goes into it, so that an unchanged list reuses what was built:

- the base: ``debootstrap`` of Debian bookworm with systemd, sshd, sudo, Python 3 (with venv) and the Java 17
  runtime, imported with ``docker import`` (its root filesystem kept as a tarball under ``build/hosts/``, so a new
  Docker store only imports it again);
- Kafka: Apache Kafka's jars in the Apache layout (``/opt/kafka/libs``) owned by a ``kafka`` user, a start script that
  reads ``KAFKA_OPTS`` and friends as Apache's does, a ``kafka.service`` unit (not enabled: a node is formatted
  first), host keys made at first boot, and a non-root ``headroom`` user with sudo for Ansible. No quota plugin jar
  and no metrics exporter: the roles install those.
"""

import hashlib
import os
import re
import shutil
import subprocess
import time

from kafka_testbed.hosts.docker import docker, ensure_daemon
from kafka_testbed.kafka_cluster import LOG4J2
from kafka_testbed.kafka_libs import AGENT_PREFIX, BUILD, PLUGIN_PREFIX
from kafka_testbed.nodes import ClusterError

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "openssh-server",
    "python3",
    # A Python 3 host as distributions ship it: Debian splits venv (and ensurepip) out of python3.
    "python3-venv",
    "iproute2",
    "procps",
    "sudo",
    "openjdk-17-jre-headless",
)
IMAGE_DIR = os.path.join(BUILD, "hosts")
ADMIN_USER = "headroom"
KAFKA_HOME = "/opt/kafka"
KAFKA_LIBS = f"{KAFKA_HOME}/libs"
KAFKA_CONFIG_DIR = "/etc/kafka"
KAFKA_PROPERTIES = f"{KAFKA_CONFIG_DIR}/server.properties"
KAFKA_SERVICE = "kafka"

# Apache's bin/kafka-server-start.sh and kafka-run-class.sh, reduced to what a broker needs: every jar of libs/ on
# the classpath, and the environment variables through which units and drop-ins configure the JVM.
START_SCRIPT = f"""\
#!/bin/sh
# Starts a Kafka node as Apache Kafka's bin/kafka-server-start.sh does: every jar of libs/ on the classpath, and
# KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_LOG4J_OPTS and KAFKA_OPTS from the environment.
exec java ${{KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}} $KAFKA_JVM_PERFORMANCE_OPTS $KAFKA_LOG4J_OPTS $KAFKA_OPTS \\
  -cp "{KAFKA_LIBS}/*" kafka.Kafka "$@"
"""
STORAGE_SCRIPT = f"""\
#!/bin/sh
# Apache Kafka's bin/kafka-storage.sh: formats a node's log dirs.
exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 $KAFKA_LOG4J_OPTS \\
  -cp "{KAFKA_LIBS}/*" kafka.tools.StorageTool "$@"
"""
# Sized for several nodes on two cores (as the local test cluster's JVM_OPTIONS); Restart=no so that a node that
# cannot start stays failed, where the rolling restart sees it.
KAFKA_UNIT = f"""\
[Unit]
Description=Apache Kafka node
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User=kafka
Group=kafka
Environment="KAFKA_HEAP_OPTS=-Xms96m -Xmx384m"
Environment="KAFKA_JVM_PERFORMANCE_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError \
-Djava.awt.headless=true -Djava.net.preferIPv4Stack=true"
Environment="KAFKA_LOG4J_OPTS=-Dlog4j2.configurationFile={KAFKA_CONFIG_DIR}/log4j2.properties"
ExecStart={KAFKA_HOME}/bin/kafka-server-start.sh {KAFKA_PROPERTIES}
SuccessExitStatus=143
TimeoutStopSec=60
LimitNOFILE=100000
Restart=no

[Install]
WantedBy=multi-user.target
"""
# Every container of one image would otherwise share the host keys debootstrap made.
HOST_KEYS_UNIT = """\
[Unit]
Description=Generate this host's SSH host keys
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target
"""
SSHD_CONFIG = "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\n"
DOCKERFILE = f"""\
FROM {{base}}
RUN useradd --system --home-dir /var/lib/kafka --shell /usr/sbin/nologin kafka \\
 && useradd --create-home --shell /bin/bash {ADMIN_USER} \\
 && echo '{ADMIN_USER} ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/{ADMIN_USER} \\
 && chmod 0440 /etc/sudoers.d/{ADMIN_USER} \\
 && rm -f /etc/ssh/ssh_host_* \\
 && mkdir -p {KAFKA_HOME}/bin {KAFKA_CONFIG_DIR} /var/lib/kafka
COPY libs/ {KAFKA_LIBS}/
COPY kafka-server-start.sh kafka-storage.sh {KAFKA_HOME}/bin/
COPY log4j2.properties {KAFKA_CONFIG_DIR}/
COPY kafka.service ssh-host-keys.service /etc/systemd/system/
COPY sshd.conf /etc/ssh/sshd_config.d/headroom.conf
RUN chmod 0755 {KAFKA_HOME}/bin/*.sh \\
 && chown -R kafka:kafka {KAFKA_HOME} {KAFKA_CONFIG_DIR} /var/lib/kafka \\
 && systemctl enable ssh-host-keys.service
"""


def _digest(*parts):
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def _image_exists(tag):
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False).returncode == 0


def base_image(timings=None):
    """The base image's tag, imported from the cached root filesystem or built with debootstrap first."""
    tag = f"headroom-host-base:{_digest(SUITE, MIRROR, *PACKAGES)}"
    if _image_exists(tag):
        return tag
    started = time.monotonic()
    os.makedirs(IMAGE_DIR, exist_ok=True)
    tarball = os.path.join(IMAGE_DIR, f"base-{tag.split(':')[1]}.tar")
    if not os.path.exists(tarball):
        _debootstrap(tarball)
    with open(tarball, "rb") as handle:
        result = subprocess.run(["docker", "import", "-", tag], stdin=handle, capture_output=True, check=False)
    if result.returncode != 0:
        raise ClusterError(f"docker import of {tarball} failed: {result.stderr.decode(errors='replace')[-2000:]}")
    if timings is not None:
        timings["base_image_seconds"] = round(time.monotonic() - started, 1)
    return tag


def _debootstrap(tarball):
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not os.path.exists(debootstrap):
        raise ClusterError("no debootstrap: the test hosts' image is built with it (apt-get install debootstrap)")
    rootfs = tarball[: -len(".tar")] + ".rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    command = [debootstrap, "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, rootfs, MIRROR]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    try:
        if result.returncode != 0:
            raise ClusterError(f"debootstrap failed:\n{(result.stdout + result.stderr)[-3000:]}")
        partial = tarball + ".partial"
        subprocess.run(["tar", "-C", rootfs, "-cf", partial, "."], check=True)
        os.rename(partial, tarball)
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)


def kafka_jars(libs):
    """The jars of an Apache Kafka installation's libs/: Kafka's, without the quota plugin and the metrics agent."""
    return sorted(
        os.path.join(libs.kafka_libs, name)
        for name in os.listdir(libs.kafka_libs)
        if name.endswith(".jar") and not name.startswith((PLUGIN_PREFIX, AGENT_PREFIX))
    )


def ready_image(libs, timings=None):
    """The tag of the image with Kafka ``libs.version`` installed, a Docker daemon answering (started when none did,
    and left running for the fleets), the image built first when missing."""
    ensure_daemon(IMAGE_DIR)
    return kafka_image(libs, timings)


def kafka_image(libs, timings=None):
    """The tag of the image with Kafka ``libs.version`` installed, built on the base image when missing."""
    base = base_image(timings)
    jars = kafka_jars(libs)
    files = {
        "Dockerfile": DOCKERFILE.format(base=base),
        "kafka-server-start.sh": START_SCRIPT,
        "kafka-storage.sh": STORAGE_SCRIPT,
        "log4j2.properties": LOG4J2,
        "kafka.service": KAFKA_UNIT,
        "ssh-host-keys.service": HOST_KEYS_UNIT,
        "sshd.conf": SSHD_CONFIG,
    }
    digest = _digest(base, *(os.path.basename(j) for j in jars), *(f"{k}\n{v}" for k, v in sorted(files.items())))
    tag = f"headroom-kafka-host:{re.sub(r'[^A-Za-z0-9_.-]', '_', libs.version)}-{digest}"
    if _image_exists(tag):
        return tag
    started = time.monotonic()
    context = os.path.join(IMAGE_DIR, f"context-{digest}")
    shutil.rmtree(context, ignore_errors=True)
    os.makedirs(os.path.join(context, "libs"))
    for jar in jars:
        shutil.copy(jar, os.path.join(context, "libs"))
    for name, text in files.items():
        with open(os.path.join(context, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    try:
        docker("build", "-q", "-t", tag, context, timeout=900)
    finally:
        shutil.rmtree(context, ignore_errors=True)
    if timings is not None:
        timings["kafka_image_seconds"] = round(time.monotonic() - started, 1)
    return tag
