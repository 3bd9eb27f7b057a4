# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The disk guard's rules, with no I/O: from the volumes a cluster reports to the client quotas that slow its
producers, so that any Kafka enforces the disk limits through its own dynamic client quotas (no plugin).

* The throttle factor is volume_limits' (policy ``strimzi``: the shipped plugin's binary rule; ``graded``: the
  proposal's soft and hard limits).
* The **base** is the declared client quota set (quota_spec.desired_state) plus the ``<default>`` user's produce rate.
  At factor f every declared entity's ``producer_byte_rate`` becomes ``max(floor(base x f), 1)`` (Kafka stores it
  as a whole number of bytes per second and refuses 0); so does the ``<default>`` user's. Other keys stay as declared.
* Excluded principals (``User:<name>``) are never scaled: each gets a ``user=<name>`` entity at its declared rate, or
  at Kafka's own unbounded rate (Long.MAX_VALUE) when none is declared, so that the ``<default>`` user's rate never
  reaches them; their declared ``user=<name>,client_id=...`` entities keep their base too. An excluded client id gets
  a ``user=<default>,client_id=<id>`` entity the same way: Kafka applies it before the ``<default>`` user's rate to
  every user without an entity of its own (the snapshot publisher as ``User:ANONYMOUS``).
* The set is exclusive: at factor 1 Kafka holds exactly the declared set, the ``<default>`` user and the excluded
  principals' entities. An entity nobody declared would hold its own unscaled rate while the disks fill.
* Kafka's precedence puts every ``user`` entity, ``<default>`` included, above ``client-id``-only entities: once the
  ``<default>`` user has a produce rate, declared ``client_id``-only produce rates no longer apply to anyone
  (shadowed_client_ids names them).
