"""The pipeline's decision timeline and forecast: our Spark job against pandas and DuckDB on 1M and 10M snapshot rows.

Run from the repository root: ``.venv/bin/python bench/pipeline_bench.py [--rows 1000000 10000000] [--engines spark pandas duckdb]``.

Data: a generated fleet of many clusters x 10 brokers with one volume each, one usage snapshot message per broker every
60 s (a "snapshot row" is one message), used bytes following retention's saw-tooth with a slow growth on some volumes,
short gaps per broker, cluster-wide gaps (the plugin's admin call fails, so its fallback shows), a few brokers that
stop reporting, a few duplicated messages and volumes that cross the limits. It is written with numpy and pyarrow
straight into Parquet in the snapshot schema (SnapshotAt as a Parquet timestamp) under build/bench/pipeline-<rows>/
and reused while its parameters are unchanged. Every engine reads the same files.

Per engine and size, in a subprocess of its own (so that memory is measured per run): read the snapshots, decision
timeline (policy strimzi with min_available_ratio 0.1, and policy graded), forecast, each result written to Parquet
by the engine itself. Reported: wall time of that work; for Spark also the session start (JVM start-up) on its own,
the time including it, and its phases; peak resident memory (VmHWM) of the JVM for Spark (run with
spark.driver.memory=1280m, so that the whole JVM, not only its heap, stays within the 2 GB target) and of the Python
process for pandas and DuckDB. Output: a table on stdout and
build/bench/pipeline_bench.json, with the issue's ratios (pandas / Spark and Spark / DuckDB at the largest size, Spark
largest / smallest size) and a verdict per target. The engines' outputs are compared row by row. A run that fails,
runs out of memory or takes longer than its time limit is reported as such instead of stopping the benchmark.
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [path for path in (ROOT, BENCH_DIR) if path not in sys.path]

BUILD = os.path.join(ROOT, "build", "bench")
RESULT_FILE = os.path.join(BUILD, "pipeline_bench.json")
ENGINES = ("spark", "pandas", "duckdb")
DEFAULT_ROWS = (1_000_000, 10_000_000)
DRIVER_MEMORY = "1280m"        # heap; with metaspace, code cache and buffers the JVM stays under 2 GB (10^9) resident
MIN_AVAILABLE_RATIO = 0.1
RUN_TIME_LIMIT = 20 * 60          # seconds; a pandas or DuckDB run that takes longer is stopped and reported
SPARK_TIME_LIMIT = 60 * 60        # seconds; the same for a Spark run
MEMORY_HEADROOM = 0.9             # a run is stopped when the machine's available memory falls below 10 % of its total
TARGETS = {"pandas_over_spark_10m": 2.0, "spark_excl_start_over_duckdb_10m": 5.0, "spark_10m_over_1m": 6.0, "spark_driver_peak_gib": 2.0}

# -- the generated fleet -------------------------------------------------------------------------------------------
GENERATOR_VERSION = 1
GIB = 1024 ** 3
START_US = 1_793_491_200_000_000          # 2026-11-01T00:00:00Z
BROKERS_PER_CLUSTER = 10
NOMINAL_MINUTES = 7 * 24 * 60             # one week of history at one message per broker and minute
INTERVAL_US = 60_000_000
ROWS_PER_FILE = 250_000
CHUNK_MINUTES = 720


def fleet_parameters(rows, seed=20261101, **overrides):
    """The generator's parameters for ``rows`` snapshot rows: the fleet grows with the rows, the history stays a week.

    ``overrides`` change the fleet's shape (tests use small, eventful fleets): brokers_per_cluster, minutes (the
    nominal history), broker_gaps and cluster_gaps (outages per broker or cluster over the history), stopping_share,
    growing_share, duplicate_share.
    """
    shape = {"brokers_per_cluster": BROKERS_PER_CLUSTER, "minutes": NOMINAL_MINUTES, "broker_gaps": 2.0, "cluster_gaps": 1.0,
             "stopping_share": 0.01, "growing_share": 0.25, "duplicate_share": 0.0002}
    unknown = set(overrides) - set(shape)
    if unknown:
        raise ValueError(f"unknown fleet parameters: {', '.join(sorted(unknown))}")
    shape.update(overrides)
    clusters = max(1, round(rows / (shape["brokers_per_cluster"] * shape["minutes"])))
    return {"version": GENERATOR_VERSION, "rows": int(rows), "clusters": clusters, "interval_seconds": INTERVAL_US // 1_000_000,
            "start_us": START_US, "seed": seed, "rows_per_file": ROWS_PER_FILE, **shape}


class Fleet:
    """Per-broker behaviour (one volume per broker), drawn once from the seed."""

    def __init__(self, parameters):
        import numpy as np

        rng = np.random.default_rng(parameters["seed"])
        self.parameters = parameters
        brokers = parameters["clusters"] * parameters["brokers_per_cluster"]
        self.brokers = brokers
        self.cluster_index = np.arange(brokers) // parameters["brokers_per_cluster"]
        self.broker_id = np.arange(brokers) % parameters["brokers_per_cluster"] + 1
        self.capacity = rng.choice(np.array([50, 100, 200, 500], dtype=np.int64) * GIB, brokers)
        self.base = self.capacity * rng.uniform(0.35, 0.6, brokers)
        self.tooth = self.capacity * rng.uniform(0.05, 0.15, brokers)
        self.period = rng.choice([4 * 3600, 6 * 3600, 8 * 3600], brokers).astype(np.float64)
        self.phase = rng.uniform(0, 1, brokers)
        growing = rng.random(brokers) < parameters["growing_share"]
        # growing volumes gain 8 to 34 % of their capacity over the nominal history (bytes per second)
        history_seconds = parameters["minutes"] * 60.0
        self.growth = np.where(growing, self.capacity * rng.uniform(0.08, 0.34, brokers) / history_seconds, 0.0)
        self.offset_us = rng.integers(0, 59_000, brokers) * 1000            # each broker's own timer within the minute
        minutes = parameters["minutes"]
        stopping = rng.random(brokers) < parameters["stopping_share"]
        self.stop_minute = np.where(stopping, rng.integers(int(minutes * 0.3), int(minutes * 0.9), brokers), np.iinfo(np.int64).max)
        self.broker_gaps = self._windows(rng, brokers, parameters["broker_gaps"], minutes, longest=20)
        self.cluster_gaps = self._windows(rng, parameters["clusters"], parameters["cluster_gaps"], minutes, longest=15)
        # limits per cluster: 0-5 MinFreePercentage, 6-7 MinFreeBytes, 8 ConsumedSpace, 9 none; the first four clusters have each kind
        self.limit_kind = np.array([0, 6, 8, 9, 1, 7, 2, 3, 4, 5])[self.cluster_index % 10]

    @staticmethod
    def _windows(rng, items, per_item, minutes, longest):
        """(item, first minute, minutes) of short outages, about ``per_item`` per item over the nominal history."""
        import numpy as np

        counts = rng.poisson(per_item, items)
        owner = np.repeat(np.arange(items), counts)
        first = rng.integers(0, minutes, owner.size)
        length = rng.integers(1, longest + 1, owner.size)
        return owner, first, length

    def present(self, minutes):
        """Mask [minute, broker]: the broker sent its message in that minute."""
        import numpy as np

        mask = minutes[:, None] < self.stop_minute[None, :]
        for owner, first, length in zip(*self.broker_gaps):
            rows = (minutes >= first) & (minutes < first + length)
            if rows.any():
                mask[rows, owner] = False
        for owner, first, length in zip(*self.cluster_gaps):
            rows = (minutes >= first) & (minutes < first + length)
            if rows.any():
                mask[np.ix_(rows, self.cluster_index == owner)] = False
        return mask

    def rows(self, rng, minutes):
        """(broker index, at in microseconds, consumed bytes) of the messages in these minutes, minute by minute."""
        import numpy as np

        minute_of, broker = np.nonzero(self.present(minutes))
        minute = minutes[minute_of]
        at_us = START_US + minute * INTERVAL_US + self.offset_us[broker] + rng.integers(0, 901, broker.size) * 1000
        elapsed = (at_us - START_US) / 1e6
        cycle = np.mod(elapsed / self.period[broker] + self.phase[broker], 1.0)
        capacity = self.capacity[broker]
        consumed = self.base[broker] + self.tooth[broker] * cycle + self.growth[broker] * elapsed
        consumed += rng.uniform(-1, 1, broker.size) * capacity * 0.001
        consumed = np.clip(consumed, 0, capacity).astype(np.int64)
        duplicated = np.nonzero(rng.random(broker.size) < self.parameters["duplicate_share"])[0]     # a republished message with other figures
        if duplicated.size:
            order = np.argsort(np.concatenate([np.arange(broker.size), duplicated]), kind="stable")
            broker = np.concatenate([broker, broker[duplicated]])[order]
            at_us = np.concatenate([at_us, at_us[duplicated]])[order]
            shifted = np.clip(consumed[duplicated] - rng.integers(1, 1000, duplicated.size) * 1_000_000, 0, None)
            consumed = np.concatenate([consumed, shifted])[order]
        return broker, at_us, consumed


def _table(fleet, broker, at_us, consumed):
    """A pyarrow table in the snapshot schema (headroom_pipeline.schemas.SNAPSHOT, SnapshotAt as a timestamp)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    count = broker.size
    kind = fleet.limit_kind[broker]
    capacity = fleet.capacity[broker]
    clusters = pa.array([f"cluster-{index + 1:03d}" for index in range(fleet.parameters["clusters"])])
    log_dirs = pa.array(["/var/lib/kafka/data-0", "/var/lib/kafka/data-1"])

    def limit(percentage, free_share, consumed_share):
        limit_type = np.where(kind <= 5, 0, np.where(kind <= 7, 1, 2))
        level = np.where(kind <= 5, percentage, np.where(kind <= 7, np.floor(capacity * free_share), np.floor(capacity * consumed_share)))
        names = pc.take(pa.array(["MinFreePercentage", "MinFreeBytes", "ConsumedSpace"]), pa.array(limit_type))
        return pa.StructArray.from_arrays([names, pa.array(level.astype(np.float64))], names=["type", "level"], mask=pa.array(kind == 9))

    volume = pa.StructArray.from_arrays(
        [pc.take(log_dirs, pa.array(fleet.broker_id[broker] % 2)), pa.array(capacity), pa.array(consumed)], names=["VolumeName", "Capacity", "Consumed"])
    return pa.table({
        "SnapshotAt": pa.array(at_us, type=pa.timestamp("us", tz="UTC")),
        "HardLimit": limit(5.0, 0.05, 0.95),
        "SoftLimit": limit(15.0, 0.15, 0.85),
        "Volumes": pa.ListArray.from_arrays(pa.array(np.arange(count + 1, dtype=np.int32)), volume),
        "BrokerId": pa.array(fleet.broker_id[broker].astype(np.int64)),
        "ClusterId": pc.take(clusters, pa.array(fleet.cluster_index[broker])),
    })


