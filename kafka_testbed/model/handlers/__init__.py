"""What a Kafka 4.x broker answers, API by API. Each handler returns the response as plain values (or None)."""

from kafka_testbed import errors, security
from kafka_testbed.model.handlers import admin, cluster, data, quorum, quotas

_HANDLERS = {
    "ApiVersions": cluster.api_versions,
    "Metadata": cluster.metadata,
    "DescribeCluster": cluster.describe_cluster,
    "DescribeQuorum": quorum.describe_quorum,
    "FindCoordinator": cluster.find_coordinator,
    "DescribeLogDirs": admin.describe_log_dirs,
    "DescribeConfigs": admin.describe_configs,
    "IncrementalAlterConfigs": admin.incremental_alter_configs,
    "CreateTopics": admin.create_topics,
    "DescribeClientQuotas": quotas.describe_client_quotas,
    "AlterClientQuotas": quotas.alter_client_quotas,
    "Produce": data.produce,
    "Fetch": data.fetch,
    "ListOffsets": data.list_offsets,
    "InitProducerId": data.init_producer_id,
}


def dispatch(broker, connection, request):
    if request.api.name == "SaslHandshake":
        return sasl_handshake(broker, connection, request)
    if request.api.name == "SaslAuthenticate":
        return sasl_authenticate(broker, connection, request)
    return _HANDLERS[request.api.name](broker, connection, request)


def _enabled_mechanisms(broker):
    return [mechanism for mechanism in broker.config.sasl_mechanisms if mechanism in security.MECHANISMS]


def _lookup_credential(broker, mechanism):
    def lookup(username):
        return broker.state.read()["scram"].get(username, {}).get(mechanism)

    return lookup


def sasl_handshake(broker, connection, request):
    mechanisms = broker.config.sasl_mechanisms
    if not connection.endpoint.uses_sasl or connection.authenticated:
        return {"error_code": errors.ILLEGAL_SASL_STATE, "mechanisms": mechanisms}
    if connection.sasl is not None:
        # A second SaslHandshake while authenticating: SaslServerAuthenticator answers it with an error and closes.
        connection.close_after_response = True
        return {"error_code": errors.ILLEGAL_SASL_STATE, "mechanisms": []}
    mechanism = request.body.mechanism
    if mechanism not in _enabled_mechanisms(broker):
        connection.close_after_response = True
        return {"error_code": errors.UNSUPPORTED_SASL_MECHANISM, "mechanisms": mechanisms}
    connection.sasl = security.ScramServer(mechanism, _lookup_credential(broker, mechanism))
    connection.sasl_raw = request.version == 0
    return {"error_code": errors.NONE, "mechanisms": mechanisms}


def _authenticate(connection, token):
    """Run one SCRAM step; returns (error code, message, reply bytes)."""
    try:
        reply = connection.sasl.evaluate(bytes(token))
    except security.AuthenticationError as exc:
        connection.close_after_response = True
        return errors.SASL_AUTHENTICATION_FAILED, str(exc), b""
    if connection.sasl.complete:
        connection.authenticated = True
        connection.principal = f"User:{connection.sasl.username}"
    return errors.NONE, "", reply  # Kafka's generated message default: "" rather than null


def sasl_authenticate(_broker, connection, request):
    if connection.authenticated:
        # KafkaApis.handleSaslAuthenticateRequest: answered, the connection stays open.
        return {
            "error_code": errors.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful authentication",
            "auth_bytes": b"",
        }
    if connection.sasl is None:
        # SaslServerAuthenticator.handleKafkaRequest before SaslHandshake: IllegalSaslStateException, closed without an
        # answer.
        connection.close_after_response = True
        return None
    code, message, reply = _authenticate(connection, request.body.auth_bytes)
    return {"error_code": code, "error_message": message, "auth_bytes": reply, "session_lifetime_ms": 0}


def sasl_raw_token(_broker, connection, token):
    """After SaslHandshake v0 the client sends bare SASL tokens, answered as bare size-prefixed frames."""
    code, _ignored, reply = _authenticate(connection, token)
    if code != errors.NONE:
        return False
    if connection.sasl.complete:
        connection.sasl_raw = False
    connection.sock.sendall(len(reply).to_bytes(4, "big") + reply)
    return True
