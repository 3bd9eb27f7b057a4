"""The SparkSession the pipeline runs in."""

import contextlib
import os
import pathlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark is imported when a session is made: --help and input checks need no JVM
    from pyspark.sql import SparkSession

# Executors run the same Python as the driver; a local master must not bind to the machine's external interface.
LOOPBACK = "127.0.0.1"
# The driver's log configuration: log lines on stderr, stdout left to the job's result (see the file).
LOG_CONFIGURATION = pathlib.Path(__file__).resolve().with_name("log4j2.properties")
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
EXECUTOR_JAVA_OPTIONS = "spark.executor.extraJavaOptions"
# Spark compiles each stage into one Java method; the record checks make it longer than the 8,000 bytes of
# bytecode HotSpot compiles by default, and left to the bytecode interpreter the read runs three times slower.
JIT_OPTIONS = "-XX:-DontCompileHugeMethods"


def under_spark_submit() -> bool:
    """True when spark-submit launched this Python (it hands the driver a gateway to its JVM)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(
    master: str | None = None,
    app_name: str = "headroom-pipeline",
    driver_memory: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> "SparkSession":
    """A SparkSession for ``master``: UTC, quiet logs, and loopback-only networking for a local master.

    ``conf`` adds or overrides Spark settings (``{"spark.executor.memory": "4g"}``). Any master URL works; only
    ``local`` masters get the loopback binding, since a cluster's executors must reach the driver. Without a
    master: spark-submit's when it launched us, else ``local[*]``. A session that is already running (a caller's:
    tests, notebooks) is returned as it is.
    """
    from pyspark.sql import SparkSession  # imported here so that --help and input checks need no JVM

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    explicit = master is not None
    if master is None:
        master = _spark_submit_master() if under_spark_submit() else "local[*]"
    local = master is not None and master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    builder = SparkSession.builder.appName(app_name)
    if explicit or not under_spark_submit():
        builder = builder.master(master)
    settings = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.parquet.compression.codec": "snappy",
        # Parquet's standard timestamp (Spark's default is the legacy INT96): cheaper to write, and readers can skip
        # row groups by its statistics.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # PySpark records the Python call site of every column function for error messages, five calls into the JVM
        # each: half the time it takes to build the decision timeline's plan. The job reports failures by stage.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        # The decision timeline's held factor is one window with two running maxima per step (41 columns at steps of
        # 0.05): above Spark's 25 fields its plan's description is cut with a warning on stderr at every run.
        "spark.sql.debug.maxToStringFields": "200",
    }
    if local:
        # Also under spark-submit: the driver's listeners start with the SparkContext, in getOrCreate below.
        settings.update({"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK})
    if driver_memory:
        settings["spark.driver.memory"] = driver_memory
    settings.update(conf or {})
    settings[DRIVER_JAVA_OPTIONS] = _with_log_configuration(settings.get(DRIVER_JAVA_OPTIONS))
    settings[EXECUTOR_JAVA_OPTIONS] = _ours_first(JIT_OPTIONS, settings.get(EXECUTOR_JAVA_OPTIONS))
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    # Decided on the session's own master: a local run gets two shuffle partitions per thread (Spark's 200 would
    # mostly be task overhead on a few cores); a setting given with --conf, to spark-submit or in its defaults stands
    # (all of them are in the context's configuration, ``conf`` included).
    context = session.sparkContext
    # A started context always has a master; pyspark types it Optional, as it reads it from the configuration.
    local_master = context.master.startswith("local")  # type: ignore[union-attr]
    if not context.getConf().contains("spark.sql.shuffle.partitions"):
        partitions = max(4, 2 * context.defaultParallelism) if local_master else 200
        session.conf.set("spark.sql.shuffle.partitions", str(partitions))
    if local_master and not context.getConf().contains("spark.sql.files.minPartitionNum"):
        # Input files are read in at least two tasks per thread: Spark's default, one per thread, packs files into
        # as few tasks as their size allows, and three tasks on two threads leave one thread idle for a third of
        # every read.
        session.conf.set("spark.sql.files.minPartitionNum", str(2 * context.defaultParallelism))
    return session


def _with_log_configuration(java_options):
    """The driver's Java options with the job's log configuration (as a URI: no spaces to split on) and JIT
    setting first, so that a -Dlog4j2.configurationFile or -XX option of the caller's, later on the line, still wins."""
    return _ours_first(f"-Dlog4j2.configurationFile={LOG_CONFIGURATION.as_uri()} {JIT_OPTIONS}", java_options)


def _ours_first(ours, java_options):
    return f"{ours} {java_options}" if java_options else ours


def _spark_submit_master():
    """The master spark-submit was given (its JVM is running; its settings are readable before a context exists)."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # pylint: disable=protected-access  # connects to spark-submit's JVM
    return SparkConf().get("spark.master", None)


@contextlib.contextmanager
def global_window_warnings_quiet(session: "SparkSession") -> Iterator[None]:
    """Around a deliberate window over a whole (small) frame, such as the forecast's ranking of all volumes: Spark
    warns about every such window, and the job's output would be those warnings. Elsewhere the warning stays on,
    since an unintended global window is exactly the slowdown it points at."""
    jvm = session.sparkContext._jvm  # pylint: disable=protected-access
    # A running session's context has its JVM view; pyspark types the attribute Optional (None before any context).
    log4j = jvm.org.apache.logging.log4j  # type: ignore[union-attr]
    configurator, level = log4j.core.config.Configurator, log4j.Level
    logger = "org.apache.spark.sql.execution.window.WindowExec"
    configurator.setLevel(logger, level.ERROR)
    try:
        yield
    finally:
        configurator.setLevel(logger, level.WARN)


# The settings the decision timeline's plan is made for (decisions.decision_timeline), which timeline_settings applies
# around the query that runs it.
TIMELINE_SETTINGS = {
    # Spark's hash aggregation of objects (the violation lists per instant) gives up after 128 groups in a task and
    # falls back to sorting what it has hashed so far, spilling as it goes (a third of the timeline's time at 10 million
    # rows); sorting the rows by group once and aggregating them in order costs a fraction of that. Elsewhere the hash
    # aggregation stays, as it wins for few groups.
    "spark.sql.execution.useObjectHashAggregateExec": "false",
    # The messages are hash-partitioned by cluster once; the windows over each broker's messages find them in place.
    # With true, Spark would shuffle them again by broker for those windows: the same rows, at the cost of a shuffle.
    "spark.sql.requireAllClusterKeysForDistribution": "false",
    # The timeline is written partitioned by policy: with a writer open per policy in each task, the rows are written
    # as they come (Spark would otherwise sort every row by policy first). More values than writers fall back to
    # that sort.
    "spark.sql.maxConcurrentOutputFileWriters": "2",
}


@contextlib.contextmanager
def timeline_settings(session: "SparkSession") -> Iterator[None]:
    """Around the query that runs a decision timeline (its write or collect): TIMELINE_SETTINGS, whatever the session
    has."""
    with settings_applied(session, TIMELINE_SETTINGS):
        yield


@contextlib.contextmanager
def settings_applied(session: "SparkSession", settings: Mapping[str, str]) -> Iterator[None]:
    """Spark SQL ``settings`` in ``session`` within the block, and the session's own back afterwards."""
    previous: dict[str, str | None] = {key: session.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        session.conf.set(key, value)
    try:
        yield
    finally:
        for key, earlier in previous.items():
            if earlier is None:
                session.conf.unset(key)
            else:
                session.conf.set(key, earlier)


def _python():
    import sys

    return sys.executable
