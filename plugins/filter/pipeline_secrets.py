# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: pipeline_secrets
short_description: The usage pipeline job's passwords as the environment variables it reads them from
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - Maps C(sasl_password) to C(HEADROOM_KAFKA_SASL_PASSWORD) and C(ssl_password) to C(HEADROOM_KAFKA_SSL_PASSWORD),
    the variables the job reads a C(kafka://) source's passwords from (they never enter its command line or URL).
  - Empty or null passwords are left out; any other key fails, naming it.
positional: _input
options:
  _input:
    description: C(sasl_password) and C(ssl_password), each optional.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Run the job with its passwords in its environment
  ansible.builtin.command:
    argv: "{{ pipeline_argv }}"
  environment: "{{ {'sasl_password': vault_pipeline_password} | headroom.kafka.pipeline_secrets }}"
  no_log: true
"""

RETURN = r"""
_value:
  description: The environment variables, by name.
  type: dict
  sample: {"HEADROOM_KAFKA_SASL_PASSWORD": "********"}
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils.pipeline_command import (
    PipelineCommandError,
    secret_environment,
)


def pipeline_secrets(passwords):
    try:
        return secret_environment(passwords)
    except PipelineCommandError as exc:
        raise AnsibleFilterError("pipeline_secrets: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"pipeline_secrets": pipeline_secrets}
