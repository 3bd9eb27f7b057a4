"""Client quota logic of a Kafka 4.x (KRaft) cluster: AlterClientQuotas (API 49) and DescribeClientQuotas (API 48).

Pure functions, no I/O. They follow Apache Kafka's own code:

* validation of AlterClientQuotas: ``metadata/.../controller/ClientQuotaControlManager.java`` (``alterClientQuotas``,
  ``alterClientQuotaEntity``, ``validateEntity``, ``configKeysForEntityType``, ``validateQuotaKeyValue``), reached
  through ``ControllerApis.handleAlterClientQuotas`` and ``AlterClientQuotasRequest.entries()``;
* keys and their types: ``server-common/.../server/config/QuotaConfig.java``;
* the DescribeClientQuotas filter: ``metadata/.../image/ClientQuotasImage.describe``, answered by the broker in
  ``KafkaApis.handleDescribeClientQuotasRequest``; an exception becomes ``DescribeClientQuotasRequest.getErrorResponse``
  (top-level error code and message, ``Entries`` null).

Store format (JSON-serialisable): ``{entity_key(entity): {quota_key: float}}`` where an entity is a dict
``{entity_type: name}`` and the name ``None`` is the default entity. An entity with no quota left is not stored.

Where Kafka's answer depends on the iteration order of a ``java.util.HashMap`` (which of several errors is reported,
the text of ``ClientQuotaEntity.toString()``, the order of an entity's parts in a response), that order is reproduced.
"""

import ipaddress
import math
from urllib.parse import quote, unquote

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

MATCH_TYPE_EXACT = 0
MATCH_TYPE_DEFAULT = 1
MATCH_TYPE_SPECIFIED = 2

NONE = 0
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

_USER_AND_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: "long",
    CONSUMER_BYTE_RATE: "long",
    REQUEST_PERCENTAGE: "double",
    CONTROLLER_MUTATION_RATE: "double",
}
# QuotaConfig.userAndClientQuotaConfigs() serves user, client-id and user+client-id entities;
# QuotaConfig.ipConfigs() defines connection_creation_rate as an INT.
QUOTA_KEYS = {
    USER: dict(_USER_AND_CLIENT_KEYS),
    CLIENT_ID: dict(_USER_AND_CLIENT_KEYS),
    IP: {CONNECTION_CREATION_RATE: "int"},
}

# Integer bounds as Java compares them: ``double > Long.MAX_VALUE`` widens the long to a double (2**63).
_INTEGRAL_LIMITS = {
    "int": (float(2**31 - 1), "an INT"),
    "long": (float(2**63 - 1), "a LONG"),
}

DEFAULT_NAME = "<default>"
_KEY_SEPARATOR = "|"
# Characters left readable in a store key; '|', '=', '%', '<' and '>' are always escaped.
_KEY_SAFE = "@:/+,;!$&'()*[]~"


# ---------------------------------------------------------------------------------------------------------------------
# java.util.HashMap emulation (only what the messages and response orders need)


