"""The disk_guard module's argument spec applied to the guard's configuration, without Ansible.

A module gets its options checked by Ansible's ArgumentSpecValidator, which Ansible ships to the host with the module.
The guard runs on a host without Ansible, so it applies ``guard_options.ARGUMENT_SPEC`` with this checker of its
own: the part of Ansible's argument spec the spec uses (types str, path, int, float, bool, list and dict, list
elements, sub-options, required, default, choices, no_log; mutually_exclusive, required_if and required_together),
with Ansible's conversions and in Ansible's order, so that a configuration file means exactly what the same options
mean to the module. A spec that uses anything else is refused (SpecError) rather than half applied.
tests/unit/guard/test_argument_spec.py holds the checker to ArgumentSpecValidator on generated input.

The messages are the guard's own: each names the option (``quotas[0].entity``), the value and what is allowed. The
value of an option the spec marks no_log is never shown, nor the value of an option the spec does not know (a
misspelt ``sasl_pasword`` holds a password).
"""

from __future__ import annotations

import ast
import decimal
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Dict, List, Set

# What this checker implements, per option and as checks across options; a spec using more is refused.
OPTION_KEYS = frozenset(("type", "elements", "options", "required", "default", "choices", "no_log"))
TYPES = ("str", "path", "int", "float", "bool", "list", "dict")
# Ansible's booleans (ansible.module_utils.parsing.convert_bool): strings compared lowercased and stripped.
BOOLEANS_TRUE = frozenset(("y", "yes", "on", "1", "true", "t", 1, 1.0, True))
BOOLEANS_FALSE = frozenset(("n", "no", "off", "0", "false", "f", 0, 0.0, False))
SHOWN_LENGTH = 80  # a value longer than this is cut in a message
# Digits of a whole number: far beyond any option's range (the largest is a Java long, 19 digits).
MAX_DIGITS = 1000


class SpecError(ValueError):
    """The argument spec uses something this checker does not implement (a mistake in the code, not in the input)."""


class Checked:
    """The outcome of a check: ``params`` (every option of the spec, converted and with its default), ``errors`` (one
    message per problem; params are not to be used when there is any) and ``secrets`` (the text of every no_log value,
    to be masked in anything shown)."""

    def __init__(self, params: Dict[str, Any], errors: List[str], secrets: Set[str]) -> None:
        self.params, self.errors, self.secrets = params, errors, secrets


def check(
    document: Mapping[str, Any],
    spec: Mapping[str, Mapping[str, Any]],
    mutually_exclusive: Sequence[Sequence[str]] = (),
    required_if: Sequence[Any] = (),
    required_together: Sequence[Sequence[str]] = (),
) -> Checked:
    """``document`` checked against ``spec`` and the checks across options, as ArgumentSpecValidator(spec,
    mutually_exclusive=..., required_if=..., required_together=...).validate(document) does."""
    _check_spec(spec, "")
    for required in required_if:
        if len(required) not in (3, 4):
            raise SpecError(f"required_if entry {required!r}: expected [option, value, options] or [..., any]")
    errors: List[str] = []
    secrets: Set[str] = set()
    params = _check_options(
        dict(document), spec, "", errors, secrets, mutually_exclusive, required_if, required_together
    )
    return Checked(params, errors, secrets)


def _check_spec(spec: Mapping[str, Mapping[str, Any]], where: str) -> None:
    for name, option in spec.items():
        unknown = sorted(set(option) - OPTION_KEYS)
        if unknown:
            raise SpecError(f"option {where}{name} uses {', '.join(unknown)}, which the guard's checker does not apply")
        kind, elements = option.get("type", "str"), option.get("elements")
        if kind not in TYPES or (elements is not None and (kind != "list" or elements not in TYPES)):
            raise SpecError(f"option {where}{name}: type {kind!r} with elements {elements!r} is not implemented")
        if option.get("required") and option.get("default") is not None:
            raise SpecError(f"option {where}{name} is required and has a default")
        if "options" in option:
            if not (kind == "dict" or elements == "dict"):
                raise SpecError(f"option {where}{name} has sub-options but holds no mapping")
            _check_spec(option["options"], f"{where}{name}.")


