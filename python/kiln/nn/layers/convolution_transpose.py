"""Transposed convolutions over 1, 2 or 3 spatial axes of channels-last inputs:
``ConvTranspose1d/2d/3d``, calling ``mx.conv_transpose1d/2d/3d``.

Weights have shape ``(C_out, *kernel_size, C_in)`` and are drawn uniformly from ``[-s, s]``
with ``s = 1 / sqrt(C_in * prod(kernel_size))``; the bias is zeros.
"""

import math
from typing import Union

import kiln.core as mx
from kiln.nn.layers.base import Module
from kiln.nn.layers.convolution import _check_conv_args, _tuple


class _ConvTransposeNd(Module):
    _n = 0

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        output_padding,
        bias,
    ):
        super().__init__()
        kernel_size = _tuple(kernel_size, self._n)
        _check_conv_args(type(self).__name__, in_channels, out_channels, kernel_size, 1)
        scale = math.sqrt(1 / (in_channels * math.prod(kernel_size)))
        self.weight = mx.random.uniform(
            low=-scale, high=scale, shape=(out_channels, *kernel_size, in_channels)
        )
        if bias:
            self.bias = mx.zeros((out_channels,))
        if self._n == 1:
            self.padding, self.stride, self.output_padding = padding, stride, output_padding
        else:
            self.padding = _tuple(padding, self._n)
            self.stride = _tuple(stride, self._n)
            self.output_padding = _tuple(output_padding, self._n)
        self.dilation = dilation

    def _extra_repr(self):
        kernel = self.weight.shape[1 : 1 + self._n]
        return (
            f"{self.weight.shape[-1]}, {self.weight.shape[0]}, "
            f"kernel_size={kernel[0] if self._n == 1 else kernel}, stride={self.stride}, "
            f"padding={self.padding}, dilation={self.dilation}, "
            f"output_padding={self.output_padding}, bias={'bias' in self}"
        )

    def __call__(self, x):
        conv = getattr(mx, f"conv_transpose{self._n}d")
        y = conv(x, self.weight, self.stride, self.padding, self.dilation, self.output_padding)
        return y + self.bias if "bias" in self else y


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution of ``(N, L, C_in)`` inputs.

    Raises:
        ValueError: Non-positive channels or kernel size.
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
        output_padding: int = 0,
        bias: bool = True,
    ):
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias
        )


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution of ``(N, H, W, C_in)`` inputs; sizes are ints or pairs."""

    _n = 2

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple],
        stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0,
        dilation: Union[int, tuple] = 1,
        output_padding: Union[int, tuple] = 0,
        bias: bool = True,
    ):
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias
        )


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution of ``(N, D, H, W, C_in)`` inputs; sizes are ints or
    triples."""

    _n = 3

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Union[int, tuple],
        stride: Union[int, tuple] = 1,
        padding: Union[int, tuple] = 0,
        dilation: Union[int, tuple] = 1,
        output_padding: Union[int, tuple] = 0,
        bias: bool = True,
    ):
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias
        )
