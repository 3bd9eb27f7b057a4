"""The pipeline at scale: the job as a user runs it against the Spark floor, pandas and DuckDB, on 10k to 100M
snapshot rows.

Run from the repository root:
``.venv/bin/python bench/pipeline_bench.py [--rows ...] [--engines ...] [--no-cores] [--no-standalone]``.

Data: a generated fleet of clusters of 10 brokers with one volume each, one usage snapshot message per broker every
60 s (a "snapshot row" is one message), used bytes following retention's saw-tooth with a slow growth on some volumes,
short gaps per broker, cluster-wide gaps (the plugin's admin call fails, so its fallback shows), a few brokers that
stop reporting, a few duplicated messages and volumes that cross the limits. It is written with numpy and pyarrow
straight into Parquet in the snapshot schema (SnapshotAt as a Parquet timestamp) under build/bench/pipeline-<rows>/
and reused while its parameters are unchanged. Every run reads the same files.

Runs, each a process of its own: the job's command line (``python -m headroom_pipeline run``; its summary.json's
stage timings give the JVM start apart from the work), the Spark floor (pipeline_floor.py, same session settings),
the pandas and DuckDB baselines (pipeline_baselines.py) and the floor in DuckDB; at 10M rows also the job with
local[1] and local[2] and on a standalone Spark cluster through spark-submit; at 10k rows the job and the floor run
five times each, in turn, and are judged by their median runs (REPEATS). Reported: work time, JVM start, peak
resident memory, the job's work over the floor's, the exchanges of the job's plans before and after
(pipeline_plans.py), the outputs compared row by row, and a verdict per target; the same as JSON in
build/bench/pipeline_bench.json. A run that fails, runs out of memory or takes longer than its time limit is reported
as such instead of stopping the benchmark.
"""

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [path for path in (ROOT, BENCH_DIR) if path not in sys.path]

from kafka_testbed.nodes import descendants  # noqa: E402  pylint: disable=wrong-import-position

BUILD = os.path.join(ROOT, "build", "bench")
RESULT_FILE = os.path.join(BUILD, "pipeline_bench.json")
# spark: the job as a user runs it; floor: the least work Spark must do (pipeline_floor.py); pandas, duckdb: the
# baselines of pipeline_baselines.py; duckdb-floor: the floor's SQL in DuckDB.
ENGINES = ("spark", "floor", "pandas", "duckdb", "duckdb-floor")
SPARK_ENGINES = ("spark", "floor")  # those that run in a JVM, timed against each other (and repeated, see REPEATS)
OUTPUT_ENGINES = ("spark", "pandas", "duckdb")  # those that write the job's outputs, compared row by row
JOB = "spark"  # the label of the job's run in local[*]
DEFAULT_ROWS = (10_000, 1_000_000, 10_000_000, 100_000_000)
JOB_ARGUMENTS = ["run", "--min-available-ratio", "0.1", "--no-report"]
DRIVER_MEMORY = "2g"  # the driver heap (spark.driver.memory) of every Spark run, job and floor alike
MIN_AVAILABLE_RATIO = 0.1
RUN_TIME_LIMIT = 20 * 60  # seconds; a pandas or DuckDB run that takes longer is stopped and reported
SPARK_TIME_LIMIT = 60 * 60  # seconds; the same for a Spark run
MEMORY_HEADROOM = 0.9  # a run is stopped when the machine's available memory falls below 10 % of its total
SAMPLE_SECONDS = 0.25  # how often a run's processes are sampled (peak memory, per stage too; the limits)
# The job's progress line as a stage starts (headroom_pipeline.job.Progress): "[headroom_pipeline  12.3s] 3/9 name ..."
STAGE_STARTED = re.compile(r"\] \d+/\d+ (?P<stage>.+) \.\.\.$")
FLOOR_TARGETS = {10_000: 2.0, 1_000_000: 2.0, 10_000_000: 2.0}  # the job's work at most this many times the floor's
# Where one run takes seconds, the machine's noise (runs vary by a tenth and more) is larger than a target's margin: the
# job and the floor run this many times there, one after the other in turn, and each is judged by its median run.
REPEATS = {10_000: 5}
CORES_ROWS = 10_000_000  # the size of the local[1] / local[2] and standalone cluster runs
SCALE_ROWS, SCALE_RATIO = 100_000_000, 10.0
SPEED_UP = 1.7
# The standalone cluster: two workers of one core each (the machine's two cores), one executor each; the driver binds
# to loopback, where the workers reach it.
CLUSTER_WORKER_MEMORY = "2g"
CLUSTER_SUBMIT_ARGS = [
    "--conf",
    "spark.driver.host=127.0.0.1",
    "--conf",
    "spark.driver.bindAddress=127.0.0.1",
    "--conf",
    "spark.executor.cores=1",
    "--conf",
    "spark.executor.memory=1536m",
]
SMALL_PLAN_ROWS = 10_000  # the plans' shape does not depend on the size: they are counted on a small input
# The job of issue 10 (commit 75921cf), counted the same way: the decision timeline ran three queries (the timed
# messages checkpointed to disk, the size estimate, the timeline), the forecast one.
BEFORE_COMMIT = "75921cf"
EXCHANGES_BEFORE = {
    "decision timeline": {"shuffle": 10, "broadcast": 3, "queries": 3},
    "forecast": {"shuffle": 2, "broadcast": 0, "queries": 1},
}

