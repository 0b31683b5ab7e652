"""Optimizers, as ``mlx.optimizers``: an ``Optimizer`` base class that keeps its state as a
tree (savable with ``tree_flatten``) and the usual first-order methods.

An optimizer maps a tree of gradients and the matching tree of parameters to updated
parameters (``apply_gradients``), or updates a module in place (``update(model, grads)``).
The step counter ``state["step"]`` counts updates; the first update sees step 1. Settings
given as a schedule (a function of the step) are re-evaluated before each update with the
step count *before* it.
"""

from typing import Callable, List, Optional, Tuple, Union

import kiln.core as mx
from kiln.nn import Module
from kiln.core import linalg
from kiln.utils import tree_flatten, tree_map, tree_merge, tree_reduce, tree_unflatten

__all__ = [
    "AdaDelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "Lion",
    "MultiOptimizer",
    "Muon",
    "Optimizer",
    "RMSprop",
    "SGD",
    "clip_grad_norm",
]


class Optimizer:
    """Base class of the optimizers.

    Subclasses implement ``init_single(parameter, state)`` (fill the per-parameter state
    dict) and ``apply_single(gradient, parameter, state)`` (update the state dict, return the
    new parameter).
    """

    def __init__(self, schedulers=None):
        self._initialized = False
        self._state = {"step": mx.array(0, mx.uint64)}
        self._schedulers = dict(schedulers or {})

    def update(self, model: Module, gradients: dict):
        """Applies `gradients` (a tree like ``model.trainable_parameters()``) to `model`'s
        parameters in place."""
        model.update(self.apply_gradients(gradients, model))

    def init(self, parameters: dict):
        """Creates the state of every parameter of `parameters` that has none yet (state
        loaded from a file is kept).

        Calling it is optional: the first update does it from the gradients' tree.
        """

        def merge_structure(params, state):
            # Extends `state` with empty per-parameter dicts where `params` has entries it
            # lacks; returns it (a new container for lists and tuples).
            if isinstance(params, (list, tuple)):
                state = list(state)
                for i in range(len(state)):
                    state[i] = merge_structure(params[i], state[i])
                state.extend(tree_map(lambda _: {}, params[len(state) :]))
                return type(params)(state)
            if isinstance(params, dict):
                for key, value in params.items():
                    if key in state:
                        state[key] = merge_structure(value, state[key])
                    else:
                        state[key] = tree_map(lambda _: {}, value)
            return state

        merge_structure(parameters, self._state)
        tree_map(lambda p, s: s or self.init_single(p, s), parameters, self._state)
        self._initialized = True

    def init_single(self, parameter: mx.array, state: dict):
        """Fills the empty dict `state` with `parameter`'s initial optimizer state."""
        raise NotImplementedError()

    def apply_gradients(self, gradients: dict, parameters: dict):
        """The parameters after one update with `gradients`; `parameters` must contain (at
        least) the structure of `gradients`. Advances the step."""
        if not self._initialized:
            self.init(gradients)
        for name, schedule in self._schedulers.items():
            self.state[name] = schedule(self.step)
        self.state["step"] = self.step + 1
        return tree_map(self.apply_single, gradients, parameters, self.state)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        """The updated `parameter` (updates `state` in place)."""
        raise NotImplementedError()

    @property
    def state(self):
        """The optimizer's state tree: ``step``, the hyperparameters that may be scheduled
        (``learning_rate``, ...) and one dict per parameter."""
        return self._state

    @state.setter
    def state(self, state: dict):
        self._initialized = False
        self._state = state

    @property
    def step(self):
        """The number of updates applied (a ``uint64`` array)."""
        return self.state["step"]

    @property
    def learning_rate(self):
        return self.state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]):
        self.state["learning_rate"] = mx.array(learning_rate)

    def _maybe_schedule(self, name: str, param: Union[float, Callable[[mx.array], mx.array]]):
        """Stores hyperparameter `name`: a value, or a schedule evaluated at every step."""
        if callable(param):
            self._schedulers[name] = param
            value = param(self.step)
        else:
            value = mx.array(param)
        self.state[name] = value


