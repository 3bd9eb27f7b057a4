"""The Spark floor: the least work any decision timeline and forecast must do on the benchmark's snapshots.

``python bench/pipeline_floor.py --snapshots DIR --out DIR [--master MASTER] [--driver-memory 1g]
[--engine spark|duckdb]`` runs it the way the job runs (same session settings, a process of its own) and prints one
JSON line with the session start and the work after it, apart.

What it does, and nothing more: read the Parquet; explode the volumes; one window per broker ordered by time, which
gives each message its broker's next one; each message counts for the check instants from its own (at rounded up
to the interval) until its broker's next message; one aggregation per (cluster, check instant) (least available
ratio, volumes counted); one aggregation per volume (least-squares growth of used bytes over time and
the last sample); both results written as Parquet. No input checks, no duplicates, no limits, no clock: whatever the
decision timeline and forecast compute on top is the job's own work, and so is checking its input.

The DuckDB variant runs the same floor as SQL, so that the table can show what a single-node engine needs for it.
"""

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

INTERVAL_US = 60_000_000


def spark_floor(spark, snapshots, out, interval_us=INTERVAL_US):
    """Run the floor in ``spark``; return {phase: seconds}."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    phases = {}
    began = time.monotonic()
    raw = spark.read.parquet(snapshots)
    volumes = raw.select(
        F.col("ClusterId").alias("cluster"),
        F.col("BrokerId").alias("broker_id"),
        F.unix_micros("SnapshotAt").alias("at"),
        F.explode("Volumes").alias("volume"),
    )
    volumes = volumes.select(
        "cluster",
        "broker_id",
        "at",
        F.col("volume.VolumeName").alias("log_dir"),
        F.col("volume.Capacity").alias("total"),
        (F.col("volume.Capacity") - F.col("volume.Consumed")).alias("usable"),
    )
    by_broker = Window.partitionBy("cluster", "broker_id").orderBy("at")
    first_instant = F.col("at") + F.pmod(-F.col("at"), F.lit(interval_us))
    timed = volumes.select("*", first_instant.alias("first"), F.lead("at").over(by_broker).alias("next"))
    # the last instant before the broker's next message (the message's own instant at least; its own alone without a
    # next)
    before_next = F.col("next") - 1 - F.pmod(F.col("next") - 1, F.lit(interval_us))
    last = F.when(F.col("next").isNull(), F.col("first")).otherwise(F.greatest(F.col("first"), before_next))
    served = timed.select(
        "cluster", "broker_id", "total", "usable", F.explode(F.sequence("first", last, F.lit(interval_us))).alias("t")
    )
    per_instant = served.groupBy("cluster", "t").agg(
        F.min(F.col("usable") / F.col("total")).alias("least_available_ratio"), F.count(F.lit(1)).alias("volumes")
    )
    per_instant.write.mode("overwrite").parquet(os.path.join(out, "per_instant"))
    phases["per instant"] = round(time.monotonic() - began, 3)
    began = time.monotonic()
    used = (F.col("total") - F.col("usable")).cast("double")
    per_volume = volumes.groupBy("cluster", "broker_id", "log_dir").agg(
        F.regr_slope(used, F.col("at") / 1e6).alias("bytes_per_second"),
        F.max("at").alias("last_at"),
        F.max_by("total", "at").alias("last_total"),
        F.max_by("usable", "at").alias("last_usable"),
    )
    per_volume.write.mode("overwrite").parquet(os.path.join(out, "per_volume"))
    phases["per volume"] = round(time.monotonic() - began, 3)
    return phases


FLOOR_SQL = """
CREATE OR REPLACE TEMP TABLE volumes AS
SELECT ClusterId AS cluster, BrokerId AS broker_id, epoch_us(SnapshotAt) AS at_us, v.Capacity AS total,
    v.Capacity - v.Consumed AS usable,
       v.VolumeName AS log_dir
FROM (SELECT ClusterId, BrokerId, SnapshotAt, unnest(Volumes) AS v FROM read_parquet('{snapshots}/*.parquet'));
COPY (
  WITH timed AS (
    SELECT *, at_us + ((-at_us) % {interval} + {interval}) % {interval} AS first_t,
           lead(at_us) OVER (PARTITION BY cluster, broker_id ORDER BY at_us) AS next_us FROM volumes),
  served AS (
    SELECT cluster, total, usable,
           unnest(generate_series(first_t, CASE WHEN next_us IS NULL THEN first_t
                  ELSE greatest(first_t, next_us - 1 - ((next_us - 1) % {interval} + {interval}) % {interval}) END,
                      {interval})) AS t
    FROM timed)
  SELECT cluster, t, min(usable / total) AS least_available_ratio, count(*) AS volumes
  FROM served GROUP BY cluster, t) TO '{out}/per_instant.parquet' (FORMAT parquet);
COPY (
  SELECT cluster, broker_id, log_dir, regr_slope((total - usable)::DOUBLE, at_us / 1e6) AS bytes_per_second,
         max(at_us) AS last_at_us, arg_max(total, at_us) AS last_total, arg_max(usable, at_us) AS last_usable
  FROM volumes GROUP BY cluster, broker_id, log_dir) TO '{out}/per_volume.parquet' (FORMAT parquet);
"""


def duckdb_floor(snapshots, out, interval_us=INTERVAL_US):
    import duckdb

    began = time.monotonic()
    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    connection.execute(FLOOR_SQL.format(snapshots=snapshots, out=out, interval=interval_us))
    return {"floor": round(time.monotonic() - began, 3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--engine", choices=("spark", "duckdb"), default="spark")
    parser.add_argument("--master", default=None)
    parser.add_argument("--driver-memory", default=None)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.engine == "duckdb":
        phases = duckdb_floor(args.snapshots, args.out)
        print(
            json.dumps({"session_seconds": 0.0, "work_seconds": round(sum(phases.values()), 3), "phases": phases}),
            flush=True,
        )
        return 0
    from headroom_pipeline.session import spark_session

    began = time.monotonic()
    spark = spark_session(
        args.master,
        app_name="pipeline-floor",
        driver_memory=args.driver_memory,
        conf=dict(setting.split("=", 1) for setting in args.conf),
    )
    session_seconds = time.monotonic() - began
    try:
        phases = spark_floor(spark, args.snapshots, args.out)
    finally:
        spark.stop()
    print(
        json.dumps(
            {
                "session_seconds": round(session_seconds, 3),
                "work_seconds": round(sum(phases.values()), 3),
                "phases": phases,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
