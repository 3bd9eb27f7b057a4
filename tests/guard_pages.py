"""The guard's metrics page after one decision of a guard with every option that adds series (an interval, relieve):
what the dashboard's and the alert rules' tests hold their queries to."""

from headroom_guard.metrics import GuardMetrics


def guard_page(log_dir="/data"):
    """The page the guard serves after one decision with a volume at ``log_dir`` and an idle relief step."""
    metrics = GuardMetrics()
    metrics.interval = 30.0
    metrics.decided(
        {
            "decided_at": 1795730000.5,
            "changed": True,
            "changes": [{}],
            "throttle_factor": 0.5,
            "state": "THROTTLE",
            "violations": [],
            "fallback_applied": False,
            "missing_data_applied": False,
            "observed": True,
            "volumes": [{"broker_id": 1, "log_dir": log_dir, "total_bytes": 100, "usable_bytes": 30}],
            "relief": {
                "action": "idle",
                "moves": [],
                "planned_bytes": 0,
                "moving_bytes": 0,
                "moved_bytes": 0,
                "blocked": [],
            },
        },
        0.1,
    )
    return metrics.render()
