"""The Prometheus rules renderer: the throttle each declaration makes, the expressions whose thresholds are its limits,
the options, and the refusals, each naming its field. tests/integration/test_prometheus_rules.py holds the rendered
rules to promtool."""

import re

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import alert_rules

GIB = 1024**3
BROKERS = [{"broker_id": 2, "instance": "kafka-2:7071"}, {"broker_id": 1, "instance": "kafka-1:7071"}]
PLUGIN_BYTES = {"type": "strimzi", "min_available_bytes_per_volume": 10 * GIB}
PLUGIN_RATIO = {"type": "strimzi", "min_available_ratio_per_volume": 0.1}
GRADED_PERCENTAGE = {
    "policy": "graded",
    "soft_limit": {"type": "min_free_percentage", "level": 20},
    "hard_limit": {"type": "min_free_percentage", "level": 5},
}

RELIEVE = {
    "relieve_at": {"type": "min_free_percentage", "level": 20},
    "relieve_to": {"type": "min_free_percentage", "level": 30},
}


def settings(**given):
    return dict({"cluster": "prod"}, **given)


def plugin(spec=None, **given):
    return settings(**dict({"kafka_quotas": spec or PLUGIN_BYTES, "brokers": BROKERS}, **given))


def guard(declaration=None, **given):
    return settings(kafka_disk_guard=declaration or GRADED_PERCENTAGE, **given)


def rules_of(rendered):
    (group,) = rendered["groups"]
    return group["rules"]


def alert(rendered, name, severity=None):
    (found,) = [
        rule
        for rule in rules_of(rendered)
        if rule.get("alert") == name and severity in (None, rule["labels"]["severity"])
    ]
    return found


def record(rendered, name):
    return [rule for rule in rules_of(rendered) if rule.get("record") == name]


# -- the limits an alert compares with are the throttle's ----------------------------------------------------------
@pytest.mark.parametrize(
    "given, alert_name, expr",
    [
        (
            plugin(PLUGIN_BYTES),
            "KafkaLogDirAtLimit",
            '(cluster_broker_log_dir:headroom_volume_available_bytes:min{cluster="prod"} <= 10737418240)',
        ),
        (
            plugin(PLUGIN_RATIO),
            "KafkaLogDirAtLimit",
            '(cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod"} <= 0.1)',
        ),
        (
            plugin({"type": "strimzi", "min_available_bytes_per_volume": "5368709120"}),
            "KafkaLogDirAtLimit",
            '(cluster_broker_log_dir:headroom_volume_available_bytes:min{cluster="prod"} <= 5368709120)',
        ),
        (
            guard({"min_available_bytes": 50 * GIB}),
            "KafkaLogDirAtLimit",
            '(cluster_broker_log_dir:headroom_volume_available_bytes:min{cluster="prod"} <= 53687091200)',
        ),
        (
            guard({"policy": "strimzi", "min_available_ratio": "0.05"}),
            "KafkaLogDirAtLimit",
            '(cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod"} <= 0.05)',
        ),
        (
            guard(GRADED_PERCENTAGE),
            "KafkaLogDirPastSoftLimit",
            '(cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod"} * 100 <= 20) '
            "unless on (broker_id, log_dir) "
            '(cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod"} * 100 <= 5)',
        ),
        (
            guard(GRADED_PERCENTAGE),
            "KafkaLogDirAtHardLimit",
            '(cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod"} * 100 <= 5)',
        ),
        (
            guard(
                {
                    "policy": "graded",
                    "soft_limit": {"type": "min_free_bytes", "level": 100.0 * GIB},
                    "hard_limit": {"type": "min_free_bytes", "level": "21474836480"},
                }
            ),
            "KafkaLogDirAtHardLimit",
            '(cluster_broker_log_dir:headroom_volume_available_bytes:min{cluster="prod"} <= 21474836480)',
        ),
        (
            guard(
                {
                    "policy": "graded",
                    "soft_limit": {"type": "consumed_space", "level": 800 * GIB},
                    "hard_limit": {"type": "consumed_space", "level": 900 * GIB},
                }
            ),
            "KafkaLogDirPastSoftLimit",
            '(cluster_broker_log_dir:headroom_volume_consumed_bytes:max{cluster="prod"} >= 858993459200) '
            "unless on (broker_id, log_dir) "
            '(cluster_broker_log_dir:headroom_volume_consumed_bytes:max{cluster="prod"} >= 966367641600)',
        ),
    ],
)
def test_the_limit_alerts_compare_with_the_declared_limit_as_the_throttle_does(given, alert_name, expr):
    assert alert(alert_rules.render(given), alert_name)["expr"] == expr


