"""Normalization layers: ``LayerNorm``, ``RMSNorm``, ``GroupNorm``, ``InstanceNorm`` and
``BatchNorm``. Features are on the last axis (channels-last, as everywhere in ``nn``)."""

from typing import Tuple

import kiln.core as mx
from kiln.core import fast
from kiln.nn.layers.base import Module


def _check_eps(layer, eps):
    if eps <= 0.0:
        raise ValueError(f"[{layer}] 'eps' must be positive but got {eps}.")


def _check_dims(layer, name, dims):
    if dims <= 0:
        raise ValueError(f"[{layer}] '{name}' must be a positive integer but got {dims}.")


class InstanceNorm(Module):
    r"""Normalizes each channel of each sample over its spatial axes: inputs ``(N, ..., C)``
    with at least one spatial axis; :math:`y = (x - \mu) / \sqrt{\sigma^2 + \epsilon}`, then
    ``weight * y + bias`` when `affine` (both of shape ``(dims,)``, ones and zeros).

    Raises:
        ValueError: `eps` or `dims` is not positive; at call, an input with fewer than 3
            axes.
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = False):
        super().__init__()
        _check_eps("InstanceNorm", eps)
        _check_dims("InstanceNorm", "dims", dims)
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self):
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim < 3:
            raise ValueError(
                "[InstanceNorm] Expects inputs with at least 3 dimensions (N, ..., C) but the "
                f"input has {x.ndim} dimensions."
            )
        batch, channels = x.shape[0], x.shape[-1]
        spatial = x.shape[1:-1]
        # Channels first so that each (sample, channel) row is one layer_norm row.
        rows = mx.moveaxis(x, -1, 1).reshape(batch, channels, -1)
        y = fast.layer_norm(rows, None, None, self.eps)
        y = mx.moveaxis(y.reshape(batch, channels, *spatial), 1, -1)
        return self.weight * y + self.bias if "weight" in self else y


class LayerNorm(Module):
    r"""Normalizes over the last axis: :math:`y = (x - \mu) / \sqrt{\sigma^2 + \epsilon}
    \cdot \gamma + \beta`, with ``weight`` :math:`\gamma` (ones) and ``bias`` :math:`\beta`
    (zeros) of shape ``(dims,)`` when `affine` (``bias`` only when `bias` too).

    Raises:
        ValueError: `eps` or `dims` is not positive.
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True, bias: bool = True):
        super().__init__()
        _check_eps("LayerNorm", eps)
        _check_dims("LayerNorm", "dims", dims)
        if affine:
            self.weight = mx.ones((dims,))
            if bias:
                self.bias = mx.zeros((dims,))
        self.eps = eps
        self.dims = dims

    def _extra_repr(self):
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x):
        weight = self["weight"] if "weight" in self else None
        bias = self["bias"] if "bias" in self else None
        return fast.layer_norm(x, weight, bias, self.eps)


class RMSNorm(Module):
    r"""Root-mean-square normalization over the last axis: :math:`y = x / \sqrt{\mathrm{mean}
    (x^2) + \epsilon} \cdot \gamma` with ``weight`` :math:`\gamma` of shape ``(dims,)``
    (ones).

    Raises:
        ValueError: `eps` or `dims` is not positive.
    """

    def __init__(self, dims: int, eps: float = 1e-5):
        super().__init__()
        _check_eps("RMSNorm", eps)
        _check_dims("RMSNorm", "dims", dims)
        self.weight = mx.ones((dims,))
        self.eps = eps

    def _extra_repr(self):
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def __call__(self, x):
        return fast.rms_norm(x, self["weight"], self.eps)


