"""A fake of the collection's Kafka adapter for unit tests: what Kafka would answer, and every request recorded."""

from ansible_collections.headroom.kafka.plugins.module_utils import quota_spec


class FakeAdapter:
    """Kafka behind the adapter's calls: a client quota store (``refuse`` maps entity keys to (error, message)) and,
    for the disk guard, brokers with log dirs (``log_dirs``: {broker_id: [rows] or an exception}). Every request is
    recorded in ``requests``."""

    def __init__(self, quotas=None, refuse=None, refuse_on_apply=None, log_dirs=None):
        self.log_dirs = dict(log_dirs or {})
        self.store = dict(
            (quota_spec.entity_key(entity), (dict(entity), dict(values))) for entity, values in (quotas or [])
        )
        self.refuse = refuse or {}
        self.refuse_on_apply = refuse_on_apply or {}
        self.requests = []

    def describe_client_quotas(self, components=None, strict=False):
        self.requests.append(("describe", components, strict))
        return [(dict(entity), dict(values)) for entity, values in self.store.values()]

    def alter_client_quotas(self, entries, validate_only):
        self.requests.append(("validate" if validate_only else "alter", len(entries)))
        refusals = dict(self.refuse)
        if not validate_only:
            refusals.update(self.refuse_on_apply)
        results = []
        for entity, ops in entries:
            key = quota_spec.entity_key(entity)
            error, message = refusals.get(key, (None, None))
            results.append((dict(entity), error, message))
            if error or validate_only:
                continue
            values = dict(self.store.get(key, (entity, {}))[1])
            for name, value, remove in ops:
                if remove:
                    values.pop(name, None)
                else:
                    values[name] = float(value)
            if values:
                self.store[key] = (dict(entity), values)
            else:
                self.store.pop(key, None)
        return list(reversed(results))  # Kafka answers in its own (hash map) order

    def describe_cluster(self):
        self.requests.append(("describe_cluster",))
        return {
            "cluster_id": "fake",
            "controller": None,
            "brokers": [{"id": broker} for broker in sorted(self.log_dirs)],
            "fenced_brokers": [],
        }

    def describe_log_dirs(self, broker_ids, timeout_ms=None, replicas=False):
        self.requests.append(("describe_log_dirs", tuple(broker_ids)))
        return {broker: self.log_dirs[broker] for broker in broker_ids}

    def close(self):
        pass
