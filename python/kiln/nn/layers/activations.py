"""Activation functions, each as a function and as a ``Module`` (``nn.relu`` and
``nn.ReLU()``), with the formulas of ``mlx.nn``.

The element-wise ones are compiled shapeless (one fused kernel per dtype) once
``mx.compile`` exists; until then the decorator is the identity.
"""

import math
from functools import partial
from typing import Any

import kiln.core as mx
from kiln.core import compile
from kiln.nn.layers.base import Module

_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SELU_ALPHA = 1.67326
_SELU_SCALE = 1.0507


def _module_of(fn):
    """Class decorator: the module's ``__call__`` applies `fn`."""

    def decorate(cls):
        cls.__call__ = lambda self, x: fn(x)
        return cls

    return decorate


@partial(compile, shapeless=True)
def sigmoid(x):
    r"""The logistic sigmoid :math:`1 / (1 + e^{-x})`."""
    return mx.sigmoid(x)


@partial(compile, shapeless=True)
def relu(x):
    r"""The rectified linear unit :math:`\max(x, 0)`."""
    return mx.maximum(x, 0)


@partial(compile, shapeless=True)
def relu2(x):
    r"""The squared ReLU :math:`\max(x, 0)^2`."""
    return mx.square(mx.maximum(x, 0))


@partial(compile, shapeless=True)
def relu6(x):
    r""":math:`\min(\max(x, 0), 6)`."""
    return mx.minimum(mx.maximum(x, 0), 6.0)


@partial(compile, shapeless=True)
def leaky_relu(x, negative_slope=0.01):
    r""":math:`\max(\text{negative\_slope} \cdot x, x)` (for slopes below 1)."""
    return mx.maximum(negative_slope * x, x)


@partial(compile, shapeless=True)
def log_softmax(x, axis=-1):
    """``x - logsumexp(x)`` along `axis`, with the maximum subtracted first for stability."""
    shifted = x - mx.stop_gradient(mx.max(x, axis=axis, keepdims=True))
    return shifted - mx.logsumexp(shifted, axis=axis, keepdims=True)


@partial(compile, shapeless=True)
def elu(x, alpha=1.0):
    r"""The exponential linear unit: :math:`x` for :math:`x > 0`, else
    :math:`\alpha (e^x - 1)`."""
    return mx.where(x > 0, x, alpha * (mx.exp(x) - 1))


@partial(compile, shapeless=True)
def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along `axis`."""
    return mx.softmax(x, axis=axis)


@partial(compile, shapeless=True)
def softplus(x):
    r""":math:`\log(1 + e^x)`, computed stably."""
    return mx.logaddexp(x, 0)


@partial(compile, shapeless=True)
def softsign(x):
    r""":math:`x / (1 + |x|)`."""
    return mx.divide(x, 1 + mx.abs(x))


@partial(compile, shapeless=True)
def softshrink(x, lambd: float = 0.5):
    r""":math:`x - \lambda\,\mathrm{sign}(x)` where :math:`|x| > \lambda`, else 0."""
    return mx.where(mx.abs(x) > lambd, x - mx.sign(x) * lambd, 0)


@partial(compile, shapeless=True)
def celu(x, alpha=1.0):
    r""":math:`\max(x, 0) + \alpha (e^{\min(x, 0) / \alpha} - 1)`."""
    return mx.maximum(x, 0.0) + alpha * (mx.exp(mx.minimum(x, 0.0) / alpha) - 1)


@partial(compile, shapeless=True)
def silu(x):
    r"""The sigmoid linear unit (swish) :math:`x \sigma(x)`."""
    return x * mx.sigmoid(x)


@partial(compile, shapeless=True)
def log_sigmoid(x):
    r""":math:`\log \sigma(x) = -\mathrm{softplus}(-x)`."""
    return -softplus(-x)


@partial(compile, shapeless=True)
def gelu(x) -> mx.array:
    r"""The exact Gaussian error linear unit :math:`x \Phi(x) = x (1 + \mathrm{erf}(x /
    \sqrt{2})) / 2`."""
    return x * (1 + mx.erf(x / _SQRT_2)) / 2


@partial(compile, shapeless=True)
def gelu_approx(x):
    r"""The tanh approximation of GELU, :math:`0.5 x (1 + \tanh(\sqrt{2/\pi} (x + 0.044715
    x^3)))` (maximum absolute error about 5e-4)."""
    # x * x * x rather than x**3: the same cube to an ulp, without a pow per element.
    return 0.5 * x * (1 + mx.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))))


@partial(compile, shapeless=True)
def gelu_fast_approx(x):
    r"""The sigmoid approximation of GELU, :math:`x \sigma(1.702 x)` (maximum absolute
    error about 2e-2)."""
    return x * mx.sigmoid(1.702 * x)


def glu(x: mx.array, axis: int = -1) -> mx.array:
    r"""The gated linear unit: `x` split in halves :math:`a, b` along `axis`, then
    :math:`a \sigma(b)`."""
    a, b = mx.split(x, indices_or_sections=2, axis=axis)
    return a * mx.sigmoid(b)


@partial(compile, shapeless=True)
def step(x: mx.array, threshold: float = 0.0):
    """The binary step: 1 where ``x >= threshold``, else 0 (int32)."""
    return mx.where(x >= threshold, 1, 0)


@partial(compile, shapeless=True)
def selu(x):
    r"""The scaled ELU :math:`\lambda\,\mathrm{elu}(x, \alpha)` with :math:`\alpha = 1.67326`,
    :math:`\lambda = 1.0507`."""
    return elu(x, _SELU_ALPHA) * _SELU_SCALE


@partial(compile, shapeless=True)
def prelu(x: mx.array, alpha: mx.array) -> mx.array:
    r"""The parametric ReLU :math:`\max(0, x) + \alpha \min(0, x)`."""
    return mx.maximum(0, x) + alpha * mx.minimum(0, x)


@partial(compile, shapeless=True)
def mish(x: mx.array) -> mx.array:
    r""":math:`x \tanh(\mathrm{softplus}(x))`."""
    return x * mx.tanh(softplus(x))


@partial(compile, shapeless=True)
def hardswish(x):
    r""":math:`x \min(\max(x + 3, 0), 6) / 6`."""
    return x * mx.minimum(mx.maximum(x + 3, 0), 6) / 6


@partial(compile, shapeless=True)
def hard_tanh(x, min_val=-1.0, max_val=1.0):
    """`x` clipped to ``[min_val, max_val]``."""
    return mx.minimum(mx.maximum(x, min_val), max_val)


@partial(compile, shapeless=True)
def hard_shrink(x, lambd=0.5):
    r""":math:`x` where :math:`|x| > \lambda`, else 0."""
    return mx.where(mx.abs(x) > lambd, x, 0)


@partial(compile, shapeless=True)
def softmin(x, axis=-1):
    """``softmax(-x)`` along `axis`."""
    return mx.softmax(-x, axis=axis)


def tanh(x):
    """The hyperbolic tangent."""
    return mx.tanh(x)


class GLU(Module):
    """Applies :func:`glu` along `axis`."""

    def __init__(self, axis: int = -1):
        super().__init__()
        self.axis = axis

    def __call__(self, x) -> Any:
        return glu(x=x, axis=self.axis)


@_module_of(sigmoid)
class Sigmoid(Module):
    """Applies :func:`sigmoid`."""


@_module_of(mish)
class Mish(Module):
    """Applies :func:`mish`."""


@_module_of(relu)
class ReLU(Module):
    """Applies :func:`relu`."""


@_module_of(relu2)
class ReLU2(Module):
    """Applies :func:`relu2`."""


@_module_of(relu6)
class ReLU6(Module):
    """Applies :func:`relu6`."""


class LeakyReLU(Module):
    """Applies :func:`leaky_relu` with `negative_slope`."""

    def __init__(self, negative_slope=0.01):
        super().__init__()
        self._negative_slope = negative_slope

    def __call__(self, x):
        return leaky_relu(x, self._negative_slope)


class ELU(Module):
    """Applies :func:`elu` with `alpha`."""

    def __init__(self, alpha=1.0):
        super().__init__()
        self._alpha = alpha

    def __call__(self, x):
        return elu(x, self._alpha)


@_module_of(softmax)
class Softmax(Module):
    """Applies :func:`softmax` over the last axis."""


@_module_of(softplus)
class Softplus(Module):
    """Applies :func:`softplus`."""


@_module_of(softsign)
class Softsign(Module):
    """Applies :func:`softsign`."""


class Softshrink(Module):
    """Applies :func:`softshrink` with `lambd`."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def __call__(self, x):
        return softshrink(x, self.lambd)


