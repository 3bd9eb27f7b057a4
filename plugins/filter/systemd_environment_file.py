# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: systemd_environment_file
short_description: Environment variables as the text of a systemd EnvironmentFile
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - Writes one C(NAME="value") line per variable, the value as it is (UTF-8) with only the characters systemd unescapes
    inside double quotes escaped (backslash, double quote, backquote, dollar), so that the process gets each value
    exactly. JSON's escapes (C(to_json)) would reach it as written.
  - A value with a line break or another control character is refused, naming the variable.
positional: _input
options:
  _input:
    description: Variable names to values.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The passwords of a service, readable by root only
  ansible.builtin.copy:
    dest: /etc/example/service.env
    content: "{{ {'PASSWORD': password} | headroom.kafka.systemd_environment_file }}"
    mode: "0600"
  no_log: true
"""

RETURN = r"""
_value:
  description: The file's text.
  type: str
  sample: "PASSWORD=\"p\\$ss\"\n"
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils.systemd_command import (
    SystemdCommandError,
    environment_file,
)


def systemd_environment_file(variables):
    try:
        return environment_file(variables)
    except SystemdCommandError as exc:
        raise AnsibleFilterError("systemd_environment_file: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"systemd_environment_file": systemd_environment_file}
