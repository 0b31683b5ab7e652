"""The NumPy-style ops MLX has (issue 14): each against NumPy in float64 on fresh random
inputs, with views, empty arrays, the dtypes the op claims and its errors."""

import math

import numpy as np
import pytest

import kiln.core as mx

rng = None  # set per test from conftest's rng (KILN_TEST_SEED and the test's id)


@pytest.fixture(autouse=True)
def _seeded_rng(rng):
    globals()["rng"] = rng

FLOATS = [mx.float32, mx.float16, mx.bfloat16, mx.float64]


def np_of(x):
    return np.array(x.astype(mx.float32) if x.dtype == mx.bfloat16 else x)


def rand(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape)


def tol(dtype):
    return {mx.float16: 2e-3, mx.bfloat16: 2e-2, mx.float64: 1e-12}.get(dtype, 2e-6)


# ---------------------------------------------------------------- constants and aliases


def test_constants():
    assert mx.pi == math.pi and mx.e == math.e
    assert mx.inf == math.inf and math.isnan(mx.nan)
    assert mx.newaxis is None
    assert abs(mx.euler_gamma - 0.5772156649015329) < 1e-16
    x = mx.arange(6).reshape(2, 3)
    assert x[:, mx.newaxis].shape == (2, 1, 3)


@pytest.mark.parametrize(
    "alias,name",
    [("acos", "arccos"), ("asin", "arcsin"), ("atan", "arctan"), ("acosh", "arccosh"),
     ("asinh", "arcsinh"), ("atanh", "arctanh")],
)
def test_trig_aliases(alias, name):
    lo, hi = (1.1, 3.0) if alias == "acosh" else (-0.9, 0.9)
    x = rand(3, 4, lo=lo, hi=hi)
    got = getattr(mx, alias)(mx.array(x, mx.float64))
    np.testing.assert_allclose(np.array(got), getattr(np, name)(x), rtol=1e-12)


def test_other_aliases():
    a, b = rand(3, 4), rand(3, 4, lo=0.5, hi=2)
    np.testing.assert_allclose(np.array(mx.atan2(mx.array(a), mx.array(b))), np.arctan2(a, b),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(mx.pow(mx.array(b, mx.float64), 3)), b ** 3)
    i = mx.array([1, 2, 4], mx.int32)
    assert mx.bitwise_left_shift(i, 2).tolist() == [4, 8, 16]
    assert mx.bitwise_right_shift(i, 1).tolist() == [0, 1, 2]
    assert mx.concat([i, i]).tolist() == [1, 2, 4, 1, 2, 4]
    assert mx.permute_dims(mx.zeros((2, 3, 4)), (2, 0, 1)).shape == (4, 2, 3)
    assert mx.cumulative_sum(i).tolist() == [1, 3, 7]
    assert mx.cumulative_prod(i).tolist() == [1, 2, 8]
    assert mx.positive(i).tolist() == [1, 2, 4]
    e = mx.empty((2, 3), mx.int16)
    assert e.shape == (2, 3) and e.dtype == mx.int16
    assert mx.empty_like(i).dtype == mx.int32


def test_asarray():
    a = mx.array([1, 2])
    assert mx.asarray(a) is a
    assert mx.asarray(a, dtype=mx.float16).dtype == mx.float16
    b = mx.asarray(np.arange(3.0))
    assert b.dtype == mx.float32 or b.dtype == mx.float64
    assert mx.asarray([1.5, 2.5]).tolist() == [1.5, 2.5]
    with pytest.raises(ValueError):
        mx.asarray([1, 2], copy=False)


