"""Function transformations over modules: ``value_and_grad`` with respect to a model's
trainable parameters, ``checkpoint`` and ``average_gradients``."""

from functools import wraps
from typing import Any, Callable, Optional

import kiln.core as mx
from kiln.nn.layers.base import Module
from kiln.utils import tree_flatten, tree_unflatten


def _with_parameters(module, fn):
    """``inner(params, *args)``: installs `params` in `module`, then calls `fn(*args)`; the
    transformations trace through the installed arrays."""

    def inner(params, *args, **kwargs):
        module.update(params)
        return fn(*args, **kwargs)

    return inner


def value_and_grad(model: Module, fn: Callable):
    """``fn`` transformed to return ``(value, gradients)``, the gradients being taken with
    respect to ``model.trainable_parameters()`` (a tree of the same structure).

    Args:
        model: The module whose trainable parameters `fn` uses.
        fn: The scalar function, called with the arguments of the returned function.
    """
    transformed = mx.value_and_grad(_with_parameters(model, fn))

    @wraps(fn)
    def value_and_grad_fn(*args, **kwargs):
        return transformed(model.trainable_parameters(), *args, **kwargs)

    return value_and_grad_fn


def checkpoint(module: Module, fn: Optional[Callable] = None):
    """``fn`` (the module itself by default) with gradient checkpointing through the
    module's trainable parameters: its intermediate arrays are recomputed in the backward
    pass instead of being stored."""
    fn = module if fn is None else fn
    checkpointed = mx.checkpoint(_with_parameters(module, fn))

    @wraps(fn)
    def checkpointed_fn(*args, **kwargs):
        return checkpointed(module.trainable_parameters(), *args, **kwargs)

    return checkpointed_fn


def _group_by_size(nbytes, limit):
    """Consecutive index groups whose byte sizes reach `limit` (the last may be smaller)."""
    groups, current, current_bytes = [], [], 0
    for i, size in enumerate(nbytes):
        current.append(i)
        current_bytes += size
        if current_bytes >= limit:
            groups.append(current)
            current, current_bytes = [], 0
    if current:
        groups.append(current)
    return groups


def average_gradients(
    gradients: Any,
    group: Optional[Any] = None,
    all_reduce_size: int = 32 * 1024**2,
    communication_stream: Optional[mx.Stream] = None,
):
    """The average of `gradients` over the processes of a distributed `group` (all of them
    by default): each gradient's sum over the group, divided by the group's size.

    The averages go in batches of about `all_reduce_size` bytes of consecutive gradients
    (one per array when it is 0 or less), each batch one ``mx.distributed.grouped_all_mean``
    (with NCCL a single launch that also divides, with no copy into a joint buffer). On `communication_stream` (e.g.
    ``mx.new_stream(mx.gpu)``) the batches are summed beside the rest of the computation:
    those of the last layers while the backward pass computes the first layers' gradients.

    With a single process the gradients are returned unchanged.
    """
    distributed = getattr(mx, "distributed", None)
    if distributed is None:
        return gradients
    group = group or distributed.init()
    n = group.size()
    if n == 1:
        return gradients

    flat = tree_flatten(gradients)
    if not flat:
        return gradients
    if all_reduce_size <= 0:
        batches = [[i] for i in range(len(flat))]
    else:
        batches = _group_by_size([g.nbytes for _, g in flat], all_reduce_size)
    averaged = []
    for indices in batches:
        means = distributed.grouped_all_mean(
            [flat[i][1] for i in indices], group=group, stream=communication_stream
        )
        averaged += [(flat[i][0], m) for i, m in zip(indices, means)]
    return tree_unflatten(averaged)
