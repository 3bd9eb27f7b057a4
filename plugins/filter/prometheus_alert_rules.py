# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: prometheus_alert_rules
short_description: Prometheus recording and alerting rules whose thresholds are the disk throttle's own limits
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - Renders one Prometheus rule file, as data, from the declaration that throttles producers on disk space - the
    Strimzi quota plugin (O(_input.kafka_quotas) with C(type=strimzi)) or the disk guard (O(_input.kafka_disk_guard)).
    Every threshold is a limit of that declaration, checked by the same rules as the plugin's properties and the
    guard, and compared as they compare it (inclusive), so an alert fires exactly where the throttle acts.
  - "Recording rules, named level:metric:operations, with the label C(cluster):
    C(cluster_broker_log_dir:headroom_volume_available_bytes:min), C(..._consumed_bytes:max), C(..._size_bytes:max)
    and C(..._available_ratio:min) per C(broker_id) and C(log_dir), from the guard's metrics or the plugin's through
    the JMX exporter; C(cluster_broker_log_dir:headroom_volume_hard_limit_free_bytes:) (and C(soft)), where each limit
    trips; C(cluster:headroom_throttle_factor:min) (the guard's) or C(cluster_broker:headroom_throttle_factor:min)
    (each broker's plugin's); C(cluster_broker:headroom_broker_info:) (C(broker_id), C(instance)) from
    O(_input.brokers)."
  - "Alerts: C(KafkaLogDirAtLimit) (the plugin's rule) or C(KafkaLogDirPastSoftLimit) and C(KafkaLogDirAtHardLimit)
    (graded), C(KafkaLogDirFillingUp) (warning and critical, by C(predict_linear)), C(KafkaProducersThrottled), the
    fallback or missing-data alert of the throttle (C(KafkaQuotaPluginFallbackApplied),
    C(HeadroomGuardFallbackApplied), C(HeadroomGuardMissingDataApplied)), C(HeadroomGuardNotDeciding),
    C(HeadroomGuardNotScraped), C(KafkaLogDirOffline), C(KafkaJmxExporterNotScraped) and C(KafkaQuotaPluginNotLoaded).
    Each summary says in one line what is wrong and where (the cluster, the broker, the log dir); the description
    gives the figures, then what the alert means and what to do; C(runbook_url) links to its runbook in the
    collection's guide Alerts and the dashboard (docs/docsite/rst/guide_alerts.rst). The alerts on an edge keep
    firing for O(_input.keep_firing_for) once their condition is gone."
  - A declaration that cannot work fails naming the field, the value and what is allowed, as the throttle's own
    checks word it.
options:
  _input:
    description: The settings.
    type: dict
    required: true
    suboptions:
      cluster:
        description:
          - The Kafka cluster's name - letters, digits, C(.), C(_) and C(-). It is the C(cluster) label of every
            recorded series and alert and is named in every summary.
        type: str
        required: true
      kafka_quotas:
        description: The quotas spec, as P(headroom.kafka.quota_plugin_properties#filter) takes it; C(type=strimzi)
          makes the plugin the throttle.
        type: dict
      kafka_disk_guard:
        description: The M(headroom.kafka.disk_guard) module's options (C(policy) and its limits,
          C(missing_data_action), C(throttle_factor_fallback), C(throttle_factor_validity); other keys are ignored).
        type: dict
      guard_observe_only:
        description:
          - The guard runs with C(--observe-only) beside the quota plugin - the limits are the plugin's, and the
            guard's own health is alerted on too. Without it, C(kafka_quotas) of type C(strimzi) beside
            C(kafka_disk_guard) is refused.
        type: bool
        default: false
      brokers:
        description:
          - The brokers the JMX exporter is scraped on, each C({broker_id, instance}) with the C(instance) label of its
            scrape target; required with the plugin (the brokers that should load it).
        type: list
        elements: dict
        default: []
      jmx_exporter:
        description: Whether the brokers' JMX exporter is scraped (always with the plugin, whose figures come through
          it); false leaves out the alerts on Kafka's own metrics.
        type: bool
        default: true
      jmx_selector:
        description: PromQL label matchers, without braces, that select the JMX exporter's series of this cluster.
        type: str
        default: job="kafka"
      guard_selector:
        description: PromQL label matchers, without braces, that select the guard's series (its metrics port, or
          node_exporter's textfile collector).
        type: str
        default: job="headroom-guard"
      guard_interval:
        description: Seconds between the guard's decisions, for a guard that does not export
          C(headroom_guard_interval_seconds).
        type: int
        default: 30
      fill_lookback:
        description: How far back C(predict_linear) fits the rate at which a log dir fills (Prometheus duration).
        type: str
        default: 6h
      fill_warning_horizon:
        description: C(KafkaLogDirFillingUp) warns when the limit is reached within this.
        type: str
        default: 24h
      fill_critical_horizon:
        description: C(KafkaLogDirFillingUp) is critical when the limit is reached within this; shorter than
          O(_input.fill_warning_horizon).
        type: str
        default: 4h
      fill_for:
        description: How long a fill prediction must hold before C(KafkaLogDirFillingUp) fires.
        type: str
        default: 1h
      throttled_minutes:
        description: C(KafkaProducersThrottled) fires when the throttle factor stays below 1 for longer than this.
        type: int
        default: 10
      scrape_for:
        description: How long an exporter or the guard may go unscraped before its alert fires.
        type: str
        default: 5m
      keep_firing_for:
        description:
          - How long an alert on an edge keeps firing once its condition is gone (Prometheus' C(keep_firing_for)) - the
            limit alerts, C(KafkaLogDirOffline) and the guard's missing-data and fallback alerts - so that a log dir
            going back and forth across a limit while the throttle lets producers on and off is one episode, not an
            alert and a resolution at each crossing.
          - C(0) turns the hold off.
        type: str
        default: 5m
      runbook_url:
        description:
          - The address of the runbooks; each alert gets C(runbook_url) with its name, lowercased, as the fragment
            (the runbooks' headings in the collection's guide Alerts and the dashboard).
          - The default is that guide where the collection's repository shows it; empty, the alerts have no
            C(runbook_url).
        type: str
        default: https://github.com/headroom-kafka/headroom.kafka/blob/main/docs/docsite/rst/guide_alerts.rst
seealso:
  - plugin: headroom.kafka.quota_plugin_properties
    plugin_type: filter
  - module: headroom.kafka.disk_guard
"""

EXAMPLES = r"""
- name: Write the alerting rules of the throttle the inventory declares
  ansible.builtin.copy:
    content: >-
      {{ {'cluster': 'prod-eu', 'kafka_quotas': kafka_quotas, 'brokers': [{'broker_id': 1, 'instance': 'kafka-1:7071'}]}
         | headroom.kafka.prometheus_alert_rules | to_nice_yaml(indent=2, width=1000, sort_keys=false) }}
    dest: /etc/prometheus/rules/headroom-kafka-prod-eu.yml
    mode: "0644"

# With kafka_disk_guard: {policy: graded, soft_limit: {type: min_free_percentage, level: 20},
#                         hard_limit: {type: min_free_percentage, level: 5}}
# KafkaLogDirPastSoftLimit:  cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod-eu"} * 100 <= 20,
#                            unless at the hard limit
# KafkaLogDirAtHardLimit:    cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod-eu"} * 100 <= 5
"""

RETURN = r"""
_value:
  description: The rule file - C(groups), one group named C(headroom-kafka-CLUSTER) with the recording rules first.
  type: dict
  sample:
    groups:
      - name: headroom-kafka-prod-eu
        rules:
          - record: cluster_broker_log_dir:headroom_volume_available_bytes:min
            expr: min by (broker_id, log_dir) (headroom_guard_volume_available_bytes{job="headroom-guard"})
            labels: {cluster: prod-eu}
          - alert: KafkaLogDirAtHardLimit
            expr: (cluster_broker_log_dir:headroom_volume_available_ratio:min{cluster="prod-eu"} * 100 <= 5)
            labels: {severity: critical, cluster: prod-eu}
            keep_firing_for: 5m
            annotations:
              summary: "Kafka cluster prod-eu: log dir {{ $labels.log_dir }} of broker {{ $labels.broker_id }} is at the
                hard limit: producers are paused"
              description: "Broker {{ $labels.broker_id }} log dir {{ $labels.log_dir }} has ... free ..., at or past
                the hard limit of 5% free: ...\nA log dir is at the hard limit, ..."
              runbook_url: "https://github.com/headroom-kafka/headroom.kafka/blob/main/docs/...#kafkalogdirathardlimit"
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils import alert_rules


def prometheus_alert_rules(settings):
    try:
        return alert_rules.render(settings)
    except alert_rules.AlertRulesError as exc:
        raise AnsibleFilterError("prometheus_alert_rules: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"prometheus_alert_rules": prometheus_alert_rules}
