"""Kafka's listener settings: ``listeners``, ``advertised.listeners``, ``listener.security.protocol.map``."""

import re

DEFAULT_PROTOCOL_MAP = (
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT"
)
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_ENDPOINT = re.compile(r"^([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:\[\]]*):(-?\d+)$")


class ConfigError(Exception):
    """A broker configuration Kafka would refuse at startup (the message names the key and value)."""


class Endpoint:
    __slots__ = ("name", "host", "port", "protocol")

    def __init__(self, name, host, port, protocol):
        self.name = name
        self.host = host
        self.port = port
        self.protocol = protocol

    def as_dict(self):
        return {"name": self.name, "host": self.host, "port": self.port, "protocol": self.protocol}

    @property
    def uses_tls(self):
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self):
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def protocol_map(props):
    text = props.get("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP)
    result = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, protocol = item.partition(":")
        if not sep or protocol.upper() not in PROTOCOLS:
            raise ConfigError(
                f"Invalid value {text} for configuration listener.security.protocol.map: "
                f"entry {item!r} must be NAME:PROTOCOL with PROTOCOL one of {', '.join(PROTOCOLS)}"
            )
        result[name.upper()] = protocol.upper()
    return result


def parse_endpoints(props, key):
    """Endpoints of ``listeners`` or ``advertised.listeners``, each with its security protocol."""
    text = props.get(key, "")
    mapping = protocol_map(props)
    endpoints = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _ENDPOINT.match(item)
        if match is None:
            raise ConfigError(f"Invalid value {text} for configuration {key}: {item!r} is not NAME://HOST:PORT")
        name = match.group(1).upper()
        if name not in mapping:
            raise ConfigError(
                f"Invalid value {text} for configuration {key}: No security protocol defined for listener {name} "
                "(set listener.security.protocol.map)"
            )
        if any(endpoint.name == name for endpoint in endpoints):
            raise ConfigError(
                f"Invalid value {text} for configuration {key}: Each listener must have a different name, {name} is "
                "repeated"
            )
        host = match.group(2).strip("[]") or "0.0.0.0"
        port = int(match.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError(f"Invalid value {text} for configuration {key}: port {port} is out of range")
        endpoints.append(Endpoint(name, host, port, mapping[name]))
    return endpoints


def controller_listener_names(props):
    return {name.strip().upper() for name in props.get("controller.listener.names", "").split(",") if name.strip()}


def advertised_endpoints(props, listeners):
    """What clients are told: ``advertised.listeners`` (defaults to ``listeners``) minus controller listeners."""
    controllers = controller_listener_names(props)
    advertised = parse_endpoints(props, "advertised.listeners") if props.get("advertised.listeners") else listeners
    by_name = {endpoint.name: endpoint for endpoint in listeners}
    result = []
    for endpoint in advertised:
        if endpoint.name in controllers:
            continue
        if endpoint.name not in by_name:
            raise ConfigError(
                f"Invalid value {props.get('advertised.listeners')} for configuration advertised.listeners: "
                f"listener {endpoint.name} is not in listeners"
            )
        host = endpoint.host
        if host in ("0.0.0.0", "::"):
            raise ConfigError(
                f"Invalid value {props.get('advertised.listeners', props.get('listeners'))} for configuration "
                "advertised.listeners: advertised.listeners cannot use the nonroutable meta-address 0.0.0.0"
            )
        result.append(Endpoint(endpoint.name, host, endpoint.port, endpoint.protocol))
    return result
