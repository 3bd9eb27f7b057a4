"""A fleet of test hosts running real Kafka under systemd: ``HostFleet(directory)``.

Each node is a container from ``image.kafka_image``: systemd as PID 1, sshd, Kafka in the Apache layout started by
``kafka.service``, each data log dir its own tmpfs of ``volume_size`` (so that it really fills) and
``metadata.log.dir`` on another. The fleet writes ``DIR/inventory.yml`` (SSH with a key of its own, a non-root user
with sudo) and ``DIR/cluster.json`` in the local test cluster's format, so the test helpers that read a cluster
(clients, traffic, ``unfenced_brokers``) work on it unchanged.
"""

import concurrent.futures
import hashlib
import os
import subprocess
import time

from kafka_testbed import lanes, properties, security, test_run
from kafka_testbed.hosts import image
from kafka_testbed.hosts.docker import docker, stop_daemon_if_started
from kafka_testbed.hosts.inventory import render_inventory
from kafka_testbed.kafka_cluster import STARTED, KafkaCluster, new_cluster_id, small_node_properties
from kafka_testbed.kafka_libs import ensure_libs
from kafka_testbed.nodes import ADMIN_USER, CONTROLLER_LISTENER, ClusterError, parse_size, security_protocol

CLIENT_PORT = 9092
CONTROLLER_PORT = 9093
METRICS_PORT = 7071
DATA_ROOT = "/var/lib/kafka"
METADATA_DIR = f"{DATA_ROOT}/metadata"
METADATA_VOLUME_SIZE = 64 << 20
TLS_DIR = f"{image.KAFKA_CONFIG_DIR}/tls"
# The storage tool logs through the node's own Log4j2 configuration.
_LOG4J_OPTS = f"-Dlog4j2.configurationFile={image.KAFKA_CONFIG_DIR}/log4j2.properties"
# What systemd needs to run as PID 1 here: --privileged is refused by this sandbox, these options are enough.
SYSTEMD_RUN_OPTIONS = [
    "--cap-add",
    "SYS_ADMIN",
    "--cap-add",
    "NET_ADMIN",
    "--security-opt",
    "seccomp=unconfined",
    "--security-opt",
    "apparmor=unconfined",
    "-v",
    "/sys/fs/cgroup:/sys/fs/cgroup:rw",
    "--tmpfs",
    "/run",
    "--tmpfs",
    "/run/lock",
    "-e",
    "container=docker",
]
LABEL = "headroom.fleet"


