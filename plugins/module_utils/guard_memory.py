# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The disk guard's memory on disk (the strimzi policy's validity clock and the brokers it remembers): the disk_guard
module's state_file and the guard process's --state-file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile
from typing import Optional

from ansible_collections.headroom.kafka.plugins.module_utils import disk_guard

# The longest file name Linux file systems take (NAME_MAX), in bytes of the name's UTF-8.
NAME_MAX = 255


def path_problem(option: str, path: str) -> Optional[str]:
    """Why the memory cannot be kept at ``path``, naming ``option``, or None: a null byte, a name longer than the file
    systems take, or a directory that does not exist. Checked before the cluster is asked anything."""
    if "\x00" in path:
        return "{0}: {1!r} contains a null byte, which no file name may hold".format(option, path)
    for name in path.split(os.sep):
        size = len(name.encode("utf-8", "surrogateescape"))
        if size > NAME_MAX:
            return "{0}: the name {1!r}... is {2} bytes long; a file name may have at most {3}".format(
                option, name[:40], size, NAME_MAX
            )
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        return "{0}: the directory of {1!r} does not exist".format(option, path)
    return None


def load_memory(path: Optional[str]) -> disk_guard.GuardMemory:
    """The memory kept at ``path``: none when there is no file or it is not a memory (the next complete observation
    writes a good one)."""
    if not path or not os.path.exists(path):
        return disk_guard.GuardMemory()
    try:
        with open(path, encoding="utf-8") as handle:
            return disk_guard.GuardMemory.from_json(json.load(handle))
    except (OSError, ValueError):
        return disk_guard.GuardMemory()


def save_memory(path: str, memory: disk_guard.GuardMemory) -> None:
    """Write the memory atomically (a reader, or a guard started after a crash, never sees half a file)."""
    handle, temporary = tempfile.mkstemp(prefix=".headroom-guard-", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(memory.to_json(), stream, sort_keys=True)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
