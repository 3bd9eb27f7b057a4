"""Client settings for a test cluster's admin identity, for both client libraries, from its ``cluster.json``."""


def confluent_config(cluster, **extra):
    info = cluster.info
    config = {"bootstrap.servers": info["bootstrap_servers"], "security.protocol": info["security_protocol"]}
    if "tls" in info:
        config.update(
            {
                "ssl.ca.location": info["tls"]["ca"],
                "ssl.certificate.location": info["tls"]["cert"],
                "ssl.key.location": info["tls"]["key"],
            }
        )
    if "sasl" in info:
        config.update(
            {
                "sasl.mechanism": info["sasl"]["mechanism"],
                "sasl.username": info["sasl"]["username"],
                "sasl.password": info["sasl"]["password"],
            }
        )
    config.update(extra)
    return config


def kafka_python_config(cluster, **extra):
    info = cluster.info
    config = {"bootstrap_servers": info["bootstrap_servers"], "security_protocol": info["security_protocol"]}
    if "tls" in info:
        config.update(
            {"ssl_cafile": info["tls"]["ca"], "ssl_certfile": info["tls"]["cert"], "ssl_keyfile": info["tls"]["key"]}
        )
    if "sasl" in info:
        config.update(
            {
                "sasl_mechanism": info["sasl"]["mechanism"],
                "sasl_plain_username": info["sasl"]["username"],
                "sasl_plain_password": info["sasl"]["password"],
            }
        )
    config.update(extra)
    return config


def describe_cluster(admin):
    """{cluster_id, controller_id, brokers: [{broker_id, is_fenced}]} from DescribeCluster, sent at whatever version
    the broker speaks. kafka-python's own ``describe_cluster()`` fails on brokers before Kafka 3.7, whose
    DescribeCluster (v0) has no endpoint type."""
    from kafka.protocol.admin.cluster import DescribeClusterRequest  # pylint: disable=import-outside-toplevel

    request = DescribeClusterRequest(include_cluster_authorized_operations=False, include_fenced_brokers=True)
    response = _send(admin, request)
    if response.error_code:
        raise OSError(f"DescribeCluster failed with error {response.error_code}: {response.error_message}")
    return {
        "cluster_id": response.cluster_id,
        "controller_id": response.controller_id,
        "brokers": [
            {"broker_id": broker.broker_id, "is_fenced": bool(getattr(broker, "is_fenced", False))}
            for broker in response.brokers
        ],
    }


def quorum_leader(admin):
    """Node id of the KRaft quorum's leader (DescribeQuorum, which brokers forward to the controllers), or None.
    kafka-python's ``describe_metadata_quorum()`` fails on brokers before Kafka 3.4, whose answer has no error
    message."""
    from kafka.protocol.admin.cluster import DescribeQuorumRequest  # pylint: disable=import-outside-toplevel

    topic = DescribeQuorumRequest.TopicData
    request = DescribeQuorumRequest(
        topics=[topic(topic_name="__cluster_metadata", partitions=[topic.PartitionData(partition_index=0)])]
    )
    response = _send(admin, request)
    if response.error_code or not response.topics or not response.topics[0].partitions:
        return None
    partition = response.topics[0].partitions[0]
    return None if partition.error_code or partition.leader_id < 0 else partition.leader_id


def _send(admin, request):
    """One request through the admin client's connections, at the highest version both sides speak."""
    manager = admin._manager  # pylint: disable=protected-access  # kafka-python has no public way to send a request

    async def send():
        return await manager.send(request)

    return manager.run(send)


def module_connection_options(info):
    """The collection's connection options (the ``kafka`` action group) for a cluster's admin identity, from its
    ``cluster.json``."""
    options = {
        "bootstrap_servers": info["bootstrap_servers"].split(","),
        "security_protocol": info["security_protocol"],
    }
    if "tls" in info:
        options.update(ssl_cafile=info["tls"]["ca"], ssl_certfile=info["tls"]["cert"], ssl_keyfile=info["tls"]["key"])
    if "sasl" in info:
        options.update(
            sasl_mechanism=info["sasl"]["mechanism"],
            sasl_username=info["sasl"]["username"],
            sasl_password=info["sasl"]["password"],
        )
    return options