@pytest.mark.parametrize(
    "given, severity, expr",
    [
        (
            plugin(PLUGIN_BYTES),
            "warning",
            '(predict_linear(cluster_broker_log_dir:headroom_volume_available_bytes:min{cluster="prod"}[6h], '
            "86400) <= 10737418240) unless on "
            '(broker_id, log_dir) (cluster_broker_log_dir:headroom_volume_available_bytes:min{cluster="prod"} '
            "<= 10737418240)",
        ),
        (
            plugin(PLUGIN_RATIO, fill_critical_horizon="90m", fill_lookback=7200),
            "critical",
            '(predict_linear(cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod"}[2h], '
            "5400) <= 0.1) unless on "
            '(broker_id, log_dir) (cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod"} <= 0.1)',
        ),
        # Graded: the time to the hard limit, where producers are paused.
        (
            guard(GRADED_PERCENTAGE),
            "critical",
            '(predict_linear(cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod"}[6h], '
            "14400) * 100 <= 5) unless on "
            '(broker_id, log_dir) (cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod"} '
            "* 100 <= 5)",
        ),
        (
            guard(
                {
                    "policy": "graded",
                    "soft_limit": {"type": "consumed_space", "level": 800},
                    "hard_limit": {"type": "consumed_space", "level": 900},
                },
                fill_warning_horizon="2d",
            ),
            "warning",
            '(predict_linear(cluster_broker_log_dir:headroom_volume_consumed_bytes:max{cluster="prod"}[6h], '
            "172800) >= 900) unless on "
            '(broker_id, log_dir) (cluster_broker_log_dir:headroom_volume_consumed_bytes:max{cluster="prod"} >= 900)',
        ),
    ],
)
def test_filling_up_predicts_the_time_to_the_limit(given, severity, expr):
    rule = alert(alert_rules.render(given), "KafkaLogDirFillingUp", severity)
    assert rule["expr"] == expr
    assert rule["for"] == "1h"


# -- which alerts a throttle gets ---------------------------------------------------------------------------------
PLUGIN_ALERTS = [
    ("KafkaLogDirAtLimit", "critical"),
    ("KafkaLogDirFillingUp", "warning"),
    ("KafkaLogDirFillingUp", "critical"),
    ("KafkaLogDirLimitTooSmall", "warning"),
    ("KafkaProducersThrottled", "warning"),
    ("KafkaQuotaPluginFallbackApplied", "warning"),
    ("KafkaLogDirOffline", "critical"),
    ("KafkaJmxExporterNotScraped", "critical"),
    ("KafkaQuotaPluginNotLoaded", "critical"),
]
GRADED_GUARD_ALERTS = [
    ("KafkaLogDirPastSoftLimit", "warning"),
    ("KafkaLogDirAtHardLimit", "critical"),
    ("KafkaLogDirFillingUp", "warning"),
    ("KafkaLogDirFillingUp", "critical"),
    ("KafkaLogDirLimitTooSmall", "warning"),
    ("KafkaProducersThrottled", "warning"),
    ("HeadroomGuardMissingDataApplied", "warning"),
    ("HeadroomGuardNotDeciding", "critical"),
    ("HeadroomGuardNotScraped", "critical"),
    ("KafkaLogDirOffline", "critical"),
    ("KafkaJmxExporterNotScraped", "warning"),
]
STRIMZI_GUARD_ALERTS = [
    ("KafkaLogDirAtLimit", "critical"),
    ("KafkaLogDirFillingUp", "warning"),
    ("KafkaLogDirFillingUp", "critical"),
    ("KafkaLogDirLimitTooSmall", "warning"),
    ("KafkaProducersThrottled", "warning"),
    ("HeadroomGuardFallbackApplied", "warning"),
    ("HeadroomGuardNotDeciding", "critical"),
    ("HeadroomGuardNotScraped", "critical"),
]


