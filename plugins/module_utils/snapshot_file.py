# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a path can be the JSON-lines file that usage_snapshot appends snapshots to and usage_snapshot_info reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from typing import Optional


def path_problem(path: str) -> Optional[str]:
    """Why path can never be a snapshot file, or None (a file that does not exist yet is fine)."""
    if not path.strip():
        return "must name a file (got {0!r})".format(path)
    if os.path.isdir(path):
        return "must be a file, not a directory (got {0!r})".format(path)
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.exists(directory) and not os.path.isdir(directory):
        return "is inside {0!r}, which is not a directory".format(directory)
    if not os.path.isdir(directory):
        return "is inside a directory that does not exist ({0!r}); create it first".format(directory)
    return None
