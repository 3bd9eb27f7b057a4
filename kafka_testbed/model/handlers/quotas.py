"""DescribeClientQuotas and AlterClientQuotas over the cluster's shared quota store."""

import socket

from kafka_testbed import errors
from kafka_testbed.model import client_quotas


def _resolves(name):
    """``InetAddress.getByName``: an ip entity may name a host, valid if it resolves."""
    try:
        return bool(socket.getaddrinfo(name, None))
    except (OSError, UnicodeError, ValueError):
        return False


def describe_client_quotas(broker, connection, request):
    # KafkaApis.handleDescribeClientQuotasRequest authorizes DESCRIBE_CONFIGS on the cluster first; with no ACLs
    # modelled only super users hold it, so the quota plugin's own principals and operators can read quotas.
    if not broker.may_alter_cluster(connection.principal):
        return {
            "throttle_time_ms": 0,
            "error_code": errors.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": "Cluster authorization failed.",
            "entries": None,
        }
    components = [(c.entity_type, c.match_type, c.match) for c in request.body.components]
    code, message, entries = client_quotas.describe(
        broker.state.read()["client_quotas"], components, request.body.strict
    )
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": message,
        "entries": None
        if entries is None
        else [
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
            }
            for entity, values in entries
        ],
    }


def alter_client_quotas(broker, connection, request):
    entries = [
        {
            "entity": [(e.entity_type, e.entity_name) for e in entry.entity],
            "ops": [(op.key, op.value, op.remove) for op in entry.ops],
        }
        for entry in request.body.entries
    ]
    if not broker.may_alter_cluster(connection.principal):
        results = [(errors.CLUSTER_AUTHORIZATION_FAILED, None)] * len(entries)
    else:
        validate_only = bool(request.body.validate_only)
        # Host names are resolved before taking the cluster lock (client_quotas only asks about non-literal ip names).
        names = {
            name
            for entry in entries
            for entity_type, name in entry["entity"]
            if entity_type == client_quotas.IP and name
        }
        names |= {name[1:-1] for name in names if name.startswith("[") and name.endswith("]")}
        resolved = {name: _resolves(name) for name in names}
        results = broker.state.update(
            lambda s: client_quotas.alter(s["client_quotas"], entries, validate_only, resolve_host=resolved.get)
        )
    return {
        "throttle_time_ms": 0,
        "entries": [
            {
                "error_code": code,
                "error_message": message,
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
            }
            for entity, code, message in client_quotas.alter_response(entries, results)
        ],
    }
