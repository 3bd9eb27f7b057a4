"""A Spark standalone cluster on loopback, from the Spark that pyspark ships: one master and N workers, each its
own JVM.

    with standalone_cluster(workdir, workers=2) as cluster:
        subprocess.run([cluster.spark_submit, "--master", cluster.master_url, ...], env=cluster.env)

Every process listens on 127.0.0.1 only and logs to a file in ``workdir`` (master.log, worker-N.log; the executors'
logs are in worker-N/<app id>/<executor id>/stderr). The cluster is up when the master's JSON status lists every
worker ALIVE; that is polled, with a time limit whose error quotes the end of the logs. On leaving the block, every
process of the cluster and their children (the executors) are stopped and waited for, also after an error.

Needs an installed pyspark and the project's kafka_testbed (its process helpers); tests and the benchmark import it.
"""

import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from kafka_testbed import lanes
from kafka_testbed.nodes import descendants, process_alive

LOOPBACK = "127.0.0.1"
START_TIMEOUT = 180.0  # seconds for the master and every worker to be up, on a busy two-core machine
STOP_TIMEOUT = 30.0  # seconds a process has to end after SIGTERM before it is killed
POLL_INTERVAL = 0.25
LOG_TAIL_LINES = 40


class ClusterError(RuntimeError):
    """The cluster did not start; the message quotes the end of its logs."""


@dataclasses.dataclass
class StandaloneCluster:
    master_url: str  # spark://127.0.0.1:PORT, as the master reports it
    web_url: str  # http://127.0.0.1:PORT, the master's web UI (JSON status at /json/)
    spark_home: str
    spark_submit: str
    env: dict  # the environment to run spark-submit with
    workdir: str
    worker_dirs: list  # each worker's --work-dir: <app id>/<executor id>/stderr holds an executor's log
    logs: list = dataclasses.field(default_factory=list)
    processes: list = dataclasses.field(default_factory=list)  # the master's, then the workers'

    def worker_pids(self):
        """The workers' process ids (their executors are their child processes)."""
        return [process.pid for process in self.processes[1:]]

    def status(self, timeout=10.0):
        """The master's JSON status: workers, active and completed applications."""
        return master_status(self.web_url, timeout)

    def log_tails(self, lines=LOG_TAIL_LINES):
        return _tails(self.logs, lines)


