# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The disk guard's options: one argument spec for the disk_guard module and the guard process (headroom_guard reads
the same keys from its configuration file), and their conversion into the rules' objects, with no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, List, Optional

from ansible_collections.headroom.kafka.plugins.module_utils import (
    connection,
    disk_guard,
    durations,
    factor_steps,
    guard_relief,
    limit_options,
    option_checks,
    quota_options,
    volume_sources,
)

GUARD_OPTIONS: Dict[str, Dict[str, Any]] = dict(
    quotas=dict(type="list", elements="dict", default=[], options=quota_options.QUOTA_OPTIONS),
    default_producer_byte_rate=dict(type="float"),
    excluded_principals=dict(type="list", elements="str", default=[]),
    excluded_producer_byte_rate=dict(type="float"),
    throttle_factor_fallback=dict(type="float", default=1.0),
    throttle_factor_validity=dict(type="str", default="PT5M"),
    throttle_factor_step=dict(type="float", default=factor_steps.DEFAULT_STEP),
    log_dirs=dict(type="list", elements="dict"),
    snapshots=dict(type="list", elements="dict"),
    max_age=dict(type="str"),
    expected_brokers=dict(type="list", elements="int"),
    relieve=dict(type="dict", options=guard_relief.RELIEF_OPTIONS),
    **limit_options.POLICY_ARGUMENT_SPEC,
)
ARGUMENT_SPEC = connection.argument_spec(**GUARD_OPTIONS)
MUTUALLY_EXCLUSIVE = limit_options.POLICY_MUTUALLY_EXCLUSIVE + [["log_dirs", "snapshots"]]
REQUIRED_IF = limit_options.POLICY_REQUIRED_IF + connection.CONNECTION_REQUIRED_IF
REQUIRED_TOGETHER = connection.CONNECTION_REQUIRED_TOGETHER
OPTION_RANGES: Dict[str, option_checks.Range] = dict(
    limit_options.POLICY_RANGES,
    **{
        "expected_brokers": option_checks.BROKER_IDS,
        "throttle_factor_fallback": option_checks.Number(0, 1),
    },
)


class GuardSettings(object):
    """The validated options: the policy, the declaration, where the volumes come from and, when the guard relieves
    filling log dirs before it throttles, how (guard_relief.ReliefSettings, or None)."""

    def __init__(
        self,
        policy: disk_guard.Policy,
        declaration: disk_guard.Declaration,
        source: volume_sources.Given,
        expected_brokers: List[int],
        relief: Optional[guard_relief.ReliefSettings] = None,
    ) -> None:
        self.policy, self.declaration, self.source, self.expected_brokers = (
            policy,
            declaration,
            source,
            expected_brokers,
        )
        self.relief = relief


def settings(params: Dict[str, Any]) -> GuardSettings:
    """GuardSettings from validated params (argument spec applied); disk_guard.GuardError names the option."""
    problem = (
        connection.connection_problem(params)
        or connection.missing_servers(params, "to read every log dir and to read and set its client quotas")
        or limit_options.policy_problem(params)
    )
    if problem:
        raise disk_guard.GuardError(problem)
    try:
        option_checks.check_params(params, OPTION_RANGES)
        validity = durations.parse_duration(params["throttle_factor_validity"], "throttle_factor_validity")
        source = volume_sources.given(params["log_dirs"], params["snapshots"], params["max_age"])
    except (option_checks.OptionError, durations.DurationError, volume_sources.VolumeSourceError) as exc:
        raise disk_guard.GuardError(str(exc)) from exc
    policy = disk_guard.Policy(
        params["policy"],
        min_available_bytes=params["min_available_bytes"],
        min_available_ratio=params["min_available_ratio"],
        soft_limit=limit_options.graded_limit(params["soft_limit"]),
        hard_limit=limit_options.graded_limit(params["hard_limit"]),
        missing_data_action=params["missing_data_action"],
        throttle_factor_fallback=params["throttle_factor_fallback"],
        throttle_factor_validity=validity.total_seconds(),
        throttle_factor_step=params["throttle_factor_step"],
    )
    declaration = disk_guard.Declaration(
        quota_options.spec_from_params(params["quotas"]),
        params["default_producer_byte_rate"],
        params["excluded_principals"],
        params["excluded_producer_byte_rate"],
    )
    try:
        relief = guard_relief.relief_settings(params["relieve"], policy)
    except ValueError as exc:  # OptionError, DurationError, PlanError: each names the option
        raise disk_guard.GuardError(str(exc)) from exc
    return GuardSettings(policy, declaration, source, params["expected_brokers"] or [], relief)
