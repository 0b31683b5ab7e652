"""``Embedding``: a lookup table of vectors."""

import math
from typing import Optional

import kiln.core as mx
from kiln.nn.layers.base import Module


class Embedding(Module):
    """Maps integer indices to rows of ``weight`` (shape ``(num_embeddings, dims)``, drawn
    from a normal distribution with standard deviation ``1 / sqrt(dims)``).

    Raises:
        ValueError: `num_embeddings` is negative or `dims` is not positive.
    """

    def __init__(self, num_embeddings: int, dims: int):
        super().__init__()
        if num_embeddings < 0:
            raise ValueError(
                f"[Embedding] num_embeddings must be non-negative but got {num_embeddings}"
            )
        if dims <= 0:
            raise ValueError(f"[Embedding] dims must be positive but got {dims}")
        self.weight = mx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1 / dims))

    def _extra_repr(self):
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"

    def __call__(self, x):
        return self.weight[x]

    def as_linear(self, x):
        """``x @ weight.T``: scores against every embedding (for tied input/output
        embeddings)."""
        return x @ self.weight.T

    def to_quantized(
        self,
        group_size: Optional[int] = None,
        bits: Optional[int] = None,
        mode: str = "affine",
        quantize_input: bool = False,
    ):
        """A :class:`QuantizedEmbedding` holding this layer's weights quantized."""
        from kiln.nn.layers.quantized import QuantizedEmbedding

        if quantize_input:
            raise ValueError("[Embedding.to_quantized] Quantized input is not supported.")
        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode)
