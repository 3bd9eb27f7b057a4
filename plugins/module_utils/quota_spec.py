# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declarative client quotas: validate a desired spec and diff it against what Kafka holds, with no I/O.

Entities are dicts of Kafka entity types (``user``, ``client-id``, ``ip``) to a name, with None for the default
entity. Users write ``client_id`` and the string ``<default>``; ``entity_from_spec`` and ``entity_to_spec`` convert.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from typing import TYPE_CHECKING, Dict, Iterable, List, Mapping, Optional, Tuple, Union, cast

if TYPE_CHECKING:
    from typing import TypedDict  # Python 3.8+; only type checkers read it

DEFAULT_NAME = "<default>"
SPEC_TYPES = {"user": "user", "client_id": "client-id", "ip": "ip"}
KAFKA_TYPES = dict((kafka, spec) for spec, kafka in SPEC_TYPES.items())
# How Kafka types each key (QuotaConfig): byte rates are longs, connection_creation_rate an int, the rest doubles.
USER_CLIENT_KEYS = {
    "producer_byte_rate": "long",
    "consumer_byte_rate": "long",
    "request_percentage": "double",
    "controller_mutation_rate": "double",
}
IP_KEYS = {"connection_creation_rate": "int"}
ALL_KEYS = tuple(list(USER_CLIENT_KEYS) + list(IP_KEYS))
# Kafka refuses a value above the Java maximum compared as a double (Long.MAX_VALUE widens to 2**63).
_LIMITS = {"long": 2.0**63, "int": 2147483647.0}
_KIND_NAMES = {"long": "a long", "int": "an int", "double": "a double"}
_MAXIMA = {"long": "9223372036854775807", "int": "2147483647"}
SPEC_ORDER = ("user", "client_id", "ip")

# An entity as Kafka names it: {entity type: name, None for the default entity}, e.g.
# {"user": None, "client-id": "app"}.
Entity = Dict[str, Optional[str]]
# entity_key's form of an entity: its sorted items.
EntityKey = Tuple[Tuple[str, Optional[str]], ...]
# {quota key: value} as Kafka stores it (a double).
QuotaValues = Dict[str, float]
# A client quota set: {entity_key: (entity, values)}, as desired_state builds it and quota_apply.read_state reads it.
QuotaState = Dict[EntityKey, Tuple[Entity, QuotaValues]]
# A quota operation of AlterClientQuotas: (key, value, remove); the value is None when the key is removed.
QuotaOp = Tuple[str, Optional[float], bool]

if TYPE_CHECKING:

    class QuotaChange(TypedDict):
        """One planned change of plan_changes."""

        entity: Entity
        before: QuotaValues
        after: QuotaValues
        ops: List[QuotaOp]


class QuotaSpecError(ValueError):
    """A spec Kafka would refuse, caught before contacting Kafka; the message names the field,
    value and what is allowed."""


def entity_from_spec(entity: object, where: str = "entity") -> Entity:
    if not isinstance(entity, dict) or not entity:
        raise QuotaSpecError(
            "{0} must be a non-empty dict with keys user, client_id and/or ip (got {1!r})".format(where, entity)
        )
    unknown = sorted(set(entity) - set(SPEC_TYPES))
    if unknown:
        raise QuotaSpecError(
            "{0} has unknown key(s) {1}; allowed: user, client_id, ip".format(where, ", ".join(unknown))
        )
    if "ip" in entity and len(entity) > 1:
        raise QuotaSpecError(
            "{0}: ip cannot be combined with user or client_id (Kafka refuses such entities); got {1!r}".format(
                where, entity
            )
        )
    result = {}
    for key, name in entity.items():
        if not isinstance(name, str) or name == "":
            raise QuotaSpecError(
                "{0}.{1} must be a non-empty string, or {2} for the default entity (got {3!r})".format(
                    where, key, DEFAULT_NAME, name
                )
            )
        result[SPEC_TYPES[key]] = None if name == DEFAULT_NAME else name
    return result


def entity_to_spec(entity: Mapping[str, Optional[str]]) -> Dict[str, str]:
    return dict((KAFKA_TYPES[kind], DEFAULT_NAME if name is None else name) for kind, name in sorted(entity.items()))


def entity_key(entity: Mapping[str, Optional[str]]) -> EntityKey:
    """A stable, hashable identity for an entity (Kafka types, default as None)."""
    return tuple(sorted(entity.items(), key=lambda item: item[0]))


def entity_sort_key(entity: Mapping[str, Optional[str]]) -> List[Union[int, Tuple[int, str]]]:
    """Order of entities in plans and outputs: user entities, then client-id only, then ip; within a type the
    default entity before names, and an entity alone before its combinations (user=a, then user=a,client_id=...)."""
    group = 0 if "user" in entity else 1 if "client-id" in entity else 2
    key: List[Union[int, Tuple[int, str]]] = [group]
    for kind in ("user", "client-id", "ip"):
        if kind not in entity:
            key.append((0, ""))
        elif entity[kind] is None:
            key.append((1, ""))
        else:
            key.append((2, cast(str, entity[kind])))
    return key


