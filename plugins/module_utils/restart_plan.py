# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The order of a rolling restart, with no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.headroom.kafka.plugins.module_utils.option_checks import BROKER_ID


class RestartPlanError(ValueError):
    """A node list the plan cannot order; the message names the field and value."""


def _rank(node, active_controller):
    roles = set(node["roles"])
    if node["node_id"] == active_controller:
        return 3  # the active controller last: one controller election instead of several
    if roles == set(["broker"]):
        return 0  # plain brokers first
    if "broker" not in roles:
        return 1  # controller-only nodes
    return 2  # combined broker+controller nodes


def restart_order(nodes: Iterable[Dict[str, Any]], active_controller: Optional[int] = None) -> List[str]:
    """Hosts to restart, one at a time: brokers, then controller-only nodes, then combined nodes, the active
    controller last; node id order within each group. ``nodes``: [{host, node_id, roles, needs_restart}]."""
    seen = set()
    wanted = []
    for index, node in enumerate(nodes):
        for field in ("host", "node_id", "roles"):
            if node.get(field) in (None, "", []):
                raise RestartPlanError("nodes[{0}].{1} is required (got {2!r})".format(index, field, node.get(field)))
        roles = node["roles"].split(",") if isinstance(node["roles"], str) else list(node["roles"])
        roles = [role.strip() for role in roles]
        if not set(roles) <= set(["broker", "controller"]):
            raise RestartPlanError(
                "nodes[{0}].roles must be broker and/or controller (got {1!r})".format(index, node["roles"])
            )
        node_id = node["node_id"]
        if isinstance(node_id, str) and node_id.strip().isdigit():
            node_id = int(node_id.strip())  # inventory variables often arrive as text
        if BROKER_ID.problem(node_id):
            raise RestartPlanError(
                "nodes[{0}].node_id must be a Kafka node id, a whole number from 0 to {1} (got {2!r})".format(
                    index, BROKER_ID.maximum, node["node_id"]
                )
            )
        node = dict(node, node_id=node_id)
        if node["node_id"] in seen:
            raise RestartPlanError("nodes[{0}].node_id {1} is used by two hosts".format(index, node["node_id"]))
        seen.add(node["node_id"])
        if node.get("needs_restart", True):
            wanted.append(dict(node, roles=roles))
    wanted.sort(key=lambda node: (_rank(node, active_controller), node["node_id"]))
    return [node["host"] for node in wanted]
