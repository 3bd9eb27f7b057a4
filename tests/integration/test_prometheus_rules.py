"""The Prometheus rules rendered from the throttle's declarations, held to Prometheus' own tools.

Each declaration (the quota plugin with a bytes limit and with a ratio limit, the guard with graded percentages, with
graded consumed space and with the plugin's rule) is rendered, checked with ``promtool check rules`` and run through
``promtool test rules`` on unit tests generated here for every alert it has: the alert fires at the edge, stays quiet
just short of it, and resolves. A volume's edge is where the throttle's own rules (volume_limits) say the limit is
reached, so the alerts are held to the throttle, not to numbers of their own; the summaries are compared word for word
with their figures (Prometheus' humanize functions are mirrored here).
"""

import fractions
import importlib.util
import math
import os
import re
import shutil
import subprocess

import pytest
import yaml
from guard_pages import guard_page

from ansible_collections.headroom.kafka.plugins.module_utils import alert_rules, volume_limits

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="needs promtool (Debian: apt install prometheus)")
JMX_RULES_TEST = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "roles", "test_jmx_exporter_rules.py"
)

CLUSTER = "prod-eu"
GIB = 1024**3
BROKERS = [{"broker_id": 1, "instance": "kafka-1:7071"}, {"broker_id": 2, "instance": "kafka-2:7071"}]
DECLARATIONS = {
    "plugin-bytes": {
        "cluster": CLUSTER,
        "kafka_quotas": {"type": "strimzi", "min_available_bytes_per_volume": 10 * GIB, "check_interval": 240},
        "brokers": BROKERS,
    },
    "plugin-ratio": {
        "cluster": CLUSTER,
        "kafka_quotas": {
            "type": "strimzi",
            "min_available_ratio_per_volume": 0.1,
            "throttle_factor_fallback": 0.5,
            "throttle_factor_validity": "PT10M",
        },
        "brokers": BROKERS,
        "throttled_minutes": 5,
    },
    "guard-graded-percentage": {
        "cluster": CLUSTER,
        "kafka_disk_guard": {
            "policy": "graded",
            "soft_limit": {"type": "min_free_percentage", "level": 20},
            "hard_limit": {"type": "min_free_percentage", "level": 5},
        },
        "brokers": BROKERS,
    },
    "guard-graded-consumed": {
        "cluster": CLUSTER,
        "kafka_disk_guard": {
            "policy": "graded",
            "soft_limit": {"type": "consumed_space", "level": 800 * GIB},
            "hard_limit": {"type": "consumed_space", "level": 900 * GIB},
            "missing_data_action": "open",
        },
        "jmx_exporter": False,
        "fill_warning_horizon": "12h",
        "fill_critical_horizon": "2h",
        "fill_for": "30m",
        "guard_interval": 60,
    },
    "guard-strimzi-bytes": {
        "cluster": CLUSTER,
        "kafka_disk_guard": {
            "policy": "strimzi",
            "min_available_bytes": 50 * GIB,
            "throttle_factor_fallback": 0,
            "relieve": {
                "relieve_at": {"type": "min_free_bytes", "level": 100 * GIB},
                "relieve_to": {"type": "min_free_bytes", "level": 150 * GIB},
            },
        },
        "guard_selector": 'job="node",instance="guard-1:9100"',
    },
}
JOB = "kafka"
GUARD_INSTANCE = "guard-1:9400"
LOG_DIR = "/var/lib/kafka/data-0"


# -- Prometheus' template functions, as Go prints them ------------------------------------------------------------
def go_g4(value):
    """Go's %.4g (the same digits and exponent form as C's)."""
    return "%.4g" % value


def humanize1024(value):
    if abs(value) <= 1 or math.isnan(value) or math.isinf(value):
        return go_g4(value)
    prefix = ""
    for unit in ("ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"):
        if abs(value) < 1024:
            break
        prefix = unit
        value /= 1024
    return go_g4(value) + prefix


def humanize_percentage(value):
    return go_g4(value * 100) + "%"


def humanize_duration(seconds):
    if seconds == 0:
        return "0s"
    whole = int(seconds)
    days, hours, minutes, secs = whole // 86400, whole // 3600 % 24, whole // 60 % 60, whole % 60
    if days:
        return "%dd %dh %dm %ds" % (days, hours, minutes, secs)
    if hours:
        return "%dh %dm %ds" % (hours, minutes, secs)
    if minutes:
        return "%dm %ds" % (minutes, secs)
    return go_g4(seconds) + "s"


# -- series and expectations --------------------------------------------------------------------------------------
def selector(name, labels):
    return "{0}{{{1}}}".format(name, ",".join('{0}="{1}"'.format(key, value) for key, value in labels.items()))


def values(points):
    """Sample values one by one: None is a missed scrape, "stale" a series that went away."""
    return " ".join("_" if point is None else str(point) for point in points)


def minutes(count):
    return "{0}m".format(count)


def with_labels(template, labels):
    """A summary as Prometheus expands it: each {{ $labels.NAME }} replaced by the alert's label."""
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda match: str(labels[match[1]]), template)


