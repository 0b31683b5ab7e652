"""Parameter initializers, as ``mlx.nn.init``.

Each function takes the distribution's settings and returns an initializer: a function
from a template array (only its shape is used) to a new array, e.g.
``nn.init.he_normal()(layer.weight)``.
"""

import math
from typing import Callable, Literal

import kiln.core as mx
from kiln.core import diag, linalg


def constant(value: float, dtype: mx.Dtype = mx.float32) -> Callable[[mx.array], mx.array]:
    """Initializer filling the template's shape with `value`."""

    def initializer(a: mx.array) -> mx.array:
        return mx.full(a.shape, value, dtype=dtype)

    return initializer


def normal(
    mean: float = 0.0, std: float = 1.0, dtype: mx.Dtype = mx.float32
) -> Callable[[mx.array], mx.array]:
    """Initializer drawing from the normal distribution N(`mean`, `std`^2)."""

    def initializer(a: mx.array) -> mx.array:
        return mx.random.normal(shape=a.shape, scale=std, loc=mean, dtype=dtype)

    return initializer


def uniform(
    low: float = 0.0, high: float = 1.0, dtype: mx.Dtype = mx.float32
) -> Callable[[mx.array], mx.array]:
    """Initializer drawing uniformly from ``[low, high)``."""

    def initializer(a: mx.array) -> mx.array:
        return mx.random.uniform(low, high, a.shape, dtype=dtype)

    return initializer


def identity(dtype: mx.Dtype = mx.float32) -> Callable[[mx.array], mx.array]:
    """Initializer returning the identity matrix of a square template.

    The initializer raises ValueError for a template that is not a square matrix.
    """

    def initializer(arr: mx.array) -> mx.array:
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise ValueError(
                f"[init.identity] The input array must be a square matrix but got shape {arr.shape}."
            )
        return mx.eye(n=arr.shape[0], dtype=dtype)

    return initializer


def _calculate_fan_in_fan_out(x):
    """``(fan_in, fan_out)`` of a weight ``(out, *receptive_field, in)``: the last and first
    axes, each times the receptive field's size."""
    if x.ndim < 2:
        raise ValueError(
            "[init] Glorot / He initialization requires at least 2 dimensional input but the "
            f"input has {x.ndim} dimensions."
        )
    receptive_field = math.prod(x.shape[1:-1])
    return x.shape[-1] * receptive_field, x.shape[0] * receptive_field


def _fan(a, mode):
    fan_in, fan_out = _calculate_fan_in_fan_out(a)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"[init] Invalid mode: {mode}. Valid modes are: fan_in, fan_out")


def glorot_normal(dtype: mx.Dtype = mx.float32) -> Callable[[mx.array, float], mx.array]:
    r"""Glorot (Xavier) normal initializer (Glorot and Bengio, 2010): ``initializer(a,
    gain=1.0)`` draws from N(0, :math:`\sigma^2`) with :math:`\sigma = \text{gain}
    \sqrt{2 / (\text{fan\_in} + \text{fan\_out})}`."""

    def initializer(a: mx.array, gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _calculate_fan_in_fan_out(a)
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        return mx.random.normal(shape=a.shape, scale=std, dtype=dtype)

    return initializer


def glorot_uniform(dtype: mx.Dtype = mx.float32) -> Callable[[mx.array, float], mx.array]:
    r"""Glorot (Xavier) uniform initializer: ``initializer(a, gain=1.0)`` draws from
    :math:`U(-\ell, \ell)` with :math:`\ell = \text{gain} \sqrt{6 / (\text{fan\_in} +
    \text{fan\_out})}`."""

    def initializer(a: mx.array, gain: float = 1.0) -> mx.array:
        fan_in, fan_out = _calculate_fan_in_fan_out(a)
        limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return initializer


def he_normal(
    dtype: mx.Dtype = mx.float32,
) -> Callable[[mx.array, Literal["fan_in", "fan_out"], float], mx.array]:
    r"""He (Kaiming) normal initializer (He et al., 2015): ``initializer(a, mode="fan_in",
    gain=1.0)`` draws from N(0, :math:`\sigma^2`) with :math:`\sigma = \text{gain} /
    \sqrt{\text{fan}}`, ``fan`` being fan_in or fan_out by `mode` (ValueError otherwise)."""

    def initializer(
        a: mx.array, mode: Literal["fan_in", "fan_out"] = "fan_in", gain: float = 1.0
    ) -> mx.array:
        std = gain / math.sqrt(_fan(a, mode))
        return mx.random.normal(shape=a.shape, scale=std, dtype=dtype)

    return initializer


def he_uniform(
    dtype: mx.Dtype = mx.float32,
) -> Callable[[mx.array, Literal["fan_in", "fan_out"], float], mx.array]:
    r"""He (Kaiming) uniform initializer: ``initializer(a, mode="fan_in", gain=1.0)`` draws
    from :math:`U(-\ell, \ell)` with :math:`\ell = \text{gain} \sqrt{3 / \text{fan}}`."""

    def initializer(
        a: mx.array, mode: Literal["fan_in", "fan_out"] = "fan_in", gain: float = 1.0
    ) -> mx.array:
        limit = gain * math.sqrt(3.0 / _fan(a, mode))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return initializer


def sparse(
    sparsity: float, mean: float = 0.0, std: float = 1.0, dtype: mx.Dtype = mx.float32
) -> Callable[[mx.array], mx.array]:
    """Sparse initializer (Martens, 2010): a 2-d template gets normal values N(`mean`,
    `std`^2) with ``ceil(sparsity * columns)`` random entries of every row set to zero.

    The initializer raises ValueError for a template that is not 2-d.
    """

    def initializer(a: mx.array) -> mx.array:
        if a.ndim != 2:
            raise ValueError(f"[init.sparse] Only 2-d arrays are supported but got shape {a.shape}")
        rows, cols = a.shape
        zeros_per_row = int(math.ceil(sparsity * cols))
        # A random permutation of each row's columns: its first entries are zeroed.
        order = mx.argsort(mx.random.uniform(shape=a.shape), axis=1)
        values = mx.random.normal(shape=a.shape, scale=std, loc=mean, dtype=dtype)
        values[mx.arange(rows).reshape(rows, 1), order[:, :zeros_per_row]] = 0
        return values

    return initializer


def orthogonal(gain: float = 1.0, dtype: mx.Dtype = mx.float32) -> Callable[[mx.array], mx.array]:
    """Orthogonal initializer (Saxe et al., 2014): a 2-d template gets `gain` times a random
    matrix with orthonormal rows or columns (whichever are fewer), from the QR decomposition
    of a square Gaussian matrix with the signs of R's diagonal folded into Q (so the result is
    Haar distributed).

    The initializer raises ValueError for a template that is not 2-d.
    """

    def initializer(a: mx.array) -> mx.array:
        if a.ndim != 2:
            raise ValueError(
                f"[init.orthogonal] Orthogonal initialization requires a 2D array but got a "
                f"{a.ndim}D array."
            )
        rows, cols = a.shape
        n = max(rows, cols)
        q, r = linalg.qr(mx.random.normal(shape=(n, n)), stream=mx.cpu)
        q = q * mx.sign(diag(r))
        return (q[:rows, :cols] * gain).astype(dtype)

    return initializer