def generate(directory, parameters):
    """Write the fleet's first ``parameters['rows']`` messages (in time order) as Parquet files into ``directory``."""
    import numpy as np
    import pyarrow.parquet as pq

    fleet = Fleet(parameters)
    rng = np.random.default_rng(parameters["seed"] + 1)
    os.makedirs(directory, exist_ok=True)
    wanted, parts, pending, written = parameters["rows"], 0, [], 0
    first_minute = 0
    while written < wanted:
        broker, at_us, consumed = fleet.rows(rng, np.arange(first_minute, first_minute + CHUNK_MINUTES))
        first_minute += CHUNK_MINUTES
        take = min(broker.size, wanted - written - sum(part[0].size for part in pending))
        pending.append((broker[:take], at_us[:take], consumed[:take]))
        buffered = sum(part[0].size for part in pending)
        finished = written + buffered >= wanted
        if buffered >= parameters["rows_per_file"] or finished:
            columns = [np.concatenate([part[index] for part in pending]) for index in range(3)]
            pending = []
            whole = columns[0].size if finished else columns[0].size // parameters["rows_per_file"] * parameters["rows_per_file"]
            for start in range(0, whole, parameters["rows_per_file"]):
                piece = [column[start:start + parameters["rows_per_file"]] for column in columns]
                pq.write_table(_table(fleet, *piece), os.path.join(directory, f"part-{parts:05d}.parquet"), compression="snappy")
                parts += 1
                written += piece[0].size
            if whole < columns[0].size:
                pending.append(tuple(column[whole:] for column in columns))
    return parts