# -- the generated fleet -------------------------------------------------------------------------------------------
GENERATOR_VERSION = 1
GIB = 1024**3
START_US = 1_793_491_200_000_000  # 2026-11-01T00:00:00Z
BROKERS_PER_CLUSTER = 10
NOMINAL_MINUTES = 7 * 24 * 60  # one week of history at one message per broker and minute
INTERVAL_US = 60_000_000
ROWS_PER_FILE = 250_000
CHUNK_MINUTES = 720


def fleet_parameters(rows, seed=20261101, **overrides):
    """The generator's parameters for ``rows`` snapshot rows: the fleet grows with the rows, the history stays a week.

    ``overrides`` change the fleet's shape (tests use small, eventful fleets): brokers_per_cluster, minutes (the
    nominal history), broker_gaps and cluster_gaps (outages per broker or cluster over the history), stopping_share,
    growing_share, duplicate_share.
    """
    shape = {
        "brokers_per_cluster": BROKERS_PER_CLUSTER,
        "minutes": NOMINAL_MINUTES,
        "broker_gaps": 2.0,
        "cluster_gaps": 1.0,
        "stopping_share": 0.01,
        "growing_share": 0.25,
        "duplicate_share": 0.0002,
    }
    unknown = set(overrides) - set(shape)
    if unknown:
        raise ValueError(f"unknown fleet parameters: {', '.join(sorted(unknown))}")
    shape.update(overrides)
    clusters = max(1, round(rows / (shape["brokers_per_cluster"] * shape["minutes"])))
    return {
        "version": GENERATOR_VERSION,
        "rows": int(rows),
        "clusters": clusters,
        "interval_seconds": INTERVAL_US // 1_000_000,
        "start_us": START_US,
        "seed": seed,
        "rows_per_file": ROWS_PER_FILE,
        **shape,
    }


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
        self.offset_us = rng.integers(0, 59_000, brokers) * 1000  # each broker's own timer within the minute
        minutes = parameters["minutes"]
        stopping = rng.random(brokers) < parameters["stopping_share"]
        self.stop_minute = np.where(
            stopping, rng.integers(int(minutes * 0.3), int(minutes * 0.9), brokers), np.iinfo(np.int64).max
        )
        self.broker_gaps = self._windows(rng, brokers, parameters["broker_gaps"], minutes, longest=20)
        self.cluster_gaps = self._windows(rng, parameters["clusters"], parameters["cluster_gaps"], minutes, longest=15)
        # limits per cluster: 0-5 MinFreePercentage, 6-7 MinFreeBytes, 8 ConsumedSpace, 9 none; the first four
        # clusters have each kind
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
        for owner, first, length in zip(*self.broker_gaps, strict=True):
            rows = (minutes >= first) & (minutes < first + length)
            if rows.any():
                mask[rows, owner] = False
        for owner, first, length in zip(*self.cluster_gaps, strict=True):
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
        duplicated = np.nonzero(rng.random(broker.size) < self.parameters["duplicate_share"])[
            0
        ]  # a republished message with other figures
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
        level = np.where(
            kind <= 5,
            percentage,
            np.where(kind <= 7, np.floor(capacity * free_share), np.floor(capacity * consumed_share)),
        )
        names = pc.take(pa.array(["MinFreePercentage", "MinFreeBytes", "ConsumedSpace"]), pa.array(limit_type))
        return pa.StructArray.from_arrays(
            [names, pa.array(level.astype(np.float64))], names=["type", "level"], mask=pa.array(kind == 9)
        )

    volume = pa.StructArray.from_arrays(
        [pc.take(log_dirs, pa.array(fleet.broker_id[broker] % 2)), pa.array(capacity), pa.array(consumed)],
        names=["VolumeName", "Capacity", "Consumed"],
    )
    return pa.table(
        {
            "SnapshotAt": pa.array(at_us, type=pa.timestamp("us", tz="UTC")),
            "HardLimit": limit(5.0, 0.05, 0.95),
            "SoftLimit": limit(15.0, 0.15, 0.85),
            "Volumes": pa.ListArray.from_arrays(pa.array(np.arange(count + 1, dtype=np.int32)), volume),
            "BrokerId": pa.array(fleet.broker_id[broker].astype(np.int64)),
            "ClusterId": pc.take(clusters, pa.array(fleet.cluster_index[broker])),
        }
    )


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
            whole = (
                columns[0].size
                if finished
                else columns[0].size // parameters["rows_per_file"] * parameters["rows_per_file"]
            )
            for start in range(0, whole, parameters["rows_per_file"]):
                piece = [column[start : start + parameters["rows_per_file"]] for column in columns]
                pq.write_table(
                    _table(fleet, *piece), os.path.join(directory, f"part-{parts:05d}.parquet"), compression="snappy"
                )
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


