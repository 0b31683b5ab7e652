"""Selection and search ops against NumPy float64 references: partition and argpartition
(NumPy's partition property: the kth element in place, nothing larger before it, nothing
smaller after it), topk, median (np.median), searchsorted (np.searchsorted), unique
(np.unique with static sizes); every dtype, NaNs, ties, signed zeros, axis=None, negative
axes, non-contiguous views, empty arrays, k = 0 / k = n, errors with MLX's exception types,
and gradients. The MLX CPU build, when installed next to kiln's tests, is compared with too.
"""

import numpy as np
import pytest

import kiln.core as mx
from conftest import ALL_DTYPES, FLOAT_DTYPES, np_dtype, random_array, to_numpy

REAL_DTYPES = [d for d in ALL_DTYPES if d != mx.complex64]


def ties(rng, shape, dtype, special=False):
    """Values with many ties (small integers), and NaNs and -0.0 when `special`."""
    if dtype == mx.bool_:
        v = rng.random(shape) < 0.5
        return mx.array(v), v.astype(np.float64)
    lo = 0 if dtype in (mx.uint8, mx.uint16, mx.uint32, mx.uint64) else -4
    v = rng.integers(lo, 5, size=shape).astype(np.float64)
    if special and dtype in FLOAT_DTYPES:
        r = rng.random(shape)
        v[r < 0.1] = np.nan
        v[(r >= 0.1) & (r < 0.2)] = -0.0
    return mx.array(v, dtype=dtype), v


def sort_key(v):
    """NumPy's order (NaN last) as a float64 array."""
    return np.asarray(v, dtype=np.float64)


def check_partition_property(p, x, kth, axis):
    """p (NumPy) is a partition of x along axis around kth: the kth element is the sorted
    one, nothing before it orders after it, nothing after it orders before it, and p holds
    x's values."""
    p = np.moveaxis(sort_key(p), axis, -1)
    s = np.moveaxis(np.sort(sort_key(x), axis=axis), axis, -1)
    np.testing.assert_array_equal(p[..., kth], s[..., kth])
    pivot = p[..., kth : kth + 1]
    before, after = p[..., :kth], p[..., kth + 1 :]
    # NaN orders last: "x <= pivot" for every before-element, "x >= pivot" after.
    nan_pivot = np.isnan(pivot)
    assert np.all(np.isnan(before) <= nan_pivot) and np.all((before <= pivot) | nan_pivot)
    assert np.all(np.isnan(after) | (after >= pivot) | nan_pivot)
    np.testing.assert_array_equal(np.sort(p, axis=-1), s)


# ---------------------------------------------------------------- partition, argpartition


