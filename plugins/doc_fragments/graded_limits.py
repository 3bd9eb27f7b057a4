# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """The soft and hard limits of the graded policy, as the modules that judge volumes with it take them."""

    DOCUMENTATION = r"""
options:
  soft_limit:
    description:
      - With O(policy=graded) (required) - the limit where throttling starts.
      - A volume breaches a free-space limit when its free bytes (or free percent of its capacity) are at or below
        the level, and a consumed-space limit when its consumed bytes are at or above the level.
      - The soft limit must trip first - a higher level than O(hard_limit) for V(min_free_bytes) and
        V(min_free_percentage), a lower level for V(consumed_space); both limits must be of the same type.
    type: dict
    suboptions:
      type:
        description: What the level measures.
        type: str
        required: true
        choices: [min_free_bytes, min_free_percentage, consumed_space]
      level:
        description: Bytes, or percent (0 to 100) for V(min_free_percentage). Must be >= 0.
        type: float
        required: true
  hard_limit:
    description:
      - With O(policy=graded) (required) - the limit where producers are paused (throttle factor 0.0, which the disk
        guard applies as 1 byte per second, Kafka's smallest produce quota). Same form as O(soft_limit).
    type: dict
    suboptions:
      type:
        description: What the level measures; the same type as O(soft_limit).
        type: str
        required: true
        choices: [min_free_bytes, min_free_percentage, consumed_space]
      level:
        description: Bytes, or percent (0 to 100) for V(min_free_percentage). Must be >= 0.
        type: float
        required: true
"""
