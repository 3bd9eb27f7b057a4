"""The client quotas a cluster holds, read with the collection's adapter, for tests that check what the guard applied
(the guard's process tests, the disk_guard role's test and its molecule scenario)."""

from ansible_collections.headroom.kafka.plugins.module_utils import quota_apply, quota_spec
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter


def held_quotas(bootstrap_servers, options=None):
    """{entity description such as "user=alice": values} of every client quota the cluster holds; ``options``, the
    collection's connection options, for a cluster that is not PLAINTEXT."""
    adapter = KafkaAdapter.from_module_params(options) if options else KafkaAdapter(bootstrap_servers)
    try:
        return {
            quota_spec.describe_entity(entity): quota_spec.for_output(values)
            for entity, values in quota_apply.read_state(adapter).values()
        }
    finally:
        adapter.close()
