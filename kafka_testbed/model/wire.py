"""Kafka's framing and message codec, using kafka-python's schema-generated protocol classes.

Only the codec comes from kafka-python; what a broker answers is written in this package.
"""

import io
import struct

from kafka.protocol.admin.client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafka.protocol.admin.cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
)
from kafka.protocol.admin.configs import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)


class Api:
    """One API as a Kafka 4.x broker advertises it (``advertised_min`` differs from ``min_version`` only for
    Produce)."""

    def __init__(self, name, request, response, min_version, max_version, advertised_min=None):
        self.name = name
        self.key = request.API_KEY
        self.request = request
        self.response = response
        self.min_version = min_version
        self.max_version = max_version
        self.advertised_min = min_version if advertised_min is None else advertised_min

    def flexible(self, version):
        return self.request.flexible_version_q(version)


# Ranges from Kafka 4.x (see the project's Kafka facts). InitProducerId (4.0's range) is there because
# idempotent producers, the default of current clients, cannot produce without it. Produce is advertised from v0 because
# librdkafka refuses to produce compressed batches otherwise (KAFKA-18659), yet v0-v2 are refused.
APIS = {
    api.key: api
    for api in (
        Api("Produce", ProduceRequest, ProduceResponse, 3, 13, advertised_min=0),
        Api("Fetch", FetchRequest, FetchResponse, 4, 18),
        Api("ListOffsets", ListOffsetsRequest, ListOffsetsResponse, 1, 11),
        Api("Metadata", MetadataRequest, MetadataResponse, 0, 13),
        Api("FindCoordinator", FindCoordinatorRequest, FindCoordinatorResponse, 0, 6),
        Api("SaslHandshake", SaslHandshakeRequest, SaslHandshakeResponse, 0, 1),
        Api("ApiVersions", ApiVersionsRequest, ApiVersionsResponse, 0, 4),
        Api("CreateTopics", CreateTopicsRequest, CreateTopicsResponse, 2, 7),
        Api("DescribeConfigs", DescribeConfigsRequest, DescribeConfigsResponse, 1, 4),
        Api("DescribeLogDirs", DescribeLogDirsRequest, DescribeLogDirsResponse, 1, 5),
        Api("SaslAuthenticate", SaslAuthenticateRequest, SaslAuthenticateResponse, 0, 2),
        Api("InitProducerId", InitProducerIdRequest, InitProducerIdResponse, 0, 5),
        Api("IncrementalAlterConfigs", IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, 0, 1),
        Api("DescribeClientQuotas", DescribeClientQuotasRequest, DescribeClientQuotasResponse, 0, 1),
        Api("AlterClientQuotas", AlterClientQuotasRequest, AlterClientQuotasResponse, 0, 1),
        Api("DescribeQuorum", DescribeQuorumRequest, DescribeQuorumResponse, 0, 2),
        Api("DescribeCluster", DescribeClusterRequest, DescribeClusterResponse, 0, 2),
    )
}
API_VERSIONS_KEY = ApiVersionsRequest.API_KEY
PRODUCE_KEY = ProduceRequest.API_KEY
DESCRIBE_QUORUM_KEY = DescribeQuorumRequest.API_KEY
DESCRIBE_CLUSTER_KEY = DescribeClusterRequest.API_KEY
# What a controller listener answers (of the APIs implemented here; Kafka's message schemas list "controller" for them).
CONTROLLER_API_KEYS = frozenset({API_VERSIONS_KEY, DESCRIBE_QUORUM_KEY, DESCRIBE_CLUSTER_KEY})

_INT32 = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")
_KEY_VERSION_CORRELATION = struct.Struct(">hhi")


class ProtocolViolation(Exception):
    """The request cannot be answered; Kafka closes the connection in this case."""


class Request:
    """A decoded request: its API, version, header and body."""

    __slots__ = ("api", "version", "correlation_id", "client_id", "body")

    def __init__(self, api, version, correlation_id, client_id, body):
        self.api = api
        self.version = version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.body = body