def _name(pid):
    """The command name of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/comm", encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _java_pids(pid):
    return [child for child, name in descendants(pid).items() if name == "java"]


def _self_peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _announce_phase(name, seconds):
    """A finished phase on stderr, so that a run that fails later still shows how far it got."""
    print(f"PHASE {json.dumps({'phase': name, 'seconds': seconds})}", file=sys.stderr, flush=True)


def run_baseline(engine, data, out):
    import pipeline_baselines

    config = bench_config()
    began = time.monotonic()
    if engine == "pandas":
        counts, phases = pipeline_baselines.pandas_run(data, out, config, on_lap=_announce_phase)
    else:
        counts, phases = pipeline_baselines.duckdb_run(data, out, config, on_lap=_announce_phase)
    seconds = time.monotonic() - began
    return {
        "seconds": round(seconds, 3),
        "total_seconds": round(seconds, 3),
        "phases": phases,
        "outputs": counts,
        "python_peak_rss_mib": round(_self_peak_mib(), 1),
    }


def worker(engine, data, out):
    """The child process of a baseline: run it, print its figures as one JSON line."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    print("RESULT " + json.dumps(run_baseline(engine, data, out)), flush=True)


def plan_worker(data, out):
    """The child process that counts the exchanges of the job's plans on ``data`` (printed as one JSON line)."""
    import pipeline_plans

    print("RESULT " + json.dumps(pipeline_plans.job_exchanges(data, out, bench_config())), flush=True)


# -- the parent: one subprocess per run, watched -------------------------------------------------------------------
def _memory_available_share():
    figures = {}
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            key, value = line.split(":", 1)
            figures[key] = int(value.split()[0])
    return figures["MemAvailable"] / figures["MemTotal"]


class Watch(threading.Thread):
    """Samples the run's processes: peak VmHWM of the JVM and of the worker, and the JVM's resident set every
    SAMPLE_SECONDS (``samples``: (seconds since the start, KiB), for the peak per stage); stops the run on the time or
    memory limit."""

    def __init__(self, process, time_limit, roots=()):
        super().__init__(daemon=True)
        self.process, self.time_limit, self.roots = process, time_limit, tuple(roots)
        self.began = time.monotonic()
        self.jvm_peak_kib = self.worker_peak_kib = self.executor_peak_kib = 0
        self.samples = []
        self.stopped_because = None
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(SAMPLE_SECONDS):
            if self.process.poll() is not None:
                return
            self.worker_peak_kib = max(self.worker_peak_kib, _status_kib(self.process.pid, "VmHWM") or 0)
            # the JVMs the run started (spark-submit becomes one itself) and, on a cluster, the executors the workers
            # started
            resident = 0
            for pid in _java_pids(self.process.pid) + ([self.process.pid] if _name(self.process.pid) == "java" else []):
                self.jvm_peak_kib = max(self.jvm_peak_kib, _status_kib(pid, "VmHWM") or 0)
                resident += _status_kib(pid, "VmRSS") or 0
            self.samples.append((time.monotonic() - self.began, resident))
            for pid in [child for root in self.roots for child in _java_pids(root)]:
                self.executor_peak_kib = max(self.executor_peak_kib, _status_kib(pid, "VmHWM") or 0)
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


def _communicate(process, began):
    """(stdout, stderr, stage starts) of a run: its output, read as it comes, and for the job each stage's start
    ((stage, seconds since ``began``), from its progress lines)."""
    starts, chunks = [], {"stdout": [], "stderr": []}

    def read(name, stream):
        for line in stream:
            chunks[name].append(line)
            started = STAGE_STARTED.search(line.rstrip("\n")) if name == "stderr" else None
            if started:
                starts.append((started["stage"], time.monotonic() - began))

    readers = [
        threading.Thread(target=read, args=(name, getattr(process, name)), daemon=True) for name in ("stdout", "stderr")
    ]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    process.wait()
    return "".join(chunks["stdout"]), "".join(chunks["stderr"]), starts


