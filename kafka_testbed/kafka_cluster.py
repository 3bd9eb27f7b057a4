"""The real engine of the test cluster: Apache Kafka brokers run from the jars Maven fetched, any release from 3.3
(``kafka_versions``), in KRaft mode or, before 4.0, in ZooKeeper mode with one ZooKeeper node (``zookeeper``).

Each node is ``java ... kafka.Kafka server.properties`` with a small heap, its data log dirs each on a tmpfs of
``--volume-size`` and its metadata log on a filesystem of its own, so that a full data volume takes a log dir
offline without halting the node. The Strimzi quota plugin is on every classpath (it does nothing until
``client.quota.callback.class`` names it) and the Prometheus JMX exporter agent serves each node's MBeans over
HTTP on ``metrics_port``.
"""

import base64
import os
import secrets
import tempfile
import time
import uuid

from kafka_testbed import lanes, properties, security, zookeeper
from kafka_testbed.client_config import describe_cluster, kafka_python_config, quorum_leader
from kafka_testbed.kafka_libs import ensure_libs
from kafka_testbed.kafka_versions import KRAFT, ZOOKEEPER, KafkaRelease, NotInRelease
from kafka_testbed.log_dir_probe import LogDirProbe, fill_volume
from kafka_testbed.nodes import (
    ADMIN_USER,
    CONTROLLER_LISTENER,
    HOST,
    STANDARD_AUTHORIZER,
    ClusterBase,
    ClusterError,
    answers,
    free_port_block,
    parse_size,
    principal_of,
    process_alive,
    security_protocol,
    start_java,
    tail,
)
from kafka_testbed.storage_format import TOOL_JVM_OPTIONS, format_storage

METADATA_VOLUME_SIZE = 64 << 20
# Heap and JIT for many small JVMs on two cores: C1 only and the serial collector start faster and use less memory;
# these brokers move megabytes, not gigabytes.
JVM_OPTIONS = [
    "-Xms96m",
    "-Xmx384m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
]
STARTED = "Kafka Server started"
# A ZooKeeper-mode broker (Kafka 3.x) says it differently.
STARTED_ZOOKEEPER_MODE = "] started (kafka.server.KafkaServer)"
# MBeans the exporter serves: the plugin's, and Kafka's own that the tests and the demo read.
EXPORTER_CONFIG = """\
# Prometheus JMX exporter (javaagent) of the test cluster's nodes.
lowercaseOutputName: false
includeObjectNames:
  - "io.strimzi.kafka.quotas:*"
  - "kafka.server:type=Produce,*"
  - "kafka.server:type=Fetch,*"
  - "kafka.server:type=Request,*"
  - "kafka.server:type=BrokerTopicMetrics,*"
  - "kafka.server:type=ReplicaManager,*"
  - "kafka.server:type=KafkaServer,*"
  - "kafka.log:type=LogManager,*"
  - "kafka.controller:type=KafkaController,*"
"""
LOG4J2 = """\
# Log4j2 for a test-cluster node: everything at INFO to standard output, which the launcher appends to the node's log.
status = warn
# Kafka logs its own shutdown: without this Log4j2 stops at SIGTERM and the shutdown goes to a fallback logger.
shutdownHook = disable
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.requests.name = kafka.request.logger
logger.requests.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
"""
# The same for Kafka 3.x, which logs through Log4j 1 (reload4j).
LOG4J1 = """\
# Log4j 1 (reload4j) for a test-cluster node of Kafka 3.x: everything at INFO to standard output.
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.authorizer.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
"""
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
METADATA_VARIABLE = "KAFKA_METADATA_MODE"


