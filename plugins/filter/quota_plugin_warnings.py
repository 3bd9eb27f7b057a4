# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: quota_plugin_warnings
short_description: Warnings about applying a Kafka quotas spec to broker properties
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - The warnings that go with P(headroom.kafka.quota_plugin_properties#filter) for the same arguments, after the same
    checks (an invalid spec fails the same way).
  - "One warning per free-form broker property the quotas spec replaces or removes, naming the key: quota plugin keys
    the spec decides (with O(headroom.kafka.quota_plugin_properties#filter:_input.type=kafka), every quota plugin key,
    since the plugin is not used), and the legacy keys C(client.quota.callback.static.storage.soft) and
    C(client.quota.callback.static.storage.hard). Also a warning when
    O(headroom.kafka.quota_plugin_properties#filter:_input.check_interval=0) turns the plugin's storage checks off."
  - Values are never included, so warnings can be shown even when properties hold secrets.
positional: _input, admin, internal_principals, free_form
options:
  _input:
    description: The quotas spec, as for P(headroom.kafka.quota_plugin_properties#filter).
    type: dict
    required: true
  admin:
    description: The plugin's admin client settings, as for P(headroom.kafka.quota_plugin_properties#filter).
    type: dict
  internal_principals:
    description: Principals always excluded from throttling, as for P(headroom.kafka.quota_plugin_properties#filter).
    type: list
    elements: str
  free_form:
    description: The user's own broker properties, which the spec may override.
    type: dict
seealso:
  - plugin: headroom.kafka.quota_plugin_properties
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Say which free-form broker properties the quotas spec replaces
  ansible.builtin.debug:
    msg: "{{ item }}"
  loop: >-
    {{ kafka_quotas
       | headroom.kafka.quota_plugin_warnings(admin=quota_admin, free_form=kafka_broker_properties) }}

# With free_form={'client.quota.callback.static.storage.soft': '1000000'}:
#   free-form broker property client.quota.callback.static.storage.soft is a legacy quota plugin key (...); it is
#   removed: ...
"""

RETURN = r"""
_value:
  description: The warnings, in the order of the free-form properties; empty when there is nothing to say.
  type: list
  elements: str
  sample:
    - >-
      free-form broker property client.quota.callback.static.produce is overridden by kafka_quotas (type strimzi):
      remove it from the free-form properties
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils import quota_plugin_spec


def quota_plugin_warnings(spec, admin=None, internal_principals=None, free_form=None):
    try:
        return quota_plugin_spec.render(spec, admin, internal_principals, free_form)[1]
    except quota_plugin_spec.QuotaPluginSpecError as exc:
        raise AnsibleFilterError("quota_plugin_warnings: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"quota_plugin_warnings": quota_plugin_warnings}