class MultiOptimizer(Optimizer):
    """Several optimizers for disjoint parts of a model: gradient ``(path, g)`` goes to the
    first optimizer whose filter ``filter(path, g)`` is true, and to the last optimizer when
    none is (so there is one filter fewer than optimizers).

    Raises:
        ValueError: The number of filters is not one less than the number of optimizers.
    """

    def __init__(self, optimizers, filters: list = []):
        super().__init__()
        self._state = {}
        if len(filters) != len(optimizers) - 1:
            raise ValueError(
                f"[MultiOptimizer] Given {len(filters)} filters but {len(optimizers) - 1} needed."
            )
        self.optimizers = optimizers
        self.filters = list(filters) + [lambda *args, **kwargs: True]

    def _split_dictionary(self, gradients: dict):
        if len(self.optimizers) == 1:
            return [gradients]
        parts = [[] for _ in self.optimizers]
        for path, g in tree_flatten(gradients):
            for part, accepts in zip(parts, self.filters):
                if accepts(path, g):
                    part.append((path, g))
                    break
        return [tree_unflatten(part) if part else {} for part in parts]

    def init(self, parameters: dict):
        for optimizer, part in zip(self.optimizers, self._split_dictionary(parameters)):
            optimizer.init(part)

    def apply_gradients(self, gradients: dict, parameters: dict):
        tree = {}
        for optimizer, part in zip(self.optimizers, self._split_dictionary(gradients)):
            tree = tree_merge(tree, optimizer.apply_gradients(part, parameters))
        return tree

    @property
    def state(self):
        return {"states": [optimizer.state for optimizer in self.optimizers]}

    @state.setter
    def state(self, state: dict):
        if "states" not in state or len(state["states"]) != len(self.optimizers):
            raise ValueError(
                "[MultiOptimizer] Invalid state: expected {'states': [...]} with one state per "
                f"optimizer ({len(self.optimizers)})"
            )
        for optimizer, s in zip(self.optimizers, state["states"]):
            optimizer.state = s

    @property
    def learning_rate(self):
        return self.optimizers[0].learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]):
        for optimizer in self.optimizers:
            optimizer.learning_rate = learning_rate


class SGD(Optimizer):
    r"""Stochastic gradient descent with optional momentum:

    .. math::
        g \leftarrow g + \lambda w, \quad
        v \leftarrow \mu v + (1 - \tau) g, \quad
        w \leftarrow w - \eta (g + \mu v \text{ if nesterov else } v)

    (plain :math:`w - \eta g` when `momentum` is 0; :math:`\lambda` `weight_decay`,
    :math:`\tau` `dampening`).

    Raises:
        ValueError: `nesterov` without a positive `momentum` and zero `dampening`.
    """

    def __init__(
        self,
        learning_rate: Union[float, Callable[[mx.array], mx.array]],
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
    ):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(
                "[SGD] Nesterov momentum requires a momentum and zero dampening, got "
                f"momentum={momentum}, dampening={dampening}."
            )
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.dampening = dampening
        self.nesterov = nesterov

    def init_single(self, parameter: mx.array, state: dict):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        lr = self.learning_rate.astype(gradient.dtype)
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        if self.momentum <= 0:
            return parameter - lr * gradient
        v = self.momentum * state.get("v")
        v = v + ((1 - self.dampening) * gradient if self.dampening > 0 else gradient)
        state["v"] = v
        step = gradient + self.momentum * v if self.nesterov else v
        return parameter - lr * step


