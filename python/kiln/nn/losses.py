"""Loss functions, as ``mlx.nn.losses``.

Every loss takes ``reduction``: ``"none"`` (the per-element or per-sample losses),
``"mean"`` or ``"sum"``; another value raises ValueError. Defaults follow MLX (mean for the
regression losses, none for the others).
"""

import math
from typing import Literal, Optional, get_args

import kiln.core as mx
from kiln.core import fast, linalg

Reduction = Literal["none", "mean", "sum"]


def _check_reduction(reduction):
    # Each loss checks first, so a bad string fails before any array work.
    if reduction not in get_args(Reduction):
        raise ValueError(
            f"[losses] Invalid reduction '{reduction}'. Must be one of {get_args(Reduction)}."
        )


def _reduce(loss: mx.array, reduction: Reduction = "none"):
    _check_reduction(reduction)
    if reduction == "mean":
        return mx.mean(loss)
    if reduction == "sum":
        return mx.sum(loss)
    return loss


def _same_shape(name_a, a, name_b, b):
    if a.shape != b.shape:
        raise ValueError(
            f"[losses] {name_a.capitalize()} shape {a.shape} does not match {name_b} shape "
            f"{b.shape}."
        )


def _apply_weights(loss, weights):
    if weights is None:
        return loss
    if weights.shape != loss.shape:
        raise ValueError(
            f"[losses] Weights with shape {weights.shape} is not the same as output loss with "
            f"shape {loss.shape}."
        )
    return loss * weights


def cross_entropy(
    logits: mx.array,
    targets: mx.array,
    weights: Optional[mx.array] = None,
    axis: int = -1,
    label_smoothing: float = 0.0,
    reduction: Reduction = "none",
) -> mx.array:
    r"""Cross entropy between ``softmax(logits)`` along `axis` and the targets.

    Args:
        logits: Unnormalized log probabilities.
        targets: Class indices (`logits`' shape without `axis`) or probabilities (`logits`'
            shape).
        weights: Optional per-sample weights, of the loss's shape.
        axis: The class axis.
        label_smoothing: :math:`\epsilon` in ``[0, 1)``: the target distribution becomes
            :math:`(1 - \epsilon)\,\text{target} + \epsilon / C`.
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.

    Raises:
        ValueError: `label_smoothing` out of range, mismatched shapes, or an unknown
            `reduction`.
    """
    _check_reduction(reduction)
    if label_smoothing < 0 or label_smoothing >= 1:
        raise ValueError(
            f"[cross_entropy] Label smoothing must be in [0, 1), got {label_smoothing}."
        )
    targets_are_probabilities = targets.ndim == logits.ndim
    if targets_are_probabilities:
        expected_shape = logits.shape
    else:
        expected_shape = list(logits.shape)
        expected_shape.pop(axis)
        expected_shape = tuple(expected_shape)
    if targets.shape != expected_shape:
        raise ValueError(
            f"[cross_entropy] Targets shape {targets.shape} does not match logits shape "
            f"{logits.shape}."
        )

    use_fused = (
        hasattr(mx.fast, "cross_entropy")
        and mx.default_device() == mx.gpu
        and not targets_are_probabilities
        and label_smoothing == 0
        and axis in (-1, logits.ndim - 1)
        and mx.issubdtype(logits.dtype, mx.floating)
        and mx.issubdtype(targets.dtype, mx.integer)
    )
    if use_fused:
        loss = mx.fast.cross_entropy(logits, targets).astype(logits.dtype)
    else:
        shifted = logits - mx.stop_gradient(mx.max(logits, axis=axis, keepdims=True))
        if targets_are_probabilities:
            target_score = mx.sum(shifted * targets, axis=axis)
        else:
            target_score = mx.take_along_axis(shifted, mx.expand_dims(targets, axis), axis).squeeze(
                axis
            )
        normalizer = mx.logsumexp(shifted, axis=axis)
        if label_smoothing > 0:
            # -sum(q log p) with q = (1 - eps) target + eps / C.
            uniform_score = mx.mean(shifted, axis=axis)
            loss = (
                normalizer - (1 - label_smoothing) * target_score - label_smoothing * uniform_score
            )
        else:
            loss = normalizer - target_score
    return _reduce(_apply_weights(loss, weights), reduction)


