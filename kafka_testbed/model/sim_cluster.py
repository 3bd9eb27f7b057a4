"""The model engine of the test cluster: one ``python -m kafka_testbed broker`` process per node, sharing a metadata
store."""

import os
import secrets
import subprocess
import sys
import time
import uuid

from kafka_testbed import lanes, security
from kafka_testbed.kafka_libs import fetched_plugin_jar
from kafka_testbed.model.state import DEFAULT_CATCH_UP_MS, ClusterState
from kafka_testbed.nodes import (
    ADMIN_USER,
    CONTROLLER_LISTENER,
    HOST,
    STANDARD_AUTHORIZER,
    ClusterBase,
    ClusterError,
    answers,
    parse_size,
    principal_of,
    process_alive,
    security_protocol,
    tail,
)


def _package_env():
    env = dict(os.environ)
    # The directory holding the kafka_testbed package, for the brokers' python -m kafka_testbed.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


class SimCluster(ClusterBase):
    """The model: each node a ``python -m kafka_testbed broker`` process; shared metadata in ``metadata_dir``."""

    engine = "sim"

    @property
    def state(self):
        return ClusterState(self.info["metadata_dir"])

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
        catch_up_ms=DEFAULT_CATCH_UP_MS,
        extra_properties=None,
        combined=0,
        controllers_only=0,
    ):
        """Write the configs of ``brokers`` broker nodes (ids 1..brokers, the first ``combined`` of them also
        controllers) and ``controllers_only`` controller nodes (the ids after them) and format the cluster metadata."""
        lanes.require_lane(lanes.MODEL_CLUSTER)
        self._check_layout(brokers, log_dirs_per_broker, combined, controllers_only)
        os.makedirs(self.directory, exist_ok=True)
        metadata_dir = os.path.join(self.directory, "metadata")
        self.info = {
            "engine": self.engine,
            "directory": self.directory,
            "metadata_dir": metadata_dir,
            "brokers": [],
            "volumes": [],
            "notes": [],
            # Where a real broker of this layout would find the plugin (the roles check a broker's libs directory);
            # None until the jars were fetched.
            "quota_plugin_jar": fetched_plugin_jar(),
        }
        nodes = [(index + 1, ["broker", "controller"] if index < combined else ["broker"]) for index in range(brokers)]
        nodes += [(brokers + index + 1, ["controller"]) for index in range(controllers_only)]
        # Controller listeners take the ports after the client ports, in node id order.
        controller_ports = {
            node_id: base_port + brokers + index
            for index, node_id in enumerate(node_id for node_id, roles in nodes if "controller" in roles)
        }
        voters = [
            {
                "id": node_id,
                "directory_id": str(uuid.uuid4()),
                "endpoints": [{"name": CONTROLLER_LISTENER, "host": HOST, "port": port}],
            }
            for node_id, port in controller_ports.items()
        ]
        # kafka-storage format --initial-controllers: the voter set of a dynamic quorum is in the formatted metadata.
        min_insync = str((extra_properties or {}).get("min.insync.replicas", "1"))  # the nodes' static value
        cluster_id = ClusterState(metadata_dir).format(
            catch_up_ms=catch_up_ms, voters=voters, min_insync_replicas=min_insync
        )
        self.info["cluster_id"] = cluster_id
        protocol = security_protocol(tls, scram)
        self.info["security_protocol"] = protocol
        common = self._security_settings(tls, scram, client_auth)
        quorum = {}
        if voters:
            self.info["controller_quorum_bootstrap_servers"] = ",".join(
                f"{HOST}:{port}" for port in controller_ports.values()
            )
            quorum = {
                "controller.listener.names": CONTROLLER_LISTENER,
                "controller.quorum.bootstrap.servers": self.info["controller_quorum_bootstrap_servers"],
            }
        size = parse_size(volume_size) if volume_size else None
        for node_id, roles in nodes:
            self._create_node(
                node_id,
                roles,
                base_port + node_id - 1,
                controller_ports.get(node_id),
                metadata_dir,
                protocol,
                {
                    "tls": tls,
                    "size": size,
                    "log_dirs": log_dirs_per_broker,
                    "common": common,
                    "quorum": quorum,
                    "extra": extra_properties,
                },
            )
        self.info["bootstrap_servers"] = self._bootstrap_servers()
        self.info.update(common.get("client", {}))
        self.save()

    def _create_node(self, node_id, roles, port, controller_port, metadata_dir, protocol, options):
        """One node's directories and server.properties, as Kafka 4.x configures a broker, combined or controller
        node."""
        is_broker = "broker" in roles
        home, log_dirs = self._node_home(node_id, is_broker, options["log_dirs"], options["size"])
        protocols = ([f"CLIENT:{protocol}"] if is_broker else []) + (
            [f"{CONTROLLER_LISTENER}:PLAINTEXT"] if options["quorum"] else []
        )
        props = self._listener_properties(node_id, roles, port, controller_port, protocols)
        props.update(options["quorum"])
        if is_broker:
            props["log.dirs"] = ",".join(log_dirs)
        props.update(
            {
                "metadata.log.dir": metadata_dir,
                "broker.session.timeout.ms": "3000",
                "broker.heartbeat.interval.ms": "500",
                "num.partitions": "1",
                "default.replication.factor": "1",
                "min.insync.replicas": "1",
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
                "pid": None,
                "log_file": os.path.join(home, "broker.log"),
                "roles": roles,
                "controller_port": controller_port,
            }
        )

    def _security_settings(self, tls, scram, client_auth):
        broker, client = {}, {}
        if tls:
            broker.update(self._tls_broker_settings(client_auth))
            client["tls"] = self.info["tls"]
        super_users = []
        if tls and client_auth == "required" and not scram:
            super_users.append(principal_of(self.info["tls"]["cert"]))
        if scram:
            password = secrets.token_urlsafe(18)
            for mechanism in security.MECHANISMS:
                add_scram_user(self.info["metadata_dir"], ADMIN_USER, password, mechanism)
            broker.update(
                {
                    "sasl.enabled.mechanisms": ",".join(security.MECHANISMS),
                    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                }
            )
            client["sasl"] = {"mechanism": "SCRAM-SHA-512", "username": ADMIN_USER, "password": password}
            super_users.append(f"User:{ADMIN_USER}")
        if super_users:
            broker.update({"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": ";".join(super_users)})
        return {"broker": broker, "client": client}

    # -- processes ------------------------------------------------------------------------------------------------
    def start(self, node_id, timeout=30.0):
        entry = self.broker(node_id)
        if entry.get("pid") and process_alive(entry["pid"]):
            raise ClusterError(f"broker {node_id} is already running (pid {entry['pid']})")
        self._launch(entry)
        self.save()
        self.wait_ready([entry], timeout)

    def _launch(self, entry):
        lanes.require_lane(lanes.MODEL_CLUSTER)
        with open(entry["log_file"], "ab") as log:
            process = subprocess.Popen(  # pylint: disable=consider-using-with  # the broker outlives this command
                [sys.executable, "-m", "kafka_testbed", "broker", "--config", entry["properties"]],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=_package_env(),
            )
        entry["pid"] = process.pid
        entry["started_at"] = time.time()

    def up(self, timeout=60.0):
        for entry in self.info["brokers"]:
            self._launch(entry)
        self.save()
        try:
            self.wait_ready(self.info["brokers"], timeout)
        except ClusterError:
            self.down()
            raise

    def wait_ready(self, entries, timeout):
        """Wait until every broker is registered under its current pid and answers ApiVersions on its port."""
        deadline = time.monotonic() + timeout
        pending = list(entries)
        while pending:
            registrations = self.state.registrations(3000)
            for entry in list(pending):
                if not process_alive(entry["pid"]):
                    raise ClusterError(f"broker {entry['id']} exited during startup:\n{tail(entry['log_file'])}")
                registration = registrations.get(entry["id"])
                if registration and registration["pid"] == entry["pid"] and answers(entry["host"], entry["port"]):
                    pending.remove(entry)
            if pending and time.monotonic() > deadline:
                ids = ", ".join(str(e["id"]) for e in pending)
                raise ClusterError(f"brokers {ids} did not answer within {timeout:.0f}s")
            if pending:
                time.sleep(0.05)

    def stop(self, node_id, timeout=15.0):
        entry = self.broker(node_id)
        if not entry.get("pid") or not process_alive(entry["pid"]):
            return
        self._terminate(entry, timeout)
        if not process_alive(entry["pid"]):
            self.state.fence(entry["id"])  # a broker killed after the grace period never completed its shutdown

    def offline_log_dir(self, node_id, path=None):
        """Take a log dir away from a running broker: unmount its volume, or hide the directory."""
        entry = self.broker(node_id)
        if not entry["log_dirs"]:
            raise ClusterError(f"node {node_id} is a controller only and has no log dirs")
        path = os.path.abspath(path or entry["log_dirs"][0])
        if path not in entry["log_dirs"]:
            raise ClusterError(
                f"--log-dir {path} is not a log dir of broker {node_id} ({', '.join(entry['log_dirs'])})"
            )
        mounted = [v for v in self.info.get("volumes", []) if v["path"] == path]
        if mounted and os.path.ismount(path):
            subprocess.run(["umount", "-l", path], capture_output=True, check=True)
            self.info["volumes"].remove(mounted[0])
            self.save()
        else:
            faults = self.state.faults(entry["id"]).get("offline_log_dirs", [])
            self.state.set_fault(entry["id"], "offline_log_dirs", sorted(set(faults) | {path}))

    def status(self):
        self._reload()
        registrations = self.state.registrations(3000)
        rows = []
        for entry in self.info["brokers"]:
            running = bool(entry.get("pid")) and process_alive(entry["pid"])
            registration = registrations.get(entry["id"])
            rows.append(
                {
                    "id": entry["id"],
                    "port": entry["port"],
                    "pid": entry.get("pid"),
                    "running": running,
                    "in_cluster": bool(
                        registration and registration["alive"] and registration["pid"] == entry.get("pid")
                    ),
                }
            )
        return rows

    def active_controller(self):
        """Node id of the quorum leader the model elected, or None."""
        return self.state.read()["quorum"].get("leader")

    def add_scram_user(self, username, password, mechanism):
        add_scram_user(self.info["metadata_dir"], username, password, mechanism)

    @staticmethod
    def ports_needed(brokers, combined=0, controllers_only=0):
        """Client ports, then the controller listeners of combined and controller-only nodes."""
        return brokers + combined + controllers_only


def add_scram_user(metadata_dir, username, password, mechanism):
    credential = security.scram_credential(password, mechanism)
    ClusterState(metadata_dir).update(lambda s: s["scram"].setdefault(username, {}).__setitem__(mechanism, credential))
