"""The HTML report from output directories built in the contract's shape: files, PNGs, escaping, missing optional
outputs."""

import datetime
import json
import os
import re
import shutil

import pytest

from headroom_pipeline import report, report_charts, report_data, report_format, report_page

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GIB = 1024**3
START = datetime.datetime(2026, 11, 20, tzinfo=datetime.timezone.utc)
HOSTILE = '<b>&"x'
CALM = "calm-cluster"
FILLING = "cluster-a"

VOLUMES = (
    "cluster string, broker_id long, at timestamp, soft_type string, soft_level double, hard_type string, "
    "hard_level double, log_dir string, total_bytes long, usable_bytes long"
)
DECISIONS = (
    "cluster string, at timestamp, throttle_factor double, state string, fallback_applied boolean, observed boolean, "
    "violations array<struct<broker_id:long,log_dir:string>>, volumes_considered int, brokers_considered int, "
    "policy string"
)
FORECAST = (
    "cluster string, broker_id long, log_dir string, last_at timestamp, total_bytes long, usable_bytes long, "
    "used_bytes long, hard_limit_type string, hard_limit_level double, hard_limit_usable_bytes long, "
    "bytes_per_hour double, crosses_hard_limit_at timestamp, hours_to_hard_limit double, "
    "plugin_limit_usable_bytes long, crosses_plugin_limit_at timestamp, samples long, rank int"
)
CLIENTS = (
    "user string, client_id string, broker_id long, window_start timestamp, window_end timestamp, "
    "produce_bytes_per_sec double, producer_byte_rate double, quota_used_fraction double, throttle_time_ms double, "
    "fetch_bytes_per_sec double, "
    "consumer_byte_rate double, fetch_quota_used_fraction double, fetch_throttle_time_ms double"
)
RECOMMENDATIONS = (
    "user string, client_id string, recommended_producer_byte_rate double, recommended_consumer_byte_rate double, "
    "producer_byte_rate double, consumer_byte_rate double, windows_over_quota long"
)
TOPICS = (
    "broker_id long, topic string, ts timestamp, total_ewma double, topic_ewma double, total_threshold double, "
    "topic_threshold double, bytes_rejected long"
)


def at(minutes):
    return START + datetime.timedelta(minutes=minutes)


def volume_rows(cluster, broker_id, log_dir, usable_start, usable_step, points=40):
    """Snapshots every 5 minutes; free space falling by usable_step each time."""
    return [
        (
            cluster,
            broker_id,
            at(5 * index),
            "min_free_bytes",
            20.0 * GIB,
            "min_free_bytes",
            10.0 * GIB,
            log_dir,
            100 * GIB,
            usable_start - usable_step * index,
        )
        for index in range(points)
    ]


def forecast_row(cluster, broker_id, log_dir, usable, per_hour, crossing_hours, rank, plugin_crossing_hours=None):
    crossing = at(195 + crossing_hours * 60) if crossing_hours is not None else None
    plugin_crossing = at(195 + plugin_crossing_hours * 60) if plugin_crossing_hours is not None else None
    return (
        cluster,
        broker_id,
        log_dir,
        at(195),
        100 * GIB,
        usable,
        100 * GIB - usable,
        "min_free_bytes",
        10.0 * GIB,
        10 * GIB,
        per_hour,
        crossing,
        crossing_hours,
        15 * GIB,
        plugin_crossing,
        40,
        rank,
    )


def decision_rows(cluster, policy, states):
    factors = {"OPEN": 1.0, "THROTTLE": 0.5, "PAUSE": 0.0}
    return [
        (
            cluster,
            at(5 * index),
            factors[state],
            state,
            False,
            True,
            [] if state == "OPEN" else [(1, "/data/1")],
            2,
            2,
            policy,
        )
        for index, state in enumerate(states)
    ]


