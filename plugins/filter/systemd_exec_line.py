# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: systemd_exec_line
short_description: An argument list as a systemd unit's ExecStart= line
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - Writes each argument as one word of an C(ExecStart=) line; systemd splits the line itself, without a shell.
  - A word with a space, a quote or a backslash is double-quoted with C escapes; C(%) and C($), which systemd expands
    in every word (specifiers and variables), are doubled so that each stands for itself. A shell's quoting does not
    protect them.
  - The first argument must be an absolute path.
positional: _input
options:
  _input:
    description: The program and its arguments.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: A unit whose command line is a list
  ansible.builtin.copy:
    dest: /etc/systemd/system/example.service
    content: |
      [Service]
      ExecStart={{ ['/usr/bin/python3', '-c', 'print("50%")'] | headroom.kafka.systemd_exec_line }}
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The value of C(ExecStart=).
  type: str
  sample: /usr/bin/python3 -c "print(\"50%%\")"
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils.systemd_command import SystemdCommandError, exec_line


def systemd_exec_line(argv):
    try:
        return exec_line(argv)
    except SystemdCommandError as exc:
        raise AnsibleFilterError("systemd_exec_line: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"systemd_exec_line": systemd_exec_line}
