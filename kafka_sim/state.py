"""Cluster metadata shared by the broker processes of one test cluster.

Stands in for the KRaft metadata quorum: one JSON document written atomically under a file
lock (topics, client quotas, SCRAM credentials, dynamic configs) and one registration file per
broker whose modification time is its heartbeat. Everything survives broker restarts.
"""

import base64
import fcntl
import json
import os
import time
import uuid

from kafka_sim.properties import write_atomic

STATE_FILE = "cluster-state.json"
LOCK_FILE = "cluster-state.lock"
BROKERS_DIR = "brokers"
FAULTS_DIR = "faults"
DEFAULT_CATCH_UP_MS = 3000


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
    }


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
    def format(self, cluster_id=None, catch_up_ms=DEFAULT_CATCH_UP_MS):
        """Create the metadata directory if it is new (``kafka-storage format``); return the cluster id."""
        os.makedirs(os.path.join(self.directory, BROKERS_DIR), exist_ok=True)
        os.makedirs(os.path.join(self.directory, FAULTS_DIR), exist_ok=True)
        return self.update(lambda state: state["cluster_id"], cluster_id=cluster_id, catch_up_ms=catch_up_ms)

    def read(self):
        state = self._state.get(None)
        if state is None:
            raise FileNotFoundError(f"no cluster metadata in {self.directory}: format it first")
        return state

    def update(self, change, cluster_id=None, catch_up_ms=DEFAULT_CATCH_UP_MS):
        """Apply ``change(state)`` under the cluster lock and write the result atomically; return what change returned."""
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
