# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: kafka_release_faults
short_description: What a client quota callback meets on a Kafka release
version_added: 1.0.0
description:
  - The known faults of an Apache Kafka release with a client quota callback such as the Strimzi quota plugin, as
    warnings; an empty list for a release without one.
  - Kafka 4.0.0 to 4.2.1 and 4.3.0 to 4.3.1 (KAFKA-20746) log a NullPointerException on every metadata change while a
    broker is stopped; the brokers keep serving.
author:
  - Headroom maintainers (!UNKNOWN)
options:
  _input:
    description: The broker's Kafka version, such as C(4.1.2) (what C(broker_libs_info) reads from the jars' names).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Warn about the broker's Kafka release
  ansible.builtin.debug:
    msg: "WARNING: {{ item }}"
  loop: "{{ '4.1.2' | headroom.kafka.kafka_release_faults }}"
"""

RETURN = r"""
_value:
  description: One warning per known fault, naming the release, the fault and the ways out.
  type: list
  elements: str
"""

from ansible_collections.headroom.kafka.plugins.module_utils.kafka_releases import quota_callback_faults


def kafka_release_faults(version):
    return quota_callback_faults(version)


class FilterModule:
    def filters(self):
        return {"kafka_release_faults": kafka_release_faults}