class RMSprop(Optimizer):
    r"""RMSprop (Tieleman and Hinton, 2012):
    :math:`v \leftarrow \alpha v + (1 - \alpha) g^2`,
    :math:`w \leftarrow w - \eta g / (\sqrt{v} + \epsilon)`.

    Raises:
        ValueError: Negative `alpha` or non-positive `eps`.
    """

    def __init__(
        self,
        learning_rate: Union[float, Callable[[mx.array], mx.array]],
        alpha: float = 0.99,
        eps: float = 1e-8,
    ):
        super().__init__()
        if alpha < 0.0:
            raise ValueError(f"[RMSprop] alpha should be >=0, {alpha} was provided instead")
        if eps <= 0.0:
            raise ValueError(f"[RMSprop] eps should be >0, {eps} was provided instead")
        self._maybe_schedule("learning_rate", learning_rate)
        self.alpha = alpha
        self.eps = eps

    def init_single(self, parameter: mx.array, state: dict):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        lr = self.learning_rate.astype(gradient.dtype)
        v = self.alpha * state["v"] + (1 - self.alpha) * mx.square(gradient)
        state["v"] = v
        return parameter - lr * gradient / (mx.sqrt(v) + self.eps)


class Adagrad(Optimizer):
    r"""Adagrad (Duchi et al., 2011): :math:`v \leftarrow v + g^2`,
    :math:`w \leftarrow w - \eta g / (\sqrt{v} + \epsilon)`.

    Raises:
        ValueError: Non-positive `eps`.
    """

    def __init__(
        self, learning_rate: Union[float, Callable[[mx.array], mx.array]], eps: float = 1e-8
    ):
        super().__init__()
        if eps <= 0.0:
            raise ValueError(f"[Adagrad] eps should be >0, {eps} was provided instead")
        self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps

    def init_single(self, parameter: mx.array, state: dict):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        lr = self.learning_rate.astype(gradient.dtype)
        v = state["v"] + mx.square(gradient)
        state["v"] = v
        return parameter - lr * gradient / (mx.sqrt(v) + self.eps)


