# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: properties_block
short_description: Java properties lines for a dict of Kafka broker properties
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - Renders C(key=value) lines in the dict's order with Java properties escaping (backslashes, line breaks, leading
    blanks, non-ASCII as C(\\uXXXX) since Kafka reads the file as ISO-8859-1); numbers are written as Kafka parses them.
positional: _input
options:
  _input:
    description: The properties.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the quota plugin's block
  ansible.builtin.blockinfile:
    path: /etc/kafka/server.properties
    block: "{{ plugin_properties | headroom.kafka.properties_block }}"
"""

RETURN = r"""
_value:
  description: The lines, joined with newlines, without a trailing newline.
  type: str
"""

from ansible_collections.headroom.kafka.plugins.module_utils.quota_plugin_spec import render_block


class FilterModule:
    def filters(self):
        return {"properties_block": render_block}
