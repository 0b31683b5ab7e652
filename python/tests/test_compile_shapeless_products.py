"""Shapeless compile of gathered and quantized matrix products (gather_mm, gather_qmm,
quantized_matmul) and of the ops they are built from (take, squeeze, expand_dims): one trace
serves inputs whose matrix and batch sizes change, against float64 NumPy references on fresh
random inputs; what a replay cannot mean raises."""

import numpy as np
import pytest

import kiln.core as mx

TOL = {mx.float32: 1e-4, mx.float16: 2e-2, mx.bfloat16: 5e-2}


def counted(fun):
    calls = [0]

    def wrapped(*args):
        calls[0] += 1
        return fun(*args)

    return wrapped, calls


def rand(rng, shape, dtype=mx.float32):
    return mx.array(rng.standard_normal(shape).astype(np.float32)).astype(dtype)


def f64(a):
    return np.array(a.astype(mx.float32)).astype(np.float64)


def gather_mm_ref(a, b, lhs, rhs):
    """NumPy's reading of gather_mm: index the stacks of matrices, then a batched product."""
    a = a.reshape(-1, *a.shape[-2:])
    b = b.reshape(-1, *b.shape[-2:])
    return a[lhs] @ b[rhs]


def check_close(actual, expected, dtype):
    assert actual.shape == expected.shape
    tol = TOL[dtype]
    np.testing.assert_allclose(f64(actual), expected, rtol=tol, atol=tol * 4)


# ---------------------------------------------------------------- gather_mm


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_gather_mm_follows_rows_and_batch_axes(rng, dtype):
    E, K, N = 6, 16, 5
    b = rand(rng, (E, K, N), dtype)
    lhs = mx.array(rng.integers(0, E, size=(3, 2)).astype(np.int32))
    rhs = mx.array(rng.integers(0, E, size=(3, 2)).astype(np.int32))
    fun, calls = counted(lambda x: mx.gather_mm(x, b, lhs, rhs))
    cfun = mx.compile(fun, shapeless=True)
    # One row first (size-1 axes are where a replay could pick the wrong axis to follow),
    # then more rows, then other batch axes of the same flattened size and rank.
    for shape in [(2, 3, 1, K), (2, 3, 7, K), (3, 2, 4, K), (1, 6, 1, K)]:
        x = rand(rng, shape, dtype)
        expected = gather_mm_ref(f64(x), f64(b), np.array(lhs), np.array(rhs))
        check_close(cfun(x), expected, dtype)
    assert calls[0] == 1


def test_gather_mm_matrix_and_transposed_operands(rng):
    E, K, N = 4, 8, 3
    bt = rand(rng, (E, N, K)).swapaxes(-1, -2)  # a non-contiguous view
    rhs = mx.array(rng.integers(0, E, size=(5,)).astype(np.uint32))
    fun, calls = counted(lambda x: mx.gather_mm(x, bt, None, rhs))
    cfun = mx.compile(fun, shapeless=True)
    for m in (1, 6, 2):
        x = rand(rng, (m, K))
        expected = f64(x) @ f64(bt)[np.array(rhs)]
        check_close(cfun(x), expected, mx.float32)
    # A transposed a, indexed on its own stack.
    lhs = mx.array(rng.integers(0, 3, size=(2, 2)).astype(np.int32))
    cf2 = mx.compile(
        lambda x: mx.gather_mm(x.swapaxes(-1, -2), bt, lhs, lhs), shapeless=True
    )
    for m in (4, 9):
        x = rand(rng, (3, K, m))
        got = cf2(x)
        expected = gather_mm_ref(
            np.swapaxes(f64(x), -1, -2), f64(bt), np.array(lhs), np.array(lhs)
        )
        check_close(got, expected, mx.float32)
    assert calls[0] == 1


def test_gather_mm_shapeless_replays_check_what_they_get(rng):
    b = rand(rng, (4, 16, 5))
    idx = mx.array([0, 3])
    cfun = mx.compile(lambda x: mx.gather_mm(x, b, idx, idx), shapeless=True)
    assert cfun(rand(rng, (4, 2, 16))).shape == (2, 2, 5)
    with pytest.raises(ValueError, match=r"\[matmul\]"):
        cfun(rand(rng, (4, 2, 8)))  # K no longer matches b
    with pytest.raises(IndexError, match=r"\[take\] Index 3"):
        mx.eval(cfun(rand(rng, (2, 2, 16))))  # the fixed indices now run past the stack
    # The process stays usable, and the trace still serves good inputs.
    x = rand(rng, (4, 3, 16))
    expected = gather_mm_ref(f64(x), f64(b), np.array(idx), np.array(idx))
    check_close(cfun(x), expected, mx.float32)


def test_gather_mm_shapeless_export_import(rng, tmp_path):
    b = rand(rng, (5, 8, 4))
    lhs = mx.array([[4, 0], [1, 1]])
    path = str(tmp_path / "gather_mm.kfn")
    mx.export_function(
        path,
        lambda x: mx.gather_mm(x, b, lhs, lhs),
        rand(rng, (5, 2, 8)),
        shapeless=True,
    )
    imported = mx.import_function(path)
    for m in (1, 6):
        x = rand(rng, (5, m, 8))
        expected = gather_mm_ref(f64(x), f64(b), np.array(lhs), np.array(lhs))
        check_close(imported(x)[0], expected, mx.float32)


