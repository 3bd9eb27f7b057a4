# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: quota_plugin_key_pattern
short_description: A regular expression for the broker property names a quotas spec decides
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - Takes what P(headroom.kafka.quota_plugin_properties#filter) returned and gives a Python regular expression (not
    anchored, no groups that capture) matching every broker property name the spec decides, so that copies of those
    keys outside the managed block can be commented out.
  - "With the plugin: the callback class, produce, fetch, both volume limits, excluded principals, the tuning keys and
    every C(client.quota.callback.static.kafka.admin.*) key. With O(_input) empty
    (O(headroom.kafka.quota_plugin_properties#filter:_input.type=kafka)):
    every quota plugin key. The legacy C(storage.soft) and C(storage.hard) keys always."
positional: _input
options:
  _input:
    description: The rendered quota plugin properties.
    type: dict
    required: true
seealso:
  - plugin: headroom.kafka.quota_plugin_properties
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Comment out free-form copies of the keys the spec decides
  ansible.builtin.replace:
    path: /etc/kafka/server.properties
    regexp: '^(\s*{{ rendered | headroom.kafka.quota_plugin_key_pattern }}\s*[=:\s].*)$'
    replace: '# overridden by the quotas spec: \1'
"""

RETURN = r"""
_value:
  description: The regular expression.
  type: str
  sample: '(?:client\.quota\.callback\.static\.storage\.soft|client\.quota\.callback\.class|...)'
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils import quota_plugin_spec


def quota_plugin_key_pattern(rendered):
    try:
        return quota_plugin_spec.managed_key_pattern(rendered)
    except quota_plugin_spec.QuotaPluginSpecError as exc:
        raise AnsibleFilterError("quota_plugin_key_pattern: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"quota_plugin_key_pattern": quota_plugin_key_pattern}
