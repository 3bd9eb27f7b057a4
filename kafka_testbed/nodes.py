"""What both engines of the test cluster share: ``cluster.json``, node processes, volumes and errors."""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

from kafka_testbed import properties, security, test_run

CLUSTER_FILE = "cluster.json"
HOST = "127.0.0.1"
ADMIN_USER = "admin"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CONTROLLER_LISTENER = "CONTROLLER"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class ClusterError(Exception):
    """A cluster operation failed; the message says what happened and what state the cluster is in."""


def parse_size(text):
    text = str(text).strip().upper().rstrip("B").rstrip("I")
    unit = text[-1] if text and text[-1] in _UNITS else ""
    number = text[:-1] if unit else text
    try:
        value = int(float(number) * _UNITS[unit])
    except ValueError:
        raise ClusterError(f"--volume-size {text!r} is not a size such as 64M or 1G") from None
    if value < 1 << 20:
        raise ClusterError(f"--volume-size {text!r} is below 1M")
    return value


def process_alive(pid):
    """True for a running (or stopped) process; a zombie counts as dead."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError, PermissionError):
        return False


def descendants(pid):
    """{pid: command name} of every process below ``pid`` (Linux /proc; empty where there is none)."""
    children = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                stat = handle.read()
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append((int(entry), stat[stat.index("(") + 1 : stat.rindex(")")]))
    found, pending = {}, [pid]
    while pending:
        for child, name in children.get(pending.pop(), []):
            if child not in found:
                found[child] = name
                pending.append(child)
    return found


def wait_exit(pid, timeout):
    deadline = time.monotonic() + timeout
    while process_alive(pid):
        if time.monotonic() > deadline:
            return False
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.02)
    return True


def start_java(command, log_file):
    """Start a node's JVM in the background, in a session of its own (it outlives this command), its output appended
    to ``log_file``; returns (process, the log's offset where this run's lines begin)."""
    with open(log_file, "ab") as log:
        offset = log.tell()
        process = subprocess.Popen(  # pylint: disable=consider-using-with  # the node outlives this command
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=os.path.dirname(log_file),
        )
    return process, offset


def answers(host, port):
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


# Random port blocks start above the launcher's default ports (19092 up), which clusters started without
# --base-port (molecule's, the demo's) take.
RANDOM_PORTS_FROM = 20000


def ephemeral_port_range():
    """The kernel's range for outgoing connections' ports (first, last); Linux's default when it cannot be read."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="utf-8") as handle:
            low, high = (int(value) for value in handle.read().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def port_range(count):
    """Where to look for broker ports: below the kernel's ephemeral range if there is room, so that no outgoing
    connection takes a port between the check and the broker's bind."""
    low, high = ephemeral_port_range()
    if low - RANDOM_PORTS_FROM >= 100 * count:
        return RANDOM_PORTS_FROM, low - count
    if high + 100 * count < 65535:
        return high + 1, 65535 - count
    return RANDOM_PORTS_FROM, 60000 - count


def free_port_block(count, attempts=200, span=None):
    """A base port such that ``count`` consecutive loopback ports are free right now, drawn from ``span`` (first and
    last base port), else from ``port_range``."""
    first, last = span or port_range(count)
    for _ignored in range(attempts):
        base = random.randint(first, last)
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", port))
                sockets.append(sock)
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError(f"no block of {count} free ports found")


def tail(path, lines=20):
    """The last ``lines`` lines of a node's log, without Java stack frames (they would push the reason out)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            kept = [line for line in handle if not is_stack_frame(line)]
    except FileNotFoundError:
        return "(no log)"
    return "".join(kept[-lines:])


def is_stack_frame(line):
    stripped = line.lstrip()
    return stripped.startswith("at ") or (stripped.startswith("... ") and stripped.rstrip().endswith(" more"))


def principal_of(cert_path):
    """The principal Kafka's default SSL principal builder gives the holder of this certificate."""
    from cryptography import x509  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives.serialization import Encoding  # pylint: disable=import-outside-toplevel

    with open(cert_path, "rb") as handle:
        certificate = x509.load_pem_x509_certificate(handle.read())
    return security.principal_from_peer_cert(certificate.public_bytes(Encoding.DER))


def security_protocol(tls, scram):
    return {
        (False, False): "PLAINTEXT",
        (True, False): "SSL",
        (False, True): "SASL_PLAINTEXT",
        (True, True): "SASL_SSL",
    }[(tls, scram)]


class ClusterBase:
    """A cluster described by ``DIR/cluster.json``; the engines add how nodes are configured and started."""

    engine = None

    def __init__(self, directory):
        self.directory = os.path.abspath(directory)
        self.path = os.path.join(self.directory, CLUSTER_FILE)
        self.info = None
        self._reload()

    def _reload(self):
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as handle:
                self.info = json.load(handle)

    def save(self):
        properties.write_atomic(self.path, json.dumps(self.info, indent=2) + "\n", mode=0o600)

    @property
    def broker_nodes(self):
        """The entries of nodes with the broker role (``brokers`` also lists controller-only nodes)."""
        return [entry for entry in self.info["brokers"] if "broker" in entry["roles"]]

    @property
    def running_broker_nodes(self):
        """broker_nodes whose process is alive."""
        return [entry for entry in self.broker_nodes if entry.get("pid") and process_alive(entry["pid"])]

    def _bootstrap_servers(self):
        return ",".join(f"{HOST}:{entry['port']}" for entry in self.broker_nodes)

    def broker(self, node_id):
        """A node's entry, read afresh: another command (a role's restart) may have recorded a newer pid meanwhile."""
        self._reload()
        for entry in self.info["brokers"]:
            if entry["id"] == int(node_id):
                return entry
        raise ClusterError(
            f"--broker {node_id}: no such broker in {self.path} (brokers: "
            f"{', '.join(str(b['id']) for b in self.info['brokers'])})"
        )

    def _refuse_if_running(self):
        if self.info is not None and any(process_alive(b["pid"]) for b in self.info["brokers"] if b.get("pid")):
            raise ClusterError(f"a cluster is already running in {self.directory}; run 'down' first")

    def _check_layout(self, brokers, log_dirs_per_broker, combined, controllers_only):
        self._refuse_if_running()
        if brokers < 1 or log_dirs_per_broker < 1:
            raise ClusterError("--brokers and --log-dirs-per-broker must be at least 1")
        if not 0 <= combined <= brokers or controllers_only < 0:
            raise ClusterError(
                f"--combined must be between 0 and --brokers ({brokers}) and --controllers-only at least 0"
            )

    def _node_home(self, node_id, is_broker, log_dirs, size):
        """A node's directory and its data log dirs (each a volume of ``size`` bytes when given)."""
        home = os.path.join(self.directory, f"broker-{node_id}" if is_broker else f"controller-{node_id}")
        os.makedirs(home, exist_ok=True)
        paths = [os.path.join(home, f"logdir-{k}") for k in range(log_dirs)] if is_broker else []
        for path in paths:
            os.makedirs(path, exist_ok=True)
            if size:
                self._mount_volume(path, size)
        return home, paths

    @staticmethod
    def _listener_properties(node_id, roles, port, controller_port, protocols):
        """node.id, process.roles and the listeners of a node; ``protocols`` lists its listener:protocol pairs."""
        is_broker = "broker" in roles
        listeners = [f"CLIENT://{HOST}:{port}"] if is_broker else []
        if controller_port is not None:
            listeners.append(f"{CONTROLLER_LISTENER}://{HOST}:{controller_port}")
        props = {"node.id": str(node_id), "process.roles": ",".join(roles), "listeners": ",".join(listeners)}
        if is_broker:
            props.update({"advertised.listeners": f"CLIENT://{HOST}:{port}", "inter.broker.listener.name": "CLIENT"})
        props["listener.security.protocol.map"] = ",".join(protocols)
        return props

    def _write_node_config(self, home, node_id, is_broker, props, options):
        """The cluster's security settings, the node's keystore and the user's extra lines over ``props``, written
        as the node's server.properties (mode 0600: it may hold passwords); returns its path."""
        props.update(options["common"].get("broker", {}))
        if options["tls"] and is_broker:
            props["ssl.keystore.location"] = self._node_keystore(node_id)
        props.update(options["extra"] or {})
        config_path = os.path.join(home, "server.properties")
        properties.write_atomic(config_path, properties.render(props), mode=0o600)
        return config_path

    def _tls_broker_settings(self, client_auth):
        """A new CA and admin certificate, and the broker settings that trust them (PEM stores, client auth)."""
        ca_cert = self._tls_material()["ca"]
        return {
            "ssl.keystore.type": "PEM",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": ca_cert,
            "ssl.client.auth": client_auth,
            "ssl.endpoint.identification.algorithm": "https",
        }

    def _tls_material(self):
        """A CA and the admin client's certificate, in the cluster's tls/ directory (PEM)."""
        tls_dir = os.path.join(self.directory, "tls")
        os.makedirs(tls_dir, exist_ok=True)
        ca_cert, ca_key = security.make_ca(tls_dir)
        admin = security.make_certificate(tls_dir, "admin", ca_cert, ca_key, "admin", server=False, client=True)
        self.info["tls"] = {"ca": ca_cert, "ca_key": ca_key, "cert": admin["cert"], "key": admin["key"]}
        return self.info["tls"]

    def _node_keystore(self, node_id):
        """PEM keystore (key, certificate, CA) of a node, valid as server and as client (inter-broker TLS)."""
        tls = self.info["tls"]
        material = security.make_certificate(
            os.path.dirname(tls["ca"]),
            f"broker-{node_id}",
            tls["ca"],
            tls["ca_key"],
            f"broker-{node_id}",
            sans=("localhost", HOST),
            server=True,
            client=True,
        )
        return material["chain"]

    def _mount_volume(self, path, size):
        if os.path.ismount(path):
            return
        result = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", test_run.mount_source(), path],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode == 0:
            self.info["volumes"].append({"path": path, "size": size, "type": "tmpfs"})
        else:
            note = (
                f"cannot mount a {size}-byte filesystem on {path} ({result.stderr.strip() or 'mount failed'}); "
                "using a plain directory, so this log dir shares the host filesystem's space"
            )
            self.info["notes"].append(note)
            print(f"warning: {note}", file=sys.stderr)

    def _unmount_all(self):
        # Deepest paths first: a node's metadata volume may sit inside its home next to data volumes.
        for volume in sorted(self.info.get("volumes", []), key=lambda v: -len(v["path"])):
            subprocess.run(["umount", "-l", volume["path"]], capture_output=True, check=False)
        self.info["volumes"] = []

    def signal(self, node_id, signum):
        entry = self.broker(node_id)
        if not entry.get("pid") or not process_alive(entry["pid"]):
            raise ClusterError(f"broker {node_id} is not running")
        os.kill(entry["pid"], signum)
        return entry

    def kill(self, node_id):
        entry = self.signal(node_id, signal.SIGKILL)
        wait_exit(entry["pid"], 5)

    def _terminate(self, entry, timeout):
        """SIGTERM (a controlled shutdown), SIGKILL after ``timeout``; True when the node shut down by itself."""
        if not entry.get("pid") or not process_alive(entry["pid"]):
            return True
        os.kill(entry["pid"], signal.SIGCONT)  # a paused node must run to shut down
        os.kill(entry["pid"], signal.SIGTERM)
        if wait_exit(entry["pid"], timeout):
            return True
        os.kill(entry["pid"], signal.SIGKILL)
        wait_exit(entry["pid"], 5)
        return False

    def down(self):
        self._reload()  # another command (restart, start) may have recorded newer pids since this object read the file
        running = [e for e in self.info["brokers"] if e.get("pid") and process_alive(e["pid"])]
        self._shutdown(running)
        self._unmount_all()
        self.save()

    def _shutdown(self, entries):
        """SIGTERM to every node at once; whatever still runs at one shared deadline gets SIGKILL."""
        for entry in entries:
            os.kill(entry["pid"], signal.SIGCONT)
            os.kill(entry["pid"], signal.SIGTERM)
        deadline = time.monotonic() + self.down_timeout
        for entry in entries:
            if not wait_exit(entry["pid"], max(0.0, deadline - time.monotonic())):
                os.kill(entry["pid"], signal.SIGKILL)
                wait_exit(entry["pid"], 5)

    shutdown_timeout = 15.0  # one node's stop
    down_timeout = 15.0  # the whole cluster's down

    def restart(self, node_id):
        self.stop(node_id)
        self.start(node_id)
