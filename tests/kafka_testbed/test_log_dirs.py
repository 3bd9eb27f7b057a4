"""Conformance: DescribeLogDirs and full or lost log dirs, against the filesystems under the log dirs.

- Each online log dir reports TotalBytes = f_blocks * f_frsize and UsableBytes = f_bavail * f_frsize of its
  filesystem (DescribeLogDirs v4+, kafka-python ``describe_log_dirs``); v1-v3 carry no sizes. Plain directories and
  tmpfs volumes, one or two log dirs per broker.
- Producing makes the partition's size grow and the volume's usable bytes shrink.
- A volume that fills up fails the produce with KAFKA_STORAGE_ERROR (56), with either producer; the log dir then
  reports error 56 and sizes -1, its partitions go offline in Metadata, the broker's other log dir keeps working,
  and when the last log dir fails the broker halts ("Shutdown broker because all log dirs ... have failed").
- ``offline_log_dir`` (unmounted volume, or a plain directory taken away) reports 56 and -1 the same way.
"""
# pylint: disable=missing-function-docstring

import os

import pytest
from clients import RawClient, confluent_config, kafka_python_config
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import KafkaError
from kafka.protocol.admin.cluster import DescribeLogDirsRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from kafka_testbed.cluster import process_alive
from kafka_testbed.model.broker import wait_for

KAFKA_STORAGE_ERROR = 56
VOLUME = 16 << 20
CHUNK = 512 << 10
TMPFS_TOLERANCE = 64 << 10
HOST_TOLERANCE = 256 << 20  # other processes write to the host filesystem between the broker's look and ours


def statvfs_sizes(path):
    st = os.statvfs(path)
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def describe(cluster, node_id):
    """kafka-python's DescribeLogDirs for one broker: {log dir: result dict}."""
    admin = KafkaAdminClient(**kafka_python_config(cluster))
    try:
        (entry,) = admin.describe_log_dirs(brokers=[node_id])
    finally:
        admin.close()
    assert entry["broker"] == node_id
    return {result["log_dir"]: result for result in entry["log_dirs"]}


def offline_in(results, path):
    """``results`` once they report ``path`` wholly offline (error, no sizes, no topics), else None.

    Kafka sets the error a moment before it drops the dir's sizes and partitions, so waiting for the
    error alone can catch the dir half way.
    """
    entry = results[path]
    if entry["error_code"] == 0 or (entry["total_bytes"], entry["usable_bytes"], entry["topics"]) != (-1, -1, []):
        return None
    return results


def describe_raw(cluster, node_id, version):
    with RawClient.to_broker(cluster, node_id) as raw:
        response = raw.request(DescribeLogDirsRequest(topics=None), version)
    assert response.error_code == 0
    return {result.log_dir: result for result in response.results}


def partition_sizes(result):
    return {
        (topic["name"], p["partition_index"]): p["partition_size"]
        for topic in result["topics"]
        for p in topic["partitions"]
    }


def assert_matches_filesystem(result, path, tolerance):
    total, usable = statvfs_sizes(path)
    assert result["error_code"] == 0
    assert result["total_bytes"] == total
    assert abs(result["usable_bytes"] - usable) <= tolerance, (result["usable_bytes"], usable)


def create_topic(cluster, name):
    admin = AdminClient(confluent_config(cluster))
    admin.create_topics([NewTopic(name, 1, 1)], operation_timeout=10)[name].result(timeout=15)
    return name


def placed(cluster, topic, node_id=1):
    """The log dir holding ``topic``-0 once its directory exists (DescribeLogDirs lists it with size 0)."""

    def find():
        for path, result in describe(cluster, node_id).items():
            if (topic, 0) in partition_sizes(result):
                return path
        return None

    path = wait_for(find, 5, 0.1)
    assert path, f"{topic}-0 never appeared in DescribeLogDirs"
    return path