@pytest.mark.parametrize("dtype", REAL_DTYPES)
def test_partition_every_dtype(rng, dtype):
    np_dtype(dtype)
    x, xv = ties(rng, (4, 5, 30), dtype, special=True)
    for axis in (0, 1, 2, -1, -3):
        n = xv.shape[axis]
        for kth in (0, n - 1, n // 2, -1, -n):
            p = mx.partition(x, kth, axis=axis)
            assert p.dtype == dtype and p.shape == x.shape
            k = kth % n
            check_partition_property(to_numpy(p), xv, k, axis)
            i = mx.argpartition(x, kth, axis=axis)
            assert i.dtype == mx.uint32
            taken = np.take_along_axis(xv, np.array(i).astype(np.int64), axis=axis)
            np.testing.assert_array_equal(taken, sort_key(to_numpy(p)))
            # Every position exactly once.
            np.testing.assert_array_equal(
                np.sort(np.array(i), axis=axis),
                np.broadcast_to(
                    np.arange(n).reshape([-1 if d == axis % 3 else 1 for d in range(3)]),
                    xv.shape,
                ),
            )


def test_partition_flattened_and_views(rng):
    x, xv = random_array(rng, (6, 8, 10), mx.float32)
    p = mx.partition(x, 17, axis=None)
    assert p.shape == (480,)
    check_partition_property(np.array(p), xv.reshape(-1), 17, 0)
    for view, ref in (
        (x.transpose(2, 0, 1), xv.transpose(2, 0, 1)),
        (x[::-2, 1::3, ::3], xv[::-2, 1::3, ::3]),
        (
            mx.broadcast_to(x[:, :1, :], (6, 7, 10)),
            np.broadcast_to(xv[:, :1, :], (6, 7, 10)),
        ),
    ):
        for axis in (0, 1, 2):
            k = ref.shape[axis] // 2
            check_partition_property(np.array(mx.partition(view, k, axis=axis)), ref, k, axis)
    # A scalar with axis=None; long rows (many GPU blocks per row).
    assert mx.partition(mx.array(2.0), 0, axis=None).tolist() == [2.0]
    y, yv = random_array(rng, (2, 70001), mx.float32, -1000, 1000)
    check_partition_property(np.array(mx.partition(y, 35000)), yv, 35000, 1)


def test_partition_matches_numpy_exactly_without_ties(rng):
    x, xv = random_array(rng, (3, 50), mx.float64)
    for kth in (0, 7, 49):
        np.testing.assert_array_equal(
            np.sort(np.array(mx.partition(x, kth))[:, :kth], axis=1),
            np.sort(np.partition(xv, kth)[:, :kth], axis=1),
        )


# ---------------------------------------------------------------- topk


@pytest.mark.parametrize("dtype", [mx.float32, mx.int32, mx.uint8, mx.float16, mx.float64])
def test_topk(rng, dtype):
    x, xv = ties(rng, (6, 33), dtype, special=True)
    for k in (0, 1, 5, 33):
        t = mx.topk(x, k)
        assert t.shape == (6, k) and t.dtype == dtype
        want = np.sort(sort_key(xv), axis=1)[:, 33 - k :]
        np.testing.assert_array_equal(np.sort(sort_key(to_numpy(t)), axis=1), want)
    t = mx.topk(x, 3, axis=0)
    np.testing.assert_array_equal(
        np.sort(sort_key(to_numpy(t)), axis=0), np.sort(sort_key(xv), axis=0)[-3:]
    )
    flat = mx.topk(x, 4, axis=None)
    assert flat.shape == (4,)
    np.testing.assert_array_equal(np.sort(sort_key(to_numpy(flat))), np.sort(xv.reshape(-1))[-4:])


def test_topk_long_row_and_nan(rng):
    x, xv = random_array(rng, (300000,), mx.float32)
    t = np.sort(np.array(mx.topk(x, 10)))
    np.testing.assert_array_equal(t, np.sort(xv)[-10:])
    assert np.isnan(np.array(mx.topk(mx.array([1.0, np.nan, 3.0]), 1))).all()


# ---------------------------------------------------------------- median


@pytest.mark.parametrize("dtype", REAL_DTYPES)
def test_median(rng, dtype):
    np_dtype(dtype)
    x, xv = ties(rng, (4, 5, 6), dtype, special=True)
    want_dtype = dtype if dtype in FLOAT_DTYPES else mx.float32
    tol = 1e-2 if dtype in (mx.float16, mx.bfloat16) else 1e-6
    for axis in (None, 0, 1, -1, (0, 2), [2, 0], (0, 1, 2)):
        for keepdims in (False, True):
            m = mx.median(x, axis=axis, keepdims=keepdims)
            assert m.dtype == want_dtype
            want = np.median(
                xv,
                axis=tuple(axis) if isinstance(axis, list) else axis,
                keepdims=keepdims,
            )
            np.testing.assert_allclose(
                to_numpy(m).astype(np.float64), want, rtol=tol, atol=tol, equal_nan=True
            )


def test_median_values_and_views(rng):
    assert mx.median(mx.array([1, 2, 3, 4])).item() == 2.5
    assert mx.median(mx.array([1.0, np.inf, -np.inf, 3.0])).item() == 2.0
    assert mx.median(mx.array([1.0, np.inf, np.inf, 3.0])).item() == np.inf
    assert np.isnan(mx.median(mx.array([1.0, np.nan, 3.0])).item())
    assert mx.median(mx.array(3.5)).item() == 3.5
    assert mx.median(mx.zeros((2, 0)), axis=0).shape == (0,)
    assert mx.median(mx.array([1, 2, 4, 5], mx.float16) * 10000).item() == 30000
    x, xv = random_array(rng, (6, 8, 41), mx.float64)
    for view, ref in (
        (x.transpose(2, 0, 1), xv.transpose(2, 0, 1)),
        (x[::-2, 1::3], xv[::-2, 1::3]),
    ):
        np.testing.assert_allclose(np.array(mx.median(view, axis=1)), np.median(ref, axis=1))
    for n in (200000, 200001):
        y, yv = random_array(rng, (n,), mx.float32, -50, 50)
        np.testing.assert_allclose(mx.median(y).item(), np.median(yv), rtol=1e-6)


# ---------------------------------------------------------------- searchsorted


@pytest.mark.parametrize("dtype", REAL_DTYPES)
def test_searchsorted(rng, dtype):
    np_dtype(dtype)
    s, sv = ties(rng, (40,), dtype, special=True)
    s = mx.sort(s)
    sv = np.sort(sv)
    v, vv = ties(rng, (3, 7), dtype, special=True)
    for side in ("left", "right"):
        r = mx.searchsorted(s, v, side=side)
        assert r.dtype == mx.uint32 and r.shape == (3, 7)
        np.testing.assert_array_equal(np.array(r), np.searchsorted(sv, vv, side=side))


def test_searchsorted_promotion_and_edges():
    a = mx.array([1, 2, 2, 4])
    assert mx.searchsorted(a, mx.array([0, 2, 3, 5])).tolist() == [0, 1, 3, 4]
    assert mx.searchsorted(a, mx.array([0, 2, 3, 5]), side="right").tolist() == [
        0,
        3,
        3,
        4,
    ]
    assert mx.searchsorted(mx.array([1, 2, 3], mx.uint8), mx.array([-1, 300])).tolist() == [0, 3]
    assert mx.searchsorted(mx.array([1, 2, 3]), mx.array([1.5, 2.5])).tolist() == [1, 2]
    nan_seq = mx.array([1.0, 2.0, np.nan])
    assert mx.searchsorted(nan_seq, mx.array([0, 2, 5, np.nan])).tolist() == [
        0,
        1,
        2,
        2,
    ]
    assert mx.searchsorted(nan_seq, mx.array([0, 2, 5, np.nan]), side="right").tolist() == [
        0,
        2,
        2,
        3,
    ]
    assert mx.searchsorted(a, mx.array(3)).item() == 3
    assert mx.searchsorted(mx.array([], mx.float32), mx.array([0.0, 2.0])).tolist() == [
        0,
        0,
    ]
    assert mx.searchsorted(a, mx.zeros((0, 2), mx.int32)).shape == (0, 2)
    seq = mx.arange(0, 40, 3, dtype=mx.float32)
    vals = mx.array(np.linspace(-2, 42, 20).reshape(4, 5).T)
    np.testing.assert_array_equal(
        np.array(mx.searchsorted(seq, vals)),
        np.searchsorted(np.arange(0, 40, 3), np.array(vals)),
    )


# ---------------------------------------------------------------- unique


def unique_ref(v, size, fill=None):
    """np.unique with MLX's static size (NaNs kept apart, as NumPy's equal_nan=False)."""
    flat = np.asarray(v, dtype=np.float64).reshape(-1)
    order = np.argsort(flat, kind="stable")
    s = flat[order]
    start = np.ones(len(s), dtype=bool)
    start[1:] = (s[1:] != s[:-1]) | np.isnan(s[1:])
    groups = np.cumsum(start) - 1
    vals, idx = s[start], order[start]
    counts = np.bincount(groups, minlength=len(vals)) if len(s) else np.zeros(0, np.int64)
    inverse = np.empty(len(flat), np.int64)
    inverse[order] = np.minimum(groups, max(size - 1, 0))
    out_v = np.full(size, fill if fill is not None else (vals[0] if len(vals) else 0), float)
    out_i = np.full(size, idx[0] if len(idx) else 0)
    out_c = np.zeros(size, np.int64)
    m = min(size, len(vals))
    out_v[:m], out_i[:m], out_c[:m] = vals[:m], idx[:m], counts[:m]
    return out_v, out_i, inverse.reshape(np.shape(v)), out_c


@pytest.mark.parametrize("dtype", REAL_DTYPES)
def test_unique(rng, dtype):
    np_dtype(dtype)
    x, xv = ties(rng, (5, 9), dtype, special=True)
    for size in (0, 1, 4, 9, 60):
        for fill in (None, 1):
            vals, index, inverse, counts = mx.unique(x, size, True, True, True, fill_value=fill)
            assert vals.dtype == dtype and index.dtype == mx.uint32
            assert inverse.dtype == mx.uint32 and counts.dtype == mx.int32
            wv, wi, winv, wc = unique_ref(xv, size, fill)
            np.testing.assert_array_equal(sort_key(to_numpy(vals)), wv)
            np.testing.assert_array_equal(np.array(index), wi)
            np.testing.assert_array_equal(np.array(inverse), winv)
            np.testing.assert_array_equal(np.array(counts), wc)


def test_unique_against_numpy_and_mlx_examples(rng):
    x, xv = random_array(rng, (3000,), mx.int32, int_range=50)
    vals, index, inverse, counts = mx.unique(x, 101, True, True, True, fill_value=0)
    nv, ni, ninv, nc = np.unique(xv, return_index=True, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(np.array(vals)[: len(nv)], nv)
    np.testing.assert_array_equal(np.array(index)[: len(nv)], ni)
    np.testing.assert_array_equal(np.array(inverse), ninv.reshape(-1))
    np.testing.assert_array_equal(np.array(counts)[: len(nv)], nc)
    assert int(mx.sum(counts > 0).item()) == len(nv)
    a = mx.array([2, 1, 2, 3, 1])
    assert mx.unique(a, 3).tolist() == [1, 2, 3]
    assert mx.unique(a, 5).tolist() == [1, 2, 3, 1, 1]
    v, i, inv, c = mx.unique(a, 4, True, True, True, fill_value=0)
    assert (v.tolist(), i.tolist(), inv.tolist(), c.tolist()) == (
        [1, 2, 3, 0],
        [1, 0, 3, 1],
        [1, 0, 1, 2, 0],
        [2, 2, 1, 0],
    )
    v, inv = mx.unique(a, 2, return_inverse=True)
    assert inv.tolist() == [1, 0, 1, 1, 0]
    v, c = mx.unique(a, 2, return_counts=True)
    assert c.tolist() == [2, 2]
    m = mx.unique(mx.array([[2, 1], [2, 3]]), 4, True, True, True, fill_value=mx.array(9.5))
    assert m[0].tolist() == [1, 2, 3, 9] and m[2].shape == (2, 2)
    e = mx.unique(mx.array([], mx.int32), 2, True, True, True, fill_value=7)
    assert (e[0].tolist(), e[1].tolist(), e[2].shape, e[3].tolist()) == (
        [7, 7],
        [0, 0],
        (0,),
        [0, 0],
    )
    assert mx.unique(mx.array([True, False, True]), 3).tolist() == [False, True, False]


# ---------------------------------------------------------------- errors


def test_errors_have_mlx_types():
    x = mx.zeros((2, 3))
    with pytest.raises(ValueError, match=r"\[topk\]"):
        mx.topk(x, 4)
    with pytest.raises(ValueError, match=r"\[topk\]"):
        mx.topk(x, -1)
    with pytest.raises(IndexError, match=r"\[topk\]"):
        mx.topk(x, 1, axis=2)
    with pytest.raises(IndexError, match=r"\[topk\]"):
        mx.topk(mx.array(3.0), 1)
    with pytest.raises(ValueError, match=r"\[partition\]"):
        mx.partition(x, 3)
    with pytest.raises(ValueError, match=r"\[partition\]"):
        mx.partition(x, -4)
    with pytest.raises(IndexError, match=r"\[partition\]"):
        mx.partition(x, 0, axis=-3)
    with pytest.raises(ValueError, match=r"\[argpartition\]"):
        mx.argpartition(x, 2, axis=0)
    with pytest.raises(ValueError, match=r"\[median\]"):
        mx.median(mx.zeros((0,)))
    with pytest.raises(ValueError, match=r"\[median\]"):
        mx.median(x, axis=[0, 0])
    with pytest.raises(IndexError, match=r"\[median\]"):
        mx.median(x, axis=2)
    with pytest.raises(ValueError, match=r"\[searchsorted\]"):
        mx.searchsorted(x, x)
    with pytest.raises(ValueError, match=r"\[searchsorted\]"):
        mx.searchsorted(mx.array([1, 2]), mx.array([1]), side="middle")
    with pytest.raises(ValueError, match=r"\[unique\]"):
        mx.unique(x, -1)
    with pytest.raises(ValueError, match=r"\[unique\]"):
        mx.unique(x, 4, fill_value=mx.array([9, 9]))
    with pytest.raises(ValueError, match=r"\[unique\]"):
        mx.unique(mx.array([], mx.int32), 2)
    with pytest.raises(TypeError):
        mx.partition(x, 1.5)
    assert mx.topk(mx.array([1.0, 3.0, 2.0]), 1).tolist() == [3.0]


# ---------------------------------------------------------------- transforms (MLX's values)


def test_gradients():
    a = mx.array([[1, 2, 6, 4, 5], [9, 5, 6, 7, 8]], mx.float32)
    out = mx.vjp(lambda x: mx.topk(x, 2), (a,), (mx.ones((2, 2)),))[1][0]
    assert out.tolist() == [[0, 0, 1, 0, 1], [1, 0, 0, 0, 1]]
    assert mx.grad(lambda x: mx.topk(x, 1).sum())(mx.array([5.0, 1, 5])).tolist() == [
        0,
        0,
        1,
    ]
    g = mx.grad(lambda x: (mx.partition(x, 1) * mx.arange(4)).sum())
    # The stable partition [1, 2, 5, 3]: each element gets its position.
    assert g(mx.array([1.0, 5, 3, 2])).tolist() == [0, 2, 3, 1]
    med = mx.grad(lambda x: mx.median(x))
    assert med(mx.array([1.0, 3, 2, 4])).tolist() == [0, 0.5, 0.5, 0]
    assert med(mx.array([2.0, 2, 2, 2])).tolist() == [0, 0.5, 0.5, 0]
    assert med(mx.array([2.0, 2, 2])).tolist() == [0, 1, 0]
    assert med(mx.array([5.0, 1, np.nan])).tolist() == [0, 0, 0]
    x = mx.array([3.0, 1, 3, 2])
    assert mx.grad(lambda y: mx.unique(y, 5).sum())(x).tolist() == [1, 3, 0, 1]
    assert mx.grad(lambda y: mx.unique(y, 5, fill_value=7.0).sum())(x).tolist() == [
        1,
        1,
        0,
        1,
    ]
    assert mx.grad(lambda y: mx.unique(y, 2).sum())(x).tolist() == [0, 1, 0, 1]
    zero = mx.grad(lambda y: mx.searchsorted(y[0], y[1]).astype(mx.float32).sum())
    assert zero(mx.array([[1.0, 2], [3, 4]])).tolist() == [[0, 0], [0, 0]]


def test_vmap():
    x = mx.array([[1.0, 5, 3, 2], [4, 4, 0, 9]])
    assert mx.vmap(lambda r: mx.topk(r, 2))(x).shape == (2, 2)
    assert np.allclose(np.array(mx.vmap(lambda r: mx.median(r))(x)), [2.5, 4])
    assert mx.vmap(lambda r: mx.partition(r, 1))(x).tolist() == [
        [1, 2, 5, 3],
        [0, 4, 4, 9],
    ]
    u = mx.vmap(lambda r: mx.unique(r, 3, True, True, True))(mx.array([[1, 5, 5, 2], [4, 4, 0, 9]]))
    assert u[0].tolist() == [[1, 2, 5], [0, 4, 9]]
    assert u[2].tolist() == [[0, 2, 2, 1], [1, 1, 0, 2]]
    seq = mx.array([1.0, 2, 3])
    assert mx.vmap(lambda v: mx.searchsorted(seq, v))(x).tolist() == [
        [0, 3, 2, 1],
        [3, 3, 0, 3],
    ]
    with pytest.raises(ValueError, match=r"\[searchsorted\]"):
        mx.vmap(lambda s: mx.searchsorted(s, mx.array([1.0])))(mx.zeros((3, 4)))


# ---------------------------------------------------------------- complex (MLX's order)


def test_complex_orders_by_real_then_imaginary(rng):
    nan = float("nan")
    assert mx.median(mx.array([1 + 2j, 3 + 0j, 2 + 5j])).item() == 2 + 5j
    assert mx.median(mx.array([1 + 2j, 3 + 0j, 2 + 5j, 0j])).item() == 1.5 + 3.5j
    assert np.isnan(mx.median(mx.array([complex(1, 0), complex(nan, 0), 0j])).item())
    assert sorted(
        mx.topk(mx.array([1 + 2j, 3 + 0j, 2 + 5j]), 2).tolist(),
        key=lambda z: (z.real, z.imag),
    ) == [2 + 5j, 3 + 0j]
    assert mx.partition(mx.array([1 + 2j, 3 + 0j, 2 + 5j]), 1).tolist() == [
        1 + 2j,
        2 + 5j,
        3 + 0j,
    ]
    assert mx.unique(mx.array([1 + 2j, 3 + 0j, 1 + 2j]), 3).tolist() == [
        1 + 2j,
        3 + 0j,
        1 + 2j,
    ]
    assert mx.searchsorted(mx.array([1 + 2j, 3 + 0j]), mx.array([2 + 0j])).tolist() == [1]
    # Against NumPy's order (lexicographic) on values without NaN.
    v = (rng.integers(0, 3, 200) + 1j * rng.integers(-2, 3, 200)).astype(np.complex64)
    x = mx.array(v)
    for kth in (0, 50, 199):
        p = np.array(mx.partition(x, kth))
        s = np.sort(v)
        assert p[kth] == s[kth]
        assert np.all(np.sort(p[:kth]) == s[:kth]) and np.all(np.sort(p[kth:]) == s[kth:])
    vals, counts = mx.unique(x, 15, return_counts=True)
    nv, nc = np.unique(v, return_counts=True)
    np.testing.assert_array_equal(np.array(vals)[: len(nv)], nv)
    np.testing.assert_array_equal(np.array(counts)[: len(nv)], nc)
    np.testing.assert_allclose(mx.median(x).item(), np.median(np.sort(v)[99:101]))


# ---------------------------------------------------------------- the GPU equals the CPU


@pytest.mark.skipif(not mx.is_available(mx.gpu), reason="no GPU")
def test_gpu_matches_cpu(rng):
    for shape, dtype in (
        ((1 << 20,), mx.float32),
        ((300, 4099), mx.float32),
        ((64, 5000), mx.float64),
    ):
        x, _ = random_array(rng, shape, dtype, -300, 300)
        n = shape[-1]
        for fn in (
            lambda s: mx.partition(x, n // 3, stream=s),
            lambda s: mx.argpartition(x, n - 2, stream=s),
            lambda s: mx.topk(x, 8, stream=s),
            lambda s: mx.median(x, axis=-1, stream=s),
            lambda s: mx.argsort(x, stream=s),
            lambda s: mx.unique(x, 1000, True, True, True, stream=s)[2],
        ):
            np.testing.assert_array_equal(np.array(fn(mx.gpu)), np.array(fn(mx.cpu)))
