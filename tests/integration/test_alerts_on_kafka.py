"""The alert rules and the dashboard against a real Prometheus server scraping real brokers: Apache Kafka with the
Strimzi quota plugin started with the block site.yml renders, every node's JMX exporter serving the jmx_exporter role's
rules, and the disk guard observing beside the plugin (--observe-only). A volume that fills past the plugin's limit
makes the limit alert fire while a producer is really throttled, and the throttled alert after its hold; freeing it
resolves them. Every panel of the dashboard returns series from that Prometheus. (site.yml writing that block and
rolling the brokers is test_site.py's and the fleet's.)"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import yaml
from test_integration_targets import connection_options

from ansible_collections.headroom.kafka.plugins.module_utils import alert_rules
from dashboards.queries import dashboard_queries
from kafka_testbed.log_dir_probe import fill_volume
from kafka_testbed.prometheus import PrometheusServer
from kafka_testbed.traffic import create_topic, produce, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE_EXPORTER_RULES = os.path.join(ROOT, "roles", "jmx_exporter", "files", "jmx-exporter.yml")
CLUSTER = "it"
BASE_RATE = 1 << 20
LIMIT = 32 << 20  # min.available.bytes per volume: the plugin's and the guard's limit
CHECK_INTERVAL = 2  # the plugin's storage.check-interval, seconds
SPEC = {
    "type": "strimzi",
    "producer_byte_rate": BASE_RATE,
    "min_available_bytes_per_volume": LIMIT,
    "check_interval": CHECK_INTERVAL,
}
TOPIC = "traffic"
# The guard's relieve option, above the limit: observing, it plans and moves nothing.
RELIEVE = {
    "relieve_at": {"type": "min_free_bytes", "level": LIMIT + (8 << 20)},
    "relieve_to": {"type": "min_free_bytes", "level": LIMIT + (16 << 20)},
}
# A check of the plugin, a scrape and a rule evaluation (1 s each here), and slack for a busy machine.
ALERT_WITHIN = CHECK_INTERVAL + 20
THROTTLED_MINUTES = 1
# The throttled alert's hold, rendered as THROTTLED_MINUTES (whole minutes, the least the rules take), is cut to this
# for the live server: that the rule holds for its minutes is promtool's to prove (test_prometheus_rules.py), this
# module proves that its expression fires on the exporters' series and resolves.
THROTTLED_HOLD_SECONDS = 10
# The limit alert's keep_firing_for (5m by default): long enough to see it held once the volume is freed, short enough
# to see it resolve.
KEEP_FIRING_SECONDS = 20


@pytest.fixture(scope="module")
def watched(kafka_cluster_root, tmp_path_factory):
    """The cluster with the plugin and the role's exporter rules, the guard observing, and Prometheus with the rules."""
    from kafka_testbed.testing import ClusterFactory, started_with_the_plugin

    factory = ClusterFactory(kafka_cluster_root, engine="kafka")
    guard = None
    try:
        cluster = factory(2, volume_size="64M", **started_with_the_plugin(2, SPEC))
        # The agents read their configuration again when it changes.
        shutil.copyfile(ROLE_EXPORTER_RULES, cluster.info["exporter_config"])
        workdir = tmp_path_factory.mktemp("alerts")
        create_topic(cluster, TOPIC, replicas_on=1)
        guard, guard_port = start_observing_guard(cluster, workdir)
        exporters = {entry["id"]: entry["metrics_url"].split("/")[2] for entry in cluster.info["brokers"]}
        rules = workdir / "rules.yml"
        rules.write_text(
            yaml.safe_dump(
                short_throttled_hold(
                    alert_rules.render(
                        {
                            "cluster": CLUSTER,
                            "kafka_quotas": SPEC,
                            "kafka_disk_guard": {"policy": "strimzi", "min_available_bytes": LIMIT, "relieve": RELIEVE},
                            "guard_observe_only": True,
                            "brokers": [
                                {"broker_id": entry["id"], "instance": exporters[entry["id"]]}
                                for entry in cluster.broker_nodes
                            ],
                            "throttled_minutes": THROTTLED_MINUTES,
                            "keep_firing_for": f"{KEEP_FIRING_SECONDS}s",
                            "guard_interval": 1,
                        }
                    )
                )
            ),
            encoding="utf-8",
        )
        jobs = {"kafka": sorted(exporters.values()), "headroom-guard": [f"127.0.0.1:{guard_port}"]}
        with PrometheusServer(jobs, [str(rules)], labels={"cluster": CLUSTER}) as prometheus:
            wait_until(
                lambda: prometheus.targets_up() == {"kafka": len(exporters), "headroom-guard": 1},
                60,
                what="every exporter and the guard scraped",
            )
            yield cluster, prometheus
    finally:
        if guard is not None:
            guard.send_signal(signal.SIGTERM)
            guard.communicate(timeout=60)
        factory.close()


def short_throttled_hold(rules):
    """The rendered rules with the throttled alert's hold (THROTTLED_MINUTES) cut to THROTTLED_HOLD_SECONDS."""
    (throttled,) = [
        rule for group in rules["groups"] for rule in group["rules"] if rule.get("alert") == "KafkaProducersThrottled"
    ]
    assert throttled["for"] == f"{THROTTLED_MINUTES}m", throttled
    throttled["for"] = f"{THROTTLED_HOLD_SECONDS}s"
    return rules


