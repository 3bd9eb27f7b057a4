import pytest

from ansible_collections.headroom.kafka.plugins.module_utils import factor_steps


@pytest.mark.parametrize(
    "position, held, step, expected",
    [
        # no factor in force: the step at or below the position
        (0.4999, None, 0.05, 0.45),
        (0.5, None, 0.05, 0.5),
        (0.15, None, 0.05, 0.15),  # 0.15 x 20 is a hair below 3 in floating point
        (None, None, 0.05, 1.0),  # nothing judged
        (None, 0.0, 0.05, 1.0),  # nothing judged opens at once
        (7.3, None, 0.05, 1.0),  # far short of the soft limit
        (-2.0, None, 0.05, 0.0),  # past the hard limit
        # falling: at once, to the step at or below
        (0.49992, 0.5, 0.05, 0.45),
        (0.3, 0.5, 0.05, 0.3),
        (0.0, 0.05, 0.05, 0.0),
        # holding: the position moved within the step, or back up by less than half a step above the next
        (0.52, 0.5, 0.05, 0.5),
        (0.574, 0.5, 0.05, 0.5),
        (1.02, 0.95, 0.05, 0.95),  # back past the soft limit by less than half a step
        (0.02, 0.0, 0.05, 0.0),
        # rising: to the step at or below the position less half a step
        (0.575, 0.5, 0.05, 0.55),
        (0.9, 0.5, 0.05, 0.85),
        (1.025, 0.95, 0.05, 1.0),
        (3.0, 0.0, 0.05, 1.0),
        # a held factor read back a byte below its step is that step
        (0.52, 0.4999995, 0.05, 0.5),
        # other steps
        (0.66, None, 0.25, 0.5),
        (0.9, 0.5, 0.25, 0.75),
        (0.7, 0.5, 0.25, 0.5),
        (0.99, 1.0, 1.0, 0.0),  # a binary throttle: paused as soon as the soft limit is crossed
        # step 0: the exact factor, clamped
        (0.49992, 0.5, 0.0, 0.49992),
        (1.7, 0.5, 0.0, 1.0),
        (-0.3, None, 0.0, 0.0),
    ],
)
def test_the_factor_falls_at_once_and_rises_half_a_step_late(position, held, step, expected):
    tolerance = 1e-6 if held == 0.4999995 else 0.0
    assert factor_steps.held_factor(position, held, step, tolerance) == pytest.approx(expected)


def test_the_factor_is_never_above_the_exact_one_and_only_ever_a_step():
    positions = [index / 997.0 for index in range(-50, 1100)]
    for step in (0.05, 0.1, 0.25, 0.5, 1.0):
        count = factor_steps.steps_of(step)
        held = None
        for position in positions + positions[::-1] + positions:
            held = factor_steps.held_factor(position, held, step)
            assert held <= max(min(position, 1.0), 0.0) + 1e-12
            assert abs(held * count - round(held * count)) < 1e-9


def test_a_slow_fill_writes_one_factor_per_step_where_the_exact_factor_writes_one_per_decision():
    """Free space falling a little at every decision, with a segment deleted now and then (a jump back up by 2 % of the
    soft-to-hard distance): the exact factor changes at every decision, the stepped one once per step crossed."""
    position, held, exact_changes, stepped_changes, last_exact = 1.2, None, 0, 0, None
    for decision in range(2000):
        position -= 0.001
        if decision % 50 == 49:
            position += 0.02
        exact = factor_steps.held_factor(position, last_exact, 0.0)
        exact_changes += exact != last_exact
        last_exact = exact
        stepped = factor_steps.held_factor(position, held, 0.05)
        stepped_changes += stepped != held
        held = stepped
    assert exact_changes > 1000
    assert stepped_changes <= 21


@pytest.mark.parametrize("step", [-0.1, 1.5, 0.3, 0.07, float("nan"), True, "0.05"])
def test_a_step_that_does_not_divide_one_is_refused_naming_it(step):
    with pytest.raises(factor_steps.StepError, match="throttle_factor_step must"):
        factor_steps.check_step(step)


@pytest.mark.parametrize("step", [0, 0.05, 0.1, 0.125, 0.25, 0.5, 1, 0.01])
def test_steps_that_divide_one_are_taken(step):
    assert factor_steps.check_step(step) == step