def test_dtype_queries():
    assert repr(mx.bool_) == "kiln.core.bool"
    assert str(mx.float32) == "kiln.core.float32"
    assert mx.isdtype(mx.float32, "real floating")
    assert mx.isdtype(mx.int8, ("integral", mx.float32))
    assert not mx.isdtype(mx.uint8, "signed integer")
    assert mx.isdtype(mx.complex64, "numeric")
    with pytest.raises(ValueError):
        mx.isdtype(mx.int8, "whole")
    assert mx.result_type(mx.array(1), mx.float32) == mx.float32
    assert mx.result_type(mx.int8, mx.uint8) == mx.int16
    with pytest.raises(ValueError):
        mx.result_type(mx.array(1), 2.0)
    assert mx.can_cast(mx.int32, mx.float32)
    assert not mx.can_cast(mx.float32, mx.int32)
    assert mx.can_cast(mx.array([1], mx.int8), mx.int64)
    assert mx.broadcast_shapes((1, 2), (3, 1)) == (3, 2)
    assert mx.broadcast_shapes((5, 1, 4), (3, 1), (4,)) == (5, 3, 4)
    with pytest.raises(ValueError, match="broadcast_shapes"):
        mx.broadcast_shapes((1, 2), (3, 4))
    f = mx.finfo(mx.float16)
    assert f.max == 65504 and f.bits == 16 and f.smallest_normal == 2.0 ** -14
    assert repr(f) == "finfo(min=-65504, max=65504, dtype=float16)"
    assert mx.finfo(mx.bfloat16).eps == 2.0 ** -7
    assert repr(mx.iinfo(mx.int8)) == "iinfo(min=-128, max=127, dtype=int8)"
    with pytest.raises(ValueError):
        mx.finfo(mx.int32)


def test_namespaces():
    assert mx.metal.is_available() is False
    assert mx.cuda.is_available() == mx.is_available(mx.gpu)
    assert mx.metal.get_active_memory() == mx.get_active_memory()
    assert mx.device_count(mx.cpu) == 1
    assert mx.device_count(mx.gpu) >= (1 if mx.cuda.is_available() else 0)
    assert mx.set_wired_limit(0) == 0
    import kiln.core.metal  # noqa: F401  (importable as a module too)


def test_printoptions():
    x = mx.array([1.23456, -2.5])
    with mx.printoptions(precision=2):
        assert repr(x) == "array([1.23, -2.50], dtype=float32)"
        assert mx.get_printoptions().precision == 2
    assert mx.get_printoptions().precision == -1
    assert repr(x) == "array([1.23456, -2.5], dtype=float32)"


def test_thread_local_stream():
    import threading

    s = mx.new_thread_local_stream(mx.cpu)
    results = {}

    def work(i):
        y = mx.add(mx.array([i]), 1, stream=s)
        mx.eval(y)
        results[i] = y.item()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: i + 1 for i in range(4)}
    mx.clear_streams()


def test_array_iteration_and_at():
    x = mx.array([[1, 2], [3, 4]])
    assert [r.tolist() for r in x] == [[1, 2], [3, 4]]
    assert isinstance(iter(x), mx.ArrayIterator)
    a = mx.array([1, 2, 3])
    assert isinstance(a.at, mx.ArrayAt)
    assert a.at[mx.array([0, 0])].add(1).tolist() == [3, 2, 3]


def test_get_array_buffer_size():
    x = mx.zeros((3, 4))
    with pytest.raises(ValueError, match="evaluated"):
        mx.get_array_buffer_size(mx.ones((2,)) + 1)
    mx.eval(x)
    assert mx.get_array_buffer_size(x) == 48
    # Each buffer once and whole, through trees (MLX's semantics).
    with pytest.raises(ValueError, match="evaluated"):
        mx.get_array_buffer_size({"lazy": x + 1})
    view = x[:1]
    y = mx.ones((5,), dtype=mx.int16)
    mx.eval(view, y)
    assert mx.get_array_buffer_size() == 0
    assert mx.get_array_buffer_size(view) == 48
    assert mx.get_array_buffer_size(x, x, view) == 48
    assert mx.get_array_buffer_size({"a": x, "nested": (view, None, 3)}) == 48
    assert mx.get_array_buffer_size([x], y) == 48 + mx.get_array_buffer_size(y) >= 58
    assert mx.get_array_buffer_size(mx.array([])) == 0


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_at_extremum_gradient_at_ties(op):
    # As MLX: a value tied with the result gets the whole cotangent, source and update alike.
    def f(src, upd):
        return getattr(src.at[1], op)(upd)

    cot = mx.array([[4.0], [5.0], [6.0]])
    _, (gs, gu) = mx.vjp(f, [mx.array([[1.0], [2.0], [3.0]]), mx.array([[[2.0]]])], [cot])
    assert gs.tolist() == [[4.0], [5.0], [6.0]] and gu.tolist() == [[[5.0]]]
    # Strictly larger (maximum) or smaller (minimum) update: the update takes it all.
    upd = mx.array([[3.0]]) if op == "maximum" else mx.array([[0.5]])
    _, (gs, gu) = mx.vjp(f, [mx.array([1.0, 2.0, 3.0]), upd], [mx.array([4.0, 5.0, 6.0])])
    assert gs.tolist() == [4.0, 0.0, 6.0] and gu.tolist() == [[5.0]]
    # An advanced index with repeats: each tied update gets the cotangent.
    g = mx.grad(lambda u: getattr(mx.zeros((3,)).at[mx.array([0, 0, 2])], op)(u).sum())(
        mx.array([1.0, 1.0, 0.0]) * (1 if op == "maximum" else -1)
    )
    assert g.tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------- elementwise


