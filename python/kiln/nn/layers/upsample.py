"""``Upsample``: resizing of the spatial axes of channels-last inputs ``(N, *spatial, C)`` by
nearest-neighbour, (multi)linear or (multi)cubic interpolation, optionally antialiased.

Output size along an axis of size ``n`` is ``int(scale * n)``. Without `align_corners` output
sample ``i`` sits at input coordinate ``(i + 0.5) / scale - 0.5`` (PyTorch's half-pixel
convention); with it, the first and last samples of input and output coincide.
"""

import operator
from functools import reduce
from itertools import product
from math import ceil
from typing import Literal, Tuple, Union

import kiln.core as mx
from kiln.nn.layers.base import Module


def _along(values, dim, ndims):
    """`values` (1-d) shaped to broadcast along spatial axis `dim` of `ndims`."""
    shape = [1] * ndims
    shape[dim] = -1
    return values.reshape(shape)


def _source_coordinates(n, scale, align_corners, dim, ndims):
    """The input coordinate of each output sample along one axis (float32)."""
    m = int(scale * n)
    i = mx.arange(m, dtype=mx.float32)
    if align_corners:
        coords = i * ((n - 1) / max(m - 1, 1))
    else:
        step = 1 / scale
        coords = i * step - ((m - 1) * step - n + 1) / 2
    return _along(coords, dim, ndims)


def _nearest_indices(n, scale, dim, ndims):
    m = int(scale * n)
    i = mx.arange(m, dtype=mx.float32)
    if m > n:
        i = ((i + 0.5) * (n / m) - 0.5).round()
    else:
        i = i * (n / m)
    return _along(i.astype(mx.uint32), dim, ndims)


def _linear_taps(n, scale, align_corners, dim, ndims):
    """Two ``(index, weight)`` taps per output sample."""
    coords = mx.clip(_source_coordinates(n, scale, align_corners, dim, ndims), 0, n - 1)
    left, right = mx.floor(coords), mx.ceil(coords)
    frac = mx.expand_dims(coords - left, -1)
    return (left.astype(mx.uint32), 1 - frac), (right.astype(mx.uint32), frac)


def _cubic_taps(n, scale, align_corners, dim, ndims):
    """Four ``(index, weight)`` taps per output sample: Keys' cubic convolution with
    ``a = -0.75`` (as PyTorch's bicubic), indices clamped at the borders."""
    a = -0.75
    coords = _source_coordinates(n, scale, align_corners, dim, ndims)
    left1 = mx.floor(coords)
    taps = []
    for offset in (0, 1, -1, 2):
        grid = left1 + offset
        x = mx.abs(coords - grid)
        if offset in (0, 1):
            weight = ((a + 2.0) * x - (a + 3.0)) * x * x + 1
        else:
            weight = (((x - 5) * x + 8) * x - 4) * a
        index = mx.clip(grid, 0, n - 1).astype(mx.uint32)
        taps.append((index, weight[..., None]))
    return tuple(taps)


def _triangle_kernel(x):
    return mx.maximum(1.0 - x, 0.0)


def _keys_cubic_kernel(x):
    a = -0.5
    inner = ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    outer = (((x - 5) * x + 8) * x - 4) * a
    return mx.where(x <= 1.0, inner, mx.where(x <= 2.0, outer, 0.0))


def _antialiased_taps(kernel, radius):
    """Taps of `kernel` stretched by ``1 / scale`` when downsampling (a low-pass filter, as
    PIL and PyTorch's antialias), weights renormalized over the in-range taps."""

    def taps(n, scale, align_corners, dim, ndims):
        coords = _source_coordinates(n, scale, align_corners, dim, ndims)
        stretch = 1.0 / scale if scale < 1 else 1.0
        count = ceil(radius * stretch) + 1
        indices, weights = [], []
        for k in range(-count + 1, count):
            index = mx.floor(coords) + k
            w = kernel(mx.abs(coords - index) / stretch)
            weights.append(mx.where((index >= 0) & (index < n), w, 0.0))
            indices.append(index)
        total = sum(weights)
        total = mx.where(total > 0, total, 1.0)
        return tuple(
            (mx.clip(index, 0, n - 1).astype(mx.uint32), mx.expand_dims(w / total, -1))
            for index, w in zip(indices, weights)
        )

    return taps


_linear_antialiased_taps = _antialiased_taps(_triangle_kernel, 1.0)
_cubic_antialiased_taps = _antialiased_taps(_keys_cubic_kernel, 2.0)


def _check_scales(x, scale_factor):
    if x.ndim - 2 != len(scale_factor):
        raise ValueError(
            f"[Upsample] A scale is needed for each of the {x.ndim - 2} spatial dimensions but "
            f"scale_factor={scale_factor}"
        )


def _check_antialias(align_corners, antialias):
    if antialias and align_corners:
        raise ValueError(
            "[Upsample] antialias=True with align_corners=True is not supported; use "
            "align_corners=False for antialiased interpolation."
        )