def write_outputs(spark, out, traffic=True):
    os.makedirs(out, exist_ok=True)
    volumes = (
        volume_rows(FILLING, 1, "/data/1", 40 * GIB, GIB // 4)
        + volume_rows(FILLING, 2, "/data/1", 60 * GIB, 0)
        + volume_rows(HOSTILE, 1, "/var/<kafka>", 30 * GIB, GIB // 8)
        + volume_rows(CALM, 1, "/d", 90 * GIB, 0)
    )
    spark.createDataFrame(volumes, VOLUMES).write.mode("overwrite").parquet(os.path.join(out, "volumes"))
    decisions = (
        decision_rows(FILLING, "graded", ["OPEN"] * 30 + ["THROTTLE"] * 10)
        + decision_rows(FILLING, "strimzi", ["OPEN"] * 40)
        + decision_rows(HOSTILE, "graded", ["OPEN"] * 20 + ["PAUSE"] * 20)
        + decision_rows(CALM, "graded", ["OPEN"] * 40)
    )
    spark.createDataFrame(decisions, DECISIONS).write.mode("overwrite").partitionBy("policy").parquet(
        os.path.join(out, "decisions")
    )
    forecast = [
        forecast_row(FILLING, 1, "/data/1", 30 * GIB, GIB * 3.0, 6.5, 1, 5.0),
        forecast_row(HOSTILE, 1, "/var/<kafka>", 25 * GIB, GIB * 1.5, 10.0, 2),
        forecast_row(FILLING, 2, "/data/1", 60 * GIB, 0.0, None, 3),
        forecast_row(CALM, 1, "/d", 90 * GIB, 0.0, None, 4),
    ]
    spark.createDataFrame(forecast, FORECAST).write.mode("overwrite").parquet(os.path.join(out, "forecast"))
    if traffic:
        clients = [
            ("alice", "producer-1", 1, at(i), at(i + 1), 1500.0, 1000.0, 1.5, 250.0, 10.0, None, None, 0.0)
            for i in range(3)
        ]
        clients += [
            ("bob", "<script>", 1, at(i), at(i + 1), 100.0, 1000.0, 0.1, 0.0, 900.0, 1000.0, 0.9, 0.0) for i in range(3)
        ]
        clients += [
            (None, "no-quota", 1, at(i), at(i + 1), 100.0, None, None, 0.0, 5.0, None, None, 0.0) for i in range(3)
        ]
        spark.createDataFrame(clients, CLIENTS).write.mode("overwrite").parquet(os.path.join(out, "clients"))
        recommendations = [
            ("alice", "producer-1", 1800.0, None, 1000.0, None, 3),
            ("bob", "<script>", 120.0, 1080.0, 1000.0, 1000.0, 0),
        ]
        spark.createDataFrame(recommendations, RECOMMENDATIONS).write.mode("overwrite").parquet(
            os.path.join(out, "client_recommendations")
        )
        topics = [(1, "orders", at(i), 900.0, 600.0, 1000.0, 500.0, 100) for i in range(4)]
        spark.createDataFrame(topics, TOPICS).write.mode("overwrite").parquet(os.path.join(out, "topics"))
    summary = {
        "rows_read": 170,
        "rows_used": 165,
        "rows_rejected": 5,
        "inputs": {
            "snapshots": {"read": 161, "used": 160, "rejected": 1},
            "traffic": {"read": 9, "used": 5, "rejected": 4},
        },
        "stages": {
            "decisions": {"rows": 160, "clusters": 3, "not_open": 30, "fallback_applied": 0},
            "forecast": {"volumes": 4, "crossing_hard_limit": 2},
        },
        "timings_seconds": {"read snapshots": 1.25},
        "settings": {"check_interval": 60.0},
    }
    if traffic:
        # The job lists every stage it ran; the report reads the optional outputs of those stages only.
        summary["stages"].update(
            {
                "clients": {"windows": 9, "windows_throttled": 3, "clients": 3},
                "topics": {"thresholds": 1, "windows_exceeded": 4},
            }
        )
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle)
    return summary


@pytest.fixture(scope="module")
def outputs(spark, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("outputs"))
    return out, write_outputs(spark, out)


@pytest.fixture(scope="module")
def rendered(spark, outputs):
    """The report of the full output dir, written once for the tests that only read it: (path, page)."""
    out, summary = outputs
    path = report.write_report(spark, out, summary)
    return path, read(path)


def copy_outputs(
    out, target, names=("volumes", "decisions", "forecast", "clients", "client_recommendations", "topics")
):
    for name in names:
        shutil.copytree(os.path.join(out, name), os.path.join(target, name))
    return target


def pngs_of(report_dir):
    return sorted(name for name in os.listdir(report_dir) if name.endswith(".png"))


def assert_valid_png(path):
    with open(path, "rb") as handle:
        data = handle.read()
    assert len(data) > len(PNG_SIGNATURE)
    assert data.startswith(PNG_SIGNATURE)


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_the_report_draws_every_chart_and_references_it(outputs, rendered):
    path, page = rendered
    assert path == os.path.join(outputs[0], "report", "index.html")
    report_dir = os.path.dirname(path)
    names = pngs_of(report_dir)
    expected = {
        f"{kind}-{report_charts.cluster_slug(cluster)}.png"
        for kind in ("free-space", "throttle-factor")
        for cluster in (FILLING, HOSTILE, CALM)
    }
    assert set(names) == expected | {"clients-nearest-quota.png"}
    for name in names:
        assert_valid_png(os.path.join(report_dir, name))
        assert f'src="{name}"' in page
    assert "free-space-cluster-a.png" in names, "a name that is already a safe slug is kept as it is"
    assert len(re.findall(r'<img [^>]*alt="[^"]+"', page)) == len(names), "every chart has alt text"
    assert "<script" not in page.lower() and "http://" not in page and "https://" not in page, (
        "no script, no external asset"
    )


def test_every_value_is_escaped(rendered):
    page = rendered[1]
    assert HOSTILE not in page
    assert "&lt;b&gt;&amp;&quot;x" in page
    assert "/var/&lt;kafka&gt;" in page and "/var/<kafka>" not in page
    assert "&lt;script&gt;" in page
    hostile_slug = report_charts.cluster_slug(HOSTILE)
    assert re.fullmatch(r"[A-Za-z0-9._-]+", hostile_slug) and hostile_slug == report_charts.cluster_slug(HOSTILE)
    assert report_charts.cluster_slug("a b") != report_charts.cluster_slug("a-b"), (
        "slugs of different names never collide"
    )


def test_the_headline_says_what_to_look_at_first(rendered):
    page = rendered[1]
    headline = page.split('<ul class="headline">', 1)[1].split("</ul>", 1)[0]
    assert "volume <strong>/data/1</strong> on broker 1 of cluster <strong>cluster-a</strong>" in headline
    assert "2026-11-20 09:45 UTC" in headline, "the crossing time: last snapshot 03:15 plus 6.5 hours"
    assert "6.5 hours" in headline
    assert (
        "The quota plugin's limit (15.0 GiB free) pauses produce on the cluster earlier, "
        "at <strong>2026-11-20 08:15 UTC" in headline
    )
    assert 'class="PAUSE">PAUSE' in headline and 'class="THROTTLE">THROTTLE' in headline
    assert headline.index("PAUSE") < headline.index("THROTTLE"), "paused clusters first"
    assert CALM not in headline
    assert "1 of 3 clients went over their quota" in headline and "alice / producer-1" in headline


def test_the_counts_and_the_fill_up_next_table(rendered):
    page = rendered[1]
    assert re.search(r"<td>snapshots</td><td[^>]*>161</td><td[^>]*>160</td><td[^>]*>1</td>", page)
    assert re.search(r"<td>total</td><td[^>]*>170</td><td[^>]*>165</td><td[^>]*>5</td>", page)
    assert re.search(r"<td>decisions</td><td>not_open</td><td[^>]*>30</td>", page)
    table = page.split("volumes that fill up next</h2>", 1)[1].split("</table>", 1)[0]
    order = [table.index(text) for text in ("cluster-a", "&lt;b&gt;", CALM)]
    assert order == sorted(order), "ranked: the volume that fills first on top"
    assert table.count("<tr>") == 1 + 4
    assert "<th>least limit</th>" in table, "forecast/ of a release before the sizing columns: they are empty"
    assert "hold at that rate with a check interval of 60 s" in page
    for name in ("volumes", "decisions", "forecast", "clients", "topics", "summary.json"):
        assert f'href="../{name}' in page


def test_missing_optional_outputs_are_said_so(spark, outputs, tmp_path):
    out, summary = outputs
    bare = copy_outputs(out, str(tmp_path / "bare"), ("volumes", "decisions", "forecast"))
    page = read(report.write_report(spark, bare, {"rows_read": 1}))
    assert "No traffic given" in page and "no traffic given" in page
    assert "No topic thresholds given" in page
    assert "clients-nearest-quota.png" not in page
    assert not os.path.exists(os.path.join(bare, "report", "clients-nearest-quota.png"))
    assert 'href="../clients/' not in page


def test_an_output_dir_without_forecast_or_decisions_still_gets_a_page(spark, outputs, tmp_path):
    out, summary = outputs
    history_only = copy_outputs(out, str(tmp_path / "history-only"), ("volumes",))
    path = report.write_report(spark, history_only, summary)
    page = read(path)
    assert "No volume forecast was written." in page and "No decision timeline was written." in page
    for name in pngs_of(os.path.dirname(path)):
        assert_valid_png(os.path.join(os.path.dirname(path), name))
        assert f'src="{name}"' in page


def test_at_most_max_clusters_are_drawn_those_that_fill_first(spark, outputs, tmp_path):
    out, summary = outputs
    copy = copy_outputs(out, str(tmp_path / "copy"))
    os.makedirs(os.path.join(copy, "report"))
    with open(os.path.join(copy, "report", "free-space-a-cluster-of-an-earlier-run.png"), "wb") as handle:
        handle.write(PNG_SIGNATURE)
    path = report.write_report(spark, copy, summary, max_clusters=1)
    names = pngs_of(os.path.dirname(path))
    assert names == ["clients-nearest-quota.png", "free-space-cluster-a.png", "throttle-factor-cluster-a.png"], (
        "the charts of clusters left out of this run are removed too"
    )
    assert "1 of 3 clusters" in read(path)


def test_histories_are_downsampled_in_spark_keeping_the_lowest_free_space(spark):
    rows = [("c", 1, "/d", START + datetime.timedelta(seconds=index), 10_000 - index % 7) for index in range(2000)]
    rows.append(("c", 1, "/d", START + datetime.timedelta(seconds=999), 5))
    rows += [("c", 2, "/d", START, 42)]
    frame = spark.createDataFrame(
        rows, "cluster string, broker_id long, log_dir string, at timestamp, usable_bytes long"
    )
    reduced = report_data._downsample(frame, ["cluster", "broker_id", "log_dir"], "usable_bytes", report_data.F.min)  # pylint: disable=protected-access
    counts = {row["broker_id"]: row["count"] for row in reduced.groupBy("broker_id").count().collect()}
    assert counts == {1: report_data.HISTORY_POINTS, 2: 1}
    assert reduced.agg(report_data.F.min("usable_bytes")).first()[0] == 5, "a dip inside a bucket survives"
    first = reduced.where("broker_id = 1").orderBy("at").first()
    assert first["at"] == START.timestamp() and first["usable_bytes"] == 9_994


def test_human_units():
    assert report_format.human_bytes(512) == "512 B"
    assert report_format.human_bytes(10 * GIB) == "10.0 GiB"
    assert report_format.human_bytes(None) == "-"
    assert report_format.human_hours(None) == "never"
    assert report_format.human_hours(0.5) == "30 minutes"
    assert report_format.human_hours(72) == "3.0 days"
    assert report_charts._byte_tick_step(47 * GIB) == 10 * GIB  # pylint: disable=protected-access
    assert report_page._limit_text("min_free_percentage", 10.0) == "min_free_percentage 10%"  # pylint: disable=protected-access


def test_names_with_dollar_signs_are_drawn_as_typed(tmp_path):
    volume = {
        "broker_id": 1,
        "log_dir": "/data/$x_1$",
        "usable_bytes": 5 * GIB,
        "hard_limit_usable_bytes": GIB,
        "plugin_limit_usable_bytes": None,
        "bytes_per_hour": GIB / 2,
        "last_at": START.timestamp(),
        "crosses_hard_limit_at": START.timestamp() + 8 * 3600,
    }
    history = {("a$b_1$c", 1, "/data/$x_1$"): ([START, START + datetime.timedelta(hours=1)], [6 * GIB, 5 * GIB])}
    # pylint: disable=protected-access
    names = [
        report_charts._draw_free_space(str(tmp_path), "free.png", "a$b_1$c", [volume], history),
        report_charts._draw_throttle(str(tmp_path), "throttle.png", "$\\alpha$", {}),
        report_charts._draw_clients(
            str(tmp_path), "clients.png", [{"user": "$u$", "client_id": None, "peak_produce": 0.5, "peak_fetch": None}]
        ),
    ]
    for name in names:
        assert_valid_png(os.path.join(tmp_path, name))


def test_outputs_of_stages_this_run_did_not_run_are_not_reported(spark, outputs, tmp_path):
    out = copy_outputs(outputs[0], str(tmp_path / "out"))
    summary = dict(
        outputs[1],
        stages={key: value for key, value in outputs[1]["stages"].items() if key not in ("clients", "topics")},
    )
    page = read(report.write_report(spark, out, summary))
    assert report_charts.CLIENTS_CHART not in pngs_of(os.path.join(out, "report"))
    assert "alice" not in page and "orders" not in page, "the clients and topics on disk belong to another run"


def test_the_volume_table_names_the_limits_short_of_the_peak_fill():
    from headroom_pipeline import report_page

    volume = {
        "rank": 1,
        "cluster": "c1",
        "broker_id": 1,
        "log_dir": "/data/0",
        "usable_bytes": 100 << 20,
        "total_bytes": 1 << 30,
        "hard_limit_usable_bytes": 200 << 20,
        "hard_limit_type": "min_free_bytes",
        "hard_limit_level": 200 << 20,
        "bytes_per_hour": None,
        "crosses_hard_limit_at": None,
        "hours_to_hard_limit": None,
        "crosses_plugin_limit_at": None,
        "peak_fill_bytes_per_sec": 96 << 20,
        "recommended_limit_bytes": 537 << 20,
        "plugin_limit_covers_peak": False,
        "hard_limit_covers_peak": False,
    }
    table = report_page._volume_table(
        [volume, dict(volume, plugin_limit_covers_peak=None, hard_limit_covers_peak=True)]
    )
    sizing = [row[-3:] for row in table.rows]
    assert sizing == [("96.0 MiB/s", "537.0 MiB", "plugin, hard"), ("96.0 MiB/s", "537.0 MiB", "-")]