@pytest.mark.parametrize("dtype", FLOATS)
def test_trunc(dtype):
    x = rand(5, 6, lo=-5, hi=5)
    got = mx.trunc(mx.array(x, dtype))
    assert got.dtype == dtype
    want = np.trunc(np_of(mx.array(x, dtype)))
    np.testing.assert_array_equal(np_of(got), want)
    i = mx.array([-3, 4], mx.int32)
    assert mx.trunc(i).tolist() == [-3, 4] and mx.trunc(i).dtype == mx.int32


def test_degrees_radians():
    x = rand(4, 3, lo=-7, hi=7)
    np.testing.assert_allclose(np.array(mx.degrees(mx.array(x, mx.float64))), np.degrees(x))
    np.testing.assert_allclose(np.array(mx.radians(mx.array(x, mx.float64))), np.radians(x))
    assert mx.degrees(mx.array([3])).dtype == mx.float32


def test_logical_xor_divmod():
    a, b = rng.integers(-3, 3, (4, 5)), rng.integers(-3, 3, (5,))
    np.testing.assert_array_equal(np.array(mx.logical_xor(mx.array(a), mx.array(b))),
                                  np.logical_xor(a, b))
    x, y = rng.integers(-20, 20, (6,)), rng.integers(1, 5, (6,)) * rng.choice([-1, 1], 6)
    q, r = mx.divmod(mx.array(x), mx.array(y))
    np.testing.assert_array_equal(np.array(q), x // y)
    np.testing.assert_array_equal(np.array(r), x % y)
    q, r = mx.divmod(mx.array([7.5, -7.5]), 2)
    assert q.tolist() == [3.0, -4.0] and r.tolist() == [1.5, 0.5]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.float64])
def test_nan_to_num(dtype):
    x = mx.array([np.nan, np.inf, -np.inf, 1.5], dtype)
    got = np.array(mx.nan_to_num(x))
    np.testing.assert_array_equal(got, np.nan_to_num(np.array(x)))
    got = mx.nan_to_num(x, nan=-1, posinf=7, neginf=-7).tolist()
    assert got == [-1, 7, -7, 1.5]
    assert mx.nan_to_num(mx.array([1, 2])).tolist() == [1, 2]


# ---------------------------------------------------------------- layout


def test_flip_roll():
    x = rand(3, 4, 5)
    a = mx.array(x)
    np.testing.assert_array_equal(np.array(mx.flip(a)), np.flip(x).astype(np.float32))
    np.testing.assert_array_equal(np.array(mx.flip(a, axis=1)), np.flip(x, 1).astype(np.float32))
    np.testing.assert_array_equal(np.array(mx.flip(a, axis=(0, -1))),
                                  np.flip(x, (0, -1)).astype(np.float32))
    np.testing.assert_array_equal(np.array(mx.roll(a, 7)), np.roll(x, 7).astype(np.float32))
    np.testing.assert_array_equal(np.array(mx.roll(a, -2, 1)), np.roll(x, -2, 1).astype(np.float32))
    np.testing.assert_array_equal(np.array(mx.roll(a, (1, 9), (0, 2))),
                                  np.roll(x, (1, 9), (0, 2)).astype(np.float32))
    t = a.transpose(2, 0, 1)  # a view
    np.testing.assert_array_equal(np.array(mx.roll(t, 3, 0)),
                                  np.roll(x.transpose(2, 0, 1), 3, 0).astype(np.float32))
    assert mx.roll(mx.zeros((0, 3)), 2, 0).shape == (0, 3)
    assert mx.flip(mx.zeros((0,))).shape == (0,)
    with pytest.raises(ValueError):
        mx.flip(a, axis=3)