# ---------------------------------------------------------------- gather_qmm, quantized_matmul


def quantized(rng, shape, bits=4, group_size=64):
    w = rand(rng, shape)
    qw, scales, biases = mx.quantize(w, group_size=group_size, bits=bits)
    return (
        qw,
        scales,
        biases,
        f64(mx.dequantize(qw, scales, biases, group_size=group_size, bits=bits)),
    )


@pytest.mark.parametrize("bits", [4, 8])
def test_gather_qmm_follows_rows_and_batch_axes(rng, bits):
    E, N, K = 5, 12, 64
    qw, scales, biases, wd = quantized(rng, (E, N, K), bits)
    lhs = mx.array(rng.integers(0, 6, size=(4,)).astype(np.int32))
    rhs = mx.array(rng.integers(0, E, size=(4,)).astype(np.int32))
    fun, calls = counted(
        lambda x: mx.gather_qmm(
            x,
            qw,
            scales,
            biases,
            lhs_indices=lhs,
            rhs_indices=rhs,
            transpose=True,
            bits=bits,
        )
    )
    cfun = mx.compile(fun, shapeless=True)
    for shape in [(2, 3, 1, K), (2, 3, 9, K), (3, 2, 2, K)]:
        x = rand(rng, shape)
        stack = f64(x).reshape(-1, shape[-2], K)
        expected = stack[np.array(lhs)] @ np.swapaxes(wd[np.array(rhs)], -1, -2)
        check_close(cfun(x), expected, mx.float32)
    assert calls[0] == 1


def test_gather_qmm_shapeless_replay_with_another_k_raises(rng):
    qw, scales, biases, _ = quantized(rng, (4, 8, 64))
    idx = mx.array([0, 3])
    cfun = mx.compile(
        lambda x: mx.gather_qmm(
            x, qw, scales, biases, lhs_indices=idx, rhs_indices=idx, transpose=True
        ),
        shapeless=True,
    )
    assert cfun(rand(rng, (4, 2, 64))).shape == (2, 2, 8)
    with pytest.raises(ValueError, match=r"\[quantized_matmul\] Last dimension of x"):
        cfun(rand(rng, (4, 2, 32)))


@pytest.mark.parametrize("transpose", [True, False])
def test_quantized_matmul_with_a_matrix_keeps_batch_axes_shapeless(rng, transpose):
    # w is (N, K) with transpose, else (K, N); quantization groups run along its last axis.
    qw, scales, biases, wd = quantized(rng, (16, 64) if transpose else (48, 64))
    k = 64 if transpose else 48
    w_math = wd.T if transpose else wd
    fun, calls = counted(
        lambda x: mx.quantized_matmul(x, qw, scales, biases, transpose=transpose)
    )
    cfun = mx.compile(fun, shapeless=True)
    # Rows and batch change (a trace with one row once replayed other shapes wrongly).
    for xs in [(2, 1, k), (2, 5, k), (1, 4, k), (4, 3, k)]:
        x = rand(rng, xs)
        check_close(cfun(x), f64(x) @ w_math, mx.float32)
    assert calls[0] == 1


# ---------------------------------------------------------------- the ops underneath


def test_take_follows_the_axes_it_takes_whole(rng):
    idx = mx.array(rng.integers(0, 7, size=(2, 3)).astype(np.int32))
    fun, calls = counted(lambda x: mx.take(x, idx, axis=1) + 1)
    cfun = mx.compile(fun, shapeless=True)
    for shape in [(1, 7, 1), (4, 7, 3), (2, 9, 5)]:
        x = rand(rng, shape)
        np.testing.assert_allclose(
            f64(cfun(x)), np.take(f64(x), np.array(idx), 1) + 1, rtol=1e-6
        )
    assert calls[0] == 1


def test_squeeze_and_expand_dims_follow_their_own_axes(rng):
    # Traced on all-ones shapes, where a reshape cannot tell which size-1 axis is which.
    sq = mx.compile(lambda x: mx.squeeze(x, 1) * 2, shapeless=True)
    ex = mx.compile(lambda x: mx.expand_dims(x, (0, 2)) * 2, shapeless=True)
    sq_all = mx.compile(lambda x: mx.squeeze(x) * 2, shapeless=True)
    assert sq(rand(rng, (1, 1, 1))).shape == (1, 1)
    assert ex(rand(rng, (1, 1))).shape == (1, 1, 1, 1)
    assert sq_all(rand(rng, (1, 3, 1))).shape == (3,)
    x = rand(rng, (5, 1, 4))
    np.testing.assert_array_equal(np.array(sq(x)), np.squeeze(np.array(x), 1) * 2)
    y = rand(rng, (3, 6))
    np.testing.assert_array_equal(
        np.array(ex(y)), np.expand_dims(np.array(y), (0, 2)) * 2
    )
    z = rand(rng, (1, 8, 1))
    np.testing.assert_array_equal(np.array(sq_all(z)), np.squeeze(np.array(z)) * 2)
