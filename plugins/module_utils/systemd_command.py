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
from typing import Iterable, Mapping

# Words of these characters only are written as they are.
_PLAIN = re.compile(r"[A-Za-z0-9_+=:,./@-]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FILE_ESCAPES = {"\\": "\\\\", '"': '\\"', "`": "\\`", "$": "\\$"}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "%": "%%", "$": "$$"}


class SystemdCommandError(ValueError):
    """An argument list that no ExecStart= line can carry; the message says which argument and why."""


def exec_word(argument: str) -> str:
    """One argument as one word of an ExecStart= line."""
    if not isinstance(argument, str):
        raise SystemdCommandError("every argument must be a string (got {0!r})".format(argument))
    if "\x00" in argument:
        raise SystemdCommandError("an argument holds a NUL character: {0!r}".format(argument))
    if _PLAIN.fullmatch(argument):  # not match: its $ also matches before a final newline
        return argument
    return '"{0}"'.format("".join(_ESCAPES.get(character, character) for character in argument))


def environment_file(variables: Mapping[str, str]) -> str:
    """``variables`` as the text of an ``EnvironmentFile=``: one ``NAME="value"`` line each, the value as it is (UTF-8)
    with only the four characters systemd unescapes in double quotes escaped (backslash, double quote, backquote and
    dollar; systemd keeps any other backslash, so JSON's escapes would reach the process as written). A value with a
    line break or another control character cannot be one line and is refused, naming the variable."""
    lines = []
    for name, value in variables.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise SystemdCommandError("{0!r} is not an environment variable name".format(name))
        if not isinstance(value, str):
            raise SystemdCommandError("{0}: the value must be a string (got a {1})".format(name, type(value).__name__))
        if any(ord(character) < 32 or ord(character) == 127 for character in value):
            raise SystemdCommandError(
                "{0}: the value holds a line break or another control character, which an environment file cannot "
                "carry".format(name)
            )
        lines.append(
            '{0}="{1}"\n'.format(name, "".join(_FILE_ESCAPES.get(character, character) for character in value))
        )
    return "".join(lines)


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
