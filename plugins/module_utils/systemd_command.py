# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An argument list as a systemd unit's ``ExecStart=`` line, with no I/O.

systemd splits the line into words itself (no shell): a word with a space, a quote or a backslash is written in double
quotes with C escapes, and two characters are systemd's own in every word, quoted or not: ``%`` starts a specifier and
``$`` a variable, so each is doubled to stand for itself (systemd.service(5), "Command lines"). A shell's quoting
(``'...'``) protects neither.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from typing import Iterable

# Words of these characters only are written as they are.
_PLAIN = re.compile(r"^[A-Za-z0-9_+=:,./@-]+$")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "%": "%%", "$": "$$"}


class SystemdCommandError(ValueError):
    """An argument list that no ExecStart= line can carry; the message says which argument and why."""


def exec_word(argument: str) -> str:
    """One argument as one word of an ExecStart= line."""
    if not isinstance(argument, str):
        raise SystemdCommandError("every argument must be a string (got {0!r})".format(argument))
    if "\x00" in argument:
        raise SystemdCommandError("an argument holds a NUL character: {0!r}".format(argument))
    if _PLAIN.match(argument):
        return argument
    return '"{0}"'.format("".join(_ESCAPES.get(character, character) for character in argument))


def exec_line(argv: Iterable[str]) -> str:
    """The arguments as the value of ExecStart=: the first must be an absolute path (systemd looks no program up in a
    PATH of the caller's; a relative name would be searched in systemd's own fixed one)."""
    words = list(argv)
    if not words:
        raise SystemdCommandError("the command is empty")
    if not isinstance(words[0], str) or not words[0].startswith("/"):
        raise SystemdCommandError(
            "the program must be an absolute path for systemd (got {0!r}): give the full path of the program".format(
                words[0]
            )
        )
    return " ".join(exec_word(word) for word in words)
