"""Quantized layers (``QuantizedLinear``, ``QuantizedEmbedding``, ``QQLinear``) and
``quantize`` to swap a model's layers for them, over ``mx.quantize``, ``mx.dequantize``,
``mx.quantized_matmul`` and ``mx.qqmm``.
"""

import math
from typing import Callable, Optional, Union

import kiln.core as mx
from kiln.nn.layers.base import Module
from kiln.utils import tree_map_with_path

# mode -> (default group size, default bits)
_MODE_DEFAULTS = {"affine": (64, 4), "mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8)}


def _defaults_for_mode(mode, group_size, bits):
    if mode not in _MODE_DEFAULTS:
        raise ValueError(
            f"[quantize] Invalid quantization mode '{mode}'. Valid modes are: "
            f"{', '.join(_MODE_DEFAULTS)}."
        )
    default_group_size, default_bits = _MODE_DEFAULTS[mode]
    return group_size or default_group_size, bits or default_bits


def _require(op):
    if not hasattr(mx, op):
        raise RuntimeError(f"[quantize] mx.{op} is not in kiln.core yet")


def _quantize(weight, group_size, bits, mode):
    """``(packed weight, scales, biases or None)``."""
    _require("quantize")
    packed, scales, *biases = mx.quantize(weight, group_size, bits, mode=mode)
    return packed, scales, (biases[0] if biases else None)


def quantize(
    model: Module,
    group_size: int = None,
    bits: int = None,
    *,
    mode: str = "affine",
    quantize_input: bool = False,
    class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None,
):
    """Replaces, in place, the leaf modules of `model` that `class_predicate(path, module)`
    selects (by default every one with a ``to_quantized`` method) by their quantized
    versions. The predicate may return a dict of arguments for ``to_quantized`` instead of
    True.

    Raises:
        ValueError: A selected module cannot be quantized, or the predicate returned
            something other than a bool or a dict.
    """
    class_predicate = class_predicate or (lambda _, module: hasattr(module, "to_quantized"))

    def maybe_quantize(path, module):
        selected = class_predicate(path, module)
        if not selected:
            return module
        if not hasattr(module, "to_quantized"):
            raise ValueError(f"[quantize] Unable to quantize model of type {type(module)}")
        if isinstance(selected, bool):
            kwargs = {"group_size": group_size, "bits": bits, "mode": mode}
            if quantize_input:
                kwargs["quantize_input"] = True
            return module.to_quantized(**kwargs)
        if isinstance(selected, dict):
            kwargs = dict(selected)
            if not kwargs.get("quantize_input", True):
                kwargs.pop("quantize_input")
            return module.to_quantized(**kwargs)
        raise ValueError(
            "[quantize] class_predicate must return a bool or a dict of arguments for "
            "to_quantized"
        )

    leaves = tree_map_with_path(maybe_quantize, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)


class QuantizedEmbedding(Module):
    """An :class:`Embedding` whose table is stored quantized (``weight``, ``scales`` and, in
    affine mode, ``biases``, all frozen); rows are dequantized on lookup."""

    def __init__(
        self,
        num_embeddings: int,
        dims: int,
        group_size: int = None,
        bits: int = None,
        mode: str = "affine",
    ):
        super().__init__()
        self.group_size, self.bits = _defaults_for_mode(mode, group_size, bits)
        self.mode = mode
        table = mx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1 / dims))
        self.weight, self.scales, self.biases = _quantize(table, self.group_size, self.bits, mode)
        self.num_embeddings = num_embeddings
        self.dims = dims
        self.freeze()

    def __call__(self, x):
        biases = self.get("biases")
        return mx.dequantize(
            self["weight"][x],
            scales=self["scales"][x],
            biases=None if biases is None else biases[x],
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )

    def as_linear(self, x):
        """``x @ table.T`` with the quantized table."""
        return mx.quantized_matmul(
            x,
            self["weight"],
            scales=self["scales"],
            biases=self.get("biases"),
            transpose=True,
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )

    def _extra_repr(self):
        return (
            f"{self.num_embeddings}, {self.dims}, group_size={self.group_size}, "
            f"bits={self.bits}, mode={self.mode}"
        )

    @classmethod
    def from_embedding(
        cls, embedding_layer: Module, group_size: int = None, bits: int = None, mode: str = "affine"
    ):
        """The quantized copy of an :class:`Embedding`."""
        num_embeddings, dims = embedding_layer.weight.shape
        layer = cls(num_embeddings, dims, group_size, bits, mode=mode)
        layer.weight, layer.scales, layer.biases = _quantize(
            embedding_layer.weight, layer.group_size, layer.bits, mode
        )
        return layer


