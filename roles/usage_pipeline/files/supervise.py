# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the pipeline job with its passwords and a time limit: ``python supervise.py SECONDS -- COMMAND...``.

Passwords arrive as a JSON object on standard input and go into the job's environment only: not on a command line,
where any user's ps shows them, and not in the task's environment, which ansible-playbook -vvv prints. The job runs
in a process group of its own, so at the time limit (0: none) the whole group stops, the job with its Spark JVM and
Python workers, not just the process started first. Exit status: the job's, or 124 when it was stopped.
"""

import json
import os
import signal
import subprocess
import sys

EXIT_STOPPED = 124  # as coreutils timeout
GRACE_SECONDS = 30  # between SIGTERM and SIGKILL: Spark stops its executors on SIGTERM


def stop(job):
    """SIGTERM to the job's process group, SIGKILL to whatever is left after the grace period."""
    try:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    except ProcessLookupError:
        pass


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        print("usage: supervise.py SECONDS -- COMMAND...", file=sys.stderr)
        return 2
    limit = float(argv[1])
    text = sys.stdin.read()
    secrets = json.loads(text) if text.strip() else {}
    job = subprocess.Popen(argv[3:], env=dict(os.environ, **secrets), stdin=subprocess.DEVNULL, start_new_session=True)

    def forward(signum, frame):  # the task itself was stopped: stop the job too, not only this process
        stop(job)
        sys.exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, forward)
    try:
        return job.wait(timeout=limit if limit > 0 else None)
    except subprocess.TimeoutExpired:
        print(
            "usage_pipeline: the job ran longer than usage_pipeline_timeout ({0:g} seconds) and was stopped".format(
                limit
            ),
            file=sys.stderr,
            flush=True,
        )
        stop(job)
        return EXIT_STOPPED


if __name__ == "__main__":
    sys.exit(main(sys.argv))
