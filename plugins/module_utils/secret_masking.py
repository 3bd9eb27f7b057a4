# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets kept out of output, diffs and logs, with no I/O: the one mask, which names hold secrets, and the masking
of a text or a mapping.

Ansible hides the values of no_log options in what a module returns; this covers what it cannot see: a library's
message that quotes a password (the Kafka adapter), properties bound for a broker's file shown in a diff (the
mask_secrets filter), the guard's configuration errors (the guard runs without Ansible, and masks its no_log values
itself), and the pipeline's messages, which quote kafka:// URLs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from typing import Any, Dict, Iterable, Mapping, Optional

MASK = "********"  # what Ansible shows in place of a no_log value
# A name (a property key, a URL parameter) that says its value is a secret, whatever its spelling.
SECRET_NAME = re.compile(r"pass(word|wd|phrase)?|pwd|secret|token|credential|jaas", re.IGNORECASE)
# Names whose value is a secret although they do not say so: a PEM private key (ssl.keystore.key).
SECRET_NAME_ENDINGS = ("keystore.key",)


def is_secret_name(name: object) -> bool:
    """Whether the value of a property or parameter called ``name`` is a secret."""
    text = str(name)
    return bool(SECRET_NAME.search(text)) or text.lower().endswith(SECRET_NAME_ENDINGS)


def without_secrets(text: str, secrets: Iterable[Optional[str]]) -> str:
    """``text`` with every occurrence of each secret replaced by MASK: the last line of defence for a message that may
    quote one. The longest secret goes first, so that a secret holding another is masked whole; empty ones and None
    (an option not given) are no secrets."""
    for secret in sorted(set(secret for secret in secrets if secret), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def masked_values(mapping: Optional[Mapping[Any, Any]]) -> Dict[Any, Any]:
    """A copy of ``mapping`` (in its order) with the value of every secret name masked, for a diff or a message; a
    None value stays None (nothing to hide, and a diff still shows that the key is unset)."""
    return dict(
        (key, MASK if value is not None and is_secret_name(key) else value) for key, value in (mapping or {}).items()
    )
