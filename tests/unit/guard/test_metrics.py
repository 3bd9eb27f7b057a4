"""The guard's metrics page: Prometheus' text format, its names and escapes, the textfile and the HTTP endpoint."""

import os
import re
import threading
import urllib.error
import urllib.request

import pytest

from headroom_guard.metrics import GuardMetrics, MetricsServer, write_textfile

SAMPLE = re.compile(r'^[a-z_]+(\{([a-z_]+="([^"\\\n]|\\\\|\\"|\\n)*",?)*\})? -?[0-9.e+]+$')


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


def test_before_the_first_decision_only_the_counters_and_the_settings_are_shown():
    metrics = GuardMetrics()
    metrics.interval = 30.0
    assert metrics.render() == (
        "# HELP headroom_guard_decisions_total Decisions since the guard started, by outcome.\n"
        "# TYPE headroom_guard_decisions_total counter\n"
        'headroom_guard_decisions_total{outcome="applied"} 0\n'
        'headroom_guard_decisions_total{outcome="unchanged"} 0\n'
        'headroom_guard_decisions_total{outcome="failed"} 0\n'
        "# HELP headroom_guard_quota_changes_total Client quota entities changed since the guard started.\n"
        "# TYPE headroom_guard_quota_changes_total counter\n"
        "headroom_guard_quota_changes_total 0\n"
        "# HELP headroom_guard_record_failures_total Decisions whose history files or snapshot topic could not be "
        "written.\n"
        "# TYPE headroom_guard_record_failures_total counter\n"
        "headroom_guard_record_failures_total 0\n"
        "# HELP headroom_guard_observe_only 1 when the guard only observes and records (--observe-only): it never "
        "changes client quotas.\n"
        "# TYPE headroom_guard_observe_only gauge\n"
        "headroom_guard_observe_only 0\n"
        "# HELP headroom_guard_interval_seconds Seconds from the start of one decision to the next (--interval); "
        "alerts count missed decisions in it.\n"
        "# TYPE headroom_guard_interval_seconds gauge\n"
        "headroom_guard_interval_seconds 30\n"
    )


def test_a_decision_shows_what_the_plugin_exposes_and_the_guards_state():
    metrics = GuardMetrics()
    metrics.decided(result(), 0.125)
    metrics.decided(result(changed=False, changes=[]), 0.25)
    metrics.failed()
    text = metrics.render()
    for line in text.splitlines():
        assert line.startswith("# ") or SAMPLE.match(line), line
    for expected in (
        'headroom_guard_decisions_total{outcome="applied"} 1',
        'headroom_guard_decisions_total{outcome="unchanged"} 1',
        'headroom_guard_decisions_total{outcome="failed"} 1',
        "headroom_guard_quota_changes_total 2",
        "headroom_guard_throttle_factor 0.25",
        "headroom_guard_limit_violated 1",
        "headroom_guard_fallback_applied 0",
        "headroom_guard_observed 1",
        'headroom_guard_state{state="THROTTLE"} 1',
        'headroom_guard_state{state="PAUSE"} 0',
        "headroom_guard_active_brokers 2",
        "headroom_guard_active_log_dirs 2",
        'headroom_guard_volume_available_bytes{broker_id="1",log_dir="/data/\\"a\\"\\\\b\\nc"} 30',
        'headroom_guard_volume_consumed_bytes{broker_id="2",log_dir="/data"} 10',
        "headroom_guard_last_decision_timestamp_seconds 1795730000.5",
        "headroom_guard_last_decision_duration_seconds 0.25",
    ):
        assert expected + "\n" in text, expected
    assert "/offline" not in text, "a log dir of unknown size has no figures"
    assert all(name.startswith("headroom_guard_") for name in re.findall(r"^# TYPE (\S+)", text, re.M))


def test_the_textfile_is_replaced_whole(tmp_path):
    path = tmp_path / "guard.prom"
    write_textfile(str(path), "a 1\n")
    write_textfile(str(path), "a 2\n")
    assert path.read_text() == "a 2\n" and os.listdir(tmp_path) == ["guard.prom"]
    assert oct(path.stat().st_mode & 0o777) == "0o644", "node_exporter runs as another user"


def test_the_endpoint_serves_metrics_and_nothing_else():
    metrics = GuardMetrics()
    metrics.decided(result(), 0.5)
    server = MetricsServer(metrics, "127.0.0.1", 0, threading.Lock()).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as answer:
            assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            assert answer.read().decode() == metrics.render()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/", timeout=5)
        assert refused.value.code == 404
    finally:
        server.stop()


def test_the_wait_before_the_next_decision_is_shown_once_the_loop_planned_one():
    metrics = GuardMetrics()
    metrics.interval = 30.0
    assert "headroom_guard_next_decision_seconds" not in metrics.render()
    metrics.wait = 2.5
    assert metrics.render().endswith(
        "# TYPE headroom_guard_next_decision_seconds gauge\nheadroom_guard_next_decision_seconds 2.5\n"
    )


def relief(action, **figures):
    step = {"action": action, "moves": [], "planned_bytes": 0, "moving_bytes": 0, "moved_bytes": 0, "blocked": []}
    step.update(figures)
    return result(changes=[], relief=step)


def samples(metrics, name):
    return [line for line in metrics.render().splitlines() if line.startswith(name)]


def test_relief_steps_count_the_bytes_started_moving_and_moved_and_a_failure_keeps_what_still_moves():
    metrics = GuardMetrics()
    metrics.decided(result(), 0.1)
    assert samples(metrics, "headroom_guard_relief") == [], "a guard that does not relieve shows no relief series"
    metrics.decided(relief("started", planned_bytes=300, moving_bytes=300, blocked=[{"reason": "x"}]), 0.1)
    metrics.decided(relief("failed", error="timed out"), 0.1)
    assert samples(metrics, "headroom_guard_relief_moving_bytes") == ["headroom_guard_relief_moving_bytes 300"]
    metrics.decided(relief("finished", moved_bytes=300), 0.1)
    assert samples(metrics, "headroom_guard_relief_planned_bytes_total") == [
        "headroom_guard_relief_planned_bytes_total 300"
    ]
    assert samples(metrics, "headroom_guard_relief_moved_bytes_total") == [
        "headroom_guard_relief_moved_bytes_total 300"
    ]
    assert samples(metrics, "headroom_guard_relief_moving_bytes") == ["headroom_guard_relief_moving_bytes 0"]
    assert samples(metrics, "headroom_guard_relief_blocked_log_dirs") == ["headroom_guard_relief_blocked_log_dirs 1"]
    steps = samples(metrics, "headroom_guard_relief_steps_total")
    assert 'headroom_guard_relief_steps_total{action="failed"} 1' in steps
    assert 'headroom_guard_relief_steps_total{action="started"} 1' in steps
    assert samples(metrics, 'headroom_guard_decisions_total{outcome="applied"}')[0].endswith(" 1"), (
        "only the decision that changed quotas counts as applied"
    )
    assert all(SAMPLE.match(line) for line in metrics.render().splitlines() if not line.startswith("#"))
