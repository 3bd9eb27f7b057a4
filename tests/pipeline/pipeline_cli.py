"""The pipeline's command line as a user runs it: ``python -m headroom_pipeline ARGS`` with the checkout on the path."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_cli(*args, env=None):
    """The finished process (stdout, stderr, return code); ``env``: variables added to this process's environment."""
    environment = dict(os.environ, PYTHONPATH=ROOT, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "headroom_pipeline", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
        check=False,
    )
