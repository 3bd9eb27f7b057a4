# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``quotas`` option of the modules that take a client quota set (client_quota, disk_guard), with no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Iterable, List, Optional

QUOTA_OPTIONS = dict(
    entity=dict(
        type="dict",
        required=True,
        options=dict(
            user=dict(type="str"),
            client_id=dict(type="str"),
            ip=dict(type="str"),
        ),
    ),
    producer_byte_rate=dict(type="float"),
    consumer_byte_rate=dict(type="float"),
    request_percentage=dict(type="float"),
    controller_mutation_rate=dict(type="float"),
    connection_creation_rate=dict(type="float"),
    state=dict(type="str", default="present", choices=["present", "absent"]),
)


def spec_from_params(quotas: Optional[Iterable[Any]]) -> List[Any]:
    """The ``quotas`` option without the None values Ansible fills in for options not given."""
    cleaned = []
    for item in quotas or []:
        if not isinstance(item, dict):
            cleaned.append(item)
            continue
        entry = dict((k, v) for k, v in item.items() if v is not None)
        if isinstance(entry.get("entity"), dict):
            entry["entity"] = dict((k, v) for k, v in entry["entity"].items() if v is not None)
        cleaned.append(entry)
    return cleaned
