# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of the connection options (documented in the ``headroom.kafka.connection`` doc fragment)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import (
    CONFLUENT_KAFKA_IMPORT_ERROR, HAS_CONFLUENT_KAFKA, HAS_KAFKA_PYTHON, KAFKA_PYTHON_IMPORT_ERROR, KafkaAdapter)

CONNECTION_ARGUMENT_SPEC = dict(
    bootstrap_servers=dict(type="list", elements="str", required=True),
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


def argument_spec(**module_options):
    spec = dict(CONNECTION_ARGUMENT_SPEC)
    spec.update(module_options)
    return spec


def connect(module, need_confluent=False):
    """An adapter for the module's connection options; fails the module when a client library is missing."""
    from ansible.module_utils.basic import missing_required_lib  # pylint: disable=import-outside-toplevel
    if not HAS_KAFKA_PYTHON:
        module.fail_json(msg=missing_required_lib("kafka-python >= 3.0"), exception=KAFKA_PYTHON_IMPORT_ERROR)
    if need_confluent and not HAS_CONFLUENT_KAFKA:
        module.fail_json(msg=missing_required_lib("confluent-kafka"), exception=CONFLUENT_KAFKA_IMPORT_ERROR)
    return KafkaAdapter.from_module_params(module.params)
