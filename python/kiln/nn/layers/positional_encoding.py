"""Positional encodings: rotary (``RoPE``), sinusoidal and ALiBi attention biases."""

import math
from typing import Optional

import kiln.core as mx
from kiln.core import fast
from kiln.nn.layers.base import Module


class RoPE(Module):
    r"""Rotary positional encoding (Su et al., RoFormer, 2021) of the first `dims` features
    of inputs ``(..., T, D)``: feature pair ``i`` at position ``t`` is rotated by the angle
    :math:`t \cdot \text{scale} \cdot \text{base}^{-2i/\text{dims}}`.

    Pairs are the two halves of the rotated features, or consecutive features when
    `traditional`. ``__call__(x, offset)`` starts the positions at `offset` (a KV cache's
    length).

    Raises:
        ValueError: `dims` is not a positive even number.
    """

    def __init__(
        self, dims: int, traditional: bool = False, base: float = 10000, scale: float = 1.0
    ):
        super().__init__()
        if dims <= 0 or dims % 2 != 0:
            raise ValueError(f"[RoPE] dims must be positive and even but got {dims}.")
        self.dims = dims
        self.traditional = traditional
        self.base = base
        self.scale = scale

    def _extra_repr(self):
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x, offset: int = 0):
        return fast.rope(
            x,
            self.dims,
            traditional=self.traditional,
            base=self.base,
            scale=self.scale,
            offset=offset,
        )


class SinusoidalPositionalEncoding(Module):
    r"""The sinusoidal encoding of "Attention Is All You Need": each input value ``x``
    becomes ``dims`` features :math:`[\sin(x \sigma_i), \cos(x \sigma_i)]` (cosines first
    when `cos_first`), times `scale` (:math:`\sqrt{2 / \text{dims}}` by default).

    The ``dims / 2`` frequencies :math:`\sigma_i` are spaced geometrically from `max_freq`
    down to `min_freq`, and multiplied by :math:`2\pi` when `full_turns`.

    Raises:
        ValueError: `dims` is not a positive even number.
    """

    def __init__(
        self,
        dims: int,
        min_freq: float = 0.0001,
        max_freq: float = 1,
        scale: Optional[float] = None,
        cos_first: bool = False,
        full_turns: bool = False,
    ):
        super().__init__()
        if dims <= 0 or dims % 2 != 0:
            raise ValueError(
                f"[SinusoidalPositionalEncoding] dims must be positive and even but got {dims}."
            )
        half = dims // 2
        # Goes from 1 (max_freq) down to 0 (min_freq) in log space.
        fraction = mx.array([1.0]) if half == 1 else 1 - mx.arange(0, half) / (half - 1)
        log_min, log_max = math.log(min_freq), math.log(max_freq)
        self._sigmas = mx.exp(fraction * (log_max - log_min) + log_min)
        if full_turns:
            self._sigmas = self._sigmas * (2 * math.pi)
        self.scale = scale if scale is not None else (2 / dims) ** 0.5
        self.cos_first = cos_first

    def __call__(self, x):
        angles = x[..., None] * self._sigmas
        parts = [mx.sin(angles), mx.cos(angles)]
        if self.cos_first:
            parts.reverse()
        y = mx.concatenate(parts, axis=-1)
        if self.scale != 1:
            y = y * self.scale
        return y


class ALiBi(Module):
    """Attention with Linear Biases (Press et al., 2022): adds ``-slope_h * |i - j|`` to the
    attention scores ``(B, H, T_q, T_k)`` of head ``h``, with geometric per-head slopes."""

    @staticmethod
    def create_alibi_matrix(
        q_sequence_length: int,
        k_sequence_length: int,
        num_heads: int,
        offset: int = 0,
        dtype: mx.Dtype = mx.float32,
    ) -> mx.array:
        """The biases ``(1, num_heads, q_sequence_length - offset, k_sequence_length)`` for
        queries at positions ``offset .. q_sequence_length - 1``."""
        queries = mx.arange(offset, q_sequence_length)
        keys = mx.arange(0, k_sequence_length)
        distance = -mx.abs(mx.expand_dims(queries[:, None] - keys[None, :], axis=(0, 1)))
        slopes = ALiBi.create_alibi_slope(num_heads=num_heads, dtype=dtype)
        return (distance * slopes).astype(dtype)

    @staticmethod
    def create_alibi_slope(num_heads: int, dtype: mx.Dtype = mx.float32) -> mx.array:
        """The per-head slopes, shape ``(num_heads, 1, 1)``: ``2^(-8 h / n)`` for a power of
        two ``n`` heads, interleaved from the next power of two otherwise."""

        def slopes(n):
            if math.log2(n).is_integer():
                first = 2 ** (-(2 ** -(math.log2(n) - 3)))
                return [first ** (i + 1) for i in range(n)]
            lower = 2 ** math.floor(math.log2(n))
            return slopes(lower) + slopes(2 * lower)[0::2][: n - lower]

        return mx.expand_dims(mx.array(slopes(num_heads), dtype=dtype), axis=(-1, -2))

    def __call__(
        self, attention_scores: mx.array, offset: int = 0, mask: Optional[mx.array] = None
    ) -> mx.array:
        bias = ALiBi.create_alibi_matrix(
            q_sequence_length=attention_scores.shape[-2] + offset,
            k_sequence_length=attention_scores.shape[-1],
            num_heads=attention_scores.shape[1],
            offset=offset,
            dtype=attention_scores.dtype,
        )
        if mask is not None:
            bias = bias + mask
        return attention_scores + bias