class Declaration:
    """One declaration's rules and the promtool unit tests of every alert they have."""

    def __init__(self, name, keep_firing_for=0):
        """``keep_firing_for``: 0 (the default here) models each alert at its edge, resolving at the first evaluation
        without its condition; the hold the rules have by default is tested on its own
        (test_an_edge_alert_keeps_firing_while_the_volume_goes_back_and_forth_across_its_limit)."""
        self.name = name
        self.settings = dict(DECLARATIONS[name], keep_firing_for=keep_firing_for)
        self.rules = alert_rules.render(self.settings)
        self.checked = alert_rules.validate_settings(self.settings)
        self.throttle = self.checked["throttle"]
        self.plugin = self.throttle["source"] == "plugin"
        self.by_name = {}
        for rule in self.rules["groups"][0]["rules"]:
            if "alert" in rule:
                self.by_name[(rule["alert"], rule["labels"]["severity"])] = rule
        self.covered = set()
        self.groups = []

    # The alert as promtool reports it: the rule's own labels and runbook_url, its summary with the alert's labels,
    # and its description: the figures given, then the rule's explanation.
    def expected(self, alert, severity, labels, details):
        rule = self.by_name[(alert, severity)]
        self.covered.add((alert, severity))
        explanation = rule["annotations"]["description"].split("\n", 1)[1]
        annotations = dict(
            rule["annotations"],
            summary=with_labels(rule["annotations"]["summary"], labels),
            description="{0}.\n{1}".format(alert_rules.capitalized(details), explanation),
        )
        return {"exp_labels": dict(labels, severity=severity, cluster=CLUSTER), "exp_annotations": annotations}

    def group(self, series, checks):
        """A test group: its series and, for each (minute, alert name, expected alerts), one check."""
        self.groups.append(
            {
                "interval": "1m",
                "input_series": [{"series": name, "values": values(points)} for name, points in series],
                "alert_rule_test": [
                    {"eval_time": minutes(minute), "alertname": alert, "exp_alerts": expected}
                    for minute, alert, expected in checks
                ],
            }
        )

    # -- the volumes as the throttle exports them --------------------------------------------------------------------
    def volume_series(self, broker_id, total, usables, factors):
        """The throttle's figures of one log dir over time, and its factor. The plugin's come from two brokers'
        plugins; the second sees one GiB more free (an older view), so the recorded figure is the first's."""
        if not self.plugin:
            labels = {"job": "headroom-guard", "instance": GUARD_INSTANCE, "broker_id": broker_id, "log_dir": LOG_DIR}
            labels = self.guard_labels(labels)
            return [
                (selector("headroom_guard_volume_available_bytes", labels), usables),
                (selector("headroom_guard_volume_consumed_bytes", labels), [total - u for u in usables]),
                (selector("headroom_guard_throttle_factor", self.guard_labels({})), factors),
            ]
        series = []
        for observer, extra in ((1, 0), (2, GIB)):
            labels = {
                "job": JOB,
                "instance": "kafka-{0}:7071".format(observer),
                "observing_broker_id": observer,
                "remote_broker_id": broker_id,
                "log_dir": LOG_DIR,
            }
            seen = [u + extra for u in usables]
            series.append((selector("strimzi_quotas_available_bytes", labels), seen))
            series.append((selector("strimzi_quotas_consumed_bytes", labels), [total - u for u in seen]))
            plugin = {"job": JOB, "instance": labels["instance"], "observing_broker_id": observer}
            series.append(
                (selector("strimzi_quotas_throttle_factor", plugin), [self.plugin_factor(u, total) for u in seen])
            )
        return series

    def guard_labels(self, labels):
        """The guard's series carry the labels its selector matches on (job, instance)."""
        merged = {"job": "headroom-guard", "instance": GUARD_INSTANCE}
        for matcher in self.checked["guard_selector"].split(","):
            key, value = matcher.split("=", 1)
            merged[key] = value.strip('"')
        merged.update((key, value) for key, value in labels.items() if key not in ("job", "instance"))
        return merged

    def plugin_factor(self, usable, total):
        return 0 if self.violates(self.throttle["limit"], usable, total) else 1

    @staticmethod
    def violates(limit, usable, total):
        """The throttle's own rule for one volume, from volume_limits."""
        volume = {"broker_id": 1, "log_dir": LOG_DIR, "total_bytes": total, "usable_bytes": usable}
        level = limit["level"]
        if limit["measure"] == "free_bytes":
            return volume_limits.strimzi_violates(volume, min_available_bytes=level)
        if limit["measure"] == "free_ratio":
            return volume_limits.strimzi_violates(volume, min_available_ratio=level)
        graded = {"free_percentage": "min_free_percentage", "consumed_bytes": "consumed_space"}[limit["measure"]]
        return volume_limits.breaches(volume, {"type": graded, "level": level})

    def edge(self, limit, total):
        """The most usable bytes at which the throttle's rule says the limit is reached."""
        low, high = 0, total
        assert self.violates(limit, low, total) and not self.violates(limit, high, total)
        while high - low > 1:
            middle = (low + high) // 2
            if self.violates(limit, middle, total):
                low = middle
            else:
                high = middle
        return low

    def factor(self, usable, total):
        if self.throttle["policy"] == "strimzi":
            return float(self.plugin_factor(usable, total))
        volume = {"broker_id": 1, "log_dir": LOG_DIR, "total_bytes": total, "usable_bytes": usable}
        soft, hard = (
            {
                "type": {"free_percentage": "min_free_percentage"}.get(limit["measure"], "consumed_space"),
                "level": limit["level"],
            }
            for limit in (self.throttle["soft"], self.throttle["hard"])
        )
        return volume_limits.graded_volume_factor(volume, soft, hard)

    @staticmethod
    def figures(limit, usable, total):
        free, size, used = humanize1024(usable) + "B", humanize1024(total) + "B", humanize1024(total - usable) + "B"
        percent = humanize_percentage(usable / total)
        if limit["measure"] == "free_bytes":
            return "has {0} free ({1} of {2})".format(free, percent, size)
        if limit["measure"] == "consumed_bytes":
            return "has {0} used of {1} ({2} free)".format(used, size, percent)
        return "has {0} free ({1} of {2})".format(percent, free, size)

    @staticmethod
    def limit_usable(limit, total):
        """The usable bytes at which ``limit`` trips on a volume of ``total`` bytes, exactly."""
        level = fractions.Fraction(limit["level"])
        return {
            "free_bytes": level,
            "free_ratio": level * total,
            "free_percentage": level * total / 100,
            "consumed_bytes": total - level,
        }[limit["measure"]]

    def total_for(self, limit):
        return 1024 * GIB if limit["measure"] == "consumed_bytes" else 200 * GIB

    # -- the alerts ------------------------------------------------------------------------------------------------
    def at_limit(self, usable, total, factor, broker="2"):
        """KafkaLogDirAtLimit as it fires for broker ``broker``'s log dir with ``usable`` of ``total`` bytes free."""
        limit = self.throttle["limit"]
        who = "the quota plugin" if self.plugin else "the disk guard"
        details = (
            "broker {0} log dir {1} {2}, at or past the limit of {3}: {4} holds every producer at 1 byte/s "
            "(throttle factor now {5:.2f})"
        ).format(broker, LOG_DIR, self.figures(limit, usable, total), alert_rules.limit_text(limit), who, factor)
        return self.expected("KafkaLogDirAtLimit", "critical", {"broker_id": broker, "log_dir": LOG_DIR}, details)

    def limit_tests(self):
        broker = "2"
        labels = {"broker_id": broker, "log_dir": LOG_DIR}
        head = "broker {0} log dir {1} ".format(broker, LOG_DIR)
        if self.throttle["policy"] == "strimzi":
            limit = self.throttle["limit"]
            total = self.total_for(limit)
            at = self.edge(limit, total)
            usables = [at + 1, at, at + total // 4]
            factors = [self.factor(u, total) for u in usables]

            def firing(step):
                if step != 1:
                    return []
                return [self.at_limit(usables[step], total, factors[step])]

            self.group(
                self.volume_series(broker, total, usables, factors),
                [(step, "KafkaLogDirAtLimit", firing(step)) for step in range(3)],
            )
            return
        soft, hard = self.throttle["soft"], self.throttle["hard"]
        total = self.total_for(soft)
        at_soft, at_hard = self.edge(soft, total), self.edge(hard, total)
        usables = [at_soft + 1, at_soft, at_hard + 1, at_hard, at_soft + total // 8]
        factors = [self.factor(u, total) for u in usables]

        def soft_firing(step):
            if step not in (1, 2):
                return []
            summary = (
                "{0}{1}, past the soft limit of {2} (hard limit {3}): the disk guard throttles producers "
                "(throttle factor now {4:.2f})"
            ).format(
                head,
                self.figures(soft, usables[step], total),
                alert_rules.limit_text(soft),
                alert_rules.limit_text(hard),
                factors[step],
            )
            return [self.expected("KafkaLogDirPastSoftLimit", "warning", labels, summary)]

        def hard_firing(step):
            if step != 3:
                return []
            summary = (
                "{0}{1}, at or past the hard limit of {2}: the disk guard holds every producer at 1 byte/s "
                "(throttle factor now {3:.2f})"
            ).format(head, self.figures(hard, usables[step], total), alert_rules.limit_text(hard), factors[step])
            return [self.expected("KafkaLogDirAtHardLimit", "critical", labels, summary)]

        checks = [(step, "KafkaLogDirPastSoftLimit", soft_firing(step)) for step in range(5)]
        checks += [(step, "KafkaLogDirAtHardLimit", hard_firing(step)) for step in range(5)]
        self.group(self.volume_series(broker, total, usables, factors), checks)

    def fill_tests(self):
        """A log dir losing the same bytes every minute, fitted over the lookback: the limit is reached a quarter of a
        minute's loss after the tested horizon's edge, so the edge falls between two evaluations whatever the fit's
        rounding; the alert is pending from there and fires ``fill_for`` later, then resolves once space is freed."""
        limit = self.throttle["limit"] if self.throttle["policy"] == "strimzi" else self.throttle["hard"]
        which = "the limit" if self.throttle["policy"] == "strimzi" else "the hard limit"
        total = self.total_for(limit)
        limit_usable = self.limit_usable(limit, total)
        horizons = {
            "warning": self.checked["fill_warning_horizon"] // 60,
            "critical": self.checked["fill_critical_horizon"] // 60,
        }
        lookback = alert_rules.duration_text(self.checked["fill_lookback"])
        hold = self.checked["fill_for"] // 60
        loss = 256 * 1024**2  # bytes a minute
        edge = 30
        broker = "1"
        labels = {"broker_id": broker, "log_dir": LOG_DIR}
        for severity, horizon in horizons.items():
            start = limit_usable + loss * (horizon + edge) - fractions.Fraction(loss, 4)
            freed = edge + hold + 10
            end = freed + self.checked["fill_lookback"] // 60 + 2
            usables = [int(round(start - loss * step)) for step in range(freed)] + [int(total * 0.9)] * (end - freed)
            factors = [self.factor(u, total) for u in usables]

            def firing(minute, usables=usables, freed=freed):
                alerts = []
                if minute >= freed:
                    return alerts
                for other, other_horizon in horizons.items():
                    # The first minute whose fit reaches the limit (a fit needs two points: not before minute 1).
                    reached = [
                        step for step in range(1, minute + 1) if usables[step] - loss * other_horizon <= limit_usable
                    ]
                    if not reached or minute < reached[0] + hold or usables[minute] <= limit_usable:
                        continue
                    to_limit = round((usables[minute] - limit_usable) / loss) * 60
                    summary = (
                        "broker {0} log dir {1} {2} and, at the rate of the last {3}, reaches {4} of {5} in {6}, "
                        "within {7}"
                    ).format(
                        broker,
                        LOG_DIR,
                        self.figures(limit, usables[minute], total),
                        lookback,
                        which,
                        alert_rules.limit_text(limit),
                        humanize_duration(to_limit),
                        alert_rules.duration_text(other_horizon * 60),
                    )
                    alerts.append(self.expected("KafkaLogDirFillingUp", other, labels, summary))
                return alerts

            checks = [
                (minute, "KafkaLogDirFillingUp", firing(minute)) for minute in (edge + hold - 1, edge + hold, end - 1)
            ]
            assert [bool(expected) for _m, _a, expected in checks] == [severity == "critical", True, False]
            assert any(alert["exp_labels"]["severity"] == severity for alert in checks[1][2]) and not any(
                alert["exp_labels"]["severity"] == severity for alert in checks[0][2]
            )
            self.group(self.volume_series(broker, total, usables, factors), checks)

    def cover_tests(self):
        """A log dir losing, every minute, what brings 1.5 times the limit's free bytes in the throttle's reaction: the
        alert fires once the fit has two points, and resolves once the loss has stopped for the whole window; at a
        quarter of that rate it stays quiet. The volume stays above the limit throughout (its size chosen so)."""
        limit = self.throttle["limit"] if self.throttle["policy"] == "strimzi" else self.throttle["hard"]
        which = "the limit" if self.throttle["policy"] == "strimzi" else "the hard limit"
        total = self.total_for(limit) if limit["measure"] == "consumed_bytes" else 4096 * GIB
        limit_free = self.limit_usable(limit, total)
        reaction = alert_rules.reaction_seconds(self.checked)
        interval = self.throttle["check_interval"] if self.plugin else self.checked["guard_interval"]
        window = alert_rules.COVER_WINDOW // 60
        broker = "1"
        labels = {"broker_id": broker, "log_dir": LOG_DIR}
        for share, fires in ((fractions.Fraction(3, 2), True), (fractions.Fraction(3, 8), False)):
            loss = share * limit_free * 60 / fractions.Fraction(reaction)  # bytes a minute
            usables = [int(round(total - loss * min(minute, 4))) for minute in range(6 + window)]
            assert min(usables) > limit_free and not self.violates(limit, min(usables), total)
            factors = [self.factor(u, total) for u in usables]
            summary = (
                "broker {0} log dir {1}: at its fill rate of the last {2}m, {3}B arrive in the {4} s the throttle "
                "takes to hold it ({5} s between checks, then the check, the throttle reaching producers and what "
                "lands after it), more than the {6}B that {7} ({8}) keeps free"
            ).format(
                broker,
                LOG_DIR,
                window,
                humanize1024(float(share * limit_free)),
                alert_rules.promql_number(reaction),
                alert_rules.promql_number(interval),
                humanize1024(float(limit_free)),
                which,
                alert_rules.limit_text(limit),
            )
            fired = [self.expected("KafkaLogDirLimitTooSmall", "warning", labels, summary)] if fires else []
            checks = [
                (0, "KafkaLogDirLimitTooSmall", []),
                (2, "KafkaLogDirLimitTooSmall", fired),
                (4 + window, "KafkaLogDirLimitTooSmall", []),
            ]
            self.group(self.volume_series(broker, total, usables, factors), checks)

    def throttled_tests(self):
        held = self.checked["throttled_minutes"]
        factors = [1] + [0.5] * (held + 2) + [1] * 3
        if self.plugin:
            series = [
                (
                    selector(
                        "strimzi_quotas_throttle_factor",
                        {"job": JOB, "instance": "kafka-1:7071", "observing_broker_id": 1},
                    ),
                    factors,
                ),
                (
                    selector(
                        "strimzi_quotas_throttle_factor",
                        {"job": JOB, "instance": "kafka-2:7071", "observing_broker_id": 2},
                    ),
                    [1] * len(factors),
                ),
            ]
            labels = {"broker_id": "1"}
            summary = (
                "the quota plugin on broker 1 has scaled the produce quota by 0.50 for more than {0}m: producers are "
                "throttled on disk space"
            ).format(held)
        else:
            series = [(selector("headroom_guard_throttle_factor", self.guard_labels({})), factors)]
            labels = {}
            summary = (
                "the disk guard has scaled the declared produce rates by 0.50 for more than {0}m: producers are "
                "throttled on disk space"
            ).format(held)
        fired = [self.expected("KafkaProducersThrottled", "warning", labels, summary)]
        self.group(
            series,
            [
                (held, "KafkaProducersThrottled", []),
                (held + 1, "KafkaProducersThrottled", fired),
                (held + 3, "KafkaProducersThrottled", []),
            ],
        )

    def missing_data_tests(self):
        if self.plugin:
            window = max(self.checked["scrape_for"], 2 * self.throttle["check_interval"]) // 60
            applied = [0] * 10 + [1] * (window + 3)
            series = [
                (
                    selector(
                        "strimzi_quotas_fallback_throttle_factor_applied_total",
                        {"job": JOB, "instance": "kafka-1:7071"},
                    ),
                    applied,
                ),
                (
                    selector(
                        "strimzi_quotas_fallback_throttle_factor_applied_total",
                        {"job": JOB, "instance": "kafka-2:7071"},
                    ),
                    [0] * len(applied),
                ),
            ]
            summary = (
                "the quota plugin on broker 1 (kafka-1:7071) applied its fallback throttle factor {0} in the last "
                "{1}m: it has had no complete view of the cluster's volumes for more than {2}"
            ).format(alert_rules.promql_number(self.throttle["fallback_factor"]), window, self.throttle["validity"])
            fired = [
                self.expected(
                    "KafkaQuotaPluginFallbackApplied",
                    "warning",
                    {"job": JOB, "instance": "kafka-1:7071", "broker_id": "1"},
                    summary,
                )
            ]
            self.group(
                series,
                [
                    (9, "KafkaQuotaPluginFallbackApplied", []),
                    (10, "KafkaQuotaPluginFallbackApplied", fired),
                    (10 + window + 1, "KafkaQuotaPluginFallbackApplied", []),
                ],
            )
            return
        labels = self.guard_labels({})
        if self.throttle["policy"] == "strimzi":
            alert, metric, points = "HeadroomGuardFallbackApplied", "headroom_guard_fallback_applied", [0, 1, 0]
            summary = (
                "the disk guard applies its fallback throttle factor {0}: it has had no complete view of the cluster's "
                "volumes for more than {1}"
            ).format(alert_rules.promql_number(self.throttle["fallback_factor"]), self.throttle["validity"])
        elif self.throttle["missing_data_action"] == "pause":
            alert, metric, points = "HeadroomGuardMissingDataApplied", "headroom_guard_missing_data_applied", [0, 1, 0]
            summary = (
                "the disk guard cannot see every broker's log dirs: missing_data_action pause holds every producer "
                "at 1 byte/s"
            )
        else:
            alert, metric, points = "HeadroomGuardMissingDataApplied", "headroom_guard_observed", [1, 0, 1]
            summary = (
                "the disk guard cannot see every broker's log dirs: missing_data_action open decides from the volumes "
                "it sees, blind to the others"
            )
        fired = [self.expected(alert, "warning", labels, summary)]
        self.group([(selector(metric, labels), points)], [(0, alert, []), (1, alert, fired), (2, alert, [])])

    def guard_tests(self):
        interval = self.checked["guard_interval"]
        beat = self.guard_labels({})
        # Minute 1: the last decision exactly three intervals old (not older); minute 2: one second older; minute 3: a
        # fresh decision. Without headroom_guard_interval_seconds, guard_interval stands in.
        ages = [0, 3 * interval, 3 * interval + 1, 0]
        decided = [60 * minute - age for minute, age in enumerate(ages)]
        late = (
            "has not decided for {0}, more than three intervals: the produce quotas stay as its last decision left them"
        )
        failed = (
            "has failed every decision since it started (3): the produce quotas stay as its last decision left them"
        )
        decision = selector("headroom_guard_last_decision_timestamp_seconds", beat)
        scenarios = [
            ([(decision, decided), (selector("headroom_guard_interval_seconds", beat), [interval] * 4)], beat, late),
            ([(decision, decided)], beat, late),
            # A guard that never decided: three failed decisions, then its first.
            (
                [
                    (selector("headroom_guard_decisions_total", dict(beat, outcome="failed")), [1, 2, 3, 3]),
                    (decision, [None, None, None, 180]),
                ],
                dict(beat, outcome="failed"),
                failed,
            ),
        ]
        for series, labels, text in scenarios:
            summary = "the disk guard ({0}) {1}".format(
                labels["instance"], text.format(humanize_duration(3 * interval + 1))
            )
            fired = [self.expected("HeadroomGuardNotDeciding", "critical", labels, summary)]
            self.group(
                series,
                [
                    (1, "HeadroomGuardNotDeciding", []),
                    (2, "HeadroomGuardNotDeciding", fired),
                    (3, "HeadroomGuardNotDeciding", []),
                ],
            )
        hold = self.checked["scrape_for"] // 60
        absent_labels = {
            key: value.strip('"')
            for key, value in (matcher.split("=", 1) for matcher in self.checked["guard_selector"].split(","))
        }
        summary = "Prometheus has had no metrics of the disk guard ({0}) for {1}m".format(
            selector("headroom_guard_decisions_total", absent_labels), hold
        )
        fired = [self.expected("HeadroomGuardNotScraped", "critical", absent_labels, summary)]
        self.group(
            [
                (
                    selector("headroom_guard_decisions_total", dict(beat, outcome="applied")),
                    [None] * (hold + 1) + [1] * 3,
                )
            ],
            [
                (hold - 1, "HeadroomGuardNotScraped", []),
                (hold, "HeadroomGuardNotScraped", fired),
                (hold + 1, "HeadroomGuardNotScraped", []),
            ],
        )

    def relief_tests(self):
        """The guard's relieve option: a failed step fires at once and resolves once the window has passed it; a
        blocked log dir fires after its hold."""
        window, hold = alert_rules.RELIEF_FAILURE_WINDOW // 60, alert_rules.RELIEF_BLOCKED_FOR // 60
        failed = self.guard_labels({"action": "failed"})
        summary = (
            "a relief step of the disk guard ({0}) failed in the last {1}m: filling log dirs are not being relieved, "
            "and only the throttle stands before a full disk"
        ).format(failed["instance"], window)
        fired = [self.expected("HeadroomGuardReliefFailing", "warning", failed, summary)]
        self.group(
            [(selector("headroom_guard_relief_steps_total", failed), [0, 0, 1] + [1] * (window + 3))],
            [
                (1, "HeadroomGuardReliefFailing", []),
                (2, "HeadroomGuardReliefFailing", fired),
                (window + 3, "HeadroomGuardReliefFailing", []),
            ],
        )
        labels = self.guard_labels({})
        summary = (
            "2 log dir(s) at the disk guard's relieve_at have had no move reaching relieve_to for {0}m: the throttle "
            "will fire when they reach the limit"
        ).format(hold)
        fired = [self.expected("HeadroomGuardReliefBlocked", "warning", labels, summary)]
        self.group(
            [(selector("headroom_guard_relief_blocked_log_dirs", labels), [0] + [2] * (hold + 1) + [0, 0])],
            [
                (hold, "HeadroomGuardReliefBlocked", []),
                (hold + 1, "HeadroomGuardReliefBlocked", fired),
                (hold + 3, "HeadroomGuardReliefBlocked", []),
            ],
        )

    def broker_of(self, instance):
        known = {broker["instance"]: str(broker["broker_id"]) for broker in self.checked["brokers"]}
        return known.get(instance)

    def named(self, instance):
        broker = self.broker_of(instance)
        return "broker {0} ({1})".format(broker, instance) if broker else instance

    def with_broker(self, labels):
        broker = self.broker_of(labels["instance"])
        return dict(labels, broker_id=broker) if broker else dict(labels)

    def jmx_tests(self):
        severity = "critical" if self.plugin else "warning"
        offline_dir = "/var/lib/kafka/data-1"
        # kafka-9 is in no broker list: its alerts name the instance only.
        instances = ["kafka-1:7071", "kafka-9:7071"]
        series = [
            (
                selector(
                    "kafka_log_logmanager_logdirectoryoffline",
                    {"job": JOB, "instance": instance, "log_dir": offline_dir},
                ),
                [0, 1, 0],
            )
            for instance in instances
        ]
        fired = [
            self.expected(
                "KafkaLogDirOffline",
                "critical",
                self.with_broker({"job": JOB, "instance": instance, "log_dir": offline_dir}),
                "log dir {1} of {0} is offline".format(self.named(instance), offline_dir),
            )
            for instance in instances
        ]
        self.group(
            series, [(0, "KafkaLogDirOffline", []), (1, "KafkaLogDirOffline", fired), (2, "KafkaLogDirOffline", [])]
        )

        hold = self.checked["scrape_for"] // 60
        down = [1] + [0] * (hold + 1) + [1] * 3
        others = [b["instance"] for b in self.checked["brokers"] if b["instance"] not in instances]
        series = [(selector("up", {"job": JOB, "instance": instance}), down) for instance in instances]
        series += [(selector("up", {"job": JOB, "instance": instance}), [1] * len(down)) for instance in others]
        summary = "Prometheus has had no metrics from the JMX exporter of {0} for {1}m"
        fired = [
            self.expected(
                "KafkaJmxExporterNotScraped",
                severity,
                self.with_broker({"job": JOB, "instance": instance}),
                summary.format(self.named(instance), hold),
            )
            for instance in instances
        ]
        self.group(
            series,
            [
                (hold, "KafkaJmxExporterNotScraped", []),
                (hold + 1, "KafkaJmxExporterNotScraped", fired),
                (hold + 2, "KafkaJmxExporterNotScraped", []),
            ],
        )
        if self.checked["brokers"]:
            # A broker of the list that is no scrape target at all, until it becomes one.
            missing = self.checked["brokers"][-1]
            series = [
                (selector("up", {"job": JOB, "instance": b["instance"]}), [1] * (hold + 3))
                for b in self.checked["brokers"]
                if b is not missing
            ]
            series.append(
                (selector("up", {"job": JOB, "instance": missing["instance"]}), [None] * (hold + 1) + [1] * 2)
            )
            fired = [
                self.expected(
                    "KafkaJmxExporterNotScraped",
                    severity,
                    {"broker_id": str(missing["broker_id"]), "instance": missing["instance"]},
                    summary.format(self.named(missing["instance"]), hold),
                )
            ]
            self.group(
                series,
                [
                    (hold - 1, "KafkaJmxExporterNotScraped", []),
                    (hold, "KafkaJmxExporterNotScraped", fired),
                    (hold + 1, "KafkaJmxExporterNotScraped", []),
                ],
            )
        if self.plugin:
            self.plugin_loaded_tests()

    def plugin_loaded_tests(self):
        hold = max(self.checked["scrape_for"], 2 * self.throttle["check_interval"]) // 60
        first, second = self.checked["brokers"][:2]
        # The first broker's exporter answers without the plugin's factor from minute 1; the second's exporter is down
        # (KafkaJmxExporterNotScraped says so), which is not the plugin's absence.
        length = hold + 5
        series = [
            (selector("up", {"job": JOB, "instance": first["instance"]}), [1] * length),
            (
                selector(
                    "strimzi_quotas_throttle_factor",
                    {"job": JOB, "instance": first["instance"], "observing_broker_id": 1},
                ),
                [1, "stale"] + [None] * hold + [1] * 3,
            ),
            (selector("up", {"job": JOB, "instance": second["instance"]}), [0] * length),
        ]
        summary = (
            "broker 1 ({0}) has served no strimzi_quotas_throttle_factor for {1}m: the Strimzi quota plugin is not "
            "loaded there"
        ).format(first["instance"], hold)
        fired = [
            self.expected(
                "KafkaQuotaPluginNotLoaded", "critical", {"broker_id": "1", "instance": first["instance"]}, summary
            )
        ]
        self.group(
            series,
            [
                (hold, "KafkaQuotaPluginNotLoaded", []),
                (hold + 1, "KafkaQuotaPluginNotLoaded", fired),
                (hold + 2, "KafkaQuotaPluginNotLoaded", []),
            ],
        )

    def unit_tests(self, rule_file):
        self.limit_tests()
        self.fill_tests()
        self.cover_tests()
        self.throttled_tests()
        self.missing_data_tests()
        if not self.plugin:
            self.guard_tests()
        if self.checked["guard_relieves"]:
            self.relief_tests()
        if self.checked["jmx_exporter"]:
            self.jmx_tests()
        return {"rule_files": [rule_file], "evaluation_interval": "1m", "tests": self.groups}


def promtool(*args, cwd):
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


@needs_promtool
@pytest.mark.parametrize("name", sorted(DECLARATIONS))
def test_every_alert_fires_at_the_edge_stays_quiet_short_of_it_and_resolves(name, tmp_path):
    declaration = Declaration(name)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(declaration.rules, sort_keys=False, width=1000))
    checked = promtool("check", "rules", "rules.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tests = declaration.unit_tests("rules.yml")
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False, width=1000))
    tested = promtool("test", "rules", "tests.yml", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout[-6000:] + tested.stderr[-3000:]
    assert declaration.covered == set(declaration.by_name), "every alert has its unit tests"


# A volume going back and forth across the plugin's limit every minute, as it does while the throttle lets producers on
# and off at the edge, then well clear of it: minutes 1, 3 and 5 at the limit.
CROSSINGS = 5
HOLD_MINUTES = 5


@needs_promtool
@pytest.mark.parametrize("hold", [f"{HOLD_MINUTES}m", 0], ids=["keep-firing-for-the-default", "no-hold"])
def test_an_edge_alert_keeps_firing_while_the_volume_goes_back_and_forth_across_its_limit(hold, tmp_path):
    declaration = Declaration("plugin-bytes", keep_firing_for=hold)
    assert alert_rules.render(DECLARATIONS["plugin-bytes"]) == Declaration("plugin-bytes", f"{HOLD_MINUTES}m").rules, (
        f"the rules' default hold is {HOLD_MINUTES}m"
    )
    limit = declaration.throttle["limit"]
    total = declaration.total_for(limit)
    at = declaration.edge(limit, total)
    usables = [at + 1 if minute % 2 == 0 else at for minute in range(CROSSINGS + 1)] + [at + total // 4] * 9
    factors = [declaration.factor(usable, total) for usable in usables]
    checks, last_at_limit = [], None
    for minute, usable in enumerate(usables):
        if usable == at:
            last_at_limit = minute
        held = hold and last_at_limit is not None and minute - last_at_limit <= HOLD_MINUTES
        if minute - (last_at_limit or 0) == HOLD_MINUTES + 1 and hold:
            continue  # the hold's last moment: Prometheus' own boundary, not this test's
        # An alert held after its condition went keeps the annotations of its last evaluation at the limit.
        fired = usable == at or held
        shown = usables[last_at_limit] if fired else None
        expected = [declaration.at_limit(shown, total, factors[last_at_limit])] if fired else []
        checks.append((minute, "KafkaLogDirAtLimit", expected))
    declaration.group(declaration.volume_series("2", total, usables, factors), checks)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(declaration.rules, sort_keys=False, width=1000))
    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": declaration.groups}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False, width=1000))
    tested = promtool("test", "rules", "tests.yml", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout[-6000:] + tested.stderr[-3000:]
    firing_minutes = [minute for minute, _alert, expected in checks if expected]
    if hold:
        assert firing_minutes == list(range(1, CROSSINGS + HOLD_MINUTES + 1)), "one episode, no resolution in between"
    else:
        assert firing_minutes == [1, 3, 5], "without the hold it resolves and fires again at every crossing"


def test_the_declarations_give_the_alerts_of_their_throttle():
    names = {name: {alert for alert, _severity in Declaration(name).by_name} for name in DECLARATIONS}
    common = {"KafkaLogDirFillingUp", "KafkaLogDirLimitTooSmall", "KafkaProducersThrottled"}
    assert (
        names["plugin-bytes"]
        == names["plugin-ratio"]
        == common
        | {
            "KafkaLogDirAtLimit",
            "KafkaQuotaPluginFallbackApplied",
            "KafkaLogDirOffline",
            "KafkaJmxExporterNotScraped",
            "KafkaQuotaPluginNotLoaded",
        }
    )
    assert names["guard-graded-percentage"] == common | {
        "KafkaLogDirPastSoftLimit",
        "KafkaLogDirAtHardLimit",
        "HeadroomGuardMissingDataApplied",
        "HeadroomGuardNotDeciding",
        "HeadroomGuardNotScraped",
        "KafkaLogDirOffline",
        "KafkaJmxExporterNotScraped",
    }
    assert names["guard-graded-consumed"] == names["guard-graded-percentage"] - {
        "KafkaLogDirOffline",
        "KafkaJmxExporterNotScraped",
    }
    assert names["guard-strimzi-bytes"] == common | {
        "KafkaLogDirAtLimit",
        "HeadroomGuardFallbackApplied",
        "HeadroomGuardNotDeciding",
        "HeadroomGuardNotScraped",
        "HeadroomGuardReliefFailing",
        "HeadroomGuardReliefBlocked",
        "KafkaLogDirOffline",
        "KafkaJmxExporterNotScraped",
    }


@needs_promtool
def test_a_rule_file_prometheus_refuses_fails_the_check(tmp_path):
    """The check the role runs before it replaces a rule file does refuse a broken one."""
    rules = alert_rules.render(DECLARATIONS["plugin-bytes"])
    rules["groups"][0]["rules"][0]["expr"] += " +"
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules, sort_keys=False))
    checked = promtool("check", "rules", "rules.yml", cwd=tmp_path)
    assert checked.returncode != 0 and "parse error" in (checked.stdout + checked.stderr)


