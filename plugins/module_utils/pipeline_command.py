# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The usage pipeline job's command line, as a list of arguments (no shell ever parses a path, glob or URL),
with no I/O.

The usage_pipeline role builds it through the filter headroom.kafka.pipeline_argv; site.yml gives the job the snapshot
topic as a kafka:// URL built by the filter headroom.kafka.kafka_topic_url.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, List, Mapping
from urllib.parse import urlencode

from ansible_collections.headroom.kafka.plugins.module_utils import option_checks

LAUNCHERS = ("python", "spark-submit")
SPARK_SUBMIT_OWNS = ("--master", "--driver-memory")  # given to spark-submit itself, before the driver's JVM starts


# The connection options (the modules' connection doc fragment) a kafka:// URL carries as parameters of the same name,
# in this order; the job reads the passwords from its environment, never from the URL.
URL_OPTIONS = (
    "security_protocol",
    "ssl_cafile",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_check_hostname",
    "sasl_mechanism",
    "sasl_username",
    "request_timeout",
)
# The passwords, each from the environment variable the job reads it from.
SECRET_ENVIRONMENT = {"sasl_password": "HEADROOM_KAFKA_SASL_PASSWORD", "ssl_password": "HEADROOM_KAFKA_SSL_PASSWORD"}
SECRET_OPTIONS = tuple(SECRET_ENVIRONMENT)


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


def kafka_topic_url(connection: Mapping[str, Any], topic: str) -> str:
    """kafka://host:port[,host:port]/topic[?option=value...] for the job's --snapshots, from the modules' connection
    options: every option other than the passwords is a URL parameter of the same name (the job takes those from
    HEADROOM_KAFKA_SASL_PASSWORD and HEADROOM_KAFKA_SSL_PASSWORD); options whose value is null are left out.
    """
    if not isinstance(connection, Mapping):
        raise PipelineCommandError(
            "the connection options must be a dict (got a {0})".format(type(connection).__name__)
        )
    servers = option_checks.server_list(connection.get("bootstrap_servers"))
    if not servers:
        raise PipelineCommandError(
            "bootstrap_servers is required to read the snapshot topic (got {0!r}): host:port items, a list or a "
            "comma-separated string".format(connection.get("bootstrap_servers"))
        )
    problem = option_checks.topic_name_problem(topic) if isinstance(topic, str) else "not a string"
    if problem:
        raise PipelineCommandError("the snapshot topic {0!r} is not a Kafka topic name: {1}".format(topic, problem))
    unknown = sorted(set(connection) - set(URL_OPTIONS) - set(SECRET_OPTIONS) - {"bootstrap_servers"})
    if unknown:
        raise PipelineCommandError(
            "unknown connection option(s) {0}; allowed: bootstrap_servers, {1}, {2}".format(
                ", ".join(unknown), ", ".join(URL_OPTIONS), ", ".join(SECRET_OPTIONS)
            )
        )
    parameters = [(key, _text(connection[key])) for key in URL_OPTIONS if connection.get(key) is not None]
    query = "?" + urlencode(parameters) if parameters else ""
    return "kafka://{0}/{1}{2}".format(",".join(servers), topic, query)


def secret_environment(passwords: Mapping[str, Any]) -> Dict[str, str]:
    """The job's environment for ``passwords`` ({sasl_password, ssl_password}): each given password under the variable
    the job reads it from; empty or null ones left out, any other key refused."""
    unknown = sorted(set(passwords) - set(SECRET_ENVIRONMENT))
    if unknown:
        raise PipelineCommandError(
            "unknown password(s) {0}; allowed: {1}".format(", ".join(unknown), ", ".join(SECRET_OPTIONS))
        )
    return dict(
        (SECRET_ENVIRONMENT[option], str(value))
        for option, value in sorted(passwords.items())
        if value not in (None, "")
    )
