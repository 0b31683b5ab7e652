"""Neural network layers, losses and initializers with the names and behaviour of
``mlx.nn`` (``import kiln.nn as nn``), pure Python over :mod:`kiln.core`."""

from kiln.nn import init, losses
from kiln.nn.layers import *  # noqa: F401,F403
from kiln.nn.utils import average_gradients, checkpoint, value_and_grad  # noqa: F401
