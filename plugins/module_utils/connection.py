# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of the connection options (documented in the ``headroom.kafka.connection`` doc fragment)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd
import re
import stat
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from ansible_collections.headroom.kafka.plugins.module_utils import option_checks
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import (
    CONFLUENT_KAFKA_IMPORT_ERROR,
    HAS_CONFLUENT_KAFKA,
    HAS_KAFKA_PYTHON,
    KAFKA_PYTHON_IMPORT_ERROR,
    KafkaAdapter,
)

if TYPE_CHECKING:
    from ansible.module_utils.basic import AnsibleModule

CONNECTION_ARGUMENT_SPEC: Dict[str, Dict[str, Any]] = dict(
    # Required where a task talks to Kafka: connect() says so, naming why (volume_limits given log_dirs needs no
    # cluster).
    bootstrap_servers=dict(type="list", elements="str"),
    security_protocol=dict(type="str", default="PLAINTEXT", choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]),
    ssl_cafile=dict(type="path"),
    ssl_certfile=dict(type="path"),
    ssl_keyfile=dict(type="path", no_log=False),
    ssl_password=dict(type="str", no_log=True),
    ssl_check_hostname=dict(type="bool", default=True),
    sasl_mechanism=dict(type="str", choices=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
    sasl_username=dict(type="str"),
    sasl_password=dict(type="str", no_log=True),
    request_timeout=dict(type="float", default=30),
)
CONNECTION_REQUIRED_TOGETHER = [["sasl_username", "sasl_password"], ["ssl_certfile", "ssl_keyfile"]]
CONNECTION_REQUIRED_IF = [
    ["security_protocol", "SASL_PLAINTEXT", ["sasl_mechanism", "sasl_username", "sasl_password"]],
    ["security_protocol", "SASL_SSL", ["sasl_mechanism", "sasl_username", "sasl_password"]],
]


CONNECTION_RANGES = {"request_timeout": option_checks.REQUEST_TIMEOUT}
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
SSL_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_OPTIONS = ("sasl_mechanism", "sasl_username", "sasl_password")
SSL_FILE_OPTIONS = ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password")
# host:port, host:port with an IPv6 address in brackets; the port a TCP port.
_SERVER = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[^\s:\[\]/]+):([0-9]{1,5})$")


def connection_problem(params: Mapping[str, Any]) -> Optional[str]:
    """Why the connection options can never work, or None: a malformed server, a number out of range, an option the
    chosen security_protocol does not use, a TLS file that is not a file. Checked before anything talks to Kafka."""
    servers = params.get("bootstrap_servers")
    if servers is not None and not servers:
        return "bootstrap_servers must list at least one broker as host:port (got {0!r})".format(servers)
    servers = servers or []
    for index, server in enumerate(servers):
        match = _SERVER.match(server.strip()) if isinstance(server, str) else None
        if not match or not 1 <= int(match.group(1)) <= 65535:
            return "bootstrap_servers[{0}] must be host:port with a port from 1 to 65535 (got {1!r})".format(
                index, server
            )
    try:
        option_checks.check_params(params, CONNECTION_RANGES)
    except option_checks.OptionError as exc:
        return str(exc)
    protocol = params.get("security_protocol") or "PLAINTEXT"
    for names, protocols in ((SASL_OPTIONS, SASL_PROTOCOLS), (SSL_FILE_OPTIONS, SSL_PROTOCOLS)):
        given = [name for name in names if params.get(name) is not None]
        if given and protocol not in protocols:
            return "{0} applies to security_protocol {1} only (got security_protocol {2})".format(
                " and ".join(given), " or ".join(protocols), protocol
            )
    for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
        path = params.get(name)
        problem = None if path is None else _file_problem(path)
        if problem:
            return "{0} must be a readable file (got {1!r}: {2})".format(name, path, problem)
    return None


def _file_problem(path: str) -> Optional[str]:
    """Why ``path`` cannot be read as a file by this process, or None. The disk guard service reads its TLS files as
    a user of its own: a file only root may read is refused when the guard checks its configuration as that user."""
    try:
        mode = os.stat(path).st_mode
    except PermissionError:
        return "not readable by {0}: a directory on the way to it is closed to it".format(_user())
    except OSError:
        return "no such file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    if not os.access(path, os.R_OK):
        return "not readable by {0}".format(_user())
    return None


def _user() -> str:
    try:
        return "user " + pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:  # a uid without a name (a container's)
        return "uid {0}".format(os.geteuid())


def check(module: "AnsibleModule", ranges: Optional[Mapping[str, option_checks.Range]] = None) -> None:
    """Fail the module, naming the option, when a connection option or a number of ``ranges`` can never work."""
    problem = connection_problem(module.params)
    if problem:
        module.fail_json(msg=problem)
    option_checks.enforce(module, ranges or {})


def argument_spec(**module_options: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    spec = dict(CONNECTION_ARGUMENT_SPEC)
    spec.update(module_options)
    return spec


def missing_servers(params: Mapping[str, Any], purpose: str) -> Optional[str]:
    """The message for a task that must talk to Kafka without bootstrap_servers, or None. ``purpose``: what the task
    asks Kafka, as in "to read every log dir"."""
    if params.get("bootstrap_servers"):
        return None
    return (
        "bootstrap_servers is required: this task talks to Kafka {0}. Give the brokers as host:port items, for example "
        "once for the play with module_defaults and group/headroom.kafka.kafka".format(purpose)
    )


def connect(module: "AnsibleModule", purpose: str, need_confluent: bool = False) -> KafkaAdapter:
    """An adapter for the module's connection options; fails the module, naming the option and why it is needed, when
    bootstrap_servers is missing, and when a client library is missing."""
    from ansible.module_utils.basic import missing_required_lib  # pylint: disable=import-outside-toplevel

    missing = missing_servers(module.params, purpose)
    if missing:
        module.fail_json(msg=missing)
    if not HAS_KAFKA_PYTHON:
        module.fail_json(msg=missing_required_lib("kafka-python >= 3.0"), exception=KAFKA_PYTHON_IMPORT_ERROR)
    if need_confluent and not HAS_CONFLUENT_KAFKA:
        module.fail_json(msg=missing_required_lib("confluent-kafka"), exception=CONFLUENT_KAFKA_IMPORT_ERROR)
    return KafkaAdapter.from_module_params(module.params)
