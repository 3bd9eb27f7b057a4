# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The graded factor in steps, with hysteresis, with no I/O: so that Kafka's client quotas change only when the throttle
really changes, not at every decision while a volume moves at all.

The exact graded factor follows the free space: every decision during a slow fill gives another factor (0.5, then
0.49992), and each new factor rewrites every declared quota entity (one metadata record each). In steps:

* the **position** is the exact graded factor before it is clamped to 0..1 (volume_limits.graded_position: above 1
  while the volume is short of its soft limit, at or below 0 at its hard limit);
* the factor **falls** at once to the highest step at or below the position (never looser than the exact factor);
* it **rises** only to the highest step at or below the position less half a step: free space that comes back by less
  than half a step above the next step (a segment appended, then deleted) leaves the factor where it is;
* no volume judged (none seen, or none with limits) opens at once, as the exact factor does;
* ``held`` is the factor in force before this decision (the guard reads it from the quotas Kafka holds, the timeline
  replays its previous instant); none held (the first decision) gives the falling rule's step.

The factor is never above the exact factor, so the steps only ever throttle sooner. With a step of 0 the factor is the
exact one (every change rewritten), as before steps existed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from typing import Optional

DEFAULT_STEP = 0.05
# A product of a position by the number of steps that should be whole (0.15 x 20) can come out a hair below it.
ROUNDING = 1e-9


class StepError(ValueError):
    """A step the rule cannot use; the message names it, its value and what is allowed."""


def check_step(step: object, option: str = "throttle_factor_step") -> float:
    """``step`` as a float: 0 (the exact factor), or a share of 1 that divides it (0.05, 0.1, 0.25, 0.5, 1)."""
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step) or not 0 <= step <= 1:
        raise StepError(
            "{0} must be 0 (the exact factor) or a number from 0 to 1 that divides 1, such as 0.05 or 0.1 "
            "(got {1!r})".format(option, step)
        )
    if step > 0 and abs(1.0 / step - round(1.0 / step)) > 1e-6:
        raise StepError(
            "{0} must divide 1 into whole steps, such as 0.05 (20 steps) or 0.1 (10 steps), so that 1.0 is a step "
            "(got {1!r}: 1 / {1!r} = {2:g})".format(option, step, 1.0 / step)
        )
    return float(step)


def steps_of(step: float) -> int:
    """The number of steps from 0 to 1."""
    return int(round(1.0 / step))


def _step_at_or_below(value: float, count: int) -> float:
    return min(max(math.floor(value * count + ROUNDING) / count, 0.0), 1.0)


def held_factor(position: Optional[float], held: Optional[float], step: float, tolerance: float = 0.0) -> float:
    """The factor to apply: ``position`` (None: no volume judged, 1.0 at once) in steps of ``step`` with hysteresis from
    ``held`` (None: no factor in force). ``tolerance``: how far below its step a held factor may read (the guard reads
    it back from whole bytes per second: one byte over the base rate)."""
    if position is None:
        return 1.0
    if step == 0:
        return min(max(position, 0.0), 1.0)
    count = steps_of(step)
    falling = _step_at_or_below(position, count)
    if held is None:
        return falling
    held_step = _step_at_or_below(held + tolerance, count)
    if falling <= held_step:
        return falling
    rising = _step_at_or_below(position - step / 2.0, count)
    return max(held_step, rising)