def stage_peaks(starts, samples, end):
    """{stage: peak resident MiB of the JVM while it ran} from the stages' starts and the samples ((seconds, KiB));
    a stage shorter than the sampling takes the first sample after its start."""
    peaks = {}
    bounds = [seconds for _stage, seconds in starts[1:]] + [end]
    for (stage, start), stop in zip(starts, bounds, strict=True):
        inside = [kib for seconds, kib in samples if start <= seconds < stop]
        after = [kib for seconds, kib in samples if seconds >= start][:1]
        chosen = inside or after
        if chosen:
            peaks[stage] = round(max(chosen) / 1024.0, 1)
    return peaks


def _error_lines(stderr):
    """The exception lines of a failed run (first and root cause), without stack frames."""
    lines = [line.strip() for line in stderr.splitlines()]
    errors = [
        line for line in lines if re.search(r"\w(Error|Exception)\b", line) and not line.startswith(("at ", "File "))
    ]
    return list(
        dict.fromkeys(errors[:1] + [line for line in errors if line.startswith("Caused by")][-1:] + errors[-1:])
    )


def _keep_log(out, stderr):
    path = out + ".stderr.log"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(stderr)
    return path


def _command(run, data, out, spark_conf, cluster):
    """The command line of one run: the job as a user runs it, the floor, or a baseline worker."""
    engine, master = run["engine"], run.get("master")
    conf = [item for key, value in spark_conf.items() for item in ("--conf", f"{key}={value}")]
    if engine == "spark" and master and master.startswith("spark://"):
        return (
            [
                cluster.spark_submit,
                "--master",
                master,
                "--driver-memory",
                DRIVER_MEMORY,
                *CLUSTER_SUBMIT_ARGS,
                *conf,
                os.path.join(ROOT, "headroom_pipeline", "__main__.py"),
                *JOB_ARGUMENTS,
                "--snapshots",
                data,
                "--out",
                out,
            ],
            cluster.env,
        )
    if engine == "spark":
        return (
            [
                sys.executable,
                "-m",
                "headroom_pipeline",
                *JOB_ARGUMENTS,
                "--snapshots",
                data,
                "--out",
                out,
                "--master",
                master,
                "--driver-memory",
                DRIVER_MEMORY,
                *conf,
            ],
            None,
        )
    if engine in ("floor", "duckdb-floor"):
        command = [sys.executable, os.path.join(BENCH_DIR, "pipeline_floor.py"), "--snapshots", data, "--out", out]
        if engine == "floor":
            return command + ["--master", master, "--driver-memory", DRIVER_MEMORY, *conf], None
        return command + ["--engine", "duckdb"], None
    return [sys.executable, os.path.abspath(__file__), "--worker", engine, "--data", data, "--out", out], None


def _result(run, stdout, out):
    """The run's figures: for the job from its summary.json (JVM start apart from the work), else its JSON line."""
    if run["engine"] == "spark":
        with open(os.path.join(out, "summary.json"), encoding="utf-8") as handle:
            summary = json.load(handle)
        timings = summary["timings_seconds"]
        work = sum(seconds for stage, seconds in timings.items() if stage != "start Spark")
        return {
            "seconds": round(work, 3),
            "session_seconds": timings.get("start Spark"),
            "total_seconds": round(work + timings.get("start Spark", 0), 3),
            "phases": timings,
            "rows_read": summary["rows_read"],
            "rows_used": summary["rows_used"],
            "rows_rejected": summary["rows_rejected"],
            "spark": summary.get("spark"),
        }
    line = next((line for line in reversed(stdout.splitlines()) if line.startswith(("RESULT ", "{"))), None)
    if line is None:
        return None
    result = json.loads(line[len("RESULT ") :] if line.startswith("RESULT ") else line)
    if run["engine"] in ("floor", "duckdb-floor"):
        result = {
            "seconds": result["work_seconds"],
            "session_seconds": result["session_seconds"],
            "total_seconds": round(result["work_seconds"] + result["session_seconds"], 3),
            "phases": result["phases"],
        }
    return result