class QuantizedLinear(Module):
    """A :class:`Linear` whose weight is stored quantized (``weight``, ``scales``,
    ``biases``, frozen) and multiplied with ``mx.quantized_matmul``; the optional ``bias``
    stays in full precision."""

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group_size: int = None,
        bits: int = None,
        mode: str = "affine",
    ):
        super().__init__()
        self.group_size, self.bits = _defaults_for_mode(mode, group_size, bits)
        self.mode = mode
        scale = math.sqrt(1 / input_dims)
        weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        self.weight, self.scales, self.biases = _quantize(weight, self.group_size, self.bits, mode)
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def _extra_repr(self):
        out_dims, packed_dims = self.weight.shape
        return (
            f"input_dims={packed_dims * 32 // self.bits}, output_dims={out_dims}, "
            f"bias={'bias' in self}, group_size={self.group_size}, bits={self.bits}, "
            f"mode={self.mode}"
        )

    def __call__(self, x):
        y = mx.quantized_matmul(
            x,
            self["weight"],
            scales=self["scales"],
            biases=self.get("biases"),
            transpose=True,
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(
        cls, linear_layer: Module, group_size: int = None, bits: int = None, mode: str = "affine"
    ):
        """The quantized copy of a :class:`Linear`."""
        output_dims, input_dims = linear_layer.weight.shape
        layer = cls(input_dims, output_dims, False, group_size, bits, mode=mode)
        layer.weight, layer.scales, layer.biases = _quantize(
            linear_layer.weight, layer.group_size, layer.bits, mode
        )
        if "bias" in linear_layer:
            layer.bias = linear_layer.bias
        return layer


class QQLinear(Module):
    """A bias-free linear layer with quantized weights *and* activations (``mx.qqmm``, modes
    ``nvfp4`` and ``mxfp8``): full-precision weights in training mode, quantized in
    evaluation mode."""

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        group_size: int = None,
        bits: int = None,
        mode: str = "nvfp4",
    ):
        super().__init__()
        self.group_size, self.bits = _defaults_for_mode(mode, group_size, bits)
        self.mode = mode
        scale = math.sqrt(1 / input_dims)
        self.weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        self._quantized = False

    def _extra_repr(self):
        out_dims, in_dims = self.weight.shape
        if self.weight.dtype == mx.uint32:
            in_dims = in_dims * 32 // self.bits
        return (
            f"input_dims={in_dims}, output_dims={out_dims}, group_size={self.group_size}, "
            f"bits={self.bits}, mode={self.mode}"
        )

    def quantize(self):
        """Replaces the weight by its quantized form (no-op when already quantized)."""
        if not self._quantized:
            _require("quantize")
            self.weight, self.scales = mx.quantize(
                self.weight, self.group_size, self.bits, mode=self.mode
            )
            self._quantized = True

    def dequantize(self):
        """Replaces the quantized weight by its dequantized form (no-op when not
        quantized)."""
        if self._quantized:
            self.weight = mx.dequantize(
                self.weight,
                scales=self.scales,
                group_size=self.group_size,
                bits=self.bits,
                mode=self.mode,
            )
            del self.scales
            self._quantized = False

    def _set_training_mode(self, mode: bool):
        super()._set_training_mode(mode)
        if self._training:
            self.dequantize()
        else:
            self.quantize()

    def __call__(self, x):
        return mx.qqmm(
            x,
            self["weight"],
            scales=self.get("scales"),
            group_size=self.group_size,
            bits=self.bits,
            mode=self.mode,
        )

    @classmethod
    def from_linear(
        cls, linear_layer: Module, group_size: int = None, bits: int = None, mode: str = "nvfp4"
    ):
        """A :class:`QQLinear` with a bias-free :class:`Linear`'s weight."""
        output_dims, input_dims = linear_layer.weight.shape
        if linear_layer.get("bias") is not None:
            raise NotImplementedError("[QQLinear] Linear layers with a bias are not supported yet.")
        layer = cls(input_dims, output_dims, group_size, bits, mode=mode)
        layer.weight = linear_layer.weight
        layer.train(linear_layer.training)
        return layer