def snapshot_data(rows, progress=print, directory=None, **overrides):
    """The directory of ``rows`` generated snapshot rows, generated unless a copy with the same parameters is there."""
    parameters = fleet_parameters(rows, **overrides)
    directory = directory or os.path.join(BUILD, f"pipeline-{rows}")
    marker = os.path.join(directory, "_parameters.json")
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as handle:
            if json.load(handle) == parameters:
                return directory
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            if name.endswith(".parquet") or name == "_parameters.json":
                os.remove(os.path.join(directory, name))
    began = time.monotonic()
    progress(f"generating {rows:,} snapshot rows into {directory} ...")
    parts = generate(directory, parameters)
    with open(marker, "w", encoding="utf-8") as handle:
        json.dump(parameters, handle, indent=2)
    progress(f"generated {parts} Parquet files in {time.monotonic() - began:.1f}s")
    return directory


# -- one engine run (in its own process) ----------------------------------------------------------------------------
def bench_config():
    """The stages' settings: the job's defaults, policy strimzi with min_available_ratio 0.1."""
    from headroom_pipeline.config import PipelineConfig

    return PipelineConfig(snapshots="", out="", min_available_ratio=MIN_AVAILABLE_RATIO).validate()


def _status_kib(pid, field):
    """A ``kB`` field of /proc/<pid>/status (VmHWM, VmRSS), or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _descendants(pid):
    """{pid: command name} of every process below ``pid``."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        parent = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(parent, []).append((int(entry), name))
    found, pending = {}, [pid]
    while pending:
        for child, name in children.get(pending.pop(), []):
            found[child] = name
            pending.append(child)
    return found