class AdaDelta(Optimizer):
    r"""AdaDelta (Zeiler, 2012):

    .. math::
        v \leftarrow \rho v + (1 - \rho) g^2, \quad
        \Delta = \sqrt{u + \epsilon} / \sqrt{v + \epsilon} \cdot g, \quad
        u \leftarrow \rho u + (1 - \rho) \Delta^2, \quad
        w \leftarrow w - \eta \Delta.

    Raises:
        ValueError: Negative `rho` or non-positive `eps`.
    """

    def __init__(
        self,
        learning_rate: Union[float, Callable[[mx.array], mx.array]],
        rho: float = 0.9,
        eps: float = 1e-6,
    ):
        super().__init__()
        if rho < 0.0:
            raise ValueError(f"[AdaDelta] rho should be >=0, {rho} was provided instead")
        if eps <= 0.0:
            raise ValueError(f"[AdaDelta] eps should be >0, {eps} was provided instead")
        self._maybe_schedule("learning_rate", learning_rate)
        self.rho = rho
        self.eps = eps

    def init_single(self, parameter: mx.array, state: dict):
        state["v"] = mx.zeros_like(parameter)
        state["u"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        lr = self.learning_rate.astype(gradient.dtype)
        rho, eps = self.rho, self.eps
        v = rho * state["v"] + (1 - rho) * mx.square(gradient)
        delta = mx.sqrt(state["u"] + eps) / mx.sqrt(v + eps) * gradient
        u = rho * state["u"] + (1 - rho) * mx.square(delta)
        state["v"] = v
        state["u"] = u
        return parameter - lr * delta


def _check_betas(optimizer, betas):
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(
                f"[{optimizer}] beta{i + 1} should be in [0, 1), {beta} was provided instead"
            )


class Adam(Optimizer):
    r"""Adam (Kingma and Ba, 2015):

    .. math::
        m \leftarrow \beta_1 m + (1 - \beta_1) g, \quad
        v \leftarrow \beta_2 v + (1 - \beta_2) g^2, \quad
        w \leftarrow w - \eta\, m / (\sqrt{v} + \epsilon).

    With `bias_correction`, :math:`m` is divided by :math:`1 - \beta_1^t` and
    :math:`\sqrt{v}` by :math:`\sqrt{1 - \beta_2^t}` (step :math:`t` from 1), as in the paper;
    MLX's default leaves them out.

    Raises:
        ValueError: A beta outside ``[0, 1)`` or a negative `eps`.
    """

    def __init__(
        self,
        learning_rate: Union[float, Callable[[mx.array], mx.array]],
        betas: List[float] = [0.9, 0.999],
        eps: float = 1e-8,
        bias_correction: bool = False,
    ):
        super().__init__()
        _check_betas(type(self).__name__, betas)
        if not 0.0 <= eps:
            raise ValueError(
                f"[{type(self).__name__}] eps should be >=0, {eps} was provided instead"
            )
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.eps = eps
        self.bias_correction = bias_correction

    def init_single(self, parameter: mx.array, state: dict):
        state["m"] = mx.zeros_like(parameter)
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = b2 * state["v"] + (1 - b2) * mx.square(gradient)
        state["m"] = m
        state["v"] = v
        if not self.bias_correction:
            return parameter - lr * m / (mx.sqrt(v) + self.eps)
        step = self.step
        m_scale = (lr / (1 - b1**step)).astype(gradient.dtype)
        v_scale = mx.rsqrt(1 - b2**step).astype(gradient.dtype)
        return parameter - m_scale * m / (mx.sqrt(v) * v_scale + self.eps)


class AdamW(Adam):
    r"""Adam with decoupled weight decay (Loshchilov and Hutter, 2019): the parameter is
    first scaled by :math:`1 - \eta \lambda` (`weight_decay` :math:`\lambda`), then the Adam
    step is applied."""

    def __init__(
        self,
        learning_rate: Union[float, Callable[[mx.array], mx.array]],
        betas: List[float] = [0.9, 0.999],
        eps: float = 1e-8,
        weight_decay: float = 0.01,
        bias_correction: bool = False,
    ):
        super().__init__(
            learning_rate=learning_rate, betas=betas, eps=eps, bias_correction=bias_correction
        )
        self.weight_decay = weight_decay

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        lr = self.learning_rate.astype(gradient.dtype)
        decayed = parameter * (1 - lr * self.weight_decay)
        return super().apply_single(gradient, decayed, state)


class Adamax(Adam):
    r"""Adamax, Adam's infinity-norm variant:
    :math:`m \leftarrow \beta_1 m + (1 - \beta_1) g`,
    :math:`v \leftarrow \max(\beta_2 v, |g|)`,
    :math:`w \leftarrow w - \eta\, m / (v + \epsilon)`."""

    def __init__(
        self,
        learning_rate: Union[float, Callable[[mx.array], mx.array]],
        betas: List[float] = [0.9, 0.999],
        eps: float = 1e-8,
    ):
        super().__init__(learning_rate, betas, eps)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = mx.maximum(b2 * state["v"], mx.abs(gradient))
        state["m"] = m
        state["v"] = v
        return parameter - lr * m / (v + self.eps)


class Lion(Optimizer):
    r"""Lion (Chen et al., 2023):

    .. math::
        c = \beta_1 m + (1 - \beta_1) g, \quad
        m \leftarrow \beta_2 m + (1 - \beta_2) g, \quad
        w \leftarrow (1 - \eta \lambda) w - \eta\,\mathrm{sign}(c).

    Raises:
        ValueError: A beta outside ``[0, 1)``.
    """

    def __init__(
        self,
        learning_rate: Union[float, Callable[[mx.array], mx.array]],
        betas: List[float] = [0.9, 0.99],
        weight_decay: float = 0.0,
    ):
        super().__init__()
        _check_betas("Lion", betas)
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.weight_decay = weight_decay

    def init_single(self, parameter: mx.array, state: dict):
        state["m"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = state["m"]
        direction = b1 * m + (1 - b1) * gradient
        state["m"] = b2 * m + (1 - b2) * gradient
        if self.weight_decay > 0:
            parameter = (1 - lr * self.weight_decay) * parameter
        return parameter - lr * mx.sign(direction)


class Adafactor(Optimizer):
    r"""Adafactor (Shazeer and Stern, 2018): Adam-like steps whose second moment is kept
    factored (row and column means) for arrays of 2 or more dimensions.

    Args:
        learning_rate: The step size; used only when `relative_step` is False.
        eps: :math:`(\epsilon_1, \epsilon_2)`: added to the squared gradient, and the floor of
            the parameter scale.
        clip_threshold: Updates whose RMS exceeds it are scaled down to it.
        decay_rate: :math:`c` in the second-moment decay :math:`\beta_2 = 1 - t^{c}`.
        beta_1: First-moment decay (no first moment when None).
        weight_decay: Decoupled weight decay, scaled by the step size.
        scale_parameter: Scale the step size by the parameter's RMS.
        relative_step: Use the step size :math:`\min(10^{-2}, 1/\sqrt{t})` (``1e-6 t`` in
            place of ``1e-2`` with `warmup_init`) instead of `learning_rate`.
    """

    def __init__(
        self,
        learning_rate: Union[float, Callable[[mx.array], mx.array], None] = None,
        eps: Tuple[float, float] = (1e-30, 1e-3),
        clip_threshold: float = 1.0,
        decay_rate: float = -0.8,
        beta_1: Optional[float] = None,
        weight_decay: float = 0.0,
        scale_parameter: bool = True,
        relative_step: bool = True,
        warmup_init: bool = False,
    ):
        super().__init__()
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        elif not relative_step:
            raise ValueError("[Adafactor] learning_rate is required when relative_step=False")
        self.eps = eps
        self.clip_threshold = clip_threshold
        self.decay_rate = decay_rate
        self.beta_1 = beta_1
        self.weight_decay = weight_decay
        self.scale_parameter = scale_parameter
        self.relative_step = relative_step
        self.warmup_init = warmup_init

    def init_single(self, parameter: mx.array, state: dict):
        if parameter.ndim >= 2:
            shape, dtype = parameter.shape, parameter.dtype
            state["exp_avg_sq_row"] = mx.zeros(shape[:-1], dtype=dtype)
            state["exp_avg_sq_col"] = mx.zeros(shape[:-2] + shape[-1:], dtype=dtype)
        else:
            state["exp_avg_sq"] = mx.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = mx.zeros_like(parameter)

    def _compute_rms(self, inputs):
        return mx.sqrt(mx.mean(mx.square(inputs)))

    def _compute_learning_rate(self, step, parameter_rms):
        if self.relative_step:
            ceiling = 1e-6 * step if self.warmup_init else 1e-2
            step_size = mx.minimum(ceiling, mx.rsqrt(step))
        else:
            step_size = self.learning_rate
        step_size = step_size.astype(parameter_rms.dtype)
        if self.scale_parameter:
            return mx.maximum(self.eps[1], parameter_rms) * step_size
        return step_size

    def _approximate_exp_moving_avg(self, exp_avg_sq_row, exp_avg_sq_col):
        row_factor = mx.rsqrt(exp_avg_sq_row / mx.mean(exp_avg_sq_row, axis=-1, keepdims=True))
        col_factor = mx.rsqrt(exp_avg_sq_col)
        return mx.expand_dims(row_factor, axis=-1) * mx.expand_dims(col_factor, axis=-2)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        step = self.step
        parameter_rms = self._compute_rms(parameter)
        learning_rate = self._compute_learning_rate(step, parameter_rms)
        beta_2 = 1.0 - (step**self.decay_rate).astype(parameter_rms.dtype)
        squared = mx.square(gradient) + self.eps[0]
        if gradient.ndim >= 2:
            row = beta_2 * state["exp_avg_sq_row"] + (1 - beta_2) * mx.mean(squared, axis=-1)
            col = beta_2 * state["exp_avg_sq_col"] + (1 - beta_2) * mx.mean(squared, axis=-2)
            state["exp_avg_sq_row"] = row
            state["exp_avg_sq_col"] = col
            update = self._approximate_exp_moving_avg(row, col) * gradient
        else:
            avg = beta_2 * state["exp_avg_sq"] + (1 - beta_2) * squared
            state["exp_avg_sq"] = avg
            update = mx.rsqrt(avg) * gradient
        update = update / mx.maximum(1.0, self._compute_rms(update) / self.clip_threshold)
        update = learning_rate * update
        if self.beta_1 is not None:
            update = self.beta_1 * state["exp_avg"] + (1 - self.beta_1) * update
            state["exp_avg"] = update
        if self.weight_decay != 0:
            parameter = parameter + parameter * (-self.weight_decay * learning_rate)
        return parameter - update


class Muon(Optimizer):
    r"""Muon (Jordan et al., 2024): SGD momentum whose update, for arrays of 2 or more
    dimensions (flattened to ``(rows, -1)``), is orthogonalized by `ns_steps` quintic
    Newton-Schulz iterations and the step size scaled by :math:`\sqrt{\max(1, \text{rows} /
    \text{cols})}`. 0-d and 1-d parameters take the plain momentum step.

    .. math::
        g \leftarrow g + \lambda w, \quad v \leftarrow \mu v + (1 - \mu) g, \quad
        u = (1 - \mu) g + \mu v \text{ if nesterov else } v.
    """

    def __init__(
        self,
        learning_rate: Union[float, Callable[[mx.array], mx.array]],
        momentum: float = 0.95,
        weight_decay: float = 0.01,
        nesterov: bool = True,
        ns_steps: int = 5,
    ):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.ns_steps = ns_steps

    def init_single(self, parameter: mx.array, state: dict):
        state["v"] = mx.zeros_like(parameter)

    def _zeropower_via_newtonschulz5(self, X, steps: int):
        """An approximately orthogonal matrix with `X`'s singular vectors (its singular
        values pushed towards 1) by the quintic iteration
        :math:`X \\leftarrow aX + (bA + cA^2) X`, :math:`A = X X^T`."""
        if X.ndim != 2:
            raise ValueError(f"[Muon] Newton-Schulz expects a 2-d array, got shape {X.shape}")
        a, b, c = 3.4445, -4.7750, 2.0315
        tall = X.shape[-2] > X.shape[-1]
        if tall:
            X = X.T
        X = X / (linalg.norm(X, keepdims=True) + 1e-7)
        for _ in range(steps):
            A = X @ X.T
            B = mx.addmm(b * A, A, A, beta=1.0, alpha=c)
            X = mx.addmm(a * X, B, X, beta=1.0, alpha=1.0)
        return X.T if tall else X

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        v = self.momentum * state["v"] + (1 - self.momentum) * gradient
        state["v"] = v
        update = gradient * (1 - self.momentum) + v * self.momentum if self.nesterov else v
        lr = self.learning_rate.astype(gradient.dtype)
        if update.ndim >= 2:
            shape = update.shape
            matrix = update.reshape(shape[0], -1) if update.ndim > 2 else update
            update = self._zeropower_via_newtonschulz5(matrix, steps=self.ns_steps).reshape(shape)
            lr = lr * max(1, update.shape[-2] / update.shape[-1]) ** 0.5
        return parameter - lr * update


def clip_grad_norm(grads, max_norm):
    """Scales a gradient tree so that its global L2 norm (over all leaves) is at most
    `max_norm`.

    Returns:
        ``(clipped gradients, norm before clipping)``; leaves keep their dtypes.

    Raises:
        ValueError: Negative `max_norm`.
    """
    if max_norm < 0:
        raise ValueError(
            f"[clip_grad_norm] max_norm should be >=0, {max_norm} was provided instead"
        )

    leaves = [g for _, g in tree_flatten(grads)]
    if all(isinstance(g, mx.array) and mx.issubdtype(g.dtype, mx.floating) for g in leaves):
        # One pass over every gradient (two launches on the GPU), accumulated in float64.
        total_norm = mx.fast.global_norm(leaves)
    else:

        def squared_norm(g):
            # float16 squares overflow at 256: sum them in float32.
            return (g.astype(mx.float32) if g.dtype == mx.float16 else g).square().sum()

        total_norm = mx.sqrt(tree_reduce(lambda acc, g: acc + squared_norm(g), grads, 0.0))
    normalizer = mx.minimum(max_norm / (total_norm + 1e-6), 1.0)

    def scale(g):
        scaled = g * normalizer
        return scaled.astype(g.dtype) if mx.issubdtype(g.dtype, mx.floating) else scaled

    return tree_map(scale, grads), total_norm
