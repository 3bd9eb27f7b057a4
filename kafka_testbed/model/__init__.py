"""The model of Kafka 4.x: brokers whose wire protocol, metadata, configs, client quotas and SCRAM credentials follow
Kafka's, each broker its own OS process reading a Kafka ``server.properties`` file. The brokers of one cluster share
their metadata through a directory on disk, the stand-in for the KRaft metadata quorum.

Kafka is right: its fidelity is measured by the conformance suite (tests/kafka_testbed/conformance), run against both
engines; the differences left are listed in kafka_testbed/README.md.
"""
