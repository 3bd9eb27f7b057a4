"""Cluster metadata shared by the broker processes of one test cluster.

Stands in for the KRaft metadata quorum: one JSON document written atomically under a file
lock (topics, client quotas, SCRAM credentials, dynamic configs, the quorum's voters and leader) and
one registration file per broker whose modification time is its heartbeat. Everything survives
broker restarts.
"""

import base64
import fcntl
import json
import os
import time
import uuid

from kafka_testbed.properties import write_atomic

STATE_FILE = "cluster-state.json"
LOCK_FILE = "cluster-state.lock"
BROKERS_DIR = "brokers"
FAULTS_DIR = "faults"
DEFAULT_CATCH_UP_MS = 3000
NO_DIRECTORY_ID = "00000000-0000-0000-0000-000000000000"
# metadata.max.idle.interval.ms: the active controller appends a NoOpRecord this often when nothing else happens.
NOOP_INTERVAL_MS = 500


def new_cluster_id():
    """A Kafka cluster id: a random UUID in URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def now_ms():
    return int(time.time() * 1000)


def empty_state(cluster_id=None, catch_up_ms=DEFAULT_CATCH_UP_MS):
    return {
        "cluster_id": cluster_id or new_cluster_id(),
        "settings": {"replica_catch_up_ms": catch_up_ms},
        "topics": {},
        "client_quotas": {},
        "scram": {},
        "configs": {"broker": {}},
        "quorum": empty_quorum(),
    }


def empty_quorum():
    return {"voters": [], "directory_ids": {}, "leader": -1, "epoch": 0, "log_end_offset": 0}


class _CachedJson:
    """A JSON file re-read only when its identity (inode, size, mtime) changes."""

    def __init__(self, path):
        self.path = path
        self._stamp = None
        self._value = None

    def get(self, default):
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return default
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if stamp != self._stamp:
            with open(self.path, encoding="utf-8") as handle:
                self._value = json.load(handle)
            self._stamp = stamp
        return self._value


class ClusterState:
    """The shared metadata directory (Kafka key ``metadata.log.dir`` of every broker of the cluster)."""

    def __init__(self, directory):
        self.directory = os.path.abspath(directory)
        self._state = _CachedJson(os.path.join(self.directory, STATE_FILE))
        self._faults = {}
        self._registrations = {}

    # -- the document -----------------------------------------------------------------------
    def format(self, cluster_id=None, catch_up_ms=DEFAULT_CATCH_UP_MS, voters=None, min_insync_replicas="1"):
        """Create the metadata directory if it is new (``kafka-storage format``); return the cluster id.

        ``voters`` ([{id, directory_id, endpoints}]) are the initial controllers of a dynamic quorum
        (``--initial-controllers``), recorded as Kafka's VotersRecord. A new Kafka 4.x cluster has eligible leader
        replicas enabled (KIP-966), for which the controller records the static ``min.insync.replicas`` as a dynamic
        cluster-wide default."""
        os.makedirs(os.path.join(self.directory, BROKERS_DIR), exist_ok=True)
        os.makedirs(os.path.join(self.directory, FAULTS_DIR), exist_ok=True)

        def change(state):
            if voters is not None:
                set_voters(state, voters)
            state["configs"]["broker"].setdefault("", {}).setdefault("min.insync.replicas", min_insync_replicas)
            return state["cluster_id"]

        return self.update(change, cluster_id=cluster_id, catch_up_ms=catch_up_ms)

    def read(self):
        state = self._state.get(None)
        if state is None:
            raise FileNotFoundError(f"no cluster metadata in {self.directory}: format it first")
        return state

    def update(self, change, cluster_id=None, catch_up_ms=DEFAULT_CATCH_UP_MS):
        """Apply ``change(state)`` under the cluster lock and write the result atomically; return what change
        returned."""
        with open(os.path.join(self.directory, LOCK_FILE), "a+", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = os.path.join(self.directory, STATE_FILE)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as handle:
                    state = json.load(handle)
            else:
                state = empty_state(cluster_id, catch_up_ms)
            before = json.dumps(state, sort_keys=True)
            result = change(state)
            after = json.dumps(state, sort_keys=True)
            if after != before or not os.path.exists(path):
                write_atomic(path, after)
            return result

    # -- broker registrations -----------------------------------------------------------------
    def _registration_path(self, node_id):
        return os.path.join(self.directory, BROKERS_DIR, f"{node_id}.json")

    def register(self, registration):
        write_atomic(self._registration_path(registration["node_id"]), json.dumps(registration), mode=0o644)

    def heartbeat(self, node_id):
        try:
            os.utime(self._registration_path(node_id))
        except FileNotFoundError:
            pass

    def fence(self, node_id):
        """The node completed a controlled shutdown (or was found dead): it stays registered, fenced, as a KRaft
        controller keeps it (ReplicationControlManager: SHUTDOWN_NOW -> handleBrokerFenced); a new registration of
        the node, at its next start, unfences it."""
        path = self._registration_path(node_id)
        try:
            with open(path, encoding="utf-8") as handle:
                registration = json.load(handle)
        except (FileNotFoundError, ValueError):
            return
        registration["fenced"] = True
        write_atomic(path, json.dumps(registration), mode=0o644)

    def _registration(self, path):
        """A registration, parsed again only when the file was rewritten: a heartbeat changes only its mtime, and
        every broker reads every registration on every heartbeat, so parsing them all would cost O(brokers^2)."""
        st = os.stat(path)
        cached = self._registrations.get(path)
        if cached is None or cached[0] != (st.st_ino, st.st_size):
            with open(path, encoding="utf-8") as handle:
                cached = self._registrations[path] = ((st.st_ino, st.st_size), json.load(handle))
        return dict(cached[1])

    def registrations(self, session_timeout_ms):
        """Every registered node with ``alive``: not fenced by a shutdown and a heartbeat within the session timeout."""
        nodes = {}
        directory = os.path.join(self.directory, BROKERS_DIR)
        now = time.time()
        for name in os.listdir(directory):
            if not name.endswith(".json"):
                continue
            path = os.path.join(directory, name)
            try:
                registration = self._registration(path)
                age_ms = (now - os.stat(path).st_mtime) * 1000
            except (FileNotFoundError, ValueError):
                continue  # being rewritten right now
            registration["alive"] = age_ms <= session_timeout_ms and not registration.get("fenced")
            registration["heartbeat_ms"] = int((now * 1000) - age_ms)
            nodes[registration["node_id"]] = registration
        return nodes

    # -- fault injection ----------------------------------------------------------------------
    def _faults_path(self, node_id):
        return os.path.join(self.directory, FAULTS_DIR, f"{node_id}.json")

    def faults(self, node_id):
        cache = self._faults.get(node_id)
        if cache is None:
            cache = self._faults[node_id] = _CachedJson(self._faults_path(node_id))
        return cache.get({})

    def set_fault(self, node_id, name, value):
        path = self._faults_path(node_id)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        current = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                current = json.load(handle)
        if value is None:
            current.pop(name, None)
        else:
            current[name] = value
        write_atomic(path, json.dumps(current), mode=0o644)


# -- the KRaft quorum ------------------------------------------------------------------------------------------------
def quorum_of(state):
    """The quorum record of a state document (documents written before it existed get an empty one)."""
    quorum = state.setdefault("quorum", empty_quorum())
    for key, value in empty_quorum().items():
        quorum.setdefault(key, value)
    return quorum


def set_voters(state, voters):
    quorum = quorum_of(state)
    if [voter["id"] for voter in quorum["voters"]] != [voter["id"] for voter in voters]:
        quorum["leader"] = -1
    quorum["voters"] = voters
    for voter in voters:
        quorum["directory_ids"][str(voter["id"])] = voter["directory_id"]


def directory_id(state, node_id):
    """The directory id of a node's metadata log, assigned at its first start (meta.properties ``directory.id``)."""
    ids = quorum_of(state)["directory_ids"]
    return ids.setdefault(str(node_id), str(uuid.uuid4()))