@pytest.mark.parametrize(
    "given, expected",
    [
        (plugin(), PLUGIN_ALERTS),
        # The plugin's figures come only through the JMX exporter: its alerts stay.
        (plugin(jmx_exporter=False), PLUGIN_ALERTS),
        (guard(), GRADED_GUARD_ALERTS),
        (guard(jmx_exporter=False), GRADED_GUARD_ALERTS[:-2]),
        (guard({"min_available_ratio": 0.1}, jmx_exporter=False), STRIMZI_GUARD_ALERTS),
        # Kafka's own quotas beside the guard: the guard throttles.
        (
            guard(
                {"min_available_ratio": 0.1},
                jmx_exporter=False,
                kafka_quotas={"type": "kafka", "producer_byte_rate": 1},
            ),
            STRIMZI_GUARD_ALERTS,
        ),
        # A guard that relieves: its relief steps have alerts of their own.
        (
            guard({"min_available_ratio": 0.1, "relieve": RELIEVE}, jmx_exporter=False),
            STRIMZI_GUARD_ALERTS
            + [("HeadroomGuardReliefFailing", "warning"), ("HeadroomGuardReliefBlocked", "warning")],
        ),
        # A guard that only observes beside the plugin: the plugin's limits, and the guard's health.
        (
            plugin(kafka_disk_guard=GRADED_PERCENTAGE, guard_observe_only=True),
            PLUGIN_ALERTS[:6]
            + [("HeadroomGuardNotDeciding", "critical"), ("HeadroomGuardNotScraped", "critical")]
            + PLUGIN_ALERTS[6:],
        ),
    ],
)
def test_each_throttle_has_its_alerts(given, expected):
    assert alert_rules.alert_names(alert_rules.render(given)) == expected


@pytest.mark.parametrize("given", [plugin(), plugin(PLUGIN_RATIO), guard(), guard({"min_available_bytes": 1})])
def test_one_group_recording_rules_first_every_rule_labelled_with_the_cluster(given):
    rendered = alert_rules.render(given)
    assert [group["name"] for group in rendered["groups"]] == ["headroom-kafka-prod"]
    rules = rules_of(rendered)
    kinds = ["record" if "record" in rule else "alert" for rule in rules]
    assert kinds == sorted(kinds, key=lambda kind: kind != "record"), "the alerts read what this evaluation recorded"
    assert all(rule["labels"]["cluster"] == "prod" for rule in rules)
    for rule in rules:
        if "alert" in rule:
            annotations = rule["annotations"]
            assert set(annotations) == {"summary", "description", "runbook_url"}
            # One short line: what is wrong, and where; the figures are the description's.
            assert annotations["summary"].startswith("Kafka cluster prod: ")
            assert len(re.sub(r"\{\{.*?\}\}", "", annotations["summary"])) <= 100
            assert "query" not in annotations["summary"] and "$value" not in annotations["summary"]
            details, explanation = annotations["description"].split("\n")
            assert details.endswith(".") and explanation and "{{" not in explanation
            assert annotations["runbook_url"] == alert_rules.RUNBOOK_URL + "#" + rule["alert"].lower()
    # Each rule's labels are its own: a YAML dump writes no anchors.
    labels = [id(rule["labels"]) for rule in rules]
    assert len(set(labels)) == len(labels)


# Prometheus' naming of recording rules: level (the labels kept), metric, operations (what was applied, may be empty).
RECORD_NAME = re.compile(r"^[a-z]+(?:_[a-z]+)*:headroom_[a-z_]+:[a-z]*$")