def new_cluster_id():
    """A cluster id as ``kafka-storage random-uuid`` prints it: URL-safe base64 of 16 random bytes, never starting with
    '-' (Kafka's Uuid.randomUuid draws again, since command lines would take such an id for an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text


# Quick fencing, and a first registration that may take long: a broker that has not registered within
# initial.broker.registration.timeout.ms exits (60 s by default), and on a loaded two-core machine several nodes
# starting at once took longer than that.
KRAFT_BROKER_PROPERTIES = {
    "broker.session.timeout.ms": "4000",
    "broker.heartbeat.interval.ms": "500",
    "initial.broker.registration.timeout.ms": "300000",
}


def small_node_properties(release=None, metadata_mode=KRAFT):
    """Broker settings of a test node: single-replica internal topics, quick fencing, 1 MiB segments and a cleaner
    buffer that fits the small heap (only the settings ``release`` knows of, default the newest)."""
    props = {
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "offsets.topic.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "log.segment.bytes": str(1 << 20),
        "log.index.size.max.bytes": str(1 << 20),
        # The cleaner's 128 MiB default dedupe buffer is reallocated when log.cleaner.threads changes: twice
        # that does not fit the small heap and the JVM exits on OutOfMemoryError.
        "log.cleaner.dedupe.buffer.size": str(16 << 20),
    }
    if metadata_mode == KRAFT:
        # In ZooKeeper mode its session timeout decides when a broker has gone (zookeeper.broker_settings).
        props.update(KRAFT_BROKER_PROPERTIES)
    if release is not None and not release.share_groups:
        props = {key: value for key, value in props.items() if not key.startswith("share.coordinator.")}
    return props


def _jaas(username, password):
    return (
        f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{username}" password="{password}";'
    )


class KafkaCluster(ClusterBase):
    """Apache Kafka nodes in KRaft mode with a static controller quorum, or brokers and one ZooKeeper node."""

    engine = "kafka"
    shutdown_timeout = 30.0
    # A healthy cluster shuts down in about a second; nodes that lost their quorum, or brokers whose leaders have
    # nowhere to go, wait until the controller gives up on them. ``down`` throws the volumes away, so a short wait
    # before SIGKILL loses nothing.
    down_timeout = 2.0
    # JVM options of this launcher's nodes beyond JVM_OPTIONS (default: map the class archive if there is one).
    jvm_options = None
    metrics_agent = True

    @staticmethod
    def ports_needed(brokers, combined=0, controllers_only=0):
        """Client ports, then controller listeners, then one metrics port per node."""
        controllers = combined + controllers_only or 1
        nodes = brokers + (controllers_only if combined or controllers_only else 1)
        return brokers + controllers + nodes

    # -- creation -------------------------------------------------------------------------------------------------
    def create(
        self,
        brokers,
        base_port=19092,
        tls=False,
        scram=False,
        volume_size=None,
        log_dirs_per_broker=1,
        client_auth="required",
        catch_up_ms=None,
        extra_properties=None,
        combined=0,
        controllers_only=0,
        kafka_version=None,
        metadata=None,
    ):
        """Configure and format ``brokers`` broker nodes (ids 1..brokers, the first ``combined`` also controllers) and
        ``controllers_only`` controller nodes after them. KRaft needs a quorum: with neither option, one controller-only
        node is added. ``catch_up_ms`` is the model's knob; real replicas catch up at their own pace.

        ``kafka_version`` (default ``KAFKA_VERSION``, else the pom's) picks the release; ``metadata`` (default
        ``KAFKA_METADATA_MODE``, else ``kraft``) is ``kraft`` or, for 3.x, ``zookeeper``: brokers only, registered in
        one ZooKeeper node, one of them elected controller."""
        del catch_up_ms
        lanes.require_lane(lanes.KAFKA_CLUSTER)
        self._check_layout(brokers, log_dirs_per_broker, combined, controllers_only)
        libs = ensure_libs(kafka_version)
        release = None if libs.kafka_home else KafkaRelease(libs.version)
        metadata = metadata or os.environ.get(METADATA_VARIABLE) or KRAFT
        if release is not None:
            release.check_mode(metadata, "--metadata" if metadata else METADATA_VARIABLE)
        self._check_mode_layout(release, metadata, scram, combined, controllers_only)
        os.makedirs(self.directory, exist_ok=True)
        self.info = {
            "engine": self.engine,
            "kafka_version": libs.version,
            "metadata_mode": metadata,
            "directory": self.directory,
            "brokers": [],
            "volumes": [],
            "notes": [],
        }
        if libs.kafka_home:
            self.info["kafka_home"] = libs.kafka_home
        if metadata == ZOOKEEPER:
            self._create_zookeeper_cluster(
                brokers,
                base_port,
                tls,
                scram,
                client_auth,
                libs,
                release,
                options={
                    "size": parse_size(volume_size) if volume_size else None,
                    "log_dirs": log_dirs_per_broker,
                    "extra": extra_properties,
                },
            )
            return
        if not combined and not controllers_only:
            controllers_only = 1
            self.info["notes"].append("KRaft needs a controller quorum: one controller-only node was added")
        nodes = [(index + 1, ["broker", "controller"] if index < combined else ["broker"]) for index in range(brokers)]
        nodes += [(brokers + index + 1, ["controller"]) for index in range(controllers_only)]
        controller_ids = [node_id for node_id, roles in nodes if "controller" in roles]
        controller_ports = {node_id: base_port + brokers + index for index, node_id in enumerate(controller_ids)}
        metrics_base = base_port + brokers + len(controller_ids)
        self.info["cluster_id"] = new_cluster_id()
        self.info["security_protocol"] = security_protocol(tls, scram)
        self.info["controller_quorum_voters"] = ",".join(f"{i}@{HOST}:{p}" for i, p in controller_ports.items())
        self.info["controller_quorum_bootstrap_servers"] = ",".join(f"{HOST}:{p}" for p in controller_ports.values())
        common = self._security_settings(tls, scram, client_auth, [n for n, roles in nodes if "broker" in roles])
        size = parse_size(volume_size) if volume_size else None
        for index, (node_id, roles) in enumerate(nodes):
            self._create_node(
                node_id,
                roles,
                base_port + node_id - 1,
                controller_ports.get(node_id),
                metrics_base + index,
                {
                    "tls": tls,
                    "size": size,
                    "log_dirs": log_dirs_per_broker,
                    "common": common,
                    "extra": extra_properties,
                },
            )
        self.info["bootstrap_servers"] = self._bootstrap_servers()
        self.info.update(common["client"])
        self._write_shared_files(libs)
        self.save()
        try:
            self._format(libs, common.get("scram_password"))
        except ClusterError:
            self._unmount_all()
            self.save()
            raise

    @property
    def release(self):
        """The cluster's KafkaRelease (None for an installation's libs/ of unknown release)."""
        return None if self.info.get("kafka_home") else KafkaRelease(self.info["kafka_version"])

    @property
    def metadata_mode(self):
        return self.info.get("metadata_mode", KRAFT)

    def _libs(self):
        """The jars this cluster was created with, whatever KAFKA_VERSION says now."""
        return ensure_libs(self.info.get("kafka_version"), self.info.get("kafka_home", ""))

    @staticmethod
    def _check_mode_layout(release, metadata, scram, combined, controllers_only):
        if metadata == ZOOKEEPER and (combined or controllers_only):
            raise ClusterError(
                "--combined and --controllers-only are KRaft layouts: in ZooKeeper mode the brokers elect their "
                "controller among themselves through ZooKeeper"
            )
        if metadata == KRAFT and scram and release is not None and not release.kraft_scram:
            raise NotInRelease(
                f"--scram: Apache Kafka {release.version} in KRaft mode has no SCRAM credentials (KIP-900 added them "
                "in 3.5); use 3.5 or newer, or --metadata zookeeper"
            )

    def _create_zookeeper_cluster(self, brokers, base_port, tls, scram, client_auth, libs, release, options):
        """``brokers`` brokers (ids 1..brokers) and one ZooKeeper node; ports: the brokers', ZooKeeper's, then one
        metrics port per broker."""
        self.info["zookeeper"] = zookeeper.create(self.directory, base_port + brokers)
        # The first broker to register creates the cluster id in ZooKeeper; ``up`` records it.
        self.info["cluster_id"] = None
        self.info["security_protocol"] = security_protocol(tls, scram)
        common = self._security_settings(tls, scram, client_auth, list(range(1, brokers + 1)))
        for node_id in range(1, brokers + 1):
            home, log_dirs = self._node_home(node_id, True, options["log_dirs"], options["size"])
            props = self._listener_properties(
                node_id, ["broker"], base_port + node_id - 1, None, [f"CLIENT:{self.info['security_protocol']}"]
            )
            # A ZooKeeper-mode broker is configured by broker.id; node.id and process.roles would make it KRaft.
            del props["node.id"], props["process.roles"]
            props.update(
                {
                    "broker.id": str(node_id),
                    "log.dirs": ",".join(log_dirs),
                    **zookeeper.broker_settings(self.info["zookeeper"]),
                    **small_node_properties(release, ZOOKEEPER),
                }
            )
            config_path = self._write_node_config(
                home, node_id, True, props, {"tls": tls, "common": common, "extra": options["extra"]}
            )
            metrics_port = base_port + brokers + node_id
            self.info["brokers"].append(
                {
                    "id": node_id,
                    "host": HOST,
                    "port": base_port + node_id - 1,
                    "properties": config_path,
                    "log_dirs": log_dirs,
                    "pid": None,
                    "log_file": os.path.join(home, "broker.log"),
                    "roles": ["broker"],
                    "controller_port": None,
                    "metrics_port": metrics_port,
                    "metrics_url": f"http://{HOST}:{metrics_port}/metrics",
                }
            )
        self.info["bootstrap_servers"] = self._bootstrap_servers()
        self.info.update(common["client"])
        self._write_shared_files(libs)
        self.save()

    def _security_settings(self, tls, scram, client_auth, broker_ids):
        broker, client = {}, {}
        if tls:
            broker.update(self._tls_broker_settings(client_auth))
            client["tls"] = self.info["tls"]
        super_users = []
        if tls and client_auth == "required" and not scram:
            # Brokers talk to each other on the client listener with their own certificates.
            super_users += [principal_of(self.info["tls"]["cert"])] + [
                f"User:CN=broker-{node_id}" for node_id in broker_ids
            ]
        password = None
        if scram:
            password = secrets.token_urlsafe(18)
            broker.update(
                {
                    "sasl.enabled.mechanisms": ",".join(security.MECHANISMS),
                    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                }
            )
            for mechanism in security.MECHANISMS:
                broker[f"listener.name.client.{mechanism.lower()}.sasl.jaas.config"] = _jaas(ADMIN_USER, password)
            client["sasl"] = {"mechanism": "SCRAM-SHA-512", "username": ADMIN_USER, "password": password}
            super_users.append(f"User:{ADMIN_USER}")
        if super_users:
            # The controller listener is plaintext on loopback: brokers reach the controllers as ANONYMOUS.
            super_users.append("User:ANONYMOUS")
            authorizer = ACL_AUTHORIZER if self.info.get("metadata_mode") == ZOOKEEPER else STANDARD_AUTHORIZER
            broker.update({"authorizer.class.name": authorizer, "super.users": ";".join(super_users)})
        return {"broker": broker, "client": client, "scram_password": password}

    def _create_node(self, node_id, roles, port, controller_port, metrics_port, options):
        """One node's directories and server.properties, as Kafka 4.x configures a broker, combined or controller
        node."""
        is_broker = "broker" in roles
        home, log_dirs = self._node_home(node_id, is_broker, options["log_dirs"], options["size"])
        metadata_dir = os.path.join(home, "metadata")
        os.makedirs(metadata_dir, exist_ok=True)
        if options["size"]:
            self._mount_volume(metadata_dir, METADATA_VOLUME_SIZE)
        protocols = ([f"CLIENT:{self.info['security_protocol']}"] if is_broker else []) + [
            f"{CONTROLLER_LISTENER}:PLAINTEXT"
        ]
        props = self._listener_properties(node_id, roles, port, controller_port, protocols)
        props.update(
            {
                "controller.listener.names": CONTROLLER_LISTENER,
                "controller.quorum.voters": self.info["controller_quorum_voters"],
                "log.dirs": ",".join(log_dirs) if log_dirs else metadata_dir,
                "metadata.log.dir": metadata_dir,
                **small_node_properties(self.release),
            }
        )
        config_path = self._write_node_config(home, node_id, is_broker, props, options)
        self.info["brokers"].append(
            {
                "id": node_id,
                "host": HOST,
                "port": port if is_broker else controller_port,
                "properties": config_path,
                "log_dirs": log_dirs,
                "metadata_dir": metadata_dir,
                "pid": None,
                "log_file": os.path.join(home, "broker.log"),
                "roles": roles,
                "controller_port": controller_port,
                "metrics_port": metrics_port,
                "metrics_url": f"http://{HOST}:{metrics_port}/metrics",
            }
        )

    def _write_shared_files(self, libs):
        self.info["logging"] = libs.logging
        if libs.logging == "log4j2":
            self.info["log4j2"] = os.path.join(self.directory, "log4j2.properties")
            properties.write_atomic(self.info["log4j2"], LOG4J2, mode=0o644)
        else:
            self.info["log4j"] = os.path.join(self.directory, "log4j.properties")
            properties.write_atomic(self.info["log4j"], LOG4J1, mode=0o644)
        self.info["exporter_config"] = os.path.join(self.directory, "jmx-exporter.yaml")
        properties.write_atomic(self.info["exporter_config"], EXPORTER_CONFIG, mode=0o644)
        self.info["quota_plugin_jar"] = libs.plugin

    def _format(self, libs, scram_password):
        """kafka-storage format on every KRaft node with one cluster id (and the admin's SCRAM credentials)."""
        args = ["format", "-t", self.info["cluster_id"], "--ignore-formatted"]
        if scram_password:
            for mechanism in security.MECHANISMS:
                args += ["--add-scram", f"{mechanism}=[name={ADMIN_USER},password={scram_password}]"]
        format_storage(libs, self.info["brokers"], args, self._log_options(self.info["brokers"][0]))

    def _log_options(self, entry):
        if self.info.get("logging", "log4j2") == "log4j2":
            config = f"-Dlog4j2.configurationFile={self.info['log4j2']}"
        else:
            config = f"-Dlog4j.configuration=file:{self.info['log4j']}"
        return [config, f"-Dkafka.logs.dir={os.path.dirname(entry['log_file'])}"]

    # -- processes ------------------------------------------------------------------------------------------------
    def _launch(self, entry, libs):
        lanes.require_lane(lanes.KAFKA_CLUSTER)
        agent = (
            [f"-javaagent:{libs.agent}={HOST}:{entry['metrics_port']}:{self.info['exporter_config']}"]
            if self.metrics_agent
            else []
        )
        command = [
            libs.java,
            *JVM_OPTIONS,
            *(self.jvm_options or libs.sharing_options()),
            *self._log_options(entry),
            *agent,
            "-cp",
            libs.classpath,
            "kafka.Kafka",
            entry["properties"],
        ]
        process, entry["log_offset"] = start_java(command, entry["log_file"])
        entry["pid"] = process.pid
        entry["started_at"] = time.time()

    def up(self, timeout=120.0):
        libs = self._libs()
        if self.metadata_mode == ZOOKEEPER:
            self._start_zookeeper(libs, timeout)
        for entry in self.info["brokers"]:
            self._launch(entry, libs)
        self.save()
        try:
            self.wait_ready(self.info["brokers"], timeout)
            if self.info.get("cluster_id") is None:
                self.info["cluster_id"] = self._described()["cluster_id"]
                self.save()
        except ClusterError:
            self.down()
            raise

    def start(self, node_id, timeout=60.0):
        entry = self.broker(node_id)
        if entry.get("pid") and process_alive(entry["pid"]):
            raise ClusterError(f"broker {node_id} is already running (pid {entry['pid']})")
        self._launch(entry, self._libs())
        self.save()
        self.wait_ready([entry], timeout)

    def _start_zookeeper(self, libs, timeout):
        """ZooKeeper first (brokers cannot start without it); the admin's SCRAM credentials go in before any broker
        needs them to talk to another."""
        node = self.info["zookeeper"]
        if not (node.get("pid") and process_alive(node["pid"])):
            zookeeper.launch(node, libs, JVM_OPTIONS, self._log_options(node))
            self.save()
        try:
            zookeeper.wait_ready(node, timeout)
            if "sasl" in self.info and not node.get("scram_stored"):
                zookeeper.add_scram_credentials(
                    node, libs, TOOL_JVM_OPTIONS, ADMIN_USER, self.info["sasl"]["password"], security.MECHANISMS
                )
                node["scram_stored"] = True
                self.save()
        except ClusterError:
            self.down()
            raise

    def down(self):
        """Brokers first (a controlled shutdown needs ZooKeeper), then ZooKeeper, then the volumes."""
        super().down()
        node = (self.info or {}).get("zookeeper")
        if node and node.get("pid") and process_alive(node["pid"]):
            self._terminate(node, self.down_timeout)
            self.save()

    def stop(self, node_id, timeout=None):
        entry = self.broker(node_id)
        self._terminate(entry, timeout or self.shutdown_timeout)

    def wait_ready(self, entries, timeout):
        """Wait until every node logged that it started and every broker is registered and unfenced."""
        deadline = time.monotonic() + timeout
        pending = list(entries)
        while pending:
            for entry in list(pending):
                if not process_alive(entry["pid"]):
                    role = "broker" if "broker" in entry["roles"] else "controller"
                    raise ClusterError(f"{role} {entry['id']} exited during startup:\n{tail(entry['log_file'], 30)}")
                if self._started(entry) and answers(entry["host"], entry["port"]):
                    pending.remove(entry)
            if pending and time.monotonic() > deadline:
                raise ClusterError(
                    f"nodes {', '.join(str(e['id']) for e in pending)} did not start within {timeout:.0f}s:\n"
                    + tail(pending[0]["log_file"], 30)
                )
            if pending:
                time.sleep(0.1)
        brokers = {e["id"] for e in entries if "broker" in e["roles"]}
        while brokers:
            missing = brokers - self.unfenced_brokers()
            if not missing:
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"brokers {', '.join(map(str, sorted(missing)))} started but are not registered "
                    f"unfenced after {timeout:.0f}s"
                )
            time.sleep(0.1)

    def _started(self, entry):
        try:
            with open(entry["log_file"], "rb") as handle:
                handle.seek(entry.get("log_offset", 0))
                text = handle.read()
        except FileNotFoundError:
            return False
        return STARTED.encode() in text or STARTED_ZOOKEEPER_MODE.encode() in text

    def _described(self):
        """DescribeCluster through the bootstrap servers."""
        from kafka import KafkaAdminClient  # pylint: disable=import-outside-toplevel
        from kafka.errors import KafkaError  # pylint: disable=import-outside-toplevel

        try:
            admin = KafkaAdminClient(**kafka_python_config(self, request_timeout_ms=5000))
            try:
                return describe_cluster(admin)
            finally:
                admin.close()
        except (KafkaError, OSError) as exc:
            raise ClusterError(f"DescribeCluster failed: {exc}") from exc

    def unfenced_brokers(self):
        """Ids of the brokers the cluster reports as registered and unfenced (DescribeCluster through a live broker)."""
        from kafka import KafkaAdminClient  # pylint: disable=import-outside-toplevel  # only the real engine needs it
        from kafka.errors import KafkaError  # pylint: disable=import-outside-toplevel

        for entry in self.running_broker_nodes:
            try:
                admin = KafkaAdminClient(**self._one_broker_config(entry))
            except (KafkaError, OSError, ValueError):
                continue
            try:
                return {b["broker_id"] for b in describe_cluster(admin)["brokers"] if not b["is_fenced"]}
            except (KafkaError, OSError, ValueError):
                continue
            finally:
                admin.close()
        return set()

    def offline_log_dir(self, node_id, path=None, timeout=30.0):
        """Take a log dir of a running broker offline the way disks fail under Kafka: its volume fills up and the next
        write there fails. A probe partition is placed in that dir, the volume filled and one record produced to it;
        returns once the broker reports the dir offline (KAFKA_STORAGE_ERROR). A broker whose last log dir fails halts,
        as Kafka does."""
        entry = self.broker(node_id)
        if not entry["log_dirs"]:
            raise ClusterError(f"node {node_id} is a controller only and has no log dirs")
        path = os.path.abspath(path or entry["log_dirs"][0])
        if path not in entry["log_dirs"]:
            raise ClusterError(
                f"--log-dir {path} is not a log dir of broker {node_id} ({', '.join(entry['log_dirs'])})"
            )
        if not any(v["path"] == path for v in self.info.get("volumes", [])):
            raise ClusterError(
                f"--log-dir {path} is not on a volume of its own (create the cluster with --volume-size)"
            )
        topic = f"headroom-offline-probe-{node_id}-{entry['log_dirs'].index(path)}"
        probe = LogDirProbe(self, entry["id"], topic)
        probe.place(path, timeout)
        fill_volume(path)
        probe.write()
        deadline = time.monotonic() + timeout
        while not probe.offline(path):
            if time.monotonic() > deadline:
                raise ClusterError(f"broker {node_id} still reports {path} online {timeout:.0f}s after it filled up")
            time.sleep(0.2)

    def active_controller(self):
        """Node id of the KRaft quorum leader (DescribeQuorum, forwarded by a broker to the controllers), or in
        ZooKeeper mode the broker elected controller (DescribeCluster); None when no broker answers."""
        from kafka import KafkaAdminClient  # pylint: disable=import-outside-toplevel
        from kafka.errors import KafkaError  # pylint: disable=import-outside-toplevel

        try:
            admin = KafkaAdminClient(**kafka_python_config(self, request_timeout_ms=5000))
        except (KafkaError, OSError):
            return None
        try:
            if self.metadata_mode == ZOOKEEPER:
                controller = describe_cluster(admin)["controller_id"]
            else:
                controller = quorum_leader(admin)
        except (KafkaError, OSError):
            return None
        finally:
            admin.close()
        return controller if controller is not None and controller >= 0 else None

    def _one_broker_config(self, entry, **extra):
        """kafka-python settings that reach the one broker of ``entry`` (no other from its metadata)."""
        return kafka_python_config(
            self, bootstrap_servers=f"{entry['host']}:{entry['port']}", request_timeout_ms=5000, **extra
        )

    def add_scram_user(self, username, password, mechanism, timeout=30.0):
        """Store the user's credential for one mechanism; returns once every running broker authenticates the user.
        The controller commits the credential and each broker applies it from the metadata log a little later, so
        a login straight after the alteration can fail on a broker that has not caught up yet."""
        from kafka import KafkaAdminClient  # pylint: disable=import-outside-toplevel
        from kafka.admin import ScramMechanism, UserScramCredentialUpsertion  # pylint: disable=import-outside-toplevel

        admin = KafkaAdminClient(**kafka_python_config(self))
        try:
            upsertion = UserScramCredentialUpsertion(username, ScramMechanism[mechanism.replace("-", "_")], password)
            admin.alter_user_scram_credentials([upsertion])
        finally:
            admin.close()
        login = {"sasl_mechanism": mechanism, "sasl_plain_username": username, "sasl_plain_password": password}
        deadline = time.monotonic() + timeout
        for entry in self.running_broker_nodes:
            while not self._authenticates(entry, login):
                if time.monotonic() > deadline:
                    raise ClusterError(f"broker {entry['id']} did not authenticate {username} within {timeout} s")
                time.sleep(0.1)

    def _authenticates(self, entry, login):
        from kafka import KafkaAdminClient  # pylint: disable=import-outside-toplevel
        from kafka.errors import KafkaError  # pylint: disable=import-outside-toplevel

        try:
            # A refused login is retried until the bootstrap timeout, 30 s by default.
            KafkaAdminClient(**self._one_broker_config(entry, bootstrap_timeout_ms=3000, **login)).close()
        except (KafkaError, OSError, ValueError):
            return False
        return True

    def status(self):
        self._reload()
        unfenced = self.unfenced_brokers()
        rows = []
        for entry in self.info["brokers"]:
            running = bool(entry.get("pid")) and process_alive(entry["pid"])
            in_cluster = entry["id"] in unfenced if "broker" in entry["roles"] else running and self._started(entry)
            rows.append(
                {
                    "id": entry["id"],
                    "port": entry["port"],
                    "pid": entry.get("pid"),
                    "running": running,
                    "in_cluster": in_cluster,
                    "roles": entry["roles"],
                    "metrics_url": entry["metrics_url"],
                }
            )
        return rows


