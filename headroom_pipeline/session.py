"""The SparkSession the pipeline runs in."""

import os

# Executors run the same Python as the driver; a local master must not bind to the machine's external interface.
LOOPBACK = "127.0.0.1"


def under_spark_submit():
    """True when spark-submit launched this Python (it hands the driver a gateway to its JVM)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(master=None, app_name="headroom-pipeline", driver_memory=None, conf=None):
    """A SparkSession for ``master``: UTC, quiet logs, and loopback-only networking for a local master.

    ``conf`` adds or overrides Spark settings (``{"spark.executor.memory": "4g"}``). Any master URL works; only
    ``local`` masters get the loopback binding, since a cluster's executors must reach the driver. Without a
    master: spark-submit's when it launched us, else ``local[*]``.
    """
    from pyspark.sql import SparkSession  # imported here so that --help and input checks need no JVM

    if master is None and not under_spark_submit():
        master = "local[*]"
    local = master is not None and master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    settings = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.parquet.compression.codec": "snappy",
        "spark.driver.extraJavaOptions": "-Dlog4j2.level=WARN",
    }
    if local:
        settings.update({"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK})
    if driver_memory:
        settings["spark.driver.memory"] = driver_memory
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    _quiet_global_window_warning(session)
    # Decided on the session's own master, which spark-submit may have set: a local run gets few shuffle partitions
    # (Spark's 200 would mostly be task overhead on a few cores); a setting given by the caller or spark-submit stands.
    if "spark.sql.shuffle.partitions" not in (conf or {}) and not session.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        running_local = session.sparkContext.master.startswith("local")
        session.conf.set("spark.sql.shuffle.partitions", str(local_shuffle_partitions()) if running_local else "200")
    return session


def _quiet_global_window_warning(session):
    """The forecast ranks all volumes in one window on purpose (one row per volume, a few thousand rows); Spark warns
    about every such window, which on a normal run would be the only lines in the job's output besides its progress."""
    try:
        jvm = session.sparkContext._jvm  # pylint: disable=protected-access
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            "org.apache.spark.sql.execution.window.WindowExec", jvm.org.apache.logging.log4j.Level.ERROR)
    except Exception:  # pylint: disable=broad-exception-caught
        pass  # a session without a local JVM gateway (Spark Connect) keeps Spark's logging as it is


def local_shuffle_partitions():
    return max(4, 2 * (os.cpu_count() or 2))


def _python():
    import sys

    return sys.executable