@pytest.mark.parametrize("given", [plugin(), plugin(PLUGIN_RATIO), guard(), guard({"min_available_bytes": 1})])
def test_every_recorded_series_is_named_level_metric_operations_after_the_labels_it_keeps(given):
    for rule in rules_of(alert_rules.render(given)):
        if "record" in rule:
            name = rule["record"]
            assert RECORD_NAME.match(name), name
            level = name.split(":")[0]
            kept = {"cluster_broker_log_dir": "by (broker_id, log_dir)", "cluster_broker": "by (broker_id)"}.get(level)
            if kept and not rule["expr"].startswith("vector("):
                assert rule["expr"].startswith(("min " + kept, "max " + kept)) or "limit_free_bytes" in name, rule
            if level == "cluster":
                assert rule["expr"].startswith("min(") and "by (" not in rule["expr"], rule


def test_the_brokers_are_recorded_in_order_and_name_their_exporters():
    infos = record(alert_rules.render(plugin()), "cluster_broker:headroom_broker_info:")
    assert [(info["expr"], info["labels"]) for info in infos] == [
        ("vector(1)", {"cluster": "prod", "broker_id": "1", "instance": "kafka-1:7071"}),
        ("vector(1)", {"cluster": "prod", "broker_id": "2", "instance": "kafka-2:7071"}),
    ]
    assert record(alert_rules.render(guard()), "cluster_broker:headroom_broker_info:") == []


@pytest.mark.parametrize(
    "given, name, expr",
    [
        (
            plugin(),
            "cluster_broker_log_dir:headroom_volume_available_bytes:min",
            'min by (broker_id, log_dir) (label_replace(strimzi_quotas_available_bytes{job="kafka"}, "broker_id", '
            '"$1", "remote_broker_id", "(.*)"))',
        ),
        (
            plugin(jmx_selector='job="kafka-prod", env=~"eu.*"'),
            "cluster_broker:headroom_throttle_factor:min",
            'min by (broker_id) (label_replace(strimzi_quotas_throttle_factor{job="kafka-prod",env=~"eu.*"}, '
            '"broker_id", "$1", "observing_broker_id", "(.*)"))',
        ),
        (
            guard(guard_selector='job="node"'),
            "cluster_broker_log_dir:headroom_volume_available_ratio:min",
            'min by (broker_id, log_dir) (headroom_guard_volume_available_bytes{job="node"} / clamp_min('
            'headroom_guard_volume_available_bytes{job="node"} + headroom_guard_volume_consumed_bytes{job="node"}, 1))',
        ),
        (guard(), "cluster:headroom_throttle_factor:min", 'min(headroom_guard_throttle_factor{job="headroom-guard"})'),
    ],
)
def test_the_volumes_are_recorded_from_the_throttles_own_metrics(given, name, expr):
    (rule,) = record(alert_rules.render(given), name)
    assert rule["expr"] == expr


# -- the options -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "given, alert_name, key, value",
    [
        (plugin(throttled_minutes=25), "KafkaProducersThrottled", "for", "25m"),
        (plugin(throttled_minutes="3"), "KafkaProducersThrottled", "for", "3m"),
        (plugin(scrape_for="2m"), "KafkaJmxExporterNotScraped", "for", "2m"),
        (guard(scrape_for=600), "HeadroomGuardNotScraped", "for", "10m"),
        # The plugin is not loaded when its factor is missing for two of its checks (at least scrape_for).
        (plugin(), "KafkaQuotaPluginNotLoaded", "for", "5m"),
        (plugin(dict(PLUGIN_BYTES, check_interval="PT4M")), "KafkaQuotaPluginNotLoaded", "for", "8m"),
    ],
)
def test_options_set_how_long_a_condition_holds(given, alert_name, key, value):
    assert alert(alert_rules.render(given), alert_name)[key] == value


@pytest.mark.parametrize("severity", ["warning", "critical"])
def test_fill_for_sets_how_long_a_prediction_holds(severity):
    assert alert(alert_rules.render(plugin(fill_for="90m")), "KafkaLogDirFillingUp", severity)["for"] == "1h30m"