def _java_pids(pid):
    return [child for child, name in _descendants(pid).items() if name == "java"]


def _self_peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _announce_phase(name, seconds):
    """A finished phase on stderr, so that a run that fails later still shows how far it got."""
    print(f"PHASE {json.dumps({'phase': name, 'seconds': seconds})}", file=sys.stderr, flush=True)


def run_spark(data, out, spark_conf=None):
    """Session start, then read + decision timeline + forecast with results written as Parquet, as the job runs them."""
    from headroom_pipeline.session import spark_session

    began = time.monotonic()
    spark = spark_session("local[*]", app_name="pipeline-bench", driver_memory=DRIVER_MEMORY, conf=spark_conf)
    session_seconds = time.monotonic() - began
    _announce_phase("session start", round(session_seconds, 3))
    try:
        from headroom_pipeline import decisions, forecast, ingest
        from headroom_pipeline.job import cache_level
        from pipeline_baselines import PhaseClock

        config = bench_config()
        clock = PhaseClock(_announce_phase)
        snapshots = ingest.load_snapshots(spark, data)
        messages = snapshots.rows.persist(cache_level())
        used = messages.count()
        clock.lap("read")
        decisions.decision_timeline(messages, config).write.mode("overwrite").partitionBy("policy").parquet(os.path.join(out, "decisions"))
        clock.lap("decision timeline")
        forecast.volume_forecast(ingest.explode_volumes(messages), config).write.mode("overwrite").parquet(os.path.join(out, "forecast"))
        clock.lap("forecast")
        messages.unpersist()
        jvm = spark.sparkContext._jvm  # pylint: disable=protected-access
        heap_peak = sum(pool.getPeakUsage().getUsed() for pool in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
                        if str(pool.getType()) == "Heap memory")
        java = _java_pids(os.getpid())
        jvm_peak = max((_status_kib(pid, "VmHWM") or 0 for pid in java), default=0) / 1024.0
        return {"seconds": round(sum(clock.phases.values()), 3), "session_seconds": round(session_seconds, 3),
                "total_seconds": round(session_seconds + sum(clock.phases.values()), 3), "phases": clock.phases,
                "rows_read": snapshots.read, "rows_used": used, "jvm_peak_rss_mib": round(jvm_peak, 1),
                "jvm_heap_peak_mib": round(heap_peak / 2 ** 20, 1), "jvm_heap_max_mib": round(jvm.java.lang.Runtime.getRuntime().maxMemory() / 2 ** 20, 1),
                "python_peak_rss_mib": round(_self_peak_mib(), 1)}
    finally:
        spark.stop()


def run_baseline(engine, data, out):
    import pipeline_baselines

    config = bench_config()
    began = time.monotonic()
    if engine == "pandas":
        counts, phases = pipeline_baselines.pandas_run(data, out, config, on_lap=_announce_phase)
    else:
        counts, phases = pipeline_baselines.duckdb_run(data, out, config, on_lap=_announce_phase)
    seconds = time.monotonic() - began
    return {"seconds": round(seconds, 3), "total_seconds": round(seconds, 3), "phases": phases, "outputs": counts,
            "python_peak_rss_mib": round(_self_peak_mib(), 1)}


def worker(engine, data, out, spark_conf):
    """The child process: run one engine, print its figures as one JSON line."""
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    result = run_spark(data, out, spark_conf) if engine == "spark" else run_baseline(engine, data, out)
    print("RESULT " + json.dumps(result), flush=True)


