"""Conformance: API version handling of the test broker against Kafka 4.x.

- ApiVersions advertises exactly Kafka 4.x's ranges for the APIs the broker implements (Produce from v0, see
  KAFKA-18659).
- An ApiVersions request above its range gets a v0 reply with UNSUPPORTED_VERSION (35) and ApiVersions' own range.
- Any other API above its range, below its minimum (Produce v0-2 included), an unknown API key or a body that does not
  parse: the broker closes the connection without a reply.
- Every version inside a range is answered.
"""
# pylint: disable=missing-function-docstring

import struct
import time

import pytest
from clients import RawClient
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeLogDirsRequest, DescribeQuorumRequest
from kafka.protocol.admin.configs import DescribeConfigsRequest
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest

UNSUPPORTED_VERSION = 35
API_VERSIONS = 18

# Kafka 4.x: (advertised min, max) and the lowest version actually accepted, per API key.
ADVERTISED = {
    0: (0, 13),  # Produce (v0-v2 advertised but refused)
    1: (4, 18),  # Fetch
    2: (1, 11),  # ListOffsets
    3: (0, 13),  # Metadata
    10: (0, 6),  # FindCoordinator
    17: (0, 1),  # SaslHandshake
    18: (0, 4),  # ApiVersions
    19: (2, 7),  # CreateTopics
    22: (0, 5),  # InitProducerId
    32: (1, 4),  # DescribeConfigs
    35: (1, 5),  # DescribeLogDirs
    36: (0, 2),  # SaslAuthenticate
    44: (0, 1),  # IncrementalAlterConfigs
    48: (0, 1),  # DescribeClientQuotas
    49: (0, 1),  # AlterClientQuotas
    55: (0, 2),  # DescribeQuorum (forwarded to the active controller)
    60: (0, 2),  # DescribeCluster
}
ACCEPTED_MIN = {key: 3 if key == 0 else low for key, (low, _ignored) in ADVERTISED.items()}
# First flexible version (request header v2) per API key, from Kafka's message schemas.
FLEXIBLE_FROM = {
    0: 9,
    1: 12,
    2: 6,
    3: 9,
    10: 3,
    17: 99,
    18: 3,
    19: 5,
    22: 2,
    32: 4,
    35: 2,
    36: 2,
    44: 1,
    48: 1,
    49: 1,
    55: 0,
    60: 0,
}

REQUESTS = {
    "Produce": lambda: ProduceRequest(transactional_id=None, acks=1, timeout_ms=1000, topic_data=[]),
    "Fetch": lambda: FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[],
        forgotten_topics_data=[],
        rack_id="",
    ),
    "ListOffsets": lambda: ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[], timeout_ms=1000),
    "Metadata": lambda: MetadataRequest(topics=[], allow_auto_topic_creation=False),
    "FindCoordinator": lambda: FindCoordinatorRequest(key="group", key_type=0, coordinator_keys=["group"]),
    "ApiVersions": lambda: ApiVersionsRequest(client_software_name="conformance", client_software_version="1.0"),
    "CreateTopics": lambda: CreateTopicsRequest(topics=[], timeout_ms=1000, validate_only=False),
    "InitProducerId": lambda: InitProducerIdRequest(
        transactional_id=None, transaction_timeout_ms=-1, producer_id=-1, producer_epoch=-1
    ),
    "DescribeConfigs": lambda: DescribeConfigsRequest(
        resources=[], include_synonyms=False, include_documentation=False
    ),
    "DescribeLogDirs": lambda: DescribeLogDirsRequest(topics=None),
    "DescribeQuorum": lambda: DescribeQuorumRequest(
        topics=[
            DescribeQuorumRequest.TopicData(
                topic_name="__cluster_metadata",
                partitions=[DescribeQuorumRequest.TopicData.PartitionData(partition_index=0)],
            )
        ]
    ),
    "DescribeCluster": lambda: DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=1, include_fenced_brokers=False
    ),
}


def _compact_string(text):
    data = text.encode()
    return bytes([len(data) + 1]) + data


def header(key, version, correlation_id, flexible):
    """A request header v1 (v2 when flexible) for any key and version, which kafka-python's classes cannot encode."""
    client_id = b"conformance"
    data = struct.pack(">hhih", key, version, correlation_id, len(client_id)) + client_id
    return data + (b"\x00" if flexible else b"")


def raw(cluster):
    return RawClient.to_broker(cluster, 1, timeout=10)


def closed_without_reply(client):
    """True when the broker closes the connection (end of stream), as opposed to answering or staying silent."""
    client.sock.settimeout(5)
    started = time.monotonic()
    frame = client.read_frame()
    return frame is None and time.monotonic() - started < 4


def supported(body):
    return {entry.api_key: (entry.min_version, entry.max_version) for entry in body.api_keys}


