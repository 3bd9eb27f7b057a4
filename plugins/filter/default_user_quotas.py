# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: default_user_quotas
short_description: The default user's client quotas that a Kafka quotas spec implies
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - With C(type=kafka), the spec's producer and consumer byte rates, request percentage and controller mutation rate
    become the default user's quotas; a rate left unset is removed (C(state=absent) when none is set).
  - With C(type=strimzi), the default user's quotas are removed, as Strimzi does, since the quota plugin ignores them.
  - The result is one entry in the format of the C(quotas) option of M(headroom.kafka.client_quota).
positional: _input
options:
  _input:
    description: The quotas spec, as for P(headroom.kafka.quota_plugin_properties#filter).
    type: dict
    required: true
seealso:
  - module: headroom.kafka.client_quota
  - plugin: headroom.kafka.quota_plugin_properties
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Apply the default user quotas of the spec
  headroom.kafka.client_quota:
    quotas:
      - "{{ {'type': 'kafka', 'producer_byte_rate': 1048576} | headroom.kafka.default_user_quotas }}"
"""

RETURN = r"""
_value:
  description: A C(client_quota) entry for the C(<default>) user.
  type: dict
  sample: {"entity": {"user": "<default>"}, "producer_byte_rate": 1048576}
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils.quota_plugin_spec import QuotaPluginSpecError
from ansible_collections.headroom.kafka.plugins.module_utils.quota_plugin_spec import default_user_quotas as entry_for


def default_user_quotas(spec):
    try:
        return entry_for(spec)
    except QuotaPluginSpecError as exc:
        raise AnsibleFilterError("default_user_quotas: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"default_user_quotas": default_user_quotas}
