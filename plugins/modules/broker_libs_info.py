#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: broker_libs_info
short_description: The jars of a Kafka broker's libs directory, its Kafka version and which jar provides a class
version_added: 1.0.0
description:
  - Runs on the broker's host and lists the jars of O(libs_dir) (C(/opt/kafka/libs) in the Apache layout), the
    directory C(bin/kafka-run-class.sh) puts on the broker's classpath.
  - Reports the Kafka version the server jar's name gives (C(kafka_2.13-4.3.1.jar) or C(kafka-server-4.3.1.jar)).
  - For each class in O(classes), names the jar that provides it, so that a play can stop before it configures a
    class the broker cannot load (a broker given C(client.quota.callback.class) without the quota plugin's jar does
    not start, with a C(ClassNotFoundException)); the P(headroom.kafka.quota_plugin#role) role does so.
  - Needs nothing but Python on the host (jars are read with C(zipfile)).
author:
  - Headroom maintainers (!UNKNOWN)
extends_documentation_fragment:
  - headroom.kafka.attributes.read_only
options:
  libs_dir:
    description: The broker's libs directory; a directory that does not exist fails the task, naming it.
    type: path
    required: true
  classes:
    description:
      - Java class names to look for, for example V(io.strimzi.kafka.quotas.StaticQuotaCallback) (C($) for a nested
        class). A name that is not a Java class name fails the task before the directory is read.
      - Only jars on the broker's classpath count (C(bin/kafka-run-class.sh) leaves test, source and doc jars out).
    type: list
    elements: str
    default: []
notes:
  - Only the directory itself is read, not its subdirectories, as C(bin/kafka-run-class.sh) builds the classpath.
  - A jar that cannot be read as a zip file is listed in RV(unreadable_jars) with a warning; it provides no class.
"""

EXAMPLES = r"""
- name: Which jar provides the Strimzi quota plugin, and which Kafka this is
  headroom.kafka.broker_libs_info:
    libs_dir: /opt/kafka/libs
    classes:
      - io.strimzi.kafka.quotas.StaticQuotaCallback
  register: broker_libs

- name: Stop before configuring a class the broker cannot load
  ansible.builtin.assert:
    that: broker_libs.classes['io.strimzi.kafka.quotas.StaticQuotaCallback'] is not none
    fail_msg: "{{ inventory_hostname }}: no jar of /opt/kafka/libs provides the quota plugin"

- name: Say which Kafka the broker runs
  ansible.builtin.debug:
    msg: "Kafka {{ broker_libs.kafka_version | default('unknown', true) }}"
"""

RETURN = r"""
libs_dir:
  description: The directory read.
  returned: always
  type: str
  sample: /opt/kafka/libs
jars:
  description: The file names of the jars in the directory, sorted.
  returned: always
  type: list
  elements: str
  sample: [kafka-clients-4.3.1.jar, kafka-quotas-plugin-0.3.1.jar, kafka_2.13-4.3.1.jar]
kafka_version:
  description:
    - The Kafka version the server jars name; null when they name none, or more than one (see RV(kafka_versions)).
  returned: always
  type: str
  sample: 4.3.1
kafka_versions:
  description:
    - Every Kafka version the server jars name, oldest first; more than one means two releases' jars in one directory.
  returned: always
  type: list
  elements: str
  sample: ["4.3.1"]
classes:
  description:
    - For each class of O(classes), the jar that provides it; null when no jar on the classpath does.
    - When several jars provide a class, the first in name order, with a warning.
  returned: always
  type: dict
  sample: {"io.strimzi.kafka.quotas.StaticQuotaCallback": kafka-quotas-plugin-0.3.1.jar}
missing_classes:
  description: The classes of O(classes) that no jar provides, in the order given.
  returned: always
  type: list
  elements: str
  sample: []
unreadable_jars:
  description: Jars that could not be read as zip files (only read when O(classes) is given).
  returned: always
  type: list
  elements: str
  sample: []
"""

import os
import zipfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.headroom.kafka.plugins.module_utils.broker_libs import (
    BrokerLibsError,
    class_entry,
    classes_in_jars,
    jar_names,
    kafka_version,
    kafka_versions,
    on_classpath,
)

ARGUMENT_SPEC = dict(
    libs_dir=dict(type="path", required=True),
    classes=dict(type="list", elements="str", default=[]),
)


def read_entries(module, libs_dir, jars, unreadable):
    """jar name -> its entry names, for the jars on the classpath; the jars that cannot be read go to ``unreadable``."""
    entries = {}
    for jar in jars:
        if not on_classpath(jar):
            continue
        try:
            with zipfile.ZipFile(os.path.join(libs_dir, jar)) as archive:
                entries[jar] = archive.namelist()
        except (zipfile.BadZipFile, OSError) as error:
            unreadable.append(jar)
            module.warn(
                "{0} in {1} could not be read as a jar, so it provides no class: {2}".format(jar, libs_dir, error)
            )
    return entries


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    libs_dir = module.params["libs_dir"]
    classes = module.params["classes"]
    try:
        for index, name in enumerate(classes):
            class_entry(name, "classes[{0}]".format(index))
    except BrokerLibsError as error:
        module.fail_json(msg=str(error))
    if not os.path.exists(libs_dir):
        module.fail_json(msg="libs_dir {0} does not exist on this host".format(libs_dir), libs_dir=libs_dir)
    if not os.path.isdir(libs_dir):
        module.fail_json(msg="libs_dir {0} is not a directory".format(libs_dir), libs_dir=libs_dir)
    try:
        names = os.listdir(libs_dir)
    except OSError as error:
        module.fail_json(msg="libs_dir {0} cannot be read: {1}".format(libs_dir, error.strerror), libs_dir=libs_dir)
    jars = jar_names(name for name in names if os.path.isfile(os.path.join(libs_dir, name)))
    unreadable = []
    providers = classes_in_jars(read_entries(module, libs_dir, jars, unreadable) if classes else {}, classes)
    for name, found in providers.items():
        if len(found) > 1:
            module.warn(
                "{0} is in {1} jars of {2} ({3}): the broker loads it from whichever comes first on its "
                "classpath".format(name, len(found), libs_dir, ", ".join(found))
            )
    versions = kafka_versions(jars)
    if len(versions) > 1:
        module.warn(
            "{0} holds the server jars of Kafka {1}: two releases on one classpath".format(
                libs_dir, " and ".join(versions)
            )
        )
    module.exit_json(
        changed=False,
        libs_dir=libs_dir,
        jars=jars,
        kafka_version=kafka_version(jars),
        kafka_versions=versions,
        classes=dict((name, found[0] if found else None) for name, found in providers.items()),
        missing_classes=[name for name in classes if not providers[name]],
        unreadable_jars=unreadable,
    )


if __name__ == "__main__":
    main()
