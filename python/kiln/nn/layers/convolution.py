"""Convolutions over 1, 2 or 3 spatial axes of channels-last inputs ``(N, *spatial, C_in)``:
``Conv1d``, ``Conv2d`` and ``Conv3d``, calling ``mx.conv1d/2d/3d``.

Weights have shape ``(C_out, *kernel_size, C_in / groups)`` and are drawn uniformly from
``[-s, s]`` with ``s = 1 / sqrt(C_in / groups * prod(kernel_size))``; the bias is zeros.
"""

import math
from typing import Union

import kiln.core as mx
from kiln.nn.layers.base import Module


def _tuple(value, n):
    return (value,) * n if isinstance(value, int) else tuple(value)


def _check_conv_args(layer, in_channels, out_channels, kernel_size, groups):
    if in_channels <= 0:
        raise ValueError(f"[{layer}] in_channels must be positive but got {in_channels}")
    if out_channels < 0:
        raise ValueError(f"[{layer}] out_channels must be non-negative but got {out_channels}")
    if any(k <= 0 for k in kernel_size):
        raise ValueError(f"[{layer}] kernel_size must be positive but got {kernel_size}")
    if groups <= 0 or in_channels % groups != 0:
        raise ValueError(
            f"[{layer}] The number of input channels ({in_channels}) must be divisible by the "
            f"number of groups ({groups})"
        )


class _ConvNd(Module):
    _n = 0

    def __init__(
        self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias
    ):
        super().__init__()
        layer = type(self).__name__
        kernel_size = _tuple(kernel_size, self._n)
        _check_conv_args(layer, in_channels, out_channels, kernel_size, groups)
        scale = math.sqrt(1 / (in_channels // groups * math.prod(kernel_size)))
        self.weight = mx.random.uniform(
            low=-scale, high=scale, shape=(out_channels, *kernel_size, in_channels // groups)
        )
        if bias:
            self.bias = mx.zeros((out_channels,))
        if self._n == 1:
            self.padding, self.stride, self.dilation = padding, stride, dilation
        else:
            self.padding = _tuple(padding, self._n)
            self.stride = _tuple(stride, self._n)
            self.dilation = dilation
        self.groups = groups

    def _kernel_repr(self):
        kernel = self.weight.shape[1 : 1 + self._n]
        return kernel[0] if self._n == 1 else kernel

    def _extra_repr(self):
        return (
            f"{self.weight.shape[-1] * self.groups}, {self.weight.shape[0]}, "
            f"kernel_size={self._kernel_repr()}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, groups={self.groups}, bias={'bias' in self}"
        )

    def _add_bias(self, y):
        return y + self.bias if "bias" in self else y


class Conv1d(_ConvNd):
    """1-d convolution of ``(N, L, C_in)`` inputs (see the module doc for the weights).

    Raises:
        ValueError: Non-positive channels or kernel size, or `in_channels` not divisible by
            `groups`.
    """

    _n = 1

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        padding: int = 0,
        dilation: int = 1,
        groups: int = 1,
        bias: bool = True,
    ):
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias
        )

    def __call__(self, x):
        return self._add_bias(
            mx.conv1d(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        )


class Conv2d(_ConvNd):
    """2-d convolution of ``(N, H, W, C_in)`` inputs; sizes are ints or pairs."""

    _n = 2

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple],
        stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0,
        dilation: Union[int, tuple] = 1,
        groups: int = 1,
        bias: bool = True,
    ):
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias
        )

    def __call__(self, x):
        return self._add_bias(
            mx.conv2d(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        )


class Conv3d(_ConvNd):
    """3-d convolution of ``(N, D, H, W, C_in)`` inputs; sizes are ints or triples."""

    _n = 3

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple],
        stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0,
        dilation: Union[int, tuple] = 1,
        bias: bool = True,
    ):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, 1, bias)

    def _extra_repr(self):
        return (
            f"{self.weight.shape[-1]}, {self.weight.shape[0]}, "
            f"kernel_size={self._kernel_repr()}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, bias={'bias' in self}"
        )

    def __call__(self, x):
        return self._add_bias(mx.conv3d(x, self.weight, self.stride, self.padding, self.dilation))
