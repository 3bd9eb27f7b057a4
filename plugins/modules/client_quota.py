#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: client_quota
short_description: Declarative Kafka client quotas
version_added: 1.0.0
description:
  - Makes the client quotas of a Kafka cluster (KRaft, Kafka 3.5 and later) match a list of entities and their
    quota values, the way C(kafka-configs.sh --alter --entity-type users|clients|ips) would, in a fixed number of
    requests whatever the number of entities.
  - Every listed entity ends with exactly the quota keys given for it; keys not given are removed.
    O(quotas[].state=absent) removes every quota of the entity. With O(exclusive=true), the quotas of entities that
    are not listed are removed too.
  - "The module sends one DescribeClientQuotas request to read every quota, then one AlterClientQuotas request with
    C(validate_only) for all the changes. If Kafka refuses any entity, the module fails, names each refused entity,
    its keys and Kafka's error, and nothing is applied. Otherwise one more AlterClientQuotas request applies the
    changes."
  - Values are compared as Kafka stores them (doubles), so C(1000) and C(1000.0) are the same quota and a re-run
    changes nothing.
  - The spec is checked before the cluster is contacted; unknown keys, keys that do not apply to the entity kind,
    values that are not greater than 0, fractional values for keys Kafka stores as integers and C(ip) combined with
    another entity type fail with a message naming the field, the value and what is allowed.
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.connection
attributes:
  check_mode:
    support: full
    description:
      - Reads the quotas and sends the AlterClientQuotas request with C(validate_only) only, so Kafka still checks
        every change and refused entities fail the task; nothing is written.
  diff_mode:
    support: full
    description: Shows the quotas of every changed entity before and after, keyed by entity (for example C(user=alice)).
options:
  quotas:
    description:
      - The entities to manage and their quotas. An empty list manages nothing, unless O(exclusive=true), which then
        removes every client quota of the cluster.
    type: list
    elements: dict
    required: true
    suboptions:
      entity:
        description:
          - The quota entity, a combination of O(quotas[].entity.user) and O(quotas[].entity.client_id), or
            O(quotas[].entity.ip) alone.
          - The name C(<default>) is the default entity of that type (what C(kafka-configs.sh --entity-default) sets).
        type: dict
        required: true
        suboptions:
          user:
            description: User principal name, or C(<default>) for the default user.
            type: str
          client_id:
            description: Client id, or C(<default>) for the default client id.
            type: str
          ip:
            description: IP address (or host name Kafka can resolve), or C(<default>) for the default IP.
                         Cannot be combined with other types.
            type: str
      producer_byte_rate:
        description: Produce bandwidth in bytes per second, per broker; a whole number greater than 0.
                     User and client id entities only.
        type: float
      consumer_byte_rate:
        description: Fetch bandwidth in bytes per second, per broker; a whole number greater than 0.
                     User and client id entities only.
        type: float
      request_percentage:
        description: Share of request handler and network thread time, in percent of one thread, per broker.
                     User and client id entities only.
        type: float
      controller_mutation_rate:
        description: Partition mutations (creations and deletions) per second. User and client id entities only.
        type: float
      connection_creation_rate:
        description: New connections per second; a whole number greater than 0. IP entities only.
        type: float
      state:
        description:
          - V(present) makes the entity hold exactly the keys given; V(absent) removes all of its quotas
            (no keys may be given).
        type: str
        choices: [present, absent]
        default: present
  exclusive:
    description:
      - Also remove the quotas of every entity in the cluster that O(quotas) does not list.
    type: bool
    default: false
notes:
  - Altering client quotas needs the C(ALTER_CONFIGS) operation on the cluster resource (and reading them
    C(DESCRIBE_CONFIGS)); without it Kafka answers C(CLUSTER_AUTHORIZATION_FAILED), which the module reports.
  - While a client quota callback such as the Strimzi quota plugin is active,
    Kafka stores these quotas but does not enforce them.
seealso:
  - module: headroom.kafka.client_quota_info
  - name: Kafka quotas
    description: Kafka documentation of client quotas.
    link: https://kafka.apache.org/documentation/#design_quotas
"""

EXAMPLES = r"""
- name: Bandwidth for two applications and a fallback for every other user
  headroom.kafka.client_quota:
    bootstrap_servers: [kafka-1:9093, kafka-2:9093, kafka-3:9093]
    security_protocol: SASL_SSL
    sasl_mechanism: SCRAM-SHA-512
    sasl_username: quota-admin
    sasl_password: "{{ vault_kafka_quota_admin_password }}"
    ssl_cafile: /etc/kafka/tls/ca.crt
    quotas:
      - entity: {user: orders-service}
        producer_byte_rate: 10485760
        consumer_byte_rate: 20971520
      - entity: {user: reporting, client_id: nightly-export}
        consumer_byte_rate: 5242880
        request_percentage: 25
      - entity: {user: <default>}
        producer_byte_rate: 1048576
        consumer_byte_rate: 2097152

