"""One rank of the multi-process tests of kiln.core.distributed (run by test_distributed.py
through mpirun or python -m kiln.launch, never collected by pytest itself).

Every rank draws every rank's inputs from a seed shared by the launch (the array of rank r
comes from seed + r), so each rank computes float64 NumPy references of the collectives
without communicating. Prints "PASS rank <r>" when every check holds; any failure raises,
which ends the launch with a non-zero status.

Usage: distributed_worker.py <seed> [checks...]   (checks: all, or a subset of the names
in CHECKS)
"""

import sys

import numpy as np

import kiln.core as mx

dist = mx.distributed

SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 0
WANT = sys.argv[2:] or ["all"]

DTYPES = [
    mx.bool_,
    mx.uint8,
    mx.uint16,
    mx.uint32,
    mx.uint64,
    mx.int8,
    mx.int16,
    mx.int32,
    mx.int64,
    mx.float16,
    mx.bfloat16,
    mx.float32,
    mx.float64,
    mx.complex64,
]

NP = {
    mx.bool_: np.bool_,
    mx.uint8: np.uint8,
    mx.uint16: np.uint16,
    mx.uint32: np.uint32,
    mx.uint64: np.uint64,
    mx.int8: np.int8,
    mx.int16: np.int16,
    mx.int32: np.int32,
    mx.int64: np.int64,
    mx.float16: np.float16,
    mx.bfloat16: np.float32,
    mx.float32: np.float32,
    mx.float64: np.float64,
    mx.complex64: np.complex64,
}


def rank_data(r, shape, dtype, salt=0):
    """Rank r's input (as NumPy, exactly representable in `dtype`)."""
    rng = np.random.default_rng([SEED, r, salt])
    if dtype == mx.bool_:
        return rng.random(shape) < 0.5
    if dtype == mx.complex64:
        return (
            rng.integers(-50, 50, shape) + 1j * rng.integers(-50, 50, shape)
        ).astype(np.complex64)
    if dtype in (mx.float16, mx.bfloat16, mx.float32, mx.float64):
        # Small integers and halves: sums are exact in every float type.
        return (rng.integers(-60, 60, shape) / 2).astype(
            np.float32 if dtype == mx.bfloat16 else NP[dtype]
        )
    info = np.iinfo(NP[dtype])
    lo, hi = max(info.min, -100), min(info.max, 100)
    return rng.integers(lo, hi, shape).astype(NP[dtype])


def as_mx(a, dtype):
    return (
        mx.array(a).astype(dtype) if dtype == mx.bfloat16 else mx.array(a, dtype=dtype)
    )


def to_np(x):
    if x.dtype == mx.bfloat16:
        x = x.astype(mx.float32)
    return np.array(x)