def start_observing_guard(cluster, workdir):
    """The guard with the plugin's limit, observing only, its metrics on a free port: (process, port)."""
    config = workdir / "guard.yml"
    config.write_text(
        yaml.safe_dump(
            dict(
                connection_options(cluster.info),
                policy="strimzi",
                min_available_bytes=LIMIT,
                default_producer_byte_rate=BASE_RATE,
                # Observing, relief only plans; its series feed the dashboard's relief panels.
                relieve=RELIEVE,
            )
        ),
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "headroom_guard", "--config", str(config), "--interval", "1"]
        + ["--observe-only", "--metrics-port", "0"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)/metrics", process.stderr.readline()).group(1))
    return process, port


def firing(prometheus, name):
    return [alert for alert in prometheus.alerts("firing") if alert["labels"]["alertname"] == name]


def panels_without_series(prometheus):
    """The dashboard's panels none of whose queries returns a series now."""
    answered = {}
    for query in dashboard_queries():
        if query.source.startswith("annotation:"):
            continue
        answered.setdefault(query.source, False)
        answered[query.source] |= bool(prometheus.query(query.expr))
    return sorted(panel for panel, has_series in answered.items() if not has_series)


def test_a_full_volume_fires_the_limit_and_throttled_alerts_while_producers_are_throttled(watched):
    cluster, prometheus = watched
    # The topic lives on broker 1; broker 2's volume fills.
    before = produce(cluster, TOPIC, seconds=3)
    assert before.rate > BASE_RATE / 4
    assert not firing(prometheus, "KafkaLogDirAtLimit") and not firing(prometheus, "KafkaQuotaPluginNotLoaded")

    filled_at = time.monotonic()
    filler = fill_volume(cluster.broker(2)["log_dirs"][0], leave=LIMIT // 2)
    try:
        wait_until(
            lambda: prometheus.query('strimzi_quotas_throttle_factor{observing_broker_id="1"} == 0'),
            ALERT_WITHIN,
            what="the plugin's factor 0 on broker 1's exporter",
        )
        throttled_at = time.monotonic()
        (alert,) = wait_until(lambda: firing(prometheus, "KafkaLogDirAtLimit"), ALERT_WITHIN, what="the limit alert")
        alerted_at = time.monotonic()
        assert alert["labels"]["broker_id"] == "2" and alert["labels"]["cluster"] == CLUSTER
        summary, description = alert["annotations"]["summary"], alert["annotations"]["description"]
        assert f"Kafka cluster {CLUSTER}" in summary and "of broker 2 is at the throttle's limit" in summary, summary
        assert description.startswith("Broker 2 log dir") and "32 MiB" in description, description
        assert alert["annotations"]["runbook_url"].endswith("guide_alerts.rst#kafkalogdiratlimit")
        throttled = produce(cluster, TOPIC, seconds=4)
        assert throttled.throttles_ms and max(throttled.throttles_ms) > 1000, "producers are really throttled"
        assert throttled.rate_after_first_throttle() < before.rate / 20

        # The dashboard while the volume is full: every panel has series (the time to the limit needs a falling
        # volume, which this one was in the last minutes).
        assert panels_without_series(prometheus) == []

        wait_until(
            lambda: firing(prometheus, "KafkaProducersThrottled"),
            THROTTLED_HOLD_SECONDS + ALERT_WITHIN,
            what="the throttled alert after its hold",
        )
        print(
            f"from the fill: plugin factor 0 on the exporter after {throttled_at - filled_at:.1f} s, "
            f"KafkaLogDirAtLimit firing after {alerted_at - filled_at:.1f} s"
        )
    finally:
        os.remove(filler)

    # Freed: the volume is back above the limit in what Prometheus records, and the limit alert is still held...
    wait_until(
        lambda: prometheus.query(
            f'cluster_broker_log_dir:headroom_volume_available_bytes:min{{broker_id="2"}} > {LIMIT}'
        ),
        ALERT_WITHIN,
        what="the freed volume recorded",
    )
    freed_at = time.monotonic()
    assert firing(prometheus, "KafkaLogDirAtLimit"), "held by keep_firing_for once the volume is back above the limit"
    # ...until its keep_firing_for has passed.
    wait_until(
        lambda: not firing(prometheus, "KafkaLogDirAtLimit") and not firing(prometheus, "KafkaProducersThrottled"),
        KEEP_FIRING_SECONDS + ALERT_WITHIN,
        what="the alerts resolving once the volume is freed and the hold has passed",
    )
    assert time.monotonic() - freed_at >= KEEP_FIRING_SECONDS - 2 * CHECK_INTERVAL, "not before the hold"
    assert produce(cluster, TOPIC, seconds=3).rate > BASE_RATE / 4


def test_the_guard_and_every_exporter_are_watched_and_nothing_else_fires(watched):
    _cluster, prometheus = watched
    assert prometheus.query('headroom_guard_observe_only{job="headroom-guard"} == 1')
    wait_until(
        lambda: prometheus.query("cluster_broker_log_dir:headroom_volume_hard_limit_free_bytes:"),
        30,
        what="the limit recorded",
    )
    unexpected = [
        alert["labels"]["alertname"]
        for alert in prometheus.alerts("firing")
        # What the test before filled and freed leaves firing a while: the limit and throttled alerts resolve within a
        # few evaluations, and the cover alert looks back over its fill-rate window, in which that volume took 32 MiB
        # in a moment, a rate no limit covers.
        if alert["labels"]["alertname"]
        not in ("KafkaLogDirAtLimit", "KafkaProducersThrottled", "KafkaLogDirLimitTooSmall")
    ]
    assert unexpected == []