class GroupNorm(Module):
    r"""Splits the `dims` channels of ``(N, ..., C)`` inputs into `num_groups` groups and
    normalizes each group of each sample over its channels and spatial positions; then
    ``weight * y + bias`` when `affine`.

    Channel ``c`` belongs to group ``c % num_groups`` (MLX's default grouping); with
    `pytorch_compatible` to group ``c // (dims / num_groups)`` as in PyTorch.

    Raises:
        ValueError: `eps`, `num_groups` or `dims` is not positive, or `dims` is not a
            multiple of `num_groups`.
    """

    def __init__(
        self,
        num_groups: int,
        dims: int,
        eps: float = 1e-5,
        affine: bool = True,
        pytorch_compatible: bool = False,
    ):
        super().__init__()
        _check_eps("GroupNorm", eps)
        _check_dims("GroupNorm", "num_groups", num_groups)
        _check_dims("GroupNorm", "dims", dims)
        if dims % num_groups != 0:
            raise ValueError(
                f"[GroupNorm] The number of features dims={dims} must be divisible by "
                f"num_groups={num_groups}."
            )
        if affine:
            self.bias = mx.zeros((dims,))
            self.weight = mx.ones((dims,))
        self.num_groups = num_groups
        self.dims = dims
        self.eps = eps
        self.pytorch_compatible = pytorch_compatible

    def _extra_repr(self):
        return (
            f"{self.num_groups}, {self.dims}, eps={self.eps}, affine={'weight' in self}, "
            f"pytorch_compatible={self.pytorch_compatible}"
        )

    def _pytorch_compatible_group_norm(self, x):
        groups = self.num_groups
        batch, *spatial, dims = x.shape
        size = dims // groups
        # (batch, groups, positions * size): each row is one group, for layer_norm.
        rows = x.reshape(batch, -1, groups, size).transpose(0, 2, 1, 3).reshape(batch, groups, -1)
        y = fast.layer_norm(rows, None, None, self.eps)
        y = y.reshape(batch, groups, -1, size).transpose(0, 2, 1, 3)
        return y.reshape(batch, *spatial, dims)

    def _group_norm(self, x):
        batch, *spatial, dims = x.shape
        grouped = x.reshape(batch, -1, self.num_groups)
        mean = mx.mean(grouped, axis=1, keepdims=True)
        var = mx.var(grouped, axis=1, keepdims=True)
        y = (grouped - mean) * mx.rsqrt(var + self.eps)
        return y.reshape(batch, *spatial, dims)

    def __call__(self, x):
        if self.pytorch_compatible:
            y = self._pytorch_compatible_group_norm(x)
        else:
            y = self._group_norm(x)
        return self.weight * y + self.bias if "weight" in self else y


class BatchNorm(Module):
    r"""Normalizes each feature (last axis) of 2-d to 4-d inputs over all other axes.

    In training mode the batch's mean and (biased) variance normalize, and when
    `track_running_stats` the frozen arrays ``running_mean`` and ``running_var`` move toward
    the batch mean and unbiased variance by `momentum`; in evaluation mode the running
    statistics normalize. Then ``weight * y + bias`` when `affine`.

    Raises:
        ValueError: `eps` or `num_features` is not positive; at call, an input that is not
            2-d to 4-d, or a training batch with one value per feature.
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
    ):
        super().__init__()
        _check_eps("BatchNorm", eps)
        _check_dims("BatchNorm", "num_features", num_features)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = mx.ones((num_features,))
            self.bias = mx.zeros((num_features,))
        if self.track_running_stats:
            self.running_mean = mx.zeros((num_features,))
            self.running_var = mx.ones((num_features,))
            self.freeze(keys=["running_mean", "running_var"], recurse=False)

    def unfreeze(self, *args, **kwargs):
        """As :meth:`Module.unfreeze`; the running statistics stay frozen."""
        super().unfreeze(*args, **kwargs)
        self.freeze(keys=["running_mean", "running_var"], recurse=False)

    def _extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={'weight' in self}, track_running_stats={self.track_running_stats}"
        )

    def _calc_stats(self, x: mx.array, ddof: int = 0) -> Tuple[mx.array, mx.array]:
        axes = tuple(range(x.ndim - 1))
        return mx.mean(x, axis=axes), mx.var(x, axis=axes, ddof=ddof)

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim < 2 or x.ndim > 4:
            raise ValueError(
                f"[BatchNorm] Expected input tensor to have 2, 3 or 4 dimensions, but got {x.ndim}"
            )
        if self.training and x.size // max(x.shape[-1], 1) == 1:
            raise ValueError("[BatchNorm] Training requires more than one value per channel.")
        mean, var = self._calc_stats(x)
        if self.training and self.track_running_stats:
            mu = self.momentum
            _, unbiased_var = self._calc_stats(x, ddof=1)
            self.running_mean = (1 - mu) * self.running_mean + mu * mean
            self.running_var = (1 - mu) * self.running_var + mu * unbiased_var
        elif self.track_running_stats:
            mean, var = self.running_mean, self.running_var
        y = (x - mean) * mx.rsqrt(var + self.eps)
        return self.weight * y + self.bias if "weight" in self else y
