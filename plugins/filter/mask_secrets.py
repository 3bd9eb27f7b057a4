# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: mask_secrets
short_description: Hide the secret values of Kafka properties
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - Returns a copy of the properties with the values of secret keys replaced by C(********), for diffs and logs.
  - A key is secret when its name holds C(pass), C(pwd), C(secret), C(token), C(credential) or C(jaas) (passwords,
    JAAS configurations), or ends with C(keystore.key) (PEM private keys). A null value stays null.
positional: _input
options:
  _input:
    description: The properties.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Show what the block holds without its secrets
  ansible.builtin.debug:
    msg: "{{ plugin_properties | headroom.kafka.mask_secrets }}"
"""

RETURN = r"""
_value:
  description: The properties with secret values masked.
  type: dict
"""

from ansible_collections.headroom.kafka.plugins.module_utils.secret_masking import masked_values


class FilterModule:
    def filters(self):
        return {"mask_secrets": masked_values}