def test_the_limit_alerts_fire_as_soon_as_the_throttle_acts():
    for rule in rules_of(alert_rules.render(guard())):
        if rule.get("alert") in ("KafkaLogDirPastSoftLimit", "KafkaLogDirAtHardLimit"):
            assert "for" not in rule


@pytest.mark.parametrize(
    "given, window",
    [(plugin(), "5m"), (plugin(dict(PLUGIN_BYTES, check_interval=600)), "20m"), (plugin(scrape_for="15m"), "15m")],
)
def test_the_plugins_fallback_counts_over_two_checks(given, window):
    assert "[{0}]) > 0".format(window) in alert(alert_rules.render(given), "KafkaQuotaPluginFallbackApplied")["expr"]


@pytest.mark.parametrize(
    "given, expr_part",
    [
        (guard(), "* 0 + 30)"),
        (guard(guard_interval=45), "* 0 + 45)"),
        (guard(guard_interval="60"), "* 0 + 60)"),
    ],
)
def test_the_guard_interval_stands_in_for_a_guard_that_does_not_export_it(given, expr_part):
    expr = alert(alert_rules.render(given), "HeadroomGuardNotDeciding")["expr"]
    assert expr_part in expr and "> 3 * (headroom_guard_interval_seconds" in expr


@pytest.mark.parametrize(
    "declaration, expr",
    [
        (GRADED_PERCENTAGE, 'headroom_guard_missing_data_applied{job="headroom-guard"} == 1'),
        (dict(GRADED_PERCENTAGE, missing_data_action="open"), 'headroom_guard_observed{job="headroom-guard"} == 0'),
    ],
)
def test_the_missing_data_alert_follows_the_missing_data_action(declaration, expr):
    assert alert(alert_rules.render(guard(declaration)), "HeadroomGuardMissingDataApplied")["expr"] == expr


@pytest.mark.parametrize(
    "given, alert_name, text",
    [
        (
            plugin(dict(PLUGIN_BYTES, throttle_factor_fallback=0.5, throttle_factor_validity="PT10M")),
            "KafkaQuotaPluginFallbackApplied",
            "applied its fallback throttle factor 0.5 in the last 5m: it has had no complete view of the cluster's "
            "volumes for more than PT10M",
        ),
        (
            plugin(),
            "KafkaQuotaPluginFallbackApplied",
            "applied its fallback throttle factor 1 in the last 5m: it has had no complete view of the cluster's "
            "volumes for more than PT5M",
        ),
        (
            guard({"min_available_bytes": 1, "throttle_factor_fallback": 0, "throttle_factor_validity": 90}),
            "HeadroomGuardFallbackApplied",
            "disk guard applies its fallback throttle factor 0: it has had no complete view of the cluster's "
            "volumes for more than PT1M30S",
        ),
    ],
)
def test_the_fallback_descriptions_name_the_declared_factor_and_validity(given, alert_name, text):
    assert text in alert(alert_rules.render(given), alert_name)["annotations"]["description"]


def test_a_runbook_url_links_each_alert_to_its_runbook_and_empty_links_none():
    rendered = alert_rules.render(guard(runbook_url="https://wiki.example.com/kafka/alerts"))
    rule = alert(rendered, "HeadroomGuardNotDeciding")
    assert rule["annotations"]["runbook_url"] == "https://wiki.example.com/kafka/alerts#headroomguardnotdeciding"
    assert alert_rules.RUNBOOK_URL.endswith("/docs/docsite/rst/guide_alerts.rst"), "the guide, by default"
    unlinked = alert_rules.render(guard(runbook_url=""))
    assert not any("runbook_url" in rule.get("annotations", {}) for rule in rules_of(unlinked))


EDGE_ALERTS = {
    "KafkaLogDirAtLimit",
    "KafkaLogDirPastSoftLimit",
    "KafkaLogDirAtHardLimit",
    "KafkaLogDirOffline",
    "HeadroomGuardFallbackApplied",
    "HeadroomGuardMissingDataApplied",
}


