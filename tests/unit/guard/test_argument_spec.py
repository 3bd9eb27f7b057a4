"""The guard applies the disk_guard module's argument spec without Ansible (headroom_guard.argument_spec): it must
accept exactly what the module accepts, with the same values, and refuse the rest with messages that name the
option, the value and what is allowed, never a secret.

Held to Ansible's own ArgumentSpecValidator (which the module uses) on generated configurations: both sides are
judged as the guard uses them, the argument spec and then guard_options.settings (the rules), since Ansible 2.19
turns a null string option into "" where the guard refuses it, which the rules refuse anyway."""

import contextlib
import copy
import json
from unittest import mock

import pytest
from ansible.module_utils.ansible_release import __version__ as ANSIBLE_VERSION
from ansible.module_utils.common import parameters
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from packaging.version import Version

from ansible_collections.headroom.kafka.plugins.module_utils import disk_guard, guard_options
from headroom_guard import argument_spec

SPEC = guard_options.ARGUMENT_SPEC
CHECKS = {
    "mutually_exclusive": guard_options.MUTUALLY_EXCLUSIVE,
    "required_if": guard_options.REQUIRED_IF,
    "required_together": guard_options.REQUIRED_TOGETHER,
}
BASE = {"bootstrap_servers": ["kafka-1:9092"], "min_available_ratio": 0.1, "default_producer_byte_rate": 1000}
LEFT_OUT = object()  # an option of BASE a case leaves out


def ours(document):
    checked = argument_spec.check(copy.deepcopy(document), SPEC, **CHECKS)
    return checked


def messages(document):
    return "; ".join(ours(document).errors)


def guard_accepts(document):
    """The params the guard runs with, or None when it refuses the document."""
    checked = ours(document)
    if checked.errors:
        return None
    try:
        guard_options.settings(checked.params)
    except disk_guard.GuardError:
        return None
    return checked.params


def module_accepts(document):
    """The params the module runs with, or None when Ansible's validator (or the rules) refuse the document."""
    validated = ansible_validates(document)
    if validated is None:
        return None
    try:
        guard_options.settings(validated)
    except disk_guard.GuardError:
        return None
    return validated


# -- generated configurations ----------------------------------------------------------------------------------------
NOISE = st.sampled_from([None, "", "x", " 7 ", "1e3", "3.0", "nan", "yes", "off", 0, 1, 2, -1, 3.5, 1.0, True, False])


def mostly(valid):
    """Values of ``valid`` three times in four, else noise: enough configurations pass to compare their values."""
    return st.one_of(valid, valid, valid, NOISE)


def scalar(kind):
    if kind == "int":
        return mostly(st.one_of(st.integers(-5, 1 << 40), st.sampled_from(["12", "1e3", "3.0", "3.5", 4.0, " 9 "])))
    if kind == "float":
        return mostly(
            st.one_of(
                st.floats(allow_nan=False, allow_infinity=False, min_value=-10, max_value=1 << 40),
                st.integers(0, 1 << 20),
                st.sampled_from(["0.5", "1e2", "abc", "inf"]),
            )
        )
    if kind == "bool":
        return mostly(
            st.one_of(st.booleans(), st.sampled_from(["yes", "No", " TRUE ", "on", "1", "0", "maybe", 1.0, 2]))
        )
    if kind in ("str", "path"):
        return mostly(st.one_of(st.text("abc:/-_ 9", max_size=6), st.integers(0, 99)))
    raise AssertionError(kind)


def value_for(option, depth=0):
    kind = option.get("type", "str")
    if "choices" in option:
        return mostly(st.one_of(st.sampled_from(list(option["choices"])), st.sampled_from(["bogus", 1])))
    if kind == "dict":
        if "options" in option:
            return mostly(
                st.one_of(
                    document_for(option["options"], depth + 1),
                    st.sampled_from(["type=min_free_bytes level=5", '{"type": "min_free_bytes", "level": 7}', "x", 5]),
                )
            )
        return mostly(st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=2))
    if kind == "list":
        elements = option.get("elements", "str")
        if elements == "dict":
            item = (
                document_for(option["options"], depth + 1)
                if "options" in option
                else st.dictionaries(st.sampled_from(["broker_id", "log_dir"]), st.integers(0, 9), max_size=2)
            )
            return mostly(st.lists(item, max_size=2))
        return mostly(
            st.one_of(st.lists(scalar(elements), max_size=3), st.sampled_from(["a,b", "kafka-1:9092,kafka-2:9092", 7]))
        )
    return scalar(kind)


