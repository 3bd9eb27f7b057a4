"""The ZooKeeper node of a ZooKeeper-mode test cluster (Apache Kafka 3.x): one standalone server from the ZooKeeper
jars Kafka's own POM brings, as ``bin/zookeeper-server-start.sh`` runs it.

ZooKeeper keeps the brokers' registrations, the controller election, topics, client quotas and SCRAM credentials. A
broker that stops without a controlled shutdown leaves the cluster when its session expires: the session timeout is
short here (4 s, with a 500 ms tick) as the KRaft nodes' ``broker.session.timeout.ms`` is.
"""

import os
import socket
import subprocess
import time

from kafka_testbed import properties
from kafka_testbed.nodes import HOST, ClusterError, process_alive, start_java, tail

SESSION_TIMEOUT_MS = 4000
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"


def create(directory, port):
    """The node's directory, data dir and zookeeper.properties; returns its entry for cluster.json."""
    home = os.path.join(directory, "zookeeper")
    data_dir = os.path.join(home, "data")
    os.makedirs(data_dir, exist_ok=True)
    config = os.path.join(home, "zookeeper.properties")
    settings = {
        "dataDir": data_dir,
        "clientPort": str(port),
        "clientPortAddress": HOST,
        "tickTime": "500",
        "maxSessionTimeout": str(SESSION_TIMEOUT_MS * 5),
        "maxClientCnxns": "0",
        # The admin server is Jetty on port 8080 by default: two clusters on one machine would collide.
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,srvr",
    }
    properties.write_atomic(config, properties.render(settings), mode=0o644)
    return {
        "host": HOST,
        "port": port,
        "properties": config,
        "data_dir": data_dir,
        "log_file": os.path.join(home, "zookeeper.log"),
        "pid": None,
    }


def connect_string(entry):
    return f"{entry['host']}:{entry['port']}"


def broker_settings(entry):
    """What a broker needs to join the cluster through this node."""
    return {
        "zookeeper.connect": connect_string(entry),
        "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "zookeeper.connection.timeout.ms": "10000",
    }


def launch(entry, libs, jvm_options, log_options):
    """Start the node in the background; ``wait_ready`` waits until it answers."""
    command = [libs.java, *jvm_options, *log_options, "-cp", libs.classpath, MAIN_CLASS, entry["properties"]]
    process, _offset = start_java(command, entry["log_file"])
    entry["pid"] = process.pid


def wait_ready(entry, timeout):
    """Until the server says ``imok`` to the ``ruok`` four-letter command."""
    deadline = time.monotonic() + timeout
    while not _ok(entry):
        if not process_alive(entry["pid"]):
            raise ClusterError(f"ZooKeeper exited during startup:\n{tail(entry['log_file'], 30)}")
        if time.monotonic() > deadline:
            raise ClusterError(f"ZooKeeper did not answer within {timeout:.0f}s:\n{tail(entry['log_file'], 30)}")
        time.sleep(0.1)


def _ok(entry):
    try:
        with socket.create_connection((entry["host"], entry["port"]), timeout=2) as connection:
            connection.sendall(b"ruok")
            return connection.recv(16) == b"imok"
    except OSError:
        return False


def add_scram_credentials(entry, libs, jvm_options, user, password, mechanisms):
    """Store a user's SCRAM credentials in ZooKeeper before any broker runs, as Kafka's docs bootstrap the
    inter-broker user (``kafka-configs --zookeeper``); the password reaches the tool on its command line, never a
    log."""
    config = ",".join(f"{mechanism}=[password={password}]" for mechanism in mechanisms)
    command = [
        libs.java,
        *jvm_options,
        "-cp",
        libs.classpath,
        CONFIG_COMMAND,
        "--zookeeper",
        connect_string(entry),
        "--alter",
        "--add-config",
        config,
        "--entity-type",
        "users",
        "--entity-name",
        user,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).replace(password, "********")
        raise ClusterError(f"storing the SCRAM credentials of {user} in ZooKeeper failed:\n{output[-1500:]}")
