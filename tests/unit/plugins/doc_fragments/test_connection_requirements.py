"""The connection doc fragment tells users the client libraries' versions the collection installs and is tested with:
requirements.txt's, word for word."""

import os

import yaml
from packaging.requirements import Requirement

from ansible_collections.headroom.kafka.plugins.doc_fragments.connection import ModuleDocFragment

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 4)


def _requirements():
    """{name: SpecifierSet} of requirements.txt."""
    with open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8") as handle:
        lines = [line.split("#", 1)[0].strip() for line in handle]
    listed = [Requirement(line) for line in lines if line]
    return {requirement.name.lower(): requirement.specifier for requirement in listed}


def test_the_fragments_client_libraries_are_those_of_requirements_txt():
    # A fragment line is a requirement followed by what the library is for, in parentheses.
    lines = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["requirements"]
    listed = [Requirement(line.split("(", 1)[0]) for line in lines]
    required = _requirements()
    assert {requirement.name.lower(): requirement.specifier for requirement in listed} == {
        name: required[name] for name in ("kafka-python", "confluent-kafka")
    }
