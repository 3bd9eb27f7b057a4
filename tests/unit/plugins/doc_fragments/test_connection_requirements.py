"""The connection doc fragment tells users the client libraries' versions the collection installs and is tested with:
requirements.txt's, word for word."""

import os
import re

import yaml

from ansible_collections.headroom.kafka.plugins.doc_fragments.connection import ModuleDocFragment

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 4)


def _requirements():
    """{name: [specifier, ...]} of requirements.txt."""
    found = {}
    with open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line:
                name, specifiers = re.match(r"([A-Za-z0-9_.-]+)\s*(.*)", line).groups()
                found[name.lower()] = sorted(part.replace(" ", "") for part in specifiers.split(","))
    return found


def test_the_fragments_client_libraries_are_those_of_requirements_txt():
    listed = {}
    for line in yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["requirements"]:
        name, specifiers = re.match(r"([A-Za-z0-9_.-]+)\s*([^(]*)", line).groups()
        listed[name.lower()] = sorted(part.replace(" ", "") for part in specifiers.strip().split(","))
    required = _requirements()
    assert listed == {name: required[name] for name in ("kafka-python", "confluent-kafka")}