- name: Limit connection storms from any single address
  headroom.kafka.client_quota:
    quotas:
      - entity: {ip: <default>}
        connection_creation_rate: 50
      - entity: {ip: 10.20.0.15}
        connection_creation_rate: 500

- name: Drop the quotas of a retired application
  headroom.kafka.client_quota:
    quotas:
      - entity: {user: legacy-billing}
        state: absent

- name: The cluster holds exactly the quotas kept in the inventory (everything else is removed)
  headroom.kafka.client_quota:
    quotas: "{{ kafka_client_quotas }}"
    exclusive: true
  check_mode: "{{ preview | default(false) }}"
  diff: true
  register: quota_run

- name: What changed
  ansible.builtin.debug:
    msg: "{{ quota_run.changes | map(attribute='entity') | list }}"
"""

RETURN = r"""
changes:
  description: The entities whose quotas changed (or would change in check mode), ordered by entity.
  returned: always
  type: list
  elements: dict
  contains:
    entity: {description: The entity with keys C(user) / C(client_id) / C(ip);
            C(<default>) is the default entity., type: dict}
    before: {description: The entity's quotas before the run (empty when it had none)., type: dict}
    after: {description: The entity's quotas after the run (empty when all were removed)., type: dict}
  sample: [{"entity": {"user": "alice"}, "before": {"producer_byte_rate": 1024}, "after": {"producer_byte_rate": 2048}}]
quotas:
  description:
    - Every client quota of the cluster after the run (in check mode, what it would be), ordered by entity.
    - Values of keys Kafka stores as integers are integers; C(request_percentage) and C(controller_mutation_rate) are
      floats.
  returned: success
  type: list
  elements: dict
  contains:
    entity: {description: The entity with keys C(user) / C(client_id) / C(ip);
            C(<default>) is the default entity., type: dict}
    quota_values: {description: The quota keys and values of the entity., type: dict}
  sample: [{"entity": {"user": "alice", "client_id": "<default>"}, "quota_values": {"consumer_byte_rate":
          4096, "request_percentage": 12.5}}]
planned:
  description:
    - When Kafka refuses a change, every change the run meant to make (same form as RV(changes)).
    - If the validation refused it, nothing was applied and RV(changes) is empty; if Kafka refused an entity only when
      applying (for example a concurrent change of permissions), RV(changes) lists the entities that were applied.
  returned: when Kafka refuses a change
  type: list
  elements: dict
errors:
  description: The entities Kafka refused, with the keys involved and Kafka's error name and message.
  returned: when Kafka refuses a change
  type: list
  elements: dict
  contains:
    entity: {description: The refused entity., type: dict}
    quota_keys: {description: The quota keys the change set or removed., type: list, elements: str}
    error: {description: "Kafka's error name, for example C(INVALID_REQUEST) or C(CLUSTER_AUTHORIZATION_FAILED).",
           type: str}
    message: {description: "Kafka's error message, if any.", type: str}
  sample: [{"entity": {"ip": "10.0.0.300"}, "quota_keys": ["connection_creation_rate"], "error": "INVALID_REQUEST",
            "message": "10.0.0.300 is not a valid IP or resolvable host."}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils import connection, quota_spec
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapterError
from ansible_collections.headroom.kafka.plugins.module_utils.quota_apply import QuotaApplyError, reconcile
from ansible_collections.headroom.kafka.plugins.module_utils.quota_options import QUOTA_OPTIONS, spec_from_params

MODULE_OPTIONS = dict(
    quotas=dict(type="list", elements="dict", required=True, options=QUOTA_OPTIONS),
    exclusive=dict(type="bool", default=False),
)


ARGUMENT_SPEC = connection.argument_spec(**MODULE_OPTIONS)
OPTION_RANGES = {}  # quota values are checked with the quota set (quota_spec), naming the item


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_together=connection.CONNECTION_REQUIRED_TOGETHER,
        required_if=connection.CONNECTION_REQUIRED_IF,
        supports_check_mode=True,
    )
    connection.check(module, OPTION_RANGES)
    try:
        desired = quota_spec.desired_state(spec_from_params(module.params["quotas"]))
    except quota_spec.QuotaSpecError as exc:
        module.fail_json(msg=str(exc))
    adapter = connection.connect(module, "to read and alter its client quotas")
    try:
        result = reconcile(adapter, desired, exclusive=module.params["exclusive"], check_mode=module.check_mode)
    except QuotaApplyError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    except KafkaAdapterError as exc:
        message = str(exc)
        if "CLUSTER_AUTHORIZATION_FAILED" in message:
            message += " (the principal needs DESCRIBE_CONFIGS on the cluster resource to read client quotas)"
        module.fail_json(msg=message)
    finally:
        adapter.close()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