def test_atleast_unflatten_unstack():
    assert mx.atleast_1d(mx.array(1)).shape == (1,)
    assert mx.atleast_2d(mx.array([1, 2])).shape == (1, 2)
    assert mx.atleast_3d(mx.array([1, 2])).shape == (1, 2, 1)
    assert mx.atleast_3d(mx.zeros((2, 3))).shape == (2, 3, 1)
    assert [y.shape for y in mx.atleast_2d(mx.array(1), mx.zeros((3,)))] == [(1, 1), (1, 3)]
    x = rand(2, 12, 3)
    assert mx.unflatten(mx.array(x), 1, (3, -1)).shape == (2, 3, 4, 3)
    np.testing.assert_array_equal(np.array(mx.unflatten(mx.array(x), -2, (4, 3))),
                                  x.reshape(2, 4, 3, 3).astype(np.float32))
    with pytest.raises(ValueError):
        mx.unflatten(mx.array(x), 1, (5, -1))
    with pytest.raises(ValueError):
        mx.unflatten(mx.array(x), 1, ())
    parts = mx.unstack(mx.array(x), axis=1)
    assert len(parts) == 12
    np.testing.assert_array_equal(np.array(parts[5]), x[:, 5].astype(np.float32))
    assert mx.matrix_transpose(mx.array(x)).shape == (2, 3, 12)
    assert mx.array(x).mT.shape == (2, 3, 12)
    with pytest.raises(ValueError):
        mx.matrix_transpose(mx.array([1, 2]))


def test_view():
    x = mx.array([1.0, -2.0], mx.float32)
    np.testing.assert_array_equal(np.array(mx.view(x, mx.uint32)),
                                  np.array([1.0, -2.0], np.float32).view(np.uint32))
    assert mx.view(x, mx.uint8).shape == (8,)
    b = mx.array([1, 2, 3, 4], mx.uint8)
    np.testing.assert_array_equal(np.array(mx.view(b, mx.uint16)),
                                  np.array([1, 2, 3, 4], np.uint8).view(np.uint16))
    assert x.view(mx.int32).dtype == mx.int32
    # A slice starting at an odd byte is viewed through an aligned copy.
    odd = mx.arange(9, dtype=mx.uint8)[1:]
    np.testing.assert_array_equal(np.array(mx.view(odd, mx.uint32)),
                                  np.arange(9, dtype=np.uint8)[1:].copy().view(np.uint32))
    # A transposed view is read in its logical (row-major) order.
    m = mx.arange(6, dtype=mx.int16).reshape(2, 3).T
    np.testing.assert_array_equal(np.array(mx.view(m, mx.uint16)),
                                  np.arange(6, dtype=np.int16).reshape(2, 3).T.copy().view(np.uint16))
    with pytest.raises(ValueError, match="view"):
        mx.view(mx.array(1.0), mx.uint8)
    with pytest.raises(ValueError, match="view"):
        mx.view(mx.array([1, 2, 3], mx.uint8), mx.uint16)


def test_meshgrid():
    a, b, c = rand(3), rand(4), rand(2)
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            got = mx.meshgrid(mx.array(a), mx.array(b), mx.array(c), indexing=indexing, sparse=sparse)
            want = np.meshgrid(a, b, c, indexing=indexing, sparse=sparse)
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.array(g), w.astype(np.float32))
    with pytest.raises(ValueError):
        mx.meshgrid(mx.array(a), indexing="xz")