def _check_options(
    params: Dict[str, Any],
    spec: Mapping[str, Mapping[str, Any]],
    where: str,
    errors: List[str],
    secrets: Set[str],
    mutually_exclusive: Sequence[Sequence[str]] = (),
    required_if: Sequence[Any] = (),
    required_together: Sequence[Sequence[str]] = (),
) -> Dict[str, Any]:
    """One level of options, in ArgumentSpecValidator's order: unknown options, no_log values, mutually exclusive
    options (among those given), defaults, required options, types, choices, the checks across options, the remaining
    options set to None, sub-options. ``where``: the prefix naming this level in messages (``quotas[0].``)."""
    unknown = sorted(name for name in params if name not in spec)
    if unknown:
        errors.append(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(where + name for name in unknown)} "
            f"(allowed{' in ' + where[:-1] if where else ''}: {', '.join(sorted(spec))})"
        )
        for name in unknown:
            del params[name]
    for name, option in spec.items():
        if option.get("no_log") and params.get(name):  # as Ansible: a false value (0, "") hides nothing
            secrets.update(_texts(params[name]))
    for group in mutually_exclusive:
        given = [name for name in group if name in params]
        if len(given) > 1:
            errors.append(f"{_names(where, given)} are mutually exclusive: give only one of them")
    _set_defaults(params, spec, only_given_defaults=True)
    missing = sorted(name for name, option in spec.items() if option.get("required") and name not in params)
    if missing:
        errors.append(f"{_names(where, missing)} {'is' if len(missing) == 1 else 'are'} required")
    for name, option in spec.items():
        if name in params:
            _convert(params, name, option, where, errors)
    for name, option in spec.items():
        if "choices" in option and name in params:
            _check_choices(params[name], name, option, where, errors)
    for group in required_together:
        given = [name for name in group if name in params]
        if given and len(given) < len(group):
            # Ansible's words, which people search for.
            errors.append(
                f"parameters are required together: {', '.join(where + name for name in group)} "
                f"(got {_names(where, given)} only)"
            )
    for required in required_if:
        name, value, needed = required[0], required[1], list(required[2])
        if name not in params or params[name] != value:
            continue
        absent = [other for other in needed if other not in params]
        if len(required) > 3 and required[3]:
            if len(absent) == len(needed):
                errors.append(f"{where}{name} {value} needs one of {_names(where, needed, 'or')} (got none of them)")
        elif absent:
            errors.append(f"{where}{name} {value} needs {_names(where, needed)} (missing: {_names(where, absent)})")
    _set_defaults(params, spec, only_given_defaults=False)
    for name, option in spec.items():
        if "options" in option and params.get(name) is not None:
            params[name] = _check_sub_options(params[name], name, option, where, errors, secrets)
    return params


def _set_defaults(params: Dict[str, Any], spec: Mapping[str, Mapping[str, Any]], only_given_defaults: bool) -> None:
    """Options not given take their default; a first pass sets only the defaults the spec gives (None is not one), so
    that the required and cross-option checks see what was given plus real defaults, as Ansible's do."""
    for name, option in spec.items():
        default = option.get("default")
        if name not in params and (default is not None or not only_given_defaults):
            params[name] = default


def _convert(params: Dict[str, Any], name: str, option: Mapping[str, Any], where: str, errors: List[str]) -> None:
    value = params[name]
    if value is None and not option.get("required") and option.get("default") is None:
        return  # None means not given
    kind = option.get("type", "str")
    try:
        params[name] = converted = CONVERTERS[kind](value)
    except (TypeError, ValueError, ArithmeticError):
        errors.append(f"{where}{name} must be {WANTED[kind]} (got {_shown(value, option)})")
        return
    elements = option.get("elements")
    if elements is None:
        return
    kept = []
    for index, item in enumerate(converted):
        try:
            kept.append(CONVERTERS[elements](item))
        except (TypeError, ValueError, ArithmeticError):
            errors.append(f"{where}{name}[{index}] must be {WANTED[elements]} (got {_shown(item, option)})")
    params[name] = kept


def _check_choices(value: Any, name: str, option: Mapping[str, Any], where: str, errors: List[str]) -> None:
    choices = list(option["choices"])
    allowed = ", ".join(str(choice) for choice in choices)
    if isinstance(value, list):
        wrong = [item for item in value if item not in choices]
        if wrong:
            errors.append(f"{where}{name} items must each be one of {allowed} (got {_shown(wrong, option)})")
    elif value not in choices:
        errors.append(f"{where}{name} must be one of {allowed} (got {_shown(value, option)})")


def _check_sub_options(
    value: Any, name: str, option: Mapping[str, Any], where: str, errors: List[str], secrets: Set[str]
) -> Any:
    """Each mapping of a dict option, or of a list of dicts, checked against the option's sub-options."""
    listed = isinstance(value, Sequence) and not isinstance(value, str)
    items = list(value) if listed else [value]
    checked = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            errors.append(f"{where}{name} must be a mapping or a list of mappings (got {_shown(item, option)})")
            checked.append(item)
            continue
        prefix = f"{where}{name}[{index}]." if option.get("type") == "list" else f"{where}{name}."
        checked.append(_check_options(dict(item), option["options"], prefix, errors, secrets))
    return checked if listed else checked[0]


