"""The snapshot publisher: a publication the broker holds never holds the guard, a broker's newer observation
replaces one still waiting, a failed publication is tried again with what is newest, and a stop publishes what
waits."""

import inspect
import threading

from ansible_collections.headroom.kafka.plugins.module_utils.internal_principals import PUBLISHER_CLIENT_ID
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter, KafkaAdapterError
from headroom_guard.publisher import PUBLISHER_CONNECTION, SnapshotPublisher
from kafka_testbed.traffic import wait_until

TOPIC = "__headroom_volume_usage"


class HeldBroker:
    """An adapter whose produce waits until ``release`` is set (a throttled publisher), and fails while ``failing``."""

    def __init__(self):
        self.release = threading.Event()
        self.release.set()
        self.failing = False
        self.entered = threading.Event()
        self.batches, self.topics, self.closed = [], [], 0

    def connect(self, _params):
        return self

    def ensure_topic(self, name, configs=None):
        self.topics.append((name, configs["cleanup.policy"]))
        return True

    def produce(self, topic, records):
        self.entered.set()
        self.release.wait(30)
        if self.failing:
            raise KafkaAdapterError(f"cannot produce to topic {topic} via broker:9092: timed out")
        self.batches.append(dict(records))
        return []

    def close(self):
        self.closed += 1


def publisher_for(broker, failures):
    return SnapshotPublisher({}, TOPIC, failures.append, connect=broker.connect)


def test_a_held_publication_does_not_hold_the_guard_and_only_the_newest_observation_of_a_broker_follows_it():
    broker, failures = HeldBroker(), []
    broker.release.clear()
    publisher = publisher_for(broker, failures)
    publisher.offer([(b"1", '{"at":1}'), (b"2", '{"at":1}')])
    wait_until(broker.entered.is_set, 10, what="the first publication under way")
    for at in (2, 3, 4):  # decisions go on while the broker holds the first publication
        publisher.offer([(b"1", f'{{"at":{at}}}')])
    publisher.offer([(b"2", '{"at":4}'), (b"3", '{"at":4}')])
    broker.release.set()
    wait_until(lambda: len(broker.batches) == 2, 10, what="the catching-up publication")
    assert broker.batches == [
        {b"1": b'{"at":1}', b"2": b'{"at":1}'},
        {b"1": b'{"at":4}', b"2": b'{"at":4}', b"3": b'{"at":4}'},
    ]
    assert broker.topics == [(TOPIC, "compact")], "created compacted, once"
    assert publisher.published == 5 and not failures
    publisher.close(10)
    assert not publisher.thread.is_alive() and broker.closed == 1


def test_a_failed_publication_is_said_and_tried_again_unless_a_newer_observation_replaced_it():
    broker, failures = HeldBroker(), []
    broker.failing = True
    publisher = publisher_for(broker, failures)
    publisher.offer([(b"1", '{"at":1}'), (b"2", '{"at":1}')])
    wait_until(lambda: failures, 10, what="the failure said")
    assert (
        failures[0]
        == f"snapshots not published to topic {TOPIC}: cannot produce to topic {TOPIC} via broker:9092: timed out"
    )
    publisher.offer([(b"2", '{"at":2}')])
    broker.failing = False
    wait_until(lambda: broker.batches, 10, what="the publication after the failure")
    assert broker.batches[0] == {b"1": b'{"at":1}', b"2": b'{"at":2}'}
    assert broker.closed >= 1, "the connection that failed was closed, a new one made"
    publisher.close(10)


def test_a_stop_publishes_what_waits():
    broker, failures = HeldBroker(), []
    broker.release.clear()
    publisher = publisher_for(broker, failures)
    publisher.offer([(b"1", '{"at":1}')])
    wait_until(broker.entered.is_set, 10, what="the first publication under way")
    publisher.offer([(b"1", '{"at":2}')])
    broker.release.set()
    publisher.close(10)
    assert broker.batches == [{b"1": b'{"at":1}'}, {b"1": b'{"at":2}'}]
    assert not publisher.thread.is_alive()


def test_the_publisher_connects_with_the_client_id_the_guard_excludes():
    """As User:ANONYMOUS the publisher is kept out of the throttle by its client id (internal_principals)."""
    connect = inspect.signature(SnapshotPublisher).parameters["connect"].default
    assert (
        connect is PUBLISHER_CONNECTION
        and connect.func == KafkaAdapter.from_module_params
        and connect.keywords == {"client_id": PUBLISHER_CLIENT_ID}
    )
