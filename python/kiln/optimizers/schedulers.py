"""Learning-rate schedules, as ``mlx.optimizers`` has them: each function returns a schedule,
a function of the step count (an array or an int) giving the value for that step. Pass one
as an optimizer's ``learning_rate``."""

import math
from typing import Callable, List

import kiln.core as mx

__all__ = [
    "cosine_decay",
    "exponential_decay",
    "join_schedules",
    "linear_schedule",
    "step_decay",
]


def _check_positive(schedule, name, value):
    if value < 1:
        raise ValueError(f"[{schedule}] {name} must be greater than 0, but got {value}.")


def exponential_decay(init: float, decay_rate: float) -> Callable:
    """``init * decay_rate ** step``."""

    def schedule(step):
        return init * decay_rate**step

    return schedule


def step_decay(init: float, decay_rate: float, step_size: int) -> Callable:
    """``init * decay_rate ** (step // step_size)``: decays every `step_size` steps.

    Raises:
        ValueError: `step_size` below 1.
    """
    _check_positive("step_decay", "step_size", step_size)

    def schedule(step):
        return init * decay_rate ** (step // step_size)

    return schedule


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Callable:
    """Half a cosine from `init` at step 0 to `end` at `decay_steps`, then `end`:
    ``end + (init - end) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2``.

    Raises:
        ValueError: `decay_steps` below 1.
    """
    _check_positive("cosine_decay", "decay_steps", decay_steps)

    def schedule(step):
        progress = mx.minimum(step, decay_steps)
        decay = 0.5 * (1.0 + mx.cos(math.pi / decay_steps * progress))
        return end + decay * (init - end)

    return schedule


def join_schedules(schedules: List[Callable], boundaries: List[int]) -> Callable:
    """Schedule ``schedules[i]`` from step ``boundaries[i - 1]`` on, called with the steps
    since that boundary (e.g. a linear warm-up joined to a cosine decay).

    Raises:
        ValueError: No schedules, or not one boundary fewer than schedules.
    """
    if len(schedules) == 0:
        raise ValueError("[join_schedules] Must provide at least 1 schedule to join.")
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(
            f"[join_schedules] Received {len(boundaries)} boundaries but expected "
            f"{len(schedules) - 1}."
        )

    def schedule(step):
        value = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            value = mx.where(step < boundary, value, later(step - boundary))
        return value

    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Callable:
    """A straight line from `init` at step 0 to `end` at `steps`, then `end`.

    Raises:
        ValueError: `steps` below 1.
    """
    _check_positive("linear_schedule", "steps", steps)

    def schedule(step):
        step = mx.minimum(step, steps)
        return step * ((end - init) / steps) + init

    return schedule