def test_diagonal_diag_trace():
    x = rand(3, 4, 5)
    a = mx.array(x, mx.float64)
    for off, a1, a2 in [(0, 0, 1), (1, 0, 2), (-2, 2, 1), (3, 1, 2), (-7, 0, 1)]:
        np.testing.assert_array_equal(np.array(mx.diagonal(a, off, a1, a2)),
                                      np.diagonal(x, off, a1, a2))
        np.testing.assert_allclose(np.array(mx.trace(a, off, a1, a2)), np.trace(x, off, a1, a2))
    np.testing.assert_array_equal(np.array(a.diagonal(1)), np.diagonal(x, 1))
    v = rand(4)
    for k in (-2, 0, 3):
        np.testing.assert_array_equal(np.array(mx.diag(mx.array(v, mx.float64), k)), np.diag(v, k))
    np.testing.assert_array_equal(np.array(mx.diag(a[0], 1)), np.diag(x[0], 1))
    assert mx.trace(mx.arange(9).reshape(3, 3)).item() == 12
    assert mx.trace(mx.arange(9).reshape(3, 3), dtype=mx.float16).dtype == mx.float16
    with pytest.raises(ValueError):
        mx.diag(a)
    with pytest.raises(ValueError):
        mx.diagonal(a, 0, 1, 1)


def test_diff():
    x = rand(5, 6)
    for n, axis in [(1, -1), (2, 0), (0, 1), (7, 0)]:
        np.testing.assert_allclose(np.array(mx.diff(mx.array(x, mx.float64), n, axis)),
                                   np.diff(x, n, axis))
    assert mx.diff(mx.array([True, False, False])).tolist() == [True, False]
    with pytest.raises(ValueError):
        mx.diff(mx.array(x), -1)


def test_tri_windows():
    for n, m, k in [(3, 4, 1), (4, 4, 0), (2, 5, -1), (0, 3, 0)]:
        np.testing.assert_array_equal(np.array(mx.tri(n, m, k)), np.tri(n, m, k))
    assert mx.tri(3, dtype=mx.int32).dtype == mx.int32
    for name in ("bartlett", "blackman", "hamming", "hanning"):
        for M in (0, 1, 2, 7, 12):
            got = np.array(getattr(mx, name)(M))
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, getattr(np, name)(M), atol=1e-6)


# ---------------------------------------------------------------- reductions and scans


def test_count_nonzero_minmax():
    x = rng.integers(-2, 3, (4, 5))
    a = mx.array(x)
    assert mx.count_nonzero(a).item() == np.count_nonzero(x)
    np.testing.assert_array_equal(np.array(mx.count_nonzero(a, axis=1)), np.count_nonzero(x, 1))
    assert mx.count_nonzero(a, axis=(0, 1), keepdims=True).shape == (1, 1)
    lo, hi = mx.minmax(a, axis=1)
    np.testing.assert_array_equal(np.array(lo), x.min(1))
    np.testing.assert_array_equal(np.array(hi), x.max(1))
    lo, hi = mx.minmax(a)
    assert (lo.item(), hi.item()) == (x.min(), x.max())


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.int32, mx.uint8])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("inclusive", [True, False])
def test_cummax_cummin(dtype, reverse, inclusive):
    x = rng.integers(0, 50, (3, 17)).astype(np.float64) if dtype in (mx.int32, mx.uint8) else rand(3, 17)
    a = mx.array(x, dtype)
    xv = np_of(a).astype(np.float64)
    for name, acc, ident in [("cummax", np.maximum.accumulate, -np.inf),
                             ("cummin", np.minimum.accumulate, np.inf)]:
        got = getattr(mx, name)(a, axis=1, reverse=reverse, inclusive=inclusive)
        assert got.dtype == dtype
        src = xv[:, ::-1] if reverse else xv
        want = acc(src, axis=1)
        if not inclusive:
            want = np.concatenate([np.full((3, 1), ident), want[:, :-1]], axis=1)
        if reverse:
            want = want[:, ::-1]
        g = np_of(got).astype(np.float64)
        if not inclusive and dtype in (mx.int32, mx.uint8):
            # Integers start from the dtype's lowest / highest value.
            info = np.iinfo(np.int32 if dtype == mx.int32 else np.uint8)
            col = g[:, -1] if reverse else g[:, 0]
            assert (col == (info.min if name == "cummax" else info.max)).all()
            sl = slice(0, -1) if reverse else slice(1, None)
            np.testing.assert_array_equal(g[:, sl], want[:, sl])
        else:
            np.testing.assert_array_equal(g, want)


