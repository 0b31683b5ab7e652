"""Optimizers and learning-rate schedules with the names and behaviour of
``mlx.optimizers`` (``import kiln.optimizers as optim``)."""

from kiln.optimizers.optimizers import *  # noqa: F401,F403
from kiln.optimizers.schedulers import *  # noqa: F401,F403
