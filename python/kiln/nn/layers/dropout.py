"""Dropout layers: random zeroing of elements (``Dropout``) or of whole channels
(``Dropout2d``, ``Dropout3d``) in training mode, the identity in evaluation mode."""

import kiln.core as mx
from kiln.nn.layers.base import Module


class _DropoutBase(Module):
    def __init__(self, p: float):
        super().__init__()
        if p < 0 or p >= 1:
            raise ValueError(
                f"[{type(self).__name__}] The dropout probability p={p} is not in [0, 1)"
            )
        self._p_1 = 1 - p  # the probability of keeping an element

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def _drop(self, x, mask_shape):
        if self._p_1 == 1 or not self.training:
            return x
        keep = mx.random.bernoulli(p=self._p_1, shape=mask_shape)
        return keep * x * (1 / self._p_1)


class Dropout(_DropoutBase):
    """Zeroes each element with probability `p` during training and scales the kept ones by
    ``1 / (1 - p)``.

    Raises:
        ValueError: `p` is not in ``[0, 1)``.
    """

    def __init__(self, p: float = 0.5):
        super().__init__(p)

    def __call__(self, x: mx.array) -> mx.array:
        return self._drop(x, x.shape)


class Dropout2d(_DropoutBase):
    """Zeroes whole channels of ``(N, H, W, C)`` or ``(H, W, C)`` inputs with probability `p`
    during training (one draw per channel and sample), scaling the kept ones by ``1 / (1 -
    p)``.

    Raises:
        ValueError: `p` is not in ``[0, 1)``; at call, an input that is not 3-d or 4-d.
    """

    def __init__(self, p: float = 0.5):
        super().__init__(p)

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim not in (3, 4):
            raise ValueError(
                f"[Dropout2d] Received input with {x.ndim} dimensions. Expected 3 or 4 dimensions."
            )
        shape = list(x.shape)
        shape[-3] = shape[-2] = 1
        return self._drop(x, shape)


class Dropout3d(_DropoutBase):
    """As :class:`Dropout2d` for ``(N, D, H, W, C)`` or ``(D, H, W, C)`` inputs.

    Raises:
        ValueError: `p` is not in ``[0, 1)``; at call, an input that is not 4-d or 5-d.
    """

    def __init__(self, p: float = 0.5):
        super().__init__(p)

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim not in (4, 5):
            raise ValueError(
                f"[Dropout3d] Received input with {x.ndim} dimensions. Expected 4 or 5 dimensions."
            )
        shape = list(x.shape)
        shape[-4] = shape[-3] = shape[-2] = 1
        return self._drop(x, shape)
