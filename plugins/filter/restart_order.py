# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: restart_order
short_description: The order in which a rolling restart takes Kafka nodes down
version_added: 1.0.0
description:
  - Orders the nodes that need a restart so that plain brokers go first, then controller-only nodes, then combined
    broker and controller nodes, and the active controller last, by node id within each group.
author:
  - Headroom maintainers (!UNKNOWN)
positional: active_controller
options:
  _input:
    description: Nodes, each a dict with C(host), C(node_id), C(roles) (list or comma-separated) and C(needs_restart).
    type: list
    elements: dict
    required: true
  active_controller:
    description: Node id of the active controller, if known.
    type: int
"""

EXAMPLES = r"""
- name: Plan the restart
  ansible.builtin.set_fact:
    plan: "{{ nodes | headroom.kafka.restart_order(active_controller=1) }}"
"""

RETURN = r"""
_value:
  description: Host names, in restart order.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils.restart_plan import RestartPlanError
from ansible_collections.headroom.kafka.plugins.module_utils.restart_plan import restart_order as plan


def restart_order(nodes, active_controller=None):
    try:
        return plan(nodes, active_controller)
    except RestartPlanError as exc:
        raise AnsibleFilterError("restart_order: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"restart_order": restart_order}