def measure(run, data, time_limit, progress, spark_conf=None, cluster=None):
    """One run (engine, size, master) in a process of its own; its figures, or its status when it did not finish."""
    engine, rows = run["engine"], run["rows"]
    name = run["label"].replace("[", "-").replace("]", "").replace("*", "all").replace(" ", "-")
    out = os.path.join(BUILD, f"pipeline-out-{name}-{rows}" + (f"-{run['repeat']}" if run.get("repeat", 1) > 1 else ""))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    command, environment = _command(run, data, out, spark_conf or {}, cluster)
    progress(f"{_shown(run)} on {rows:,} rows ...")
    load_before = [round(value, 2) for value in os.getloadavg()]
    began = time.monotonic()
    cpus = sorted(os.sched_getaffinity(0))[: run["cpus"]] if run.get("cpus") else None
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=ROOT,
        env=environment,
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
    )
    watch = Watch(process, time_limit, roots=cluster.worker_pids() if cluster else ())
    watch.start()
    stdout, stderr, stage_starts = _communicate(process, watch.began)
    watch.done.set()
    watch.join()
    wall = time.monotonic() - began
    run = dict(
        run,
        out=os.path.relpath(out, ROOT),
        process_seconds=round(wall, 3),
        load_average_before=load_before,
        load_average_after=[round(value, 2) for value in os.getloadavg()],
    )
    try:
        result = _result(run, stdout, out) if process.returncode == 0 else None
    except (OSError, ValueError, KeyError):
        result = None
    if watch.stopped_because:
        run.update(status="stopped", reason=watch.stopped_because)
    elif result is None:
        errors = _error_lines(stderr)
        reason = "killed (out of memory?)" if process.returncode in (-9, 137) else f"exit status {process.returncode}"
        cause = next((line.split(":", 1)[1].strip() for line in errors if line.startswith("Caused by:")), None)
        run.update(
            status="failed", reason=cause or reason, errors=errors, log=os.path.relpath(_keep_log(out, stderr), ROOT)
        )
    else:
        run.update(status="ok", **result)
    if engine in SPARK_ENGINES:
        run["jvm_peak_rss_mib"] = round(watch.jvm_peak_kib / 1024.0, 1)
        if stage_starts:
            run["stage_peak_rss_mib"] = stage_peaks(stage_starts, watch.samples, wall)
        if cluster:
            run["executor_peak_rss_mib"] = round(watch.executor_peak_kib / 1024.0, 1)
    else:
        run.setdefault("python_peak_rss_mib", round(watch.worker_peak_kib / 1024.0, 1))
    progress(
        f"{_shown(run)} on {rows:,} rows: {run['status']}"
        + (f", work {run['seconds']:.1f}s" if run["status"] == "ok" else f" ({run['reason']})")
    )
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
           a.throttle_factor <> b.throttle_factor OR a.state <> b.state OR a.fallback_applied <> b.fallback_applied
               OR a.observed <> b.observed
           OR a.volumes_considered <> b.volumes_considered OR a.brokers_considered <> b.brokers_considered
           OR list_transform(a.violations, lambda v: struct_pack(b := v.broker_id, d := v.log_dir))
              <> list_transform(b.violations, lambda v: struct_pack(b := v.broker_id, d := v.log_dir)))) AS different,
       count(*) AS compared
FROM (SELECT *, epoch_us("at") AS at_us FROM {left}) a
FULL JOIN (SELECT *, epoch_us("at") AS at_us FROM {right}) b ON a.cluster = b.cluster AND a.at_us = b.at_us
    AND a.policy::VARCHAR = b.policy::VARCHAR
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
    connection.execute(
        "CREATE MACRO close(x, y) AS (x IS NULL AND y IS NULL) OR abs(x - y) <= 1e-9 * greatest(abs(x), abs(y), 1e-6)"
    )
    comparisons = []
    for rows in sorted({run["rows"] for run in runs}):
        finished = [run for run in runs if run["rows"] == rows and run["status"] == "ok"]
        # a repeated run's outputs are its first's (each repeat writes its own; the first is compared)
        finished = [run for run in finished if run["engine"] in OUTPUT_ENGINES and run.get("repeat", 1) == 1]
        for other in finished[1:]:
            reference = finished[0]
            comparison = {"rows": rows, "reference": reference["label"], "engine": other["label"]}
            for table, query in (("decisions", DECISION_DIFFERENCES), ("forecast", FORECAST_DIFFERENCES)):
                sql = query.format(left=_output_relation(reference, table), right=_output_relation(other, table))
                cursor = connection.execute(sql)
                comparison[table] = dict(
                    zip([column[0] for column in cursor.description], cursor.fetchone(), strict=True)
                )
            comparisons.append(comparison)
            progress(
                f"{other['label']} vs {reference['label']} on {rows:,} rows: decisions {comparison['decisions']}, "
                f"forecast {comparison['forecast']}"
            )
    return comparisons