# -- the parent: one subprocess per run, watched -------------------------------------------------------------------
def _memory_available_share():
    figures = {}
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            key, value = line.split(":", 1)
            figures[key] = int(value.split()[0])
    return figures["MemAvailable"] / figures["MemTotal"]


class Watch(threading.Thread):
    """Samples the run's processes: peak VmHWM of the JVM and of the worker; stops the run on the time or memory limit."""

    def __init__(self, process, time_limit):
        super().__init__(daemon=True)
        self.process, self.time_limit = process, time_limit
        self.began = time.monotonic()
        self.jvm_peak_kib = self.worker_peak_kib = 0
        self.stopped_because = None
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(0.25):
            if self.process.poll() is not None:
                return
            self.worker_peak_kib = max(self.worker_peak_kib, _status_kib(self.process.pid, "VmHWM") or 0)
            for pid in _java_pids(self.process.pid):
                self.jvm_peak_kib = max(self.jvm_peak_kib, _status_kib(pid, "VmHWM") or 0)
            if time.monotonic() - self.began > self.time_limit:
                self._halt(f"took longer than the limit of {self.time_limit:g} s")
            elif _memory_available_share() < 1 - MEMORY_HEADROOM:
                self._halt("would exceed the machine's memory (less than 10 % available)")

    def _halt(self, reason):
        self.stopped_because = reason
        try:
            os.killpg(self.process.pid, 9)
        except ProcessLookupError:
            pass


def _error_lines(stderr):
    """The exception lines of a failed run (first and root cause), without stack frames."""
    lines = [line.strip() for line in stderr.splitlines()]
    errors = [line for line in lines if re.search(r"\w(Error|Exception)\b", line) and not line.startswith(("at ", "File "))]
    return list(dict.fromkeys(errors[:1] + [line for line in errors if line.startswith("Caused by")][-1:] + errors[-1:]))


def _keep_log(out, stderr):
    path = out + ".stderr.log"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(stderr)
    return path


def measure(engine, rows, data, time_limit, progress, spark_conf=None):
    """One engine on one size in a subprocess; its figures, or its status when it did not finish."""
    custom = "-custom-conf" if spark_conf and engine == "spark" else ""       # experiments keep the plain run's output
    out = os.path.join(BUILD, f"pipeline-out-{engine}-{rows}{custom}")
    command = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--data", data, "--out", out]
    command += [f"--spark-conf={key}={value}" for key, value in (spark_conf or {}).items()]
    progress(f"{engine} on {rows:,} rows ...")
    load_before = [round(value, 2) for value in os.getloadavg()]
    began = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    watch = Watch(process, time_limit)
    watch.start()
    stdout, stderr = process.communicate()
    watch.done.set()
    watch.join()
    wall = time.monotonic() - began
    run = {"engine": engine, "rows": rows, "out": os.path.relpath(out, ROOT), "process_seconds": round(wall, 3),
           "load_average_before": load_before, "load_average_after": [round(value, 2) for value in os.getloadavg()]}
    result = next((json.loads(line[len("RESULT "):]) for line in stdout.splitlines() if line.startswith("RESULT ")), None)
    if watch.stopped_because:
        run.update(status="stopped", reason=watch.stopped_because)
    elif process.returncode != 0 or result is None:
        errors = _error_lines(stderr)
        reason = "killed (out of memory?)" if process.returncode in (-9, 137) else f"exit status {process.returncode}"
        cause = next((line.split(":", 1)[1].strip() for line in errors if line.startswith("Caused by:")), None)
        run.update(status="failed", reason=cause or reason, errors=errors, log=os.path.relpath(_keep_log(out, stderr), ROOT))
    else:
        run.update(status="ok", **result)
    if run["status"] != "ok":
        finished = [json.loads(line[len("PHASE "):]) for line in stderr.splitlines() if line.startswith("PHASE ")]
        run["phases_finished"] = {item["phase"]: item["seconds"] for item in finished}
    if engine == "spark":
        run.setdefault("jvm_peak_rss_mib", round(watch.jvm_peak_kib / 1024.0, 1))
    else:
        run.setdefault("python_peak_rss_mib", round(watch.worker_peak_kib / 1024.0, 1))
    progress(f"{engine} on {rows:,} rows: {run['status']}" + (f" in {run['seconds']:.1f}s" if run["status"] == "ok" else f" ({run['reason']})"))
    return run


