# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage pipeline job's command line, as a list of arguments (no shell ever parses a path, glob or URL),
with no I/O.

The usage_pipeline role builds it through the filter headroom.kafka.pipeline_argv.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, List, Mapping

LAUNCHERS = ("python", "spark-submit")
SPARK_SUBMIT_OWNS = ("--master", "--driver-memory")  # given to spark-submit itself, before the driver's JVM starts


class PipelineCommandError(ValueError):
    """Settings that make no command line; the message names the setting."""


def _text(value):
    """An option's value as the job reads it: booleans in lower case, numbers as Python writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def pipeline_argv(settings: Mapping[str, Any]) -> List[str]:
    """The argv of ``run``: the launcher (``python -m headroom_pipeline`` or spark-submit with the package's
    __main__.py), ``run``, every option whose value is neither None nor "" (``options``: {"--flag": value}, in order),
    ``--no-report`` / ``--quiet``, ``--conf key=value`` per Spark setting, then ``extra_args``.

    Under spark-submit, spark-submit's own --master and --driver-memory decide (the driver JVM starts before the job),
    so the job is not given them again (from ``master`` and ``driver_memory``; ``options`` may list them for python).
    """
    launcher = settings.get("launcher", "python")
    if launcher not in LAUNCHERS:
        raise PipelineCommandError("launcher must be one of {0} (got {1!r})".format(", ".join(LAUNCHERS), launcher))
    master, driver_memory = settings.get("master"), settings.get("driver_memory")
    if launcher == "spark-submit":
        argv = [settings["spark_submit"], "--master", _text(master)] + (
            ["--driver-memory", _text(driver_memory)] if driver_memory else []
        )
        argv += [_text(arg) for arg in settings.get("spark_submit_args") or []]
        argv += [settings["collection_root"] + "/headroom_pipeline/__main__.py", "run"]
    else:
        argv = [settings["python"], "-m", "headroom_pipeline", "run"]
    for flag, value in (settings.get("options") or {}).items():
        if value is None or value == "" or (launcher == "spark-submit" and flag in SPARK_SUBMIT_OWNS):
            continue
        argv += [flag, _text(value)]
    if not settings.get("report", True):
        argv.append("--no-report")
    if settings.get("quiet", False):
        argv.append("--quiet")
    for key, value in (settings.get("conf") or {}).items():
        argv += ["--conf", "{0}={1}".format(key, _text(value))]
    argv += [_text(arg) for arg in settings.get("extra_args") or []]
    return argv
