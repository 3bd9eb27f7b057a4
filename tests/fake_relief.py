"""A fake cluster for relief: brokers with log dirs and replicas whose moves take a few reads to finish."""

from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError

MIB = 1 << 20


class FakeCluster:
    """Brokers with log dirs and replicas; a started move ends after ``reads`` reads of the log dirs (``None``: never).
    Every change is recorded in ``changes``.

    As Kafka does, AlterReplicaLogDirs for a replica a broker does not hold records the log dir it will create it in
    and answers REPLICA_NOT_AVAILABLE; without one (or with ``forget_log_dirs``, as after a restart) a new replica goes
    to /a. ``refuse`` holds reassignment refusals, ``refuse_cancel`` cancel refusals and ``log_dir_answers`` the next
    answers of AlterReplicaLogDirs, by key. ``faults`` lists, per method, what each call does: None (as usual),
    "fail" (raise before acting), "fail after" (act, then raise, as a request that timed out after the controller took
    it) or "down" (raise, and every later call too, until ``down`` is set False)."""

    def __init__(self, dirs, placement, reads=2, topic_configs=None, broker_configs=None, refuse=None):
        self.total = 100 * MIB
        self.used = {key: 0 for key in dirs}
        self.placement = {}  # (topic, partition, broker) -> [log_dir, size]
        self.assigned = {}
        for topic, number, broker, log_dir, size in placement:
            self.placement[(topic, number, broker)] = [log_dir, size]
            self.used[(broker, log_dir)] += size
            self.assigned.setdefault((topic, number), []).append(broker)
        self.reads, self.running = reads, {}
        self.configs = {"topics": dict(topic_configs or {}), "brokers": dict(broker_configs or {})}
        self.refuse = refuse or {}
        self.refuse_cancel = {}
        self.log_dir_answers = {}
        self.preferred_log_dirs = {}
        self.forget_log_dirs = False
        self.faults = {}
        self.down = False
        self.changes = []

    def close(self):
        """The module closes its adapter at the end."""

    def _fault(self, method):
        """What this call of ``method`` does as ``faults`` plans it; raises for "fail" and "down"."""
        planned = self.faults.get(method) or []
        mode = planned.pop(0) if planned else None
        if mode == "down":
            self.down = True
        if self.down or mode == "fail":
            raise KafkaAdapterError("{0} via bootstrap servers fake failed: KafkaTimeoutError".format(method))
        return mode

    # -- reads ------------------------------------------------------------------------------------------------------
    def describe_cluster(self):
        self._fault("describe_cluster")
        brokers = sorted({key[0] for key in self.used})
        return {"cluster_id": "fake", "brokers": [{"id": b, "rack": None} for b in brokers], "fenced_brokers": []}

    def describe_log_dirs(self, broker_ids, timeout_ms=None, replicas=False):
        self._fault("describe_log_dirs")
        self._advance()
        answers = {}
        for broker in broker_ids:
            rows = []
            for (owner, log_dir), used in sorted(self.used.items()):
                if owner != broker:
                    continue
                held = [
                    {"topic": t, "partition": p, "size_bytes": size, "offset_lag": 0, "is_future": False}
                    for (t, p, b), (where, size) in sorted(self.placement.items())
                    if b == broker and where == log_dir
                ]
                held += [
                    {
                        "topic": m["topic"],
                        "partition": m["partition"],
                        "size_bytes": 1,
                        "offset_lag": 0,
                        "is_future": True,
                    }
                    for m in self.running.values()
                    if m["kind"] == "log_dir" and m["to_broker"] == broker and m["to_log_dir"] == log_dir
                ]
                rows.append(
                    {
                        "log_dir": log_dir,
                        "error": None,
                        "total_bytes": self.total,
                        "usable_bytes": self.total - used,
                        "replicas": held,
                    }
                )
            answers[broker] = rows
        return answers

    def partition_reassignments(self):
        self._fault("partition_reassignments")
        return [
            {
                "topic": m["topic"],
                "partition": m["partition"],
                "replicas": [],
                "adding_replicas": [],
                "removing_replicas": [],
            }
            for m in self.running.values()
            if m["kind"] == "broker"
        ]

    def partitions(self):
        self._fault("partitions")
        return [
            {"topic": t, "partition": p, "replicas": list(b), "isr": list(b), "error": None}
            for (t, p), b in sorted(self.assigned.items())
        ]

    def min_insync_replicas(self, topics):
        return {topic: 1 for topic in topics}

    def dynamic_configs(self, kind, names, keys):
        self._fault("dynamic_configs")
        return {name: {key: self.configs[kind].get(name, {}).get(key) for key in keys} for name in names}

    # -- changes ----------------------------------------------------------------------------------------------------
    def alter_dynamic_configs(self, kind, changes):
        self._fault("alter_dynamic_configs")
        for name, values in changes.items():
            for key, value in values.items():
                self.changes.append(("config", kind, name, key, value))
                held = self.configs[kind].setdefault(name, {})
                if value is None:
                    held.pop(key, None)
                else:
                    held[key] = value

    def alter_replica_log_dirs(self, assignments):
        self._fault("alter_replica_log_dirs")
        answers = {}
        for (topic, number, broker), log_dir in assignments.items():
            scripted = self.log_dir_answers.get((topic, number, broker)) or []
            if scripted:
                answers[(topic, number, broker)] = scripted.pop(0)
                continue
            if (topic, number, broker) not in self.placement:
                self.changes.append(("log_dir", topic, number, broker, log_dir))
                self.preferred_log_dirs[(topic, number, broker)] = log_dir
                answers[(topic, number, broker)] = "REPLICA_NOT_AVAILABLE"
                continue
            answers[(topic, number, broker)] = None
            self.changes.append(("log_dir", topic, number, broker, log_dir))
            self.running[(topic, number)] = {
                "topic": topic,
                "partition": number,
                "kind": "log_dir",
                "to_broker": broker,
                "to_log_dir": log_dir,
                "left": self.reads,
            }
        return answers

    def alter_partition_reassignments(self, targets):
        mode = self._fault("alter_partition_reassignments")
        answers = {}
        for key, replicas in targets.items():
            if replicas is None:
                answers[key] = self.refuse_cancel.get(key)
                if answers[key]:
                    continue
                if key not in self.running or self.running[key]["kind"] != "broker":
                    answers[key] = "NO_REASSIGNMENT_IN_PROGRESS"
                    continue
                self.changes.append(("cancel",) + key)
                del self.running[key]
                continue
            answers[key] = self.refuse.get(key)
            if answers[key]:
                continue
            self.changes.append(("reassign",) + key + (tuple(replicas),))
            self.running[key] = {
                "topic": key[0],
                "partition": key[1],
                "kind": "broker",
                "replicas": replicas,
                "left": self.reads,
            }
        if mode == "fail after":
            raise KafkaAdapterError(
                "alter_partition_reassignments via bootstrap servers fake failed: KafkaTimeoutError"
            )
        return answers

    def _advance(self):
        for key, running in list(self.running.items()):
            if running["left"] is None:
                continue
            running["left"] -= 1
            if running["left"] > 0:
                continue
            del self.running[key]
            if running["kind"] == "log_dir":
                place = self.placement[key + (running["to_broker"],)]
                self.used[(running["to_broker"], place[0])] -= place[1]
                place[0] = running["to_log_dir"]
                self.used[(running["to_broker"], place[0])] += place[1]
            else:
                size = self.placement[key + (self.assigned[key][0],)][1]
                for broker in set(self.assigned[key]) - set(running["replicas"]):
                    log_dir, size = self.placement.pop(key + (broker,))
                    self.used[(broker, log_dir)] -= size
                for broker in set(running["replicas"]) - set(self.assigned[key]):
                    log_dir = self.preferred_log_dirs.pop(key + (broker,), "/a")
                    log_dir = "/a" if self.forget_log_dirs else log_dir
                    self.placement[key + (broker,)] = [log_dir, size]
                    self.used[(broker, log_dir)] += size
                self.assigned[key] = list(running["replicas"])


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