def binary_cross_entropy(
    inputs: mx.array,
    targets: mx.array,
    weights: Optional[mx.array] = None,
    with_logits: bool = True,
    reduction: Reduction = "mean",
) -> mx.array:
    r"""Binary cross entropy :math:`-(y \log p + (1 - y) \log(1 - p))`.

    Args:
        inputs: Logits (`with_logits`, computed stably as :math:`\log(1 + e^x) - x y`) or
            probabilities (log terms clipped at -100, as PyTorch does).
        targets: Targets in ``[0, 1]``, of `inputs`' shape.
        weights: Optional element weights, of the loss's shape.
    """
    _check_reduction(reduction)
    _same_shape("inputs", inputs, "targets", targets)
    if with_logits:
        loss = mx.logaddexp(0.0, inputs) - inputs * targets
    else:
        log_p = mx.clip(mx.log(inputs), a_min=-100, a_max=None)
        log_not_p = mx.clip(mx.log(1 - inputs), a_min=-100, a_max=None)
        loss = -(targets * log_p + (1 - targets) * log_not_p)
    return _reduce(_apply_weights(loss, weights), reduction)


def l1_loss(predictions: mx.array, targets: mx.array, reduction: Reduction = "mean") -> mx.array:
    """The absolute error ``|predictions - targets|``."""
    _check_reduction(reduction)
    _same_shape("predictions", predictions, "targets", targets)
    return _reduce(mx.abs(predictions - targets), reduction)


def mse_loss(predictions: mx.array, targets: mx.array, reduction: Reduction = "mean") -> mx.array:
    """The squared error ``(predictions - targets)^2``."""
    _check_reduction(reduction)
    _same_shape("predictions", predictions, "targets", targets)
    return _reduce(mx.square(predictions - targets), reduction)


def nll_loss(
    inputs: mx.array, targets: mx.array, axis: int = -1, reduction: Reduction = "none"
) -> mx.array:
    """The negative log likelihood ``-inputs[target]`` of log probabilities `inputs` at the
    class indices `targets` along `axis`."""
    _check_reduction(reduction)
    loss = -mx.take_along_axis(inputs, mx.expand_dims(targets, axis), axis).squeeze(axis)
    return _reduce(loss, reduction)


def gaussian_nll_loss(
    inputs: mx.array,
    targets: mx.array,
    vars: mx.array,
    full: bool = False,
    eps: float = 1e-6,
    reduction: Reduction = "mean",
) -> mx.array:
    r"""Gaussian negative log likelihood of `targets` under N(`inputs`, `vars`):
    :math:`\frac12 (\log v + (y - \mu)^2 / v)` with :math:`v = \max(\text{vars}, \epsilon)`,
    plus :math:`\frac12 \log 2\pi` when `full`."""
    _check_reduction(reduction)
    _same_shape("inputs", inputs, "targets", targets)
    _same_shape("inputs", inputs, "vars", vars)
    vars = mx.maximum(vars, eps)
    loss = 0.5 * (mx.log(vars) + mx.square(targets - inputs) / vars)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def kl_div_loss(
    inputs: mx.array, targets: mx.array, axis: int = -1, reduction: Reduction = "none"
) -> mx.array:
    r"""The Kullback-Leibler divergence :math:`\sum e^{t} (t - x)` along `axis` of log
    probabilities `inputs` (x) from log probabilities `targets` (t)."""
    _check_reduction(reduction)
    loss = mx.sum(mx.exp(targets) * (targets - inputs), axis)
    return _reduce(loss, reduction)


