"""One broker process: configuration, lifecycle and the cluster view it answers from."""

import logging
import os
import re
import sys
import threading
import time
import uuid

from headroom_guard.stop_signals import stop_event
from kafka_testbed import properties
from kafka_testbed.model import quota_plugin_config
from kafka_testbed.model import state as cluster_state
from kafka_testbed.model.listeners import ConfigError, advertised_endpoints, controller_listener_names, parse_endpoints
from kafka_testbed.model.state import ClusterState, now_ms
from kafka_testbed.model.storage import LogDir, PartitionLog, StorageFailure

LOG = logging.getLogger("kafka_testbed.model.broker")
ROLES = ("broker", "controller")
_VOTER = re.compile(r"^(\d+)@(\[[^\]]*\]|[^:\[\]]+):(\d+)$")


def _int(props, key, default):
    value = props.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"Invalid value {value} for configuration {key}: Not a number of type INT") from None


def validate_quota_callback(props):
    """Kafka instantiates ``client.quota.callback.class`` at startup; a plugin that rejects its config stops the
    broker."""
    callback = props.get("client.quota.callback.class", "").strip()
    if not callback:
        return None
    if callback != quota_plugin_config.STATIC_QUOTA_CALLBACK:
        raise ConfigError(
            f"Invalid value {callback} for configuration client.quota.callback.class: Class {callback} could not be "
            "found."
        )
    try:
        return quota_plugin_config.load(props)
    except quota_plugin_config.PluginConfigError as exc:
        raise ConfigError(exc.describe()) from None


def _max_versions(text):
    """A test-only key, not Kafka's: lowers advertised API versions so a broker stands in for an older Kafka."""
    if not text:
        return {}
    from kafka_testbed.model import wire  # pylint: disable=import-outside-toplevel  # the codec loads only when asked for

    try:
        return wire.parse_max_versions(text)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def static_voters(props, listener):
    """``controller.quorum.voters`` (``id@host:port,...``): a static quorum, whose voters have no directory id."""
    text = props.get("controller.quorum.voters", "")
    voters = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _VOTER.match(item)
        if match is None:
            raise ConfigError(
                f"Invalid value {text} for configuration controller.quorum.voters: {item!r} is not in the form of "
                "{id}@{host}:{port}"
            )
        voters.append(
            {
                "id": int(match.group(1)),
                "directory_id": cluster_state.NO_DIRECTORY_ID,
                "endpoints": [{"name": listener, "host": match.group(2).strip("[]"), "port": int(match.group(3))}],
            }
        )
    return voters


class BrokerConfig:
    """The Kafka keys a broker reads at startup, validated the way Kafka fails its startup."""

    def __init__(self, props):
        self.props = props
        if "node.id" not in props:
            raise ConfigError('Missing required configuration "node.id" which has no default value.')
        self.node_id = _int(props, "node.id", None)
        roles = [role.strip() for role in props.get("process.roles", "").split(",") if role.strip()]
        if not roles or any(role not in ROLES for role in roles) or len(set(roles)) != len(roles):
            raise ConfigError(
                f"Invalid value {props.get('process.roles', '')} for configuration process.roles: "
                "must be a non-empty list of broker and/or controller"
            )
        self.roles = roles
        self.is_broker = "broker" in roles
        self.listeners = parse_endpoints(props, "listeners")
        if not self.listeners:
            raise ConfigError('Missing required configuration "listeners": a KRaft node needs at least one listener')
        controllers = controller_listener_names(props)
        if "controller" in roles and not controllers & {endpoint.name for endpoint in self.listeners}:
            raise ConfigError("controller.listener.names must name one of the listeners on a controller node")
        names = [name.strip().upper() for name in props.get("controller.listener.names", "").split(",") if name.strip()]
        self.static_voters = static_voters(props, names[0] if names else "CONTROLLER")
        bootstrap = props.get("controller.quorum.bootstrap.servers", "").strip()
        if "controller" in roles and not self.static_voters and not bootstrap:
            raise ConfigError(
                "If using process.roles, either controller.quorum.bootstrap.servers must contain the set of bootstrap "
                "controllers or controller.quorum.voters must contain a parseable set of controllers."
            )
        if (
            "controller" in roles
            and self.static_voters
            and self.node_id not in [voter["id"] for voter in self.static_voters]
        ):
            raise ConfigError(
                f"If process.roles contains the 'controller' role, the node id {self.node_id} must be included in the "
                f"set of voters controller.quorum.voters={props.get('controller.quorum.voters')}"
            )
        self.advertised = advertised_endpoints(props, self.listeners) if self.is_broker else []
        if self.is_broker and not self.advertised:
            raise ConfigError("A broker needs a listener that is not a controller listener")
        log_dirs = props.get("log.dirs") or props.get("log.dir")
        if self.is_broker and not log_dirs:
            raise ConfigError('Missing required configuration "log.dirs"')
        self.log_dirs = [path.strip() for path in (log_dirs or "").split(",") if path.strip()]
        self.metadata_dir = props.get("metadata.log.dir") or (self.log_dirs[0] if self.log_dirs else None)
        if not self.metadata_dir:
            raise ConfigError('Missing required configuration "metadata.log.dir"')
        self.rack = props.get("broker.rack") or None
        self.session_timeout_ms = _int(props, "broker.session.timeout.ms", 9000)
        self.heartbeat_ms = _int(props, "broker.heartbeat.interval.ms", 2000)
        self.max_request_bytes = _int(props, "socket.request.max.bytes", 104857600)
        self.message_max_bytes = _int(props, "message.max.bytes", 1048588)
        self.super_users = {user.strip() for user in props.get("super.users", "").split(";") if user.strip()}
        self.authorizer = props.get("authorizer.class.name", "").strip()
        mechanisms = props.get("sasl.enabled.mechanisms", "GSSAPI")
        self.sasl_mechanisms = [mechanism.strip().upper() for mechanism in mechanisms.split(",") if mechanism.strip()]
        self.quota_plugin = validate_quota_callback(props) if self.is_broker else None
        self.max_versions = _max_versions(props.get("test.api.max.versions"))


