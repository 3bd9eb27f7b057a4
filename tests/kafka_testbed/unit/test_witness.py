"""The traffic witness goes on after a fatal error of librdkafka's idempotent producer: what that producer had not
had acknowledged counts as refused, what it had stays judged, and the report names the error."""

from confluent_kafka import KafkaError, KafkaException

from kafka_testbed import witness

FATAL = "Unable to reconstruct MessageSet (currently with 2 message(s)): unable to guarantee consistency"


class Delivered:
    def __init__(self, value, offset):
        self._value, self._offset = value, offset

    def value(self):
        return self._value

    def partition(self):
        return 0

    def offset(self):
        return self._offset


class Producer:
    """A producer that acknowledges on poll all but the newest record; the first one made fails fatally on its fourth
    record, and fails what is waiting then when flushed, as librdkafka does."""

    made = []

    def __init__(self, config):
        self.config, self.waiting, self.acknowledged, self.failed = config, [], 0, False
        Producer.made.append(self)

    def produce(self, topic, key, value, on_delivery):
        if len(Producer.made) == 1 and self.acknowledged + len(self.waiting) == 3:
            self.failed = True
            raise KafkaException(KafkaError(KafkaError._INCONSISTENT, FATAL, fatal=True))
        self.waiting.append((value, on_delivery))

    def poll(self, _timeout):
        self._acknowledge(self.waiting[:-1])
        self.waiting = self.waiting[-1:]

    def flush(self, _timeout):
        if self.failed:
            for value, on_delivery in self.waiting:
                on_delivery(KafkaError(KafkaError._FATAL, "fatal"), Delivered(value, -1))
        else:
            self._acknowledge(self.waiting)
        self.waiting = []
        return 0

    def _acknowledge(self, records):
        for value, on_delivery in records:
            on_delivery(None, Delivered(value, self.acknowledged))
            self.acknowledged += 1


def test_a_fatal_producer_error_is_followed_by_a_new_producer_and_reported(monkeypatch):
    monkeypatch.setattr(witness, "Producer", Producer)
    Producer.made = []
    watching = witness.Witness({"bootstrap.servers": "127.0.0.1:1"})
    watching._producer = Producer({})  # pylint: disable=protected-access  # as __enter__ makes it, without a cluster
    for number in range(6):
        watching._sent_at.append(watching.clock())  # pylint: disable=protected-access
        watching._send(number)  # pylint: disable=protected-access
        watching._producer.poll(0)  # pylint: disable=protected-access
    watching._producer.flush(0)  # pylint: disable=protected-access
    report = watching._judge({}, unsettled=0)  # pylint: disable=protected-access
    assert len(Producer.made) == 2
    assert report.producer_restarts == [FATAL]
    assert report.as_dict()["producer_restarts"] == [FATAL]
    assert report.acknowledged + sum(report.refused.values()) == report.produced == 6
    assert report.refused == {"_FATAL": 1}
