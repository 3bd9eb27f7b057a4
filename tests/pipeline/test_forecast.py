"""The volume forecast: trends over retention's saw-tooth, limit crossings, ranking, and the shared vectors."""

import datetime
import fractions
import json
import math
import random
import types

import pytest
import vector_cases

from headroom_pipeline import schemas
from headroom_pipeline.config import PipelineConfig
from headroom_pipeline.forecast import volume_forecast

GIB = 1024**3
START = datetime.datetime(2026, 11, 20, tzinfo=datetime.timezone.utc)
FIVE_MINUTES = 300
TEN_MINUTES = 600
DAY = 86400


def config(**settings):
    return PipelineConfig(snapshots="unused", out="unused", **settings)


def volume_rows(
    used_by_second,
    cluster="c1",
    broker_id=1,
    log_dir="/data/0",
    total_bytes=1000 * GIB,
    hard=("min_free_bytes", 100.0 * GIB),
):
    """VOLUMES rows for one volume from {seconds after START: used bytes}; hard = (type, level) or None."""
    hard_type, hard_level = hard if hard else (None, None)
    return [
        (
            cluster,
            broker_id,
            START + datetime.timedelta(microseconds=round(seconds * 1_000_000)),
            None,
            None,
            hard_type,
            hard_level,
            0,  # the message: the forecast reads the volume rows alone
            log_dir,
            total_bytes,
            total_bytes - round(used),
        )
        for seconds, used in sorted(used_by_second.items())
    ]


def in_utc(value):
    """Spark hands timestamps back as naive local times; aware UTC ones compare with what the tests build."""
    return value.astimezone(datetime.timezone.utc) if isinstance(value, datetime.datetime) else value


def keyed(rows):
    """{(cluster, broker_id, log_dir): row with attribute access and timestamps in UTC} from Rows or dicts."""
    result = {}
    for row in rows:
        values = {column: in_utc(value) for column, value in (row if isinstance(row, dict) else row.asDict()).items()}
        result[(values["cluster"], values["broker_id"], values["log_dir"])] = types.SimpleNamespace(**values)
    return result


def forecast(spark, rows, **settings):
    """The forecast as {(cluster, broker_id, log_dir): row}."""
    frame = spark.createDataFrame(rows, schemas.VOLUMES)
    return keyed(volume_forecast(frame, config(**settings)).collect())


def only(result):
    assert len(result) == 1
    return next(iter(result.values()))


def linear(rate_per_second, hours, start_used=200 * GIB, step=FIVE_MINUTES):
    return {seconds: start_used + rate_per_second * seconds for seconds in range(0, hours * 3600 + 1, step)}