def upsample_nearest(x: mx.array, scale_factor: Tuple):
    """Nearest-neighbour resize of ``(N, *spatial, C)`` by one scale per spatial axis."""
    _check_scales(x, scale_factor)
    dims = len(scale_factor)
    if tuple(map(int, scale_factor)) == tuple(scale_factor):
        # Integer scales: repeat each element with a broadcast, no gather.
        batch, *spatial, channels = x.shape
        expanded = [batch]
        for size in spatial:
            expanded += [size, 1]
        x = x.reshape(expanded + [channels])
        repeated = [batch]
        for size, s in zip(spatial, scale_factor):
            repeated += [size, int(s)]
        x = mx.broadcast_to(x, repeated + [channels])
        return x.reshape([batch] + [n * int(s) for n, s in zip(spatial, scale_factor)] + [channels])
    index = [slice(None)]
    for d, (n, s) in enumerate(zip(x.shape[1:-1], scale_factor)):
        index.append(_nearest_indices(n, s, d, dims))
    return x[tuple(index)]


def _interpolate(x, scale_factor, taps_fn, align_corners=False):
    """All axes at once: a weighted sum over every combination of per-axis taps."""
    _check_scales(x, scale_factor)
    dims = len(scale_factor)
    per_axis = [
        taps_fn(n, s, align_corners, d, dims)
        for d, (n, s) in enumerate(zip(x.shape[1:-1], scale_factor))
    ]
    result = None
    for combination in product(*per_axis):
        indices, weights = zip(*combination)
        term = reduce(operator.mul, weights) * x[(slice(None),) + indices]
        result = term if result is None else result + term
    return result


def _interpolate_separable(x, scale_factor, taps_fn, align_corners=False):
    """One axis after the other (fewer gathers than :func:`_interpolate`)."""
    _check_scales(x, scale_factor)
    dims = len(scale_factor)
    for d, (n, s) in enumerate(zip(x.shape[1:-1], scale_factor)):
        # Indexing rather than mx.take: kiln's take binding reads a one-element index
        # array as a scalar and drops the axis.
        lead = (slice(None),) * (d + 1)
        terms = [
            x[lead + (index.reshape(-1),)] * weight
            for index, weight in taps_fn(n, s, align_corners, d, dims)
        ]
        x = sum(terms[1:], terms[0])
    return x


def upsample_linear(
    x: mx.array, scale_factor: Tuple, align_corners: bool = False, antialias: bool = False
):
    """(Multi)linear resize of ``(N, *spatial, C)`` by one scale per spatial axis."""
    _check_antialias(align_corners, antialias)
    if antialias:
        return _interpolate_separable(x, scale_factor, _linear_antialiased_taps, align_corners)
    if not align_corners:
        return _interpolate_separable(x, scale_factor, _linear_taps, align_corners)
    return _interpolate(x, scale_factor, _linear_taps, align_corners)


def upsample_cubic(
    x: mx.array, scale_factor: Tuple, align_corners: bool = False, antialias: bool = False
):
    """(Multi)cubic resize of ``(N, *spatial, C)`` by one scale per spatial axis."""
    _check_antialias(align_corners, antialias)
    if antialias:
        return _interpolate_separable(x, scale_factor, _cubic_antialiased_taps, align_corners)
    return _interpolate(x, scale_factor, _cubic_taps, align_corners)


class Upsample(Module):
    """Resizes the spatial axes of ``(N, *spatial, C)`` inputs by `scale_factor` (one number
    for all axes or one per axis) with `mode` ``"nearest"``, ``"linear"`` or ``"cubic"``.

    Raises:
        ValueError: An unknown `mode`, `antialias` with ``"nearest"`` or with
            `align_corners`; at call, an input without spatial axes or a scale count that
            differs from the spatial axes.
    """

    _MODES = ("nearest", "linear", "cubic")

    def __init__(
        self,
        scale_factor: Union[float, Tuple],
        mode: Literal["nearest", "linear", "cubic"] = "nearest",
        align_corners: bool = False,
        antialias: bool = False,
    ):
        super().__init__()
        if mode not in self._MODES:
            raise ValueError(f"[Upsample] Got unsupported upsampling algorithm: mode={mode!r}")
        if antialias and mode == "nearest":
            raise ValueError(
                "[Upsample] Antialiasing is not supported for nearest neighbor upsampling"
            )
        _check_antialias(align_corners, antialias)
        if isinstance(scale_factor, (list, tuple)):
            scale_factor = tuple(float(s) for s in scale_factor)
        else:
            scale_factor = float(scale_factor)
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias

    def _extra_repr(self) -> str:
        text = (
            f"scale_factor={self.scale_factor}, mode={self.mode!r}, "
            f"align_corners={self.align_corners}"
        )
        return text + (", antialias=True" if self.antialias else "")

    def __call__(self, x: mx.array) -> mx.array:
        dims = x.ndim - 2
        if dims <= 0:
            raise ValueError(
                "[Upsample] The input should have at least 1 spatial dimension, so at least 3 "
                f"dimensions, but {x.ndim}D was provided"
            )
        scale_factor = self.scale_factor
        if isinstance(scale_factor, tuple):
            if len(scale_factor) != dims:
                raise ValueError(
                    f"[Upsample] One scale per spatial dimension is required but "
                    f"scale_factor={scale_factor} and the input has {dims} spatial dimensions"
                )
        else:
            scale_factor = (scale_factor,) * dims
        if self.mode == "nearest":
            return upsample_nearest(x, scale_factor)
        if self.mode == "linear":
            return upsample_linear(x, scale_factor, self.align_corners, self.antialias)
        return upsample_cubic(x, scale_factor, self.align_corners, self.antialias)