def _java_string_hash(text):
    """``String.hashCode()`` as an unsigned 32-bit value (over UTF-16 code units)."""
    value = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        value = (31 * value + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return value


def _java_object_hash(text):
    """``Objects.hashCode(String)``: 0 for null."""
    return 0 if text is None else _java_string_hash(text)


def _table_size_for(capacity):
    size = 1
    while size < capacity:
        size <<= 1
    return size


def _java_hashmap_order(keys, hash_of, initial_capacity=None):
    """Iteration order of a ``HashMap`` that received ``keys`` (distinct, in insertion order).

    ``initial_capacity`` None is ``new HashMap<>()``; an int is ``new HashMap<>(n)``.
    """
    keys = list(keys)
    if initial_capacity is None:
        capacity = 16
    else:
        capacity = _table_size_for(initial_capacity)
    threshold = int(capacity * 0.75)
    for size in range(1, len(keys) + 1):
        if size > threshold:
            capacity *= 2
            threshold = int(capacity * 0.75)

    def bucket(key):
        value = hash_of(key)
        return (value ^ (value >> 16)) & (capacity - 1)

    positions = {key: pos for pos, key in enumerate(keys)}
    return sorted(keys, key=lambda key: (bucket(key), positions[key]))


def _ordered_parts(entity, initial_capacity=None):
    """The (type, name) pairs of an entity dict in the order Java iterates its map."""
    order = _java_hashmap_order(entity.keys(), _java_object_hash, initial_capacity)
    return [(entity_type, entity[entity_type]) for entity_type in order]


def _entity_repr(entity, initial_capacity=None):
    """``ClientQuotaEntity.toString()``: ``ClientQuotaEntity(entries={client-id=app, user=null})``."""
    parts = ", ".join(
        f"{etype}={'null' if name is None else name}" for etype, name in _ordered_parts(entity, initial_capacity)
    )
    return f"ClientQuotaEntity(entries={{{parts}}})"


def _entity_hash(entity):
    """``ClientQuotaEntity.hashCode()`` = ``Objects.hash(entries)`` = 31 + ``Map.hashCode()``."""
    total = 0
    for entity_type, name in entity.items():
        total = (total + (_java_object_hash(entity_type) ^ _java_object_hash(name))) & 0xFFFFFFFF
    return (31 + total) & 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------------------------------
# Store keys


def entity_key(entity):
    """Canonical, stable store key of an entity dict, e.g. ``client-id=<default>|user=alice``.

    Types are sorted; names are percent-escaped so that a literal name ``<default>`` or one holding ``|``/``=``
    cannot collide with another entity. ``parse_entity_key`` inverts it.
    """
    parts = []
    for entity_type in sorted(entity):
        name = entity[entity_type]
        text = DEFAULT_NAME if name is None else quote(name, safe=_KEY_SAFE)
        parts.append(f"{quote(entity_type, safe=_KEY_SAFE)}={text}")
    return _KEY_SEPARATOR.join(parts)


def parse_entity_key(key):
    """Inverse of ``entity_key``; raises ValueError for a malformed key."""
    if not isinstance(key, str):
        raise ValueError(f"entity key must be a string, not {type(key).__name__}")
    entity = {}
    if key == "":
        return entity
    for part in key.split(_KEY_SEPARATOR):
        entity_type, sep, text = part.partition("=")
        if not sep or not entity_type:
            raise ValueError(f"malformed client quota entity key: {key!r}")
        entity_type = unquote(entity_type)
        if entity_type in entity:
            raise ValueError(f"duplicate entity type {entity_type!r} in key {key!r}")
        entity[entity_type] = None if text == DEFAULT_NAME else unquote(text)
    return entity


# ---------------------------------------------------------------------------------------------------------------------
# AlterClientQuotas


def _entity_map(pairs):
    """``AlterClientQuotasRequest.entries()``: a HashMap, so a repeated type silently keeps the last name."""
    entity = {}
    for entity_type, name in pairs:
        entity[entity_type] = name
    return entity


def _is_ipv4_literal(text):
    """Java's ``IPAddressUtil.textToNumericFormatV4``: 1 to 4 decimal parts, the last one filling the remaining
    bytes."""
    if not 0 < len(text) <= 15:
        return False
    parts = text.split(".")
    if len(parts) > 4 or any(not (part.isascii() and part.isdigit()) for part in parts):
        return False
    values = [int(part) for part in parts]
    return all(value <= 255 for value in values[:-1]) and values[-1] < 1 << (8 * (5 - len(parts)))


def _is_ipv6_literal(text, resolve_host):
    address, _ignored, zone = text.partition("%")
    if zone and not zone.isdigit():
        # A named zone is valid only if the machine has that interface.
        return resolve_host is not None and bool(resolve_host(text)) and _is_ipv6_literal(address, None)
    try:
        ipaddress.IPv6Address(address)
    except ValueError:
        return False
    return True


def _is_valid_ip_entity(name, resolve_host):
    """``isValidIpEntity``: ``InetAddress.getByName(name)`` succeeds.

    IP literals are decided here as Java parses them; any other name is a host name to resolve, which needs I/O and
    is left to ``resolve_host`` (rejected without it).
    """
    if name is None:
        return True
    if name.startswith("["):
        return len(name) > 2 and name.endswith("]") and _is_ipv6_literal(name[1:-1], resolve_host)
    if _is_ipv4_literal(name):
        return True
    if ":" in name:
        return _is_ipv6_literal(name, resolve_host)
    return resolve_host is not None and bool(resolve_host(name))


def _validate_entity(entity, initial_capacity):
    """``validateEntity``; the map's iteration order decides which error wins."""
    if not entity:
        return "Invalid empty client quota entity"
    for entity_type, name in _ordered_parts(entity, initial_capacity):
        if entity_type not in ENTITY_TYPES:
            return f"Unhandled client quota entity type: {entity_type}"
        if name is not None and name == "":
            return f"Empty {entity_type} not supported"
    return None


def _config_keys_for(entity, resolve_host):
    """``configKeysForEntityType``: (keys, None) or (None, message)."""
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            # The missing space is Kafka's own text ("should" + "not be combined").
            return None, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        name = entity[IP]
        if not _is_valid_ip_entity(name, resolve_host):
            return None, f"{name} is not a valid IP or resolvable host."
        return QUOTA_KEYS[IP], None
    if USER in entity or CLIENT_ID in entity:
        return QUOTA_KEYS[USER], None
    return None, "Invalid empty client quota entity"


def validate_quota_value(keys, key, value):
    """``validateQuotaKeyValue`` for a set (not remove) op: None or Kafka's message (all INVALID_REQUEST)."""
    kind = keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    value = float(value)
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if kind == "double":
        return None
    limit, article = _INTEGRAL_LIMITS[kind]
    if value > limit:
        return f"Proposed value for {key} is too large for {article}."
    # Java: Math.abs(value % 1.0) > 1e-6 (NaN passes every check, as in Kafka).
    if not math.isnan(value) and abs(math.fmod(value, 1.0)) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


def _check_entry(quotas, entity, ops, initial_capacity, resolve_host):
    """``alterClientQuotaEntity`` for one non-duplicate entry: (message or None, changes)."""
    message = _validate_entity(entity, initial_capacity)
    if message is not None:
        return message, None
    keys, message = _config_keys_for(entity, resolve_host)
    if message is not None:
        return message, None
    current = quotas.get(entity_key(entity), {})
    changes = {}
    for key in _java_hashmap_order(ops.keys(), _java_object_hash, len(ops)):
        value = ops[key]
        if value is None:
            if key in current:
                changes[key] = None
            continue
        message = validate_quota_value(keys, key, value)
        if message is not None:
            return message, None
        changes[key] = float(value)
    return None, changes


def _apply(quotas, entity, changes):
    key = entity_key(entity)
    values = dict(quotas.get(key, {}))
    for quota_key, value in changes.items():
        if value is None:
            values.pop(quota_key, None)
        else:
            values[quota_key] = value
    if values:
        quotas[key] = values
    else:
        quotas.pop(key, None)


def _parse_entry(entry):
    """``AlterClientQuotasRequest.entries()`` plus the duplicate-key scan of ``alterClientQuotas``.

    Returns (entity list size, entity dict, {key: value or None for remove}, duplicate key seen).
    """
    pairs = list(entry.get("entity") or ())
    ops = {}
    duplicate_key = False
    for key, value, remove in entry.get("ops") or ():
        if key in ops:
            duplicate_key = True
        else:
            ops[key] = None if remove else value
    return len(pairs), _entity_map(pairs), ops, duplicate_key


def alter(quotas, entries, validate_only, resolve_host=None):
    """Apply AlterClientQuotas entries to ``quotas`` (mutated in place unless ``validate_only``).

    ``entries``: ``[{"entity": [(entity_type, name_or_None), ...], "ops": [(key, value, remove), ...]}]`` in request
    order. Returns one ``(error_code, error_message)`` per entry. Each entry is all-or-nothing. An entity that already
    appeared earlier in the request is rejected (``Ignoring duplicate entity ...``) and the earlier entry still applies;
    Kafka answers once per distinct entity with the last result (see ``alter_response``).

    ``resolve_host(name) -> bool`` decides ip entity names that are not IP literals (Kafka calls
    ``InetAddress.getByName``); without it such names are rejected, with Kafka's message.
    """
    results = []
    seen = set()
    for entry in entries:
        size, entity, ops, duplicate_key = _parse_entry(entry)
        ident = entity_key(entity)
        if duplicate_key or ident in seen:
            # "Duplicate quota key ..." is stored first, then overwritten by this message.
            seen.add(ident)
            results.append((INVALID_REQUEST, f"Ignoring duplicate entity {_entity_repr(entity, size)}"))
            continue
        seen.add(ident)
        message, changes = _check_entry(quotas, entity, ops, size, resolve_host)
        if message is not None:
            results.append((INVALID_REQUEST, message))
            continue
        if not validate_only:
            _apply(quotas, entity, changes)
        results.append((NONE, None))
    return results


def alter_response(entries, results):
    """Kafka's AlterClientQuotasResponse entries for ``alter``'s results: ``[(entity_pairs, code, message)]``.

    One per distinct entity (``AlterClientQuotasResponse.fromQuotaEntities`` over a
    ``Map<ClientQuotaEntity, ApiError>``): the last result of that entity wins, entities come in the map's iteration
    order and each entity lists its parts in its own map's order (a repeated type appears once, with the last name).
    """
    by_ident = {}
    entities = {}
    for entry, result in zip(entries, results, strict=True):
        pairs = list(entry.get("entity") or ())
        entity = _entity_map(pairs)
        ident = entity_key(entity)
        if ident not in entities:
            entities[ident] = (entity, len(pairs))
        by_ident[ident] = result
    order = _java_hashmap_order(entities.keys(), lambda ident: _entity_hash(entities[ident][0]))
    response = []
    for ident in order:
        entity, capacity = entities[ident]
        code, message = by_ident[ident]
        response.append((_ordered_parts(entity, capacity), code, message))
    return response


# ---------------------------------------------------------------------------------------------------------------------
# DescribeClientQuotas


class _FilterError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def _parse_filter(components):
    exact = {}
    specified = set()
    for entity_type, match_type, match in components:
        if entity_type == "":
            raise _FilterError(INVALID_REQUEST, "Invalid empty entity type.")
        if entity_type in exact or entity_type in specified:
            raise _FilterError(
                INVALID_REQUEST, f"Entity type {entity_type} cannot appear more than once in the filter."
            )
        if entity_type not in ENTITY_TYPES:
            raise _FilterError(UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
        if match_type == MATCH_TYPE_EXACT:
            if match is None:
                raise _FilterError(INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[entity_type] = match
        elif match_type == MATCH_TYPE_DEFAULT:
            if match is not None:
                raise _FilterError(
                    INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                )
            exact[entity_type] = None
        elif match_type == MATCH_TYPE_SPECIFIED:
            if match is not None:
                raise _FilterError(
                    INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                )
            specified.add(entity_type)
        else:
            raise _FilterError(INVALID_REQUEST, f"Unknown match type {match_type}")
    used = set(exact) | specified
    if IP in used and (USER in used or CLIENT_ID in used):
        raise _FilterError(
            INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be used "
            "with user or clientId filter component.",
        )
    return exact, specified


def _matches(entity, exact, specified, strict):
    if not exact and not specified:
        return not strict
    if strict and len(entity) != len(exact) + len(specified):
        return False
    for entity_type, name in exact.items():
        if entity_type not in entity or entity[entity_type] != name:
            return False
    return all(entity_type in entity for entity_type in specified)


def _value_order(values):
    return {key: values[key] for key in _java_hashmap_order(values.keys(), _java_object_hash)}


def describe(quotas, components, strict):
    """Answer DescribeClientQuotas from ``quotas``.

    ``components``: ``[(entity_type, match_type, match_or_None)]``. Returns ``(error_code, error_message, entries)``;
    on error ``entries`` is None, else ``[(entity_pairs, {key: value})]`` sorted by store key (Kafka's own order is
    that of its image's HashMap).
    """
    try:
        exact, specified = _parse_filter(components)
    except _FilterError as err:
        return err.code, err.message, None
    entries = []
    for key in sorted(quotas):
        entity = parse_entity_key(key)
        values = quotas[key]
        if not values or not _matches(entity, exact, specified, strict):
            continue
        entries.append((_ordered_parts(entity, 2), _value_order(values)))
    return NONE, "", entries  # Kafka answers a successful describe with an empty message, not null