class CELU(Module):
    """Applies :func:`celu` with `alpha`."""

    def __init__(self, alpha=1.0):
        super().__init__()
        self._alpha = alpha

    def __call__(self, x):
        return celu(x, self._alpha)


@_module_of(silu)
class SiLU(Module):
    """Applies :func:`silu`."""


@_module_of(log_softmax)
class LogSoftmax(Module):
    """Applies :func:`log_softmax` over the last axis."""


@_module_of(log_sigmoid)
class LogSigmoid(Module):
    """Applies :func:`log_sigmoid`."""


class PReLU(Module):
    """Applies :func:`prelu` with a learned slope ``weight`` of `num_parameters` values
    (1, or one per channel of the last axis), initialized to `init`."""

    def __init__(self, num_parameters=1, init=0.25):
        super().__init__()
        self.weight = mx.full([num_parameters], init)

    def __call__(self, x: mx.array):
        return prelu(x, self.weight)


class GELU(Module):
    """Applies GELU: exact (``approx="none"``), the tanh approximation (``"precise"`` or
    ``"tanh"``) or the sigmoid approximation (``"fast"``).

    Raises:
        ValueError: Another `approx`.
    """

    _APPROXIMATIONS = ("none", "precise", "tanh", "fast")

    def __init__(self, approx="none"):
        super().__init__()
        if approx not in self._APPROXIMATIONS:
            raise ValueError(
                f"[GELU] approx should be one of {list(self._APPROXIMATIONS)} but '{approx}' "
                "was given"
            )
        self._approx = approx

    def __call__(self, x):
        if self._approx == "none":
            return gelu(x)
        if self._approx == "fast":
            return gelu_fast_approx(x)
        return gelu_approx(x)


@_module_of(tanh)
class Tanh(Module):
    """Applies :func:`tanh`."""


@_module_of(hardswish)
class Hardswish(Module):
    """Applies :func:`hardswish`."""


class Step(Module):
    """Applies :func:`step` with `threshold`."""

    def __init__(self, threshold: float = 0.0):
        super().__init__()
        self.threshold = threshold

    def __call__(self, x: mx.array):
        return step(x, self.threshold)


@_module_of(selu)
class SELU(Module):
    """Applies :func:`selu`."""


@_module_of(hard_tanh)
class HardTanh(Module):
    """Applies :func:`hard_tanh` with bounds -1 and 1."""


class HardShrink(Module):
    """Applies :func:`hard_shrink` with `lambd`."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def __call__(self, x):
        return hard_shrink(x, self.lambd)


@_module_of(softmin)
class Softmin(Module):
    """Applies :func:`softmin` over the last axis."""
