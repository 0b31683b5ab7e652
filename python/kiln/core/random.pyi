"""
Random sampling with explicit keys (JAX's model, MLX's API): every sampler takes an
optional ``key``; with one, the result depends only on the key and the arguments.
Bits come from the counter-based Threefry-2x32 generator, laid out as MLX lays them
out, and every sampler rounds as MLX's does: a key or a seed gives MLX's numbers.
"""
from __future__ import annotations
import collections.abc
import kiln.core
import typing
__all__: list[str] = ['bernoulli', 'bits', 'categorical', 'gumbel', 'key', 'laplace', 'multivariate_normal', 'normal', 'permutation', 'randint', 'seed', 'split', 'state', 'truncated_normal', 'uniform']
class _RandomState:
    """
    The global random state (``kiln.core.random.state``): one object for all threads whose
    single element, ``state[0]``, is the calling thread's key, as in MLX. Each thread has its
    own key, seeded from the clock on first use; :func:`seed` resets the calling thread's.
    Pass it to :func:`compile` as ``inputs=`` and ``outputs=`` so that compiled functions
    draw from and advance it.
    """
    def __getitem__(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> kiln.core.array:
        ...
    def __iter__(self) -> collections.abc.Iterator:
        ...
    def __len__(self) -> int:
        ...
def bernoulli(p: kiln.core.array | bool | int | float | complex = 0.5, shape: int | typing.Sequence[int] | None = None, key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Booleans that are true with probability ``p``.

    Args:
        p (array or scalar): The probability (floating), broadcast to ``shape``.
        shape (int or Sequence[int], optional): The shape; ``p``'s by default.
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: ``bool`` samples.
    """
def bits(shape: int | typing.Sequence[int] = [], width: typing.SupportsInt | typing.SupportsIndex = 4, key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Uniformly random bits: unsigned integers of ``width`` bytes (MLX's C++
    ``random::bits``).

    Args:
        shape (int or Sequence[int]): The shape.
        width (int): Bytes per element: 1, 2, 4 or 8 (uint8 ... uint64).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The bits.
    """
def categorical(logits: kiln.core.array, axis: typing.SupportsInt | typing.SupportsIndex = -1, shape: int | typing.Sequence[int] | None = None, num_samples: typing.SupportsInt | typing.SupportsIndex | None = None, key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
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
def gumbel(shape: int | typing.Sequence[int] = [], dtype: kiln.core.Dtype | None = ..., key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Standard Gumbel samples, ``-log(-log(u))`` for ``u`` uniform in [0, 1).

    Args:
        shape (int or Sequence[int]): The shape.
        dtype (Dtype, optional): A real floating type (float32).
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
def laplace(shape: int | typing.Sequence[int] = [], dtype: kiln.core.Dtype | None = ..., loc: typing.SupportsFloat | typing.SupportsIndex = 0.0, scale: typing.SupportsFloat | typing.SupportsIndex = 1.0, key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Laplace samples with location ``loc`` and scale ``scale``.

    Args:
        shape (int or Sequence[int]): The shape.
        dtype (Dtype, optional): A real floating type (float32).
        loc (float): The location (mean).
        scale (float): The scale ``b`` (standard deviation ``sqrt(2) b``).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples. ValueError for a non-floating dtype.
    """
def multivariate_normal(mean: kiln.core.array, cov: kiln.core.array, shape: int | typing.Sequence[int] = [], dtype: kiln.core.Dtype | None = ..., key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Jointly normal samples with means ``mean`` and covariances ``cov`` (positive
    semi-definite; the result is unspecified otherwise).

    Args:
        mean (array): Shape ``(..., n)``.
        cov (array): Shape ``(..., n, n)``; its batch shape broadcasts with mean's.
        shape (Sequence[int]): Broadcasts with the batch shapes (``[]``).
        dtype (Dtype, optional): Only float32.
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples, of the broadcast batch shape + ``(n,)``.
    """
def normal(shape: int | typing.Sequence[int] = [], dtype: kiln.core.Dtype | None = ..., loc: kiln.core.array | bool | int | float | complex | None = None, scale: kiln.core.array | bool | int | float | complex | None = None, key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Normal samples with mean ``loc`` and standard deviation ``scale``.

    Args:
        shape (int or Sequence[int]): The shape.
        dtype (Dtype, optional): A real floating type or complex64 (float32).
        loc (scalar or array, optional): The mean (0).
        scale (scalar or array, optional): The standard deviation (1).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples. ValueError for another dtype or loc/scale that do not broadcast.
    """
def permutation(x: typing.Any, axis: typing.SupportsInt | typing.SupportsIndex = 0, key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    A random permutation of ``arange(x)``, or ``x`` with its entries along ``axis``
    randomly permuted.

    Args:
        x (int or array): The length, or the array to permute.
        axis (int): The axis to permute along (0).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The permutation (``uint32``), or the permuted array.
    """
def randint(low: kiln.core.array | bool | int | float | complex, high: kiln.core.array | bool | int | float | complex, shape: int | typing.Sequence[int] = [], dtype: kiln.core.Dtype | None = ..., key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Integers uniform in ``[low, high)`` (``low`` where ``high <= low``).

    Args:
        low (array or scalar): Lower bound, broadcast to ``shape``.
        high (array or scalar): Upper bound (excluded), broadcast to ``shape``.
        shape (int or Sequence[int]): The shape.
        dtype (Dtype, optional): An integer type or bool (int32).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples. ValueError for an inexact dtype or bounds that do not broadcast.
    """
def seed(seed: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Resets the global key to ``key(seed)``; samplers called without a key continue from it.
    """
def split(key: kiln.core.array, num: typing.SupportsInt | typing.SupportsIndex = 2, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    ``num`` new keys derived from ``key``, as an array of shape ``(num, 2)``: the key's
    first ``8 * num`` random bytes.

    Raises:
        ValueError: ``num`` is negative or ``key`` is not a ``(2,)`` uint32 array.
    """
def truncated_normal(lower: kiln.core.array | bool | int | float | complex, upper: kiln.core.array | bool | int | float | complex, shape: int | typing.Sequence[int] | None = None, dtype: kiln.core.Dtype | None = ..., key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Standard normal samples conditioned on ``[lower, upper]``.

    Args:
        lower (array or scalar): Lower bound.
        upper (array or scalar): Upper bound.
        shape (int or Sequence[int], optional): The shape; the bounds' broadcast
            shape by default.
        dtype (Dtype, optional): A real floating type (float32).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples.
    """
def uniform(low: kiln.core.array | bool | int | float | complex = 0, high: kiln.core.array | bool | int | float | complex = 1, shape: int | typing.Sequence[int] = [], dtype: kiln.core.Dtype | None = ..., key: kiln.core.array | None = None, *, stream: None | kiln.core.Stream | kiln.core.Device = None) -> kiln.core.array:
    """
    Uniform samples in ``[low, high)`` (a sample may round onto ``high``, as in
    MLX); gradients flow to ``low`` and ``high``.

    Args:
        low (array or scalar): Lower bound, broadcast to ``shape``.
        high (array or scalar): Upper bound, broadcast to ``shape``.
        shape (int or Sequence[int]): The shape.
        dtype (Dtype, optional): A real floating type (float32).
        key (array, optional): A key from :func:`key` or :func:`split`. Without one, the
            global key (reset by :func:`seed`) is split.

    Returns:
        array: The samples. ValueError for a non-floating dtype or bounds that do not broadcast.
    """
state: _RandomState