@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions_advertises_kafka_4_ranges(kafka_cluster, version):
    with raw(kafka_cluster) as client:
        response = client.request(REQUESTS["ApiVersions"](), version)
    assert response is not None
    assert response.error_code == 0
    ranges = supported(response)
    # Kafka advertises every API it has; the model only those it implements. Their ranges are Kafka's.
    assert {key: ranges.get(key) for key in ADVERTISED} == ADVERTISED
    if version >= 3:
        # Kafka 4.3 finalizes more features (group.version, transaction.version, ...); the model only metadata.version.
        assert "metadata.version" in [feature.name for feature in response.finalized_features]


@pytest.mark.parametrize("version", [5, 9, 127])
def test_api_versions_above_range_gets_v0_error_reply(kafka_cluster, version):
    body = _compact_string("conformance") + _compact_string("1.0") + b"\x00"
    with raw(kafka_cluster) as client:
        client.send_frame(header(API_VERSIONS, version, 4242, flexible=True) + body)
        frame = client.read_frame()
        assert frame is not None, "the broker closed the connection instead of answering"
        response = ApiVersionsResponse.decode(frame, version=0, header=True)
        assert response.header.correlation_id == 4242
        assert response.error_code == UNSUPPORTED_VERSION
        assert supported(response) == {API_VERSIONS: ADVERTISED[API_VERSIONS]}
        # The connection stays usable: a supported ApiVersions request is answered next.
        assert client.request(REQUESTS["ApiVersions"](), 3).error_code == 0


def _unsupported_versions():
    for key, (_ignored, high) in sorted(ADVERTISED.items()):
        if key != API_VERSIONS:
            yield pytest.param(key, high + 1, id=f"key{key}-v{high + 1}-above")
        for version in range(0, ACCEPTED_MIN[key]):
            yield pytest.param(key, version, id=f"key{key}-v{version}-below")


@pytest.mark.parametrize("key, version", list(_unsupported_versions()))
def test_unsupported_version_closes_the_connection(kafka_cluster, key, version):
    with raw(kafka_cluster) as client:
        client.send_frame(header(key, version, 7, flexible=version >= FLEXIBLE_FROM[key]) + b"\x00" * 16)
        assert closed_without_reply(client)


@pytest.mark.parametrize("key", [1000, 32767, -1])
def test_unknown_api_key_closes_the_connection(kafka_cluster, key):
    with raw(kafka_cluster) as client:
        client.send_frame(header(key, 0, 7, flexible=False))
        assert closed_without_reply(client)


def test_unparsable_body_closes_the_connection(kafka_cluster):
    with raw(kafka_cluster) as client:
        # Metadata v12 with a topic array claiming 200 entries and nothing after it.
        client.send_frame(header(3, 12, 7, flexible=True) + b"\xc9\x01")
        assert closed_without_reply(client)


def _every_supported_version():
    by_name = {
        "Produce": 0,
        "Fetch": 1,
        "ListOffsets": 2,
        "Metadata": 3,
        "FindCoordinator": 10,
        "ApiVersions": 18,
        "CreateTopics": 19,
        "InitProducerId": 22,
        "DescribeConfigs": 32,
        "DescribeLogDirs": 35,
        "DescribeQuorum": 55,
        "DescribeCluster": 60,
    }
    for name, key in by_name.items():
        for version in range(ACCEPTED_MIN[key], ADVERTISED[key][1] + 1):
            yield name, version


def test_every_supported_version_is_answered(kafka_cluster):
    unanswered = []
    client = raw(kafka_cluster)
    try:
        for name, version in _every_supported_version():
            response = client.request(REQUESTS[name](), version)
            if response is None:
                unanswered.append(f"{name} v{version}")
                client.close()
                client = raw(kafka_cluster)
            else:
                assert response.header.correlation_id == client.correlation_id
    finally:
        client.close()
    assert not unanswered


@pytest.mark.model_only("test.api.max.versions: protocol versions Kafka 4.3 no longer speaks")
def test_a_broker_can_stand_in_for_an_older_kafka(kafka_cluster_factory):
    """The test-only key ``test.api.max.versions`` lowers an API's range (here DescribeLogDirs to v3, Kafka before
    3.3): ApiVersions advertises the lower maximum and a request above it is refused like any unsupported version."""
    cluster = kafka_cluster_factory(1, extra_properties={"test.api.max.versions": "DescribeLogDirs:3"})
    with raw(cluster) as client:
        response = client.request(REQUESTS["ApiVersions"](), 3)
        assert supported(response)[DescribeLogDirsRequest.API_KEY] == (1, 3)
        assert client.request(DescribeLogDirsRequest(topics=None), 3).results[0].error_code == 0
    with raw(cluster) as client:
        client.send_frame(header(DescribeLogDirsRequest.API_KEY, 4, 7, flexible=True) + b"\x00" * 16)
        assert closed_without_reply(client)
