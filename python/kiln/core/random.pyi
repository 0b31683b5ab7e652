"""
Random sampling with explicit keys (JAX's model, MLX's API): every sampler takes an
optional ``key``; with one, the result depends only on the key and the arguments.
Bits come from the counter-based Threefry-2x32 generator.
"""
from __future__ import annotations
import collections.abc
import kiln.core
import typing
__all__: list[str] = ['bernoulli', 'bits', 'categorical', 'gumbel', 'key', 'normal', 'randint', 'seed', 'split', 'truncated_normal', 'uniform']
def bernoulli(p: kiln.core.array | bool | int | float | complex = 0.5, shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Booleans that are true with probability ``p``.

    Args:
        p (array or scalar): The probability (floating), broadcast to ``shape``.
        shape (int or Sequence[int], optional): The shape; ``p``'s by default.
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: ``bool_`` samples.
    """
def bits(shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], width: typing.SupportsInt | typing.SupportsIndex = 4, key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Uniformly random bits: unsigned integers of ``width`` bytes.

    Args:
        shape (int or Sequence[int]): The shape.
        width (int): Bytes per element: 1, 2, 4 or 8 (uint8 ... uint64).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The bits.
    """
def categorical(logits: kiln.core.array, axis: typing.SupportsInt | typing.SupportsIndex = -1, shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, num_samples: typing.SupportsInt | typing.SupportsIndex | None = None, key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Indices drawn from the categorical distributions whose unnormalized log
    probabilities lie along ``axis`` of ``logits``.

    Args:
        logits (array): Unnormalized log probabilities.
        axis (int): The axis of the categories.
        shape (Sequence[int], optional): The result shape, to which ``logits``'s shape
            without ``axis`` must broadcast.
        num_samples (int, optional): Draw this many samples per distribution (a new
            last axis).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: ``uint32`` indices.
    """
def gumbel(shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], dtype: kiln.core.Dtype = ..., key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Standard Gumbel samples, ``-log(-log(u))`` for ``u`` uniform in (0, 1).

    Args:
        shape (int or Sequence[int]): The shape.
        dtype (Dtype): A real floating type (float32).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples.
    """
def key(seed: typing.SupportsInt | typing.SupportsIndex) -> kiln.core.array:
    """
    A key for the given seed: a ``uint32`` array of shape ``(2,)``.

    Args:
        seed (int): A non-negative integer below 2**64.
    """
def normal(shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], dtype: kiln.core.Dtype = ..., loc: typing.SupportsFloat | typing.SupportsIndex = 0.0, scale: typing.SupportsFloat | typing.SupportsIndex = 1.0, key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Normal samples with mean ``loc`` and standard deviation ``scale``.

    Args:
        shape (int or Sequence[int]): The shape.
        dtype (Dtype): A real floating type (float32).
        loc (float): The mean.
        scale (float): The standard deviation.
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples. ValueError for a non-floating dtype.
    """
def randint(low: kiln.core.array | bool | int | float | complex, high: kiln.core.array | bool | int | float | complex, shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], dtype: kiln.core.Dtype = ..., key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Integers uniform in ``[low, high)`` (``low`` where ``high <= low``).

    Args:
        low (array or scalar): Lower bound, broadcast to ``shape``.
        high (array or scalar): Upper bound (excluded), broadcast to ``shape``.
        shape (int or Sequence[int]): The shape.
        dtype (Dtype): An integer type (int32).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples. ValueError for a non-integer dtype or bounds that do not broadcast.
    """
def seed(seed: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Resets the global key to ``key(seed)``; samplers called without a key continue from it.
    """
def split(key: kiln.core.array, num: typing.SupportsInt | typing.SupportsIndex = 2, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    ``num`` new keys derived from ``key``, as an array of shape ``(num, 2)``; all differ from
    each other and from the key's other descendants.

    Raises:
        ValueError: ``num`` is negative or ``key`` is not a ``(2,)`` uint32 array.
    """
def truncated_normal(lower: kiln.core.array | bool | int | float | complex, upper: kiln.core.array | bool | int | float | complex, shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, dtype: kiln.core.Dtype = ..., key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Standard normal samples conditioned on ``[lower, upper]``.

    Args:
        lower (array or scalar): Lower bound.
        upper (array or scalar): Upper bound.
        shape (int or Sequence[int], optional): The shape; the bounds' broadcast
            shape by default.
        dtype (Dtype): A real floating type (float32).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples.
    """
def uniform(low: kiln.core.array | bool | int | float | complex = 0.0, high: kiln.core.array | bool | int | float | complex = 1.0, shape: typing.SupportsInt | typing.SupportsIndex | collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], dtype: kiln.core.Dtype = ..., key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Uniform samples in ``[low, high)``; gradients flow to ``low`` and ``high``.

    Args:
        low (array or scalar): Lower bound, broadcast to ``shape``.
        high (array or scalar): Upper bound, broadcast to ``shape``.
        shape (int or Sequence[int]): The shape.
        dtype (Dtype): A real floating type (float32).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples. ValueError for a non-floating dtype or bounds that do not broadcast.
    """
