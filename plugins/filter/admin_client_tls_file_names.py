# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: admin_client_tls_file_names
short_description: The names the admin_client_tls role gives the admin client's TLS files on each broker
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - The file name of each key of C(admin_client_tls_files) in the role's directory - the same names
    P(headroom.kafka.admin_client_tls_plugin_admin#filter) points the quota plugin's admin client at.
positional: _input, keystore_type
options:
  _input:
    description: The trust store's type.
    type: str
    choices: [PKCS12, JKS]
    required: true
  keystore_type:
    description: The key store's type.
    type: str
    choices: [PKCS12, JKS]
    default: PKCS12
"""

EXAMPLES = r"""
- name: Show where the trust store goes
  ansible.builtin.debug:
    msg: "{{ ('PKCS12' | headroom.kafka.admin_client_tls_file_names('JKS')).truststore }}"
"""

RETURN = r"""
_value:
  description: The name of each file, by its key in C(admin_client_tls_files), and C(pem_key_store), the PEM key store
    the role writes from C(cert_pem) and C(key_pem).
  type: dict
  sample:
    {truststore: truststore.p12, keystore: keystore.jks, ca_pem: ca.crt, cert_pem: admin.crt, key_pem: admin.key,
     pem_key_store: admin.pem}
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils import admin_client_tls


def admin_client_tls_file_names(truststore_type, keystore_type="PKCS12"):
    try:
        return admin_client_tls.file_names(truststore_type, keystore_type)
    except admin_client_tls.AdminClientTlsError as exc:
        raise AnsibleFilterError("admin_client_tls_file_names: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"admin_client_tls_file_names": admin_client_tls_file_names}