# -- the standalone cluster ------------------------------------------------------------------------------------------
@contextlib.contextmanager
def standalone_cluster(progress):
    """A standalone Spark cluster on loopback (a master and two workers, each its own JVM), as the tests start it."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "pipeline"))
    import spark_standalone  # pylint: disable=import-outside-toplevel

    workdir = os.path.join(BUILD, "spark-standalone")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    progress("starting a standalone Spark cluster (a master, two workers) ...")
    with spark_standalone.standalone_cluster(
        workdir, workers=2, cores_per_worker=1, worker_memory=CLUSTER_WORKER_MEMORY
    ) as cluster:
        yield cluster


# -- report ---------------------------------------------------------------------------------------------------------
def _find(runs, label, rows):
    """The run of ``label`` at ``rows`` that finished; of a repeated one (REPEATS), its median run, with the work of
    every repeat that finished under "repeats" (of an even number, the slower of the two middle runs)."""
    finished = [run for run in runs if run["label"] == label and run["rows"] == rows and run["status"] == "ok"]
    if len(finished) < 2:
        return finished[0] if finished else None
    median = sorted(finished, key=lambda run: run["seconds"])[len(finished) // 2]
    return dict(median, repeats=[run["seconds"] for run in finished])


def _shown(run):
    """A run's label, with its place among the repeats of a repeated one."""
    return run["label"] + (f" {run['repeat']}/{REPEATS[run['rows']]}" if "repeat" in run else "")


def _ratio(numerator, denominator):
    return (
        round(numerator["seconds"] / denominator["seconds"], 3)
        if numerator and denominator and denominator["seconds"]
        else None
    )


def ratios_and_verdicts(runs, comparisons, sizes):
    """The issue's figures and whether each target is met: job / floor per size, 100M / 10M, local[1] / local[2]."""
    targets = []
    for rows in sizes:
        limit = FLOOR_TARGETS.get(rows)
        if limit:
            value = _ratio(_find(runs, JOB, rows), _find(runs, "floor", rows))
            targets.append(
                (
                    f"job's work at most {limit:g}x the Spark floor's at {rows:,} rows",
                    value,
                    value is not None and value <= limit,
                    "x",
                )
            )
    if SCALE_ROWS in sizes:
        scale = _find(runs, JOB, SCALE_ROWS)
        targets.append(
            (
                f"job completes at {SCALE_ROWS:,} rows with the driver heap at {DRIVER_MEMORY}",
                "done" if scale else "not done",
                bool(scale),
                "",
            )
        )
        duckdb = _find(runs, "duckdb", SCALE_ROWS)
        if duckdb:
            value = _ratio(scale, duckdb)
            targets.append(
                (
                    f"job's work at {SCALE_ROWS:,} rows at most DuckDB's time for the same job on the same cores",
                    value,
                    value is not None and value <= 1.0,
                    "x",
                )
            )
        if CORES_ROWS in sizes:
            value = _ratio(scale, _find(runs, JOB, CORES_ROWS))
            targets.append(
                (
                    f"job's work {SCALE_ROWS:,} / {CORES_ROWS:,} rows at most {SCALE_RATIO:g}",
                    value,
                    value is not None and value <= SCALE_RATIO,
                    "",
                )
            )
    one, two = _find(runs, "spark local[1]", CORES_ROWS), _find(runs, "spark local[2]", CORES_ROWS)
    if one or two:
        value = _ratio(one, two)
        targets.append(
            (
                f"local[1] on one CPU / local[2] on two: work at {CORES_ROWS:,} rows at least {SPEED_UP:g}",
                value,
                value is not None and value >= SPEED_UP,
                "x",
            )
        )
    if comparisons:
        different = sum(
            comparison[table][key]
            for comparison in comparisons
            for table in ("decisions", "forecast")
            for key in ("missing", "different") + (("rank_different",) if table == "forecast" else ())
        )
        targets.append(
            ("outputs of every engine and master equal the job's", different, different == 0, " rows differ")
        )
    return [
        {
            "target": name,
            "measured": value,
            "unit": unit,
            "verdict": "n/a" if value is None else ("PASS" if ok else "FAIL"),
        }
        for name, value, ok, unit in targets
    ]