@pytest.mark.parametrize(
    "given",
    [
        plugin(),
        guard(),
        guard({"min_available_bytes": 1}),
        guard(
            {
                "policy": "graded",
                "soft_limit": {"type": "min_free_bytes", "level": 2},
                "hard_limit": {"type": "min_free_bytes", "level": 1},
            }
        ),
    ],
)
def test_the_alerts_on_an_edge_keep_firing_once_their_condition_is_gone(given):
    alerts = [rule for rule in rules_of(alert_rules.render(given)) if "alert" in rule]
    assert {rule["alert"] for rule in alerts if "keep_firing_for" in rule} == {
        rule["alert"] for rule in alerts if rule["alert"] in EDGE_ALERTS
    }
    assert all(rule["keep_firing_for"] == "5m" for rule in alerts if "keep_firing_for" in rule)
    held = alert_rules.render(dict(given, keep_firing_for="90s"))
    assert {rule.get("keep_firing_for") for rule in rules_of(held) if rule.get("alert") in EDGE_ALERTS} == {"1m30s"}
    for off in (0, "0"):
        assert not any(
            "keep_firing_for" in rule for rule in rules_of(alert_rules.render(dict(given, keep_firing_for=off)))
        )


@pytest.mark.parametrize(
    "limit, text",
    [
        ({"measure": "free_bytes", "level": 10 * GIB}, "10 GiB free"),
        ({"measure": "free_bytes", "level": 10 * GIB + 1}, "10737418241 bytes free"),
        ({"measure": "free_bytes", "level": 512 * 1024**2}, "512 MiB free"),
        ({"measure": "free_bytes", "level": 0}, "0 bytes free"),
        ({"measure": "free_ratio", "level": 0.1}, "10% free (ratio 0.1)"),
        ({"measure": "free_ratio", "level": 0.125}, "12.5% free (ratio 0.125)"),
        ({"measure": "free_percentage", "level": 7.5}, "7.5% free"),
        ({"measure": "free_percentage", "level": 20}, "20% free"),
        ({"measure": "consumed_bytes", "level": 2 * 1024**4}, "2 TiB used"),
    ],
)
def test_limits_read_as_the_summaries_say_them(limit, text):
    assert alert_rules.limit_text(limit) == text


@pytest.mark.parametrize(
    "seconds, text", [(86400, "24h"), (14400, "4h"), (5400, "1h30m"), (90, "1m30s"), (300, "5m"), (59, "59s")]
)
def test_durations_are_written_in_hours_minutes_and_seconds(seconds, text):
    assert alert_rules.duration_text(seconds) == text


