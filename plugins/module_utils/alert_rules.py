# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus recording and alerting rules rendered from the throttle's own declaration, with no I/O.

The throttle is the Strimzi quota plugin (``kafka_quotas`` with ``type: strimzi``) or the disk guard
(``kafka_disk_guard``, the disk_guard module's options). Each limit an alert compares with is the limit that throttles,
read from that declaration and checked by the same functions the plugin's properties and the guard use, with the same
comparison (inclusive, as volume_limits has it), so an alert and the throttle cannot disagree on where the edge is.

``render`` returns one rule file as data (``{"groups": [...]}``): a single group, recording rules first, so that the
alerts read the volumes recorded in the same evaluation. The recorded series are named level:metric:operations (the
labels they keep, the metric, what was applied) and carry the ``cluster`` label:

* ``cluster_broker_log_dir:headroom_volume_available_bytes:min``, ``..._consumed_bytes:max``, ``..._size_bytes:max``
  and ``..._available_ratio:min``: each log dir as the throttle sees it - the guard's own figures, or the plugin's
  through the JMX exporter, the least free of what every broker's plugin reports;
* ``cluster_broker_log_dir:headroom_volume_hard_limit_free_bytes:`` (and ``soft``): the free bytes at which each limit
  trips on each log dir;
* ``cluster:headroom_throttle_factor:min``: the guard's factor; with the plugin
  ``cluster_broker:headroom_throttle_factor:min``, each broker's plugin's;
* ``cluster_broker:headroom_broker_info:`` (``broker_id``, ``instance``): the brokers the JMX exporter should be
  scraped on (and, with the plugin, the brokers that should load it), from ``brokers``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re
from typing import Any, Dict, List, Tuple

from ansible_collections.headroom.kafka.plugins.module_utils import (
    durations,
    limit_options,
    limit_sizing,
    quota_plugin_spec,
    volume_limits,
)

SETTINGS = (
    "cluster",
    "kafka_quotas",
    "kafka_disk_guard",
    "guard_observe_only",
    "brokers",
    "jmx_exporter",
    "jmx_selector",
    "guard_selector",
    "guard_interval",
    "fill_lookback",
    "fill_warning_horizon",
    "fill_critical_horizon",
    "fill_for",
    "throttled_minutes",
    "scrape_for",
    "keep_firing_for",
    "runbook_url",
)
DEFAULTS: Dict[str, Any] = {
    "kafka_quotas": None,
    "kafka_disk_guard": None,
    # The guard runs with --observe-only beside the plugin: the plugin's limits throttle, the guard's health is watched.
    "guard_observe_only": False,
    "brokers": [],
    "jmx_exporter": True,
    "jmx_selector": 'job="kafka"',
    "guard_selector": 'job="headroom-guard"',
    # The disk_guard role's disk_guard_interval: for a guard that does not export headroom_guard_interval_seconds.
    "guard_interval": 30,
    # The node-exporter mixin's NodeFilesystemSpaceFillingUp: the last 6 h of change, 24 h (warning) and 4 h
    # (critical) ahead, for an hour.
    "fill_lookback": "6h",
    "fill_warning_horizon": "24h",
    "fill_critical_horizon": "4h",
    "fill_for": "1h",
    "throttled_minutes": 10,
    "scrape_for": "5m",
    # How long an alert on an edge (a limit, an offline log dir, missing data) keeps firing once its condition is
    # gone: a volume that goes back and forth across a limit as the throttle lets producers on and off is one episode.
    "keep_firing_for": "5m",
    # Each alert's runbook_url: this address, then '#' and the alert's name lowercased; empty: no runbook_url.
    "runbook_url": "https://github.com/headroom-kafka/headroom.kafka/blob/main/docs/docsite/rst/guide_alerts.rst",
}
# The plugin checks the volumes every 60 s unless check_interval says otherwise.
PLUGIN_CHECK_INTERVAL = 60
PLUGIN_FALLBACK_FACTOR = 1.0
PLUGIN_VALIDITY = "PT5M"
GUARD_MISSED_INTERVALS = 3
# The window of the fill rate a limit must cover (KafkaLogDirLimitTooSmall): short, since a backfill at full speed
# that lasts minutes is the case the limit is for, and long enough for a fit over scrapes up to a minute apart.
COVER_WINDOW = 300
# The window over which failed relief steps fire HeadroomGuardReliefFailing, and how long a log dir may stay at
# relieve_at with no move that reaches relieve_to before HeadroomGuardReliefBlocked fires.
RELIEF_FAILURE_WINDOW = 900
RELIEF_BLOCKED_FOR = 600

_CLUSTER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# One PromQL label matcher: name, operator, double-quoted value (Go escapes); a selector is a comma-separated list.
_MATCHER = r'\s*[A-Za-z_][A-Za-z0-9_]*\s*(?:=~|!~|!=|=)\s*"(?:[^"\\\n]|\\.)*"\s*'
_SELECTOR = re.compile(r"^{0}(?:,{0})*$".format(_MATCHER))
_DURATION = re.compile(r"^(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_UNITS = ((3600, "h"), (60, "m"), (1, "s"))
_INT_MAX = 2**31 - 1
# Each alert's runbook is a section of the alerts guide titled with the alert's name (anchor: the name, lowercased),
# linked by default where the collection's repository (galaxy.yml) shows the guide.
RUNBOOK_URL = DEFAULTS["runbook_url"]


class AlertRulesError(ValueError):
    """Settings the rules cannot be rendered from; the message names the field, the value and what is allowed."""


# -- settings -----------------------------------------------------------------------------------------------------
def _duration_seconds(where, value):
    """Whole seconds from a Prometheus duration (``90m``, ``1h30m``, ``24h``) or a number of seconds, above 0."""
    seconds = None
    if isinstance(value, bool):
        pass
    elif isinstance(value, int):
        seconds = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        seconds = int(value)
    elif isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            seconds = int(text)
        else:
            match = _DURATION.match(text)
            if match and text:
                weeks, days, hours, minutes, secs = (int(part or 0) for part in match.groups())
                seconds = (((weeks * 7 + days) * 24 + hours) * 60 + minutes) * 60 + secs
    if seconds is None or seconds <= 0:
        raise AlertRulesError(
            "{0} must be a Prometheus duration such as 30m, 4h or 1h30m, or a whole number of seconds, above 0 "
            "(got {1!r})".format(where, value)
        )
    return seconds


def duration_text(seconds: int) -> str:
    """A Prometheus duration in hours, minutes and seconds (``24h``, ``1h30m``, ``90s``): hours, not days, so that a
    summary reads as the option was written."""
    parts = []
    for size, unit in _UNITS:
        if seconds >= size:
            parts.append("{0}{1}".format(seconds // size, unit))
            seconds %= size
    return "".join(parts) or "0s"


def _whole(where, value, low, high, what):
    if isinstance(value, str) and value.strip().lstrip("+").isdigit():
        value = int(value.strip())
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise AlertRulesError(
            "{0} must be a whole number from {1} to {2}, {3} (got {4!r})".format(where, low, high, what, value)
        )
    return value


def _number(where, value):
    """A finite number; numeric strings (``-e`` extra vars) are read as numbers."""
    if isinstance(value, str):
        try:
            value = float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise AlertRulesError("{0} must be a finite number (got {1!r})".format(where, value))
    return value


def _selector(where, value):
    if not isinstance(value, str) or not _SELECTOR.match(value) or "`" in value:
        raise AlertRulesError(
            '{0} must be PromQL label matchers without braces, such as job="kafka" or '
            'job="kafka",env=~"prod.*" (got {1!r}): every series the rules read is selected with it'.format(
                where, value
            )
        )
    return ",".join(part.strip() for part in _split_matchers(value))


def _split_matchers(text):
    return [match.group(0) for match in re.finditer(_MATCHER, text)]


def _brokers(value):
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise AlertRulesError("brokers must be a list of {{broker_id, instance}} (got {0!r})".format(value))
    brokers, ids, instances = [], set(), set()
    for index, entry in enumerate(value):
        where = "brokers[{0}]".format(index)
        if not isinstance(entry, dict) or set(entry) != {"broker_id", "instance"}:
            raise AlertRulesError(
                "{0} must be a dict with exactly the keys broker_id (the node id) and instance (the JMX exporter's "
                "scrape target as Prometheus labels it, such as kafka-1:7071) (got {1!r})".format(where, entry)
            )
        broker_id = _whole(where + ".broker_id", entry["broker_id"], 0, _INT_MAX, "a Kafka node id")
        instance = entry["instance"]
        if not isinstance(instance, str) or not instance.strip() or instance != instance.strip():
            raise AlertRulesError(
                "{0}.instance must be the scrape target's instance label, such as kafka-1:7071 (got {1!r})".format(
                    where, instance
                )
            )
        if broker_id in ids or instance in instances:
            raise AlertRulesError(
                "{0} repeats broker_id {1} or instance {2!r}: each broker once, each with its own exporter".format(
                    where, broker_id, instance
                )
            )
        ids.add(broker_id)
        instances.add(instance)
        brokers.append({"broker_id": broker_id, "instance": instance})
    return sorted(brokers, key=lambda broker: broker["broker_id"])


def _limit_level(where, limit):
    if isinstance(limit, dict) and "level" in limit:
        return dict(limit, level=_number(where + ".level", limit["level"]))
    return limit


def _guard_throttle(guard):
    """The guard's policy and limits from kafka_disk_guard, checked by the guard's own rules."""
    if not isinstance(guard, dict):
        raise AlertRulesError(
            "kafka_disk_guard must be a dict of the disk_guard module's options (got {0!r})".format(guard)
        )
    params = {
        "policy": guard.get("policy") or "strimzi",
        "missing_data_action": guard.get("missing_data_action") or "pause",
        "min_available_bytes": guard.get("min_available_bytes"),
        "min_available_ratio": guard.get("min_available_ratio"),
        "soft_limit": _limit_level("kafka_disk_guard.soft_limit", guard.get("soft_limit")),
        "hard_limit": _limit_level("kafka_disk_guard.hard_limit", guard.get("hard_limit")),
    }
    if params["policy"] not in ("strimzi", "graded"):
        raise AlertRulesError("kafka_disk_guard.policy must be strimzi or graded (got {0!r})".format(params["policy"]))
    if params["missing_data_action"] not in volume_limits.MISSING_DATA_ACTIONS:
        raise AlertRulesError(
            "kafka_disk_guard.missing_data_action must be pause or open (got {0!r})".format(
                params["missing_data_action"]
            )
        )
    for name in ("min_available_bytes", "min_available_ratio"):
        if params[name] is not None:
            params[name] = _number("kafka_disk_guard." + name, params[name])
    if params["min_available_bytes"] is not None and isinstance(params["min_available_bytes"], float):
        if not params["min_available_bytes"].is_integer():
            raise AlertRulesError(
                "kafka_disk_guard.min_available_bytes must be a whole number of bytes (got {0!r})".format(
                    guard.get("min_available_bytes")
                )
            )
        params["min_available_bytes"] = int(params["min_available_bytes"])
    problem = limit_options.policy_problem(params)
    if problem:
        raise AlertRulesError("kafka_disk_guard: {0}".format(problem))
    fallback = _number(
        "kafka_disk_guard.throttle_factor_fallback", guard.get("throttle_factor_fallback", PLUGIN_FALLBACK_FACTOR)
    )
    if not 0 <= fallback <= 1:
        raise AlertRulesError(
            "kafka_disk_guard.throttle_factor_fallback must be between 0 and 1 inclusive (got {0!r})".format(fallback)
        )
    try:
        validity = durations.parse_positive_duration(
            guard.get("throttle_factor_validity", PLUGIN_VALIDITY), "kafka_disk_guard.throttle_factor_validity"
        )
    except durations.DurationError as exc:
        raise AlertRulesError(str(exc)) from exc
    throttle = {
        "source": "guard",
        "policy": params["policy"],
        "missing_data_action": params["missing_data_action"],
        "fallback_factor": fallback,
        "validity": durations.format_duration(validity),
    }
    if params["policy"] == "strimzi":
        throttle["limit"] = _strimzi_limit(params["min_available_bytes"], params["min_available_ratio"])
    else:
        throttle["soft"] = _graded_limit(limit_options.graded_limit(params["soft_limit"]))
        throttle["hard"] = _graded_limit(limit_options.graded_limit(params["hard_limit"]))
    return throttle


def _plugin_throttle(spec):
    try:
        checked = quota_plugin_spec.validate_spec(spec, "kafka_quotas")
    except quota_plugin_spec.QuotaPluginSpecError as exc:
        raise AlertRulesError(str(exc)) from exc
    if checked["type"] != "strimzi":
        return None
    if checked.get("check_interval") == 0:
        raise AlertRulesError(
            "kafka_quotas.check_interval is 0, which turns the quota plugin's storage checks off: nothing throttles "
            "producers on disk space, so there is no limit to alert on"
        )
    return {
        "source": "plugin",
        "policy": "strimzi",
        "limit": _strimzi_limit(
            checked.get("min_available_bytes_per_volume"), checked.get("min_available_ratio_per_volume")
        ),
        "check_interval": checked.get("check_interval", PLUGIN_CHECK_INTERVAL),
        "fallback_factor": checked.get("throttle_factor_fallback", PLUGIN_FALLBACK_FACTOR),
        "validity": checked.get("throttle_factor_validity", PLUGIN_VALIDITY),
    }


def _strimzi_limit(min_available_bytes, min_available_ratio):
    if min_available_bytes is not None:
        return {"measure": "free_bytes", "level": min_available_bytes}
    return {"measure": "free_ratio", "level": min_available_ratio}


def _graded_limit(limit):
    measure = {"min_free_bytes": "free_bytes", "min_free_percentage": "free_percentage"}.get(
        limit["type"], "consumed_bytes"
    )
    return {"measure": measure, "level": limit["level"]}


def validate_settings(settings: object) -> Dict[str, Any]:
    """The settings with defaults filled in and every value checked; the throttle's declaration under ``throttle``.

    AlertRulesError names the field, the value and what is allowed.
    """
    if not isinstance(settings, dict):
        raise AlertRulesError("the alert rule settings must be a dict (got {0!r})".format(settings))
    unknown = sorted(str(key) for key in settings if key not in SETTINGS)
    if unknown:
        raise AlertRulesError(
            "unknown alert rule setting(s) {0}; allowed: {1}".format(", ".join(unknown), ", ".join(SETTINGS))
        )
    given = dict(DEFAULTS)
    given.update((key, value) for key, value in settings.items() if value is not None)
    cluster = given.get("cluster")
    if not isinstance(cluster, str) or not _CLUSTER.match(cluster):
        raise AlertRulesError(
            "cluster must name the Kafka cluster in letters, digits, '.', '_' and '-' (up to 100, starting with a "
            "letter or digit) (got {0!r}): it is the alerts' cluster label and is named in every summary".format(
                cluster
            )
        )
    quotas, guard = given["kafka_quotas"] or {}, given["kafka_disk_guard"] or {}
    plugin = _plugin_throttle(quotas) if quotas else None
    if not isinstance(given["guard_observe_only"], bool):
        raise AlertRulesError(
            "guard_observe_only must be true or false (got {0!r})".format(given["guard_observe_only"])
        )
    if plugin and guard and not given["guard_observe_only"]:
        raise AlertRulesError(
            "kafka_disk_guard is set and kafka_quotas has type strimzi: while the quota plugin is loaded the brokers "
            "ignore the client quotas the guard sets, so only one of them throttles; render the rules of that one, "
            "or set guard_observe_only when the guard only observes beside the plugin"
        )
    if not plugin and not guard:
        raise AlertRulesError(
            "nothing throttles producers on disk space: kafka_quotas has no type strimzi (got {0!r}) and "
            "kafka_disk_guard is not set, so there is no limit to alert on".format(quotas.get("type"))
        )
    throttle = plugin or _guard_throttle(guard)
    if not isinstance(given["jmx_exporter"], bool):
        raise AlertRulesError("jmx_exporter must be true or false (got {0!r})".format(given["jmx_exporter"]))
    result = {
        "cluster": cluster,
        "throttle": throttle,
        "brokers": _brokers(given["brokers"]),
        # The plugin's figures reach Prometheus only through the JMX exporter.
        "jmx_exporter": given["jmx_exporter"] or throttle["source"] == "plugin",
        "jmx_selector": _selector("jmx_selector", given["jmx_selector"]),
        "guard_selector": _selector("guard_selector", given["guard_selector"]),
        # A guard to watch: the one that throttles, or one that observes beside the plugin.
        "guard_watched": throttle["source"] == "guard" or bool(guard),
        # The guard's relieve option: its relief steps have alerts of their own.
        "guard_relieves": isinstance(guard, dict) and bool(guard.get("relieve")),
        "guard_interval": _whole("guard_interval", given["guard_interval"], 1, 86400, "seconds between decisions"),
        "throttled_minutes": _whole(
            "throttled_minutes", given["throttled_minutes"], 1, 10080, "how long producers may stay throttled"
        ),
    }
    for name in (
        "fill_lookback",
        "fill_warning_horizon",
        "fill_critical_horizon",
        "fill_for",
        "scrape_for",
    ):
        result[name] = _duration_seconds(name, given[name])
    # 0 turns the hold off: an alert on an edge then resolves at the first evaluation without its condition.
    hold = given["keep_firing_for"]
    result["keep_firing_for"] = 0 if hold in (0, "0") else _duration_seconds("keep_firing_for", hold)
    if result["fill_critical_horizon"] >= result["fill_warning_horizon"]:
        raise AlertRulesError(
            "fill_critical_horizon ({0}) must be shorter than fill_warning_horizon ({1}): the critical alert is the "
            "nearer one".format(
                duration_text(result["fill_critical_horizon"]), duration_text(result["fill_warning_horizon"])
            )
        )
    runbook_url = given["runbook_url"]
    if not isinstance(runbook_url, str) or any(c.isspace() for c in runbook_url):
        raise AlertRulesError("runbook_url must be a URL without blanks, or empty (got {0!r})".format(runbook_url))
    result["runbook_url"] = runbook_url
    if throttle["source"] == "plugin" and not result["brokers"]:
        raise AlertRulesError(
            "brokers is required with kafka_quotas type strimzi: the brokers that should load the quota plugin, each "
            "{broker_id, instance} with the instance label of its JMX exporter's scrape target (got none)"
        )
    return result


# -- PromQL and template text -------------------------------------------------------------------------------------
def promql_number(value: float) -> str:
    """A number as PromQL reads it back to the same double: integers without ``.0``, others in their shortest form."""
    return quota_plugin_spec.format_number(value)


def bytes_text(value: float) -> str:
    """Bytes for a summary: a whole binary unit when the figure is one (``10 GiB``), else the bytes."""
    number = int(value) if float(value).is_integer() else value
    for power, unit in ((5, "PiB"), (4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        size = 1024**power
        if isinstance(number, int) and number >= size and number % size == 0:
            return "{0} {1}".format(number // size, unit)
    return "{0} bytes".format(promql_number(value))


def limit_text(limit: Dict[str, Any]) -> str:
    """What a limit keeps, as a summary says it: ``10 GiB free``, ``20% free``, ``900 GiB used``."""
    level = limit["level"]
    if limit["measure"] == "free_bytes":
        return "{0} free".format(bytes_text(level))
    if limit["measure"] == "free_ratio":
        return "{0:.6g}% free (ratio {1})".format(level * 100, promql_number(level))
    if limit["measure"] == "free_percentage":
        return "{0}% free".format(promql_number(level))
    return "{0} used".format(bytes_text(level))


def _select(metric, *matchers):
    return "{0}{{{1}}}".format(metric, ",".join(matcher for matcher in matchers if matcher))


def _measure(cluster, limit):
    """(PromQL of the figure the limit compares, operator, threshold) for every volume."""
    level = promql_number(limit["level"])
    if limit["measure"] == "free_bytes":
        return _select("cluster_broker_log_dir:headroom_volume_available_bytes:min", cluster), "<=", level
    if limit["measure"] == "free_ratio":
        return _select("cluster_broker_log_dir:headroom_volume_available_ratio:min", cluster), "<=", level
    if limit["measure"] == "free_percentage":
        # Ratio times 100, the order volume_limits computes a percentage in, so that both round alike.
        return _select("cluster_broker_log_dir:headroom_volume_available_ratio:min", cluster) + " * 100", "<=", level
    return _select("cluster_broker_log_dir:headroom_volume_consumed_bytes:max", cluster), ">=", level


def _reached(cluster, limit):
    figure, operator, level = _measure(cluster, limit)
    return "({0} {1} {2})".format(figure, operator, level)


def _series_of(limit):
    return {
        "free_bytes": ("cluster_broker_log_dir:headroom_volume_available_bytes:min", 1),
        "free_ratio": ("cluster_broker_log_dir:headroom_volume_available_ratio:min", 1),
        "free_percentage": ("cluster_broker_log_dir:headroom_volume_available_ratio:min", 100),
        "consumed_bytes": ("cluster_broker_log_dir:headroom_volume_consumed_bytes:max", 1),
    }[limit["measure"]]


def _predicted(cluster, limit, lookback, horizon):
    """The limit reached within ``horizon`` seconds at the rate of the last ``lookback`` (a linear fit)."""
    record, scale = _series_of(limit)
    fit = "predict_linear({0}[{1}], {2})".format(_select(record, cluster), duration_text(lookback), horizon)
    operator = ">=" if limit["measure"] == "consumed_bytes" else "<="
    scaled = fit + " * 100" if scale == 100 else fit
    return "({0} {1} {2})".format(scaled, operator, promql_number(limit["level"]))


def _time_to_limit(limit, lookback):
    """A template that prints when the volume of the alert reaches the limit at the fitted rate, to the minute."""
    record, scale = _series_of(limit)
    window = duration_text(lookback)
    level = promql_number(limit["level"])
    now = "predict_linear({0}%s[{1}], 0)".format(record, window)
    slope = "deriv({0}%s[{1}])".format(record, window)
    if limit["measure"] == "consumed_bytes":
        query = "round(({0} - {1}) / {2}, 60)".format(level, now, slope)
    elif scale == 100:
        query = "round(({0} * 100 - {1}) / -({2} * 100), 60)".format(now, level, slope)
    else:
        query = "round(({0} - {1}) / -{2}, 60)".format(now, level, slope)
    return (
        '{{{{ with printf "{0}" $volume $volume | query }}}}{{{{ . | first | value | humanizeDuration }}}}{{{{ end }}}}'
    ).format(query)


def _volume_var(cluster):
    """Defines $volume: the matchers of the alert's volume, for the figures its summary queries."""
    return (
        '{{{{ $volume := printf "{{cluster=%q,broker_id=%q,log_dir=%q}}" "{0}" $labels.broker_id $labels.log_dir }}}}'
    ).format(cluster)


def _figure(record, formatting, suffix=""):
    return '{{{{ with query (print "{0}" $volume) }}}}{{{{ . | first | value | {1} }}}}{2}{{{{ end }}}}'.format(
        record, formatting, suffix
    )


_FREE = _figure("cluster_broker_log_dir:headroom_volume_available_bytes:min", "humanize1024", "B")
_USED = _figure("cluster_broker_log_dir:headroom_volume_consumed_bytes:max", "humanize1024", "B")
_SIZE = _figure("cluster_broker_log_dir:headroom_volume_size_bytes:max", "humanize1024", "B")
_PERCENT = _figure("cluster_broker_log_dir:headroom_volume_available_ratio:min", "humanizePercentage")
_VOLUME = "broker {{ $labels.broker_id }} log dir {{ $labels.log_dir }}"
_LOG_DIR = "log dir {{ $labels.log_dir }} of broker {{ $labels.broker_id }}"


def _volume_figures(limit):
    """The volume's figures, the one the limit compares first."""
    if limit["measure"] == "free_bytes":
        return "has {0} free ({1} of {2})".format(_FREE, _PERCENT, _SIZE)
    if limit["measure"] == "consumed_bytes":
        return "has {0} used of {1} ({2} free)".format(_USED, _SIZE, _PERCENT)
    return "has {0} free ({1} of {2})".format(_PERCENT, _FREE, _SIZE)


def _broker_named():
    """The broker of an alert on an exporter's series: its id when the recorded broker info knows the instance."""
    return (
        "{{ with $labels.broker_id }}broker {{ . }} ({{ $labels.instance }}){{ else }}{{ $labels.instance }}{{ end }}"
    )


def _factor_now(settings):
    return (
        '{{{{ with query `min({0}{{cluster="{1}"}})` }}}} (throttle factor now '
        '{{{{ . | first | value | printf "%.2f" }}}}){{{{ end }}}}'
    ).format(factor_record(settings), settings["cluster"])


def factor_record(settings: Dict[str, Any]) -> str:
    """The recorded throttle factor: each broker's plugin's (``broker_id``), or the guard's one for the cluster."""
    if settings["throttle"]["source"] == "plugin":
        return "cluster_broker:headroom_throttle_factor:min"
    return "cluster:headroom_throttle_factor:min"


def limit_free_bytes_record(name: str) -> str:
    """The recorded free bytes at which the ``soft`` or ``hard`` limit trips on each log dir."""
    return "cluster_broker_log_dir:headroom_volume_{0}_limit_free_bytes:".format(name)


def _relabel(expr, target, source):
    """``expr`` with label ``target`` copied from ``source``: the plugin's broker ids under the guard's name."""
    return 'label_replace({0}, "{1}", "$1", "{2}", "(.*)")'.format(expr, target, source)


# -- the rules ----------------------------------------------------------------------------------------------------
def _records(settings):
    cluster, throttle = settings["cluster"], settings["throttle"]
    label = {"cluster": cluster}
    records = []
    for broker in settings["brokers"]:
        records.append(
            {
                "record": "cluster_broker:headroom_broker_info:",
                "expr": "vector(1)",
                "labels": {"cluster": cluster, "broker_id": str(broker["broker_id"]), "instance": broker["instance"]},
            }
        )
    if throttle["source"] == "plugin":
        jmx = settings["jmx_selector"]
        available = _select("strimzi_quotas_available_bytes", jmx)
        consumed = _select("strimzi_quotas_consumed_bytes", jmx)

        def per_volume(aggregation, expr):
            # Every broker's plugin reports every volume of the cluster (remote_broker_id): the figure of the
            # observer that sees the least room is the one that throttles.
            return "{0} by (broker_id, log_dir) ({1})".format(
                aggregation, _relabel(expr, "broker_id", "remote_broker_id")
            )

        total = "({0} + {1})".format(available, consumed)
        records.extend(
            [
                {
                    "record": "cluster_broker_log_dir:headroom_volume_available_bytes:min",
                    "expr": per_volume("min", available),
                },
                {
                    "record": "cluster_broker_log_dir:headroom_volume_consumed_bytes:max",
                    "expr": per_volume("max", consumed),
                },
                {"record": "cluster_broker_log_dir:headroom_volume_size_bytes:max", "expr": per_volume("max", total)},
                # A volume without capacity has ratio 0, as the plugin has it (0 / 1 rather than 0 / 0).
                {
                    "record": "cluster_broker_log_dir:headroom_volume_available_ratio:min",
                    "expr": per_volume("min", "{0} / clamp_min{1}".format(available, total[:-1] + ", 1)")),
                },
                {
                    "record": factor_record(settings),
                    "expr": "min by (broker_id) ({0})".format(
                        _relabel(_select("strimzi_quotas_throttle_factor", jmx), "broker_id", "observing_broker_id")
                    ),
                },
            ]
        )
    else:
        guard = settings["guard_selector"]
        available = _select("headroom_guard_volume_available_bytes", guard)
        consumed = _select("headroom_guard_volume_consumed_bytes", guard)
        records.extend(
            [
                {
                    "record": "cluster_broker_log_dir:headroom_volume_available_bytes:min",
                    "expr": "min by (broker_id, log_dir) ({0})".format(available),
                },
                {
                    "record": "cluster_broker_log_dir:headroom_volume_consumed_bytes:max",
                    "expr": "max by (broker_id, log_dir) ({0})".format(consumed),
                },
                {
                    "record": "cluster_broker_log_dir:headroom_volume_size_bytes:max",
                    "expr": "max by (broker_id, log_dir) ({0} + {1})".format(available, consumed),
                },
                {
                    "record": "cluster_broker_log_dir:headroom_volume_available_ratio:min",
                    "expr": "min by (broker_id, log_dir) ({0} / clamp_min({0} + {1}, 1))".format(available, consumed),
                },
                {
                    "record": factor_record(settings),
                    "expr": "min({0})".format(_select("headroom_guard_throttle_factor", guard)),
                },
            ]
        )
    size = _select("cluster_broker_log_dir:headroom_volume_size_bytes:max", 'cluster="{0}"'.format(cluster))
    limits = (
        [("hard", throttle["limit"])]
        if "limit" in throttle
        else [("soft", throttle["soft"]), ("hard", throttle["hard"])]
    )
    for name, limit in limits:
        # The free bytes at which the limit trips on each volume, for the dashboard's lines beside the free space (the
        # plugin's one limit is the hard one: it pauses).
        records.append({"record": limit_free_bytes_record(name), "expr": _limit_free_bytes(size, limit)})
    for record in records:
        # A dict of its own for each rule: a YAML dump would otherwise write anchors and aliases.
        record.setdefault("labels", dict(label))
    return records


def _limit_free_bytes(size, limit):
    """PromQL of the free bytes at which ``limit`` trips on a volume of ``size`` bytes."""
    level = promql_number(limit["level"])
    if limit["measure"] == "free_bytes":
        return "{0} * 0 + {1}".format(size, level)
    if limit["measure"] == "free_ratio":
        return "{0} * {1}".format(size, level)
    if limit["measure"] == "free_percentage":
        return "{0} * {1} / 100".format(size, level)
    return "{0} - {1}".format(size, level)


def _alert(settings, name, expr, severity, summary, details, explanation, for_seconds=0, edge=False):
    """One alerting rule: ``summary`` short (what and where), ``details`` the figures (a template), ``explanation``
    fixed text (what it means and what to do); the description is the details, then the explanation on a line of its
    own. ``edge``: a condition that can go back and forth across a threshold, which keeps firing for
    keep_firing_for once it is gone."""
    rule = {"alert": name, "expr": expr}
    if for_seconds:
        rule["for"] = duration_text(for_seconds)
    if edge and settings["keep_firing_for"]:
        rule["keep_firing_for"] = duration_text(settings["keep_firing_for"])
    rule["labels"] = {"severity": severity, "cluster": settings["cluster"]}
    rule["annotations"] = {
        "summary": "Kafka cluster {0}: {1}".format(settings["cluster"], summary),
        "description": "{0}.\n{1}".format(capitalized(details), explanation),
    }
    if settings["runbook_url"]:
        rule["annotations"]["runbook_url"] = "{0}#{1}".format(settings["runbook_url"], name.lower())
    return rule


def capitalized(text: str) -> str:
    """``text`` with its first letter outside a template action (``{{ ... }}``) in capitals."""
    index, depth = 0, 0
    while index < len(text):
        if text.startswith("{{", index):
            depth, index = depth + 1, index + 2
        elif text.startswith("}}", index) and depth:
            depth, index = depth - 1, index + 2
        elif not depth and text[index].isalpha():
            return text[:index] + text[index].upper() + text[index + 1 :]
        else:
            index += 1
    return text


def _limit_alerts(settings):
    cluster, throttle = settings["cluster"], settings["throttle"]
    matcher = 'cluster="{0}"'.format(cluster)
    who = "the quota plugin" if throttle["source"] == "plugin" else "the disk guard"
    head = _volume_var(cluster) + _VOLUME + " "
    if throttle["policy"] == "strimzi":
        limit = throttle["limit"]
        return [
            _alert(
                settings,
                "KafkaLogDirAtLimit",
                _reached(matcher, limit),
                "critical",
                "%s is at the throttle's limit: producers are paused" % _LOG_DIR,
                "{0}{1}, at or past the limit of {2}: {3} holds every producer at 1 byte/s{4}".format(
                    head, _volume_figures(limit), limit_text(limit), who, _factor_now(settings)
                ),
                "A log dir is at the throttle's limit, so the throttle factor is 0 and producers are paused until "
                "every log dir has more room than the limit. Free space or add capacity on that broker.",
                edge=True,
            )
        ]
    soft, hard = throttle["soft"], throttle["hard"]
    return [
        _alert(
            settings,
            "KafkaLogDirPastSoftLimit",
            "{0} unless on (broker_id, log_dir) {1}".format(_reached(matcher, soft), _reached(matcher, hard)),
            "warning",
            "%s is past the soft limit: producers are throttled" % _LOG_DIR,
            "{0}{1}, past the soft limit of {2} (hard limit {3}): the disk guard throttles producers{4}".format(
                head, _volume_figures(soft), limit_text(soft), limit_text(hard), _factor_now(settings)
            ),
            "A log dir is between the soft and the hard limit: the guard scales the declared produce rates down "
            "linearly, to nothing at the hard limit. Free space or add capacity before it gets there.",
            edge=True,
        ),
        _alert(
            settings,
            "KafkaLogDirAtHardLimit",
            _reached(matcher, hard),
            "critical",
            "%s is at the hard limit: producers are paused" % _LOG_DIR,
            "{0}{1}, at or past the hard limit of {2}: the disk guard holds every producer at 1 byte/s{3}".format(
                head, _volume_figures(hard), limit_text(hard), _factor_now(settings)
            ),
            "A log dir is at the hard limit, so the throttle factor is 0 and producers are paused until every log "
            "dir is back above it. Free space or add capacity on that broker.",
            edge=True,
        ),
    ]


def _fill_alerts(settings):
    cluster, throttle = settings["cluster"], settings["throttle"]
    matcher = 'cluster="{0}"'.format(cluster)
    limit = throttle["limit"] if throttle["policy"] == "strimzi" else throttle["hard"]
    which = "the limit" if throttle["policy"] == "strimzi" else "the hard limit"
    lookback = settings["fill_lookback"]
    alerts = []
    for severity, horizon in (
        ("warning", settings["fill_warning_horizon"]),
        ("critical", settings["fill_critical_horizon"]),
    ):
        alerts.append(
            _alert(
                settings,
                "KafkaLogDirFillingUp",
                "{0} unless on (broker_id, log_dir) {1}".format(
                    _predicted(matcher, limit, lookback, horizon), _reached(matcher, limit)
                ),
                severity,
                "{0} reaches {1} within {2}".format(_LOG_DIR, which, duration_text(horizon)),
                "{0}{1} {2} and, at the rate of the last {3}, reaches {4} of {5} in {6}, within {7}".format(
                    _volume_var(cluster),
                    _VOLUME,
                    _volume_figures(limit),
                    duration_text(lookback),
                    which,
                    limit_text(limit),
                    _time_to_limit(limit, lookback),
                    duration_text(horizon),
                ),
                "A log dir fills up at a rate that brings it to the throttle's {0} within {1}; there producers are "
                "paused. Free space, add capacity or find the topics that grow before it gets there.".format(
                    "limit" if throttle["policy"] == "strimzi" else "hard limit", duration_text(horizon)
                ),
                settings["fill_for"],
            )
        )
    return alerts


def _check_interval(settings: Dict[str, Any]) -> float:
    """The throttle's check interval: the plugin's, or the guard's."""
    throttle = settings["throttle"]
    return throttle["check_interval"] if throttle["source"] == "plugin" else settings["guard_interval"]


def reaction_seconds(settings: Dict[str, Any]) -> float:
    """The seconds of fill a limit must cover (limit_sizing's rule with the throttle's measured parts): its check
    interval, its check, the throttle reaching the producers, what lands afterwards."""
    return _check_interval(settings) + limit_sizing.measured_margin_seconds()


def _cover_alerts(settings):
    """The limit no longer covers the recent fill rate: at that rate more arrives while the throttle reacts than the
    limit keeps free, so the volume would fill before producers are held."""
    cluster, throttle = settings["cluster"], settings["throttle"]
    matcher = 'cluster="{0}"'.format(cluster)
    reaction = reaction_seconds(settings)
    limit = throttle["limit"] if throttle["policy"] == "strimzi" else throttle["hard"]
    which = "the limit" if throttle["policy"] == "strimzi" else "the hard limit"
    window = duration_text(COVER_WINDOW)
    arriving = "clamp_min(-deriv({0}[{1}]), 0) * {2}".format(
        _select("cluster_broker_log_dir:headroom_volume_available_bytes:min", matcher), window, promql_number(reaction)
    )
    interval = _check_interval(settings)
    return [
        _alert(
            settings,
            "KafkaLogDirLimitTooSmall",
            "{0} > {1}".format(
                arriving, _select("cluster_broker_log_dir:headroom_volume_hard_limit_free_bytes:", matcher)
            ),
            "warning",
            "{0} fills faster than {1} covers".format(_LOG_DIR, which),
            (
                "{0}{1}: at its fill rate of the last {2}, {{{{ $value | humanize1024 }}}}B arrive in the {3} s the "
                "throttle takes to hold it ({4} s between checks, then the check, the throttle reaching producers and "
                "what lands after it), more than the {5} that {6} ({7}) keeps free"
            ).format(
                _volume_var(cluster),
                _VOLUME,
                window,
                promql_number(reaction),
                promql_number(interval),
                _figure("cluster_broker_log_dir:headroom_volume_hard_limit_free_bytes:", "humanize1024", "B"),
                which,
                limit_text(limit),
            ),
            "A log dir fills faster than its limit covers: at this rate it fills before the throttle holds producers, "
            "and a full log dir goes offline. Raise the limit, or check more often (limit_sizing's rule, the "
            "performance guide's race section), or find the writer.",
        )
    ]


def _throttle_alerts(settings):
    cluster, throttle = settings["cluster"], settings["throttle"]
    minutes = settings["throttled_minutes"]
    factor = _select(factor_record(settings), 'cluster="{0}"'.format(cluster))
    if throttle["source"] == "plugin":
        short = "the quota plugin on broker {{ $labels.broker_id }} throttles producers on disk space"
        summary = (
            "the quota plugin on broker {{{{ $labels.broker_id }}}} has scaled the produce quota by "
            '{{{{ printf "%.2f" $value }}}} for more than {0}m: producers are throttled on disk space'
        ).format(minutes)
    else:
        short = "the disk guard throttles producers on disk space"
        summary = (
            'the disk guard has scaled the declared produce rates by {{{{ printf "%.2f" $value }}}} for more than '
            "{0}m: producers are throttled on disk space"
        ).format(minutes)
    return [
        _alert(
            settings,
            "KafkaProducersThrottled",
            "{0} < 1".format(factor),
            "warning",
            short,
            summary,
            "The throttle factor has stayed below 1 because some log dir is past a limit (or its data is missing). "
            "See the log dir alerts for which one.",
            minutes * 60,
        )
    ]


def _missing_data_alerts(settings):
    throttle = settings["throttle"]
    guard = settings["guard_selector"]
    if throttle["source"] == "plugin":
        window = max(settings["scrape_for"], 2 * max(throttle["check_interval"], 1))
        applied = "increase({0}[{1}]) > 0".format(
            _select("strimzi_quotas_fallback_throttle_factor_applied_total", settings["jmx_selector"]),
            duration_text(window),
        )
        return [
            _alert(
                settings,
                "KafkaQuotaPluginFallbackApplied",
                _with_broker_id(settings, applied, "instance"),
                "warning",
                "the quota plugin on {{ $labels.instance }} applies its fallback throttle factor",
                (
                    "the quota plugin on {0} applied its fallback throttle factor {1} in the last {2}: it has had "
                    "no complete view of the cluster's volumes for more than {3}"
                ).format(
                    _broker_named(),
                    promql_number(throttle["fallback_factor"]),
                    duration_text(window),
                    throttle["validity"],
                ),
                "The plugin could not describe every broker's log dirs (a broker down, or its admin client refused) "
                "for longer than its validity, so it throttles by the fallback factor instead of the volumes.",
            )
        ]
    if throttle["policy"] == "strimzi":
        return [
            _alert(
                settings,
                "HeadroomGuardFallbackApplied",
                "{0} == 1".format(_select("headroom_guard_fallback_applied", guard)),
                "warning",
                "the disk guard applies its fallback throttle factor",
                (
                    "the disk guard applies its fallback throttle factor {0}: it has had no complete view of the "
                    "cluster's volumes for more than {1}"
                ).format(promql_number(throttle["fallback_factor"]), throttle["validity"]),
                "Some broker did not answer the guard's DescribeLogDirs (or an expected broker is missing) for longer "
                "than the factor's validity, so the guard throttles by the fallback factor instead of the volumes.",
                edge=True,
            )
        ]
    if throttle["missing_data_action"] == "pause":
        expr = "{0} == 1".format(_select("headroom_guard_missing_data_applied", guard))
        effect = "missing_data_action pause holds every producer at 1 byte/s"
    else:
        expr = "{0} == 0".format(_select("headroom_guard_observed", guard))
        effect = "missing_data_action open decides from the volumes it sees, blind to the others"
    return [
        _alert(
            settings,
            "HeadroomGuardMissingDataApplied",
            expr,
            "warning",
            "the disk guard cannot see every broker's log dirs",
            "the disk guard cannot see every broker's log dirs: {0}".format(effect),
            "Some broker did not answer the guard's DescribeLogDirs, or an expected broker is missing, so the guard "
            "applies its missing-data action.",
            edge=True,
        )
    ]


def _with_broker_id(settings, expr, on):
    """``expr`` with the broker_id of its instance from the recorded broker info, or as it is when none is known."""
    info = _select("cluster_broker:headroom_broker_info:", 'cluster="{0}"'.format(settings["cluster"]))
    return "({0}) * on (instance) group_left (broker_id) {1} or on ({2}) ({0})".format(expr, info, on)


def _guard_alerts(settings):
    guard = settings["guard_selector"]
    decided = _select("headroom_guard_last_decision_timestamp_seconds", guard)
    interval = _select("headroom_guard_interval_seconds", guard)
    failed = _select("headroom_guard_decisions_total", guard, 'outcome="failed"')
    missed = GUARD_MISSED_INTERVALS
    not_deciding = (
        "(time() - {decided} > {missed} * ({interval} or {decided} * 0 + {default}))"
        " or on (job, instance) "
        "({failed} >= {missed} unless on (job, instance) {decided})"
    ).format(decided=decided, interval=interval, failed=failed, missed=missed, default=settings["guard_interval"])
    return [
        _alert(
            settings,
            "HeadroomGuardNotDeciding",
            not_deciding,
            "critical",
            "the disk guard ({{ $labels.instance }}) takes no decision",
            (
                "the disk guard ({{{{ $labels.instance }}}}) {{{{ if $labels.outcome }}}}has failed every decision "
                "since it started ({{{{ $value }}}}){{{{ else }}}}has not decided for "
                "{{{{ $value | humanizeDuration }}}}, more than {0} intervals{{{{ end }}}}: the produce quotas stay as "
                "its last decision left them"
            ).format("three" if missed == 3 else missed),
            "The guard runs but takes no decision: it cannot reach Kafka, its quota changes are refused, or it "
            "hangs. Producers keep the last factor whatever the disks do.",
        ),
        _alert(
            settings,
            "HeadroomGuardNotScraped",
            "absent({0})".format(_select("headroom_guard_decisions_total", guard)),
            "critical",
            "Prometheus has no metrics of the disk guard",
            "Prometheus has had no metrics of the disk guard ({0}) for {1}".format(
                _select("headroom_guard_decisions_total", guard), duration_text(settings["scrape_for"])
            ),
            "The guard is stopped, its metrics port or textfile is gone, or the scrape configuration does not match "
            "guard_selector. Without its metrics no alert on the guard's factor or volumes can fire.",
            settings["scrape_for"],
        ),
    ]


def _relief_alerts(settings):
    """The guard's relieve option: relief that fails, or that has no move for a log dir at relieve_at, leaves only the
    throttle between that log dir and a full disk."""
    guard = settings["guard_selector"]
    failed = _select("headroom_guard_relief_steps_total", guard, 'action="failed"')
    return [
        _alert(
            settings,
            "HeadroomGuardReliefFailing",
            "increase({0}[{1}]) > 0".format(failed, duration_text(RELIEF_FAILURE_WINDOW)),
            "warning",
            "the disk guard ({{ $labels.instance }}) fails to relieve filling log dirs",
            (
                "a relief step of the disk guard ({{{{ $labels.instance }}}}) failed in the last {0}: filling log dirs "
                "are not being relieved, and only the throttle stands before a full disk"
            ).format(duration_text(RELIEF_FAILURE_WINDOW)),
            "A relief step of the guard failed: a request failed, Kafka refused a move, or a reassignment that the "
            "guard did not start is in progress. The guard's log says which and what it undid.",
        ),
        _alert(
            settings,
            "HeadroomGuardReliefBlocked",
            "{0} > 0".format(_select("headroom_guard_relief_blocked_log_dirs", guard)),
            "warning",
            "the disk guard ({{ $labels.instance }}) has log dirs it cannot relieve",
            (
                "{{{{ $value }}}} log dir(s) at the disk guard's relieve_at have had no move reaching relieve_to for "
                "{0}: the throttle will fire when they reach the limit"
            ).format(duration_text(RELIEF_BLOCKED_FOR)),
            "The guard's relief plan found no replica to move off these log dirs: no other log dir or broker has "
            "room below its own relieve_at, partitions are under-replicated, or a move would break min.insync.replicas "
            "or rack placement. The guard's log names each log dir and what blocks it.",
            RELIEF_BLOCKED_FOR,
        ),
    ]


def _jmx_alerts(settings):
    cluster, throttle = settings["cluster"], settings["throttle"]
    jmx = settings["jmx_selector"]
    info = _select("cluster_broker:headroom_broker_info:", 'cluster="{0}"'.format(cluster))
    up = _select("up", jmx)
    offline = "{0} == 1".format(_select("kafka_log_logmanager_logdirectoryoffline", jmx))
    alerts = [
        _alert(
            settings,
            "KafkaLogDirOffline",
            _with_broker_id(settings, offline, "instance, log_dir"),
            "critical",
            "log dir {{ $labels.log_dir }} of {{ $labels.instance }} is offline",
            "log dir {{{{ $labels.log_dir }}}} of {0} is offline".format(_broker_named()),
            "Kafka took the log dir offline after an I/O error: its replicas there are offline. The throttle skips "
            "a volume it cannot size, so a full disk that failed does not throttle producers.",
            edge=True,
        ),
        _alert(
            settings,
            "KafkaJmxExporterNotScraped",
            "{0} or on (instance) ({1})".format(
                _with_broker_id(settings, "{0} == 0".format(up), "instance"),
                "{0} unless on (instance) {1}".format(info, up),
            ),
            "critical" if throttle["source"] == "plugin" else "warning",
            "Prometheus has no metrics from the JMX exporter of {{ $labels.instance }}",
            "Prometheus has had no metrics from the JMX exporter of {0} for {1}".format(
                _broker_named(), duration_text(settings["scrape_for"])
            ),
            "The broker is down, its exporter does not answer, or no scrape target of jmx_selector has this "
            "instance. The alerts on its log dirs{0} cannot fire while it is not scraped.".format(
                " and its quota plugin" if throttle["source"] == "plugin" else ""
            ),
            settings["scrape_for"],
        ),
    ]
    if throttle["source"] == "plugin":
        loaded_for = max(settings["scrape_for"], 2 * max(throttle["check_interval"], 1))
        alerts.append(
            _alert(
                settings,
                "KafkaQuotaPluginNotLoaded",
                "({0} and on (instance) {1} == 1) unless on (instance) {2}".format(
                    info, up, _select("strimzi_quotas_throttle_factor", jmx)
                ),
                "critical",
                "the quota plugin is not loaded on broker {{ $labels.broker_id }}",
                (
                    "broker {{{{ $labels.broker_id }}}} ({{{{ $labels.instance }}}}) has served no "
                    "strimzi_quotas_throttle_factor for {0}: the Strimzi quota plugin is not loaded there"
                ).format(duration_text(loaded_for)),
                "kafka_quotas has type strimzi, so every broker should load the plugin. One that does not never "
                "throttles its producers when the disks fill up: check its client.quota.callback.class and the "
                "plugin's jar in its libs directory, then restart it.",
                loaded_for,
            )
        )
    return alerts


def render(settings: object) -> Dict[str, Any]:
    """The rule file for Prometheus (``{"groups": [one group]}``) from the settings; AlertRulesError names the field."""
    checked = validate_settings(settings)
    rules: List[Dict[str, Any]] = _records(checked)
    rules.extend(_limit_alerts(checked))
    rules.extend(_fill_alerts(checked))
    rules.extend(_cover_alerts(checked))
    rules.extend(_throttle_alerts(checked))
    rules.extend(_missing_data_alerts(checked))
    if checked["guard_watched"]:
        rules.extend(_guard_alerts(checked))
    if checked["guard_relieves"]:
        rules.extend(_relief_alerts(checked))
    if checked["jmx_exporter"]:
        rules.extend(_jmx_alerts(checked))
    return {"groups": [{"name": "headroom-kafka-{0}".format(checked["cluster"]), "rules": rules}]}


def alert_names(rule_file: Dict[str, Any]) -> List[Tuple[str, str]]:
    """(alert name, severity) of every alerting rule of a rendered file, in order."""
    return [
        (rule["alert"], rule["labels"]["severity"])
        for group in rule_file["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]
