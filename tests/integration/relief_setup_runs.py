"""What the relief tests on real brokers share: the log_dir_relief target's setup script run as an operator or another
tool would (relief_setup.py: place a replica, fill or leave space, read the throttles), a volume's free bytes, and
whether a log dir holds a partition."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETUP = os.path.join(ROOT, "tests", "integration", "targets", "log_dir_relief", "files", "relief_setup.py")
MIB = 1 << 20


def setup(*args):
    """relief_setup.py with ``args``; what it prints (JSON)."""
    done = subprocess.run(
        [sys.executable, SETUP, *map(str, args)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def free_bytes(path):
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def holds(log_dir, topic):
    """True when ``log_dir`` holds the partition's directory (not a future or deleted one)."""
    return os.path.isdir(os.path.join(log_dir, f"{topic}-0"))
