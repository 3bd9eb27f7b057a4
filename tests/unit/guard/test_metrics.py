"""The guard's metrics page: Prometheus' text format from prometheus_client, its names, label escapes and the
histogram of decision durations, the textfile and the HTTP endpoint."""

import os
import threading
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from headroom_guard.metrics import GuardMetrics, MetricsServer, write_textfile
from kafka_testbed.prometheus_text import sample, samples


def families(metrics):
    """{family name: (type, help)} of the page."""
    return {
        family.name: (family.type, family.documentation) for family in text_string_to_metric_families(metrics.render())
    }


def result(**extra):
    decision = {
        "decided_at": 1795730000.5,
        "changed": True,
        "changes": [{}, {}],
        "throttle_factor": 0.25,
        "state": "THROTTLE",
        "violations": [{"broker_id": 1}],
        "fallback_applied": False,
        "missing_data_applied": False,
        "observed": True,
        "volumes": [
            {"broker_id": 1, "log_dir": '/data/"a"\\b\nc', "total_bytes": 100, "usable_bytes": 30},
            {"broker_id": 2, "log_dir": "/data", "total_bytes": 100, "usable_bytes": 90},
            {"broker_id": 2, "log_dir": "/offline", "total_bytes": None, "usable_bytes": None},
        ],
    }
    decision.update(extra)
    return decision


def test_before_the_first_decision_only_the_counters_the_settings_and_an_empty_histogram_are_shown():
    metrics = GuardMetrics()
    metrics.interval = 30.0
    assert families(metrics) == {
        "headroom_guard_decision_duration_seconds": (
            "histogram",
            "How long each decision took: reads, decision and quota changes.",
        ),
        "headroom_guard_decisions": ("counter", "Decisions since the guard started, by outcome."),
        "headroom_guard_quota_changes": ("counter", "Client quota entities changed since the guard started."),
        "headroom_guard_record_failures": (
            "counter",
            "Decisions whose history files or snapshot topic could not be written.",
        ),
        "headroom_guard_observe_only": (
            "gauge",
            "1 when the guard only observes and records (--observe-only): it never changes client quotas.",
        ),
        "headroom_guard_interval_seconds": (
            "gauge",
            "Seconds from the start of one decision to the next (--interval); alerts count missed decisions in it.",
        ),
    }
    text = metrics.render()
    for outcome in ("applied", "unchanged", "failed"):
        assert sample(text, "headroom_guard_decisions_total", outcome=outcome) == 0
    assert sample(text, "headroom_guard_interval_seconds") == 30
    assert sample(text, "headroom_guard_decision_duration_seconds_count") == 0
    assert "# TYPE headroom_guard_decisions_total counter" in text, "counters are exposed under their _total name"


def test_a_decision_shows_what_the_plugin_exposes_and_the_guards_state():
    metrics = GuardMetrics()
    metrics.decided(result(), 0.125)
    metrics.decided(result(changed=False, changes=[]), 0.25)
    metrics.failed()
    text = metrics.render()
    expected = {
        ("headroom_guard_decisions_total", (("outcome", "applied"),)): 1,
        ("headroom_guard_decisions_total", (("outcome", "unchanged"),)): 1,
        ("headroom_guard_decisions_total", (("outcome", "failed"),)): 1,
        ("headroom_guard_quota_changes_total", ()): 2,
        ("headroom_guard_throttle_factor", ()): 0.25,
        ("headroom_guard_limit_violated", ()): 1,
        ("headroom_guard_fallback_applied", ()): 0,
        ("headroom_guard_observed", ()): 1,
        ("headroom_guard_state", (("state", "THROTTLE"),)): 1,
        ("headroom_guard_state", (("state", "PAUSE"),)): 0,
        ("headroom_guard_active_brokers", ()): 2,
        ("headroom_guard_active_log_dirs", ()): 2,
        # the label value read back exactly, quotes, backslash and line feed included
        ("headroom_guard_volume_available_bytes", (("broker_id", "1"), ("log_dir", '/data/"a"\\b\nc'))): 30,
        ("headroom_guard_volume_consumed_bytes", (("broker_id", "2"), ("log_dir", "/data"))): 10,
        ("headroom_guard_last_decision_timestamp_seconds", ()): 1795730000.5,
        ("headroom_guard_last_decision_duration_seconds", ()): 0.25,
    }
    for (name, labels), value in expected.items():
        assert sample(text, name, **dict(labels)) == value, (name, labels)
    assert "/offline" not in text, "a log dir of unknown size has no figures"
    assert all(name.startswith("headroom_guard_") for name, _labels in samples(text))


