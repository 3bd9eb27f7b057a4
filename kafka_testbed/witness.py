"""A traffic witness: what a producer with ``acks=all`` and idempotence saw while a play or a fault ran, and whether
everything the cluster acknowledged is still there afterwards.

While it runs, it produces numbered records at a steady rate to a topic of replication factor 3 and
``min.insync.replicas`` 2 (created if missing) and records, for every record, the acknowledgement (partition,
offset, time) or the refusal (the error librdkafka gave up with). Afterwards it reads every partition from the start
to its end and reports:

* ``missing``: acknowledged records not in the log, or not at the offset they were acknowledged at (must be 0);
* ``duplicates``: records in the log more than once (0 under controlled restarts; a broker lost in the middle of a
  produce request may make librdkafka bump its epoch and send the batch again: confluentinc/librdkafka#4953);
* ``refused``: records the producer gave up on, by error, and how many of them reached the log all the same;
* ``producer_restarts``: the fatal errors after which the witness went on with a new producer. librdkafka's idempotent
  producer can fail fatally on its own retries ("Unable to reconstruct MessageSet", seen on one busy core while a roll
  stopped brokers: confluentinc/librdkafka#4736); what it had not had acknowledged then counts as refused, what it had
  stays judged, so a client's fault neither hides a loss nor ends the witness;
* ``stalls``: the gaps in which no acknowledgement came back while records were waiting for one, longest first;
  ``longest_stall_in`` gives the longest gap that overlaps a time window (a restart);
* ``waits``: how long each record waited for its acknowledgement; ``longest_wait_in`` gives the longest wait of the
  records sent in a time window. A restart stalls the partitions the broker led while the others go on, so the
  waits show what a gap between any two acknowledgements does not.

``python -m kafka_testbed witness --bootstrap-servers HOST:PORT --report FILE`` runs it beside anything until it is
interrupted (SIGINT or SIGTERM), then writes its report; tests use :class:`Witness` as a context manager.
"""

import dataclasses
import json
import threading
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from headroom_guard.stop_signals import stop_event

TOPIC = "headroom-witness"
PARTITIONS = 6
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2
RATE = 400  # records a second
# Stalls shorter than this are the producer's own batching, not the cluster's doing.
STALL_FLOOR_SECONDS = 0.2
PRODUCER_SETTINGS = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    # A record is retried for up to two minutes: a restart or a cut-off of 30 s is waited out, not given up on.
    "delivery.timeout.ms": 120000,
}
SETTLE_SECONDS = 130  # how long the witness waits for the last records' acknowledgements when it stops


@dataclasses.dataclass
class Stall:
    """No acknowledgement from ``start`` to ``end`` (monotonic seconds) while records were waiting for one."""

    start: float
    end: float

    @property
    def seconds(self):
        return self.end - self.start

    def overlaps(self, start, end):
        return self.start < end and self.end > start


@dataclasses.dataclass
class Report:
    produced: int
    acknowledged: int
    refused: dict  # error name -> count
    refused_in_log: int
    missing: list  # (id, partition, offset) acknowledged and not found there
    duplicates: list  # (id, [(partition, offset), ...])
    stalls: list  # Stall, longest first
    waits: list  # (sent at, seconds until acknowledged) of every acknowledged record, in the order sent
    began: float  # monotonic, when the first record was sent
    ended: float  # monotonic, when the last acknowledgement came
    producer_restarts: list = dataclasses.field(default_factory=list)  # the fatal errors a new producer followed

    @property
    def longest_stall(self):
        return self.stalls[0].seconds if self.stalls else 0.0

    def longest_stall_in(self, start, end):
        """The longest stall that overlaps the window [start, end] (monotonic seconds), 0.0 when none does."""
        return max((stall.seconds for stall in self.stalls if stall.overlaps(start, end)), default=0.0)

    @property
    def longest_wait(self):
        return max((waited for _sent, waited in self.waits), default=0.0)

    def longest_wait_in(self, start, end):
        """The longest wait for an acknowledgement of the records sent in [start, end), 0.0 when none was."""
        return max((waited for sent, waited in self.waits if start <= sent < end), default=0.0)

    def as_dict(self):
        return {
            "produced": self.produced,
            "acknowledged": self.acknowledged,
            "refused": dict(self.refused),
            "refused_in_log": self.refused_in_log,
            "missing": len(self.missing),
            "missing_first": [list(item) for item in self.missing[:10]],
            "duplicates": len(self.duplicates),
            "duplicates_first": [[key, [list(place) for place in places]] for key, places in self.duplicates[:10]],
            "longest_stall_seconds": round(self.longest_stall, 3),
            "longest_wait_seconds": round(self.longest_wait, 3),
            "stalls": [
                {"after_seconds": round(stall.start - self.began, 3), "seconds": round(stall.seconds, 3)}
                for stall in self.stalls[:20]
            ],
            "seconds": round(self.ended - self.began, 3),
            "producer_restarts": list(self.producer_restarts),
        }