def test_cummax_flat_nan_and_grad():
    x = mx.array([[1.0, 3.0], [2.0, 5.0]])
    assert mx.cummax(x).tolist() == [1, 3, 3, 5]
    assert math.isnan(mx.cummax(mx.array([1.0, np.nan, 5.0])).tolist()[2])
    g = mx.grad(lambda v: mx.cummax(v).sum())(mx.array([1.0, 3.0, 2.0, 5.0]))
    assert g.tolist() == [1.0, 2.0, 0.0, 1.0]
    assert x.cummin(axis=0).tolist() == [[1, 3], [1, 3]]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64, mx.float16])
def test_logcumsumexp(dtype):
    x = rand(4, 9, lo=-30, hi=30)
    a = mx.array(x, dtype)
    xv = np_of(a).astype(np.float64)
    got = mx.logcumsumexp(a, axis=1)
    assert got.dtype == dtype
    np.testing.assert_allclose(np_of(got), np.logaddexp.accumulate(xv, axis=1),
                               rtol=max(tol(dtype), 1e-6), atol=1e-5)
    rev = mx.logcumsumexp(a, axis=0, reverse=True, inclusive=False)
    want = np.logaddexp.accumulate(xv[::-1], axis=0)[::-1]
    want = np.concatenate([want[1:], np.full((1, 9), -np.inf)])
    np.testing.assert_allclose(np_of(rev), want, rtol=max(tol(dtype), 1e-6), atol=1e-5)
    assert mx.logcumsumexp(mx.array([0, 1, 2])).dtype == mx.float32
    big = mx.logcumsumexp(mx.array([1000.0, 1000.0]))
    np.testing.assert_allclose(np.array(big), [1000.0, 1000.0 + math.log(2)], rtol=1e-6)


# ---------------------------------------------------------------- contractions


def contraction_close(got, a, b, axes):
    # float32 sums can cancel: the error bound scales with the sum of |a||b|, not the result.
    want = np.tensordot(a, b, axes)
    bound = np.tensordot(np.abs(a), np.abs(b), axes)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-6 * bound.max())