def series_read(rules):
    """{metric name: label names the rules match, group or join on} of every series the rules select. A label that
    label_replace makes is not read from the series."""
    read = {}
    for group in rules["groups"]:
        for rule in group["rules"]:
            expr = rule["expr"]
            made = set(re.findall(r'label_replace\(.*?, "([a-z_]+)", "\$1", "([a-z_]+)"', expr))
            grouped = set(
                label.strip()
                for labels in re.findall(r"\b(?:by|on) \(([a-z_, ]+)\)", expr)
                for label in labels.split(",")
            ) - set(target for target, _source in made)
            for name, matchers in re.findall(r"(?<![a-z_:])([a-z_:]+)\{([^}]*)\}", expr):
                labels = read.setdefault(name, set())
                labels.update(re.findall(r"([a-z_]+)\s*(?:=~|!~|!=|=)", matchers), grouped)
                labels.update(source for _target, source in made)
    return read


def test_the_rules_read_the_series_their_sources_export():
    """The guard's names from its own metrics page, the plugin's and Kafka's from the JMX exporter's rules applied to
    the MBean names a real broker registers (tests/unit/roles/test_jmx_exporter_rules.py)."""
    read = {}
    for name in DECLARATIONS:
        for metric, labels in series_read(alert_rules.render(DECLARATIONS[name])).items():
            read.setdefault(metric, set()).update(labels)
    served = {}
    for line in guard_page(LOG_DIR).splitlines():
        if not line.startswith("#"):
            name, _brace, labels = line.split(" ")[0].partition("{")
            served.setdefault(name, set()).update(re.findall(r'([a-z_]+)="', labels))
    spec = importlib.util.spec_from_file_location("jmx_exporter_rules", JMX_RULES_TEST)
    jmx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(jmx)
    config = jmx.load_config()
    for bean, attribute, value, _expected in jmx.SAMPLES:
        found = jmx.exported(config, bean, attribute, value)
        if found:
            served.setdefault(found[0], set()).update(found[1])
    # Target labels Prometheus adds to every scraped series; up is Prometheus' own.
    targets = {"job", "instance"}
    for metric, labels in sorted(read.items()):
        if metric == "up" or ":" in metric:  # recorded by the rules themselves (level:metric:operations)
            continue
        assert metric in served, metric
        assert labels - targets <= served[metric], (metric, labels - targets - served[metric])