class Broker:
    """State and views shared by every connection of this broker process."""

    def __init__(self, config):
        self.config = config
        self.node_id = config.node_id
        self.props = config.props
        self.state = ClusterState(config.metadata_dir)
        self.log_dirs = [LogDir(path) for path in config.log_dirs] if config.is_broker else []
        self.started_ms = now_ms()
        self.incarnation = str(uuid.uuid4())
        self._logs = {}
        self._logs_lock = threading.Lock()
        self.stopping = threading.Event()
        self.published_offline = []

    # -- cluster view -------------------------------------------------------------------------------------------
    def nodes(self):
        return self.state.registrations(self.config.session_timeout_ms)

    def live_brokers(self, nodes=None):
        nodes = self.nodes() if nodes is None else nodes
        return {node_id: node for node_id, node in nodes.items() if node["alive"] and "broker" in node["roles"]}

    def catch_up_ms(self):
        return self.state.read()["settings"].get("replica_catch_up_ms", 0)

    def partition_view(self, partition, live, catch_up_ms, now):
        """Leader, ISR and offline replicas, computed like a KRaft controller would keep them.

        A replica on a broker that restarted rejoins the ISR only after the catch-up time, unless no in-sync
        copy is left (then the surviving replicas are the data, as after an unclean restart of a sole replica)."""
        replicas = partition["replicas"]
        # A replica whose log dir is offline is offline too (KRaft: ReplicationControlManager.handleDirectoriesOffline).
        alive = [
            r
            for r in replicas
            if r in live and partition["dirs"].get(str(r)) not in live[r].get("offline_log_dirs", ())
        ]
        in_sync = [
            r
            for r in alive
            if partition["created_ms"] >= live[r]["started_ms"] or live[r]["started_ms"] + catch_up_ms <= now
        ]
        if not in_sync:
            in_sync = alive
        leader = in_sync[0] if in_sync else -1
        isr = (
            in_sync
            if in_sync
            else [partition.get("leader", replicas[0]) if partition.get("leader", -1) != -1 else replicas[0]]
        )
        offline = [r for r in replicas if r not in alive]
        return leader, isr, offline

    def topics_view(self, names=None):
        """{topic: (topic record, [(partition index, leader, leader epoch, isr, offline)])}, updating leader epochs."""
        state = self.state.read()
        live = self.live_brokers()
        catch_up_ms = state["settings"].get("replica_catch_up_ms", 0)
        now = now_ms()
        result = {}
        stale = []
        for name, topic in state["topics"].items():
            if names is not None and name not in names:
                continue
            parts = []
            for index, partition in enumerate(topic["partitions"]):
                leader, isr, offline = self.partition_view(partition, live, catch_up_ms, now)
                if leader != partition.get("leader", -1):
                    stale.append((name, index, leader))
                parts.append([index, leader, partition.get("leader_epoch", 0), isr, offline])
            result[name] = (topic, parts)
        if stale:
            epochs = self.state.update(lambda s: _record_leaders(s, stale))
            for name, index, _ignored in stale:
                result[name][1][index][2] = epochs[(name, index)]
        return result

    # -- the KRaft quorum ------------------------------------------------------------------------------------------
    def voters(self, state=None):
        """The voter set: the one recorded when the metadata was formatted, else ``controller.quorum.voters``."""
        state = self.state.read() if state is None else state
        return state.get("quorum", {}).get("voters") or self.config.static_voters

    def quorum_view(self):
        """The quorum as its leader sees it, or None without voters: (quorum record, voters, registrations, now).

        Elections happen lazily, like partition leader epochs in ``topics_view``: whoever looks first after the
        leader stopped, died or restarted records the new leader and epoch under the cluster lock. Every controller
        looks on each heartbeat, so a new leader is known within a heartbeat even if no client asks."""
        state = self.state.read()
        voters = self.voters(state)
        if not voters:
            return None
        nodes = self.nodes()
        voter_ids = [voter["id"] for voter in voters]
        alive = {node_id: node for node_id, node in nodes.items() if node["alive"] and "controller" in node["roles"]}
        quorum = {**cluster_state.empty_quorum(), **state.get("quorum", {})}
        now = now_ms()
        if cluster_state.needs_election(quorum, voter_ids, alive):
            quorum = self.state.update(lambda s: cluster_state.elect(s, voter_ids, alive, nodes, now))
        return quorum, voters, nodes, now

    def leader_of(self, topic, index):
        view = self.topics_view({topic}).get(topic)
        if view is None or index >= len(view[1]):
            return None
        return view[1][index]

    # -- logs ---------------------------------------------------------------------------------------------------
    def log_dir_for(self, path):
        for log_dir in self.log_dirs:
            if log_dir.path == os.path.abspath(path):
                return log_dir
        return None

    def fail_log_dir(self, log_dir, reason):
        """Kafka's LogDirFailureChannel: an I/O error takes the whole log dir offline until the broker restarts, the
        controller learns it (its replicas go offline), and when no log dir is left the broker halts
        (LogManager.handleLogDirFailure: "Shutdown broker because all log dirs in ... have failed", exit status 1)."""
        if log_dir is None or log_dir.failed:
            return
        log_dir.failed = True
        LOG.error("Error while writing to log dir %s, marking it offline: %s", log_dir.path, reason)
        self.publish_offline_log_dirs()
        if not self.online_log_dirs():
            LOG.critical(
                "Shutdown broker because all log dirs in %s have failed", ", ".join(d.path for d in self.log_dirs)
            )
            # Kafka's failure handler thread halts the JVM shortly after the failing request was answered.
            threading.Timer(0.2, _halt).start()

    def online_log_dirs(self):
        offline = self.offline_by_fault()
        return [log_dir for log_dir in self.log_dirs if log_dir.online(offline)]

    def publish_offline_log_dirs(self):
        """Re-register when the set of offline log dirs changed, as a broker heartbeat tells the controller."""
        if self.stopping.is_set():
            return
        online = {log_dir.path for log_dir in self.online_log_dirs()}
        offline = sorted(log_dir.path for log_dir in self.log_dirs if log_dir.path not in online)
        if offline != self.published_offline:
            self.state.register(self.registration())

    def offline_by_fault(self):
        return set(self.state.faults(self.node_id).get("offline_log_dirs", []))

    def partition_log(self, topic_record, topic, index, node_id=None):
        """The log of ``topic``-``index`` held by ``node_id`` (default: this broker), or None if it has no replica."""
        node_id = self.node_id if node_id is None else node_id
        directory = topic_record["partitions"][index]["dirs"].get(str(node_id))
        if directory is None:
            return None
        key = (node_id, topic, index, directory)
        with self._logs_lock:
            log = self._logs.get(key)
            if log is None:
                log = self._logs[key] = PartitionLog(os.path.join(directory, f"{topic}-{index}"))
            return log

    def ensure_replicas(self):
        """Create this broker's partition directories and copy what its followers missed from the leader's log."""
        if not self.log_dirs:
            return
        try:
            view = self.topics_view()
        except FileNotFoundError:
            return
        offline = self.offline_by_fault()
        for name, (topic, parts) in view.items():
            for index, leader, _ignored, _ignored, _ignored in parts:
                log = self.partition_log(topic, name, index)
                if log is None:
                    continue
                log_dir = self.log_dir_for(os.path.dirname(log.directory))
                if log_dir is None or not log_dir.online(offline):
                    continue
                try:
                    log.create()
                    if leader not in (-1, self.node_id):
                        leader_log = self.partition_log(topic, name, index, leader)
                        if leader_log is not None:
                            log.copy_tail_from(leader_log)
                except (OSError, StorageFailure) as exc:
                    self.fail_log_dir(log_dir, f"replica {name}-{index}: {exc}")

    # -- authorization --------------------------------------------------------------------------------------------
    def may_alter_cluster(self, principal):
        """With an authorizer only super users may alter client quotas and configs (no ACLs are modelled)."""
        return not self.config.authorizer or principal in self.config.super_users

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def registration(self):
        online = {log_dir.path for log_dir in self.online_log_dirs()}
        self.published_offline = sorted(log_dir.path for log_dir in self.log_dirs if log_dir.path not in online)
        return {
            "node_id": self.node_id,
            "roles": self.config.roles,
            "rack": self.config.rack,
            "endpoints": [endpoint.as_dict() for endpoint in self.config.advertised],
            "log_dirs": [log_dir.path for log_dir in self.log_dirs],
            "offline_log_dirs": self.published_offline,
            "started_ms": self.started_ms,
            "incarnation": self.incarnation,
            "pid": os.getpid(),
        }

    def heartbeat_loop(self):
        interval = max(self.config.heartbeat_ms, 50) / 1000.0
        while not self.stopping.wait(interval):
            self.state.heartbeat(self.node_id)
            try:
                if "controller" in self.config.roles:
                    self.quorum_view()
                self.publish_offline_log_dirs()
                self.ensure_replicas()
            except Exception:  # pylint: disable=broad-except  # the heartbeat must outlive a bad replica
                LOG.exception("replica maintenance failed")


