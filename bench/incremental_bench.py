"""The pipeline's hourly run: an incremental run that adds the last hour of a week, against a full run over the week.

Run from the repository root: ``.venv/bin/python bench/incremental_bench.py [--rows 10000000 ...] [--repeats 3]``.

Data: pipeline_bench.py's generated week (Parquet, the snapshot schema) of each size, cut at its last whole hour (as
the guard's hourly files are): the history holds every row before that hour; the hour's rows are written as a file of
their own and added to the history before the incremental run. Runs, each the job's command line in a process of its
own (``python -m headroom_pipeline run``, local[*], the same driver heap as pipeline_bench.py), timed as a whole, JVM
start included (what an hourly timer waits for):

- ``first``: a full run with ``--state`` over the history without the last hour (it leaves the checkpoint);
- ``incremental``: the last hour added, the same command; it must say ``incremental``;
- ``full``: the same history, last hour included, without a state: what every hourly run cost before.

The three run ``--repeats`` times, in turn; each is judged by its median (the last incremental run's outputs are the
ones compared with the first full run's). Reported per size: each run's wall time, its stage
timings and peak resident memory (the JVM's), the ratio incremental / full, and the outputs of the incremental run
against the full run's, decisions and forecast row by row (DuckDB). The same as JSON in
build/bench/incremental_bench.json.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [path for path in (ROOT, BENCH_DIR) if path not in sys.path]

import pipeline_bench  # noqa: E402  pylint: disable=wrong-import-position

BUILD = pipeline_bench.BUILD
RESULT_FILE = os.path.join(BUILD, "incremental_bench.json")
HOUR_US = 3_600_000_000
TARGETS = {10_000_000: 0.10, 100_000_000: 0.05}  # incremental / full, at most
TIME_LIMIT = 60 * 60


def cut_history(data, directory):
    """``directory``/history: the week up to its last whole hour (links to the generated files, those that hold rows of
    that hour rewritten without them), and ``directory``/part-last-hour.parquet, the rows of that hour; the rows after
    it are left out of both. The cut falls on the hour, as the disk guard's hourly files do (an hour's file holds the
    stamps of that hour): a file cut inside a check interval would hold messages of an instant the run before decided,
    and the run would be a full one. Returns (history, last hour file, rows in it)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    history = os.path.join(directory, "history")
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(history)
    parts = sorted(name for name in os.listdir(data) if name.endswith(".parquet"))
    last_at = pc.max(pc.cast(pq.read_table(os.path.join(data, parts[-1])).column("SnapshotAt"), "int64")).as_py()
    start = (last_at // HOUR_US - 1) * HOUR_US
    hours = []
    for name in parts:
        path = os.path.join(data, name)
        table = pq.read_table(path)
        at = pc.cast(table.column("SnapshotAt"), "int64")  # microseconds
        if pc.max(at).as_py() < start:
            os.link(path, os.path.join(history, name))  # the files are in time order: most lie wholly before the hour
            continue
        earlier = table.filter(pc.less(at, start))
        hours.append(table.filter(pc.and_(pc.greater_equal(at, start), pc.less(at, start + HOUR_US))))
        if earlier.num_rows:
            pq.write_table(earlier, os.path.join(history, f"before-last-hour-{name}"), compression="snappy")
    hour = pa.concat_tables(hours)
    hour_file = os.path.join(directory, "part-last-hour.parquet")
    pq.write_table(hour, hour_file, compression="snappy")
    return history, hour_file, hour.num_rows


def job_run(label, rows, history, out, state, progress):
    """One job run, timed as a whole; its figures."""
    command = [
        sys.executable,
        "-m",
        "headroom_pipeline",
        *pipeline_bench.JOB_ARGUMENTS,
        "--snapshots",
        history,
        "--out",
        out,
        "--master",
        "local[*]",
        "--driver-memory",
        pipeline_bench.DRIVER_MEMORY,
    ] + (["--state", state] if state else [])
    progress(f"{label}, week of {rows:,} rows ...")
    began = time.monotonic()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=ROOT
    )
    watch = pipeline_bench.Watch(process, TIME_LIMIT)
    watch.start()
    stdout, stderr = process.communicate()
    watch.done.set()
    watch.join()
    wall = time.monotonic() - began
    if process.returncode != 0 or watch.stopped_because:
        raise SystemExit(f"{label}: {watch.stopped_because or process.returncode}\n{stderr[-3000:]}")
    line = json.loads(stdout.strip().splitlines()[-1])  # the job's result line; the figures are in summary.json
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as handle:
        summary = json.load(handle)
    progress(f"{label}, week of {rows:,} rows: {wall:.1f}s ({line['incremental']['mode'] if state else 'no state'})")
    return {
        "label": label,
        "rows": rows,
        "wall_seconds": round(wall, 3),
        "timings": summary["timings_seconds"],
        "incremental": line.get("incremental"),
        "jvm_peak_rss_mib": round(watch.jvm_peak_kib / 1024.0, 1),
        "rows_read": summary["rows_read"],
        "out": out,
    }


