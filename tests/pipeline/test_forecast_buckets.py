"""The forecast's buckets carried from run to run give the forecast of every row: rows added in several runs, while
the buckets widen with a young volume's history and the window slides past an old one's, equal one run over all of
them, value for value (no tolerance)."""

import datetime
import random

import pytest

from headroom_pipeline import forecast, forecast_buckets, schemas
from headroom_pipeline.config import PipelineConfig

pytestmark = pytest.mark.pipeline

START = datetime.datetime(2026, 11, 20, tzinfo=datetime.timezone.utc)
HOUR = 3600


def rows_of(volume, seconds, used, total=10**9, hard=("min_free_bytes", 10.0**8)):
    cluster, broker_id, log_dir = volume
    return (
        cluster,
        broker_id,
        START + datetime.timedelta(seconds=seconds),
        None,
        None,
        *hard,
        0,
        log_dir,
        total,
        total - used,
    )


def history(seed):
    """Three volumes: a saw-tooth that grows, one that shrinks, and a volume that first reports late; samples every
    few minutes over 30 hours, a few at one instant, one disk replaced by a larger one halfway."""
    generator = random.Random(seed)
    rows = []
    for volume, growth in ((("c1", 1, "/d/0"), 900), (("c1", 2, "/d/0"), -300), (("c2", 1, "/d/1"), 4000)):
        seconds, used = (3 * HOUR if volume[0] == "c2" else 0), 4 * 10**8
        while seconds <= 30 * HOUR:
            used = max(used + growth * generator.randint(0, 600) - (10**7 if generator.random() < 0.05 else 0), 0)
            total = 2 * 10**9 if volume[1] == 2 and seconds > 15 * HOUR else 10**9
            rows.append(rows_of(volume, seconds, min(used, total), total))
            if generator.random() < 0.1:  # another message at the same instant
                rows.append(rows_of(volume, seconds, min(used + generator.randint(0, 1000), total), total))
            seconds += generator.choice((60, 300, 600, 1200))
    return rows


def forecast_rows(frame):
    return sorted(tuple(row) for row in frame.collect())


@pytest.mark.parametrize(
    "window_hours, cuts",
    [
        (24 * 7, (1, 2, 5, 13, 29)),  # the buckets widen as the history grows: from 2^28 to 2^33 microseconds
        (6, (8, 9, 17, 24)),  # older than the window: the kept buckets slide and the earliest are dropped
    ],
)
def test_buckets_carried_run_to_run_give_the_forecast_of_every_row(spark, tmp_path, window_hours, cuts):
    config = PipelineConfig(snapshots="unused", out="unused", forecast_window=window_hours * HOUR)
    rows = history(seed=window_hours)
    instant = [START + datetime.timedelta(hours=cut) for cut in (*cuts, 10**4)]
    parts = [[row for row in rows if row[2] < instant[0]]]
    parts += [
        [row for row in rows if before <= row[2] < after] for before, after in zip(instant, instant[1:], strict=False)
    ]
    assert all(parts), "every run adds rows"

    saved = tmp_path / "run-0"
    buckets = forecast_buckets.buckets_of_rows(spark.createDataFrame(parts[0], schemas.VOLUMES), config)
    forecast_buckets.save_buckets(buckets, str(saved))
    shifts = {span.shift for span in buckets.spans.spans}
    for number, part in enumerate(parts[1:], start=1):
        new = spark.createDataFrame(part, schemas.VOLUMES)
        buckets = forecast_buckets.buckets_with_new_rows(spark, str(saved), new, config)
        saved = tmp_path / f"run-{number}"
        forecast_buckets.save_buckets(buckets, str(saved))
        shifts |= {span.shift for span in buckets.spans.spans}
        every_row = spark.createDataFrame([row for earlier in parts[: number + 1] for row in earlier], schemas.VOLUMES)
        assert forecast_rows(forecast.forecast_of_buckets(buckets, config)) == forecast_rows(
            forecast.volume_forecast(every_row, config)
        ), f"after run {number}"
    if window_hours > 30:
        assert len(shifts) > 2, "the buckets widened"
    else:
        assert all(span.earliest_us >> span.shift < span.first_bucket for span in buckets.spans.spans), "buckets left"


def test_a_new_row_at_or_before_a_volumes_last_is_refused(spark, tmp_path):
    config = PipelineConfig(snapshots="unused", out="unused")
    volume = ("c1", 1, "/d/0")
    first = spark.createDataFrame([rows_of(volume, 0, 1), rows_of(volume, 60, 2)], schemas.VOLUMES)
    forecast_buckets.save_buckets(forecast_buckets.buckets_of_rows(first, config), str(tmp_path))
    late = spark.createDataFrame([rows_of(volume, 60, 3)], schemas.VOLUMES)
    with pytest.raises(ValueError, match="at or before its last row"):
        forecast_buckets.buckets_with_new_rows(spark, str(tmp_path), late, config)


# (microseconds to hold, k): 23 buckets of 2^k microseconds hold them, of 2^(k-1) not.
WIDTHS = [
    (0, 0),
    (23, 0),
    (24, 1),
    (46, 1),
    (47, 2),
    (3 * HOUR * 10**6, 29),
    (7 * 86400 * 10**6, 35),
    (23 * 2**35, 35),
    (23 * 2**35 + 1, 36),
    (2**62, 58),
]


def test_the_buckets_width_is_the_least_power_of_two_of_which_23_hold_the_span_or_the_window(spark):
    frame = spark.createDataFrame([(held,) for held, unused_shift in WIDTHS], "held long")
    shifts = [row[0] for row in frame.select(forecast_buckets.bucket_shift("held")).collect()]
    assert shifts == [shift for unused_held, shift in WIDTHS]
