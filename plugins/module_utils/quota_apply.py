# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make Kafka hold a client quota set: one describe, one validate-only alter, one alter (client_quota, disk_guard)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ansible_collections.headroom.kafka.plugins.module_utils import quota_spec

if TYPE_CHECKING:
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter

MAX_ERRORS_IN_MESSAGE = 10
AUTHORIZATION_HINT = {
    "CLUSTER_AUTHORIZATION_FAILED": "the principal needs the ALTER_CONFIGS operation on the cluster resource to alter "
    "client quotas",
}


class QuotaApplyError(Exception):
    """Kafka refused some of the changes; ``result`` holds ``changed``, ``errors``,
    ``changes`` (applied) and ``planned``."""

    def __init__(self, message: str, result: Dict[str, Any]) -> None:
        super(QuotaApplyError, self).__init__(message)
        self.result = result


def quotas_for_output(state: quota_spec.QuotaState) -> List[Dict[str, Any]]:
    """{entity_key: (entity, values)} as the sorted ``quotas`` list the modules return."""
    return [
        {"entity": quota_spec.entity_to_spec(entity), "quota_values": quota_spec.for_output(values)}
        for entity, values in sorted(state.values(), key=lambda item: quota_spec.entity_sort_key(item[0]))
        if values
    ]


def read_state(adapter: "KafkaAdapter") -> quota_spec.QuotaState:
    """Every client quota of the cluster in one DescribeClientQuotas: {entity_key: (entity, values)}."""
    return dict(
        (quota_spec.entity_key(entity), (entity, values))
        for entity, values in adapter.describe_client_quotas(components=None, strict=False)
        if values
    )


def _describe_ops(ops):
    parts = []
    sets = ["{0}={1}".format(k, quota_spec.for_output({k: v})[k]) for k, v, remove in ops if not remove]
    removes = [k for k, _value, remove in ops if remove]
    if sets:
        parts.append("set " + ", ".join(sets))
    if removes:
        parts.append("remove " + ", ".join(removes))
    return "; ".join(parts)


def _refusals(results, changes):
    """Kafka's per-entity answers matched to the planned changes: the list of refused entities (as ``errors`` items)."""
    answers = dict((quota_spec.entity_key(entity), (error, message)) for entity, error, message in results)
    errors = []
    for change in changes:
        error, message = answers.get(
            quota_spec.entity_key(change["entity"]), ("NO_ANSWER", "Kafka's response did not mention this entity")
        )
        if error:
            errors.append(
                {
                    "entity": quota_spec.entity_to_spec(change["entity"]),
                    "quota_keys": [op[0] for op in change["ops"]],
                    "entity_key": quota_spec.entity_key(change["entity"]),
                    "error": error,
                    "message": message,
                    "description": quota_spec.describe_entity(change["entity"]),
                    "ops": _describe_ops(change["ops"]),
                }
            )
    return errors


def _refusal_message(headline, errors):
    codes = set((item["error"], item["message"]) for item in errors)
    shown = errors[:MAX_ERRORS_IN_MESSAGE]
    if len(codes) == 1 and errors[0]["error"] in AUTHORIZATION_HINT:
        # Every entity refused for the same reason: say it once.
        error, message = codes.pop()
        lines = [
            "{0} ({1}) for {2}".format(
                error + (": " + message if message else ""),
                AUTHORIZATION_HINT[error],
                ", ".join(item["description"] for item in shown),
            )
        ]
    else:
        lines = []
        for item in shown:
            text = "{0} ({1}): {2}".format(item["description"], item["ops"], item["error"])
            if item["message"]:
                text += ": " + item["message"]
            if item["error"] in AUTHORIZATION_HINT:
                text += " ({0})".format(AUTHORIZATION_HINT[item["error"]])
            lines.append(text)
    if len(errors) > MAX_ERRORS_IN_MESSAGE:
        lines.append("and {0} more (see errors)".format(len(errors) - MAX_ERRORS_IN_MESSAGE))
    return "{0}: {1}".format(headline, "; ".join(lines))


def _public_errors(errors):
    return [dict((k, item[k]) for k in ("entity", "quota_keys", "error", "message")) for item in errors]


def _changes_for_output(changes):
    return [
        {
            "entity": quota_spec.entity_to_spec(c["entity"]),
            "before": quota_spec.for_output(c["before"]),
            "after": quota_spec.for_output(c["after"]),
        }
        for c in changes
    ]


def _diff(changes):
    before, after = {}, {}
    for change in changes:
        name = quota_spec.describe_entity(change["entity"])
        if change["before"]:
            before[name] = quota_spec.for_output(change["before"])
        if change["after"]:
            after[name] = quota_spec.for_output(change["after"])
    return {"before": before, "after": after}


def reconcile(
    adapter: "KafkaAdapter",
    desired: quota_spec.QuotaState,
    exclusive: bool = False,
    check_mode: bool = False,
    current: Optional[quota_spec.QuotaState] = None,
) -> Dict[str, Any]:
    """Make Kafka hold ``desired`` (from ``quota_spec.desired_state``) through ``adapter``.

    At most three requests whatever the number of entities: one DescribeClientQuotas, then (when something changes)
    one AlterClientQuotas with validate_only for every change and, unless ``check_mode``, one that applies them.
    ``current``: read_state's answer when the caller has just read it. Returns the module result (changed,
    changes, quotas, diff); raises QuotaApplyError when Kafka refuses an entity
    (nothing applied when the validation refused it) and KafkaAdapterError when Kafka cannot be reached.
    """
    if current is None:
        current = read_state(adapter)
    changes = quota_spec.plan_changes(current, desired, exclusive)
    if changes:
        entries = [(change["entity"], change["ops"]) for change in changes]
        errors = _refusals(adapter.alter_client_quotas(entries, validate_only=True), changes)
        if errors:
            raise QuotaApplyError(
                _refusal_message(
                    "Kafka refused {0} of {1} client quota change(s); nothing was applied".format(
                        len(errors), len(changes)
                    ),
                    errors,
                ),
                {
                    "changed": False,
                    "errors": _public_errors(errors),
                    "changes": [],
                    "planned": _changes_for_output(changes),
                },
            )
        if not check_mode:
            errors = _refusals(adapter.alter_client_quotas(entries, validate_only=False), changes)
            if errors:
                refused = set(item["entity_key"] for item in errors)
                applied = [c for c in changes if quota_spec.entity_key(c["entity"]) not in refused]
                raise QuotaApplyError(
                    _refusal_message(
                        "Kafka validated the client quota changes but refused {0} of {1} when applying them; "
                        "the other {2} were applied".format(len(errors), len(changes), len(applied)),
                        errors,
                    ),
                    {
                        "changed": bool(applied),
                        "errors": _public_errors(errors),
                        "changes": _changes_for_output(applied),
                        "planned": _changes_for_output(changes),
                    },
                )
    final = dict(current)
    for change in changes:
        key = quota_spec.entity_key(change["entity"])
        if change["after"]:
            final[key] = (change["entity"], dict(change["after"]))
        else:
            final.pop(key, None)
    return {
        "changed": bool(changes),
        "changes": _changes_for_output(changes),
        "quotas": quotas_for_output(final),
        "diff": _diff(changes),
    }