def log_end_offset(quorum, at_ms):
    """End offset of the metadata log at ``at_ms``: each epoch starts with the leader's LeaderChangeMessage and the
    active controller appends a NoOpRecord every NOOP_INTERVAL_MS; without a leader the log does not grow."""
    if quorum["leader"] == -1:
        return quorum["log_end_offset"]
    return quorum["epoch_start_offset"] + 1 + max(0, at_ms - quorum["epoch_start_ms"]) // NOOP_INTERVAL_MS


def needs_election(quorum, voter_ids, alive):
    """True when the recorded leader no longer leads: it stopped, died, restarted (a new incarnation) or lost the
    majority (KRaft's check-quorum makes it resign), or there is no leader and a majority of voters is alive.

    ``alive``: {node id: registration} of the live nodes with the controller role."""
    up = [node_id for node_id in voter_ids if node_id in alive]
    majority = len(up) * 2 > len(voter_ids)
    leader = quorum["leader"]
    if leader == -1:
        return majority
    return not majority or leader not in up or alive[leader]["incarnation"] != quorum.get("leader_incarnation")


def elect(state, voter_ids, alive, nodes, now):
    """Run the quorum's election in the state document, under its lock; return a copy of the quorum record.

    The leader keeps leading while it is alive and a majority of voters is; otherwise it resigns, its epoch's log ends
    when it was last heard from, and the live voter with the lowest id wins the next epoch if a majority is alive."""
    quorum = quorum_of(state)
    if not needs_election(quorum, voter_ids, alive):
        return dict(quorum)
    leader = quorum["leader"]
    if leader != -1:
        last = nodes.get(leader)
        if last is None:
            ended = now
        elif last["incarnation"] != quorum.get("leader_incarnation"):
            ended = min(now, last["started_ms"])
        else:
            ended = min(now, last["heartbeat_ms"])
        quorum["log_end_offset"] = log_end_offset(quorum, max(ended, quorum["epoch_start_ms"]))
        quorum["leader"] = -1
        quorum["leader_incarnation"] = None
    up = [node_id for node_id in voter_ids if node_id in alive]
    if len(up) * 2 > len(voter_ids):
        winner = min(up)
        quorum.update(
            leader=winner,
            leader_incarnation=alive[winner]["incarnation"],
            epoch=quorum["epoch"] + 1,
            epoch_start_ms=now,
            epoch_start_offset=quorum["log_end_offset"],
        )
    return dict(quorum)