def smooth_l1_loss(
    predictions: mx.array, targets: mx.array, beta: float = 1.0, reduction: Reduction = "mean"
) -> mx.array:
    r"""Smooth L1: :math:`0.5 d^2 / \beta` where :math:`d = |p - t| < \beta`, else
    :math:`d - 0.5 \beta`."""
    _check_reduction(reduction)
    _same_shape("predictions", predictions, "targets", targets)
    diff = mx.abs(predictions - targets)
    loss = mx.where(diff < beta, 0.5 * mx.square(diff) / beta, diff - 0.5 * beta)
    return _reduce(loss, reduction)


def triplet_loss(
    anchors: mx.array,
    positives: mx.array,
    negatives: mx.array,
    axis: int = -1,
    p: int = 2,
    margin: float = 1.0,
    eps: float = 1e-6,
    reduction: Reduction = "none",
) -> mx.array:
    r"""Triplet margin loss :math:`\max(d(a, p) - d(a, n) + \text{margin}, 0)` with the
    p-norm distance :math:`d(x, y) = (\sum |x - y|^p + \epsilon)^{1/p}` along `axis`."""
    _check_reduction(reduction)

    def distance(x, y):
        return mx.power(mx.power(mx.abs(x - y), p).sum(axis) + eps, 1.0 / p)

    loss = mx.maximum(distance(anchors, positives) - distance(anchors, negatives) + margin, 0)
    return _reduce(loss, reduction)


def hinge_loss(inputs: mx.array, targets: mx.array, reduction: Reduction = "none") -> mx.array:
    r"""Hinge loss :math:`\max(1 - x y, 0)` for targets :math:`y \in \{-1, 1\}`."""
    _check_reduction(reduction)
    return _reduce(mx.maximum(1 - inputs * targets, 0), reduction)


def huber_loss(
    inputs: mx.array, targets: mx.array, delta: float = 1.0, reduction: Reduction = "none"
) -> mx.array:
    r"""Huber loss: :math:`0.5 e^2` for errors :math:`|e| \le \delta`, else
    :math:`\delta (|e| - 0.5 \delta)`."""
    _check_reduction(reduction)
    abs_error = mx.abs(inputs - targets)
    quadratic = mx.minimum(abs_error, delta)
    loss = 0.5 * mx.square(quadratic) + delta * (abs_error - quadratic)
    return _reduce(loss, reduction)


def log_cosh_loss(inputs: mx.array, targets: mx.array, reduction: Reduction = "none") -> mx.array:
    r""":math:`\log\cosh(x - y)`, computed stably as :math:`\mathrm{logaddexp}(e, -e) -
    \log 2`."""
    _check_reduction(reduction)
    error = inputs - targets
    return _reduce(mx.logaddexp(error, -error) - math.log(2), reduction)


def cosine_similarity_loss(
    x1: mx.array, x2: mx.array, axis: int = 1, eps: float = 1e-8, reduction: Reduction = "none"
) -> mx.array:
    r"""The cosine similarity :math:`x_1 \cdot x_2 / \max(\|x_1\| \|x_2\|, \epsilon)` along
    `axis`."""
    _check_reduction(reduction)
    norms = linalg.norm(x1, axis=axis) * linalg.norm(x2, axis=axis)
    loss = mx.sum(x1 * x2, axis=axis) / mx.maximum(norms, eps)
    return _reduce(loss, reduction)


def margin_ranking_loss(
    inputs1: mx.array,
    inputs2: mx.array,
    targets: mx.array,
    margin: float = 0.0,
    reduction: Reduction = "none",
) -> mx.array:
    r"""Margin ranking loss :math:`\max(0, -y (x_1 - x_2) + \text{margin})` for targets
    :math:`y \in \{-1, 1\}` (1: `inputs1` should rank higher)."""
    _check_reduction(reduction)
    if not inputs1.shape == inputs2.shape == targets.shape:
        raise ValueError(
            "[margin_ranking_loss] The shapes of the arguments do not match: "
            f"inputs1.shape={inputs1.shape}, inputs2.shape={inputs2.shape}, "
            f"targets.shape={targets.shape}."
        )
    return _reduce(mx.maximum(0, -targets * (inputs1 - inputs2) + margin), reduction)
