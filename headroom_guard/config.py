"""The guard's configuration file: a JSON (or, with PyYAML installed, YAML) mapping with the options of the
``headroom.kafka.disk_guard`` module, checked by the module's own argument spec and rules before anything talks to
Kafka.

The disk_guard role writes JSON, which the standard library reads: the guard's host needs neither PyYAML nor Ansible
(argument_spec applies the module's argument spec without Ansible).
"""

from __future__ import annotations

import importlib
import json
import sys
from types import ModuleType
from typing import Any, Optional

from ansible_collections.headroom.kafka.plugins.module_utils import disk_guard, guard_options, secret_masking
from headroom_guard import argument_spec


class ConfigError(ValueError):
    """A configuration the guard cannot run with; the message names the file, the option and what is allowed."""


def _yaml() -> Optional[ModuleType]:
    """PyYAML when this Python has it (the guard's wheel does not require it)."""
    try:
        return importlib.import_module("yaml")
    except ImportError:
        return None


def parse(path: str, text: str) -> Any:
    """The document in ``text`` (the file at ``path``): JSON, else YAML when PyYAML is importable."""
    try:
        return json.loads(text)
    except ValueError as json_error:
        yaml = _yaml()
        if yaml is None:
            raise ConfigError(
                f"--config: {path!r} is not JSON ({json_error}), and reading YAML needs PyYAML, which this Python "
                f"({sys.executable}) does not have: write the file as JSON (the disk_guard role does) or install "
                "PyYAML (the wheel's extra headroom-guard[yaml])"
            ) from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"--config: {path!r} is not YAML (nor JSON): {exc}") from None


def load(path: str) -> tuple[dict[str, Any], guard_options.GuardSettings]:
    """(params, GuardSettings) from the file at ``path``; ConfigError names what is wrong (secrets masked)."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError(f"--config: cannot read {path!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--config: {path!r} is not UTF-8 text: {exc}") from None
    document = parse(path, text)
    if not isinstance(document, dict):
        raise ConfigError(
            f"--config: {path!r} must hold a mapping of the disk_guard module's options (got {type(document).__name__})"
        )
    if "state_file" in document:
        raise ConfigError(
            f"--config: {path!r}: state_file is the module's; the guard keeps its state with --state-file"
        )
    checked = argument_spec.check(
        document,
        guard_options.ARGUMENT_SPEC,
        mutually_exclusive=guard_options.MUTUALLY_EXCLUSIVE,
        required_if=guard_options.REQUIRED_IF,
        required_together=guard_options.REQUIRED_TOGETHER,
    )
    if checked.errors:
        raise ConfigError(
            f"--config: {path!r}: " + secret_masking.without_secrets("; ".join(checked.errors), checked.secrets)
        )
    try:
        return checked.params, guard_options.settings(checked.params)
    except disk_guard.GuardError as exc:
        raise ConfigError(f"--config: {path!r}: " + secret_masking.without_secrets(str(exc), checked.secrets)) from None