def describe_entity(entity: Mapping[str, Optional[str]]) -> str:
    """How errors and diffs name an entity, e.g. ``user=alice,client_id=<default>`` (user, client_id, ip order)."""
    spec = entity_to_spec(entity)
    return ",".join("{0}={1}".format(k, spec[k]) for k in SPEC_ORDER if k in spec)


def allowed_keys(entity: Mapping[str, Optional[str]]) -> Dict[str, str]:
    return IP_KEYS if "ip" in entity else USER_CLIENT_KEYS


def validate_value(where: str, key: str, value: object, kind: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise QuotaSpecError("{0}.{1} must be a number (got {2!r})".format(where, key, value))
    if isinstance(value, float) and not math.isfinite(value):
        raise QuotaSpecError("{0}.{1} must be a finite number greater than 0 (got {2})".format(where, key, value))
    if not value > 0:
        raise QuotaSpecError(
            "{0}.{1} must be greater than 0 (got {2}); remove the key to remove the quota".format(where, key, value)
        )
    if kind in _LIMITS:
        # Compared as the double Kafka receives: a large int rounds to a whole double, never to a fraction.
        if not float(value).is_integer() or float(value) > _LIMITS[kind]:
            raise QuotaSpecError(
                "{0}.{1} must be a whole number from 1 to {2}: Kafka stores it as {3} (got {4})".format(
                    where, key, _MAXIMA[kind], _KIND_NAMES[kind], value
                )
            )
    return float(value)


def desired_state(quotas: Optional[Iterable[object]]) -> QuotaState:
    """Validate the module's ``quotas`` list; return {entity_key: (entity, values)} with values as Kafka stores them."""
    desired = {}
    for index, item in enumerate(quotas or []):
        where = "quotas[{0}]".format(index)
        if not isinstance(item, dict):
            raise QuotaSpecError("{0} must be a dict with an entity (got {1!r})".format(where, item))
        entity = entity_from_spec(item.get("entity"), where + ".entity")
        state = item.get("state") or "present"
        if state not in ("present", "absent"):
            raise QuotaSpecError("{0}.state must be present or absent (got {1!r})".format(where, state))
        keys = allowed_keys(entity)
        values = {}
        for key in ALL_KEYS:
            value = item.get(key)
            if value is None:
                continue
            if key not in keys:
                raise QuotaSpecError(
                    "{0}.{1} is not valid for {2} entities; allowed: {3}".format(
                        where, key, "ip" if "ip" in entity else "user/client_id", ", ".join(keys)
                    )
                )
            if state == "absent":
                raise QuotaSpecError(
                    "{0}.{1} cannot be given with state absent, which removes every quota of the entity".format(
                        where, key
                    )
                )
            values[key] = validate_value(where, key, value, keys[key])
        unknown = sorted(set(item) - set(ALL_KEYS) - set(("entity", "state")))
        if unknown:
            raise QuotaSpecError(
                "{0} has unknown key(s) {1}; allowed: entity, state, {2}".format(
                    where, ", ".join(unknown), ", ".join(ALL_KEYS)
                )
            )
        key = entity_key(entity)
        if key in desired:
            raise QuotaSpecError("{0}.entity {1} is listed twice".format(where, describe_entity(entity)))
        desired[key] = (entity, values)
    return desired


def plan_changes(current: QuotaState, desired: QuotaState, exclusive: bool = False) -> List["QuotaChange"]:
    """Changes that make Kafka hold ``desired``: [{entity, before, after, ops}], ops as (key, value, remove).

    ``current`` is {entity_key: (entity, values)} as described by Kafka. Values compare as the doubles Kafka stores.
    With ``exclusive``, entities Kafka holds but the spec does not list lose all their quotas."""
    targets = dict(desired)
    if exclusive:
        for key, (entity, _values) in current.items():
            targets.setdefault(key, (entity, {}))
    changes: List["QuotaChange"] = []
    for key in sorted(targets, key=lambda k: entity_sort_key(targets[k][0])):
        entity, after = targets[key]
        before = dict(current.get(key, (entity, {}))[1])
        if _same(before, after):
            continue
        ops: List[QuotaOp] = [(k, after[k], False) for k in sorted(after) if float(before.get(k, -1.0)) != after[k]]
        ops += [(k, None, True) for k in sorted(before) if k not in after]
        changes.append({"entity": entity, "before": before, "after": dict(after), "ops": ops})
    return changes


def _same(before, after):
    return set(before) == set(after) and all(float(before[k]) == float(after[k]) for k in after)


def for_output(values: Mapping[str, float]) -> Dict[str, Union[int, float]]:
    """Kafka returns doubles; show whole numbers as integers (as kafka-configs.sh does for byte rates). A long key at
    the long maximum comes back as the double 2**63 (the nearest to 2**63 - 1): it is shown as the maximum given."""
    return dict((k, _shown(k, v)) for k, v in sorted(values.items()))


def _shown(key, value):
    if key in ("request_percentage", "controller_mutation_rate") or not float(value).is_integer():
        return value
    if USER_CLIENT_KEYS.get(key) == "long" and float(value) >= _LIMITS["long"]:
        return int(_MAXIMA["long"])
    return int(value)