def print_report(runs, comparisons, verdicts, exchanges, out=sys.stdout):
    def number(value, digits=1):
        return "-" if value is None else f"{value:,.{digits}f}"

    header = ["rows", "run", "status", "work s", "JVM start s", "total s", "work / floor", "peak RSS MiB"]
    lines = []
    for run in runs:
        memory = run.get("jvm_peak_rss_mib") if run["engine"] in SPARK_ENGINES else run.get("python_peak_rss_mib")
        floor = _find(runs, "floor", run["rows"])
        lines.append(
            [
                f"{run['rows']:,}",
                _shown(run),
                run["status"] if run["status"] == "ok" else f"{run['status']}: {run.get('reason')}",
                number(run.get("seconds"), 2),
                number(run.get("session_seconds"), 2),
                number(run.get("total_seconds"), 2),
                number(_ratio(run, floor), 2) if run["status"] == "ok" and run["engine"] != "floor" else "-",
                number(memory, 0)
                + (" (JVM)" if run["engine"] in SPARK_ENGINES else " (Python)")
                + (
                    f", executors {number(run['executor_peak_rss_mib'], 0)}" if run.get("executor_peak_rss_mib") else ""
                ),
            ]
        )
    widths = [max(len(str(row[index])) for row in [header] + lines) for index in range(len(header))]
    print("| " + " | ".join(name.ljust(width) for name, width in zip(header, widths, strict=True)) + " |", file=out)
    print("|" + "|".join("-" * (width + 2) for width in widths) + "|", file=out)
    for row in lines:
        print(
            "| " + " | ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)) + " |", file=out
        )
    for rows in sorted({run["rows"] for run in runs if "repeat" in run}):
        job, floor = _find(runs, JOB, rows), _find(runs, "floor", rows)
        if job and floor and "repeats" in job and "repeats" in floor:
            print(
                f"{rows:,} rows, medians of {len(job['repeats'])} runs each: job {job['seconds']:.2f} s "
                f"({', '.join(f'{value:.2f}' for value in job['repeats'])}), floor {floor['seconds']:.2f} s "
                f"({', '.join(f'{value:.2f}' for value in floor['repeats'])}), job / floor {_ratio(job, floor)}",
                file=out,
            )
    for run in runs:
        if run["engine"] == "spark" and run["status"] == "ok":
            stages = ", ".join(
                f"{stage} {seconds:.1f}" for stage, seconds in run["phases"].items() if stage != "start Spark"
            )
            print(f"{_shown(run)} {run['rows']:,} rows: {stages}", file=out)
            if run.get("stage_peak_rss_mib"):
                peaks = ", ".join(f"{stage} {mib:,.0f}" for stage, mib in run["stage_peak_rss_mib"].items())
                print(f"{_shown(run)} {run['rows']:,} rows, peak JVM resident MiB per stage: {peaks}", file=out)
        if run["status"] != "ok":
            print(
                f"{_shown(run)} {run['rows']:,} rows {run['status']} after {run['process_seconds']:,.0f}s "
                f"({run.get('reason')})" + (f"; log {run['log']}" if run.get("log") else ""),
                file=out,
            )
    print(file=out)
    if exchanges:
        for name, before in EXCHANGES_BEFORE.items():
            after = exchanges.get(name, {})
            print(
                f"exchanges, {name}: before {before['shuffle']} shuffle + {before['broadcast']} broadcast "
                f"in {before['queries']} queries (commit {BEFORE_COMMIT}); now {after.get('shuffle')} shuffle "
                f"+ {after.get('broadcast')} broadcast in {after.get('queries')} queries",
                file=out,
            )
        print(file=out)
    for comparison in comparisons:
        decisions, forecast = comparison["decisions"], comparison["forecast"]
        print(
            f"{comparison['engine']} vs {comparison['reference']} at {comparison['rows']:,} rows: "
            f"decisions {decisions['compared']:,} compared, {decisions['missing']} missing, "
            f"{decisions['different']} different; forecast {forecast['compared']:,} compared, "
            f"{forecast['missing']} missing, {forecast['different']} different, "
            f"{forecast['rank_different']} ranked differently",
            file=out,
        )
    print(file=out)
    for verdict in verdicts:
        measured = "-" if verdict["measured"] is None else f"{verdict['measured']}{verdict['unit']}"
        print(f"{verdict['verdict']:4}  {verdict['target']}: {measured}", file=out)


def machine():
    import platform

    info = {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()}
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            info["cpu"] = next(
                (line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), None
            )
        with open("/proc/meminfo", encoding="ascii") as handle:
            info["memory_gib"] = round(int(handle.readline().split()[1]) / 2**20, 1)
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


def _runs_of(sizes, engines, cores, standalone):
    """The runs to make, in order: per size every engine (the job in local[*]); then the job in local[1] and local[2],
    and on the standalone cluster, at CORES_ROWS."""
    runs = []
    for rows in sizes:
        chosen = [engine for engine in ENGINES if engine in engines]
        repeats = REPEATS.get(rows, 1)
        # the job and the floor in turn, as often as REPEATS asks; then the other engines once
        for repeat in range(1, repeats + 1):
            for engine in [engine for engine in chosen if engine in SPARK_ENGINES]:
                label = JOB if engine == "spark" else engine
                run = {"engine": engine, "rows": rows, "master": "local[*]", "label": label}
                runs.append(dict(run, repeat=repeat) if repeats > 1 else run)
        runs += [
            {"engine": engine, "rows": rows, "master": None, "label": engine}
            for engine in chosen
            if engine not in SPARK_ENGINES
        ]
    if cores:
        # local[1] on one CPU: unpinned, its JIT compiler, garbage collector and Python driver take the second core.
        runs += [
            {"engine": "spark", "rows": CORES_ROWS, "master": "local[1]", "label": "spark local[1]", "cpus": 1},
            {"engine": "spark", "rows": CORES_ROWS, "master": "local[2]", "label": "spark local[2]", "cpus": 2},
            {"engine": "spark", "rows": CORES_ROWS, "master": "local[1]", "label": "spark local[1] unpinned"},
        ]
    if standalone:
        runs.append({"engine": "spark", "rows": CORES_ROWS, "master": "standalone", "label": "spark standalone"})
    return runs