# -- do the engines agree? ------------------------------------------------------------------------------------------
def _output_relation(run, table):
    """A DuckDB FROM clause for one run's output table (Spark writes directories, the baselines single files)."""
    path = os.path.join(ROOT, run["out"], table)
    if os.path.isdir(path):
        return f"read_parquet('{path}/**/*.parquet', hive_partitioning = true)"
    return f"read_parquet('{path}.parquet')"


DECISION_DIFFERENCES = """
SELECT count(*) FILTER (WHERE a.cluster IS NULL OR b.cluster IS NULL) AS missing,
       count(*) FILTER (WHERE a.cluster IS NOT NULL AND b.cluster IS NOT NULL AND (
           a.throttle_factor <> b.throttle_factor OR a.state <> b.state OR a.fallback_applied <> b.fallback_applied OR a.observed <> b.observed
           OR a.volumes_considered <> b.volumes_considered OR a.brokers_considered <> b.brokers_considered
           OR list_transform(a.violations, lambda v: struct_pack(b := v.broker_id, d := v.log_dir))
              <> list_transform(b.violations, lambda v: struct_pack(b := v.broker_id, d := v.log_dir)))) AS different,
       count(*) AS compared
FROM (SELECT *, epoch_us("at") AS at_us FROM {left}) a
FULL JOIN (SELECT *, epoch_us("at") AS at_us FROM {right}) b ON a.cluster = b.cluster AND a.at_us = b.at_us AND a.policy::VARCHAR = b.policy::VARCHAR
"""

FORECAST_DIFFERENCES = """
SELECT count(*) FILTER (WHERE a.cluster IS NULL OR b.cluster IS NULL) AS missing,
       count(*) FILTER (WHERE a.cluster IS NOT NULL AND b.cluster IS NOT NULL AND (
           a.samples <> b.samples OR a.buckets <> b.buckets OR a.usable_bytes <> b.usable_bytes
           OR NOT close(a.bytes_per_hour, b.bytes_per_hour) OR NOT close(a.hours_to_hard_limit, b.hours_to_hard_limit)
           OR NOT close(a.hours_to_plugin_limit, b.hours_to_plugin_limit))) AS different,
       count(*) FILTER (WHERE a.rank <> b.rank) AS rank_different,
       count(*) AS compared
FROM {left} a FULL JOIN {right} b ON a.cluster = b.cluster AND a.broker_id = b.broker_id AND a.log_dir = b.log_dir
"""


def compare_outputs(runs, progress):
    """Per size, each engine's decisions and forecast against the first engine's that finished: rows that differ."""
    import duckdb

    connection = duckdb.connect()
    connection.execute("SET TimeZone = 'UTC'")
    # numbers within 1e-9 relative (floating-point sums run in different orders), nulls equal to nulls
    connection.execute("CREATE MACRO close(x, y) AS (x IS NULL AND y IS NULL) OR abs(x - y) <= 1e-9 * greatest(abs(x), abs(y), 1e-6)")
    comparisons = []
    for rows in sorted({run["rows"] for run in runs}):
        finished = [run for run in runs if run["rows"] == rows and run["status"] == "ok"]
        for other in finished[1:]:
            reference = finished[0]
            comparison = {"rows": rows, "reference": reference["engine"], "engine": other["engine"]}
            for table, query in (("decisions", DECISION_DIFFERENCES), ("forecast", FORECAST_DIFFERENCES)):
                sql = query.format(left=_output_relation(reference, table), right=_output_relation(other, table))
                names = [column[0] for column in connection.execute(sql).description]
                comparison[table] = dict(zip(names, connection.execute(sql).fetchone()))
            comparisons.append(comparison)
            progress(f"{other['engine']} vs {reference['engine']} on {rows:,} rows: decisions {comparison['decisions']}, forecast {comparison['forecast']}")
    return comparisons


# -- report ---------------------------------------------------------------------------------------------------------
def _find(runs, engine, rows):
    return next((run for run in runs if run["engine"] == engine and run["rows"] == rows and run["status"] == "ok"), None)