def produce_chunks(cluster, client, topic, count, size=CHUNK):
    """Produce ``count`` incompressible values one request at a time, stopping at the first error.
    Returns (records stored, error code or None)."""
    value = os.urandom(size)
    if client == "confluent":
        producer = Producer(confluent_config(cluster, **{"acks": "1", "retries": 0, "linger.ms": 0}))
        outcome = []
        for _ignored in range(count):
            producer.produce(topic, value=value, partition=0, on_delivery=lambda err, _msg: outcome.append(err))
            assert producer.flush(15) == 0
            if outcome[-1] is not None:
                return len(outcome) - 1, outcome[-1].code()
        return len(outcome), None
    producer = KafkaProducer(
        **kafka_python_config(cluster, acks=1, retries=0, enable_idempotence=False, max_request_size=2 * size)
    )
    try:
        for stored in range(count):
            try:
                producer.send(topic, value=value, partition=0).get(timeout=15)
            except KafkaError as exc:
                return stored, exc.errno
        return count, None
    finally:
        producer.close(5)


def leader_of(cluster, topic):
    return AdminClient(confluent_config(cluster)).list_topics(topic, timeout=10).topics[topic].partitions[0].leader


def produce_raw(cluster, node_id, topic):
    """Produce one record to ``topic``-0 on broker ``node_id`` whatever Metadata says; the partition's error code."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16)
    builder.append(timestamp=None, key=b"k", value=b"v", headers=[])
    builder.close()
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[
            data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=bytes(builder.buffer()))])
        ],
    )
    with RawClient.to_broker(cluster, node_id) as raw:
        response = raw.request(request, 9)
    ((partition,),) = [topic_response.partition_responses for topic_response in response.responses]
    return partition.error_code


def mounted_volumes(cluster):
    log_dirs = {path for b in cluster.broker_nodes for path in b["log_dirs"]}
    if len([v for v in cluster.info["volumes"] if v["path"] in log_dirs]) != len(log_dirs):
        pytest.skip(f"no tmpfs volumes here: {cluster.info['notes']}")
    return cluster


@pytest.fixture(scope="module")
def volumes(kafka_cluster_root):
    from kafka_testbed.testing import ClusterFactory  # pylint: disable=import-outside-toplevel

    factory = ClusterFactory(kafka_cluster_root)
    try:
        yield mounted_volumes(factory(1, volume_size="16M", log_dirs_per_broker=2))
    finally:
        factory.close()


def test_sizes_of_plain_directories(kafka_cluster):
    for broker in kafka_cluster.broker_nodes:
        results = describe(kafka_cluster, broker["id"])
        assert sorted(results) == sorted(broker["log_dirs"])
        for path, result in results.items():
            assert_matches_filesystem(result, path, HOST_TOLERANCE)


def test_sizes_of_tmpfs_volumes_two_per_broker(volumes):
    (broker,) = volumes.broker_nodes
    results = describe(volumes, broker["id"])
    assert sorted(results) == sorted(broker["log_dirs"]) and len(results) == 2
    for path, result in results.items():
        assert result["total_bytes"] == VOLUME
        assert_matches_filesystem(result, path, TMPFS_TOLERANCE)
    for version in (4, 5):
        raw = describe_raw(volumes, broker["id"], version)
        for path, result in raw.items():
            assert result.error_code == 0 and result.total_bytes == VOLUME
            assert abs(result.usable_bytes - statvfs_sizes(path)[1]) <= TMPFS_TOLERANCE


@pytest.mark.parametrize("version", [1, 2, 3])
def test_sizes_absent_below_v4(volumes, version):
    (broker,) = volumes.broker_nodes
    raw = describe_raw(volumes, broker["id"], version)
    assert sorted(raw) == sorted(broker["log_dirs"])
    for result in raw.values():
        assert result.error_code == 0
        assert "total_bytes" not in result.to_dict() and "usable_bytes" not in result.to_dict()


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_producing_grows_partition_and_used_bytes(volumes, client):
    topic = create_topic(volumes, f"grow-{client}")
    path = placed(volumes, topic)
    before = describe(volumes, 1)[path]
    assert partition_sizes(before)[(topic, 0)] == 0
    assert produce_chunks(volumes, client, topic, 4) == (4, None)
    after = describe(volumes, 1)[path]
    grown = partition_sizes(after)[(topic, 0)]
    assert 4 * CHUNK <= grown <= 4 * CHUNK + 4096
    assert before["usable_bytes"] - after["usable_bytes"] >= 4 * CHUNK - TMPFS_TOLERANCE
    assert_matches_filesystem(after, path, TMPFS_TOLERANCE)


def test_full_volumes_fail_produce_then_the_log_dir_then_the_broker(kafka_cluster_factory):
    cluster = mounted_volumes(kafka_cluster_factory(1, volume_size="16M", log_dirs_per_broker=2))
    (broker,) = cluster.broker_nodes
    first = create_topic(cluster, "fill-first")
    first_dir = placed(cluster, first)
    second = create_topic(cluster, "fill-second")
    second_dir = placed(cluster, second)
    assert first_dir != second_dir

    stored, error = produce_chunks(cluster, "confluent", first, 64)
    assert error == KAFKA_STORAGE_ERROR
    assert stored >= (VOLUME - 2 * CHUNK) // CHUNK - 1

    # The produce fails at once; Kafka takes the dir offline on its log-dir-failure thread a moment later.
    results = wait_for(lambda: offline_in(describe(cluster, broker["id"]), first_dir), 10, 0.1)
    assert results, f"{first_dir} still online after its volume filled: {describe(cluster, broker['id'])[first_dir]}"
    assert results[first_dir]["error_code"] == KAFKA_STORAGE_ERROR
    assert_matches_filesystem(results[second_dir], second_dir, TMPFS_TOLERANCE)
    for version in (1, 3):
        assert describe_raw(cluster, broker["id"], version)[first_dir].error_code == KAFKA_STORAGE_ERROR
    # Its partitions go offline (no leader) once the controller has heard of the failed dir.
    assert wait_for(lambda: leader_of(cluster, first) == -1, 10, 0.1), (
        "the partition of the failed log dir kept its leader"
    )
    assert leader_of(cluster, second) == broker["id"]

    stored, error = produce_chunks(cluster, "kafka-python", second, 64)
    assert error == KAFKA_STORAGE_ERROR
    assert stored >= (VOLUME - 2 * CHUNK) // CHUNK - 1
    # No log dir left: the broker halts, without a controlled shutdown.
    assert wait_for(lambda: not process_alive(broker["pid"]), 10), "the broker kept running without a log dir"
    try:
        _pid, status = os.waitpid(broker["pid"], 0)
        assert os.waitstatus_to_exitcode(status) == 1
    except ChildProcessError:
        pass  # already reaped elsewhere; the log tells why it stopped
    with open(broker["log_file"], encoding="utf-8") as handle:
        log = handle.read()
    assert f"Shutdown broker because all log dirs in {first_dir}, {second_dir} have failed" in log


@pytest.mark.parametrize(
    "kind",
    [
        "tmpfs",
        pytest.param(
            "plain",
            marks=pytest.mark.model_only(
                "a plain directory taken away: the real launcher only fails a dir by filling its own volume"
            ),
        ),
    ],
)
def test_offline_log_dir(kafka_cluster_factory, kind):
    cluster = kafka_cluster_factory(1, volume_size="16M" if kind == "tmpfs" else None, log_dirs_per_broker=2)
    if kind == "tmpfs":
        mounted_volumes(cluster)
    (broker,) = cluster.broker_nodes
    topic = create_topic(cluster, "doomed")
    lost = placed(cluster, topic)
    kept = next(path for path in broker["log_dirs"] if path != lost)
    cluster.offline_log_dir(broker["id"], lost)
    results = describe(cluster, broker["id"])
    assert (results[lost]["error_code"], results[lost]["total_bytes"], results[lost]["usable_bytes"]) == (
        KAFKA_STORAGE_ERROR,
        -1,
        -1,
    )
    assert_matches_filesystem(results[kept], kept, TMPFS_TOLERANCE if kind == "tmpfs" else HOST_TOLERANCE)
    for version in (1, 3, 4):
        raw = describe_raw(cluster, broker["id"], version)
        assert raw[lost].error_code == KAFKA_STORAGE_ERROR and raw[kept].error_code == 0
    # The broker still answers; the partition in the lost dir has no leader, and producing to it fails.
    assert wait_for(lambda: leader_of(cluster, topic) == -1, 3), "the partition of the lost log dir kept its leader"
    assert produce_raw(cluster, broker["id"], topic) == KAFKA_STORAGE_ERROR
    assert process_alive(broker["pid"])