def document_for(spec, depth=0):
    """Mappings of some of ``spec``'s options (each valid or not), one in four with an option the spec lacks."""
    if depth > 2:
        return st.just({})
    names = sorted(spec)
    known = st.lists(st.sampled_from(names), max_size=4, unique=True).flatmap(
        lambda chosen: st.fixed_dictionaries({name: value_for(spec[name], depth) for name in chosen})
    )
    return st.tuples(known, st.sampled_from([None, None, None, "unknown_option"]), NOISE).map(
        lambda parts: dict(parts[0], **{parts[1]: parts[2]}) if parts[1] else parts[0]
    )


def comparable(params):
    """Params as text, where NaN equals NaN (a "nan" string is a float option's NaN on both sides; the rules refuse
    it)."""
    return json.dumps(params, sort_keys=True, default=repr)


def _int_as_ansible_2_19_reads_it(value):
    """ansible-core 2.19's check_type_int, which the guard follows: before 2.19, an int option refused a whole number
    written as a float or a float's string (4.0, "3.0", "1e3"), which the module accepts from 2.19 on."""
    try:
        return argument_spec._to_int(value)  # pylint: disable=protected-access  # the rule the guard applies
    except (ValueError, ArithmeticError) as error:
        raise TypeError(f"{type(value).__name__} cannot be converted to an int") from error


def ints_as_ansible_2_19_reads_them():
    """On ansible-core before 2.19, Ansible's validator with 2.19's rule for ints; else as it is."""
    if Version(ANSIBLE_VERSION) >= Version("2.19"):
        return contextlib.nullcontext()
    return mock.patch.dict(parameters.DEFAULT_TYPE_VALIDATORS, {"int": _int_as_ansible_2_19_reads_it})


def ansible_validates(document):
    """Ansible's validated params, or None when it refuses the document (or fails on it)."""
    try:
        with ints_as_ansible_2_19_reads_them():
            result = ArgumentSpecValidator(SPEC, **CHECKS).validate(copy.deepcopy(document))
    except Exception:  # pylint: disable=broad-except  # e.g. an int option given Infinity: OverflowError
        return None
    return None if result.error_messages else result.validated_parameters


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=document_for(SPEC), drop=st.lists(st.sampled_from(sorted(BASE)), max_size=2, unique=True))
def test_the_guard_accepts_what_the_module_accepts_with_the_same_values(changes, drop):
    document = {key: value for key, value in BASE.items() if key not in drop}
    document.update(changes)
    note(f"document: {document!r}")
    checked, validated = ours(document), ansible_validates(document)
    if not checked.errors:
        assert validated is not None and comparable(checked.params) == comparable(validated)
    elif validated is not None:
        # The one difference: a null where a string is wanted, which Ansible 2.19 turns into "" (2.17 into "None") and
        # the guard refuses at once; the module's rules then refuse it too.
        with pytest.raises(disk_guard.GuardError):
            guard_options.settings(validated)


@settings(max_examples=300, deadline=None)
@given(changes=document_for(SPEC))
def test_the_guard_masks_at_least_what_the_module_masks(changes):
    document = {**BASE, "sasl_username": "guard", **changes}
    try:
        result = ArgumentSpecValidator(SPEC, **CHECKS).validate(copy.deepcopy(document))
    except Exception:  # pylint: disable=broad-except  # Ansible's own crash on a sub-option that is not a mapping
        assume(False)
    # Never fewer; sometimes more: Ansible stops listing them where a sub-option is not a mapping.
    assert ours(document).secrets >= set(result._no_log_values)  # pylint: disable=protected-access