def test_the_histogram_counts_every_decision_by_its_duration():
    metrics = GuardMetrics()
    for seconds in (0.02, 0.125, 0.25, 3.0):
        metrics.decided(result(), seconds)
    metrics.failed()  # a failed decision has no duration to count
    text = metrics.render()
    histogram = "headroom_guard_decision_duration_seconds"
    assert sample(text, histogram + "_count") == 4
    assert sample(text, histogram + "_sum") == 3.395
    buckets = {le: sample(text, histogram + "_bucket", le=le) for le in ("0.025", "0.1", "0.25", "2.5", "5.0", "+Inf")}
    assert buckets == {"0.025": 1, "0.1": 1, "0.25": 3, "2.5": 3, "5.0": 4, "+Inf": 4}


def test_the_textfile_is_replaced_whole(tmp_path):
    path = tmp_path / "guard.prom"
    write_textfile(str(path), "a 1\n")
    write_textfile(str(path), "a 2\n")
    assert path.read_text() == "a 2\n" and os.listdir(tmp_path) == ["guard.prom"]
    assert oct(path.stat().st_mode & 0o777) == "0o644", "node_exporter runs as another user"


def test_the_endpoint_serves_the_page_collected_under_the_guards_lock():
    metrics, lock = GuardMetrics(), threading.Lock()
    metrics.decided(result(), 0.5)
    server = MetricsServer(metrics, "127.0.0.1", 0, lock).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as answer:
            assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert samples(answer.read().decode()) == samples(metrics.render())
        # A scrape waits for the decision under way (the guard holds its lock while it updates the metrics).
        scraped = []
        with lock:
            scrape = threading.Thread(
                target=lambda: scraped.append(urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics").read())
            )
            scrape.start()
            scrape.join(1.0)
            assert not scraped and scrape.is_alive()
            metrics.decided(result(throttle_factor=0.5), 0.5)
        scrape.join(5.0)
        assert sample(scraped[0].decode(), "headroom_guard_throttle_factor") == 0.5
    finally:
        server.stop()


def test_the_wait_before_the_next_decision_is_shown_once_the_loop_planned_one():
    metrics = GuardMetrics()
    metrics.interval = 30.0
    assert "headroom_guard_next_decision_seconds" not in metrics.render()
    metrics.wait = 2.5
    assert sample(metrics.render(), "headroom_guard_next_decision_seconds") == 2.5


def relief(action, **figures):
    step = {"action": action, "moves": [], "planned_bytes": 0, "moving_bytes": 0, "moved_bytes": 0, "blocked": []}
    step.update(figures)
    return result(changes=[], relief=step)


def test_relief_steps_count_the_bytes_started_moving_and_moved_and_a_failure_keeps_what_still_moves():
    metrics = GuardMetrics()
    metrics.decided(result(), 0.1)
    assert not [name for name, _labels in samples(metrics.render()) if name.startswith("headroom_guard_relief")], (
        "a guard that does not relieve shows no relief series"
    )
    metrics.decided(relief("started", planned_bytes=300, moving_bytes=300, blocked=[{"reason": "x"}]), 0.1)
    metrics.decided(relief("failed", error="timed out"), 0.1)
    assert sample(metrics.render(), "headroom_guard_relief_moving_bytes") == 300
    metrics.decided(relief("finished", moved_bytes=300), 0.1)
    text = metrics.render()
    assert sample(text, "headroom_guard_relief_planned_bytes_total") == 300
    assert sample(text, "headroom_guard_relief_moved_bytes_total") == 300
    assert sample(text, "headroom_guard_relief_moving_bytes") == 0
    assert sample(text, "headroom_guard_relief_blocked_log_dirs") == 1
    assert sample(text, "headroom_guard_relief_steps_total", action="failed") == 1
    assert sample(text, "headroom_guard_relief_steps_total", action="started") == 1
    assert sample(text, "headroom_guard_decisions_total", outcome="applied") == 1, (
        "only the decision that changed quotas counts as applied"
    )