* Missing data. ``strimzi`` (the plugin's clock): a complete observation restarts the factor's validity; while it is
  valid (``now - observed_at <= validity``) an incomplete one keeps the factor found applied, after that the
  fallback applies until the next complete observation. A broker that leaves the cluster's view is remembered with
  its volumes until ``now >= observed_at + validity``, as the plugin remembers it. ``graded``: missing_data_action
  (``pause``: factor 0.0; ``open``: the factor of the volumes seen).

The applied quotas are the state: the factor found applied is read back from the ``<default>`` user's rate. The one
thing the quotas cannot hold, when the last complete observation was and what it saw, is GuardMemory: kept in memory
by the guard process, in a state file by the module.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from typing import Any, Dict, Iterable, List, Optional, Tuple, cast

from ansible_collections.headroom.kafka.plugins.module_utils import factor_steps, quota_spec, volume_limits

PRODUCE = "producer_byte_rate"
DEFAULT_USER = (("user", None),)  # quota_spec.entity_key of the <default> user
UNLIMITED_BYTE_RATE = 9223372036854775807  # Long.MAX_VALUE: Kafka's rate when no quota applies
PRINCIPAL_PREFIX = "User:"


class GuardError(ValueError):
    """A declaration the guard cannot enforce; the message names the field, the value and what is allowed."""


# -- the declaration -------------------------------------------------------------------------------------------------
def excluded_users(principals: Optional[Iterable[object]], option: str = "excluded_principals") -> List[str]:
    """The user names of ``User:<name>`` principals (as the plugin's excluded.principal.name.list takes them)."""
    names = []
    for index, principal in enumerate(principals or []):
        where = "{0}[{1}]".format(option, index)
        if (
            not isinstance(principal, str)
            or not principal.startswith(PRINCIPAL_PREFIX)
            or len(principal) == len(PRINCIPAL_PREFIX)
        ):
            raise GuardError(
                "{0} must be a principal User:<name>, such as User:admin (got {1!r})".format(where, principal)
            )
        name = principal[len(PRINCIPAL_PREFIX) :]
        if name in names:
            raise GuardError("{0}: {1} is listed twice".format(where, principal))
        names.append(name)
    return names


class Declaration(object):
    """The base quota set the guard scales: validated once, before anything is asked of Kafka."""

    def __init__(
        self,
        quotas: Optional[List[Dict[str, Any]]],
        default_producer_byte_rate: Optional[float] = None,
        excluded_principals: Optional[List[str]] = None,
        excluded_producer_byte_rate: Optional[float] = None,
    ) -> None:
        try:
            declared = quota_spec.desired_state(quotas)
        except quota_spec.QuotaSpecError as exc:
            raise GuardError(str(exc)) from exc
        for index, item in enumerate(quotas or []):
            if (item.get("state") or "present") != "present":
                raise GuardError(
                    "quotas[{0}].state: the guard holds the whole quota set, so an entity it should not hold is left "
                    "out; state absent is not allowed (got {1!r})".format(index, item.get("state"))
                )
        declared_default = declared.get(DEFAULT_USER, ({}, {}))[1].get(PRODUCE)
        if default_producer_byte_rate is not None:
            rate = _whole_rate("default_producer_byte_rate", default_producer_byte_rate)
            if declared_default is not None and declared_default != rate:
                raise GuardError(
                    "default_producer_byte_rate {0} and the <default> user's producer_byte_rate {1} in quotas "
                    "disagree; give the <default> user's produce rate in one of them".format(
                        _rate_text(rate), _rate_text(declared_default)
                    )
                )
        elif declared_default is not None:
            rate = declared_default
        else:
            raise GuardError(
                "default_producer_byte_rate is required (or a quotas entry for user <default> with "
                "producer_byte_rate): it is the produce rate of every client no declared entity covers, the rate the "
                "guard scales for them"
            )
        self.declared = declared
        self.default_rate = rate
        self.excluded = excluded_users(excluded_principals)
        # Client ids excluded under the <default> user ({user=<default>, client-id=...} entities at the excluded rate):
        # how a client without an identity of its own (User:ANONYMOUS) is kept out of the <default> user's rate.
        self.excluded_client_ids: List[str] = []
        self.excluded_rate = (
            UNLIMITED_BYTE_RATE
            if excluded_producer_byte_rate is None
            else _whole_rate("excluded_producer_byte_rate", excluded_producer_byte_rate)
        )

    def is_excluded(self, entity: quota_spec.Entity) -> bool:
        if entity.get("user") is None:
            return "user" in entity and entity.get("client-id") in self.excluded_client_ids
        return entity["user"] in self.excluded

    def quotas_at(self, factor: float) -> quota_spec.QuotaState:
        """{entity_key: (entity, values)}: the whole set Kafka must hold at ``factor`` (0.0 to 1.0)."""
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0.0 <= factor <= 1.0:
            raise GuardError("throttle factor must be a number from 0.0 to 1.0 (got {0!r})".format(factor))
        target = {}
        for key, (entity, values) in self.declared.items():
            values = dict(values)
            if PRODUCE in values and not self.is_excluded(entity):
                values[PRODUCE] = scaled_rate(values[PRODUCE], factor)
            if values:
                target[key] = (entity, values)
        default_values = dict(target.get(DEFAULT_USER, ({"user": None}, {}))[1])
        default_values[PRODUCE] = scaled_rate(self.default_rate, factor)
        target[DEFAULT_USER] = ({"user": None}, default_values)
        excluded_entities: List[quota_spec.Entity] = [{"user": name} for name in self.excluded]
        excluded_entities += [{"user": None, "client-id": client_id} for client_id in self.excluded_client_ids]
        for entity in excluded_entities:
            key = quota_spec.entity_key(entity)
            values = dict(target.get(key, (entity, {}))[1])
            values.setdefault(PRODUCE, float(self.excluded_rate))
            target[key] = (entity, values)
        return target

    def factor_applied(self, current: quota_spec.QuotaState) -> Optional[float]:
        """The factor the quotas in ``current`` ({entity_key: (entity, values)}) carry, read from the <default> user's
        produce rate; None when it has none (the guard has not run, or someone removed it)."""
        applied = current.get(DEFAULT_USER, ({}, {}))[1].get(PRODUCE)
        if applied is None:
            return None
        if applied <= 1.0 < self.default_rate:
            return 0.0
        return min(max(float(applied) / float(self.default_rate), 0.0), 1.0)

    def read_tolerance(self) -> float:
        """How far below the factor it was written for factor_applied may read one: the <default> user's rate is whole
        bytes per second, rounded down, so up to one byte per second of its base."""
        return 1.0 / float(self.default_rate)

    def shadowed_client_ids(self) -> List[Dict[str, str]]:
        """Declared client-id-only entities with a produce rate: below every user entity in Kafka's precedence, so the
        <default> user's rate, which the guard always sets, applies in their place."""
        return [
            quota_spec.entity_to_spec(entity)
            for entity, values in sorted(self.declared.values(), key=lambda item: quota_spec.entity_sort_key(item[0]))
            if "user" not in entity and "client-id" in entity and PRODUCE in values
        ]


def scaled_rate(base: float, factor: float) -> float:
    """max(floor(base x factor), 1): a whole number of bytes per second, never 0 (Kafka refuses a quota of 0)."""
    return float(max(int(math.floor(float(base) * float(factor))), 1))


def _whole_rate(option, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not float(value).is_integer()
        or not 1 <= value <= UNLIMITED_BYTE_RATE
    ):
        raise GuardError(
            "{0} must be a whole number of bytes per second from 1 to {1} (got {2!r})".format(
                option, UNLIMITED_BYTE_RATE, value
            )
        )
    return float(value)


def _rate_text(value):
    return str(int(value)) if float(value).is_integer() else str(value)


# -- the decision ----------------------------------------------------------------------------------------------------
class Policy(object):
    """Validated limits of one policy, and the plugin's clock settings for ``strimzi``."""

    def __init__(
        self,
        policy: str,
        min_available_bytes: Optional[int] = None,
        min_available_ratio: Optional[float] = None,
        soft_limit: Optional[Dict[str, Any]] = None,
        hard_limit: Optional[Dict[str, Any]] = None,
        missing_data_action: str = "pause",
        throttle_factor_fallback: float = 1.0,
        throttle_factor_validity: float = 300.0,
        throttle_factor_step: float = factor_steps.DEFAULT_STEP,
    ) -> None:
        if policy not in ("strimzi", "graded"):
            raise GuardError("policy must be strimzi or graded (got {0!r})".format(policy))
        try:
            if policy == "strimzi":
                volume_limits.validate_strimzi_limits(min_available_bytes, min_available_ratio)
            else:
                volume_limits.validate_graded_limits(soft_limit, hard_limit)
                if missing_data_action not in volume_limits.MISSING_DATA_ACTIONS:
                    raise volume_limits.LimitError(
                        "missing_data_action must be one of {0} (got {1!r})".format(
                            ", ".join(volume_limits.MISSING_DATA_ACTIONS), missing_data_action
                        )
                    )
        except volume_limits.LimitError as exc:
            raise GuardError(str(exc)) from exc
        try:
            self.step = factor_steps.check_step(throttle_factor_step)
        except factor_steps.StepError as exc:
            raise GuardError(str(exc)) from exc
        if (
            isinstance(throttle_factor_fallback, bool)
            or not isinstance(throttle_factor_fallback, (int, float))
            or not 0.0 <= throttle_factor_fallback <= 1.0
        ):
            raise GuardError(
                "throttle_factor_fallback must be from 0.0 to 1.0 inclusive, as the plugin's throttle.factor.fallback "
                "(got {0!r})".format(throttle_factor_fallback)
            )
        if (
            isinstance(throttle_factor_validity, bool)
            or not isinstance(throttle_factor_validity, (int, float))
            or math.isnan(throttle_factor_validity)
            or throttle_factor_validity < 0
        ):
            raise GuardError(
                "throttle_factor_validity must be a duration of 0 seconds or more (got {0!r})".format(
                    throttle_factor_validity
                )
            )
        self.name = policy
        self.min_available_bytes, self.min_available_ratio = min_available_bytes, min_available_ratio
        self.soft_limit, self.hard_limit, self.missing_data_action = soft_limit, hard_limit, missing_data_action
        self.fallback, self.validity = float(throttle_factor_fallback), float(throttle_factor_validity)


class GuardMemory(object):
    """What a decision leaves for the next one: when the last complete observation was (epoch seconds) and, per
    broker, the volumes it saw and when; and, for other writers of the same quotas (see other_writer), the factor this
    guard last made Kafka hold (``applied``), the one it is about to apply (``applying``, kept before the request so
    that a guard killed in between still knows it as its own) and a factor found held that it did not apply, with when
    it was first seen (``foreign``: {"factor", "since"}); and, when the guard relieves, the moves it follows and when
    the last ones ended (``relief``, guard_relief's). Plain JSON, so the module can keep it in a file."""

    def __init__(
        self,
        observed_at: Optional[float] = None,
        brokers: Optional[Dict[int, Dict[str, Any]]] = None,
        applied: Optional[float] = None,
        foreign: Optional[Dict[str, float]] = None,
        applying: Optional[float] = None,
        relief: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.observed_at = observed_at
        self.brokers = dict(brokers or {})  # {broker_id: {"observed_at": seconds, "volumes": [...]}}
        self.applied, self.foreign, self.applying = applied, foreign, applying
        self.relief = relief  # guard_relief's memory, checked when read there

    def to_json(self) -> Dict[str, Any]:
        return {
            "observed_at": self.observed_at,
            "brokers": dict((str(broker), entry) for broker, entry in sorted(self.brokers.items())),
            "applied": self.applied,
            "applying": self.applying,
            "foreign": self.foreign,
            "relief": self.relief,
        }

    @classmethod
    def from_json(cls, document: Any) -> "GuardMemory":
        """A memory from to_json's form; anything else (a file from elsewhere, a truncated write) is no memory. A memory
        written before ``applied``, ``applying``, ``foreign`` and ``relief`` existed has none of them."""
        try:
            brokers = dict(
                (int(broker), {"observed_at": float(entry["observed_at"]), "volumes": list(entry["volumes"])})
                for broker, entry in document["brokers"].items()
            )
            observed_at = document["observed_at"]
            applied, applying = document.get("applied"), document.get("applying")
            foreign = document.get("foreign")
            return cls(
                None if observed_at is None else float(observed_at),
                brokers,
                None if applied is None else float(applied),
                None if foreign is None else {"factor": float(foreign["factor"]), "since": float(foreign["since"])},
                None if applying is None else float(applying),
                document.get("relief") if isinstance(document.get("relief"), dict) else None,
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return cls()


def set_by_this_guard(held: Optional[float], memory: GuardMemory) -> bool:
    """Kafka holds a factor (``held``) that this guard set: its memory's ``applied``, or ``applying`` (the hand-over of
    a guard killed once Kafka applied its change)."""
    return held is not None and held in (memory.applied, memory.applying)


def own_factor(held: Optional[float], memory: GuardMemory) -> Optional[float]:
    """The factor this guard last made Kafka hold: ``held`` when this guard set it, else the memory's ``applied``."""
    return held if set_by_this_guard(held, memory) else memory.applied


def other_writer(
    factor: float, held: Optional[float], memory: GuardMemory, now: float, validity: float
) -> Tuple[float, Optional[Dict[str, float]], Optional[str]]:
    """Two guards on one cluster (or a guard and a person): (the factor to apply, the ``foreign`` memory to keep, why
    the factor was kept or None).

    ``held``: the factor Kafka holds (Declaration.factor_applied, None: none); ``factor``: this guard's decision. When
    Kafka holds a factor this guard did not apply (neither its memory's ``applied`` nor ``applying``) and that factor
    is stricter than
    the decision, the guard keeps it, for at most ``validity`` seconds from when it first saw it: another guard may
    remember a broker this one never saw (a broker that left before this guard started), and each applying its own
    decision in turn would flap the cluster's quotas every interval. The stricter holds until the other guard
    loosens it or the validity has passed. A guard that never applied anything cannot tell another writer's factor from
    its own past and applies its decision.
    """
    never_applied = memory.applied is None and memory.applying is None
    if never_applied or held is None or set_by_this_guard(held, memory):
        return factor, None, None
    foreign = memory.foreign
    if foreign is None or foreign["factor"] != held:
        foreign = {"factor": held, "since": now}
    if factor > held and factor_valid(foreign["since"], now, validity):
        why = (
            "factor {0:g} held by another writer since {1:.0f} s ago is stricter than this decision's {2:g}: kept for "
            "up to {3:g} s"
        ).format(held, now - foreign["since"], factor, validity)
        return held, foreign, why
    return factor, foreign, None


# The shipped plugin's two time rules, in any one unit of time (the guard counts epoch seconds, the decision timeline
# reference of the tests whole microseconds): the one place either boundary is written in Python.
def factor_valid(valid_from: Optional[float], now: float, validity: float) -> bool:
    """A factor computed at ``valid_from`` still holds at ``now`` (None: no factor computed yet). Inclusive: the plugin
    falls back only once now > valid_from + validity."""
    return valid_from is not None and now - valid_from <= validity


def still_remembered(observed_at: float, now: float, validity: float) -> bool:
    """The volumes of a broker observed at ``observed_at`` still count at ``now`` although it did not answer.
    Exclusive: the plugin forgets them once now >= observed_at + validity."""
    return now < observed_at + validity


def decide(
    policy: Policy,
    view: Dict[str, Any],
    now: float,
    memory: GuardMemory,
    factor_applied: Optional[float],
    tolerance: float = 0.0,
) -> Tuple[Dict[str, Any], GuardMemory]:
    """The factor to apply now: (decision, memory for the next one).

    ``view``: {"volumes": [volume rows of the brokers that answered], "complete": every broker that should have
    answered did, "missing_brokers": [ids]}. ``now``: epoch seconds. ``factor_applied``: Declaration.factor_applied
    of the quotas Kafka holds (None: none applied), read back within ``tolerance`` (Declaration.read_tolerance).
    The decision is volume_limits' result plus ``reason`` (why this factor: observed, kept, fallback or missing data),
    ``fallback_applied`` and ``observed``; graded's factor is in the policy's steps (factor_steps), its exact factor
    ``exact_throttle_factor``.
    """
    if policy.name == "graded":
        decision = volume_limits.graded_decision(
            view["volumes"],
            policy.soft_limit,
            policy.hard_limit,
            complete=view["complete"],
            missing_data_action=policy.missing_data_action,
        )
        position = decision.pop("position")
        if decision["missing_data_applied"]:
            reason = "data incomplete (no data from brokers {0}): missing_data_action pause".format(
                _ids(view["missing_brokers"])
            )
        elif not view["complete"]:
            reason = (
                "data incomplete (no data from brokers {0}): missing_data_action open, the factor of the volumes seen"
            ).format(_ids(view["missing_brokers"]))
        else:
            reason = "observed"
        if not decision["missing_data_applied"]:
            factor = factor_steps.held_factor(position, factor_applied, policy.step, tolerance)
            decision.update(
                exact_throttle_factor=decision["throttle_factor"],
                throttle_factor=factor,
                state=volume_limits.state_of(factor),
            )
        decision.update(fallback_applied=False, observed=view["complete"], reason=reason)
        return decision, memory
    if view["complete"]:
        brokers = dict(
            (broker, entry)
            for broker, entry in memory.brokers.items()
            if still_remembered(entry["observed_at"], now, policy.validity)
        )
        for broker in sorted(set(volume["broker_id"] for volume in view["volumes"])):
            brokers[broker] = {"observed_at": now, "volumes": [v for v in view["volumes"] if v["broker_id"] == broker]}
        answered = set(volume["broker_id"] for volume in view["volumes"])
        volumes = list(view["volumes"]) + [
            v for broker, entry in sorted(brokers.items()) if broker not in answered for v in entry["volumes"]
        ]
        decision = volume_limits.strimzi_decision(
            volumes, min_available_bytes=policy.min_available_bytes, min_available_ratio=policy.min_available_ratio
        )
        remembered = sorted(broker for broker in brokers if broker not in answered)
        decision.update(
            fallback_applied=False,
            observed=True,
            remembered_brokers=remembered,
            reason="observed"
            + (
                " (with the volumes of brokers {0}, remembered from their last answer)".format(_ids(remembered))
                if remembered
                else ""
            ),
        )
        return decision, GuardMemory(now, brokers)
    base: Dict[str, Any] = {
        "policy": "strimzi",
        "violations": [],
        "least_headroom": None,
        "skipped_volumes": [],
        "observed": False,
        "remembered_brokers": [],
    }
    valid = factor_valid(memory.observed_at, now, policy.validity)
    if valid and factor_applied is not None:
        factor = factor_applied
        reason = (
            "observation incomplete (no answer from brokers {0}): the factor applied since {1:.0f} s ago "
            "is valid for {2:g} s"
        ).format(
            _ids(view["missing_brokers"]), now - cast(float, memory.observed_at), policy.validity
        )  # valid: observed_at is set
        base.update(throttle_factor=factor, fallback_applied=False)
    else:
        factor = policy.fallback
        why = (
            "no complete observation on record"
            if memory.observed_at is None
            else "the last complete observation was {0:.0f} s ago, more than the validity of {1:g} s".format(
                now - memory.observed_at, policy.validity
            )
        )
        if memory.observed_at is not None and factor_applied is None:
            why = "no factor applied to keep"
        reason = "observation incomplete (no answer from brokers {0}) and {1}: fallback factor {2:g}".format(
            _ids(view["missing_brokers"]), why, factor
        )
        base.update(throttle_factor=factor, fallback_applied=True)
    base.update(state=volume_limits.state_of(factor), reason=reason)
    return base, memory


def _ids(brokers):
    return ", ".join(str(broker) for broker in brokers) or "unknown"