def test_a_valid_configuration_gets_every_option_with_its_default():
    params = guard_accepts(dict(BASE, quotas=[{"entity": {"user": "app"}, "producer_byte_rate": "6000"}]))
    assert params["security_protocol"] == "PLAINTEXT" and params["request_timeout"] == 30
    assert params["sasl_password"] is None and params["policy"] == "strimzi"
    assert params["quotas"] == [
        {
            "entity": {"user": "app", "client_id": None, "ip": None},
            "producer_byte_rate": 6000.0,
            "consumer_byte_rate": None,
            "request_percentage": None,
            "controller_mutation_rate": None,
            "connection_creation_rate": None,
            "state": "present",
        }
    ]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"request_timeout": "soon"}, "request_timeout must be a number (got 'soon')"),
        (
            {"min_available_bytes": 1.5, "min_available_ratio": None},
            "min_available_bytes must be a whole number (got 1.5)",
        ),
        (
            {"ssl_check_hostname": "maybe"},
            "ssl_check_hostname must be true or false (or yes/no, on/off, 1/0) (got 'maybe')",
        ),
        (
            {"security_protocol": "TLS"},
            "security_protocol must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (got 'TLS')",
        ),
        ({"expected_brokers": [1, "two"]}, "expected_brokers[1] must be a whole number (got 'two')"),
        ({"quotas": [{"producer_byte_rate": 5}]}, "quotas[0].entity is required"),
        (
            {"quotas": [{"entity": {"usr": "a"}}]},
            "unknown option quotas[0].entity.usr (allowed in quotas[0].entity: client_id, ip, user)",
        ),
        ({"soft_limit": {"type": "free", "level": 1}}, "soft_limit.type must be one of min_free_bytes"),
        ({"quotas": "x"}, "quotas[0] must be a mapping (got 'x')"),
        ({"min_available_bytes": 5}, "min_available_bytes and min_available_ratio are mutually exclusive"),
        ({"min_available_ratio": LEFT_OUT}, "policy strimzi needs one of min_available_bytes or min_available_ratio"),
        (
            {"security_protocol": "SASL_SSL", "sasl_username": "u", "sasl_password": "p"},
            "security_protocol SASL_SSL needs sasl_mechanism, sasl_username and sasl_password "
            "(missing: sasl_mechanism)",
        ),
        (
            {"sasl_username": "u"},
            "parameters are required together: sasl_username, sasl_password (got sasl_username only)",
        ),
        ({"policy": None}, "policy must be one of strimzi, graded (got null)"),
    ],
)
def test_a_refusal_names_the_option_the_value_and_what_is_allowed(changes, message):
    document = {key: value for key, value in {**BASE, **changes}.items() if value is not LEFT_OUT}
    found = messages(document)
    assert message in found, found
    assert module_accepts(document) is None, "the module refuses it too"


def test_the_value_of_an_unknown_option_or_a_secret_is_never_shown():
    found = messages(dict(BASE, sasl_pasword="hunter2-never-shown"))
    assert "unknown option sasl_pasword (allowed: bootstrap_servers," in found and "hunter2" not in found
    checked = argument_spec.check({"token": "abc-secret"}, {"token": {"type": "int", "no_log": True}})
    assert checked.errors == ["token must be a whole number (got a value of type str)"]
    assert checked.secrets == {"abc-secret"}


def test_a_spec_using_what_the_checker_does_not_apply_is_refused():
    with pytest.raises(argument_spec.SpecError, match="option name uses aliases"):
        argument_spec.check({}, {"name": {"type": "str", "aliases": ["n"]}})
    with pytest.raises(argument_spec.SpecError, match="type 'raw'"):
        argument_spec.check({}, {"blob": {"type": "raw"}})
    with pytest.raises(argument_spec.SpecError, match="required and has a default"):
        argument_spec.check({}, {"name": {"required": True, "default": "x"}})


def test_a_huge_whole_number_is_refused_at_once():
    found = messages(dict(BASE, min_available_ratio=None, min_available_bytes="1e999999999"))
    assert "min_available_bytes must be a whole number (got '1e999999999')" in found
