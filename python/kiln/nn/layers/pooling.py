"""Max and average pooling over 1, 2 or 3 spatial axes of channels-last inputs ``(N, ...,
C)``: ``MaxPool1d/2d/3d`` and ``AvgPool1d/2d/3d``."""

import math
from typing import Optional, Tuple, Union

import kiln.core as mx
from kiln.nn.layers.base import Module


def _per_axis(value, n, layer, name):
    """`value` as a list of `n` ints (an int repeats)."""
    if isinstance(value, (list, tuple)):
        if len(value) != n or not all(isinstance(v, int) for v in value):
            raise ValueError(
                f"[{layer}] '{name}' must be an integer or a tuple of {n} integers but got {value}"
            )
        return list(value)
    if not isinstance(value, int):
        raise ValueError(
            f"[{layer}] '{name}' must be an integer or a tuple of {n} integers but got {value}"
        )
    return [value] * n


def _sliding_windows(x, window, strides):
    """A view of ``x`` (``(N, *spatial, C)``) of shape ``(N, *out_spatial, *window, C)``
    holding every window."""
    if x.ndim < 3:
        raise ValueError(
            "[Pooling] At least one spatial axis (3 dimensions in total) is needed but the input "
            f"has {x.ndim} dimensions."
        )
    spatial = x.shape[1:-1]
    if not len(spatial) == len(window) == len(strides):
        raise ValueError(
            f"[Pooling] The input has {len(spatial)} spatial dimensions but the window has "
            f"{len(window)} and the strides {len(strides)}."
        )
    if any(size < w for size, w in zip(spatial, window)):
        raise ValueError(
            f"[Pooling] The window {tuple(window)} is larger than the (padded) spatial shape "
            f"{tuple(spatial)}."
        )
    if all(w == s and size % w == 0 for size, w, s in zip(spatial, window, strides)):
        # Tiles: a reshape that splits each axis into (count, window), then a transpose.
        split = [x.shape[0]]
        for size, w in zip(spatial, window):
            split += [size // w, w]
        split.append(x.shape[-1])
        d = len(spatial)
        order = [0] + [1 + 2 * i for i in range(d)] + [2 + 2 * i for i in range(d)] + [2 * d + 1]
        return x.reshape(split).transpose(order)

    # Overlapping or ragged windows: a strided view of the row-major buffer.
    row_major = [math.prod(x.shape[i + 1 :]) for i in range(x.ndim)]
    out_spatial = [(size - w) // s + 1 for size, w, s in zip(spatial, window, strides)]
    shape = [x.shape[0], *out_spatial, *window, x.shape[-1]]
    view_strides = [
        row_major[0],
        *(row_major[1 + i] * s for i, s in enumerate(strides)),
        *row_major[1:-1],
        row_major[-1],
    ]
    return mx.as_strided(x, shape, view_strides)


class _Pool(Module):
    def __init__(self, reduce_fn, pad_value, n, kernel_size, stride, padding):
        super().__init__()
        layer = type(self).__name__
        kernel_size = _per_axis(kernel_size, n, layer, "kernel_size")
        stride = kernel_size if stride is None else _per_axis(stride, n, layer, "stride")
        padding = _per_axis(padding, n, layer, "padding")
        for name, values in (("kernel_size", kernel_size), ("stride", stride)):
            if any(v <= 0 for v in values):
                raise ValueError(f"[{layer}] '{name}' must be positive but got {tuple(values)}.")
        if any(p < 0 for p in padding):
            raise ValueError(f"[{layer}] 'padding' must be non-negative but got {tuple(padding)}.")
        self._pooling_function = reduce_fn
        self._kernel_size = kernel_size
        self._stride = stride
        self._padding = [(p, p) for p in padding]
        self._padding_value = pad_value
        self._axes = tuple(range(-n - 1, -1))

    def _extra_repr(self):
        padding = tuple(p for p, _ in self._padding)
        return (
            f"kernel_size={tuple(self._kernel_size)}, stride={tuple(self._stride)}, "
            f"padding={padding}"
        )

    def __call__(self, x):
        if any(p > 0 for p, _ in self._padding):
            x = mx.pad(x, [(0, 0)] + self._padding + [(0, 0)], constant_values=self._padding_value)
        windows = _sliding_windows(x, self._kernel_size, self._stride)
        return self._pooling_function(windows, self._axes)


class MaxPool1d(_Pool):
    """The maximum over windows of `kernel_size` positions, moved by `stride` (the kernel
    size by default), of inputs ``(N, L, C)`` padded by `padding` (with ``-inf``) on both
    sides.

    Raises:
        ValueError: A size that is not an int (or a 1-tuple of ints), a non-positive kernel
            size or stride, or a negative padding.
    """

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int]],
        stride: Optional[Union[int, Tuple[int]]] = None,
        padding: Union[int, Tuple[int]] = 0,
    ):
        super().__init__(mx.max, -float("inf"), 1, kernel_size, stride, padding)


class AvgPool1d(_Pool):
    """The mean over windows of `kernel_size` positions of inputs ``(N, L, C)`` (zero
    padding is counted in the mean); arguments as :class:`MaxPool1d`."""

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int]],
        stride: Optional[Union[int, Tuple[int]]] = None,
        padding: Union[int, Tuple[int]] = 0,
    ):
        super().__init__(mx.mean, 0, 1, kernel_size, stride, padding)


class MaxPool2d(_Pool):
    """As :class:`MaxPool1d` over the two spatial axes of ``(N, H, W, C)``; sizes are ints
    or 2-tuples."""

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int, int]],
        stride: Optional[Union[int, Tuple[int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int]]] = 0,
    ):
        super().__init__(mx.max, -float("inf"), 2, kernel_size, stride, padding)


class AvgPool2d(_Pool):
    """As :class:`AvgPool1d` over the two spatial axes of ``(N, H, W, C)``."""

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int, int]],
        stride: Optional[Union[int, Tuple[int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int]]] = 0,
    ):
        super().__init__(mx.mean, 0, 2, kernel_size, stride, padding)


class MaxPool3d(_Pool):
    """As :class:`MaxPool1d` over the three spatial axes of ``(N, D, H, W, C)``; sizes are
    ints or 3-tuples."""

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int, int, int]],
        stride: Optional[Union[int, Tuple[int, int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int, int]]] = 0,
    ):
        super().__init__(mx.max, -float("inf"), 3, kernel_size, stride, padding)


class AvgPool3d(_Pool):
    """As :class:`AvgPool1d` over the three spatial axes of ``(N, D, H, W, C)``."""

    def __init__(
        self,
        kernel_size: Union[int, Tuple[int, int, int]],
        stride: Optional[Union[int, Tuple[int, int, int]]] = None,
        padding: Optional[Union[int, Tuple[int, int, int]]] = 0,
    ):
        super().__init__(mx.mean, 0, 3, kernel_size, stride, padding)
