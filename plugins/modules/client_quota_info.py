#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: client_quota_info
short_description: Read Kafka client quotas
version_added: 1.0.0
description:
  - Reads the client quotas of a Kafka cluster (KRaft, Kafka 3.5 and later) with one DescribeClientQuotas request,
    optionally filtered by entity, and returns them with entities written as M(headroom.kafka.client_quota) takes them.
  - Each filter option takes a name (exact match), C(<default>) (the default entity of that type) or C(*) (any name,
    including the default entity; Kafka's C(MATCH_TYPE_SPECIFIED)).
  - Without filters, every client quota of the cluster is returned.
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.connection
  - headroom.kafka.attributes.read_only
options:
  user:
    description: Only entities with this user; a name, C(<default>) or C(*).
    type: str
  client_id:
    description: Only entities with this client id; a name, C(<default>) or C(*).
    type: str
  ip:
    description: Only entities with this IP; an address, C(<default>) or C(*).
                 Cannot be combined with O(user) or O(client_id).
    type: str
  strict:
    description:
      - Only entities made of exactly the filtered types, for example O(user=alice) without O(strict) also returns
        C(user=alice,client_id=app) and with O(strict=true) only C(user=alice).
      - With no filter at all, O(strict=true) matches nothing (Kafka's semantics).
    type: bool
    default: false
notes:
  - Reading client quotas needs the C(DESCRIBE_CONFIGS) operation on the cluster resource.
seealso:
  - module: headroom.kafka.client_quota
"""

EXAMPLES = r"""
- name: Every client quota of the cluster
  headroom.kafka.client_quota_info:
    bootstrap_servers: [kafka-1:9093]
    security_protocol: SSL
    ssl_cafile: /etc/kafka/tls/ca.crt
    ssl_certfile: /etc/kafka/tls/admin.crt
    ssl_keyfile: /etc/kafka/tls/admin.key
  register: all_quotas

- name: The quotas that apply to the user alice alone (not alice with a client id)
  headroom.kafka.client_quota_info:
    user: alice
    strict: true
  register: alice

- name: Default quotas for users and for user/client-id pairs
  headroom.kafka.client_quota_info:
    user: <default>
  register: user_defaults

- name: Every quota set per IP, including the default IP
  headroom.kafka.client_quota_info:
    ip: "*"
  register: ip_quotas

- name: Stop when alice has no produce quota of her own
  ansible.builtin.assert:
    that:
      - alice.quotas | length == 1
      - alice.quotas[0].quota_values.producer_byte_rate is defined
    fail_msg: "user alice has no producer_byte_rate quota: {{ alice.quotas }}"
"""

RETURN = r"""
quotas:
  description:
    - The matching entities and their quotas, ordered by entity (types, then the default entity before names).
    - Values of keys Kafka stores as integers are integers; C(request_percentage) and C(controller_mutation_rate) are
      floats.
  returned: always
  type: list
  elements: dict
  contains:
    entity: {description: The entity with keys C(user) / C(client_id) / C(ip);
            C(<default>) is the default entity., type: dict}
    quota_values: {description: The quota keys and values of the entity., type: dict}
  sample: [{"entity": {"user": "<default>"}, "quota_values": {"producer_byte_rate": 1048576}},
           {"entity": {"user": "alice", "client_id": "app"},
            "quota_values": {"consumer_byte_rate": 4096, "request_percentage": 12.5}}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils import connection, quota_spec
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    KafkaAdapterError,
)

ANY_NAME = "*"
MODULE_OPTIONS = dict(
    user=dict(type="str"),
    client_id=dict(type="str"),
    ip=dict(type="str"),
    strict=dict(type="bool", default=False),
)


def filter_components(user=None, client_id=None, ip=None):
    """DescribeClientQuotas filter components [(entity_type, match_type, match)] for the module's filter options."""
    components = []
    for option, value in (("user", user), ("client_id", client_id), ("ip", ip)):
        if value is None:
            continue
        if value == "":
            raise quota_spec.QuotaSpecError(
                "{0} must be a name, {1} or {2} (got an empty string)".format(option, quota_spec.DEFAULT_NAME, ANY_NAME)
            )
        kind = quota_spec.SPEC_TYPES[option]
        if value == ANY_NAME:
            components.append((kind, MATCH_SPECIFIED, None))
        elif value == quota_spec.DEFAULT_NAME:
            components.append((kind, MATCH_DEFAULT, None))
        else:
            components.append((kind, MATCH_EXACT, value))
    return components


def read_quotas(adapter, components, strict=False):
    """One DescribeClientQuotas; the ``quotas`` list the module returns."""
    entries = adapter.describe_client_quotas(components=components, strict=strict)
    rows = [(entity, values) for entity, values in entries if values]
    rows.sort(key=lambda row: quota_spec.entity_sort_key(row[0]))
    return [
        {"entity": quota_spec.entity_to_spec(entity), "quota_values": quota_spec.for_output(values)}
        for entity, values in rows
    ]


ARGUMENT_SPEC = connection.argument_spec(**MODULE_OPTIONS)
OPTION_RANGES = {}  # quota values are checked with the quota set (quota_spec), naming the item


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_together=connection.CONNECTION_REQUIRED_TOGETHER,
        required_if=connection.CONNECTION_REQUIRED_IF,
        mutually_exclusive=[["ip", "user"], ["ip", "client_id"]],
        supports_check_mode=True,
    )
    connection.check(module, OPTION_RANGES)
    try:
        components = filter_components(module.params["user"], module.params["client_id"], module.params["ip"])
    except quota_spec.QuotaSpecError as exc:
        module.fail_json(msg=str(exc))
    adapter = connection.connect(module, "to read its client quotas")
    try:
        quotas = read_quotas(adapter, components, module.params["strict"])
    except KafkaAdapterError as exc:
        message = str(exc)
        if "CLUSTER_AUTHORIZATION_FAILED" in message:
            message += " (the principal needs DESCRIBE_CONFIGS on the cluster resource to read client quotas)"
        module.fail_json(msg=message)
    finally:
        adapter.close()
    module.exit_json(changed=False, quotas=quotas)


if __name__ == "__main__":
    main()
