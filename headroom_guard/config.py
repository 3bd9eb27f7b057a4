"""The guard's configuration file: a YAML (or JSON) mapping with the options of the ``headroom.kafka.disk_guard``
module, checked by the module's own argument spec and rules before anything talks to Kafka."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from headroom_pipeline.collection import ensure_importable

ensure_importable()

# pylint: disable=wrong-import-position
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator  # noqa: E402

from ansible_collections.headroom.kafka.plugins.module_utils import disk_guard, guard_options  # noqa: E402

MASK = "********"


class ConfigError(ValueError):
    """A configuration the guard cannot run with; the message names the file, the option and what is allowed."""


def _masked(text: str, secrets: Iterable[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, MASK)
    return text


def load(path: str) -> tuple[dict[str, Any], guard_options.GuardSettings]:
    """(params, GuardSettings) from the file at ``path``; ConfigError names what is wrong (secrets masked)."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except OSError as exc:
        raise ConfigError(f"--config: cannot read {path!r}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config: {path!r} is not YAML: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError(
            f"--config: {path!r} must hold a mapping of the disk_guard module's options (got {type(document).__name__})"
        )
    if "state_file" in document:
        raise ConfigError(
            f"--config: {path!r}: state_file is the module's; the guard keeps its state with --state-file"
        )
    validator = ArgumentSpecValidator(
        guard_options.ARGUMENT_SPEC,
        mutually_exclusive=guard_options.MUTUALLY_EXCLUSIVE,
        required_if=guard_options.REQUIRED_IF,
        required_together=guard_options.REQUIRED_TOGETHER,
    )
    result = validator.validate(document)
    secrets = set(result._no_log_values)  # pylint: disable=protected-access  # the values the spec marks no_log
    if result.error_messages:
        raise ConfigError(f"--config: {path!r}: " + _masked("; ".join(result.error_messages), secrets))
    params = result.validated_parameters
    try:
        return params, guard_options.settings(params)
    except disk_guard.GuardError as exc:
        raise ConfigError(f"--config: {path!r}: " + _masked(str(exc), secrets)) from None
