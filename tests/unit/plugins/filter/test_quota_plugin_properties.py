"""The quota_plugin_properties and quota_plugin_warnings filters: thin wrappers, their documentation, and a real
playbook."""

import inspect
import json
import os
import subprocess
import sys

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.filter import quota_plugin_properties, quota_plugin_warnings
from kafka_testbed.model import quota_plugin_config

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
COLLECTIONS = os.path.join(ROOT, "build", "pytest-collections")
P = "client.quota.callback.static."
SPEC = {
    "type": "strimzi",
    "producer_byte_rate": 1048576.0,
    "min_available_ratio_per_volume": 0.1,
    "excluded_principals": ["User:alice"],
    "check_interval": "PT1M",
}
ADMIN = {
    "bootstrap_servers": ["kafka-1:9093"],
    "ssl": {"truststore_location": "/etc/kafka/ca.p12", "truststore_password": "secret"},
}


def _filters(module):
    return module.FilterModule().filters()


def test_filter_names():
    assert list(_filters(quota_plugin_properties)) == ["quota_plugin_properties"]
    assert list(_filters(quota_plugin_warnings)) == ["quota_plugin_warnings"]


def test_properties_filter():
    props = _filters(quota_plugin_properties)["quota_plugin_properties"](
        SPEC, admin=ADMIN, internal_principals=["User:CN=broker"]
    )
    assert list(props)[0] == "client.quota.callback.class"
    assert props[P + "produce"] == "1048576"
    assert props[P + "excluded.principal.name.list"] == "User:CN=broker;User:alice"
    assert props[P + "storage.check-interval"] == "60"
    assert quota_plugin_config.validate(props) == []


def test_kafka_type_is_empty_and_free_form_merges():
    fn = _filters(quota_plugin_properties)["quota_plugin_properties"]
    assert fn({"type": "kafka", "producer_byte_rate": 1024}) == {}
    assert fn({"type": "kafka"}, free_form={"client.quota.callback.class": "x", "log.dirs": "/d"}) == {"log.dirs": "/d"}


def test_warnings_filter():
    fn = _filters(quota_plugin_warnings)["quota_plugin_warnings"]
    assert fn(SPEC, ADMIN) == []
    warnings = fn(SPEC, ADMIN, None, {P + "storage.soft": "1", P + "produce": "2", "log.dirs": "/d"})
    assert len(warnings) == 2
    assert P + "storage.soft" in warnings[0] and P + "produce" in warnings[1]


@pytest.mark.parametrize(
    "module, name",
    [(quota_plugin_properties, "quota_plugin_properties"), (quota_plugin_warnings, "quota_plugin_warnings")],
)
def test_errors_become_filter_errors(module, name):
    with pytest.raises(
        AnsibleFilterError,
        match=name + ": kafka_quotas.excluded_principals\\[0\\] 'alice' is not a principal.*User:alice",
    ):
        _filters(module)[name](dict(SPEC, excluded_principals=["alice"]), ADMIN)
    with pytest.raises(AnsibleFilterError, match="admin.bootstrap_servers is required with type strimzi"):
        _filters(module)[name](SPEC)


@pytest.mark.parametrize(
    "module, fn",
    [
        (quota_plugin_properties, quota_plugin_properties.quota_plugin_properties),
        (quota_plugin_warnings, quota_plugin_warnings.quota_plugin_warnings),
    ],
)
def test_documentation_matches_the_function(module, fn):
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert doc["name"] == fn.__name__
    params = list(inspect.signature(fn).parameters)
    assert ["_input"] + params[1:] == [p.strip() for p in doc["positional"].split(",")]
    assert set(doc["options"]) == set(["_input"] + params[1:])
    assert yaml.safe_load(module.RETURN)["_value"]["type"] in ("dict", "list")
    yaml.safe_load(module.EXAMPLES)


def test_documented_spec_fields_are_the_accepted_fields():
    from ansible_collections.headroom.kafka.plugins.module_utils import quota_plugin_spec

    options = yaml.safe_load(quota_plugin_properties.DOCUMENTATION)["options"]
    assert set(options["_input"]["suboptions"]) == set(quota_plugin_spec.ALL_FIELDS)
    admin = options["admin"]["suboptions"]
    assert set(admin) == set(quota_plugin_spec.ADMIN_FIELDS)
    assert set(admin["ssl"]["suboptions"]) == set(quota_plugin_spec.SSL_FIELDS)
    assert set(admin["sasl"]["suboptions"]) == set(quota_plugin_spec.SASL_FIELDS)


PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    spec: {type: strimzi, producer_byte_rate: 1000.0, min_available_bytes_per_volume: 1073741824, check_interval: PT30S}
  tasks:
    - ansible.builtin.copy:
        dest: "{{ playbook_dir }}/properties.json"
        content: >-
          {{ spec | headroom.kafka.quota_plugin_properties(admin={'bootstrap_servers': 'k1:9093'})
             | dict2items | to_json }}
        mode: "0600"
    - ansible.builtin.copy:
        dest: "{{ playbook_dir }}/warnings.json"
        content: >-
          {{ spec | headroom.kafka.quota_plugin_warnings(admin={'bootstrap_servers': 'k1:9093'}, free_form={'x': 1})
             | to_json }}
        mode: "0600"
    - ansible.builtin.debug:
        msg: >-
          {{ {'type': 'strimzi'} | headroom.kafka.quota_plugin_properties(admin={'bootstrap_servers': 'k1:9093'}) }}
"""


@pytest.mark.slow
def test_filters_in_a_playbook(tmp_path):
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
        ANSIBLE_LOCALHOST_WARNING="false",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ANSIBLE_NOCOLOR="1",
    )
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    run = subprocess.run(
        [ansible_playbook, str(playbook)],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 2, output
    first = json.loads((tmp_path / "properties.json").read_text())
    assert [item["key"] for item in first] == [
        "client.quota.callback.class",
        P + "kafka.admin.bootstrap.servers",
        P + "produce",
        P + "storage.per.volume.limit.min.available.bytes",
        P + "storage.check-interval",
    ]
    assert [item["value"] for item in first][2:] == ["1000", "1073741824", "30"]
    assert json.loads((tmp_path / "warnings.json").read_text()) == []
    assert "quota_plugin_properties: kafka_quotas needs exactly one of min_available_bytes_per_volume" in output
