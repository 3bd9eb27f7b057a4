"""kafka-storage format for the nodes of a real test cluster, in one JVM when it can be.

Starting a JVM and loading Kafka's classes costs more than formatting a node, and a test cluster formats four nodes at
once on two cores: ``kafka_testbed/java/FormatStorage.java`` runs Kafka's own StorageTool for every node in one JVM. It
needs a compiler (a JDK) the first time; on a runtime-only Java each node gets its own StorageTool JVM.
"""

import os
import subprocess

from kafka_testbed.java_tools import tool_classpath
from kafka_testbed.nodes import ClusterError, is_stack_frame

# Kafka's command-line tools run for a second: C1 only and the serial collector start faster, a small heap suffices.
TOOL_JVM_OPTIONS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
FORMATTED = "@@formatted "


def format_storage(libs, entries, args, jvm_options=()):
    """Run ``kafka-storage <args> -c <server.properties>`` for every node entry; raises ClusterError naming each node
    Kafka refused and its reason."""
    options = [*TOOL_JVM_OPTIONS, *libs.sharing_options(), *jvm_options]
    tools = tool_classpath(libs.java, "FormatStorage")
    if tools:
        command = [
            libs.java,
            *options,
            "-cp",
            libs.classpath + os.pathsep + tools,
            "FormatStorage",
            *args,
            "--",
            *(entry["properties"] for entry in entries),
        ]
        outcomes = formatter_outcomes(_run(command), entries)
    else:
        processes = [
            (
                entry,
                subprocess.Popen(  # pylint: disable=consider-using-with  # waited for below
                    [
                        libs.java,
                        *options,
                        "-cp",
                        libs.classpath,
                        "kafka.tools.StorageTool",
                        *args,
                        "-c",
                        entry["properties"],
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    text=True,
                ),
            )
            for entry in entries
        ]
        outcomes = [
            (entry, process.returncode, output)
            for entry, process, output in (
                (entry, process, process.communicate(timeout=120)[0]) for entry, process in processes
            )
        ]
    failures = []
    for entry, returncode, output in outcomes:
        if returncode != 0:
            # The reason is the exception's message; its stack frames would push it out of the excerpt.
            reason = "\n".join(line for line in output.strip().splitlines() if not is_stack_frame(line))
            failures.append(f"node {entry['id']}: {reason[-800:]}")
    if failures:
        raise ClusterError("kafka-storage format failed:\n" + "\n".join(failures))


def _run(command, timeout=120):
    result = subprocess.run(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
        check=False,
    )
    return result.returncode, result.stdout


def formatter_outcomes(result, entries):
    """(entry, exit code, output) per node from the formatter's (exit code, output): each node's lines end with its
    marker line; a node the formatter never reached gets the formatter's own exit code and last lines."""
    returncode, output = result
    by_config = {entry["properties"]: entry for entry in entries}
    outcomes, lines = {}, []
    for line in output.splitlines():
        if line.startswith(FORMATTED):
            code, _space, config = line[len(FORMATTED) :].partition(" ")
            if config in by_config:
                outcomes[config] = (by_config[config], int(code), "\n".join(lines))
            lines = []
        else:
            lines.append(line)
    leftover = "\n".join(lines)
    return [outcomes.get(entry["properties"], (entry, returncode or 1, leftover)) for entry in entries]