# -- refusals -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "given, message",
    [
        ("prod", "the alert rule settings must be a dict (got 'prod')"),
        (
            settings(kafka_disk_guard=GRADED_PERCENTAGE, horizon="24h"),
            "unknown alert rule setting(s) horizon; allowed:",
        ),
        ({"kafka_disk_guard": GRADED_PERCENTAGE}, "cluster must name the Kafka cluster"),
        (guard(cluster="prod eu"), "cluster must name the Kafka cluster in letters, digits, '.', '_' and '-'"),
        (guard(cluster="{{ x }}"), "(got '{{ x }}')"),
        (settings(), "nothing throttles producers on disk space: kafka_quotas has no type strimzi (got None)"),
        (settings(kafka_quotas={"type": "kafka"}), "kafka_quotas has no type strimzi (got 'kafka')"),
        (
            settings(kafka_quotas=PLUGIN_BYTES, kafka_disk_guard=GRADED_PERCENTAGE, brokers=BROKERS),
            "kafka_disk_guard is set and kafka_quotas has type strimzi",
        ),
        (plugin(guard_observe_only="yes"), "guard_observe_only must be true or false (got 'yes')"),
        # The plugin's own checks, naming the field.
        (
            plugin({"type": "strimzi", "min_available_ratio_per_volume": 1.5}),
            "kafka_quotas.min_available_ratio_per_volume must be between 0 and 1 inclusive (got 1.5)",
        ),
        (plugin({"type": "strimzi"}), "kafka_quotas needs exactly one of min_available_bytes_per_volume"),
        (
            plugin({"type": "strimzi", "min_available_bytes_per_volume": 1, "min_available_ratio_per_volume": 0.1}),
            "kafka_quotas sets both min_available_bytes_per_volume",
        ),
        (
            plugin({"type": "strimzi", "min_available_bytes_per_volume": -1}),
            "kafka_quotas.min_available_bytes_per_volume",
        ),
        (settings(kafka_quotas=PLUGIN_BYTES), "brokers is required with kafka_quotas type strimzi"),
        (
            plugin(dict(PLUGIN_BYTES, check_interval=0)),
            "kafka_quotas.check_interval is 0, which turns the quota plugin's storage checks off",
        ),
        (plugin(dict(PLUGIN_BYTES, check_interval="soon")), "kafka_quotas.check_interval must be an ISO 8601 duration"),
        # The guard's own checks, naming the field.
        (
            guard(
                {
                    "policy": "graded",
                    "soft_limit": {"type": "min_free_percentage", "level": 5},
                    "hard_limit": {"type": "min_free_percentage", "level": 20},
                }
            ),
            "kafka_disk_guard: soft_limit.level must be greater than hard_limit.level for min_free_percentage",
        ),
        (
            guard(
                {
                    "policy": "graded",
                    "soft_limit": {"type": "min_free_percentage", "level": 120},
                    "hard_limit": {"type": "min_free_percentage", "level": 5},
                }
            ),
            "kafka_disk_guard: soft_limit.level is a percentage for min_free_percentage and must be between 0 and 100",
        ),
        (
            guard(
                {
                    "policy": "graded",
                    "soft_limit": {"type": "free", "level": 1},
                    "hard_limit": {"type": "min_free_bytes", "level": 0},
                }
            ),
            "kafka_disk_guard: soft_limit.type must be one of",
        ),
        (
            guard(
                {
                    "policy": "graded",
                    "soft_limit": {"type": "min_free_bytes", "level": "lots"},
                    "hard_limit": {"type": "min_free_bytes", "level": 0},
                }
            ),
            "kafka_disk_guard.soft_limit.level must be a finite number (got 'lots')",
        ),
        (guard({"policy": "graded"}), "kafka_disk_guard: soft_limit must be a dict with keys type and level"),
        (
            guard({"policy": "graded", "min_available_ratio": 0.1, **GRADED_PERCENTAGE}),
            "kafka_disk_guard: min_available_ratio belongs to policy strimzi",
        ),
        (
            guard({"policy": "strimzi"}),
            "kafka_disk_guard: one of min_available_bytes or min_available_ratio is required",
        ),
        (guard({"min_available_ratio": 1.5}), "kafka_disk_guard: min_available_ratio must be between 0.0 and 1.0"),
        (guard({"min_available_bytes": 1.5}), "kafka_disk_guard.min_available_bytes must be a whole number of bytes"),
        (guard({"policy": "binary", "min_available_bytes": 1}), "kafka_disk_guard.policy must be strimzi or graded"),
        (guard(dict(GRADED_PERCENTAGE, missing_data_action="guess")), "kafka_disk_guard.missing_data_action must be"),
        (
            guard({"min_available_bytes": 1, "throttle_factor_fallback": 1.5}),
            "kafka_disk_guard.throttle_factor_fallback must be between 0 and 1 inclusive (got 1.5)",
        ),
        (
            guard({"min_available_bytes": 1, "throttle_factor_validity": "P1M"}),
            "kafka_disk_guard.throttle_factor_validity must be an ISO 8601 duration",
        ),
        (settings(kafka_disk_guard=["policy"]), "kafka_disk_guard must be a dict of the disk_guard module's options"),
        # The options.
        (plugin(brokers="kafka-1"), "brokers must be a list of {broker_id, instance}"),
        (plugin(brokers=[{"broker_id": 1}]), "brokers[0] must be a dict with exactly the keys broker_id"),
        (plugin(brokers=[{"broker_id": -1, "instance": "k:1"}]), "brokers[0].broker_id must be a whole number from 0"),
        (
            plugin(brokers=[{"broker_id": 1, "instance": ""}]),
            "brokers[0].instance must be the scrape target's instance",
        ),
        (
            plugin(brokers=[{"broker_id": 1, "instance": "k:1"}, {"broker_id": 1, "instance": "k:2"}]),
            "brokers[1] repeats broker_id 1",
        ),
        (guard(jmx_selector=""), "jmx_selector must be PromQL label matchers without braces"),
        (guard(jmx_selector='{job="kafka"}'), "jmx_selector must be PromQL label matchers"),
        (guard(guard_selector="job=kafka"), "guard_selector must be PromQL label matchers"),
        (guard(guard_selector='job="a`b"'), "guard_selector must be PromQL label matchers"),
        (guard(jmx_exporter="yes"), "jmx_exporter must be true or false (got 'yes')"),
        (guard(guard_interval=0), "guard_interval must be a whole number from 1 to 86400"),
        (guard(throttled_minutes=0), "throttled_minutes must be a whole number from 1 to 10080"),
        (guard(throttled_minutes=2.5), "throttled_minutes must be a whole number"),
        (guard(fill_lookback="6 hours"), "fill_lookback must be a Prometheus duration such as 30m, 4h or 1h30m"),
        (guard(fill_for="0m"), "fill_for must be a Prometheus duration"),
        (guard(scrape_for=True), "scrape_for must be a Prometheus duration"),
        (
            guard(fill_warning_horizon="4h", fill_critical_horizon="4h"),
            "fill_critical_horizon (4h) must be shorter than fill_warning_horizon (4h)",
        ),
        (guard(runbook_url="https://x y"), "runbook_url must be a URL without blanks"),
    ],
)
def test_refusals_name_the_field(given, message):
    with pytest.raises(alert_rules.AlertRulesError) as info:
        alert_rules.render(given)
    assert message in str(info.value)


