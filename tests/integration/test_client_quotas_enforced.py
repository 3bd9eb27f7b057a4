"""Kafka really enforces the client quotas headroom.kafka.client_quota sets, and the pipeline's client analysis reads
the traffic the broker accepted the way the broker judged it.

One real broker (and its controller). ``client_quota`` gives client-ids ``fast`` and ``steady`` a produce quota;
``fast`` offers twice its quota, ``steady`` half of it, at the same time. What they got through and the throttle time in
the produce responses come from the broker.
"""

import datetime
import json
import threading

import pytest
from ansible_run import run_module
from test_integration_targets import connection_options

from kafka_testbed.testing import ClusterFactory
from kafka_testbed.traffic import create_topic, produce

QUOTA = 256 << 10  # producer_byte_rate, bytes/s
SECONDS = 16
SETTLED = 6  # Kafka samples 11 one-second windows; judge the rate after the first ones
TOPIC = "quota-traffic"
WARM_UP_SECONDS = 120  # a second or less on a quiet machine
WINDOW_START = datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)


@pytest.fixture(scope="module")
def quota_run(kafka_cluster_root, tmp_path_factory):
    factory = ClusterFactory(kafka_cluster_root, engine="kafka")
    cluster = factory(1)
    try:
        workdir = str(tmp_path_factory.mktemp("quotas"))
        applied = run_module(
            "client_quota",
            dict(
                connection_options(cluster.info),
                quotas=[{"entity": {"client_id": name}, "producer_byte_rate": QUOTA} for name in ("fast", "steady")],
            ),
            workdir,
        )
        assert applied["changed"]
        described = run_module("client_quota_info", connection_options(cluster.info), workdir)
        create_topic(cluster, TOPIC, replicas_on=1)
        # One record through first, from a client without a quota, so that the measured seconds start once a produce
        # round trip works: in a run on one busy core neither producer had a record acknowledged in its 16 s.
        warm_up = produce(
            cluster, TOPIC, seconds=WARM_UP_SECONDS, max_bytes=1, message_size=1, **{"client.id": "warm-up"}
        )
        assert warm_up.acked, f"no record of the warm-up acknowledged in {WARM_UP_SECONDS} s"
        results = {}
        offered = {"fast": 2 * QUOTA, "steady": QUOTA // 2}
        threads = [
            threading.Thread(
                target=lambda n=name: results.__setitem__(
                    n, produce(cluster, TOPIC, seconds=SECONDS, offered_rate=offered[n], **{"client.id": n})
                )
            )
            for name in offered
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        yield results, described, workdir
    finally:
        factory.close()


def test_a_client_offering_twice_its_quota_converges_to_it_and_is_throttled(quota_run):
    results, _described, _workdir = quota_run
    fast = results["fast"]
    settled = fast.rate_between(SETTLED, SECONDS)
    print(
        f"fast: offered {2 * QUOTA} B/s, accepted {settled:.0f} B/s after {SETTLED} s, "
        f"throttle up to {max(fast.throttles_ms, default=0):.0f} ms"
    )
    assert abs(settled - QUOTA) <= 0.2 * QUOTA, f"accepted {settled:.0f} B/s, quota {QUOTA}"
    assert fast.throttles_ms, "the broker reported throttle time"


def test_a_client_at_half_its_quota_is_not_throttled(quota_run):
    results, _described, _workdir = quota_run
    steady = results["steady"]
    assert not steady.throttles_ms
    assert abs(steady.rate_between(SETTLED, SECONDS) - QUOTA / 2) <= 0.2 * QUOTA / 2


def traffic_rows(results):
    """What the broker accepted, one row per client and second in the pipeline's traffic schema. A row stands for the
    second that ends at its ``ts``; second ``SETTLED`` of the run ends just after ``WINDOW_START``."""
    rows = []
    for client_id, measured in results.items():
        per_second = {}
        for at, size in measured.acked_at:
            per_second[int(at)] = per_second.get(int(at), 0) + size
        rows += [
            (WINDOW_START + datetime.timedelta(seconds=second + 1 - SETTLED), 1, "", client_id, TOPIC, size, 0)
            for second, size in sorted(per_second.items())
        ]
    return rows


def test_the_pipeline_says_who_used_its_quota_and_who_was_throttled(quota_run, tmp_path, spark):
    """The client analysis, fed the per-second traffic the broker accepted and the quotas client_quota_info read back:
    ``fast`` used its whole quota and had seconds over it (throttled); ``steady`` used half and never went over."""
    from headroom_pipeline import client_quota_math, clients, ingest, schemas
    from headroom_pipeline.config import PipelineConfig

    results, described, _workdir = quota_run
    quotas_file = tmp_path / "quotas.json"
    quotas_file.write_text(json.dumps(described))
    traffic = spark.createDataFrame(traffic_rows(results), schemas.TRAFFIC_ROWS)
    config = PipelineConfig(snapshots="unused", out="unused", client_window=1.0)
    windows, _recommendations = clients.client_analysis(traffic, ingest.load_quotas(str(quotas_file)), None, config)
    names = client_quota_math.column_names("", "produce", "producer_byte_rate")
    settled = [
        row.asDict()
        for row in windows.where(windows.window_start >= WINDOW_START)
        .where(windows.window_end <= WINDOW_START + datetime.timedelta(seconds=SECONDS - SETTLED))
        .collect()
    ]
    by_client = {name: [row for row in settled if row["client_id"] == name] for name in ("fast", "steady")}
    fast_use = sum(row[names["fraction"]] for row in by_client["fast"]) / len(by_client["fast"])
    steady_use = sum(row[names["fraction"]] for row in by_client["steady"]) / len(by_client["steady"])
    print(f"pipeline: fast used {fast_use:.2f} of its quota, steady {steady_use:.2f}")
    assert {row[names["quota"]] for row in settled} == {QUOTA}, "the quota client_quota_info read back"
    assert abs(fast_use - 1) <= 0.2
    assert any(row[names["throttle"]] > 0 for row in by_client["fast"]), "seconds over the quota: throttled"
    assert abs(steady_use - 0.5) <= 0.1
    assert all(row[names["throttle"]] == 0 for row in by_client["steady"])
