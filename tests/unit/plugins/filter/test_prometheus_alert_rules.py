"""The prometheus_alert_rules filter: a thin wrapper, and documentation that says what the renderer takes."""

import os
import re

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.headroom.kafka.plugins.filter import prometheus_alert_rules
from ansible_collections.headroom.kafka.plugins.module_utils import alert_rules

GUARD = {"cluster": "prod", "kafka_disk_guard": {"min_available_ratio": 0.1}}


def the_filter():
    return prometheus_alert_rules.FilterModule().filters()["prometheus_alert_rules"]


def test_the_filter_is_the_renderer():
    assert list(prometheus_alert_rules.FilterModule().filters()) == ["prometheus_alert_rules"]
    assert the_filter()(GUARD) == alert_rules.render(GUARD)


def test_a_refusal_becomes_a_filter_error_naming_the_field():
    with pytest.raises(AnsibleFilterError, match=r"prometheus_alert_rules: kafka_disk_guard: min_available_ratio must"):
        the_filter()(dict(GUARD, kafka_disk_guard={"min_available_ratio": 2}))


def test_the_documented_settings_are_the_accepted_ones_with_their_defaults():
    doc = yaml.safe_load(prometheus_alert_rules.DOCUMENTATION)
    assert doc["name"] == "prometheus_alert_rules"
    settings = doc["options"]["_input"]["suboptions"]
    assert list(settings) == list(alert_rules.SETTINGS)
    for name, option in settings.items():
        if name in ("cluster", "kafka_quotas", "kafka_disk_guard"):
            assert "default" not in option, name
        else:
            assert option["default"] == alert_rules.DEFAULTS[name], name
    assert yaml.safe_load(prometheus_alert_rules.RETURN)["_value"]["type"] == "dict"
    yaml.safe_load(prometheus_alert_rules.EXAMPLES)


def test_the_prometheus_rules_role_passes_the_renderers_defaults_as_its_own():
    root = os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    )
    role = os.path.join(root, "roles", "prometheus_rules")
    with open(os.path.join(role, "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(role, "vars", "main.yml"), encoding="utf-8") as handle:
        settings = yaml.safe_load(handle)["prometheus_rules_settings"]
    with open(os.path.join(role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    passed = {}
    for setting, template in settings.items():
        variable = re.fullmatch(r"\{\{ (prometheus_rules_\w+) \}\}", template)
        if variable and setting in alert_rules.DEFAULTS and "{{" not in str(defaults[variable[1]]):
            passed[setting] = variable[1]  # a default of its own, not taken from another role's variable
    assert {"runbook_url", "keep_firing_for", "scrape_for", "fill_for"} <= set(passed)
    for setting, variable in passed.items():
        assert defaults[variable] == options[variable]["default"] == alert_rules.DEFAULTS[setting], variable
