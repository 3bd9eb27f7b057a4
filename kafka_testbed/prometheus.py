"""A real Prometheus server (Debian's package) beside the test cluster: started on a free port with the scrape targets
and rule files given, scraping and evaluating every ``interval`` (1 s unless told), read through its HTTP API, and
stopped when the ``with`` block ends, also when what runs inside it fails."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

from kafka_testbed import lanes

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PrometheusServer:
    """``jobs``: {job name: ["host:port", ...]} scraped at /metrics; ``rule_files``: paths of rule files."""

    def __init__(self, jobs, rule_files=(), interval="1s", labels=None):
        self.jobs, self.rule_files, self.interval, self.labels = jobs, list(rule_files), interval, labels or {}
        self.directory = None  # made on entering: a server its lane refuses leaves no directory behind
        self.port = free_port()
        self.process = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        lanes.require_lane(lanes.PROMETHEUS)
        self.directory = tempfile.mkdtemp(prefix="prometheus-")
        config = {
            "global": {"scrape_interval": self.interval, "evaluation_interval": self.interval},
            "rule_files": self.rule_files,
            "scrape_configs": [
                {
                    "job_name": job,
                    "static_configs": [{"targets": targets, "labels": self.labels}],
                }
                for job, targets in self.jobs.items()
            ],
        }
        path = os.path.join(self.directory, "prometheus.yml")
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle)
        self.log = open(os.path.join(self.directory, "prometheus.log"), "w", encoding="utf-8")  # noqa: SIM115
        self.process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={path}",
                f"--storage.tsdb.path={os.path.join(self.directory, 'data')}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        try:
            self._wait_ready(60)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)
        return False

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with status {self.process.returncode}: {self.log_text()}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"prometheus not ready within {timeout} s: {self.log_text()}")

    def log_text(self):
        self.log.flush()
        with open(self.log.name, encoding="utf-8", errors="replace") as handle:
            return handle.read()[-4000:]

    def api(self, path, **params):
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=10) as answer:
            body = json.load(answer)
        if body.get("status") != "success":
            raise RuntimeError(f"prometheus {path}: {body}")
        return body["data"]

    def query(self, expr):
        """The instant vector (or scalar) of ``expr`` now: a list of {metric, value}."""
        return self.api("query", query=expr)["result"]

    def alerts(self, state=None):
        """The alerts Prometheus holds (pending and firing), optionally only those in ``state``."""
        found = self.api("alerts")["alerts"]
        return [alert for alert in found if state is None or alert["state"] == state]

    def targets_up(self):
        """{job: number of targets whose last scrape succeeded}."""
        up = {}
        for target in self.api("targets")["activeTargets"]:
            if target["health"] == "up":
                up[target["labels"]["job"]] = up.get(target["labels"]["job"], 0) + 1
        return up
