"""Affine layers: ``Identity``, ``Linear`` and ``Bilinear``."""

import math
from typing import Any, Optional

import kiln.core as mx
from kiln.nn.layers.base import Module


def _check_dims(layer, positive, non_negative=()):
    """ValueError naming the first dimension out of range: those in `positive` set the
    initialization scale and must be > 0, the others (pairs too) must be >= 0."""
    for name, value in positive:
        if value <= 0:
            raise ValueError(f"[{layer}] {name} must be positive but got {value}")
    for name, value in non_negative:
        if value < 0:
            raise ValueError(f"[{layer}] {name} must be non-negative but got {value}")


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __call__(self, x: mx.array) -> mx.array:
        return x


class Linear(Module):
    r"""``y = x W^T + b`` with ``weight`` of shape ``(output_dims, input_dims)`` and ``bias`` of
    shape ``(output_dims,)`` (when `bias`), both drawn uniformly from
    :math:`[-1/\sqrt{\text{input\_dims}}, 1/\sqrt{\text{input\_dims}}]`.

    Raises:
        ValueError: `input_dims` is not positive or `output_dims` is negative.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True) -> None:
        super().__init__()
        _check_dims("Linear", [("input_dims", input_dims)], [("output_dims", output_dims)])
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        if bias:
            self.bias = mx.random.uniform(low=-scale, high=scale, shape=(output_dims,))

    def _extra_repr(self) -> str:
        return (
            f"input_dims={self.weight.shape[1]}, output_dims={self.weight.shape[0]}, "
            f"bias={'bias' in self}"
        )

    def __call__(self, x: mx.array) -> mx.array:
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T

    def to_quantized(
        self,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
        quantize_input: bool = False,
    ):
        """A :class:`QuantizedLinear` (or, with `quantize_input`, a :class:`QQLinear`)
        holding this layer's weights quantized."""
        from kiln.nn.layers.quantized import QQLinear, QuantizedLinear

        if quantize_input:
            if mode not in ("nvfp4", "mxfp8"):
                raise ValueError(
                    "[Linear.to_quantized] Quantized activations are only supported for "
                    f"'nvfp4' and 'mxfp8' modes, got {mode}."
                )
            return QQLinear.from_linear(self, group_size, bits, mode)
        return QuantizedLinear.from_linear(self, group_size, bits, mode)


class Bilinear(Module):
    r"""``y_i = x_1^T W_i x_2 + b_i`` with ``weight`` of shape ``(output_dims, input2_dims,
    input1_dims)`` and ``bias`` of shape ``(output_dims,)``, drawn uniformly from
    :math:`[-1/\sqrt{\text{input1\_dims}}, 1/\sqrt{\text{input1\_dims}}]`.

    Raises:
        ValueError: `input1_dims` is not positive or another dimension is negative.
    """

    def __init__(
        self, input1_dims: int, input2_dims: int, output_dims: int, bias: bool = True
    ) -> None:
        super().__init__()
        _check_dims(
            "Bilinear",
            [("input1_dims", input1_dims)],
            [("input2_dims", input2_dims), ("output_dims", output_dims)],
        )
        scale = math.sqrt(1.0 / input1_dims)
        self.weight = mx.random.uniform(
            low=-scale, high=scale, shape=(output_dims, input2_dims, input1_dims)
        )
        if bias:
            self.bias = mx.random.uniform(low=-scale, high=scale, shape=(output_dims,))

    def _extra_repr(self) -> str:
        out, in2, in1 = self.weight.shape
        return f"input1_dims={in1}, input2_dims={in2}, output_dims={out}, bias={'bias' in self}"

    def __call__(self, x1: mx.array, x2: mx.array) -> mx.array:
        out, in2, in1 = self.weight.shape
        batch_shape = x1.shape[:-1]
        # One matmul against all W_i stacked, then a batched dot with x2.
        partial_products = x1.reshape(-1, in1) @ self.weight.reshape(out * in2, in1).T
        partial_products = partial_products.reshape(-1, out, in2).swapaxes(-2, -1)
        y = (x2.reshape(-1, 1, in2) @ partial_products).squeeze(1)
        y = y.reshape(*batch_shape, out)
        if "bias" in self:
            y = y + self.bias
        return y