def ratios_and_verdicts(runs, sizes, driver_memory=DRIVER_MEMORY):
    """The issue's ratios (largest size, largest / smallest size) and whether each target is met."""
    large, small = max(sizes), min(sizes)
    spark, pandas, duck, spark_small = _find(runs, "spark", large), _find(runs, "pandas", large), _find(runs, "duckdb", large), _find(runs, "spark", small)

    def ratio(numerator, denominator):
        return round(numerator / denominator, 3) if numerator is not None and denominator else None

    figures = {
        "pandas_over_spark_incl_start": ratio(pandas and pandas["seconds"], spark and spark["total_seconds"]),
        "pandas_over_spark_excl_start": ratio(pandas and pandas["seconds"], spark and spark["seconds"]),
        "spark_excl_start_over_duckdb": ratio(spark and spark["seconds"], duck and duck["seconds"]),
        "spark_incl_start_over_duckdb": ratio(spark and spark["total_seconds"], duck and duck["seconds"]),
        "spark_large_over_small_excl_start": ratio(spark and spark["seconds"], spark_small and spark_small["seconds"]) if large != small else None,
        "spark_large_over_small_incl_start": ratio(spark and spark["total_seconds"], spark_small and spark_small["total_seconds"]) if large != small else None,
        "spark_jvm_peak_rss_gib": round(max(run.get("jvm_peak_rss_mib") or 0 for run in runs if run["engine"] == "spark") / 1024, 3)
        if any(run["engine"] == "spark" and run.get("jvm_peak_rss_mib") for run in runs) else None,
    }
    targets = [
        (f"Spark (incl. JVM start) at least {TARGETS['pandas_over_spark_10m']:g}x faster than pandas at {large:,} rows",
         figures["pandas_over_spark_incl_start"], lambda value: value >= TARGETS["pandas_over_spark_10m"], "x"),
        (f"Spark (excl. JVM start) within {TARGETS['spark_excl_start_over_duckdb_10m']:g}x of DuckDB at {large:,} rows",
         figures["spark_excl_start_over_duckdb"], lambda value: value <= TARGETS["spark_excl_start_over_duckdb_10m"], "x"),
        (f"Spark time {large:,} / {small:,} rows (excl. JVM start) at most {TARGETS['spark_10m_over_1m']:g}" if large != small
         else "Spark time largest / smallest size (needs two sizes)",
         figures["spark_large_over_small_excl_start"], lambda value: value <= TARGETS["spark_10m_over_1m"], ""),
        (f"driver (JVM) peak RSS at most {TARGETS['spark_driver_peak_gib']:g} GiB (spark.driver.memory={driver_memory})",
         figures["spark_jvm_peak_rss_gib"], lambda value: value <= TARGETS["spark_driver_peak_gib"], " GiB"),
    ]
    # A Spark run that did not finish at the largest size fails the timing targets: it has no time to compare.
    unfinished = next((run for run in runs if run["engine"] == "spark" and run["rows"] == large and run["status"] != "ok"), None)
    verdicts = []
    for name, value, check, unit in targets:
        verdict = {"target": name, "measured": value, "unit": unit, "verdict": "n/a" if value is None else ("PASS" if check(value) else "FAIL")}
        if value is None and unfinished is not None and unit != " GiB":
            verdict.update(verdict="FAIL", note=f"Spark did not finish at {large:,} rows: {unfinished['status']} ({unfinished.get('reason')})")
        verdicts.append(verdict)
    return figures, verdicts


