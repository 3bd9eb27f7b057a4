# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: pipeline_argv
short_description: The usage pipeline job's command line as a list of arguments
version_added: 1.0.0
author:
  - Headroom maintainers (!UNKNOWN)
description:
  - Builds the argument list of C(python -m headroom_pipeline run) or of
    C(spark-submit .../headroom_pipeline/__main__.py run) from the usage_pipeline role's settings, for
    M(ansible.builtin.command)'s C(argv), so that no shell parses a path, glob or URL.
  - Options whose value is null or empty are left out (the job's defaults apply). Under spark-submit, spark-submit's
    own C(--master) and C(--driver-memory) are used and the job is not given them again.
positional: _input
options:
  _input:
    description:
      - C(launcher) (V(python) or V(spark-submit)), C(python), C(spark_submit), C(spark_submit_args),
        C(collection_root), C(master), C(driver_memory), C(options) (a dict of the job's options to values, in
        order), C(report), C(quiet), C(conf) (Spark settings) and C(extra_args).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Run the job
  ansible.builtin.command:
    argv: >-
      {{ {'launcher': 'python', 'python': ansible_playbook_python,
          'options': {'--snapshots': 'snaps', '--out': 'out'}} | headroom.kafka.pipeline_argv }}
"""

RETURN = r"""
_value:
  description: The argument list.
  type: list
  elements: str
  sample: ["/usr/bin/python3", "-m", "headroom_pipeline", "run", "--snapshots", "snaps", "--out", "out"]
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.module_utils.pipeline_command import PipelineCommandError
from ansible_collections.headroom.kafka.plugins.module_utils.pipeline_command import pipeline_argv as argv_of


def pipeline_argv(settings):
    try:
        return argv_of(settings)
    except PipelineCommandError as exc:
        raise AnsibleFilterError("pipeline_argv: {0}".format(exc)) from exc


class FilterModule:
    def filters(self):
        return {"pipeline_argv": pipeline_argv}
