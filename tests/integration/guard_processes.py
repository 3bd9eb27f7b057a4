"""The guard as its service runs it, a process of its own: started in a session of its own (so that a stop reaches
nothing else) and stopped with SIGTERM, its stderr returned."""

import signal
import subprocess
import sys

from test_integration_targets import ROOT


def start_guard(*args, **popen):
    """``python -m headroom_guard ARGS`` from the checkout; ``popen`` overrides the Popen arguments below."""
    settings = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True, "start_new_session": True}
    return subprocess.Popen([sys.executable, "-m", "headroom_guard", *args], cwd=ROOT, **{**settings, **popen})


def stop_guard(process):
    """SIGTERM unless it has ended; what it said on stderr."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=60)
    return err
