"""Run one of the collection's modules in this process, as Ansible would run it, and return its result.

Much faster than a playbook per case, so the option checks can be tried on thousands of argument sets; the modules
still run end to end (argument spec, checks, and Kafka when the arguments get that far).
"""

import contextlib
import importlib
import io
import json
import time

from module_args import patch_module_args

MODULES = (
    "client_quota",
    "client_quota_info",
    "cluster_health_info",
    "disk_guard",
    "log_dir_relief",
    "log_dirs_info",
    "usage_snapshot",
    "usage_snapshot_info",
    "volume_limits",
)


def module_code(name):
    return importlib.import_module(f"ansible_collections.headroom.kafka.plugins.modules.{name}")


class ModuleRun:
    """What a module returned: ``result`` (its JSON), ``failed``, ``msg`` and the wall time it took."""

    def __init__(self, result, elapsed):
        self.result, self.elapsed = result, elapsed
        self.failed = bool(result.get("failed"))
        self.msg = result.get("msg", "")


def run_module(name, args, check_mode=False):
    """``headroom.kafka.<name>`` with ``args``; an exception the module does not handle propagates to the caller."""
    code = module_code(name)
    args = dict(
        args,
        _ansible_check_mode=check_mode,
        _ansible_tmpdir=None,
        _ansible_remote_tmp="/tmp",
        _ansible_keep_remote_files=False,
    )
    out = io.StringIO()
    started = time.monotonic()
    with patch_module_args(args), contextlib.redirect_stdout(out):
        try:
            code.main()
        except SystemExit:
            pass
    elapsed = time.monotonic() - started
    text = out.getvalue().strip()
    if not text:
        raise AssertionError(f"{name} printed no result")
    return ModuleRun(json.loads(text.splitlines()[-1]), elapsed)
