"""One rank of the multi-process tests of kiln.nn's tensor-parallel and fully sharded layers
(run by test_nn_distributed.py through mpirun or python -m kiln.launch, never collected by
pytest itself).

Every rank builds the same unsharded layers and inputs from the launch's seed, so each one
computes the unsharded reference itself and compares its shard of the result with it.
Prints "PASS rank <r> of <n>" when every check holds; any failure raises, which ends the
launch with a non-zero status.

Usage: nn_distributed_worker.py <seed> [checks...]   (checks: all, or names from CHECKS)
"""

import sys

import numpy as np

import kiln.core as mx
import kiln.nn as nn
from kiln.utils import tree_flatten

dist = mx.distributed

SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 0
WANT = sys.argv[2:] or ["all"]


def expect(got, want, what, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(
        np.array(got, dtype=np.float64),
        np.asarray(want, dtype=np.float64),
        rtol=rtol,
        atol=atol,
        err_msg=what,
    )


def expect_raises(fn, *needles):
    """fn() raises ValueError whose message holds every needle."""
    try:
        fn()
    except ValueError as e:
        for needle in needles:
            assert needle in str(e), f"{needle!r} not in {str(e)!r}"
        return
    raise AssertionError(f"no ValueError (wanted one naming {needles})")


def data(shape, salt, dtype=mx.float32):
    """The same array on every rank (a function of the seed and `salt`)."""
    rng = np.random.default_rng([SEED, salt])
    return mx.array(rng.standard_normal(shape).astype(np.float32)).astype(dtype)


def rows(a, r, n, axis=0):
    """Rank r's part of `a` split evenly along `axis` (NumPy)."""
    a = np.asarray(a)
    k = a.shape[axis] // n
    return np.take(a, range(r * k, (r + 1) * k), axis=axis)


def new_linear(i, o, bias, salt, dtype=mx.float32):
    mx.random.seed(SEED * 1000 + salt)
    layer = nn.Linear(i, o, bias=bias)
    layer.set_dtype(dtype)
    mx.eval(layer.parameters())
    return layer


# ---------------------------------------------------------------- forward


def check_forward(g):
    r, n = g.rank(), g.size()
    for bias in (True, False):
        for dtype, tol in ((mx.float32, 1e-5), (mx.float64, 1e-12)):
            full = new_linear(12, 8 * n, bias, 1, dtype)
            x = data((3, 5, 12), 2, dtype)
            want = np.array(full(x))

            a2s = nn.AllToShardedLinear.from_linear(full, group=g)
            assert a2s.weight.shape == (8, 12) and a2s.weight.dtype == dtype
            assert ("bias" in a2s) == bias
            expect(a2s(x), rows(want, r, n, -1), "AllToShardedLinear", tol, tol)
            same = nn.shard_linear(full, "all-to-sharded", group=g)
            assert isinstance(same, nn.AllToShardedLinear)
            expect(same(x), rows(want, r, n, -1), "shard_linear all-to-sharded", tol, tol)

            full = new_linear(8 * n, 6, bias, 3, dtype)
            x = data((4, 8 * n), 4, dtype)
            want = np.array(full(x))
            s2a = nn.shard_linear(full, "sharded-to-all", group=g)
            assert isinstance(s2a, nn.ShardedToAllLinear)
            assert s2a.weight.shape == (6, 8) and s2a.weight.dtype == dtype
            x_mine = mx.array(rows(x, r, n, -1))
            expect(s2a(x_mine), want, "ShardedToAllLinear", tol, tol)
            expect(
                nn.ShardedToAllLinear.from_linear(full, group=g)(x_mine),
                want,
                "ShardedToAllLinear.from_linear",
                tol,
                tol,
            )
    # The originals are untouched by shard_linear.
    assert full.weight.shape == (6, 8 * n)
    # Fresh layers have the shard shapes and report the full sizes.
    layer = nn.AllToShardedLinear(16, 4 * n, group=g)
    assert layer.weight.shape == (4, 16) and layer.bias.shape == (4,)
    assert f"output_dims={4 * n}" in repr(layer), repr(layer)
    layer = nn.ShardedToAllLinear(4 * n, 16, bias=False, group=g)
    assert layer.weight.shape == (16, 4) and "bias" not in layer
    assert f"input_dims={4 * n}" in repr(layer), repr(layer)


def check_segments(g):
    """Fused weights (QKV): each segment split over the group separately."""
    r, n = g.rank(), g.size()
    d = 4 * n
    qkv = new_linear(16, 3 * d, True, 5)
    x = data((2, 16), 6)
    q, k, v = np.split(np.array(qkv(x)), 3, axis=-1)
    want = np.concatenate([rows(q, r, n, -1), rows(k, r, n, -1), rows(v, r, n, -1)], -1)
    sharded = nn.shard_linear(qkv, "all-to-sharded", segments=3, group=g)
    expect(sharded(x), want, "segments=3")
    # Segments given by split indices and by fractions of the axis: [d, 3d) and [3d, 4d).
    fused = new_linear(16, 4 * d, False, 7)
    full = np.array(fused(x))
    parts = [full[:, :d], full[:, d : 3 * d], full[:, 3 * d :]]
    want = np.concatenate([rows(p, r, n, -1) for p in parts], -1)
    for segments in ([d, 3 * d], [0.25, 0.75]):
        got = nn.AllToShardedLinear.from_linear(fused, segments=segments, group=g)(x)
        expect(got, want, f"segments={segments}")
    # Sharded-to-all with segments: the input's segments are split the same way.
    down = new_linear(3 * d, 5, False, 8)
    xin = data((2, 3 * d), 9)
    want = np.array(down(xin))
    xs = np.split(np.array(xin), 3, axis=-1)
    mine = mx.array(np.concatenate([rows(p, r, n, -1) for p in xs], -1))
    got = nn.shard_linear(down, "sharded-to-all", segments=3, group=g)(mine)
    expect(got, want, "sharded-to-all segments=3")


# ---------------------------------------------------------------- gradients


class MLP(nn.Module):
    def __init__(self, first, second):
        super().__init__()
        self.first, self.second = first, second

    def __call__(self, x):
        return self.second(nn.gelu(self.first(x)))


def loss_fn(model, x, t):
    return ((model(x) - t) ** 2).mean()


def check_mlp_gradients(g):
    """A 2-layer sharded MLP: its loss, the gradients of the shards (slices of the unsharded
    gradients) and the gradient with respect to the input (summed over the group by
    sum_gradients) equal the unsharded ones. float64, so the tolerance is tight."""
    r, n = g.rank(), g.size()
    dt = mx.float64
    full = MLP(new_linear(10, 6 * n, True, 11, dt), new_linear(6 * n, 7, True, 12, dt))
    x, t = data((5, 10), 13, dt), data((5, 7), 14, dt)
    tp = MLP(
        nn.shard_linear(full.first, "all-to-sharded", group=g),
        nn.shard_linear(full.second, "sharded-to-all", group=g),
    )
    want_loss, want = nn.value_and_grad(full, loss_fn)(full, x, t)
    loss, got = nn.value_and_grad(tp, loss_fn)(tp, x, t)
    expect(loss, want_loss, "loss", 1e-12, 1e-12)
    expect(got["first"]["weight"], rows(want["first"]["weight"], r, n, 0), "dW1", 1e-10, 1e-12)
    expect(got["first"]["bias"], rows(want["first"]["bias"], r, n, 0), "db1", 1e-10, 1e-12)
    expect(got["second"]["weight"], rows(want["second"]["weight"], r, n, 1), "dW2", 1e-10, 1e-12)
    expect(got["second"]["bias"], want["second"]["bias"], "db2", 1e-10, 1e-12)
    # d loss / d x: every shard of the first layer contributes; all_sum in the backward pass.
    gx_full = mx.grad(lambda a: loss_fn(full, a, t))(x)
    gx = mx.grad(lambda a: loss_fn(tp, a, t))(x)
    expect(gx, gx_full, "d loss / d x", 1e-10, 1e-12)
    # Two sharded blocks in a row: the second block's input gradient crosses the first
    # block's all_sum (identity vjp) and its sum_gradients.
    full2 = MLP(new_linear(7, 2 * n, False, 15, dt), new_linear(2 * n, 7, False, 16, dt))
    tp2 = MLP(
        nn.shard_linear(full2.first, "all-to-sharded", group=g),
        nn.shard_linear(full2.second, "sharded-to-all", group=g),
    )
    gx_full = mx.grad(lambda a: loss_fn(full2, full(a), t))(x)
    gx = mx.grad(lambda a: loss_fn(tp2, tp(a), t))(x)
    expect(gx, gx_full, "d loss / d x through two blocks", 1e-10, 1e-12)
    # float32 too, with a float32 tolerance.
    full = MLP(new_linear(10, 6 * n, True, 17), new_linear(6 * n, 7, True, 18))
    x, t = data((5, 10), 19), data((5, 7), 20)
    tp = MLP(
        nn.shard_linear(full.first, "all-to-sharded", group=g),
        nn.shard_linear(full.second, "sharded-to-all", group=g),
    )
    _, want = nn.value_and_grad(full, loss_fn)(full, x, t)
    _, got = nn.value_and_grad(tp, loss_fn)(tp, x, t)
    expect(got["first"]["weight"], rows(want["first"]["weight"], r, n, 0), "dW1 f32", 1e-4, 1e-6)
    expect(got["second"]["weight"], rows(want["second"]["weight"], r, n, 1), "dW2 f32", 1e-4, 1e-6)


# ---------------------------------------------------------------- quantized


def check_quantized(g):
    r, n = g.rank(), g.size()
    for mode, group_size, bits in (("affine", 32, 4), ("affine", 64, 8), ("mxfp4", 32, 4)):
        dims_in = 64 * n
        lin = new_linear(dims_in, 8 * n, True, 21)
        q = nn.QuantizedLinear.from_linear(lin, group_size, bits, mode)
        x = data((3, dims_in), 22)
        want = np.array(q(x))
        a2s = nn.shard_linear(q, "all-to-sharded", group=g)
        assert isinstance(a2s, nn.QuantizedAllToShardedLinear)
        assert (a2s.group_size, a2s.bits, a2s.mode) == (group_size, bits, mode)
        assert a2s.trainable_parameters() == {}, "quantized parameters must be frozen"
        expect(a2s(x), rows(want, r, n, -1), f"QuantizedAllToShardedLinear {mode}", 1e-5, 1e-5)

        s2a = nn.shard_linear(q, "sharded-to-all", group=g)
        assert isinstance(s2a, nn.QuantizedShardedToAllLinear)
        assert s2a.weight.shape == (8 * n, q.weight.shape[1] // n)
        x_mine = mx.array(rows(x, r, n, -1))
        expect(s2a(x_mine), want, f"QuantizedShardedToAllLinear {mode}", 1e-4, 1e-4)
        s2a.unfreeze()
        assert s2a.trainable_parameters() == {}, "unfreeze keeps the quantized parameters"
    # A quantized tensor-parallel MLP: gradients reach the input through the frozen layers.
    # Each rank's hidden slice (64) is a whole quantization group of the second layer.
    q1 = nn.QuantizedLinear.from_linear(new_linear(64, 64 * n, False, 23), 64, 4)
    q2 = nn.QuantizedLinear.from_linear(new_linear(64 * n, 8, False, 24), 64, 4)
    full = MLP(q1, q2)
    tp = MLP(
        nn.shard_linear(q1, "all-to-sharded", group=g),
        nn.shard_linear(q2, "sharded-to-all", group=g),
    )
    x, t = data((3, 64), 26), data((3, 8), 27)
    expect(tp(x), full(x), "quantized MLP forward", 1e-4, 1e-4)
    gx_full = mx.grad(lambda a: loss_fn(full, a, t))(x)
    gx = mx.grad(lambda a: loss_fn(tp, a, t))(x)
    expect(gx, gx_full, "quantized MLP d loss / d x", 1e-3, 1e-5)
    # Fresh quantized layers: shard shapes, zero bias, settings of the mode.
    layer = nn.QuantizedAllToShardedLinear(128, 2 * n, group=g)
    assert layer.weight.shape == (2, 128 * 4 // 32) and (layer.group_size, layer.bits) == (64, 4)
    assert np.array(layer.bias).tolist() == [0.0, 0.0]
    layer = nn.QuantizedShardedToAllLinear(64 * n, 3, bias=False, group=g)
    assert layer.weight.shape == (3, 64 * 4 // 32) and "bias" not in layer


# ---------------------------------------------------------------- shard_inplace


class LlamaMLP(nn.Module):
    def __init__(self, dims, hidden, salt):
        super().__init__()
        mx.random.seed(SEED * 1000 + salt)
        self.gate_proj = nn.Linear(dims, hidden, bias=False)
        self.up_proj = nn.Linear(dims, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dims, bias=False)
        mx.eval(self.parameters())

    def __call__(self, x):
        return self.down_proj(nn.silu(self.gate_proj(x)) * self.up_proj(x))


def check_shard_inplace(g):
    r, n = g.rank(), g.size()
    x = data((2, 3, 16), 31)
    full = LlamaMLP(16, 8 * n, 32)
    want = np.array(full(x))
    # Layer by layer: the block computes this rank's partial output; the all_sum is ours.
    block = LlamaMLP(16, 8 * n, 32)
    nn.shard_inplace(block.gate_proj, "all-to-sharded", group=g)
    nn.shard_inplace(block.up_proj, "all-to-sharded", group=g)
    nn.shard_inplace(block.down_proj, "sharded-to-all", group=g)
    assert block.gate_proj.weight.shape == (8, 16) and block.down_proj.weight.shape == (16, 8)
    expect(dist.all_sum(block(x), group=g), want, "shard_inplace layer by layer")
    expect(block.up_proj.weight, rows(full.up_proj.weight, r, n, 0), "up_proj shard", 0, 0)
    # The whole block with a predicate.
    block = LlamaMLP(16, 8 * n, 32)
    nn.shard_inplace(block, lambda path, w: -1 if "down" in path else 0, group=g)
    expect(dist.all_sum(block(x), group=g), want, "shard_inplace with a predicate")
    # A predicate returning (axis, segments) and None.
    block = LlamaMLP(16, 8 * n, 32)
    nn.shard_inplace(block, lambda path, w: None if "down" in path else (0, 2), group=g)
    assert block.down_proj.weight.shape == (16, 8 * n)
    half = np.split(np.array(full.gate_proj.weight), 2, axis=0)
    expect(
        block.gate_proj.weight,
        np.concatenate([rows(h, r, n, 0) for h in half]),
        "predicate (axis, segments)",
        0,
        0,
    )
    # Gradients of the in-place sharded block (the sum is the caller's, after the block).
    block = LlamaMLP(16, 8 * n, 32)
    nn.shard_inplace(block.gate_proj, "all-to-sharded", group=g)
    nn.shard_inplace(block.up_proj, "all-to-sharded", group=g)
    nn.shard_inplace(block.down_proj, "sharded-to-all", group=g)
    t = data((2, 3, 16), 33)

    def block_loss(model, x, t):
        return ((dist.all_sum(model(x), group=g) - t) ** 2).mean()

    _, want_g = nn.value_and_grad(full, loss_fn)(full, x, t)
    _, got = nn.value_and_grad(block, block_loss)(block, x, t)
    expect(got["gate_proj"]["weight"], rows(want_g["gate_proj"]["weight"], r, n, 0), "dgate")
    expect(got["down_proj"]["weight"], rows(want_g["down_proj"]["weight"], r, n, 1), "ddown")


# ---------------------------------------------------------------- fully sharded


def check_fully_shard(g):
    """Data-parallel with sharded parameters: each rank holds a shard of every parameter,
    trains on its own batch, and gets its shard of the gradient averaged over the group."""
    r, n = g.rank(), g.size()
    dt = mx.float64
    model = MLP(new_linear(6, 4 * n, True, 41, dt), new_linear(4 * n, 2 * n, True, 42, dt))
    full = MLP(new_linear(6, 4 * n, True, 41, dt), new_linear(4 * n, 2 * n, True, 42, dt))
    if n == 1:  # fully_shard leaves the module alone; the wrapper works all the same
        assert nn.fully_shard(model, group=g) is model
        wrapped = nn.FullyShardedModule(model, group=g)
    else:
        wrapped = nn.fully_shard(model, group=g)
    assert isinstance(wrapped, nn.FullyShardedModule)
    assert "num_sharded_params=4" in repr(wrapped)
    shards = dict(tree_flatten(wrapped.parameters()))
    assert shards["module.first.weight"].shape == (4, 6)
    assert shards["module.second.bias"].shape == (2,)
    assert nn.fully_shard(wrapped, group=g) is wrapped

    batches = [(data((3, 6), 50 + q, dt), data((3, 2 * n), 60 + q, dt)) for q in range(n)]
    x, t = batches[r]
    expect(wrapped(x), full(x), "fully sharded forward", 1e-12, 1e-12)
    loss, grads = nn.value_and_grad(wrapped, loss_fn)(wrapped, x, t)
    expect(loss, loss_fn(full, x, t), "fully sharded loss", 1e-12, 1e-12)
    per_rank = [nn.value_and_grad(full, loss_fn)(full, *b)[1] for b in batches]
    for path, gshard in tree_flatten(grads):
        key = path[len("module.") :]
        mean = np.mean([np.array(dict(tree_flatten(p))[key]) for p in per_rank], axis=0)
        expect(gshard, rows(mean, r, n, 0), f"fully sharded grad {key}", 1e-10, 1e-12)
    # The wrapped module's parameters are shards again after the call.
    assert dict(tree_flatten(wrapped.parameters()))["module.first.weight"].shape == (4, 6)
    # compute_dtype: the gathered parameters are cast; gradients come back in float64.
    cast = nn.FullyShardedModule(
        MLP(new_linear(6, 4 * n, True, 41, dt), new_linear(4 * n, 2 * n, True, 42, dt)),
        group=g,
        compute_dtype=mx.float32,
    )
    out = cast(x.astype(mx.float32))
    assert out.dtype == mx.float32
    expect(out, full(x), "compute_dtype forward", 1e-5, 1e-5)
    _, grads = nn.value_and_grad(cast, loss_fn)(cast, x.astype(mx.float32), t)
    assert all(a.dtype == dt for _, a in tree_flatten(grads))
    if n == 1:
        return
    expect_raises(
        lambda: nn.fully_shard(nn.Linear(3, 2 * n + 1), group=g),
        "'weight'",
        f"{2 * n + 1}",
        f"across {n} devices",
    )


def check_transforms(g):
    """The sharded MLP inside compile, a compiled grad, and jvp (forward-mode through
    sum_gradients and all_sum)."""
    n = g.size()
    full = MLP(new_linear(8, 4 * n, True, 91), new_linear(4 * n, 5, True, 92))
    tp = MLP(
        nn.shard_linear(full.first, "all-to-sharded", group=g),
        nn.shard_linear(full.second, "sharded-to-all", group=g),
    )
    x, t = data((3, 8), 93), data((3, 8), 94)
    expect(mx.compile(lambda a: tp(a))(x), full(x), "compiled forward")
    gf = mx.compile(mx.grad(lambda a: (tp(a) ** 2).sum()))
    expect(gf(x), mx.grad(lambda a: (full(a) ** 2).sum())(x), "compiled grad", 1e-4, 1e-5)
    _, (dy,) = mx.jvp(lambda a: tp(a), [x], [t])
    _, (dy_full,) = mx.jvp(lambda a: full(a), [x], [t])
    expect(dy, dy_full, "jvp", 1e-4, 1e-5)


# ---------------------------------------------------------------- the collectives' vjps


def rank_array(q, shape, salt, ties=False):
    """Rank q's array (every rank can compute every rank's); with `ties`, small integers so
    that several ranks often hold the same extremum."""
    rng = np.random.default_rng([SEED, q, salt])
    a = rng.integers(0, 3, shape) if ties else rng.standard_normal(shape)
    return a.astype(np.float64)


def f64(a):
    return mx.array(a, dtype=mx.float64)


def check_vjps(g):
    """vjp and jvp of each collective are transposes of each other over the whole group:
    for outputs replicated on every rank (all_sum, all_max, all_min, all_gather) the
    cotangent v is the same on every rank and <v, jvp(t)> = sum over ranks of
    <vjp(v), t_rank>; for sum_scatter (sharded output) both sides are sums over ranks."""
    r, n = g.rank(), g.size()
    ops = {
        "all_sum": (dist.all_sum, False),
        "all_max": (dist.all_max, True),
        "all_min": (dist.all_min, True),
        "all_gather": (dist.all_gather, False),
    }
    for name, (op, ties) in ops.items():
        x = f64(rank_array(r, (4, 6), 80, ties))
        t = f64(rank_array(r, (4, 6), 81))
        f = lambda a: op(a, group=g)
        (out,), (dy,) = mx.jvp(f, [x], [t])
        v = f64(rank_array(0, out.shape, 82))  # the same on every rank
        _, (c,) = mx.vjp(f, [x], [v])
        lhs = float((v * dy).sum())
        rhs = float(dist.all_sum((c * t).sum(), group=g))
        expect(lhs, rhs, f"{name}: <v, jvp(t)> == sum over ranks <vjp(v), t>", 1e-10, 1e-10)
    # all_max with ties: the local reference (ties share the cotangent equally).
    xs = [rank_array(q, (4, 6), 80, True) for q in range(n)]
    mask = (xs[r] == np.max(xs, axis=0)).astype(np.float64)
    count = np.sum([(a == np.max(xs, axis=0)) for a in xs], axis=0)
    v = rank_array(0, (4, 6), 83)
    _, (c,) = mx.vjp(lambda a: dist.all_max(a, group=g), [f64(xs[r])], [f64(v)])
    expect(c, mask * v / count, "all_max vjp with ties")
    # sum_scatter: sharded outputs, sharded cotangents.
    x = f64(rank_array(r, (2 * n, 3), 84))
    t = f64(rank_array(r, (2 * n, 3), 85))
    f = lambda a: dist.sum_scatter(a, group=g)
    _, (dy,) = mx.jvp(f, [x], [t])
    v = f64(rank_array(r, (2, 3), 86))
    _, (c,) = mx.vjp(f, [x], [v])
    lhs = float(dist.all_sum((v * dy).sum(), group=g))
    rhs = float(dist.all_sum((c * t).sum(), group=g))
    expect(lhs, rhs, "sum_scatter: vjp and jvp are transposes", 1e-10, 1e-10)


# ---------------------------------------------------------------- groups and errors


def check_subgroups(g):
    """Layers over a group from split: each half of the processes shards on its own."""
    r, n = g.rank(), g.size()
    if n < 4:
        return
    sub = g.split(r % 2)
    m, sr = sub.size(), sub.rank()
    full = MLP(new_linear(8, 4 * m, True, 71), new_linear(4 * m, 3, True, 72))
    x = data((2, 8), 73 + r % 2)
    tp = MLP(
        nn.shard_linear(full.first, "all-to-sharded", group=sub),
        nn.shard_linear(full.second, "sharded-to-all", group=sub),
    )
    expect(tp(x), full(x), "MLP over a subgroup")
    gx = mx.grad(lambda a: tp(a).sum())(x)
    expect(gx, mx.grad(lambda a: full(a).sum())(x), "subgroup d/dx")
    assert tp.first.weight.shape == (4, 8)
    expect(tp.first.weight, rows(full.first.weight, sr, m, 0), "subgroup shard", 0, 0)


def check_errors(g):
    n = g.size()
    if n == 1:  # everything divides by 1 (test_nn_distributed.py checks with a fake group)
        return
    odd = 4 * n + 1
    expect_raises(lambda: nn.AllToShardedLinear(8, odd, group=g), str(odd), f"{n} devices")
    expect_raises(lambda: nn.ShardedToAllLinear(odd, 8, group=g), str(odd), f"{n} devices")
    expect_raises(lambda: nn.QuantizedAllToShardedLinear(64, odd, group=g), str(odd))
    expect_raises(lambda: nn.QuantizedShardedToAllLinear(64 * n + 1, 8, group=g), str(64 * n + 1))
    # input_dims / N not a multiple of the quantization group size.
    expect_raises(
        lambda: nn.QuantizedShardedToAllLinear(64, 8, group_size=64, group=g),
        f"({64 // n})",
        "group_size (64)",
    )
    lin = nn.Linear(odd, odd)
    expect_raises(lambda: nn.shard_linear(lin, "all-to-sharded", group=g), str(odd))
    expect_raises(lambda: nn.shard_linear(lin, "sharded-to-all", group=g), str(odd))
    expect_raises(
        lambda: nn.shard_inplace(lin, "all-to-sharded", group=g),
        "'weight'",
        f"({odd}, {odd})",
        f"the size {odd} is not divisible by {n}",
    )
    # Segments that do not split evenly over the group.
    qkv = nn.Linear(4, 3 * (2 * n + 1))
    expect_raises(
        lambda: nn.shard_inplace(qkv, "all-to-sharded", segments=3, group=g),
        "'weight'",
        f"segment [0, {2 * n + 1}) of size {2 * n + 1}",
    )
    expect_raises(
        lambda: nn.shard_linear(nn.Linear(4, 4 * n), "all-to-sharded", segments=[1], group=g),
        "segment [0, 1) of size 1 is not divisible",
    )
    expect_raises(lambda: nn.shard_linear(qkv, "col", group=g), "'col'", "all-to-sharded")
    # Nothing was changed by the failed in-place sharding.
    assert lin.weight.shape == (odd, odd)


CHECKS = {
    "forward": check_forward,
    "segments": check_segments,
    "gradients": check_mlp_gradients,
    "quantized": check_quantized,
    "shard_inplace": check_shard_inplace,
    "fully_shard": check_fully_shard,
    "subgroups": check_subgroups,
    "errors": check_errors,
    "vjps": check_vjps,
    "transforms": check_transforms,
}


def main():
    g = dist.init(strict=True)
    names = list(CHECKS) if "all" in WANT else WANT
    for name in names:
        CHECKS[name](g)
    print(f"PASS rank {g.rank()} of {g.size()}", flush=True)


if __name__ == "__main__":
    main()