def test_tensordot_vecdot_kron():
    a, b = rand(2, 3, 4), rand(3, 4, 5)
    contraction_close(mx.tensordot(mx.array(a), mx.array(b)), a, b, 2)
    axes = ([1, 2], [0, 1])
    contraction_close(mx.tensordot(mx.array(a), mx.array(b), axes=axes), a, b, axes)
    np.testing.assert_allclose(np.array(mx.tensordot(mx.array(a), mx.array(b), axes=0)),
                               np.tensordot(a, b, axes=0), rtol=1e-5)
    with pytest.raises(ValueError):
        mx.tensordot(mx.array(a), mx.array(b), axes=([0], [0]))
    u, v = rand(3, 4), rand(4)
    contraction_close(mx.vecdot(mx.array(u), mx.array(v)), u, v, ([1], [0]))
    c = mx.array([1 + 2j, 3 - 1j])
    np.testing.assert_allclose(np.array(mx.vecdot(c, c)), np.vdot(np.array(c), np.array(c)))
    p, q = rand(2, 3), rand(4, 1, 2)
    np.testing.assert_allclose(np.array(mx.kron(mx.array(p), mx.array(q))), np.kron(p, q),
                               rtol=1e-6)


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("i,i->", [(6,)]*2),
    ("i,j->ij", [(3,), (4,)]),
    ("ijk,kl,lm->im", [(2, 3, 4), (4, 5), (5, 2)]),
    ("abc,cd,bde->ae", [(2, 3, 4), (4, 5), (3, 5, 6)]),
    ("iij->j", [(3, 3, 4)]),
    ("ij, jk -> ik", [(2, 2), (2, 2)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum(subscripts, shapes):
    ops = [rand(*s) for s in shapes]
    got = mx.einsum(subscripts, *[mx.array(o, mx.float64) for o in ops])
    want = np.einsum(subscripts, *ops)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-10, atol=1e-12)


def test_einsum_ints_and_errors():
    a = mx.array([[1, 2], [3, 4]])
    assert mx.einsum("ij,jk->ik", a, a).tolist() == [[7, 10], [15, 22]]
    for bad, ops in [("ij,jk->ik", [a]), ("ij->k", [a]), ("i$->i", [a]), ("ijk->i", [a]),
                     ("ij->ii", [a]), ("ij,jk->ik", [a, mx.zeros((3, 2))])]:
        with pytest.raises(ValueError, match="einsum"):
            mx.einsum(bad, *ops)


def test_einsum_path():
    ops = [rand(2, 3), rand(3, 4), rand(4, 5)]
    path, report = mx.einsum_path("ij,jk,kl->il", *[mx.array(o) for o in ops])
    np_path, _ = np.einsum_path("ij,jk,kl->il", *ops, optimize="greedy")
    assert path == [tuple(p) for p in np_path[1:]]
    assert "Optimized FLOP count" in report


@pytest.mark.parametrize("n", [1, 2, 8, 64, 512, 12, 24, 20, 40, 28, 112])
def test_hadamard_transform(n):
    x = rand(3, n)
    got = np.array(mx.hadamard_transform(mx.array(x, mx.float64)))
    # H_n's rows are orthogonal and +-1: ||Hx||^2 = n ||x||^2, and H_n H_n^T = n I.
    np.testing.assert_allclose(np.sum(got ** 2, -1), np.sum(x ** 2, -1), rtol=1e-10)
    H = np.array(mx.hadamard_transform(mx.eye(n, dtype=mx.float64), scale=1.0))
    assert set(np.unique(H)) <= {-1.0, 1.0}
    np.testing.assert_allclose(H @ H.T, n * np.eye(n), atol=1e-9)
    np.testing.assert_allclose(got, x @ H / np.sqrt(n), rtol=1e-10, atol=1e-12)


def test_hadamard_sylvester_and_errors():
    x = rand(2, 16)
    h = np.array([[1.0]])
    for _ in range(4):
        h = np.block([[h, h], [h, -h]])
    # float32 sums of 16 terms: errors relative to the terms' size, not to a cancelled result.
    want = 2.0 * x @ h
    np.testing.assert_allclose(np.array(mx.hadamard_transform(mx.array(x), scale=2.0)), want,
                               rtol=1e-5, atol=1e-6 * np.abs(2.0 * x).sum(-1).max())
    assert mx.hadamard_transform(mx.ones((4,), mx.int32)).dtype == mx.float32
    assert mx.hadamard_transform(mx.ones((4,), mx.float16)).dtype == mx.float16
    for n in (6, 24 * 3):
        with pytest.raises(ValueError, match="hadamard"):
            mx.hadamard_transform(mx.ones((n,)))


def test_gather_segmented_block_masked_mm():
    a, b = rand(4, 3, 5), rand(6, 5, 2)
    li, ri = rng.integers(0, 4, (7,)), rng.integers(0, 6, (7,))
    got = mx.gather_mm(mx.array(a), mx.array(b), mx.array(li), mx.array(ri))
    np.testing.assert_allclose(np.array(got), a[li] @ b[ri], rtol=1e-5, atol=1e-6)
    got = mx.gather_mm(mx.array(a), mx.array(b[:1]))
    np.testing.assert_allclose(np.array(got), a @ b[:1], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        mx.gather_mm(mx.array(a), mx.array(b), mx.array([0.5]))
    m, k = rand(3, 10), rand(10, 4)
    seg = np.array([[0, 3], [3, 10], [2, 2], [5, 9]])
    got = mx.segmented_mm(mx.array(m), mx.array(k), mx.array(seg))
    want = np.stack([m[:, s:e] @ k[s:e] for s, e in seg])
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-6)
    A, B = rand(70, 40), rand(40, 100)
    bs = 32
    mo = rng.random((3, 4)) < 0.5
    ml = rng.random((3, 2)) < 0.7
    mr = rng.uniform(0.5, 2, (2, 4))
    got = mx.block_masked_mm(mx.array(A), mx.array(B), bs, mx.array(mo), mx.array(ml), mx.array(mr))
    ex = lambda msk, r, c: np.kron(msk, np.ones((bs, bs)))[:r, :c]
    want = ((A * ex(ml, 70, 40)) @ (B * ex(mr, 40, 100))) * ex(mo, 70, 100)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError):
        mx.block_masked_mm(mx.array(A), mx.array(B), 16)