def _parallel(function, items):
    """``function`` on every item at once (docker exec calls wait on containers, not on this machine's cores)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(items))) as pool:
        return list(pool.map(function, items))


class HostFleet(KafkaCluster):
    """Kafka nodes on test hosts; ``info['brokers']`` lists every node as the local test cluster does."""

    engine = "hosts"
    shutdown_timeout = 60.0

    # -- the containers -------------------------------------------------------------------------------------------
    @property
    def fleet_id(self):
        return hashlib.sha256(self.directory.encode()).hexdigest()[:8]

    def exec(self, node_id, *command, user=None, check=True, input_text=None, timeout=120.0):
        """Run ``command`` on a node's host (as root unless ``user``); returns its standard output."""
        options = ["-i"] if input_text is not None else []
        if user:
            options += ["-u", user]
        return docker(
            "exec",
            *options,
            self._container(node_id),
            *command,
            check=check,
            input_text=input_text,
            timeout=timeout,
        )

    def _container(self, node_id):
        """A node's container, from this object's info (a node's container never changes; no need to read the file
        again, and during creation the file lags what this object holds)."""
        for entry in self.info["brokers"]:
            if entry["id"] == int(node_id):
                return entry["container"]
        raise ClusterError(f"no node {node_id} in {self.path}")

    def put_file(self, node_id, path, text, owner="root", mode="0644"):
        self.exec(
            node_id,
            "sh",
            "-c",
            f'umask 077 && cat > "$1" && chown {owner}:{owner} "$1" && chmod {mode} "$1"',
            "put_file",
            path,
            input_text=text,
        )

    def systemctl(self, node_id, *args, check=True):
        return self.exec(node_id, "systemctl", *args, check=check)

    def unit_property(self, node_id, unit, name):
        """A property of a systemd unit on a node's host, as ``systemctl show -p NAME --value`` prints it."""
        return self.systemctl(node_id, "show", "-p", name, "--value", unit).strip()

    def path_exists(self, node_id, path):
        """Whether ``path`` exists on a node's host (handed to the shell as an argument, never in its text)."""
        return self.exec(node_id, "sh", "-c", 'test -e "$1" && echo yes || echo no', "exists", path).strip() == "yes"

    def main_process_started(self, node_id):
        """When the node's unit last started its main process, in this machine's monotonic seconds (a container shares
        the kernel's monotonic clock): restarts can be lined up with what a client on this machine saw."""
        service = self.broker(node_id)["service"]
        text = self.systemctl(node_id, "show", service, "--property", "ExecMainStartTimestampMonotonic")
        return int(text.strip().split("=", 1)[1]) / 1e6

    def journal(self, node_id, lines=40, unit=image.KAFKA_SERVICE, since=None, output=None):
        """The unit's journal on the host: its last ``lines`` (None: all), from ``since`` (seconds since the epoch) on
        when given, in journalctl's ``output`` format when given."""
        args = ["journalctl", "-u", unit, "--no-pager"]
        if lines is not None:
            args += ["-n", str(lines)]
        if since is not None:
            args += ["--since", f"@{int(since)}"]
        if output is not None:
            args += ["-o", output]
        return self.exec(node_id, *args, check=False)

    def _run_container(self, name, tag, volumes, read_only_paths=()):
        mounts = []
        for path, size in volumes:
            mounts += ["--mount", f"type=tmpfs,destination={path},tmpfs-size={size}"]
        for path in read_only_paths:
            mounts += ["--mount", f"type=bind,source={path},destination={path},readonly"]
        docker(
            "run",
            "-d",
            "--name",
            name,
            "--hostname",
            name.split("-", 2)[2],
            "--label",
            f"{LABEL}={self.directory}",
            *test_run.container_labels(),
            *SYSTEMD_RUN_OPTIONS,
            *mounts,
            "--network",
            self.network,
            tag,
            "/lib/systemd/systemd",
        )
        return docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name).strip()

    @property
    def network(self):
        return f"headroom-{self.fleet_id}"

    def _create_network(self):
        """A bridge network of the fleet's own: its addresses are never an earlier fleet's (a node that kept the
        address of a removed one would take a new fleet's connections), and no other container shares it."""
        docker("network", "create", "--label", f"{LABEL}={self.directory}", *test_run.container_labels(), self.network)

    def _wait_booted(self, entry, timeout=60.0):
        deadline = time.monotonic() + timeout
        while True:
            state = docker("exec", entry["container"], "systemctl", "is-system-running", check=False).strip()
            if state in ("running", "degraded"):
                if state == "degraded":
                    failed = docker("exec", entry["container"], "systemctl", "--failed", "--no-legend", check=False)
                    entry.setdefault("boot_notes", []).append(failed.strip())
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"host {entry['inventory_host']}: systemd is {state!r} after {timeout:.0f}s")
            time.sleep(0.2)

    # -- creation -------------------------------------------------------------------------------------------------
    def up_fleet(  # pylint: disable=too-many-arguments,too-many-locals
        self,
        brokers=3,
        controllers=1,
        volume_size="64M",
        log_dirs_per_broker=1,
        tls=False,
        scram=False,
        extra_properties=None,
        timeout=180.0,
        inventory_layout="headroom",
        read_only_paths=(),
    ):
        """Start ``brokers`` broker hosts (ids 1..brokers) and ``controllers`` controller-only hosts after them, with
        Kafka formatted, started by systemd and every broker registered unfenced; writes inventory.yml.
        ``read_only_paths``: directories of this machine every host sees read-only at the same path (a Python with
        PySpark, for a test that runs the usage pipeline on a host)."""
        lanes.require_lane(lanes.HOST_FLEET)
        if self.info is not None and self.info.get("brokers"):
            raise ClusterError(f"a fleet is already described in {self.path}; run 'hosts down' first")
        if brokers < 1 or controllers < 1 or log_dirs_per_broker < 1:
            raise ClusterError(
                f"--brokers ({brokers}), --controllers ({controllers}) and log dirs per broker "
                f"({log_dirs_per_broker}) must each be at least 1"
            )
        size = parse_size(volume_size)
        timings = {}
        started = time.monotonic()
        os.makedirs(self.directory, exist_ok=True)
        libs = ensure_libs()
        tag = image.ready_image(libs, timings)
        timings["image_seconds"] = round(time.monotonic() - started, 1)
        self.info = {
            "engine": self.engine,
            "kafka_version": libs.version,
            "directory": self.directory,
            "image": tag,
            "brokers": [],
            "volumes": [],
            "notes": [],
            "cluster_id": new_cluster_id(),
            "security_protocol": security_protocol(tls, scram),
            "timings": timings,
        }
        nodes = [(i + 1, ["broker"]) for i in range(brokers)] + [
            (brokers + i + 1, ["controller"]) for i in range(controllers)
        ]
        self.save()
        try:
            boot_started = time.monotonic()
            self._create_network()
            _parallel(
                lambda node: self._create_host(node[0], node[1], tag, size, log_dirs_per_broker, read_only_paths), nodes
            )
            self.info["brokers"].sort(key=lambda entry: entry["id"])
            _parallel(self._wait_booted, self.info["brokers"])
            self.save()
            self._configure(tls, scram, extra_properties or {})
            self._ssh_access()
            timings["hosts_boot_seconds"] = round(time.monotonic() - boot_started, 1)
            kafka_started = time.monotonic()
            _parallel(
                lambda entry: self.systemctl(entry["id"], "enable", "--now", image.KAFKA_SERVICE), self.info["brokers"]
            )
            self.wait_ready(self.info["brokers"], timeout)
            timings["kafka_start_seconds"] = round(time.monotonic() - kafka_started, 1)
        except BaseException:
            self.down()
            raise
        timings["total_seconds"] = round(time.monotonic() - started, 1)
        self.save()
        self.write_inventory(layout=inventory_layout)

    def _create_host(self, node_id, roles, tag, size, log_dirs_per_broker, read_only_paths):
        is_broker = "broker" in roles
        name = f"{'broker' if is_broker else 'controller'}-{node_id}"
        log_dirs = [f"{DATA_ROOT}/data-{k}" for k in range(log_dirs_per_broker)] if is_broker else []
        volumes = [(path, size) for path in log_dirs] + [(METADATA_DIR, METADATA_VOLUME_SIZE)]
        container = f"headroom-{self.fleet_id}-{name}"
        address = self._run_container(container, tag, volumes, read_only_paths)
        self.info["brokers"].append(
            {
                "id": node_id,
                "inventory_host": name,
                "container": container,
                "host": address,
                "port": CLIENT_PORT if is_broker else CONTROLLER_PORT,
                "controller_port": None if is_broker else CONTROLLER_PORT,
                "properties": image.KAFKA_PROPERTIES,
                "log_dirs": log_dirs,
                "metadata_dir": METADATA_DIR,
                "roles": roles,
                "service": image.KAFKA_SERVICE,
                "metrics_port": METRICS_PORT,
                "metrics_url": f"http://{address}:{METRICS_PORT}/metrics",
            }
        )

    def _bootstrap_servers(self):
        return ",".join(f"{entry['host']}:{entry['port']}" for entry in self.broker_nodes)

    def _configure(self, tls, scram, extra):
        """Every node's server.properties (the quorum and addresses are known once the hosts have theirs), then
        kafka-storage format on every node with one cluster id."""
        controllers = [entry for entry in self.info["brokers"] if "controller" in entry["roles"]]
        self.info["controller_quorum_voters"] = ",".join(
            f"{e['id']}@{e['host']}:{CONTROLLER_PORT}" for e in controllers
        )
        self.info["bootstrap_servers"] = self._bootstrap_servers()
        common = self._security_settings(tls, scram, "required", [e["id"] for e in self.broker_nodes])
        self.info.update(common["client"])
        for entry in self.info["brokers"]:
            props = self._node_properties(entry, common["broker"], tls)
            props.update(extra)
            self.put_file(entry["id"], entry["properties"], properties.render(props), owner="kafka", mode="0600")
            self.exec(entry["id"], "chown", "kafka:kafka", *entry["log_dirs"], entry["metadata_dir"])
        self.save()
        args = ["format", "-t", self.info["cluster_id"], "-c", image.KAFKA_PROPERTIES, "--ignore-formatted"]
        for mechanism in security.MECHANISMS if scram else ():
            args += ["--add-scram", f"{mechanism}=[name={ADMIN_USER},password={common['scram_password']}]"]

        def format_node(entry):
            result = subprocess.run(
                [
                    "docker",
                    "exec",
                    "-u",
                    "kafka",
                    "-e",
                    f"KAFKA_LOG4J_OPTS={_LOG4J_OPTS}",
                    entry["container"],
                    f"{image.KAFKA_HOME}/bin/kafka-storage.sh",
                    *args,
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=120,
            )
            if result.returncode != 0:
                output = (result.stdout + result.stderr).strip().splitlines()
                raise ClusterError(
                    f"kafka-storage format on {entry['inventory_host']} failed:\n" + "\n".join(output[-15:])
                )

        _parallel(format_node, self.info["brokers"])

    def _node_properties(self, entry, security_settings, tls):
        is_broker = "broker" in entry["roles"]
        listeners = [f"CLIENT://0.0.0.0:{CLIENT_PORT}"] if is_broker else []
        if "controller" in entry["roles"]:
            listeners.append(f"{CONTROLLER_LISTENER}://0.0.0.0:{CONTROLLER_PORT}")
        protocols = ([f"CLIENT:{self.info['security_protocol']}"] if is_broker else []) + [
            f"{CONTROLLER_LISTENER}:PLAINTEXT"
        ]
        props = {
            "node.id": str(entry["id"]),
            "process.roles": ",".join(entry["roles"]),
            "listeners": ",".join(listeners),
            "listener.security.protocol.map": ",".join(protocols),
            "controller.listener.names": CONTROLLER_LISTENER,
            "controller.quorum.voters": self.info["controller_quorum_voters"],
            "log.dirs": ",".join(entry["log_dirs"]) if entry["log_dirs"] else entry["metadata_dir"],
            "metadata.log.dir": entry["metadata_dir"],
        }
        if is_broker:
            props.update(
                {
                    "advertised.listeners": f"CLIENT://{entry['host']}:{CLIENT_PORT}",
                    "inter.broker.listener.name": "CLIENT",
                }
            )
        props.update(small_node_properties())
        props.update(internal_topic_replication(len([e for e in self.info["brokers"] if "broker" in e["roles"]])))
        props.update(security_settings)
        if tls and is_broker:
            props.update(self._host_tls(entry))
        return props

    def _host_tls(self, entry):
        """The node's PEM keystore (its address in the certificate) and the CA, copied onto its host."""
        tls = self.info["tls"]
        material = security.make_certificate(
            os.path.dirname(tls["ca"]),
            entry["inventory_host"],
            tls["ca"],
            tls["ca_key"],
            entry["inventory_host"],
            sans=(entry["inventory_host"], entry["host"]),
            server=True,
            client=True,
        )
        self.exec(entry["id"], "install", "-d", "-o", "kafka", "-g", "kafka", "-m", "0700", TLS_DIR)
        with open(material["chain"], encoding="utf-8") as handle:
            self.put_file(entry["id"], f"{TLS_DIR}/keystore.pem", handle.read(), owner="kafka", mode="0600")
        with open(tls["ca"], encoding="utf-8") as handle:
            self.put_file(entry["id"], f"{TLS_DIR}/ca.pem", handle.read(), owner="kafka", mode="0644")
        return {"ssl.keystore.location": f"{TLS_DIR}/keystore.pem", "ssl.truststore.location": f"{TLS_DIR}/ca.pem"}

    def _ssh_access(self):
        """A key of the fleet's own for the admin user on every host, and the hosts' keys in a known_hosts file."""
        ssh_dir = os.path.join(self.directory, "ssh")
        os.makedirs(ssh_dir, mode=0o700, exist_ok=True)
        key = os.path.join(ssh_dir, "id_ed25519")
        if not os.path.exists(key):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"headroom-fleet-{self.fleet_id}", "-f", key],
                check=True,
            )
        with open(key + ".pub", encoding="utf-8") as handle:
            public = handle.read()
        known = []
        home = f"/home/{image.ADMIN_USER}"
        for entry in self.info["brokers"]:
            self.exec(
                entry["id"],
                "install",
                "-d",
                "-o",
                image.ADMIN_USER,
                "-g",
                image.ADMIN_USER,
                "-m",
                "0700",
                f"{home}/.ssh",
            )
            self.put_file(entry["id"], f"{home}/.ssh/authorized_keys", public, owner=image.ADMIN_USER, mode="0600")
            host_key = self.exec(entry["id"], "cat", "/etc/ssh/ssh_host_ed25519_key.pub").split()
            known.append(f"{entry['host']} {host_key[0]} {host_key[1]}\n")
        properties.write_atomic(os.path.join(ssh_dir, "known_hosts"), "".join(known), mode=0o600)
        self.info["ssh"] = {"user": image.ADMIN_USER, "key": key, "known_hosts": os.path.join(ssh_dir, "known_hosts")}

    def write_inventory(self, path=None, layout="headroom"):
        """The fleet's inventory at ``path`` (default: ``DIR/inventory.yml``, recorded in cluster.json)."""
        default = os.path.join(self.directory, "inventory.yml")
        properties.write_atomic(path or default, render_inventory(self.info, layout), mode=0o600)
        if path is None or path == default:
            self.info["inventory"] = default
            self.save()
        return path or default

    # -- processes ------------------------------------------------------------------------------------------------
    def unit_active(self, entry):
        return (
            docker("exec", entry["container"], "systemctl", "is-active", entry["service"], check=False).strip()
            == "active"
        )

    @property
    def running_broker_nodes(self):
        return [entry for entry in self.broker_nodes if self.unit_active(entry)]

    def _started(self, entry):
        since = entry.get("started_at")
        args = ["journalctl", "-u", entry["service"], "--no-pager", "-o", "cat"]
        if since:
            args += ["--since", f"@{int(since)}"]
        return STARTED in docker("exec", entry["container"], *args, check=False)

    def wait_ready(self, entries, timeout):
        """Every node's unit active with Kafka started, every broker registered unfenced; a unit that failed is
        reported with the last lines of its journal at once."""
        deadline = time.monotonic() + timeout
        pending = list(entries)
        while pending:
            for entry in list(pending):
                state = docker("exec", entry["container"], "systemctl", "is-active", entry["service"], check=False)
                if state.strip() in ("failed", "inactive"):
                    raise ClusterError(
                        f"{entry['service']}.service on {entry['inventory_host']} is {state.strip()}:\n"
                        + self.journal(entry["id"], 30)
                    )
                if self._started(entry):
                    pending.remove(entry)
            if pending and time.monotonic() > deadline:
                raise ClusterError(
                    f"hosts {', '.join(e['inventory_host'] for e in pending)} did not start Kafka within "
                    f"{timeout:.0f}s:\n" + self._journals(pending, entries)
                )
            if pending:
                time.sleep(0.3)
        brokers = {e["id"] for e in entries if "broker" in e["roles"]}
        while brokers - self.unfenced_brokers():
            if time.monotonic() > deadline:
                missing = sorted(brokers - self.unfenced_brokers())
                raise ClusterError(f"brokers {missing} started but are not registered unfenced after {timeout:.0f}s")
            time.sleep(0.2)

    def _journals(self, pending, entries):
        """The last lines of every pending node's journal, and of the controllers it waits on (a broker that cannot
        register shows only its own side)."""
        controllers = [e for e in entries if "controller" in e["roles"] and e not in pending]
        return "\n".join(
            f"-- {e['inventory_host']} ({e['host']}):\n" + self.journal(e["id"], 20 if e in pending else 8)
            for e in pending + controllers
        )

    def start(self, node_id, timeout=90.0):
        entry = self.broker(node_id)
        entry["started_at"] = time.time() - 1
        self.save()
        self.systemctl(node_id, "start", entry["service"])
        self.wait_ready([entry], timeout)

    def stop(self, node_id, timeout=None):
        self.systemctl(node_id, "stop", self.broker(node_id)["service"])

    def restart(self, node_id):
        self.stop(node_id)
        self.start(node_id)

    def kill(self, node_id):
        entry = self.broker(node_id)
        self.systemctl(node_id, "kill", "-s", "SIGKILL", entry["service"])

    # -- faults on a host -----------------------------------------------------------------------------------------
    def free_bytes(self, node_id, log_dir=None):
        """The bytes an unprivileged writer may still put on a broker's data volume (its first, by default)."""
        log_dir = log_dir or self.broker(node_id)["log_dirs"][0]
        available, block = map(int, self.exec(node_id, "stat", "-f", "-c", "%a %S", log_dir).split())
        return available * block

    def fill_volume(self, node_id, log_dir=None, leave_bytes=0):
        """Fill a broker's data volume up to ``leave_bytes`` free (a file the kafka user cannot see into)."""
        log_dir = log_dir or self.broker(node_id)["log_dirs"][0]
        size = self.free_bytes(node_id, log_dir) - leave_bytes
        if size <= 0:  # already no more than that free: nothing to write (fallocate refuses a length of 0)
            return 0
        self.exec(node_id, "fallocate", "-l", str(size), f"{log_dir}/.headroom-fill")
        return size

    def free_volume(self, node_id, log_dir=None):
        entry = self.broker(node_id)
        self.exec(node_id, "rm", "-f", f"{log_dir or entry['log_dirs'][0]}/.headroom-fill")

    def cut_network(self, node_id):
        self.exec(node_id, "ip", "link", "set", "eth0", "down")

    def restore_network(self, node_id):
        self.exec(node_id, "ip", "link", "set", "eth0", "up")

    # -- teardown -------------------------------------------------------------------------------------------------
    def down(self):
        """Remove every container and the network of this fleet (whatever cluster.json says) and stop a daemon started
        for it."""
        containers = docker("ps", "-aq", "--filter", f"label={LABEL}={self.directory}", check=False).split()
        if containers:
            docker("rm", "-f", "-v", *containers, check=False, timeout=120)
        networks = docker("network", "ls", "-q", "--filter", f"label={LABEL}={self.directory}", check=False).split()
        if networks:
            docker("network", "rm", *networks, check=False)
        if self.info is not None:
            self.info["brokers"] = []
            self.save()
        stop_daemon_if_started(image.IMAGE_DIR)

    def status(self):
        self._reload()
        unfenced = self.unfenced_brokers()
        return [
            {
                "id": entry["id"],
                "host": entry["inventory_host"],
                "address": entry["host"],
                "unit_active": self.unit_active(entry),
                "in_cluster": entry["id"] in unfenced if "broker" in entry["roles"] else self.unit_active(entry),
                "roles": entry["roles"],
            }
            for entry in self.info["brokers"]
        ]


def internal_topic_replication(brokers):
    """Kafka's own topics replicated as on a production cluster of this many brokers (three replicas, two in sync, at
    most one replica per broker): a consumer's offsets topic of one replica would keep a broker from stopping under the
    rolling restart's min.insync.replicas check, as it would keep a real cluster's broker."""
    replicas = min(3, max(brokers, 1))
    in_sync = str(min(2, replicas))
    return {
        "offsets.topic.replication.factor": str(replicas),
        "transaction.state.log.replication.factor": str(replicas),
        "transaction.state.log.min.isr": in_sync,
        "share.coordinator.state.topic.replication.factor": str(replicas),
        "share.coordinator.state.topic.min.isr": in_sync,
    }
