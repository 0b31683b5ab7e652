"""Tensor-parallel and fully sharded layers over :mod:`kiln.core.distributed`, with the names
and behaviour of MLX 0.32's ``mlx.nn.layers.distributed``.

Tensor parallelism (Megatron-LM's column and row parallel layers, Shoeybi et al. 2019) splits
the weight of a linear layer over the processes of a group:

- :class:`AllToShardedLinear` keeps rows of ``W`` (output features): a full input becomes
  this rank's slice of the output. Nothing is communicated in the forward pass; in the
  backward pass the gradients with respect to the input are summed over the group.
- :class:`ShardedToAllLinear` keeps columns of ``W`` (input features): this rank's slice of
  the input becomes a partial output, summed over the group (``all_sum``) so every rank
  holds the full output. ``all_sum``'s gradient is the identity (each rank's loss is the
  same value), so nothing is communicated in the backward pass.

A pair (all-to-sharded, then sharded-to-all) computes an MLP with one ``all_sum`` forward
and one backward. :func:`shard_linear` builds either from a :class:`Linear` or
:class:`QuantizedLinear`; :func:`shard_inplace` shards the parameters of any module without
adding communication. :class:`FullyShardedModule` (:func:`fully_shard`) keeps a shard of
every parameter per rank and gathers them for each call (ZeRO-3 / FSDP).
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Optional, Union

import kiln.core as mx
from kiln.nn.layers.base import Module
from kiln.nn.layers.linear import Linear
from kiln.nn.layers.quantized import _defaults_for_mode
from kiln.utils import tree_flatten, tree_map_with_path, tree_unflatten

_SHARDINGS = ("all-to-sharded", "sharded-to-all")


# ------------------------------------------------------------------ communication


@functools.lru_cache(maxsize=64)
def sum_gradients(group):
    """A function that returns its input unchanged and whose vjp sums the cotangent over
    `group` (``all_sum``): the input of a layer replicated on every rank, whose shards each
    contribute part of its gradient. The identity itself for a group of one."""
    if group.size() == 1:
        return lambda x: x

    @mx.custom_function
    def identity(x):
        return x

    @identity.vjp
    def identity(x, cotangent, output):
        return mx.distributed.all_sum(cotangent, group=group)

    return identity


# ------------------------------------------------------------------ splitting parameters


def _segment_bounds(size, segments, path, axis):
    """The [start, stop) ranges of the segments of an axis of `size`: `segments` is a count
    of equal parts, a list of split indices (ints) or a list of split fractions (floats)."""
    if isinstance(segments, int):
        if segments <= 0 or size % segments != 0:
            raise ValueError(
                f"[shard] Cannot split {path!r} (size {size} along axis {axis}) into "
                f"{segments} equal segments."
            )
        step = size // segments
        return [(i * step, (i + 1) * step) for i in range(segments)]
    segments = list(segments)
    if not segments:
        return [(0, size)]
    if isinstance(segments[0], float):
        # Fractions of the axis, as MLX: int(fraction * size).
        cuts = [int(s * size) for s in segments]
    else:
        cuts = [int(s) for s in segments]
    edges = [0] + cuts + [size]
    if any(b < a for a, b in zip(edges, edges[1:])):
        raise ValueError(
            f"[shard] The segments {segments} of {path!r} (size {size} along axis {axis}) "
            "must be increasing and within the axis."
        )
    return list(zip(edges, edges[1:]))


def _shard(parameters: dict, sharding_predicate: Callable, group=None) -> dict:
    """A copy of `parameters` where each array that ``sharding_predicate(path, array)``
    selects is replaced by this rank's shard.

    The predicate returns None (keep the array whole), an axis, or ``(axis, segments)``:
    the axis is first cut into `segments` (e.g. 3 for a fused QKV weight) and each segment
    is split evenly over the group, this rank's pieces concatenated in segment order.

    Raises:
        ValueError: the predicate returned something else, or a segment's size is not
            divisible by the group size.
    """
    group = group or mx.distributed.init()
    n, rank = group.size(), group.rank()

    def shard_one(path, value):
        if not isinstance(value, mx.array):
            return value
        spec = sharding_predicate(path, value)
        if spec is None:
            return value
        if isinstance(spec, bool) or not isinstance(spec, (int, tuple)):
            raise ValueError(
                "[shard] The sharding function should return None, an int (the axis) or a "
                f"tuple (axis, segments), but returned {spec!r} for {path!r}."
            )
        axis, segments = (spec, 1) if isinstance(spec, int) else spec
        if value.ndim == 0 or not -value.ndim <= axis < value.ndim:
            raise ValueError(
                f"[shard] Invalid axis {axis} for {path!r} of shape {tuple(value.shape)}."
            )
        axis %= value.ndim
        size = value.shape[axis]
        pieces = []
        for start, stop in _segment_bounds(size, segments, path, axis):
            length = stop - start
            if length % n != 0:
                what = (
                    f"the size {length}"
                    if (start, stop) == (0, size)
                    else f"the segment [{start}, {stop}) of size {length}"
                )
                raise ValueError(
                    f"[shard] Cannot shard {path!r} of shape {tuple(value.shape)} along axis "
                    f"{axis} across {n} devices: {what} is not divisible by {n}."
                )
            part = length // n
            index = [slice(None)] * value.ndim
            index[axis] = slice(start + rank * part, start + (rank + 1) * part)
            pieces.append(value[tuple(index)])
        shard = pieces[0] if len(pieces) == 1 else mx.concatenate(pieces, axis=axis)
        return mx.contiguous(shard)

    return tree_map_with_path(shard_one, parameters)


def _all_to_sharded(segments):
    """Predicate of an all-to-sharded linear layer: weights (and quantization scales and
    biases) split along their output axis, the bias along its only axis."""

    def predicate(path, weight):
        if path.endswith("bias"):
            return -1, segments
        return max(weight.ndim - 2, 0), segments

    return predicate


def _sharded_to_all(segments):
    """Predicate of a sharded-to-all linear layer: weights split along their input (last)
    axis, the bias kept whole (it is added once, after the sum)."""

    def predicate(path, weight):
        if path.endswith("bias"):
            return None
        return -1, segments

    return predicate


def _check_sharding(sharding):
    if sharding not in _SHARDINGS:
        raise ValueError(
            f"Sharding type sharding={sharding!r} not supported, choose one of "
            "'all-to-sharded' or 'sharded-to-all'"
        )


def _group_size_of(group):
    group = group or mx.distributed.init()
    return group, group.size()


def shard_inplace(
    module: Module,
    sharding: Union[str, Callable],
    *,
    segments: Union[int, list] = 1,
    group=None,
) -> None:
    """Replaces, in place, the parameters of `module` by this rank's shards.

    The module's computation is unchanged: communication happens only if the module itself
    performs it (e.g. an ``all_sum`` after a block whose last layer was sharded
    ``"sharded-to-all"``).

    Args:
        module: The module whose parameters are sharded.
        sharding: ``"all-to-sharded"`` (weights split along their output axis, biases
            too), ``"sharded-to-all"`` (weights split along their last axis, biases kept),
            or a function ``(path, array) -> None | axis | (axis, segments)``.
        segments: With a string `sharding`: the number of equal segments of the sharded
            axis (3 for a fused QKV weight), or their split indices or fractions; each
            segment is split over the group separately.
        group: The group to shard over (default: the global group).

    Raises:
        ValueError: An unknown `sharding`, or a sharded size not divisible by the group
            size (naming the parameter, its shape and the group size).
    """
    if isinstance(sharding, str):
        _check_sharding(sharding)
        sharding = (
            _all_to_sharded(segments) if sharding == "all-to-sharded" else _sharded_to_all(segments)
        )
    module.update(_shard(module.parameters(), sharding, group))


def shard_linear(
    module: Module,
    sharding: str,
    *,
    segments: Union[int, list] = 1,
    group=None,
) -> Module:
    """A new sharded layer holding this rank's part of `module` (a :class:`Linear` or a
    quantized linear layer), which communicates as its `sharding` requires: an
    :class:`AllToShardedLinear` / :class:`ShardedToAllLinear` (or their quantized
    versions). `module` is left unchanged.

    Raises:
        ValueError: An unknown `sharding`, or dimensions not divisible by the group size.
    """
    _check_sharding(sharding)
    if isinstance(module, Linear):
        cls = AllToShardedLinear if sharding == "all-to-sharded" else ShardedToAllLinear
        return cls.from_linear(module, segments=segments, group=group)
    if not all(hasattr(module, a) for a in ("group_size", "bits")) or "scales" not in module:
        raise ValueError(
            "[shard_linear] Expected a Linear or a quantized linear layer (weight, scales, "
            f"group_size, bits), got {type(module).__name__}."
        )
    cls = (
        QuantizedAllToShardedLinear if sharding == "all-to-sharded" else QuantizedShardedToAllLinear
    )
    return cls.from_quantized_linear(module, segments=segments, group=group)


# ------------------------------------------------------------------ layers


def _check_positive(layer, **dims):
    for name, value in dims.items():
        if value <= 0:
            raise ValueError(f"[{layer}] {name} must be positive but got {value}.")


def _uniform(scale, shape):
    return mx.random.uniform(low=-scale, high=scale, shape=shape)


class AllToShardedLinear(Module):
    """A :class:`Linear` of which each rank of `group` holds ``output_dims / N`` output
    features (``weight`` of shape ``(output_dims / N, input_dims)``, ``bias`` of shape
    ``(output_dims / N,)``): a full input of shape ``(..., input_dims)`` gives this rank's
    slice ``(..., output_dims / N)`` of the output. The gradient with respect to the input
    is summed over the group.

    Args:
        input_dims: Input features.
        output_dims: Output features (all ranks together).
        bias: Whether the layer has a bias. Default: True.
        group: The group to shard over (default: the global group).

    Raises:
        ValueError: `output_dims` is not divisible by the group size.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True, group=None):
        super().__init__()
        _check_positive(type(self).__name__, input_dims=input_dims, output_dims=output_dims)
        self.group, n = _group_size_of(group)
        if output_dims % n != 0:
            raise ValueError(
                f"[{type(self).__name__}] Cannot shard the output of size {output_dims} "
                f"across {n} devices: output_dims must be divisible by the group size."
            )
        scale = math.sqrt(1.0 / input_dims)
        self.weight = _uniform(scale, (output_dims // n, input_dims))
        if bias:
            self.bias = _uniform(scale, (output_dims // n,))

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        return (
            f"input_dims={in_dims}, output_dims={out_dims * self.group.size()}, "
            f"bias={'bias' in self}"
        )

    def __call__(self, x: mx.array) -> mx.array:
        x = sum_gradients(self.group)(x)
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments: Union[int, list] = 1, group=None):
        """This rank's shard of `linear_layer` (its weight's rows, in `segments` split
        separately: 3 for a fused QKV projection)."""
        group, _ = _group_size_of(group)
        output_dims, input_dims = linear_layer.weight.shape
        layer = cls(input_dims, output_dims, "bias" in linear_layer, group)
        layer.update(_shard(linear_layer.parameters(), _all_to_sharded(segments), group))
        return layer


class ShardedToAllLinear(Module):
    """A :class:`Linear` of which each rank of `group` holds ``input_dims / N`` input
    features (``weight`` of shape ``(output_dims, input_dims / N)``; ``bias`` whole, of shape
    ``(output_dims,)``): this rank's input slice ``(..., input_dims / N)`` gives a partial
    product that is summed over the group, so every rank gets the full output
    ``(..., output_dims)``.

    Args:
        input_dims: Input features (all ranks together).
        output_dims: Output features.
        bias: Whether the layer has a bias. Default: True.
        group: The group to shard over (default: the global group).

    Raises:
        ValueError: `input_dims` is not divisible by the group size.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True, group=None):
        super().__init__()
        _check_positive(type(self).__name__, input_dims=input_dims, output_dims=output_dims)
        self.group, n = _group_size_of(group)
        if input_dims % n != 0:
            raise ValueError(
                f"[{type(self).__name__}] The input of size {input_dims} cannot be sharded "
                f"across {n} devices: input_dims must be divisible by the group size."
            )
        scale = math.sqrt(1.0 / input_dims)
        self.weight = _uniform(scale, (output_dims, input_dims // n))
        if bias:
            self.bias = _uniform(scale, (output_dims,))

    def _extra_repr(self) -> str:
        out_dims, in_dims = self.weight.shape
        return (
            f"input_dims={in_dims * self.group.size()}, output_dims={out_dims}, "
            f"bias={'bias' in self}"
        )

    def __call__(self, x: mx.array) -> mx.array:
        x = mx.distributed.all_sum(x @ self["weight"].T, group=self.group)
        if "bias" in self:
            x = x + self["bias"]
        return x

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments: Union[int, list] = 1, group=None):
        """This rank's shard of `linear_layer` (its weight's columns, in `segments` split
        separately); the bias is copied whole."""
        group, _ = _group_size_of(group)
        output_dims, input_dims = linear_layer.weight.shape
        layer = cls(input_dims, output_dims, "bias" in linear_layer, group)
        layer.update(_shard(linear_layer.parameters(), _sharded_to_all(segments), group))
        return layer


class _QuantizedSharded(Module):
    """What the two quantized sharded layers share: the quantization settings, the frozen
    parameters and the quantized product."""

    def _init_quantized(self, local_shape, group_size, bits, mode):
        self.group_size, self.bits = _defaults_for_mode(mode, group_size, bits)
        self.mode = mode
        in_dims = local_shape[1]
        if in_dims % self.group_size != 0:
            raise ValueError(
                f"[{type(self).__name__}] Each rank's input_dims ({in_dims}) must be "
                f"divisible by group_size ({self.group_size})."
            )
        weight = _uniform(math.sqrt(1.0 / self._input_dims), local_shape)
        self.weight, self.scales, *biases = mx.quantize(
            weight, self.group_size, self.bits, mode=mode
        )
        self.biases = biases[0] if biases else None

    def unfreeze(self, *args, **kwargs):
        """Unfreezes submodules (if any) as :meth:`Module.unfreeze`; this layer's own
        quantized parameters stay frozen."""
        super().unfreeze(*args, **kwargs)
        self.freeze(recurse=False)
        return self

    def _dims(self):
        out_dims, packed = self.weight.shape
        return out_dims, packed * 32 // self.bits

    def _quantized_product(self, x):
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

    def _quant_repr(self, in_dims, out_dims):
        return (
            f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}, "
            f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}"
        )

    @classmethod
    def _from_quantized(cls, layer, predicate, group):
        group, _ = _group_size_of(group)
        output_dims, packed = layer.weight.shape
        input_dims = packed * 32 // layer.bits
        sharded = cls(
            input_dims,
            output_dims,
            "bias" in layer,
            group_size=layer.group_size,
            bits=layer.bits,
            mode=getattr(layer, "mode", "affine"),
            group=group,
        )
        sharded.update(_shard(layer.parameters(), predicate, group))
        return sharded


class QuantizedAllToShardedLinear(_QuantizedSharded):
    """:class:`AllToShardedLinear` with the weight stored quantized, as
    :class:`QuantizedLinear` (``weight``, ``scales``, ``biases`` frozen; ``bias`` in full
    precision, initialized to zeros, also frozen). Each rank holds ``output_dims / N`` rows.

    Args:
        input_dims, output_dims, bias, group: As :class:`AllToShardedLinear`.
        group_size, bits, mode: As ``mx.quantize`` (default for the mode, 64 and 4 for
            ``"affine"``).

    Raises:
        ValueError: `output_dims` is not divisible by the group size, or `input_dims` not
            by `group_size`.
    """

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group_size: int = None,
        bits: int = None,
        mode: str = "affine",
        group=None,
    ):
        super().__init__()
        _check_positive(type(self).__name__, input_dims=input_dims, output_dims=output_dims)
        self.group, n = _group_size_of(group)
        if output_dims % n != 0:
            raise ValueError(
                f"[{type(self).__name__}] Cannot shard the output of size {output_dims} "
                f"across {n} devices: output_dims must be divisible by the group size."
            )
        self._input_dims = input_dims
        self._init_quantized((output_dims // n, input_dims), group_size, bits, mode)
        if bias:
            self.bias = mx.zeros((output_dims // n,))
        self.freeze()

    def _extra_repr(self) -> str:
        out_dims, in_dims = self._dims()
        return self._quant_repr(in_dims, out_dims * self.group.size())

    def __call__(self, x: mx.array) -> mx.array:
        x = self._quantized_product(sum_gradients(self.group)(x))
        if "bias" in self:
            x = x + self["bias"]
        return x

    @classmethod
    def from_quantized_linear(
        cls, quantized_linear_layer: Module, *, segments: Union[int, list] = 1, group=None
    ):
        """This rank's shard of a :class:`QuantizedLinear` (rows of its packed weight,
        scales and biases)."""
        return cls._from_quantized(quantized_linear_layer, _all_to_sharded(segments), group)


class QuantizedShardedToAllLinear(_QuantizedSharded):
    """:class:`ShardedToAllLinear` with the weight stored quantized, as
    :class:`QuantizedLinear` (all parameters frozen). Each rank holds ``input_dims / N``
    columns, which must be a multiple of `group_size`.

    Args:
        input_dims, output_dims, bias, group: As :class:`ShardedToAllLinear`.
        group_size, bits, mode: As ``mx.quantize`` (default for the mode, 64 and 4 for
            ``"affine"``).

    Raises:
        ValueError: `input_dims` is not divisible by the group size, or
            ``input_dims / N`` not by `group_size`.
    """

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group_size: int = None,
        bits: int = None,
        mode: str = "affine",
        group=None,
    ):
        super().__init__()
        _check_positive(type(self).__name__, input_dims=input_dims, output_dims=output_dims)
        self.group, n = _group_size_of(group)
        if input_dims % n != 0:
            raise ValueError(
                f"[{type(self).__name__}] The input of size {input_dims} cannot be sharded "
                f"across {n} devices: input_dims must be divisible by the group size."
            )
        self._input_dims = input_dims
        self._init_quantized((output_dims, input_dims // n), group_size, bits, mode)
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def _extra_repr(self) -> str:
        out_dims, in_dims = self._dims()
        return self._quant_repr(in_dims * self.group.size(), out_dims)

    def __call__(self, x: mx.array) -> mx.array:
        x = mx.distributed.all_sum(self._quantized_product(x), group=self.group)
        if "bias" in self:
            x = x + self["bias"]
        return x

    @classmethod
    def from_quantized_linear(
        cls, quantized_linear_layer: Module, *, segments: Union[int, list] = 1, group=None
    ):
        """This rank's shard of a :class:`QuantizedLinear` (columns of its packed weight,
        scales and biases; the bias whole)."""
        return cls._from_quantized(quantized_linear_layer, _sharded_to_all(segments), group)


# ------------------------------------------------------------------ fully sharded modules


def _make_gather_fn(group, full_shapes, shard_sizes, compute_dtype):
    """A custom function taking the list of this rank's shards and returning the list of
    full parameters (one ``all_gather`` of all of them flattened together, optionally cast
    to `compute_dtype`). Its vjp reduce-scatters the full gradients and divides by the
    group size: each rank's gradient is its shard of the average over the group."""
    n = group.size()
    offsets = [0]
    for size in shard_sizes:
        offsets.append(offsets[-1] + size)
    cuts = offsets[1:-1]
    shard_shapes = [(shape[0] // n,) + tuple(shape[1:]) for shape in full_shapes]

    def cast(x, dtype):
        return x if dtype is None or x.dtype == dtype else x.astype(dtype)

    @mx.custom_function
    def gather(shards):
        flat = mx.concatenate([cast(s.reshape(1, -1), compute_dtype) for s in shards], axis=1)
        full = mx.distributed.all_gather(flat, group=group)  # (n, sum of shard sizes)
        parts = mx.split(full, cuts, axis=1) if cuts else [full]
        return [p.reshape(shape) for p, shape in zip(parts, full_shapes)]

    @gather.vjp
    def gather(shards, cotangents, outputs):
        flat = mx.concatenate([c.reshape(n, -1) for c in cotangents], axis=1)
        mine = mx.distributed.sum_scatter(flat, group=group) / n
        parts = mx.split(mine, cuts, axis=1) if cuts else [mine]
        return [cast(p.reshape(shape), s.dtype) for p, shape, s in zip(parts, shard_shapes, shards)]

    return gather


def _maybe_shard(module, key, value):
    """Parameters of a module to shard: those not already inside a FullyShardedModule."""
    if isinstance(value, FullyShardedModule):
        return False
    return Module.valid_parameter_filter(module, key, value)


class FullyShardedModule(Module):
    """Wraps `module` so that each rank of `group` stores only its shard (along axis 0) of
    every parameter: the full parameters are gathered (``all_gather``) for each call, and
    their gradients reduce-scattered (``sum_scatter``, divided by the group size), so each
    rank holds and updates only its shard of the averaged gradient (ZeRO-3 / FSDP).

    Args:
        module: The module to wrap (sharded in place).
        group: The group to shard over (default: the global group).
        compute_dtype: If set, the gathered parameters are cast to this dtype.

    Raises:
        ValueError: A parameter is a scalar or its axis 0 is not divisible by the group
            size (naming the parameter and its shape).
    """

    def __init__(self, module: Module, group=None, compute_dtype: Optional[mx.Dtype] = None):
        super().__init__()
        group, n = _group_size_of(group)
        tree = module.filter_and_map(_maybe_shard)
        flat = tree_flatten(tree)
        for path, a in flat:
            if a.ndim == 0:
                raise ValueError(
                    f"[FullyShardedModule] Cannot shard parameter '{path}' because it is a "
                    "scalar."
                )
            if a.shape[0] % n != 0:
                raise ValueError(
                    f"[FullyShardedModule] Cannot shard parameter '{path}' with shape "
                    f"{tuple(a.shape)} across {n} devices: axis 0 must be divisible by {n}."
                )
        # Plain attributes (not items), so they are not part of the module's tree.
        object.__setattr__(self, "_paths", [path for path, _ in flat])
        full_shapes = [tuple(a.shape) for _, a in flat]
        shard_sizes = [a.size // n for _, a in flat]
        module.update(_shard(tree, lambda path, w: 0, group))
        self.module = module
        self._gather_fn = _make_gather_fn(group, full_shapes, shard_sizes, compute_dtype)

    def _extra_repr(self) -> str:
        return f"num_sharded_params={len(self._paths)}"

    def _gathered_call(self, fn, *args, **kwargs):
        shards_tree = self.module.filter_and_map(_maybe_shard)
        shards = [a for _, a in tree_flatten(shards_tree)]
        full = self._gather_fn(shards)
        self.module.update(tree_unflatten(list(zip(self._paths, full))))
        try:
            return fn(*args, **kwargs)
        finally:
            self.module.update(shards_tree)

    def __call__(self, *args, **kwargs):
        return self._gathered_call(self.module, *args, **kwargs)

    def as_linear(self, *args, **kwargs):
        """The wrapped module's ``as_linear`` (e.g. a tied embedding) with the gathered
        parameters."""
        return self._gathered_call(self.module.as_linear, *args, **kwargs)


def fully_shard(module: Module, *, group=None, compute_dtype: Optional[mx.Dtype] = None):
    """`module` wrapped in a :class:`FullyShardedModule`; `module` itself for a group of one,
    a module already wrapped, or a module without parameters."""
    group, n = _group_size_of(group)
    if n == 1 or isinstance(module, FullyShardedModule):
        return module
    wrapped = FullyShardedModule(module, group=group, compute_dtype=compute_dtype)
    return wrapped if wrapped._paths else module
