"""What the benchmarks' ``ansible-playbook`` runs share: the link that makes the repository the installed collection,
the environment they run in and the command of a play on localhost; a timed playbook run, the cluster's health as the
collection judges it, and a measurement in a scratch directory that Ctrl-C or SIGTERM interrupts cleanly."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def ensure_collection_link(root, collections):
    """Link ``root`` as collections/ansible_collections/headroom/kafka unless that link exists: with ``collections`` as
    Ansible's collections path (or on sys.path) the repository is the collection headroom.kafka."""
    namespace = os.path.join(collections, "ansible_collections", "headroom")
    os.makedirs(namespace, exist_ok=True)
    link = os.path.join(namespace, "kafka")
    if not os.path.islink(link):
        os.symlink(root, link)


def playbook_environment(collections, **extra):
    """os.environ with ``collections`` as Ansible's collections path, no colour or localhost warnings, no
    ANSIBLE_CONFIG of the caller's, and ``extra``."""
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=collections,
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        ANSIBLE_NOCOLOR="1",
        **extra,
    )
    env.pop("ANSIBLE_CONFIG", None)
    return env


def localhost_play(playbook):
    """The command that runs ``playbook`` on localhost, with this Python as the modules' interpreter."""
    return [PLAYBOOK, "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable, playbook]


def write_yaml(path, data):
    """``data`` as YAML at ``path``; the path."""
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(data, handle)
    return path


def timed_playbook(command, env, workdir, timeout, label):
    """Run ``command`` (an ansible-playbook command line) in ``workdir``: (wall seconds, the completed process); a
    RuntimeError naming ``label`` with the output's tail when it fails."""
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=workdir, capture_output=True, text=True, timeout=timeout, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{label} failed ({result.returncode}):\n{result.stdout[-6000:]}{result.stderr[-2000:]}")
    return elapsed, result


def cluster_healthy(bootstrap_servers, expected_brokers):
    """Whether the cluster is healthy as the collection judges it (every expected broker active, no under-replicated
    partition); False while it cannot be asked. Needs the collection importable (``ensure_collection_link``)."""
    from ansible_collections.headroom.kafka.plugins.module_utils import health  # pylint: disable=import-outside-toplevel
    from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import (  # pylint: disable=import-outside-toplevel
        KafkaAdapter,
        KafkaAdapterError,
    )

    adapter = KafkaAdapter(bootstrap_servers)
    try:
        return health.judge(adapter.describe_cluster(), adapter.partitions(), list(expected_brokers))["healthy"]
    except KafkaAdapterError:
        return False
    finally:
        adapter.close()


def wait_healthy(bootstrap_servers, expected_brokers, timeout, interval=0.05):
    """Seconds until ``cluster_healthy``, polled every ``interval`` s; a RuntimeError after ``timeout`` s."""
    started = time.perf_counter()
    while not cluster_healthy(bootstrap_servers, expected_brokers):
        if time.perf_counter() - started > timeout:
            raise RuntimeError(f"the cluster was not healthy within {timeout} s")
        time.sleep(interval)
    return time.perf_counter() - started


def progress(text):
    """A progress line on stderr, at once."""
    print(text, file=sys.stderr, flush=True)


def without_interrupts(stop):
    """``stop()`` with Ctrl-C and SIGTERM ignored until it is done, so that no node is left behind."""
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        stop()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _terminate(signum, frame):
    raise KeyboardInterrupt(f"signal {signum} at line {frame.f_lineno if frame else '?'}")


def measure_in_scratch_dir(measure, prefix):
    """``measure(workdir)`` in a new temporary directory (``prefix``), removed afterwards, with SIGTERM taken as
    Ctrl-C; its figures, or None when interrupted."""
    signal.signal(signal.SIGTERM, _terminate)
    workdir = tempfile.mkdtemp(prefix=prefix)
    try:
        return measure(workdir)
    except KeyboardInterrupt:
        progress("interrupted")
        return None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