class Witness:
    """Produces while the ``with`` block runs; ``report`` (set on leaving it) says what the cluster kept.

    ``config``: librdkafka settings to reach the cluster (bootstrap.servers and its security settings). ``clock``:
    the time source of every figure (monotonic seconds), for tests that compare stalls with restart times.
    """

    def __init__(
        self,
        config,
        topic=TOPIC,
        rate=RATE,
        partitions=PARTITIONS,
        replication_factor=REPLICATION_FACTOR,
        min_insync_replicas=MIN_INSYNC_REPLICAS,
        clock=time.monotonic,
    ):
        self.config, self.topic, self.rate, self.clock = dict(config), topic, rate, clock
        self.partitions, self.replication_factor, self.min_insync_replicas = (
            partitions,
            replication_factor,
            min_insync_replicas,
        )
        self.report = None
        # Every record's key is "<run>:<number>": a topic written by earlier runs is read back for this run's only.
        self.run = uuid.uuid4().hex[:12]
        self._acks = {}  # id -> (partition, offset)
        self._acked_at = {}  # id -> monotonic time of its acknowledgement
        self._refused = {}  # id -> error name
        self._sent_at = []  # monotonic time each record was handed to the producer, by id
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._producer = None
        self._failure = None
        self._restarts = []  # the fatal errors after which a new producer went on

    # -- the run --------------------------------------------------------------------------------------------------
    def __enter__(self):
        self.ensure_topic()
        self._producer = Producer({**self.config, **PRODUCER_SETTINGS})
        self._thread = threading.Thread(target=self._produce, name="witness", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stop()
        return False

    def stop(self):
        """Stop producing, wait for the last acknowledgements, read the log back; returns the report."""
        if self.report is not None:
            return self.report
        self._stop.set()
        self._thread.join()
        remaining = self._producer.flush(SETTLE_SECONDS)
        if self._failure is not None:
            raise self._failure
        self.report = self._judge(self._read_back(), unsettled=remaining)
        return self.report

    def ensure_topic(self):
        """The witness topic (replication factor 3, min.insync.replicas 2), created when missing."""
        admin = AdminClient(self.config)
        if self.topic in admin.list_topics(timeout=30).topics:
            return
        topic = NewTopic(
            self.topic,
            num_partitions=self.partitions,
            replication_factor=self.replication_factor,
            config={"min.insync.replicas": str(self.min_insync_replicas)},
        )
        try:
            admin.create_topics([topic])[self.topic].result(30)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise

    def _produce(self):
        interval = 1.0 / self.rate
        following = self.clock()
        try:
            while not self._stop.is_set():
                number = len(self._sent_at)
                self._sent_at.append(self.clock())
                self._send(number)
                self._producer.poll(0)
                following += interval
                pause = following - self.clock()
                if pause > 0:
                    self._stop.wait(pause)
                    self._producer.poll(0)
        except Exception as exc:  # pylint: disable=broad-except  # raised again by stop()
            self._failure = exc

    def _send(self, number):
        key = f"{self.run}:{number}".encode()

        def delivered(error, message):
            now = self.clock()
            with self._lock:
                if error is None:
                    self._acks[number] = (message.partition(), message.offset())
                    self._acked_at[number] = now
                else:
                    self._refused[number] = error.name()

        while True:
            try:
                self._producer.produce(self.topic, key=key, value=key, on_delivery=delivered)
                return
            except BufferError:  # the local queue is full while the cluster does not answer: wait for room
                self._producer.poll(0.05)
            except KafkaException as exc:
                if not exc.args[0].fatal():
                    raise
                self._new_producer(exc.args[0])

    def _new_producer(self, error):
        """Go on after a fatal error of the idempotent producer: its records still waiting are reported to it as
        failed (refused), then a new producer, with a producer id of its own, takes over."""
        self._restarts.append(error.str())
        self._producer.flush(SETTLE_SECONDS)
        self._producer = Producer({**self.config, **PRODUCER_SETTINGS})

    # -- afterwards -----------------------------------------------------------------------------------------------
    def _read_back(self):
        """{id: [(partition, offset), ...]} of every record in the topic."""
        consumer = Consumer(
            {
                **self.config,
                "group.id": f"{self.topic}-reader",
                "enable.auto.commit": False,
                "isolation.level": "read_uncommitted",
            }
        )
        try:
            ends = {}
            for partition in range(self.partitions):
                _low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=30)
                ends[partition] = high
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in ends if ends[p] > 0])
            found = {}
            pending = {p for p, end in ends.items() if end > 0}
            deadline = time.monotonic() + 120
            while pending and time.monotonic() < deadline:
                for message in consumer.consume(1000, timeout=1.0):
                    if message.error():
                        continue
                    if message.offset() + 1 >= ends[message.partition()]:
                        pending.discard(message.partition())
                    run, _colon, number = (message.key() or b"").decode(errors="replace").partition(":")
                    if run == self.run:
                        found.setdefault(int(number), []).append((message.partition(), message.offset()))
            if pending:
                raise RuntimeError(
                    f"the witness could not read partitions {sorted(pending)} of {self.topic} to their end"
                )
            return found
        finally:
            consumer.close()

    def _judge(self, found, unsettled):
        with self._lock:
            acks, refused, acked_at = dict(self._acks), dict(self._refused), dict(self._acked_at)
        ack_times = sorted(acked_at.values())
        missing = [
            (number, partition, offset)
            for number, (partition, offset) in sorted(acks.items())
            if (partition, offset) not in found.get(number, [])
        ]
        duplicates = [(number, places) for number, places in sorted(found.items()) if len(places) > 1]
        refused_counts = {}
        for name in refused.values():
            refused_counts[name] = refused_counts.get(name, 0) + 1
        if unsettled:
            refused_counts["not settled when the witness stopped"] = unsettled
        began = self._sent_at[0] if self._sent_at else self.clock()
        return Report(
            produced=len(self._sent_at),
            acknowledged=len(acks),
            refused=refused_counts,
            refused_in_log=sum(1 for number in refused if number in found),
            missing=missing,
            duplicates=duplicates,
            stalls=stalls(self._sent_at, ack_times),
            waits=[(self._sent_at[number], acked_at[number] - self._sent_at[number]) for number in sorted(acked_at)],
            began=began,
            ended=ack_times[-1] if ack_times else began,
            producer_restarts=list(self._restarts),
        )


def stalls(sent_at, ack_times, floor=STALL_FLOOR_SECONDS):
    """The gaps between acknowledgements (and from the first send to the first one) longer than ``floor``, longest
    first. Records are sent without pause, so a gap is time in which records waited and nothing came back."""
    if not sent_at:
        return []
    times = [sent_at[0], *ack_times]
    found = [Stall(start, end) for start, end in zip(times, times[1:], strict=False) if end - start > floor]
    return sorted(found, key=lambda stall: stall.seconds, reverse=True)


def run_until_interrupted(config, report_path, **settings):
    """The CLI's witness: produce until SIGINT or SIGTERM, then write the report as JSON; returns it."""
    stop = stop_event()
    with Witness(config, **settings) as witness:
        stop.wait()
    report = witness.report.as_dict()
    with open(report_path, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
    return report