def test_fp8():
    vals = [1.0, 448, 500, -0.1, np.nan, np.inf, -np.inf, 0.0017, 1e-9, 240, -600, -0.0]
    bits = mx.to_fp8(mx.array(vals))
    assert bits.dtype == mx.uint8
    # MLX 0.32.4's CPU build gives these bits for the same values.
    assert bits.tolist() == [56, 126, 126, 157, 126, 126, 254, 1, 0, 119, 254, 128]
    back = mx.from_fp8(bits, mx.float32).tolist()
    assert back[:4] == [1.0, 448.0, 448.0, -0.1015625]
    # Every e4m3 code but NaN round-trips exactly, through every float dtype.
    codes = mx.array([c for c in range(256) if c & 0x7F != 0x7F], mx.uint8)
    for dt in (mx.float32, mx.float16, mx.bfloat16):
        assert mx.to_fp8(mx.from_fp8(codes, dt)).tolist() == codes.tolist()
    assert mx.from_fp8(codes).dtype == mx.bfloat16
    assert math.isnan(mx.from_fp8(mx.array([0x7F], mx.uint8), mx.float32).item())
    # Round to nearest even between neighbours 1.0 (0x38) and 1.125 (0x39).
    assert mx.to_fp8(mx.array([1.0625, 1.0626, 1.1875])).tolist() == [56, 57, 58]
    with pytest.raises(ValueError):
        mx.from_fp8(mx.array([1.0]))


def test_depends():
    a, b = mx.array([1.0, 2.0]), mx.array([3.0])
    (x,) = mx.depends([a], [b])
    assert x.tolist() == [1.0, 2.0]
    y = mx.depends(a, b * 2)
    assert y.tolist() == [1.0, 2.0]
    g = mx.grad(lambda v: mx.depends([v * 3], [v])[0].sum())(a)
    assert g.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("name", ["cummax", "cummin", "logcumsumexp"])
@pytest.mark.parametrize("reverse", [False, True])
def test_exclusive_scan_gradients(name, reverse):
    # Exclusive scans: output j combines the inputs before j (in scan order); the first is
    # the identity and passes nothing back. Reference: the inclusive scan of the input
    # shifted by one, whose gradient the finite-difference table checks.
    x = mx.array(rand(3, 6), mx.float64)
    w = mx.array(rand(3, 6), mx.float64)
    fn = getattr(mx, name)

    def exclusive(v):
        return (fn(v, axis=1, reverse=reverse, inclusive=False) * w)[:, 1:] if not reverse else \
            (fn(v, axis=1, reverse=reverse, inclusive=False) * w)[:, :-1]

    def shifted(v):
        part = v[:, :-1] if not reverse else v[:, 1:]
        r = fn(part, axis=1, reverse=reverse) * (w[:, 1:] if not reverse else w[:, :-1])
        return r

    g1 = mx.grad(lambda v: exclusive(v).sum())(x)
    g2 = mx.grad(lambda v: shifted(v).sum())(x)
    np.testing.assert_allclose(np.array(g1), np.array(g2), rtol=1e-12, atol=1e-12)
    _, t1 = mx.jvp(lambda v: exclusive(v), [x], [w])
    _, t2 = mx.jvp(lambda v: shifted(v), [x], [w])
    np.testing.assert_allclose(np.array(t1[0]), np.array(t2[0]), rtol=1e-12, atol=1e-12)