def count_exchanges(progress):
    """The exchanges of the job's plans (decision timeline, forecast), counted in a Spark process of its own."""
    data = snapshot_data(SMALL_PLAN_ROWS, progress)
    out = os.path.join(BUILD, "pipeline-plans")
    process = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--plans", "--data", data, "--out", out],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    line = next((line for line in process.stdout.splitlines() if line.startswith("RESULT ")), None)
    if line is None:
        progress(f"counting exchanges failed: {_error_lines(process.stderr)}")
        return None
    return json.loads(line[len("RESULT ") :])


def main():
    # the docstring's first paragraph, the summary, in one line
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n", 1)[0].split()))
    parser.add_argument(
        "--rows",
        type=int,
        nargs="+",
        default=list(DEFAULT_ROWS),
        help="snapshot rows per size (default: 10k 1M 10M 100M)",
    )
    parser.add_argument(
        "--engines", nargs="+", choices=ENGINES, default=list(ENGINES), help="engines to run (default: all)"
    )
    parser.add_argument(
        "--no-cores", action="store_true", help=f"skip the local[1] / local[2] runs at {CORES_ROWS:,} rows"
    )
    parser.add_argument(
        "--no-standalone",
        action="store_true",
        help=f"skip the run on a standalone Spark cluster at {CORES_ROWS:,} rows",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=RUN_TIME_LIMIT,
        help="seconds a pandas or DuckDB run may take before it is stopped (default 1200)",
    )
    parser.add_argument(
        "--spark-time-limit",
        type=float,
        default=SPARK_TIME_LIMIT,
        help="seconds a Spark run may take before it is stopped (default 3600)",
    )
    parser.add_argument(
        "--json", default=RESULT_FILE, help="where to write every figure (default build/bench/pipeline_bench.json)"
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=(
            "a Spark setting for the job and floor runs, on top of the job's session settings "
            "(repeatable; for experiments)"
        ),
    )
    parser.add_argument("--worker", choices=("pandas", "duckdb"), help=argparse.SUPPRESS)
    parser.add_argument("--plans", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    spark_conf = dict(setting.split("=", 1) for setting in args.spark_conf if "=" in setting)
    if len(spark_conf) != len(args.spark_conf):
        parser.error("--spark-conf takes KEY=VALUE")
    if args.worker:
        worker(args.worker, args.data, args.out)
        return 0
    if args.plans:
        plan_worker(args.data, args.out)
        return 0

    def progress(text):
        print(f"[pipeline_bench] {text}", file=sys.stderr, flush=True)

    sizes = sorted(set(args.rows))
    cores = not args.no_cores and "spark" in args.engines
    standalone = not args.no_standalone and "spark" in args.engines
    if cores or standalone:
        sizes = sorted(set(sizes) | {CORES_ROWS})
    exchanges = count_exchanges(progress)
    runs = []
    for run in _runs_of(sizes, args.engines, cores, standalone):
        data = snapshot_data(run["rows"], progress)
        limit = args.spark_time_limit if run["engine"] in SPARK_ENGINES else args.time_limit
        # the cluster runs only for its own run: idle daemons disturb no other
        with standalone_cluster(progress) if run["master"] == "standalone" else contextlib.nullcontext() as cluster:
            if cluster:
                run["master"] = cluster.master_url
            runs.append(measure(run, data, limit, progress, spark_conf, cluster))
    comparisons = compare_outputs(runs, progress)
    verdicts = ratios_and_verdicts(runs, comparisons, sizes)
    print_report(runs, comparisons, verdicts, exchanges)
    settings = {
        "driver_memory": DRIVER_MEMORY,
        "min_available_ratio": MIN_AVAILABLE_RATIO,
        "spark_conf": spark_conf,
        "job": JOB_ARGUMENTS,
        "time_limit_seconds": args.time_limit,
        "spark_time_limit_seconds": args.spark_time_limit,
        "fleets": {rows: fleet_parameters(rows) for rows in sizes},
    }
    document = {
        "machine": machine(),
        "settings": settings,
        "runs": runs,
        "comparisons": comparisons,
        "targets": verdicts,
        "exchanges": {"before": EXCHANGES_BEFORE, "before_commit": BEFORE_COMMIT, "now": exchanges},
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2)
        handle.write("\n")
    progress(f"wrote {os.path.relpath(os.path.abspath(args.json), ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
