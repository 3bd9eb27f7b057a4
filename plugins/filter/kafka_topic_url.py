# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: kafka_topic_url
short_description: A topic as the usage pipeline's kafka:// URL, from the modules' connection options
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - Builds C(kafka://host:port[,host:port]/topic[?option=value...]) for the usage pipeline's C(--snapshots) from the
    connection options the modules take (the C(group/headroom.kafka.kafka) module defaults, for example).
  - Every option other than the passwords becomes a URL parameter of the same name; options whose value is null are
    left out. C(sasl_password) and C(ssl_password) never enter the URL - the job reads them from
    C(HEADROOM_KAFKA_SASL_PASSWORD) and C(HEADROOM_KAFKA_SSL_PASSWORD) (the usage_pipeline role's
    C(usage_pipeline_sasl_password) and C(usage_pipeline_ssl_password)).
  - Fails naming the problem when C(bootstrap_servers) is missing, the topic is not a Kafka topic name, or an option
    is not a connection option.
positional: _input, topic
options:
  _input:
    description: The connection options; C(bootstrap_servers) a list or a comma-separated string of host:port items.
    type: dict
    required: true
  topic:
    description: The topic.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Run the usage pipeline over the snapshot topic
  ansible.builtin.include_role:
    name: headroom.kafka.usage_pipeline
  vars:
    usage_pipeline_snapshots: "{{ kafka_connection | headroom.kafka.kafka_topic_url('__headroom_volume_usage') }}"
    usage_pipeline_sasl_password: "{{ kafka_connection.sasl_password | default('') }}"
    usage_pipeline_out: /srv/headroom/report
"""

RETURN = r"""
_value:
  description: The URL.
  type: str
  sample: kafka://kafka-1:9093,kafka-2:9093/__headroom_volume_usage?security_protocol=SASL_SSL&sasl_mechanism=SCRAM-SHA-512
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils.pipeline_command import PipelineCommandError
from ansible_collections.headroom.kafka.plugins.module_utils.pipeline_command import kafka_topic_url as url_of


def kafka_topic_url(connection, topic):
    try:
        return url_of(connection, topic)
    except PipelineCommandError as exc:
        raise AnsibleFilterError("kafka_topic_url: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"kafka_topic_url": kafka_topic_url}