def write_class_archive(libs, timeout=120.0):
    """Java class-data sharing for the nodes: the classes a node loads while it starts and answers clients are
    archived once (``python -m kafka_testbed libs``), and every later node maps them instead of loading and verifying
    them again. Returns the archive's path; an archive that exists is kept."""
    archive = libs.class_archive
    if os.path.exists(archive):
        return archive
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    staging = f"{archive}.{os.getpid()}.partial"
    with tempfile.TemporaryDirectory(prefix="kafka-class-archive-") as directory:
        cluster = KafkaCluster(directory)
        # Without the exporter's agent: Java archives with an agent loaded only under a diagnostic option, and then
        # warns at every start that maps the archive. The agent's own jar comes last on the classpath, so nodes
        # started with it still map the archive.
        cluster.metrics_agent = False
        cluster.jvm_options = [f"-XX:ArchiveClassesAtExit={staging}"]
        cluster.create(1, base_port=free_port_block(KafkaCluster.ports_needed(1, combined=1)), combined=1)
        try:
            cluster.up(timeout)
            cluster.active_controller()
            # Java writes the archive as it exits: a controlled shutdown, never SIGKILL, and the full wait.
            for entry in cluster.info["brokers"]:
                cluster.stop(entry["id"], timeout)
            if not os.path.exists(staging):
                raise ClusterError(
                    f"Java wrote no class archive at {staging}:\n{tail(cluster.info['brokers'][0]['log_file'])}"
                )
            os.replace(staging, archive)
        finally:
            cluster.down()
            if os.path.exists(staging):
                os.unlink(staging)
    return archive
