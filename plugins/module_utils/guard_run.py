# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One disk guard decision through the adapter: read the quotas and the volumes, decide, make Kafka hold the quota set
of that factor. The disk_guard module runs it once; the guard process runs it every interval."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.headroom.kafka.plugins.module_utils import (
    disk_guard,
    guard_relief,
    quota_apply,
    volume_limits,
    volume_sources,
)

if TYPE_CHECKING:
    import datetime

    from ansible_collections.headroom.kafka.plugins.module_utils.guard_options import GuardSettings
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter


def guard_once(
    adapter: "KafkaAdapter",
    settings: "GuardSettings",
    memory: disk_guard.GuardMemory,
    now: "datetime.datetime",
    check_mode: bool = False,
    observe_only: bool = False,
    before_apply: Optional[Callable[[disk_guard.GuardMemory], None]] = None,
) -> Tuple[Dict[str, Any], disk_guard.GuardMemory]:
    """(result, memory for the next decision). Requests: DescribeClientQuotas, what the volume source needs
    (DescribeCluster, DescribeLogDirs), and only when the quota set must change one validate-only AlterClientQuotas
    and one that applies (none in check mode). ``now``: a timezone-aware datetime.

    ``observe_only``: decide and report, and neither read nor change client quotas (a cluster where the quota plugin
    enforces, whose brokers ignore client quotas, or limits being tried out); the decision then knows no factor
    already applied, as on a cluster the guard never touched.

    ``before_apply``: called with the memory to keep (its ``applying`` set) before the requests that change the
    quotas, so that the caller can store it first: a guard killed after Kafka applied its change but before it stored
    its memory must still know the factor Kafka holds as its own (disk_guard.other_writer).

    With ``settings.relief``, a relief step (guard_relief.step) comes before the decision: it starts moves off the log
    dirs at ``relieve_at``, or follows the moves it started; the result's ``relief`` says what it did. The decision is
    taken on the volumes as observed, so a volume that reached its limit is still throttled while moves run. A relief
    step that fails is reported in ``relief`` and never stops the decision. In check mode and observe-only, the step
    only plans.

    Raises quota_apply.QuotaApplyError (nothing applied when the validation refused) and KafkaAdapterError when
    the cluster cannot be asked at all (no volumes, no quotas: nothing is changed then).
    """
    current = None if observe_only else quota_apply.read_state(adapter)
    found = volume_sources.gather(adapter, settings.source, settings.expected_brokers, now)
    view = {
        "volumes": found["volumes"],
        "complete": not found["missing_brokers"],
        "missing_brokers": found["missing_brokers"],
    }
    seconds = now.timestamp()
    relief_report, relief_memory = None, memory.relief
    if settings.relief is not None:
        relief_report, relief_memory = guard_relief.step(
            adapter,
            settings.relief,
            guard_relief.memory_from_json(memory.relief),
            found["volumes"],
            seconds,
            check_mode=check_mode or observe_only,
        )
    held = None if current is None else settings.declaration.factor_applied(current)
    decision, remembered = disk_guard.decide(
        settings.policy, view, seconds, memory, held, settings.declaration.read_tolerance()
    )
    result = dict(decision)
    # A new memory: decide may hand back the one it was given, which check mode must return untouched. A factor Kafka
    # holds that this guard set (applied, or applying when a guard before it was killed after Kafka applied it) becomes
    # its applied one: the hand-over below replaces ``applying``, and a guard killed after that but before Kafka
    # applies must still know the factor Kafka holds as its own, not as another writer's.
    remembered = disk_guard.GuardMemory(
        remembered.observed_at, remembered.brokers, disk_guard.own_factor(held, memory), relief=relief_memory
    )
    if current is None:
        result.update(changed=False, changes=[], quotas=None, diff=None)
    else:
        factor, remembered.foreign, kept = disk_guard.other_writer(
            decision["throttle_factor"], held, memory, seconds, settings.policy.validity
        )
        if kept:
            result.update(
                throttle_factor=factor,
                state=volume_limits.state_of(factor),
                reason="{0}; {1}".format(decision["reason"], kept),
            )
        target = settings.declaration.quotas_at(factor)
        # The factor Kafka will hold, read the way the next decision reads it (rates are whole bytes).
        after = settings.declaration.factor_applied(target)
        if not check_mode and not kept and after != held and before_apply is not None:
            before_apply(
                disk_guard.GuardMemory(
                    remembered.observed_at,
                    remembered.brokers,
                    remembered.applied,
                    remembered.foreign,
                    after,
                    remembered.relief,
                )
            )
        result.update(quota_apply.reconcile(adapter, target, exclusive=True, check_mode=check_mode, current=current))
        if not kept:
            remembered.applied = after
    result.update(
        volumes=found["volumes"],
        source=found["source"],
        missing_brokers=found["missing_brokers"],
        stale_brokers=found["stale_brokers"],
        cluster_id=found["cluster_id"],
        complete=view["complete"],
        decided_at=seconds,
        declaration_warnings=declaration_warnings(settings.declaration),
        relief=relief_report,
    )
    result.setdefault("missing_data_applied", False)
    if relief_report is not None and relief_report["action"] in guard_relief.CHANGING:
        result["changed"] = True
    return result, (memory if check_mode else remembered)


def declaration_warnings(declaration: disk_guard.Declaration) -> List[str]:
    """What the declaration cannot do on Kafka, said once per decision."""
    shadowed = declaration.shadowed_client_ids()
    if not shadowed:
        return []
    names = ", ".join("client_id={0}".format(entity["client_id"]) for entity in shadowed)
    return [
        "{0}: a client_id-only produce rate never applies while the <default> user has one (Kafka's precedence puts "
        "every user entity first), and the guard always sets the <default> user's; declare "
        "user=<default>,client_id=... instead".format(names)
    ]