def read_exact(sock, size):
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(sock, max_size):
    """Return one size-prefixed frame, or None when the peer closed the connection."""
    head = read_exact(sock, 4)
    if head is None:
        return None
    (size,) = _INT32.unpack(head)
    if size < 0 or size > max_size:
        raise ProtocolViolation(f"invalid request size {size} (socket.request.max.bytes is {max_size})")
    return read_exact(sock, size)


def peek_header(frame):
    """API key, version and correlation id: the fixed start of every request header."""
    if len(frame) < _KEY_VERSION_CORRELATION.size:
        raise ProtocolViolation("request shorter than its header")
    return _KEY_VERSION_CORRELATION.unpack_from(frame)


def decode_request(frame, max_versions=None):
    """Decode a request whose API and version the broker supports, else raise ProtocolViolation.

    ``max_versions`` ({api key: max}) lowers ranges, so a broker can stand in for an older Kafka."""
    key, version = _KEY_VERSION.unpack_from(frame)
    api = APIS.get(key)
    if api is None:
        raise ProtocolViolation(f"unknown API key {key}")
    highest = min(api.max_version, (max_versions or {}).get(key, api.max_version))
    if not api.min_version <= version <= highest:
        raise ProtocolViolation(f"unsupported version {version} of {api.name} (supported {api.min_version}-{highest})")
    stream = io.BytesIO(frame)
    try:
        header = RequestHeader.decode(stream, flexible=api.flexible(version))
        body = api.request.decode(memoryview(frame)[stream.tell() :], version=version)
    except Exception as exc:  # a malformed request: Kafka closes the connection (InvalidRequestException)
        raise ProtocolViolation(f"cannot parse {api.name} v{version}: {exc}") from exc
    return Request(api, version, header.correlation_id, header.client_id, body)


def build(data_class, version, values):
    """Build a kafka-python message (or nested struct) from plain dicts and lists.

    Unset fields take schema defaults; fields the version does not have are dropped, so handlers may
    describe the newest shape and let older versions lose what they cannot carry."""
    fields = data_class._struct.fields  # pylint: disable=protected-access
    kwargs = {}
    for name, value in values.items():
        field = fields.get(name)
        if field is None:
            raise KeyError(f"{data_class.__name__} has no field {name}")
        if not field.for_version_q(version):
            continue
        if field.is_struct_array() and value is not None:
            value = [build(field.data_class, version, item) for item in value]
        elif field.is_struct() and value is not None:
            value = build(field.data_class, version, value)
        kwargs[name] = value
    return data_class(version=version, **kwargs)


def encode_response(api, version, correlation_id, values):
    """Encode a size-prefixed response. ApiVersions responses always use header v0 (kafka-python's class knows)."""
    response = build(api.response, version, values)
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def api_versions_error_frame(correlation_id):
    """Kafka's answer to an ApiVersions request above its range: v0, UNSUPPORTED_VERSION, and ApiVersions' own range."""
    api = APIS[API_VERSIONS_KEY]
    return encode_response(
        api,
        0,
        correlation_id,
        {
            "error_code": 35,
            "api_keys": [{"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}],
        },
    )


def parse_max_versions(text):
    """``test.api.max.versions``: comma-separated ``ApiName:max`` pairs, e.g. ``DescribeLogDirs:3`` (Kafka 3.2)."""
    by_name = {api.name: api for api in APIS.values()}
    result = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        name, sep, value = item.partition(":")
        api = by_name.get(name.strip())
        if (
            not sep
            or api is None
            or not value.strip().isdigit()
            or not api.min_version <= int(value) <= api.max_version
        ):
            raise ValueError(
                f"Invalid value {text} for configuration test.api.max.versions: {item!r} must be ApiName:version "
                f"with a known API and a version in its range"
            )
        result[api.key] = int(value)
    return result
