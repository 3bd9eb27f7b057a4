"""Run by tests/unit/test_lanes.py as a pytest run of its own (not collected otherwise): a test that passes and leaves
a process behind that looks like a Kafka node, as a fixture would whose teardown never ran. Its pid goes to the file
named by PROBE_PID_FILE."""

import os
import subprocess
import sys


def test_passes_and_leaves_a_node_running():
    process = subprocess.Popen(  # pylint: disable=consider-using-with  # left running on purpose
        [sys.executable, "-c", "import time; time.sleep(300)", "kafka.Kafka", "leftover.properties"],
        start_new_session=True,
    )
    with open(os.environ["PROBE_PID_FILE"], "w", encoding="utf-8") as handle:
        handle.write(str(process.pid))