def print_report(runs, comparisons, verdicts, out=sys.stdout):
    def number(value, digits=1):
        return "-" if value is None else f"{value:,.{digits}f}"

    header = ["rows", "engine", "status", "read s", "decisions s", "forecast s", "work s", "JVM start s", "total s", "peak RSS MiB", "outputs"]
    lines = []
    for run in runs:
        phases = run.get("phases") or run.get("phases_finished") or {}
        memory = run.get("jvm_peak_rss_mib") if run["engine"] == "spark" else run.get("python_peak_rss_mib")
        outputs = run.get("outputs") or {}
        lines.append([f"{run['rows']:,}", run["engine"], run["status"] if run["status"] == "ok" else f"{run['status']}: {run.get('reason')}",
                      number(phases.get("read"), 2), number(phases.get("decision timeline"), 2), number(phases.get("forecast"), 2),
                      number(run.get("seconds"), 2), number(run.get("session_seconds", phases.get("session start")), 2), number(run.get("total_seconds"), 2),
                      number(memory, 0) + (" (JVM)" if run["engine"] == "spark" else ""),
                      ", ".join(f"{name} {count:,}" for name, count in outputs.items())])
    widths = [max(len(str(row[index])) for row in [header] + lines) for index in range(len(header))]
    print("| " + " | ".join(name.ljust(width) for name, width in zip(header, widths)) + " |", file=out)
    print("|" + "|".join("-" * (width + 2) for width in widths) + "|", file=out)
    for row in lines:
        print("| " + " | ".join(str(cell).ljust(width) for cell, width in zip(row, widths)) + " |", file=out)
    for run in runs:
        if run["engine"] == "spark" and run["status"] == "ok":
            print(f"spark {run['rows']:,} rows: JVM heap {run['jvm_heap_max_mib']:,.0f} MiB max, sum of the heap pools' peaks "
                  f"{run['jvm_heap_peak_mib']:,.0f} MiB (an upper bound: the pools peak at different times); "
                  f"Python driver process peak RSS {run['python_peak_rss_mib']:,.0f} MiB", file=out)
    for run in runs:
        if run["status"] != "ok":
            print(f"{run['engine']} {run['rows']:,} rows {run['status']} after {run['process_seconds']:,.0f}s ({run.get('reason')}); "
                  f"phases finished: {run.get('phases_finished') or 'none'}" + (f"; log {run['log']}" if run.get("log") else ""), file=out)
    print(file=out)
    for comparison in comparisons:
        decisions, forecast = comparison["decisions"], comparison["forecast"]
        print(f"{comparison['engine']} vs {comparison['reference']} at {comparison['rows']:,} rows: decisions {decisions['compared']:,} compared, "
              f"{decisions['missing']} missing, {decisions['different']} different; forecast {forecast['compared']:,} compared, {forecast['missing']} missing, "
              f"{forecast['different']} different, {forecast['rank_different']} ranked differently", file=out)
    print(file=out)
    for verdict in verdicts:
        measured = verdict.get("note") or ("-" if verdict["measured"] is None else f"{verdict['measured']:g}{verdict['unit']}")
        print(f"{verdict['verdict']:4}  {verdict['target']}: {measured}", file=out)


def machine():
    import platform

    info = {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()}
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            info["cpu"] = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), None)
        with open("/proc/meminfo", encoding="ascii") as handle:
            info["memory_gib"] = round(int(handle.readline().split()[1]) / 2 ** 20, 1)
    except OSError:
        pass
    for name in ("pyspark", "pandas", "duckdb", "pyarrow", "numpy"):
        try:
            info[name] = __import__(name).__version__
        except ImportError:
            info[name] = None
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30, check=False)
        info["java"] = (java.stderr or java.stdout).splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        info["java"] = None
    return info


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=list(DEFAULT_ROWS), help="snapshot rows per size (default: 1000000 10000000)")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES), help="engines to run (default: all)")
    parser.add_argument("--time-limit", type=float, default=RUN_TIME_LIMIT, help="seconds a pandas or DuckDB run may take before it is stopped (default 1200)")
    parser.add_argument("--spark-time-limit", type=float, default=SPARK_TIME_LIMIT, help="seconds a Spark run may take before it is stopped (default 3600)")
    parser.add_argument("--json", default=RESULT_FILE, help="where to write every figure (default build/bench/pipeline_bench.json)")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the Spark runs, on top of the job's session settings (repeatable; for experiments)")
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    spark_conf = dict(setting.split("=", 1) for setting in args.spark_conf if "=" in setting)
    if len(spark_conf) != len(args.spark_conf):
        parser.error("--spark-conf takes KEY=VALUE")
    if args.worker:
        worker(args.worker, args.data, args.out, spark_conf)
        return 0

    def progress(text):
        print(f"[pipeline_bench] {text}", file=sys.stderr, flush=True)

    sizes = sorted(set(args.rows))
    runs = []
    for rows in sizes:
        data = snapshot_data(rows, progress)
        for engine in [engine for engine in ENGINES if engine in args.engines]:
            runs.append(measure(engine, rows, data, args.spark_time_limit if engine == "spark" else args.time_limit, progress, spark_conf))
    comparisons = compare_outputs(runs, progress)
    figures, verdicts = ratios_and_verdicts(runs, sizes, spark_conf.get("spark.driver.memory", DRIVER_MEMORY))
    print_report(runs, comparisons, verdicts)
    settings = {"driver_memory": DRIVER_MEMORY, "min_available_ratio": MIN_AVAILABLE_RATIO, "spark_conf": spark_conf,
                "time_limit_seconds": args.time_limit, "spark_time_limit_seconds": args.spark_time_limit,
                "fleets": {rows: fleet_parameters(rows) for rows in sizes}}
    document = {"machine": machine(), "settings": settings,
                "runs": runs, "comparisons": comparisons, "ratios": figures, "targets": verdicts}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2)
        handle.write("\n")
    progress(f"wrote {os.path.relpath(os.path.abspath(args.json), ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
