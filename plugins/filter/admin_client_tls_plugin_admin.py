# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: admin_client_tls_plugin_admin
short_description: The quota plugin's admin client settings for the TLS files the admin_client_tls role places
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - The admin client settings of P(headroom.kafka.quota_plugin_properties#filter) (C(bootstrap_servers),
    C(security_protocol), C(ssl)) that use the trust store and key store the C(admin_client_tls) role writes on each
    broker, so that the plugin connects with mutual TLS from the same files as operators' C(client.properties).
  - The trust store is the PKCS12/JKS file or the CA's PEM file; the key store the PKCS12/JKS file or the PEM key store
    the role writes from C(cert_pem) and C(key_pem). Passwords are passed on, never shown.
  - The C(quota_plugin) role uses it when C(admin_client_tls_files) is set and C(quota_plugin_admin) is empty.
positional: _input
options:
  _input:
    description: The C(admin_client_tls) role's variables without their C(admin_client_tls_) prefix.
    type: dict
    required: true
    suboptions:
      dir:
        description: The directory of the files on each broker.
        type: path
        required: true
      files:
        description: The files given (C(truststore), C(keystore), C(ca_pem), C(cert_pem), C(key_pem)).
        type: dict
      bootstrap_servers:
        description: The listener the admin client connects to.
        type: str
        required: true
      security_protocol:
        description: C(SSL) or C(SASL_SSL).
        type: str
        default: SSL
      truststore_type:
        description: C(PKCS12) or C(JKS).
        type: str
        default: PKCS12
      keystore_type:
        description: C(PKCS12) or C(JKS).
        type: str
        default: PKCS12
      truststore_password:
        description: The trust store's password.
        type: str
      keystore_password:
        description: The key store's password.
        type: str
      key_password:
        description: The private key's password.
        type: str
      endpoint_identification_algorithm:
        description: C(https) to check the brokers' host names, empty not to.
        type: str
seealso:
  - plugin: headroom.kafka.quota_plugin_properties
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Render the quota plugin's properties with the admin client's TLS files
  ansible.builtin.set_fact:
    quota_plugin_block: >-
      {{ kafka_quotas | headroom.kafka.quota_plugin_properties(admin=({
           'dir': '/etc/kafka/admin-client', 'bootstrap_servers': 'broker-1:9093',
           'files': {'ca_pem': 'ca.crt', 'cert_pem': 'admin.crt', 'key_pem': 'admin.key'}}
         | headroom.kafka.admin_client_tls_plugin_admin)) }}
"""

RETURN = r"""
_value:
  description: The admin client settings.
  type: dict
  sample:
    bootstrap_servers: broker-1:9093
    security_protocol: SSL
    ssl:
      truststore_location: /etc/kafka/admin-client/ca.crt
      truststore_type: PEM
      keystore_location: /etc/kafka/admin-client/admin.pem
      keystore_type: PEM
      endpoint_identification_algorithm: https
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils import admin_client_tls


def admin_client_tls_plugin_admin(settings):
    try:
        return admin_client_tls.plugin_admin(settings)
    except admin_client_tls.AdminClientTlsError as exc:
        raise AnsibleFilterError("admin_client_tls_plugin_admin: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"admin_client_tls_plugin_admin": admin_client_tls_plugin_admin}
