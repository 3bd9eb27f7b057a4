"""The snapshot topic's publisher, on a thread of its own: a publication a broker throttles or does not answer never
holds a decision. The topic is compacted and keyed by broker id, so only each broker's newest observation matters: an
observation still waiting when a newer one comes is replaced, not queued, and the publisher catches up in one
publication once the broker takes records again."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.headroom.kafka.plugins.module_utils import internal_principals, snapshots
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter, KafkaAdapterError

# After a failed publication, the wait before the next try (a newer observation replaces the one that failed meanwhile).
RETRY_SECONDS = 1.0
# The publisher's own connection, with the client id that keeps it out of the throttle as User:ANONYMOUS.
PUBLISHER_CONNECTION = functools.partial(
    KafkaAdapter.from_module_params, client_id=internal_principals.PUBLISHER_CLIENT_ID
)


class SnapshotPublisher:
    """Publishes what ``offer`` gives to ``topic`` (created compacted at the first publication), through a connection
    of its own made from ``params``, with the client id that keeps an unauthenticated publisher out of the throttle
    (internal_principals.exclude_publisher). ``on_failure(reason)`` is called from the publisher's thread."""

    def __init__(
        self,
        params: Mapping[str, Any],
        topic: str,
        on_failure: Callable[[str], None],
        connect: Callable[[Mapping[str, Any]], KafkaAdapter] = PUBLISHER_CONNECTION,
    ) -> None:
        self.params, self.topic, self.on_failure, self.connect = params, topic, on_failure, connect
        self.pending: dict[bytes, bytes] = {}
        self.condition = threading.Condition()
        self.stopping = False
        self.published = 0  # records the broker acknowledged
        self.thread = threading.Thread(target=self._run, name="snapshot-publisher", daemon=True)
        self.thread.start()

    def offer(self, encoded: list[tuple[bytes, str]]) -> None:
        """(key, JSON text) records; a key's newer record replaces one not yet published."""
        with self.condition:
            self.pending.update((key, value.encode("utf-8")) for key, value in encoded)
            self.condition.notify()

    def close(self, timeout: float) -> None:
        """Publish what waits, for at most ``timeout`` seconds, then stop (the thread is a daemon: a publication
        stuck past the timeout does not hold the process)."""
        with self.condition:
            self.stopping = True
            self.condition.notify()
        self.thread.join(timeout)

    def _take(self) -> dict[bytes, bytes] | None:
        with self.condition:
            self.condition.wait_for(lambda: self.pending or self.stopping)
            if not self.pending:
                return None
            taken, self.pending = self.pending, {}
            return taken

    def _run(self) -> None:
        adapter: KafkaAdapter | None = None
        topic_ready = False
        while True:
            taken = self._take()
            if taken is None:
                break
            try:
                if adapter is None:
                    adapter = self.connect(self.params)
                if not topic_ready:
                    adapter.ensure_topic(self.topic, configs=snapshots.COMPACTED_TOPIC_CONFIGS)
                    topic_ready = True
                failures = adapter.produce(self.topic, list(taken.items()))
            except KafkaAdapterError as exc:
                failures = [str(exc)]
                _close(adapter)
                adapter = None
            if not failures:
                self.published += len(taken)
                continue
            self.on_failure(f"snapshots not published to topic {self.topic}: {failures[0]}")
            with self.condition:
                for key, value in taken.items():
                    self.pending.setdefault(key, value)  # unless a newer observation of that broker came meanwhile
                if self.condition.wait_for(lambda: self.stopping, RETRY_SECONDS):
                    break
        _close(adapter)


def _close(adapter: KafkaAdapter | None) -> None:
    if adapter is not None:
        adapter.close()
