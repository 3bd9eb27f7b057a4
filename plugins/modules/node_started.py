#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_started
short_description: Wait on a Kafka node's host until its restarted unit listens, failing at once if it dies
version_added: 1.0.0
description:
  - Runs on the node's host right after C(systemctl restart) and waits until the Kafka listener accepts connections,
    while the systemd unit started by that restart is still running.
  - A unit of C(Type=simple) is active as soon as the JVM is forked, so a broker that exits a second later (a bad
    property, a class missing from its libs, a full metadata disk) passes C(systemctl restart). This module fails as
    soon as the unit fails or stops, as soon as systemd schedules it for a restart (C(Restart=on-failure)), or when
    another invocation runs, saying how the main process ended; a health wait would only time out.
  - Used by the P(headroom.kafka.rolling_restart#role) role (method V(systemd)) before its cluster health wait. Needs
    nothing but Python and systemctl on the host.
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.attributes.read_only
options:
  unit:
    description: The node's systemd unit, for example V(kafka) or V(kafka.service).
    type: str
    required: true
  listener_host:
    description: The address of the node's listener as seen from its own host.
    type: str
    default: localhost
  listener_port:
    description: The port of the node's listener, from V(1) to V(65535).
    type: int
    required: true
  timeout:
    description: Seconds to wait for the listener, from V(1) to V(86400); the module fails when it has not answered.
    type: float
    default: 120
  interval:
    description: Seconds between two looks at the unit and the port, from V(0.05) to V(60).
    type: float
    default: 0.5
notes:
  - A listener that accepts connections is not a healthy broker (it still has to catch up and be unfenced); wait for
    that with M(headroom.kafka.cluster_health_info) afterwards.
seealso:
  - module: headroom.kafka.cluster_health_info
"""

EXAMPLES = r"""
- name: Restart the broker
  ansible.builtin.systemd_service:
    name: kafka
    state: restarted

- name: Wait until it listens, failing at once if its unit dies
  headroom.kafka.node_started:
    unit: kafka
    listener_host: "{{ ansible_host }}"
    listener_port: 9092
"""

RETURN = r"""
unit_state:
  description: The unit's properties when the module returned (or failed), from C(systemctl show).
  returned: always
  type: dict
  sample: {"ActiveState": "active", "SubState": "running", "InvocationID": "0c5a...", "NRestarts": "0",
           "Result": "success", "ExecMainCode": "0", "ExecMainStatus": "0"}
elapsed:
  description: Seconds the module waited.
  returned: always
  type: float
"""

import socket
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils.option_checks import Number, enforce, seconds
from ansible_collections.headroom.kafka.plugins.module_utils.unit_state import PROPERTIES, gone, parse_show

ARGUMENT_SPEC = dict(
    unit=dict(type="str", required=True),
    listener_host=dict(type="str", default="localhost"),
    listener_port=dict(type="int", required=True),
    timeout=dict(type="float", default=120),
    interval=dict(type="float", default=0.5),
)
OPTION_RANGES = {
    "listener_port": Number(1, 65535, integer=True, what="a port, a whole number"),
    "timeout": seconds(1, 86400),
    "interval": seconds(0.05, 60),
}


def listening(host, port, interval):
    try:
        socket.create_connection((host, port), timeout=max(interval, 1)).close()
        return True
    except OSError:
        return False


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    enforce(module, OPTION_RANGES)
    systemctl = module.get_bin_path("systemctl", required=True)
    argv = [systemctl, "show", "--property=" + ",".join(PROPERTIES), params["unit"]]

    def unit_state():
        rc, out, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg="systemctl show {0} failed: {1}".format(params["unit"], err.strip() or out.strip()))
        return parse_show(out)

    began = time.monotonic()
    started = unit_state()
    while True:
        now = unit_state()
        elapsed = round(time.monotonic() - began, 3)
        why = gone(started, now)
        if why:
            module.fail_json(
                msg="{0} is not running after its restart: {1}".format(params["unit"], why),
                unit_state=now,
                elapsed=elapsed,
            )
        if listening(params["listener_host"], params["listener_port"], params["interval"]):
            module.exit_json(changed=False, unit_state=now, elapsed=elapsed)
        if elapsed >= params["timeout"]:
            module.fail_json(
                msg="{0} is {1} but nothing listens on {2}:{3} after {4:.0f} s".format(
                    params["unit"], now.get("ActiveState"), params["listener_host"], params["listener_port"], elapsed
                ),
                unit_state=now,
                elapsed=elapsed,
            )
        time.sleep(params["interval"])


if __name__ == "__main__":
    main()
