#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_volumes_info
short_description: Free space of the disks of a Kafka node that Kafka does not report
version_added: 1.0.0
description:
  - Runs on a Kafka node's host and reads, with statvfs, the filesystems of the paths DescribeLogDirs says nothing
    about - C(metadata.log.dir) on every node, and every log dir of a controller-only node. A full metadata disk
    stops the KRaft quorum, which no broker-side quota prevents.
  - Returns rows of the same shape as RV(headroom.kafka.log_dirs_info#module:log_dirs), so that
    M(headroom.kafka.volume_limits) judges them with the same limits (the volume_gate role and site.yml's pre-flight
    do).
  - Needs nothing but Python on the host (no Kafka client).
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.attributes.read_only
options:
  node_id:
    description: The node's C(node.id); reported as C(broker_id) of every row, as log_dirs_info does for brokers.
    type: int
    required: true
  metadata_log_dir:
    description: The node's C(metadata.log.dir) (Kafka's default is the first of C(log.dirs)).
    type: path
  log_dirs:
    description: The node's C(log.dirs); read only when O(process_roles) has no C(broker).
    type: list
    elements: path
    default: []
  process_roles:
    description: The node's C(process.roles), for example V(broker), V(controller) or V(broker,controller).
    type: str
    default: broker
  paths:
    description: Read exactly these paths instead (each reported with kind C(path)).
    type: list
    elements: path
notes:
  - C(usable_bytes) is statvfs' f_bavail, what an unprivileged writer such as the C(kafka) user may still use.
seealso:
  - module: headroom.kafka.log_dirs_info
  - module: headroom.kafka.volume_limits
"""

EXAMPLES = r"""
- name: Read the disks Kafka does not report, on every node
  headroom.kafka.node_volumes_info:
    node_id: "{{ kafka_node_id }}"
    metadata_log_dir: /var/lib/kafka/metadata
    log_dirs: "{{ kafka_log_dirs }}"
    process_roles: "{{ kafka_process_roles }}"
  register: node_disks
"""

RETURN = r"""
volumes:
  description:
    - One row per path, with the keys of RV(headroom.kafka.log_dirs_info#module:log_dirs) and C(kind)
      (V(metadata), V(log_dir) or V(path)).
    - A path that cannot be read has null sizes and C(error) set (for example V(NOT_FOUND)).
  returned: always
  type: list
  elements: dict
  sample:
    - {"broker_id": 4, "log_dir": /var/lib/kafka/metadata, "total_bytes": 67108864, "usable_bytes": 66060288,
       "used_bytes": 1048576, "available_ratio": 0.984375, "error": null, "kind": metadata}
"""

import errno
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils.node_volumes import node_paths, volume_row


def read_volume(node_id, path, kind):
    try:
        return volume_row(node_id, path, kind, os.statvfs(path))
    except OSError as error:
        return volume_row(node_id, path, kind, None, errno.errorcode.get(error.errno, "OS_ERROR"))


def main():
    module = AnsibleModule(
        argument_spec={
            "node_id": {"type": "int", "required": True},
            "metadata_log_dir": {"type": "path"},
            "log_dirs": {"type": "list", "elements": "path", "default": []},
            "process_roles": {"type": "str", "default": "broker"},
            "paths": {"type": "list", "elements": "path"},
        },
        mutually_exclusive=[("paths", "metadata_log_dir")],
        required_one_of=[("paths", "metadata_log_dir")],
        supports_check_mode=True,
    )
    params = module.params
    if params["paths"] is not None:
        wanted = [{"path": path, "kind": "path"} for path in params["paths"]]
    else:
        wanted = node_paths(params["metadata_log_dir"], params["log_dirs"], params["process_roles"])
    module.exit_json(
        changed=False, volumes=[read_volume(params["node_id"], item["path"], item["kind"]) for item in wanted]
    )


if __name__ == "__main__":
    main()