def saw_tooth(days, growth_per_second=0, base=400 * GIB, tooth=60 * GIB, period_steps=36):
    """Retention's saw-tooth sampled every 10 minutes: a tooth fills over 6 hours, then segments are deleted."""
    step_bytes = tooth // period_steps
    return {
        seconds: base + growth_per_second * seconds + step_bytes * ((seconds // TEN_MINUTES) % period_steps)
        for seconds in range(0, days * DAY + 1, TEN_MINUTES)
    }


def expected_hours(row, limit_usable_bytes, rate_per_second):
    return (row.usable_bytes - limit_usable_bytes) / rate_per_second / 3600


# -- generated series ---------------------------------------------------------------------------------------------
def test_steady_growth_gives_the_exact_slope_and_crossing_time(spark):
    rate = 1_000_000  # bytes per second
    row = only(forecast(spark, volume_rows(linear(rate, hours=48))))
    # 48 hours: 23 buckets of 2^33 microseconds (2 h 23 min) hold them, of 2^32 do not; 22 of those from the epoch
    assert row.samples == 48 * 12 + 1 and row.buckets == 22
    assert row.bytes_per_hour == pytest.approx(rate * 3600, rel=1e-9)
    assert row.used_bytes == 200 * GIB + rate * 48 * 3600
    assert row.hard_limit_usable_bytes == 100.0 * GIB
    hours = expected_hours(row, 100 * GIB, rate)
    assert abs(row.hours_to_hard_limit - hours) * 3600 < 1e-3
    assert abs((row.crosses_hard_limit_at - row.last_at).total_seconds() - hours * 3600) < 1e-3
    assert row.rank == 1


def test_a_nearly_flat_trend_of_a_large_volume_keeps_its_precision(spark):
    # Peaks of about 17 GB that wander by a few hundred bytes around a slow decline: the least-squares slope is a
    # small difference of large sums. 24 samples 2^32 microseconds apart span 23 buckets of that width, so the
    # buckets are that wide and each holds one sample: the exact slope of the peaks is that of the samples.
    base = 17_280_947_564
    used = {fractions.Fraction(step * 2**32, 10**6): base + (step * 7919) % 613 - 9 * step for step in range(24)}
    row = only(forecast(spark, volume_rows(used, total_bytes=20_000_000_000, hard=None)))
    points = [(fractions.Fraction(seconds), fractions.Fraction(value)) for seconds, value in used.items()]
    x_mean = sum(x for x, unused_y in points) / len(points)
    y_mean = sum(y for unused_x, y in points) / len(points)
    exact = sum((x - x_mean) * (y - y_mean) for x, y in points) / sum((x - x_mean) ** 2 for x, unused_y in points)
    assert row.buckets == 24
    assert row.bytes_per_hour == pytest.approx(float(exact * 3600), rel=1e-12)


def test_flat_saw_tooth_never_crosses(spark):
    row = only(forecast(spark, volume_rows(saw_tooth(days=7))))
    assert row.bytes_per_hour == pytest.approx(0.0, abs=1e-6)
    assert row.crosses_hard_limit_at is None and row.hours_to_hard_limit is None


def test_saw_tooth_with_growing_peaks_follows_the_peaks(spark):
    growth = 5 * GIB / DAY
    row = only(
        forecast(spark, volume_rows(saw_tooth(days=7, growth_per_second=growth), hard=("min_free_percentage", 5.0)))
    )
    assert row.bytes_per_hour == pytest.approx(growth * 3600, rel=0.15)
    assert row.hard_limit_usable_bytes == pytest.approx(50 * GIB)
    assert row.hours_to_hard_limit == pytest.approx(expected_hours(row, 50 * GIB, growth), rel=0.15)
    assert row.crosses_hard_limit_at == row.last_at + datetime.timedelta(hours=row.hours_to_hard_limit)


def test_missing_points_and_a_twelve_hour_hole_keep_the_trend(spark):
    growth = 5 * GIB / DAY
    chooser = random.Random(3)
    hole = range(3 * DAY, 3 * DAY + 12 * 3600)
    series = {
        seconds: used
        for seconds, used in saw_tooth(days=7, growth_per_second=growth).items()
        if seconds not in hole and chooser.random() >= 0.3
    }
    row = only(forecast(spark, volume_rows(series, hard=("consumed_space", 900.0 * GIB))))
    assert row.samples == len(series) < 0.75 * 7 * 144
    assert row.bytes_per_hour == pytest.approx(growth * 3600, rel=0.15)
    assert row.hard_limit_usable_bytes == pytest.approx(100 * GIB)
    assert row.hours_to_hard_limit == pytest.approx(expected_hours(row, 100 * GIB, growth), rel=0.15)


def test_a_volume_already_past_its_limit_crosses_now_and_ranks_first(spark):
    past = volume_rows(
        linear(-1000, hours=6, start_used=950 * GIB), log_dir="/data/full"
    )  # shrinking, yet past the limit
    growing = volume_rows(linear(1_000_000, hours=6), log_dir="/data/growing")
    result = forecast(spark, past + growing)
    row = result[("c1", 1, "/data/full")]
    assert row.bytes_per_hour < 0
    assert row.crosses_hard_limit_at == row.last_at and row.hours_to_hard_limit == 0.0
    assert row.rank == 1 and result[("c1", 1, "/data/growing")].rank == 2


def test_no_hard_limit_means_no_hard_crossing(spark):
    row = only(forecast(spark, volume_rows(linear(1_000_000, hours=6), hard=None)))
    assert row.bytes_per_hour == pytest.approx(3.6e9, rel=1e-9)
    assert row.hard_limit_type is None and row.hard_limit_usable_bytes is None
    assert row.crosses_hard_limit_at is None and row.hours_to_hard_limit is None


def test_a_single_sample_has_no_trend(spark):
    row = only(forecast(spark, volume_rows({0: 300 * GIB})))
    assert (row.samples, row.buckets, row.bytes_per_hour) == (1, 1, None)
    assert row.first_at == row.last_at == START
    assert row.crosses_hard_limit_at is None


def test_rows_at_the_last_instant_are_settled_by_used_bytes_then_the_rest_in_order(spark):
    """Duplicates at a volume's last instant: the latest figures come whole from one row (more used bytes, then more
    total bytes, then the hard limit's type and level), never a mix of rows, and every row counts as a sample."""
    earlier = volume_rows({0: 100 * GIB, 3600: 200 * GIB})
    at_last = [
        *volume_rows({7200: 300 * GIB}, total_bytes=2000 * GIB, hard=("consumed_space", 1800.0 * GIB)),
        *volume_rows({7200: 300 * GIB}, total_bytes=1000 * GIB, hard=("min_free_percentage", 10.0)),
        *volume_rows({7200: 250 * GIB}, total_bytes=4000 * GIB, hard=("min_free_bytes", 1.0 * GIB)),
    ]
    row = only(forecast(spark, earlier + at_last))
    assert (row.samples, row.used_bytes, row.total_bytes, row.usable_bytes) == (5, 300 * GIB, 2000 * GIB, 1700 * GIB)
    assert (row.hard_limit_type, row.hard_limit_level) == ("consumed_space", 1800.0 * GIB)
    same_sizes = [
        *volume_rows({7200: 300 * GIB}, hard=("min_free_bytes", 50.0 * GIB)),
        *volume_rows({7200: 300 * GIB}, hard=("min_free_percentage", 10.0)),
        *volume_rows({7200: 300 * GIB}, hard=None),
    ]
    row = only(forecast(spark, earlier + same_sizes))
    assert (row.hard_limit_type, row.hard_limit_level, row.hard_limit_usable_bytes) == (
        "min_free_percentage",
        10.0,
        100.0 * GIB,
    )


def test_plugin_ratio_limit(spark):
    rate = 1_000_000
    row = only(forecast(spark, volume_rows(linear(rate, hours=24)), min_available_ratio=0.2))
    assert row.plugin_limit_usable_bytes == pytest.approx(200 * GIB)
    hours = expected_hours(row, 200 * GIB, rate)
    assert row.hours_to_plugin_limit == pytest.approx(hours, rel=1e-9)
    assert abs((row.crosses_plugin_limit_at - row.last_at).total_seconds() - hours * 3600) < 1e-3
    assert row.crosses_plugin_limit_at < row.crosses_hard_limit_at


def test_plugin_bytes_limit(spark):
    rate = 1_000_000
    row = only(forecast(spark, volume_rows(linear(rate, hours=24)), min_available_bytes=150 * GIB))
    assert row.plugin_limit_usable_bytes == 150.0 * GIB
    assert row.hours_to_plugin_limit == pytest.approx(expected_hours(row, 150 * GIB, rate), rel=1e-9)


def test_without_a_plugin_limit_the_plugin_columns_are_null(spark):
    row = only(forecast(spark, volume_rows(linear(1_000_000, hours=6))))
    assert (row.plugin_limit_usable_bytes, row.crosses_plugin_limit_at, row.hours_to_plugin_limit) == (None, None, None)


def test_ranking_across_clusters(spark):
    rows = (
        volume_rows(linear(1_000_000, hours=12), cluster="east", broker_id=1)
        + volume_rows(linear(5_000_000, hours=12), cluster="west", broker_id=1)
        + volume_rows(linear(0, hours=12, start_used=700 * GIB), cluster="east", broker_id=2)
        + volume_rows(linear(0, hours=12, start_used=300 * GIB), cluster="west", broker_id=2)
        + volume_rows(linear(2_000_000, hours=12), cluster="west", broker_id=3, hard=None)
    )
    result = forecast(spark, rows)
    by_rank = [key[:2] for key, row in sorted(result.items(), key=lambda item: item[1].rank)]
    assert by_rank == [("west", 1), ("east", 1), ("east", 2), ("west", 2), ("west", 3)]
    assert sorted(row.rank for row in result.values()) == [1, 2, 3, 4, 5]


def test_the_window_ignores_older_history(spark):
    rate = 1_000_000
    old = {seconds: 100 * GIB + 20_000_000 * seconds for seconds in range(0, 2 * DAY, 3600)}  # steep, then long ago
    recent = {3 * DAY + seconds: 500 * GIB + rate * seconds for seconds in range(0, 2 * DAY + 1, 3600)}
    row = only(forecast(spark, volume_rows({**old, **recent}), forecast_window=2 * DAY))
    assert row.samples == len(recent) and row.first_at == START + datetime.timedelta(days=3)
    assert row.bytes_per_hour == pytest.approx(rate * 3600, rel=1e-9)
    everything = only(forecast(spark, volume_rows({**old, **recent}), forecast_window=30 * DAY))
    assert everything.samples == len(old) + len(recent)


def test_the_forecast_does_not_depend_on_how_the_rows_are_partitioned(spark):
    """Local mode and a cluster split the rows differently; the trend and the crossing times must still agree to the
    bit (a sum of floating-point numbers taken in another order would not)."""
    chooser = random.Random(11)
    rows = []
    for volume in range(6):
        growth = chooser.uniform(0.5, 9.0) * GIB / DAY
        used = {
            seconds: 200 * GIB + growth * seconds + chooser.uniform(0, 30 * GIB)
            for seconds in range(0, 3 * DAY, FIVE_MINUTES)
        }
        rows += volume_rows(used, broker_id=volume, hard=("min_free_percentage", 5.0))
    frame = spark.createDataFrame(rows, schemas.VOLUMES)
    results = [
        sorted(
            tuple(row)
            for row in volume_forecast(frame.repartition(partitions), config(min_available_ratio=0.2)).collect()
        )
        for partitions in (1, 3, 8)
    ]
    assert results[0] == results[1] == results[2]
    assert all(row.bytes_per_hour for row in keyed(volume_forecast(frame, config()).collect()).values())


def test_output_columns(spark):
    frame = spark.createDataFrame(volume_rows({0: GIB}), schemas.VOLUMES)
    columns = set(volume_forecast(frame, config()).columns)
    assert {
        "cluster",
        "broker_id",
        "log_dir",
        "last_at",
        "total_bytes",
        "usable_bytes",
        "used_bytes",
        "hard_limit_type",
        "hard_limit_level",
        "hard_limit_usable_bytes",
        "bytes_per_hour",
        "crosses_hard_limit_at",
        "hours_to_hard_limit",
        "plugin_limit_usable_bytes",
        "crosses_plugin_limit_at",
        "samples",
        "rank",
    } <= columns


# -- shared vectors -----------------------------------------------------------------------------------------------
CASES = vector_cases.load("volume_forecast.json")["cases"]
CASE_SEPARATOR = "\t"


def parse_time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def vector_rows(case):
    rows = []
    for given in case["rows"]:
        row = dict(case["row_defaults"], **given)
        rows.append(
            (
                row["cluster"],
                row["broker_id"],
                parse_time(row["at"]),
                None,
                None,
                row["hard_type"],
                None if row["hard_level"] is None else float(row["hard_level"]),
                0,  # the message: the forecast reads the volume rows alone
                row["log_dir"],
                row["total_bytes"],
                row["total_bytes"] - row["used_bytes"],
            )
        )
    return rows


def matches(actual, expected):
    if expected is None or actual is None:
        return actual is expected
    if isinstance(actual, datetime.datetime):
        return actual == parse_time(expected)
    if isinstance(expected, float) or isinstance(actual, float):
        return math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-6)
    return actual == expected


def case_results(case_id, rows):
    """One case's rows out of a shared run: the case's own cluster names, and ranks counted among its volumes only.

    Ranking is one total order (crossing time, usable_ratio, key), and a shared cluster prefix keeps the key order
    within a case, so a case's volumes keep their relative order in a shared run.
    """
    mine = sorted((row for row in rows if row.cluster.split(CASE_SEPARATOR)[0] == case_id), key=lambda row: row.rank)
    return keyed(
        row.asDict() | {"cluster": row.cluster.split(CASE_SEPARATOR, 1)[1], "rank": position}
        for position, row in enumerate(mine, start=1)
    )


@pytest.fixture(scope="module")
def vector_results(spark):
    """Every case's forecast, {case id: {(cluster, broker_id, log_dir): row}}, from one Spark run per distinct
    config."""
    runs = {}
    for case in CASES:
        runs.setdefault(json.dumps(case["config"], sort_keys=True), []).append(case)
    rows = []
    for cases in runs.values():
        settings = {key: value for key, value in cases[0]["config"].items() if value is not None}
        inputs = [(f"{case['id']}{CASE_SEPARATOR}{row[0]}", *row[1:]) for case in cases for row in vector_rows(case)]
        rows += volume_forecast(spark.createDataFrame(inputs, schemas.VOLUMES), config(**settings)).collect()
    return {case["id"]: case_results(case["id"], rows) for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["id"])
def test_vectors(vector_results, case):
    result = vector_results[case["id"]]
    expected_keys = {(row["cluster"], row["broker_id"], row["log_dir"]) for row in case["expected"]}
    assert set(result) == expected_keys
    for expected in case["expected"]:
        actual = vars(result[(expected["cluster"], expected["broker_id"], expected["log_dir"])])
        wrong = {
            column: (actual[column], value) for column, value in expected.items() if not matches(actual[column], value)
        }
        assert not wrong, f"{case['id']}: (actual, expected) {wrong}"


# -- the limit sizing rule's shared vectors (tests/vectors/limit_sizing.json), which module_utils passes too ----------
SIZING = vector_cases.load("limit_sizing.json")


def test_peak_fill_rate_vectors(spark):
    """Each case's observations (seconds, usable bytes, total bytes) as one volume's rows, all in one run."""
    rows = []
    for number, case in enumerate(SIZING["peak_fill_rate"]):
        for seconds, usable, total in case["observations"]:
            at = START + datetime.timedelta(seconds=seconds)
            rows.append(("c1", number, at, None, None, None, None, 0, "/data/0", total, usable))
    result = {
        row.broker_id: row for row in volume_forecast(spark.createDataFrame(rows, schemas.VOLUMES), config()).collect()
    }
    for number, case in enumerate(SIZING["peak_fill_rate"]):
        assert matches(result[number].peak_fill_bytes_per_sec, case["peak_fill_rate"]), case["name"]


def test_least_limit_vectors(spark):
    from pyspark.sql import functions as F

    from headroom_pipeline.forecast import least_limit, whole_bytes

    for case in SIZING["least_limit"]:
        given = dict(case["input"])
        rate = given.pop("peak_fill_rate")
        frame = spark.createDataFrame([(float(rate),)], "rate double")
        (row,) = frame.select(whole_bytes(least_limit(F.col("rate"), **given)).alias("least")).collect()
        assert row.least == case["least_limit_bytes"], case["name"]


def test_the_volumes_whose_limits_fall_short_of_their_peak_fill_are_counted(spark):
    """Two volumes filling at up to 4 MiB/s and 1 KiB/s against the plugin's 8 MiB with a 2 s check interval: the
    first needs 4 MiB/s x 5.6 s, about 22 MiB, the second about 6 KiB."""
    from pyspark.sql import Observation

    from ansible_collections.headroom.kafka.plugins.module_utils import limit_sizing

    mib = 1 << 20
    rows = volume_rows({0: 0, 10: 40 * mib, 20: 50 * mib}, log_dir="/data/0", hard=None)
    rows += volume_rows({0: 0, 10: 10 * 1024, 20: 20 * 1024}, log_dir="/data/1", hard=None)
    observation = Observation("forecast")
    settings = config(min_available_bytes=8 * mib, check_interval=2)
    result = volume_forecast(spark.createDataFrame(rows, schemas.VOLUMES), settings, observation=observation)
    by_dir = {row.log_dir: row for row in result.collect()}
    fast, slow = by_dir["/data/0"], by_dir["/data/1"]
    assert fast.peak_fill_bytes_per_sec == 4 * mib and slow.peak_fill_bytes_per_sec == 1024
    for row in (fast, slow):
        rate = row.peak_fill_bytes_per_sec
        assert row.recommended_limit_bytes == limit_sizing.least_limit_bytes(rate, 2, **limit_sizing.plugin_parts(rate))
        assert row.hard_limit_covers_peak is None, "no hard limit"
    assert (fast.plugin_limit_covers_peak, slow.plugin_limit_covers_peak) == (False, True)
    assert observation.get["limits_short_of_peak_fill"] == 1
