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