def median_run(runs):
    return sorted(runs, key=lambda run: run["wall_seconds"])[len(runs) // 2]


def compare(incremental_out, full_out):
    """Rows of decisions and forecast that differ between the incremental run and the full one (pipeline_bench's
    queries)."""
    import duckdb

    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    connection.execute(
        "CREATE MACRO close(x, y) AS (x IS NULL AND y IS NULL) OR abs(x - y) <= 1e-9 * greatest(abs(x), abs(y), 1e-6)"
    )
    result = {}
    for table, query in (
        ("decisions", pipeline_bench.DECISION_DIFFERENCES),
        ("forecast", pipeline_bench.FORECAST_DIFFERENCES),
    ):
        left, right = (
            f"read_parquet('{os.path.realpath(os.path.join(out, table))}/**/*.parquet', hive_partitioning = true)"
            for out in (incremental_out, full_out)
        )
        cursor = connection.execute(query.format(left=left, right=right))
        result[table] = dict(zip([column[0] for column in cursor.description], cursor.fetchone(), strict=True))
    volumes = [
        connection.execute(
            f"SELECT count(*) FROM read_parquet('{os.path.realpath(os.path.join(out, 'volumes'))}/*.parquet')"
        ).fetchone()[0]
        for out in (incremental_out, full_out)
    ]
    result["volumes"] = {"incremental": volumes[0], "full": volumes[1]}
    return result


def bench_size(rows, repeats, progress):
    data = pipeline_bench.snapshot_data(rows, progress)
    directory = os.path.join(BUILD, f"incremental-{rows}")
    history, hour_file, hour_rows = cut_history(data, directory)
    progress(f"{rows:,} rows: the last hour holds {hour_rows:,} rows")
    out, state = os.path.join(directory, "out"), os.path.join(directory, "state")
    added = os.path.join(history, os.path.basename(hour_file))
    first_runs, incremental_runs, full_runs = [], [], []
    for repeat in range(repeats):
        # The state records each output file's inode and times: the first run is run again before each incremental
        # run rather than copied back.
        for path in (out, state, added):
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
        shown = f"{repeat + 1}/{repeats}"
        first_runs.append(job_run(f"first {shown} (full, --state)", rows, history, out, state, progress))
        os.link(hour_file, added)
        incremental_runs.append(job_run(f"incremental {shown}", rows, history, out, state, progress))
        full_out = os.path.join(directory, f"full-out-{repeat}")
        shutil.rmtree(full_out, ignore_errors=True)
        full_runs.append(job_run(f"full {shown}", rows, history, full_out, None, progress))
        if repeat:
            shutil.rmtree(full_out)  # the first is compared; the others only timed
    incremental, full = median_run(incremental_runs), median_run(full_runs)
    if incremental["incremental"]["mode"] != "incremental":
        raise SystemExit(f"the run after the last hour was not incremental: {incremental['incremental']}")
    ratio = round(incremental["wall_seconds"] / full["wall_seconds"], 3)
    differences = compare(out, full_runs[0]["out"])
    return {
        "rows": rows,
        "last_hour_rows": hour_rows,
        "first": median_run(first_runs),
        "incremental": incremental,
        "full": full,
        "incremental_walls": [run["wall_seconds"] for run in incremental_runs],
        "full_walls": [run["wall_seconds"] for run in full_runs],
        "ratio": ratio,
        "target": TARGETS.get(rows),
        "met": ratio <= TARGETS[rows] if rows in TARGETS else None,
        "outputs": differences,
    }


def print_report(results, out=sys.stdout):
    print(
        "| rows | last hour | first run (state) | incremental | full | incremental / full | target | outputs |",
        file=out,
    )
    print("|---|---|---|---|---|---|---|---|", file=out)
    for result in results:
        outputs = result["outputs"]
        differ = outputs["decisions"]["missing"] + outputs["decisions"]["different"]
        differ += outputs["forecast"]["missing"] + outputs["forecast"]["different"]
        print(
            f"| {result['rows']:,} | {result['last_hour_rows']:,} | {result['first']['wall_seconds']:.1f} s "
            f"| {result['incremental']['wall_seconds']:.1f} s | {result['full']['wall_seconds']:.1f} s "
            f"| {result['ratio']:.3f} | {result['target'] or '-'} {'met' if result['met'] else 'NOT met'} "
            f"| {differ} rows differ |",
            file=out,
        )
    for result in results:
        print(f"\n{result['rows']:,} rows, stage timings (s) and peak JVM memory:", file=out)
        for key in ("first", "incremental", "full"):
            run = result[key]
            stages = ", ".join(f"{name} {seconds:.1f}" for name, seconds in run["timings"].items())
            print(f"  {key}: {stages}; peak {run['jvm_peak_rss_mib']:.0f} MiB", file=out)


def main():
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n", 1)[0].split()))
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000_000], help="sizes (default: 10M)")
    parser.add_argument("--repeats", type=int, default=3, help="incremental and full runs per size (default 3)")
    parser.add_argument("--json", default=RESULT_FILE, help="where to write every figure")
    args = parser.parse_args()

    def progress(text):
        print(f"[incremental_bench] {text}", file=sys.stderr, flush=True)

    results = [bench_size(rows, args.repeats, progress) for rows in sorted(set(args.rows))]
    print_report(results)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=2)
    return 0 if all(result["met"] is not False for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
