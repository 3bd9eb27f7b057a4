"""Small Java programs of the launcher (``kafka_testbed/java/*.java``), compiled once into ``build/java-tools/``.

They need ``javac`` (a JDK); on a runtime-only Java the launcher does the same work with Kafka's own tools, one JVM
per node, and ``tool_classpath`` answers None.
"""

import hashlib
import os
import shutil
import subprocess
import tempfile

from kafka_testbed.kafka_libs import BUILD

SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java")


def _javac(java):
    """``javac`` next to ``java`` (the JDK it belongs to), else on PATH."""
    beside = os.path.join(os.path.dirname(os.path.realpath(java)), "javac")
    return beside if os.access(beside, os.X_OK) else shutil.which("javac")


def tool_classpath(java, name):
    """The directory holding the compiled class ``name``, compiling ``kafka_testbed/java/<name>.java`` the first time
    (keyed by the source's digest, so an edited source is compiled again); None without a compiler."""
    source = os.path.join(SOURCES, f"{name}.java")
    with open(source, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()[:16]
    target = os.path.join(BUILD, "java-tools", f"{name}-{digest}")
    if os.path.exists(os.path.join(target, f"{name}.class")):
        return target
    javac = _javac(java)
    if not javac:
        return None
    os.makedirs(os.path.dirname(target), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f"{name}-", dir=os.path.dirname(target))
    result = subprocess.run(
        [javac, "--release", "17", "-d", staging, source], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        return None
    try:
        os.rename(staging, target)
    except OSError:  # another process compiled it first
        shutil.rmtree(staging, ignore_errors=True)
    return target
