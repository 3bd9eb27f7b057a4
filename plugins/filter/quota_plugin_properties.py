# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: quota_plugin_properties
short_description: Broker properties for a Kafka quotas spec (Strimzi quota plugin or Kafka's built-in quotas)
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - Turns a quotas spec (the Strimzi operator's C(quotas) API in Ansible form) into the broker properties that configure
    it, after checking the whole spec. Nothing is written anywhere; the result is a dict of property names to values.
  - "With O(_input.type=strimzi): the Strimzi quota plugin (C(io.strimzi.kafka.quotas.StaticQuotaCallback)), in the
    order the Strimzi operator writes it: C(client.quota.callback.class), the admin client's C(bootstrap.servers), its
    security settings, C(produce), C(fetch), the volume limit, C(excluded.principal.name.list), then
    C(storage.check-interval), C(throttle.factor.fallback) and C(throttle.factor.validity.duration). Plugin keys are
    prefixed with C(client.quota.callback.static.), admin client keys with C(client.quota.callback.static.kafka.admin.).
    Fields left unset are not written."
  - With O(_input.type=kafka), Kafka's built-in quotas on the default user apply; they are set through
    M(headroom.kafka.client_quota), not in broker files, so the result is empty (unless O(free_form) is given).
  - Values are written as Kafka parses them, C(1000) rather than C(1000.0), C(0.1) for doubles, durations in seconds
    or ISO 8601 as the plugin reads each key.
  - An invalid spec fails the task before anything changes, with a message naming the field, the value and what is
    allowed. Use P(headroom.kafka.quota_plugin_warnings#filter) for the warnings (overridden free-form keys, legacy
    keys).
positional: _input, admin, internal_principals, free_form
options:
  _input:
    description: The quotas spec (usually the C(kafka_quotas) variable). Keys with a null value count as unset.
    type: dict
    required: true
    suboptions:
      type:
        description:
          - V(kafka) for Kafka's built-in quotas on the default user, V(strimzi) for the Strimzi quota plugin.
        type: str
        required: true
        choices: [kafka, strimzi]
      producer_byte_rate:
        description:
          - The default produce quota, a whole number of bytes per second per broker.
          - With V(kafka), must be greater than 0; the plugin (V(strimzi)) also accepts 0.
        type: int
      consumer_byte_rate:
        description:
          - The default fetch quota, a whole number of bytes per second per broker.
          - With V(kafka), must be greater than 0; the plugin (V(strimzi)) also accepts 0.
        type: int
      request_percentage:
        description:
          - V(kafka) only. Share of request handler and network thread time of the default user, greater than 0.
        type: float
      controller_mutation_rate:
        description: V(kafka) only. Partition mutations per second for the default user, greater than 0.
        type: float
      min_available_bytes_per_volume:
        description:
          - V(strimzi) only. Producers are stopped when any volume of the cluster has this many free bytes or fewer.
          - Exactly one of O(_input.min_available_bytes_per_volume) and O(_input.min_available_ratio_per_volume) is
            required with V(strimzi).
        type: int
      min_available_ratio_per_volume:
        description:
          - V(strimzi) only. Producers are stopped when any volume of the cluster has this share of its capacity free
            or less, between 0 and 1.
        type: float
      excluded_principals:
        description:
          - V(strimzi) only. Principals the plugin never throttles, each written C(User:<name>), for example
            C(User:CN=my-app,O=example) for a TLS client or C(User:alice) for a SASL user.
          - Written after O(internal_principals), without duplicates; nothing is written when both are empty.
        type: list
        elements: str
      check_interval:
        description:
          - V(strimzi) only. How often the plugin reads the cluster's volumes, in whole seconds or as an ISO 8601
            duration such as V(PT1M); written as seconds. V(0) turns the storage checks off. The plugin's default is 60.
          - V(1) is refused - the plugin gives each check the interval less one second, so every check would time out.
        type: raw
      throttle_factor_fallback:
        description:
          - V(strimzi) only. The throttle factor applied when the volume data is older than
            O(_input.throttle_factor_validity), between 0 and 1. The plugin's default is 1.
        type: float
      throttle_factor_validity:
        description:
          - V(strimzi) only. How long a throttle factor stays valid without a fresh reading, as an ISO 8601 duration
            such as V(PT5M) (or a number of seconds); longer than zero. The plugin's default is V(PT5M).
        type: raw
      peak_fill_rate:
        description:
          - V(strimzi) only. The fastest, in bytes per second, that a volume can fill (producers at full speed and
            the replication of what they write); not a plugin setting, written nowhere.
          - With O(_input.min_available_bytes_per_volume), the limit must cover what arrives before the throttle
            acts - C(peak_fill_rate * (check_interval + 1 + 0.6 + 6)), the plugin's check, the throttle reaching the
            producers and what still lands afterwards, as measured on real Kafka with writers at full speed (the
            performance guide's race section). A limit that does not is refused, naming the least limit and the longest
            check interval that would hold it.
          - Without O(_input.check_interval), the longest whole-second interval the limit holds is written, up to the
            plugin's default of 60.
          - With O(_input.min_available_ratio_per_volume) the bytes depend on each volume's size, so this only warns;
            M(headroom.kafka.volume_limits) checks it with its O(headroom.kafka.volume_limits#module:sizing) option.
        type: float
      accept_uncovered_limit:
        description:
          - V(strimzi) only. Apply a limit that does not cover O(_input.peak_fill_rate), with a warning instead of the
            refusal (the override for a limit known to be short, for example while disks are being added).
        type: bool
        default: false
  admin:
    description:
      - The plugin's own Kafka admin client, with which it reads the volumes of every broker. Required with
        V(strimzi), ignored with V(kafka).
      - Each setting becomes C(client.quota.callback.static.kafka.admin.<Kafka client setting>).
    type: dict
    suboptions:
      bootstrap_servers:
        description: The brokers to connect to, as a list of C(host:port) or a comma-separated string. Required.
        type: raw
      security_protocol:
        description:
          - The admin client's C(security.protocol).
          - When unset, V(SASL_SSL) is written if O(admin.sasl) is given, V(SSL) if only O(admin.ssl) is given, and
            nothing (Kafka's default V(PLAINTEXT)) otherwise.
        type: str
        choices: [PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL]
      ssl:
        description:
          - TLS settings, each written as the Kafka setting of the same name (O(admin.ssl.truststore_location) becomes
            C(ssl.truststore.location)).
          - Key and trust stores are files (PKCS12 or JKS) or PEM text; PEM text implies the PEM store type.
        type: dict
        suboptions:
          truststore_type:
            description: C(ssl.truststore.type), for example V(PKCS12), V(JKS) or V(PEM).
            type: str
          truststore_location:
            description: C(ssl.truststore.location), the trust store file on the broker.
            type: str
          truststore_password:
            description: C(ssl.truststore.password).
            type: str
          truststore_certificates:
            description: C(ssl.truststore.certificates), trusted certificates as PEM text.
            type: str
          keystore_type:
            description: C(ssl.keystore.type).
            type: str
          keystore_location:
            description: C(ssl.keystore.location), the key store file on the broker.
            type: str
          keystore_password:
            description: C(ssl.keystore.password).
            type: str
          keystore_certificate_chain:
            description: C(ssl.keystore.certificate.chain), the client certificate chain as PEM text.
            type: str
          keystore_key:
            description: C(ssl.keystore.key), the client private key as PEM text.
            type: str
          key_password:
            description: C(ssl.key.password).
            type: str
          endpoint_identification_algorithm:
            description: C(ssl.endpoint.identification.algorithm); an empty string turns host name verification off.
            type: str
      sasl:
        description: SASL settings.
        type: dict
        suboptions:
          mechanism:
            description:
              - C(sasl.mechanism), for example V(SCRAM-SHA-512), V(SCRAM-SHA-256) or V(PLAIN).
              - Required with O(admin.sasl).
            type: str
          username:
            description: With O(admin.sasl.password), builds C(sasl.jaas.config) for the SCRAM or PLAIN login module.
            type: str
          password:
            description: The password for O(admin.sasl.username).
            type: str
          jaas_config:
            description: C(sasl.jaas.config) as is, instead of O(admin.sasl.username) and O(admin.sasl.password).
            type: str
      properties:
        description:
          - Any other admin client setting, by its Kafka name (for example C(request.timeout.ms)), written in name
            order. Settings the fields above own cannot be given here.
        type: dict
  internal_principals:
    description:
      - Principals excluded from throttling before the user's O(_input.excluded_principals), such as the brokers' own
        identity and the tooling that frees disk space (the Strimzi operator excludes its brokers and Cruise Control).
      - Each must be written C(User:<name>).
      - The user the plugin's admin client logs in as under SASL (O(admin.sasl)) comes first without being listed,
        as the Strimzi proposal has the internal users excluded automatically. An admin client with a client
        certificate is named by the brokers' C(ssl.principal.mapping.rules), so list that principal here.
    type: list
    elements: str
  free_form:
    description:
      - The user's own broker properties. When given, the result is these properties with the quotas spec applied
        instead of the plugin properties alone.
      - Quota plugin keys the spec decides are replaced (with V(kafka), every quota plugin key is removed), and the
        legacy keys C(client.quota.callback.static.storage.soft) and C(client.quota.callback.static.storage.hard) are
        removed; other keys keep their order and the plugin properties follow.
    type: dict
notes:
  - Secrets (passwords, C(sasl.jaas.config), PEM private keys) are returned in clear, since they have to reach the
    broker file; use C(no_log) on tasks that show the result.
seealso:
  - plugin: headroom.kafka.quota_plugin_warnings
    plugin_type: filter
  - module: headroom.kafka.client_quota
  - name: Strimzi quota plugin
    description: The plugin's configuration reference.
    link: https://github.com/strimzi/kafka-quotas-plugin
"""

EXAMPLES = r"""
- name: Quota plugin properties for every broker
  ansible.builtin.set_fact:
    quota_properties: >-
      {{ kafka_quotas | headroom.kafka.quota_plugin_properties(
           admin={'bootstrap_servers': groups['kafka'] | map('regex_replace', '$', ':9093') | list,
                  'ssl': {'keystore_location': '/etc/kafka/tls/quota.p12',
                          'keystore_password': vault_quota_store_password, 'keystore_type': 'PKCS12',
                          'truststore_location': '/etc/kafka/tls/ca.p12',
                          'truststore_password': vault_quota_store_password, 'truststore_type': 'PKCS12'}},
           internal_principals=['User:CN=kafka-broker,O=example']) }}
  vars:
    kafka_quotas:
      type: strimzi
      producer_byte_rate: 1048576
      consumer_byte_rate: 2097152
      min_available_ratio_per_volume: 0.1
      excluded_principals: ["User:CN=cruise-control,O=example"]
      check_interval: PT30S
      throttle_factor_validity: PT5M
  no_log: true

# quota_properties:
#   client.quota.callback.class: io.strimzi.kafka.quotas.StaticQuotaCallback
#   client.quota.callback.static.kafka.admin.bootstrap.servers: kafka-1:9093,kafka-2:9093,kafka-3:9093
#   client.quota.callback.static.kafka.admin.security.protocol: SSL
#   client.quota.callback.static.kafka.admin.ssl.keystore.location: /etc/kafka/tls/quota.p12
#   ...
#   client.quota.callback.static.produce: "1048576"
#   client.quota.callback.static.fetch: "2097152"
#   client.quota.callback.static.storage.per.volume.limit.min.available.ratio: "0.1"
#   client.quota.callback.static.excluded.principal.name.list: >-
#     User:CN=kafka-broker,O=example;User:CN=cruise-control,O=example
#   client.quota.callback.static.storage.check-interval: "30"
#   client.quota.callback.static.throttle.factor.validity.duration: PT5M

- name: The whole broker configuration, the user's properties with the quotas spec applied
  ansible.builtin.set_fact:
    broker_properties: >-
      {{ kafka_quotas
         | headroom.kafka.quota_plugin_properties(admin=quota_admin, free_form=kafka_broker_properties) }}
  no_log: true

- name: Kafka's built-in quotas write no broker properties
  ansible.builtin.assert:
    that:
      - "({'type': 'kafka', 'producer_byte_rate': 1048576} | headroom.kafka.quota_plugin_properties) == {}"
"""

RETURN = r"""
_value:
  description:
    - Broker property names and their values as text, in the order to write them.
    - Empty for O(_input.type=kafka) without O(free_form).
  type: dict
  sample:
    client.quota.callback.class: io.strimzi.kafka.quotas.StaticQuotaCallback
    client.quota.callback.static.kafka.admin.bootstrap.servers: kafka-1:9093,kafka-2:9093
    client.quota.callback.static.produce: "1048576"
    client.quota.callback.static.storage.per.volume.limit.min.available.bytes: "5368709120"
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils import quota_plugin_spec


def quota_plugin_properties(spec, admin=None, internal_principals=None, free_form=None):
    try:
        return quota_plugin_spec.render(spec, admin, internal_principals, free_form)[0]
    except quota_plugin_spec.QuotaPluginSpecError as exc:
        raise AnsibleFilterError("quota_plugin_properties: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"quota_plugin_properties": quota_plugin_properties}