# -- Ansible's conversions (ansible.module_utils.common.validation's check_type_*) -----------------------------------
def _to_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):  # YAML's !!binary
        return value.decode("utf-8", "surrogateescape")
    if value is None:
        # Ansible 2.19 turns None into "" here, 2.17 into "None": neither is what anybody meant.
        raise TypeError("no value")
    return str(value)


def _to_path(value: Any) -> str:
    return os.path.expanduser(os.path.expandvars(_to_str(value)))


def _to_int(value: Any) -> int:
    if isinstance(value, int):
        return value
    number = decimal.Decimal(value)  # strings and floats: "12", "1e3", 3.0, not 3.5
    if number.is_finite() and number.adjusted() > MAX_DIGITS:
        raise ValueError("too many digits")  # "1e999999999" would take Python minutes to turn into an int
    if number != int(number):
        raise ValueError("not a whole number")
    return int(number)


def _to_float(value: Any) -> float:
    return value if isinstance(value, float) else float(value)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (str, int, float)):
        normalized = value.lower().strip() if isinstance(value, str) else value
        if normalized in BOOLEANS_TRUE:
            return True
        if normalized in BOOLEANS_FALSE:
            return False
    raise TypeError("not a boolean")


def _to_list(value: Any) -> List[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return value.split(",")  # Ansible's comma-separated form
    if isinstance(value, (int, float)):
        return [str(value)]
    raise TypeError("not a list")


def _to_dict(value: Any) -> Dict[str, Any]:
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise TypeError("not a mapping")
    if value.startswith("{"):  # JSON, or a Python literal
        try:
            parsed = json.loads(value)
        except ValueError:
            try:
                parsed = ast.literal_eval(value)
            except Exception:  # pylint: disable=broad-except  # anything literal_eval refuses is not a mapping
                parsed = None
        if not isinstance(parsed, dict):
            raise ValueError("not a mapping")
        return parsed
    if "=" not in value:
        raise ValueError("not a mapping")
    return _key_values(value)


def _key_values(text: str) -> Dict[str, str]:
    """Ansible's ``key=value key2='value 2'`` form: fields split at commas and spaces outside quotes; backslash
    escapes."""
    fields, field, quote, escaped = [], [], "", False
    for char in text.strip():
        if escaped:
            field.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif not quote and char in ("'", '"'):
            quote = char
        elif quote and char == quote:
            quote = ""
        elif not quote and char in (",", " "):
            if field:
                fields.append("".join(field))
            field = []
        else:
            field.append(char)
    if field:
        fields.append("".join(field))
    if not all("=" in item for item in fields):
        raise ValueError("a field without '='")
    return dict(item.split("=", 1) for item in fields)


CONVERTERS: Dict[str, Callable[[Any], Any]] = {
    "str": _to_str,
    "path": _to_path,
    "int": _to_int,
    "float": _to_float,
    "bool": _to_bool,
    "list": _to_list,
    "dict": _to_dict,
}
WANTED = {
    "str": "a string",
    "path": "a path",
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false (or yes/no, on/off, 1/0)",
    "list": "a list",
    "dict": "a mapping",
}


# -- messages --------------------------------------------------------------------------------------------------------
def _names(where: str, names: Sequence[str], last: str = "and") -> str:
    named = [where + name for name in names]
    return named[0] if len(named) == 1 else f"{', '.join(named[:-1])} {last} {named[-1]}"


def _shown(value: Any, option: Mapping[str, Any]) -> str:
    """A value as a message shows it: JSON's words (null, true), cut when long; an option marked no_log shows its
    type only."""
    if option.get("no_log"):
        return "a value of type " + ("null" if value is None else type(value).__name__)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    text = repr(value)
    return text if len(text) <= SHOWN_LENGTH else text[: SHOWN_LENGTH - 3] + "..."


def _texts(value: Any) -> Set[str]:
    """The text of a no_log value and of everything in it (Ansible's _return_datastructure_name)."""
    if isinstance(value, (str, bytes)):
        return {_to_str(value)} if value else set()
    if isinstance(value, Mapping):
        return set().union(*(_texts(item) for item in value.values())) if value else set()
    if isinstance(value, (list, tuple, set, frozenset)):
        return set().union(*(_texts(item) for item in value)) if value else set()
    if value is None or isinstance(value, bool):
        return set()
    return {str(value)}