def test_unset_options_take_their_defaults():
    """None (an unset role variable) is the default, as in argument specs."""
    assert alert_rules.render(guard(fill_for=None, brokers=None, runbook_url=None)) == alert_rules.render(guard())


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        (plugin(), 67.6),  # the plugin's default interval, 60 s, and the measured 7.6 s
        (plugin(dict(PLUGIN_BYTES, check_interval=10)), 17.6),
        (plugin(dict(PLUGIN_BYTES, peak_fill_rate=1 << 20)), 67.6),  # 10 GiB hold 10,232 s at 1 MiB/s: 60 s chosen
    ],
)
def test_a_limit_too_small_for_the_recent_fill_rate_is_the_sizing_rule(given, seconds):
    rule = alert(alert_rules.render(given), "KafkaLogDirLimitTooSmall", "warning")
    assert rule["expr"] == (
        'clamp_min(-deriv(cluster_broker_log_dir:headroom_volume_available_bytes:min{{cluster="prod"}}[5m]), '
        "0) * {0} > "
        'cluster_broker_log_dir:headroom_volume_hard_limit_free_bytes:{{cluster="prod"}}'.format(
            alert_rules.promql_number(seconds)
        )
    )


def test_the_relief_alerts_read_the_guards_relief_series():
    rendered = guard({"min_available_ratio": 0.1, "relieve": RELIEVE}, guard_selector='job="guard"')
    failing = alert(alert_rules.render(rendered), "HeadroomGuardReliefFailing")
    assert failing["expr"] == 'increase(headroom_guard_relief_steps_total{job="guard",action="failed"}[15m]) > 0'
    blocked = alert(alert_rules.render(rendered), "HeadroomGuardReliefBlocked")
    assert blocked["expr"] == 'headroom_guard_relief_blocked_log_dirs{job="guard"} > 0' and blocked["for"] == "10m"
