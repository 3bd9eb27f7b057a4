# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """Connection options shared by every module that talks to Kafka (action group C(headroom.kafka.kafka))."""

    DOCUMENTATION = r"""
options:
  bootstrap_servers:
    description:
      - Kafka brokers to bootstrap from, as C(host:port) items (an IPv6 address in brackets, C([::1]:9092)).
      - Required whenever the task talks to Kafka, which every module does except M(headroom.kafka.volume_limits) given
        O(headroom.kafka.volume_limits#module:log_dirs) and M(headroom.kafka.usage_snapshot) publishing given
        O(headroom.kafka.usage_snapshot#module:log_dirs) to a O(headroom.kafka.usage_snapshot#module:path); a task that
        needs it and lacks it fails saying so, before anything else.
      - Set the connection options once for every module with C(module_defaults) and the action group
        C(group/headroom.kafka.kafka).
    type: list
    elements: str
  security_protocol:
    description: Protocol of the listener the brokers are reached on.
    type: str
    choices: [PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL]
    default: PLAINTEXT
  ssl_cafile:
    description: PEM file with the CA certificates that sign the brokers' certificates.
    type: path
  ssl_certfile:
    description: PEM file with the client certificate (and chain) for brokers that require client authentication.
    type: path
  ssl_keyfile:
    description: PEM file with the client's private key.
    type: path
  ssl_password:
    description: Password of O(ssl_keyfile) when the key is encrypted.
    type: str
  ssl_check_hostname:
    description: Verify that each broker's certificate matches its advertised host name.
    type: bool
    default: true
  sasl_mechanism:
    description:
      - SASL mechanism for C(SASL_PLAINTEXT) and C(SASL_SSL) listeners. The SASL options are refused with another
        O(security_protocol), and the TLS file options with a protocol without TLS.
    type: str
    choices: [PLAIN, SCRAM-SHA-256, SCRAM-SHA-512]
  sasl_username:
    description: SASL user name.
    type: str
  sasl_password:
    description: SASL password.
    type: str
  request_timeout:
    description:
      - Seconds to wait for a broker to answer a request, and for the initial connection to each bootstrap server in
        turn, from V(0.1) to V(3600).
      - A broker that refuses the credentials or the TLS session fails the task at once, naming the user, the SASL
        mechanism and the broker.
    type: float
    default: 30
requirements:
  - kafka-python >= 3.0.12, < 4 (DescribeLogDirs, DescribeCluster and client quotas)
  - confluent-kafka >= 2.16, < 3 (topics, produce and consume)
notes:
  - The modules run where the task runs, usually the control node or a host with network access to the brokers.
"""
