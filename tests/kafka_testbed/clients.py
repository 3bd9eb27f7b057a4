"""Client settings for a test cluster, for both client libraries, and a raw protocol client.

The raw client sends one request at an exact API version over a plain or TLS socket, which neither
library exposes; conformance tests use it for version handling and for APIs a library lacks.
"""

import itertools
import socket
import ssl
import struct
import time

from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.metadata.api_versions import ApiVersionsResponse

from kafka_testbed import properties
from kafka_testbed.client_config import confluent_config, kafka_python_config
from kafka_testbed.model import wire

__all__ = ["RawClient", "confluent_config", "kafka_python_config", "metadata_barrier", "segment_bytes", "settled"]

STATIC, DEFAULT = 4, 5  # DescribeConfigs config sources


def segment_bytes(cluster):
    """(value, source) of segment.bytes as a topic sees it: the real test cluster keeps segments small on its small
    volumes (a static log.segment.bytes); the model leaves Kafka's default."""
    static = properties.load(cluster.broker(1)["properties"]).get("log.segment.bytes")
    return (static, STATIC) if static else ("1073741824", DEFAULT)


BARRIER_USER = "conformance-metadata-barrier"
_barrier_values = itertools.count(1)


def settled(read, expected, timeout=5.0):
    """``read()`` once it returns ``expected`` (or its last value after ``timeout``).

    Kafka answers AlterClientQuotas and IncrementalAlterConfigs once the controller has committed the change; each
    broker applies it when its metadata catches up, so a describe right after a write may still see the old value.
    """
    deadline = time.monotonic() + timeout
    value = read()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value


def metadata_barrier(cluster, timeout=5.0):
    """Wait until every broker has applied every metadata change committed so far (configs, quotas).

    Brokers apply the metadata log in order: once a marker quota written now shows on a broker, so does everything
    committed before it. The model applies changes before it answers, so there the marker shows at once.
    """
    value = float(next(_barrier_values))
    entity = [{"entity_type": "user", "entity_name": BARRIER_USER}]
    with RawClient.to_broker(cluster) as client:
        response = client.request(
            wire.build(
                AlterClientQuotasRequest,
                1,
                {
                    "validate_only": False,
                    "entries": [
                        {"entity": entity, "ops": [{"key": "request_percentage", "value": value, "remove": False}]}
                    ],
                },
            ),
            1,
        )
    assert response.entries[0].error_code == 0, response
    describe = wire.build(
        DescribeClientQuotasRequest,
        1,
        {"strict": True, "components": [{"entity_type": "user", "match_type": 0, "match": BARRIER_USER}]},
    )

    def marker(node_id):
        with RawClient.to_broker(cluster, node_id) as client:
            entries = client.request(describe, 1).entries or []
        return [v.value for e in entries for v in e.values]

    for entry in cluster.broker_nodes:
        assert settled(lambda n=entry["id"]: marker(n), [value], timeout) == [value], (
            f"broker {entry['id']} did not catch up"
        )


class RawClient:
    """One connection to one broker; ``request`` sends a kafka-python request object at an exact version."""

    def __init__(self, host, port, tls=None, timeout=10.0):
        sock = socket.create_connection((host, port), timeout=timeout)
        if tls:
            context = ssl.create_default_context(cafile=tls["ca"])
            context.load_cert_chain(tls["cert"], tls["key"])
            sock = context.wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.correlation_id = 0

    @classmethod
    def to_broker(cls, cluster, node_id=None, **kwargs):
        entry = cluster.info["brokers"][0] if node_id is None else cluster.broker(node_id)
        return cls(entry["host"], entry["port"], tls=cluster.info.get("tls"), **kwargs)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_frame(self, payload):
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def read_frame(self):
        """The next response frame, or None when the broker closed the connection."""
        try:
            return wire.read_frame(self.sock, 1 << 30)
        except (ConnectionError, OSError):
            return None

    def request(self, message, version):
        """Send ``message`` (a kafka-python request built with ``version=``) and decode the response; None if the broker
        closed."""
        self.correlation_id += 1
        message.with_header(correlation_id=self.correlation_id, client_id="conformance")
        self.send_frame(bytes(message.encode(version=version, header=True)))
        frame = self.read_frame()
        if frame is None:
            return None
        response_class = wire.APIS[message.API_KEY].response if message.API_KEY in wire.APIS else None
        if response_class is ApiVersionsResponse or message.API_KEY == wire.API_VERSIONS_KEY:
            return ApiVersionsResponse.decode(frame, version=version, header=True)
        return response_class.decode(frame, version=version, header=True)