def _halt():
    logging.shutdown()
    os._exit(1)  # pylint: disable=protected-access  # Runtime.halt: no controlled shutdown, the registration goes stale


def _record_leaders(state, changes):
    epochs = {}
    for name, index, leader in changes:
        partition = state["topics"][name]["partitions"][index]
        if partition.get("leader", -1) != leader:
            partition["leader"] = leader
            partition["leader_epoch"] = partition.get("leader_epoch", 0) + 1
        epochs[(name, index)] = partition["leader_epoch"]
    return epochs


def _write_meta_properties(broker, cluster_id):
    for log_dir in broker.log_dirs:
        path = os.path.join(log_dir.path, "meta.properties")
        if not os.path.exists(path):
            properties.write_atomic(
                path,
                properties.render(
                    {
                        "version": "1",
                        "cluster.id": cluster_id,
                        "node.id": str(broker.node_id),
                        "directory.id": str(uuid.uuid4()),
                    }
                ),
                mode=0o644,
            )


def run(config_path):
    """Start a broker from its properties file; return the process exit status."""
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
    )
    # Imported here so a config error is reported before the protocol codec loads.
    try:
        config = BrokerConfig(properties.load(config_path))
    except (ConfigError, OSError) as exc:
        LOG.error("Exiting Kafka due to fatal exception during startup: %s", exc)
        return 1
    from kafka_testbed.model.server import SocketServer  # pylint: disable=import-outside-toplevel

    broker = Broker(config)
    cluster_id = broker.state.format()
    nodes = broker.nodes()
    other = nodes.get(broker.node_id)
    if other and other["alive"] and other["pid"] != os.getpid() and _pid_alive(other["pid"]):
        LOG.error(
            "Exiting Kafka: node.id %s is already registered by a live process (pid %s)", broker.node_id, other["pid"]
        )
        return 1
    _write_meta_properties(broker, cluster_id)
    broker.state.update(lambda s: cluster_state.directory_id(s, broker.node_id))
    try:
        server = SocketServer(broker)
    except (OSError, ConfigError, ValueError) as exc:
        LOG.error("Exiting Kafka due to fatal exception during startup: %s", exc)
        return 1
    broker.ensure_replicas()
    broker.state.register(broker.registration())
    threading.Thread(target=broker.heartbeat_loop, name="heartbeat", daemon=True).start()

    stopping = stop_event()
    server.start()
    LOG.info(
        "[KafkaRaftServer nodeId=%s] Kafka Server started (cluster %s, roles %s)",
        broker.node_id,
        cluster_id,
        ",".join(config.roles),
    )
    stopping.wait()
    LOG.info("Received SIGTERM or SIGINT, starting controlled shutdown")
    broker.stopping.set()
    broker.state.fence(broker.node_id)  # controlled shutdown: leave the cluster before closing sockets
    server.stop()
    LOG.info("[KafkaRaftServer nodeId=%s] shut down completed", broker.node_id)
    return 0


def _pid_alive(pid):
    """True for a running (or stopped) process; a killed one that its parent has not reaped yet (a zombie) is dead."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_for(condition, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    return condition()