def expect(got, want, what):
    got = to_np(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if got.dtype == np.bool_ or np.issubdtype(got.dtype, np.integer):
        ok = np.array_equal(got, want.astype(got.dtype))
    else:
        ok = np.allclose(
            got.astype(np.complex128), want.astype(np.complex128), rtol=1e-6, atol=1e-6
        )
    assert ok, f"{what}: got {got!r}, want {want!r}"


def wrap(a, dtype):
    """The reference of an integer sum in `dtype` (two's-complement wrap, as the op)."""
    if dtype == mx.bool_:
        return a.astype(bool)
    if np.issubdtype(NP[dtype], np.integer):
        return a.astype(np.int64).astype(NP[dtype])
    return a


def check_reductions(g):
    n, r = g.size(), g.rank()
    for dtype in DTYPES:
        for shape in [(5, 3), (), (0, 4), (2, 3, 4)]:
            xs = [rank_data(q, shape, dtype) for q in range(n)]
            x = as_mx(xs[r], dtype)
            ref = np.sum(
                [
                    a.astype(np.complex128 if dtype == mx.complex64 else np.float64)
                    for a in xs
                ],
                axis=0,
            )
            if dtype == mx.bool_:
                ref = np.any(xs, axis=0)
            elif np.issubdtype(NP[dtype], np.integer):
                ref = np.sum([a.astype(np.int64) for a in xs], axis=0)
            out = dist.all_sum(x, group=g)
            assert out.dtype == dtype and out.shape == x.shape
            expect(out, wrap(ref, dtype), f"all_sum {dtype} {shape}")
            if dtype != mx.complex64:
                expect(
                    dist.all_max(x, group=g),
                    np.max(xs, axis=0),
                    f"all_max {dtype} {shape}",
                )
                expect(
                    dist.all_min(x, group=g),
                    np.min(xs, axis=0),
                    f"all_min {dtype} {shape}",
                )
    # grouped_all_sum: every dtype and shape above in one call, in one group.
    cases = [(d, sh) for d in DTYPES for sh in [(5, 3), (), (0, 4), (2, 3, 4)]]
    every = [[rank_data(q, sh, d) for q in range(n)] for d, sh in cases]
    outs = dist.grouped_all_sum([as_mx(xs[r], d) for (d, _), xs in zip(cases, every)], group=g)
    assert len(outs) == len(cases)
    for (d, sh), xs, out in zip(cases, every, outs):
        assert out.dtype == d and out.shape == sh, (d, sh, out.dtype, out.shape)
        if d == mx.bool_:
            ref = np.any(xs, axis=0)
        elif np.issubdtype(NP[d], np.integer):
            ref = np.sum([a.astype(np.int64) for a in xs], axis=0)
        else:
            wide = np.complex128 if d == mx.complex64 else np.float64
            ref = np.sum([a.astype(wide) for a in xs], axis=0)
        expect(out, wrap(ref, d), f"grouped_all_sum {d} {sh}")
    assert dist.grouped_all_sum([], group=g) == []
    # grouped_all_mean: the sums divided by n, with the dtypes of `sum / n` (integers and
    # bools give float32); half types round once more (NCCL scales before it sums).
    ins = [as_mx(xs[r], d) for (d, _), xs in zip(cases, every)]
    means = dist.grouped_all_mean(ins, group=g)
    assert len(means) == len(cases)
    for (d, sh), xs, x, out in zip(cases, every, ins, means):
        want_dtype = (x / n).dtype
        assert out.dtype == want_dtype and out.shape == sh, (d, sh, out.dtype, out.shape)
        wide = np.complex128 if d == mx.complex64 else np.float64
        if d == mx.bool_:  # a bool sum is a logical or
            ref = np.any(xs, axis=0) / n
        elif np.issubdtype(NP[d], np.integer):  # integer sums wrap, then divide
            ref = wrap(np.sum([a.astype(np.int64) for a in xs], axis=0), d) / n
        else:
            ref = np.sum([a.astype(wide) for a in xs], axis=0) / n
        tol = {mx.bfloat16: 1e-2, mx.float16: 2e-3}.get(d, 1e-6)
        got = to_np(out).astype(np.complex128)
        assert np.allclose(got, ref, rtol=tol, atol=tol), f"grouped_all_mean {d} {sh}: {got} {ref}"
    assert dist.grouped_all_mean([], group=g) == []
    # Non-contiguous and broadcast inputs.
    xs = [rank_data(q, (6, 8), mx.float32, 1) for q in range(n)]
    x = mx.array(xs[r])
    t, s = dist.grouped_all_sum([x.T, x[::2, 1::3]], group=g)
    expect(t, np.sum(xs, axis=0).T, "grouped_all_sum transposed")
    expect(s, np.sum(xs, axis=0)[::2, 1::3], "grouped_all_sum strided")
    x = mx.array(xs[r])
    expect(dist.all_sum(x.T, group=g), np.sum(xs, axis=0).T, "all_sum transposed")
    expect(
        dist.all_sum(x[::2, 1::3], group=g),
        np.sum(xs, axis=0)[::2, 1::3],
        "all_sum strided",
    )
    b = mx.broadcast_to(mx.array(xs[r][0]), (3, 8))
    expect(
        dist.all_max(b, group=g),
        np.broadcast_to(np.max(xs, axis=0)[0], (3, 8)),
        "all_max broadcast",
    )


def check_gather_scatter(g):
    n, r = g.size(), g.rank()
    for dtype in DTYPES:
        for shape in [(3, 2), (), (1,), (0, 2)]:
            xs = [rank_data(q, shape, dtype, 2) for q in range(n)]
            out = dist.all_gather(as_mx(xs[r], dtype), group=g)
            want = np.stack(xs) if shape == () else np.concatenate(xs)
            expect(out, want, f"all_gather {dtype} {shape}")
        xs = [rank_data(q, (2 * n, 3), dtype, 3) for q in range(n)]
        if dtype == mx.bool_:
            total = np.any(xs, axis=0)
        elif np.issubdtype(NP[dtype], np.integer):
            total = wrap(np.sum([a.astype(np.int64) for a in xs], axis=0), dtype)
        else:
            total = np.sum([a.astype(np.complex128) for a in xs], axis=0)
        out = dist.sum_scatter(as_mx(xs[r], dtype), group=g)
        expect(out, total[2 * r : 2 * r + 2], f"sum_scatter {dtype}")
    # Non-contiguous input.
    xs = [rank_data(q, (3, n * 2), mx.float32, 4) for q in range(n)]
    out = dist.sum_scatter(mx.array(xs[r]).T, group=g)
    expect(out, np.sum(xs, axis=0).T[2 * r : 2 * r + 2], "sum_scatter transposed")
    expect(
        dist.all_gather(mx.array(xs[r])[:, ::2], group=g),
        np.concatenate([a[:, ::2] for a in xs]),
        "all_gather strided",
    )


def exchange(g, x, dst, src):
    """Sends x to dst and receives the same shape from src without deadlock: blocking
    sends (large MPI messages, every NCCL message) need a receiver, so even ranks send
    first and odd ranks receive first."""
    if g.rank() % 2 == 0:
        mx.eval(dist.send(x, dst, group=g))
        got = dist.recv_like(x, src, group=g)
        mx.eval(got)
    else:
        got = dist.recv_like(x, src, group=g)
        mx.eval(got)
        mx.eval(dist.send(x, dst, group=g))
    return got


def check_send_recv(g):
    n, r = g.size(), g.rank()
    dst, src = (r + 1) % n, (r - 1) % n
    for dtype in DTYPES:
        mine = as_mx(rank_data(r, (4, 3), dtype, 5), dtype)
        got = exchange(g, mine, dst, src)
        assert got.dtype == dtype
        expect(got, rank_data(src, (4, 3), dtype, 5), f"recv {dtype}")
        s = dist.send(mine, dst, group=g)
        assert s.shape == mine.shape and s.dtype == dtype
    # recv with an explicit shape and dtype, and a large message.
    big = rank_data(r, (1 << 18,), mx.float32, 6)
    if r % 2 == 0:
        mx.eval(dist.send(mx.array(big), dst, group=g))
        got = dist.recv((1 << 18,), mx.float32, src, group=g)
        mx.eval(got)
    else:
        got = dist.recv((1 << 18,), mx.float32, src, group=g)
        mx.eval(got)
        s = dist.send(mx.array(big), dst, group=g)
        mx.eval(s)
        expect(s, big, "send returns its input")
    expect(got, rank_data(src, (1 << 18,), mx.float32, 6), "recv large")
    # Non-contiguous and empty arrays.
    x = mx.array(rank_data(r, (6, 4), mx.float32, 16))
    got = exchange(g, x.T[::2], dst, src)
    expect(got, rank_data(src, (6, 4), mx.float32, 16).T[::2], "recv of a strided send")
    expect(exchange(g, mx.zeros((0, 3)), dst, src), np.zeros((0, 3)), "recv empty")


def check_split(g):
    n, r = g.size(), g.rank()
    sub = g.split(r % 2)
    members = [q for q in range(n) if q % 2 == r % 2]
    assert sub.size() == len(members), (sub.size(), members)
    assert sub.rank() == members.index(r)
    xs = [rank_data(q, (4,), mx.float32, 7) for q in range(n)]
    expect(
        dist.all_sum(mx.array(xs[r]), group=sub),
        np.sum([xs[q] for q in members], axis=0),
        "split all_sum",
    )
    expect(
        dist.all_gather(mx.array(xs[r]), group=sub),
        np.concatenate([xs[q] for q in members]),
        "split all_gather",
    )
    # Keys reverse the order.
    rev = g.split(0, key=n - r)
    assert rev.size() == n and rev.rank() == n - 1 - r, (rev.size(), rev.rank())
    expect(
        dist.all_gather(mx.array([float(r)]), group=rev),
        np.arange(n)[::-1],
        "split key order",
    )


def check_transforms(g):
    n, r = g.size(), g.rank()
    xs = [rank_data(q, (3, 4), mx.float32, 8) for q in range(n)]
    x = mx.array(xs[r])
    w = mx.array(rank_data(0, (3, 4), mx.float32, 9))
    # all_sum: the cotangent passes through (each rank differentiates its own copy, as MLX).
    gx = mx.grad(lambda a: (dist.all_sum(a, group=g) * w).sum())(x)
    expect(gx, np.array(w), "grad all_sum")
    # jvp of all_sum: the sum of the tangents.
    ts = [rank_data(q, (3, 4), mx.float32, 10) for q in range(n)]
    _, (t_out,) = mx.jvp(lambda a: dist.all_sum(a, group=g), [x], [mx.array(ts[r])])
    expect(t_out, np.sum(ts, axis=0), "jvp all_sum")
    # grouped_all_sum: each cotangent passes through; tangents are summed; vmap and compile.
    w2 = mx.array(rank_data(0, (4,), mx.float32, 16))
    ga, gb = mx.grad(
        lambda a, b: sum((o * c).sum() for o, c in zip(dist.grouped_all_sum([a, b], group=g), (w, w2))),
        argnums=(0, 1),
    )(x, x[0])
    expect(ga, np.array(w), "grad grouped_all_sum 0")
    expect(gb, np.array(w2), "grad grouped_all_sum 1")
    _, (t0, t1) = mx.jvp(
        lambda a: dist.grouped_all_sum([a, 2 * a], group=g), [x], [mx.array(ts[r])]
    )
    expect(t0, np.sum(ts, axis=0), "jvp grouped_all_sum 0")
    expect(t1, 2 * np.sum(ts, axis=0), "jvp grouped_all_sum 1")
    (vb,) = mx.vmap(lambda a: dist.grouped_all_sum([a], group=g), in_axes=1)(mx.array(xs[r]))
    expect(vb, np.sum(xs, axis=0).T, "vmap grouped_all_sum")
    f = mx.compile(lambda a: [o + 1 for o in dist.grouped_all_sum([a * 2, a], group=g)])
    c0, c1 = f(x)
    expect(c0, 2 * np.sum(xs, axis=0) + 1, "compile grouped_all_sum 0")
    expect(c1, np.sum(xs, axis=0) + 1, "compile grouped_all_sum 1")
    # grouped_all_mean: cotangents divided by n; tangents averaged; vmap and compile.
    ga, gb = mx.grad(
        lambda a, b: sum((o * c).sum() for o, c in zip(dist.grouped_all_mean([a, b], group=g), (w, w2))),
        argnums=(0, 1),
    )(x, x[0])
    expect(ga, np.array(w) / n, "grad grouped_all_mean 0")
    expect(gb, np.array(w2) / n, "grad grouped_all_mean 1")
    _, (t0,) = mx.jvp(lambda a: dist.grouped_all_mean([a], group=g), [x], [mx.array(ts[r])])
    expect(t0, np.mean(ts, axis=0), "jvp grouped_all_mean")
    (vb,) = mx.vmap(lambda a: dist.grouped_all_mean([a], group=g), in_axes=1)(mx.array(xs[r]))
    expect(vb, np.mean(xs, axis=0).T, "vmap grouped_all_mean")
    f = mx.compile(lambda a: [o + 1 for o in dist.grouped_all_mean([a * 2, a], group=g)])
    c0, c1 = f(x)
    expect(c0, 2 * np.mean(xs, axis=0) + 1, "compile grouped_all_mean 0")
    expect(c1, np.mean(xs, axis=0) + 1, "compile grouped_all_mean 1")
    # A sum and a mean of the same array stay two nodes through compile's merging.
    f = mx.compile(lambda a: dist.grouped_all_sum([a], group=g)[0] - dist.grouped_all_mean([a], group=g)[0])
    expect(f(x), np.sum(xs, axis=0) - np.mean(xs, axis=0), "compile sum and mean")
    # all_gather: this rank's rows of the cotangent.
    wg = rank_data(0, (3 * n, 4), mx.float32, 11)
    gx = mx.grad(lambda a: (dist.all_gather(a, group=g) * mx.array(wg)).sum())(x)
    expect(gx, wg[3 * r : 3 * r + 3], "grad all_gather")
    # sum_scatter: the gathered cotangents.
    xs2 = mx.array(rank_data(r, (2 * n, 3), mx.float32, 12))
    ws = [rank_data(q, (2, 3), mx.float32, 13) for q in range(n)]
    gx = mx.grad(lambda a: (dist.sum_scatter(a, group=g) * mx.array(ws[r])).sum())(xs2)
    expect(gx, np.concatenate(ws), "grad sum_scatter")
    # all_max: the cotangent where this rank holds the maximum, shared among tied ranks.
    xm = mx.array(np.arange(6, dtype=np.float32) * (1 if r == 0 else -1) + r)
    every = [np.arange(6, dtype=np.float32) * (1 if q == 0 else -1) + q for q in range(n)]
    out = np.max(every, axis=0)
    ties = np.sum([a == out for a in every], axis=0)
    gx = mx.grad(lambda a: dist.all_max(a, group=g).sum())(xm)
    expect(gx, (np.array(xm) == out).astype(np.float32) / ties, "grad all_max")
    # vmap: a batch of all_sums and all_gathers, batch axis anywhere.
    xb = [rank_data(q, (5, 3), mx.float32, 14) for q in range(n)]
    out = mx.vmap(lambda a: dist.all_sum(a, group=g), in_axes=1)(mx.array(xb[r]))
    expect(out, np.sum(xb, axis=0).T, "vmap all_sum")
    out = mx.vmap(lambda a: dist.all_gather(a, group=g))(mx.array(xb[r]))
    expect(
        out,
        np.stack([np.concatenate([b[i] for b in xb]) for i in range(5)]),
        "vmap all_gather",
    )
    out = mx.vmap(lambda a: dist.all_gather(a, group=g), in_axes=1)(mx.array(xb[r]))
    expect(
        out,
        np.stack([np.concatenate([b[:, i] for b in xb]) for i in range(3)]),
        "vmap all_gather axis 1",
    )
    out = mx.vmap(lambda a: dist.all_gather(a[0], group=g))(mx.array(xb[r]))
    expect(
        out,
        np.stack([np.array([b[i, 0] for b in xb]) for i in range(5)]),
        "vmap all_gather scalars",
    )
    xsb = [rank_data(q, (4, 2 * n), mx.float32, 15) for q in range(n)]
    out = mx.vmap(lambda a: dist.sum_scatter(a, group=g))(mx.array(xsb[r]))
    expect(out, np.sum(xsb, axis=0)[:, 2 * r : 2 * r + 2], "vmap sum_scatter")
    # Inside compile.
    f = mx.compile(lambda a: dist.all_sum(a * 2, group=g) + 1)
    expect(f(x), 2 * np.sum(xs, axis=0) + 1, "compile all_sum")
    f = mx.compile(lambda a: dist.all_sum(a.T, group=g))  # its copy to row-major stays
    expect(f(x), np.sum(xs, axis=0).T, "compile all_sum transposed")
    # nn.average_gradients.
    import kiln.nn as nn

    grads = {"w": mx.array(xs[r]), "b": [mx.array(xs[r][0])]}
    avg = nn.average_gradients(grads)
    expect(avg["w"], np.mean(xs, axis=0), "average_gradients w")
    expect(avg["b"][0], np.mean(xs, axis=0)[0], "average_gradients b")
    avg = nn.average_gradients(grads, all_reduce_size=0)
    expect(avg["w"], np.mean(xs, axis=0), "average_gradients per array")
    # Buckets of mixed dtypes, and several buckets (a 64-byte limit: one or two arrays each).
    mixed = {"w": mx.array(xs[r]), "h": mx.array(xs[r]).astype(mx.float16), "v": mx.array(xs[r][1])}
    avg = nn.average_gradients(mixed, all_reduce_size=64)
    expect(avg["w"], np.mean(xs, axis=0), "average_gradients mixed w")
    assert avg["h"].dtype == mx.float16
    h = to_np(avg["h"]).astype(np.float64)
    assert np.allclose(h, np.mean(xs, axis=0), rtol=4e-3, atol=4e-3), "average_gradients f16"
    expect(avg["v"], np.mean(xs, axis=0)[1], "average_gradients mixed v")


def raises(exc, tag, fn):
    try:
        mx.eval(fn())
    except exc as e:
        assert tag in str(e), f"expected {tag} in {e}"
        return str(e)
    raise AssertionError(f"no {exc.__name__} with {tag}")


def check_errors(g):
    n, r = g.size(), g.rank()
    raises(ValueError, "[send]", lambda: dist.send(mx.array([1.0]), n, group=g))
    raises(ValueError, "[send]", lambda: dist.send(mx.array([1.0]), -1, group=g))
    raises(ValueError, "[send]", lambda: dist.send(mx.array([1.0]), r, group=g))
    raises(ValueError, "[recv]", lambda: dist.recv((2,), mx.float32, n + 3, group=g))
    raises(ValueError, "[recv]", lambda: dist.recv_like(mx.array([1.0]), r, group=g))
    raises(
        ValueError,
        "[sum_scatter]",
        lambda: dist.sum_scatter(mx.zeros((n + 1, 2)), group=g),
    )
    raises(
        ValueError, "[sum_scatter]", lambda: dist.sum_scatter(mx.array(1.0), group=g)
    )
    raises(ValueError, "[all_max]", lambda: dist.all_max(mx.array([1j]), group=g))
    raises(ValueError, "[split]", lambda: g.split(-2))
    if mx.default_device() == mx.cpu:
        # Shapes and dtypes that differ across ranks: every rank raises the same error.
        m = raises(
            ValueError, "[all_sum]", lambda: dist.all_sum(mx.zeros((3 + r,)), group=g)
        )
        assert "rank 0 has (3,)" in m and "rank 1 has (4,)" in m, m
        raises(
            ValueError,
            "[all_gather]",
            lambda: dist.all_gather(
                mx.zeros((2,), dtype=mx.float32 if r else mx.int32), group=g
            ),
        )
        raises(
            ValueError,
            "[sum_scatter]",
            lambda: dist.sum_scatter(mx.zeros((2 * n * (1 + r % 2),)), group=g),
        )
        # Different collectives on different ranks.
        m = raises(
            ValueError,
            "[all_",
            lambda: (dist.all_sum if r == 0 else dist.all_gather)(
                mx.zeros((2,)), group=g
            ),
        )
        assert "in all_gather" in m or "in all_sum" in m, m
        # A recv smaller than its send.
        if r == 0:
            mx.eval(dist.send(mx.zeros((5,)), 1, group=g))
        elif r == 1:
            raises(
                RuntimeError, "[recv]", lambda: dist.recv((4,), mx.float32, 0, group=g)
            )
        if r == 1:
            mx.eval(dist.send(mx.zeros((3,)), 0, group=g))
        elif r == 0:
            m = raises(
                RuntimeError, "[recv]", lambda: dist.recv((4,), mx.float32, 1, group=g)
            )
        # The group stays usable after the errors.
        expect(
            dist.all_sum(mx.array([1.0]), group=g), [float(n)], "all_sum after errors"
        )


CHECKS = {
    "reductions": check_reductions,
    "gather_scatter": check_gather_scatter,
    "send_recv": check_send_recv,
    "split": check_split,
    "transforms": check_transforms,
    "errors": check_errors,
}


def main():
    g = dist.init(strict=True)
    assert g.size() > 1, f"expected a launch of several processes, got {g}"
    assert dist.init() is not None and dist.init().size() == g.size()
    names = list(CHECKS) if "all" in WANT else WANT
    for name in names:
        CHECKS[name](g)
        print(f"ok {name} rank {g.rank()}", flush=True)
    print(f"PASS rank {g.rank()} of {g.size()}", flush=True)


if __name__ == "__main__":
    main()
