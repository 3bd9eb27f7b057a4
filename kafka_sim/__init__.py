"""A Kafka 4.x test cluster whose brokers speak Kafka's wire protocol.

Each broker is its own OS process reading a Kafka ``server.properties`` file. The
brokers of one cluster share their metadata (topics, client quotas, SCRAM
credentials, dynamic configs) through a directory on disk, the stand-in for the
KRaft metadata quorum. It exists so that the collection's modules, roles and
pipeline are tested against real sockets, real TLS and real filesystems.
"""

__version__ = "0.1.0"
