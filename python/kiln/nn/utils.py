"""Function transformations over modules: ``value_and_grad`` with respect to a model's
trainable parameters, ``checkpoint`` and ``average_gradients``."""

from functools import reduce, wraps
from typing import Any, Callable, Optional

import kiln.core as mx
from kiln.nn.layers.base import Module
from kiln.utils import tree_flatten, tree_map, tree_reduce, tree_unflatten


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


def _group_by_size(sizes, itemsize, limit):
    """Consecutive index groups whose byte sizes reach `limit` (the last may be smaller)."""
    groups, current, current_bytes = [], [], 0
    for i, size in enumerate(sizes):
        current.append(i)
        current_bytes += size * itemsize
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
    by default), summed with ``mx.distributed.all_sum`` in batches of about
    `all_reduce_size` bytes (one per array when it is 0 or less).

    With a single process the gradients are returned unchanged.
    """
    distributed = getattr(mx, "distributed", None)
    if distributed is None:
        return gradients
    group = group or distributed.init()
    n = group.size()
    if n == 1:
        return gradients

    def all_average(x):
        return distributed.all_sum(x, group=group, stream=communication_stream) / n

    if all_reduce_size <= 0:
        return tree_map(all_average, gradients)
    flat = tree_flatten(gradients)
    if not flat:
        return gradients
    dtypes = {g.dtype for _, g in flat}
    if len(dtypes) > 1:
        return average_gradients(gradients, group, 0, communication_stream)
    sizes = [g.size for _, g in flat]
    averaged = []
    for indices in _group_by_size(sizes, flat[0][1].dtype.size, all_reduce_size):
        joined = all_average(mx.concatenate([flat[i][1].reshape(-1) for i in indices]))
        offsets = reduce(lambda acc, i: acc + [acc[-1] + sizes[i]], indices, [0])
        parts = mx.split(joined, offsets[1:-1])
        averaged += [
            (flat[i][0], part.reshape(flat[i][1].shape)) for i, part in zip(indices, parts)
        ]
    return tree_unflatten(averaged)
