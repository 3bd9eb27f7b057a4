"""kafka_testbed: the collection's Kafka test cluster.

One launcher (``python -m kafka_testbed``, ``kafka_testbed.cluster.Cluster``, the pytest plugin
``kafka_testbed.testing``) for two engines: real Apache Kafka nodes in KRaft mode from the jars Maven fetched (the
default), and ``kafka_testbed.model``, our own model of Kafka, for what real brokers cannot do cheaply (50-broker
scale, old protocol versions, fast unit tests). Also here: a fleet of test hosts (containers with systemd and sshd,
``kafka_testbed.hosts``), producers that measure throttling (``kafka_testbed.traffic``) and a Prometheus server for the
alert tests (``kafka_testbed.prometheus``). See README.md beside this file.
"""

__version__ = "0.1.0"