def spark_home():
    """The Spark distribution inside the installed pyspark package (bin/spark-class, bin/spark-submit, jars/)."""
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def free_port():
    """A TCP port free on loopback now (the master may still find it taken and move on: its own URL is read back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def cluster_environment(home, conf_dir):
    """The environment of the daemons and of spark-submit: this Spark, loopback only, no site configuration."""
    env = dict(os.environ)
    for name in (
        "SPARK_MASTER_PORT",
        "SPARK_MASTER_WEBUI_PORT",
        "SPARK_WORKER_PORT",
        "SPARK_WORKER_WEBUI_PORT",
        "SPARK_WORKER_INSTANCES",
        "SPARK_WORKER_CORES",
        "SPARK_WORKER_MEMORY",
        "SPARK_WORKER_OPTS",
        "SPARK_MASTER_OPTS",
        "SPARK_DAEMON_JAVA_OPTS",
        "PYSPARK_GATEWAY_PORT",
        "PYSPARK_GATEWAY_SECRET",
        "PYSPARK_DRIVER_PYTHON",
    ):
        env.pop(name, None)
    env.update(
        {
            "SPARK_HOME": home,
            "SPARK_CONF_DIR": conf_dir,  # an empty directory: no spark-env.sh or spark-defaults.conf of the machine
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOCAL_HOSTNAME": LOOPBACK,
            "SPARK_MASTER_HOST": LOOPBACK,
            "SPARK_PUBLIC_DNS": LOOPBACK,
            "SPARK_DAEMON_MEMORY": "512m",
            "PYSPARK_PYTHON": sys.executable,
        }
    )
    return env


@contextlib.contextmanager
def standalone_cluster(workdir, workers=2, cores_per_worker=1, worker_memory="1g", timeout=START_TIMEOUT):
    """Start a master and ``workers`` workers in ``workdir``; yield a StandaloneCluster; stop them all on exit."""
    lanes.require_lane(lanes.SPARK_STANDALONE)
    workdir = os.path.abspath(str(workdir))
    home = spark_home()
    conf_dir = os.path.join(workdir, "conf")
    os.makedirs(conf_dir, exist_ok=True)
    env = cluster_environment(home, conf_dir)
    spark_class = os.path.join(home, "bin", "spark-class")
    cluster = StandaloneCluster(
        master_url="",
        web_url="",
        spark_home=home,
        spark_submit=os.path.join(home, "bin", "spark-submit"),
        env=env,
        workdir=workdir,
        worker_dirs=[],
    )
    processes = cluster.processes
    deadline = time.monotonic() + timeout
    try:
        web_port, port = free_port(), free_port()
        cluster.web_url, cluster.master_url = f"http://{LOOPBACK}:{web_port}", f"spark://{LOOPBACK}:{port}"
        master_log = os.path.join(workdir, "master.log")
        cluster.logs.append(master_log)
        processes.append(
            _start(
                [
                    spark_class,
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    LOOPBACK,
                    "--port",
                    str(port),
                    "--webui-port",
                    str(web_port),
                ],
                env,
                master_log,
            )
        )
        # The workers start with the master (each JVM takes seconds to start) and retry until it answers.
        workers_started = [
            _start_worker(cluster, spark_class, env, index, cores_per_worker, worker_memory) for index in range(workers)
        ]
        processes.extend(workers_started)
        status = _wait_for(
            cluster, processes, deadline, lambda status: status.get("status") == "ALIVE", "the master to be ALIVE"
        )
        if status["url"] != cluster.master_url:  # its port was taken meanwhile and it moved on: the workers follow
            stop(workers_started)
            processes[1:] = []
            cluster.master_url = status["url"]
            processes.extend(
                _start_worker(cluster, spark_class, env, index, cores_per_worker, worker_memory)
                for index in range(workers)
            )
        _wait_for(
            cluster,
            processes,
            deadline,
            lambda status: _alive_workers(status) >= workers,
            f"{workers} workers to be ALIVE",
        )
        yield cluster
    finally:
        stop(processes)


def _start_worker(cluster, spark_class, env, index, cores, memory):
    work_dir = os.path.join(cluster.workdir, f"worker-{index + 1}")
    os.makedirs(work_dir, exist_ok=True)
    log = os.path.join(cluster.workdir, f"worker-{index + 1}.log")
    if work_dir not in cluster.worker_dirs:
        cluster.worker_dirs.append(work_dir)
        cluster.logs.append(log)
    return _start(
        [
            spark_class,
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            LOOPBACK,
            "--port",
            str(free_port()),
            "--webui-port",
            str(free_port()),
            "--cores",
            str(cores),
            "--memory",
            memory,
            "--work-dir",
            work_dir,
            cluster.master_url,
        ],
        env,
        log,
    )


def master_status(web_url, timeout=10.0):
    with urllib.request.urlopen(f"{web_url}/json/", timeout=timeout) as response:
        return json.loads(response.read().decode("utf-8"))


def _alive_workers(status):
    return sum(1 for worker in status.get("workers") or [] if worker.get("state") == "ALIVE")


def _start(command, env, log):
    """One daemon in its own process group (so that it and its children can be signalled together), logging to
    ``log``."""
    with open(log, "ab") as handle:
        return subprocess.Popen(
            command, env=env, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )


def _wait_for(cluster, processes, deadline, ready, what):
    """Poll the master's JSON status until ``ready(status)``; fail with the logs' ends when a daemon exits or time
    runs out."""
    last_error = None
    while True:
        for process in processes:
            if process.poll() is not None:
                raise ClusterError(
                    f"a Spark daemon exited with status {process.returncode} while waiting for {what} "
                    f"({' '.join(process.args[1:3])})\n{cluster.log_tails()}"
                )
        try:
            status = master_status(cluster.web_url, timeout=5.0)
            if ready(status):
                return status
            figures = {key: status.get(key) for key in ("status", "aliveworkers", "workers")}
            last_error = f"status so far: {json.dumps(figures)[:2000]}"
        except (OSError, ValueError) as exc:  # not listening yet, or a partial answer
            last_error = f"{type(exc).__name__}: {exc}"
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out waiting for {what} ({last_error})\n{cluster.log_tails()}")
        time.sleep(POLL_INTERVAL)


def stop(processes, timeout=STOP_TIMEOUT):
    """SIGTERM to each daemon's process group and every descendant, then SIGKILL to whatever is left; wait for all."""
    targets = set()
    for process in processes:
        if process.poll() is None:
            targets.add(process.pid)
            targets.update(descendants(process.pid))
    groups = {process.pid for process in processes}
    _signal(groups, targets, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    while time.monotonic() < deadline and any(process_alive(pid) for pid in targets):
        time.sleep(POLL_INTERVAL)
    _signal(groups, {pid for pid in targets if process_alive(pid)}, signal.SIGKILL)
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass


def _signal(groups, pids, number):
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, number)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, number)


def _tails(paths, lines):
    parts = []
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                tail = handle.readlines()[-lines:]
        except OSError as exc:
            tail = [f"(cannot read: {exc})\n"]
        parts.append(f"--- {os.path.basename(path)} (last {len(tail)} lines) ---\n{''.join(tail)}")
    return "\n".join(parts)
