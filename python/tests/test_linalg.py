"""kiln.core.linalg against NumPy (and SciPy where NumPy has no counterpart) in float64:
norms of every order, factorizations, inverses and solvers, batched, on non-contiguous
views, in float32 and float64, with errors as MLX raises them and gradients checked by
finite differences. Runs on the default device (KILN_DEVICE=gpu: the GPU)."""

import itertools

import numpy as np
import pytest

import kiln.core as mx


def marr(x, *args, **kwargs):
    """A kiln array of x, keeping NumPy's float64 (kiln converts it to float32 by default)."""
    if not args and not kwargs and np.asarray(x).dtype == np.float64:
        return mx.array(x, dtype=mx.float64)
    return mx.array(x, *args, **kwargs)


try:
    import scipy.linalg as sla
except ImportError:  # the SciPy references skip without it
    sla = None

TOL = {mx.float32: 2e-4, mx.float64: 1e-10}
DTYPES = [mx.float32, mx.float64]
NP = {mx.float32: np.float32, mx.float64: np.float64}


def close(got, want, dtype, scale=1.0):
    got = np.array(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=TOL[dtype] * scale, atol=TOL[dtype] * scale)


def rand(rng, shape, dtype=mx.float64):
    return rng.standard_normal(shape).astype(NP[dtype])


def spd(rng, shape, dtype):
    a = rand(rng, shape, mx.float64)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(NP[dtype])


def transposed_view(x):
    """x's values in a non-contiguous kiln array (a transposed copy, transposed back)."""
    return mx.swapaxes(marr(np.ascontiguousarray(np.swapaxes(x, -1, -2))), -1, -2)


# ---------------------------------------------------------------- norms

VECTOR_ORDS = [None, 0.5, 0, 1, 2, 3, -1, -0.5, float("inf"), float("-inf")]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf")]


@pytest.mark.parametrize("dtype", DTYPES)
def test_norm_every_order(rng, dtype):
    x = rand(rng, (3, 4, 5), dtype)
    xm = marr(x)
    for ax in range(3):
        for o in VECTOR_ORDS:
            for keep in (False, True):
                want = np.linalg.norm(x.astype(np.float64), ord=o, axis=ax, keepdims=keep)
                close(mx.linalg.norm(xm, ord=o, axis=ax, keepdims=keep), want, dtype, 10)
    for axes in itertools.permutations(range(3), 2):
        for o in MATRIX_ORDS:
            for keep in (False, True):
                want = np.linalg.norm(x.astype(np.float64), ord=o, axis=axes, keepdims=keep)
                close(mx.linalg.norm(xm, ord=o, axis=list(axes), keepdims=keep), want, dtype, 10)
    # No axis: the flattened 2-norm; an order with no axis for a 1-d or 2-d array.
    close(mx.linalg.norm(xm), np.linalg.norm(x.astype(np.float64)), dtype, 10)
    close(
        mx.linalg.norm(xm, keepdims=True),
        np.linalg.norm(x.astype(np.float64), keepdims=True),
        dtype,
        10,
    )
    m = x[0]
    for o in MATRIX_ORDS:
        close(
            mx.linalg.norm(marr(m), ord=o), np.linalg.norm(m.astype(np.float64), ord=o), dtype, 10
        )
    close(
        mx.linalg.matrix_norm(xm, 2),
        np.linalg.norm(x.astype(np.float64), 2, axis=(-2, -1)),
        dtype,
        10,
    )


def test_norm_integer_and_complex(rng):
    x = np.arange(1, 7).reshape(2, 3)
    out = mx.linalg.norm(marr(x), ord=1)
    assert out.dtype == mx.float32
    np.testing.assert_allclose(out, np.linalg.norm(x, 1), rtol=1e-6)
    c = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    for o in [None, 1, 2, float("inf")]:
        np.testing.assert_allclose(
            mx.linalg.norm(marr(c), ord=o, axis=1), np.linalg.norm(c, o, axis=1), rtol=1e-5
        )
    np.testing.assert_allclose(mx.linalg.norm(marr(c), "fro"), np.linalg.norm(c, "fro"), rtol=1e-5)
    assert mx.linalg.norm(marr(c)).dtype == mx.float32


def test_norm_errors():
    x = mx.ones((2, 3, 4))
    with pytest.raises(ValueError, match=r"\[linalg::norm\] Invalid ord value 'abc'"):
        mx.linalg.norm(x, ord="abc", axis=(0, 1))
    with pytest.raises(ValueError, match="only supported for matrices"):
        mx.linalg.norm(mx.ones(3), ord="fro")
    with pytest.raises(ValueError, match="too many axes"):
        mx.linalg.norm(x, axis=[0, 1, 2])
    with pytest.raises(ValueError, match="too many axes"):
        mx.linalg.norm(x, ord=2)
    with pytest.raises(ValueError, match="Invalid ord 3"):
        mx.linalg.norm(mx.ones((2, 2)), ord=3)
    with pytest.raises(ValueError):
        mx.linalg.norm(x, axis=5)


# ---------------------------------------------------------------- inverses, solvers


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_batched_and_views(rng, dtype):
    a = rand(rng, (2, 3, 5, 5), dtype) + 5 * np.eye(5, dtype=NP[dtype])
    close(mx.linalg.inv(marr(a)), np.linalg.inv(a.astype(np.float64)), dtype, 10)
    close(mx.linalg.inv(transposed_view(a)), np.linalg.inv(a.astype(np.float64)), dtype, 10)
    # A broadcast batch: every matrix the same buffer.
    b = mx.broadcast_to(marr(a[0, 0]), (4, 5, 5))
    close(
        mx.linalg.inv(b),
        np.broadcast_to(np.linalg.inv(a[0, 0].astype(np.float64)), (4, 5, 5)),
        dtype,
        10,
    )
    for n in (1, 7, 33):
        m = rand(rng, (n, n), dtype) + n * np.eye(n, dtype=NP[dtype])
        close(mx.linalg.inv(marr(m)), np.linalg.inv(m.astype(np.float64)), dtype, 100)
    assert mx.linalg.inv(mx.zeros((0, 3, 3), dtype=dtype)).shape == (0, 3, 3)
    assert mx.linalg.inv(mx.zeros((0, 0), dtype=dtype)).shape == (0, 0)


@pytest.mark.parametrize("upper", [False, True])
def test_tri_inv_and_cholesky_inv(rng, upper):
    a = rand(rng, (3, 6, 6)) + 6 * np.eye(6)
    t = np.triu(a) if upper else np.tril(a)
    got = np.array(mx.linalg.tri_inv(marr(a), upper=upper))
    np.testing.assert_allclose(got, np.linalg.inv(t), rtol=1e-10, atol=1e-12)
    assert np.all((np.tril(got, -1) if upper else np.triu(got, 1)) == 0)
    s = spd(rng, (3, 6, 6), mx.float64)
    factor = mx.linalg.cholesky(marr(s), upper=upper)
    close(mx.linalg.cholesky_inv(factor, upper=upper), np.linalg.inv(s), mx.float64, 100)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve(rng, dtype):
    a = rand(rng, (3, 4, 4), dtype) + 4 * np.eye(4, dtype=NP[dtype])
    b = rand(rng, (3, 4, 2), dtype)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    close(mx.linalg.solve(marr(a), marr(b)), np.linalg.solve(a64, b64), dtype, 10)
    # 1-d right-hand side against a batch; broadcasting batch axes; views.
    v = rand(rng, (4,), dtype)
    close(
        mx.linalg.solve(marr(a), marr(v)),
        np.linalg.solve(a64, v.astype(np.float64)[None, :, None])[..., 0],
        dtype,
        10,
    )
    bb = rand(rng, (2, 1, 4, 3), dtype)
    close(
        mx.linalg.solve(transposed_view(a), marr(bb)),
        np.linalg.solve(a64, bb.astype(np.float64)),
        dtype,
        10,
    )
    # Promotion: an integer right-hand side.
    out = mx.linalg.solve(marr(a[0]), marr([1, 2, 3, 4]))
    assert out.dtype == dtype


@pytest.mark.parametrize("upper", [False, True])
def test_solve_triangular(rng, upper):
    a = rand(rng, (2, 5, 5)) + 5 * np.eye(5)
    t = np.triu(a) if upper else np.tril(a)
    b = rand(rng, (2, 5, 3))
    close(
        mx.linalg.solve_triangular(marr(a), marr(b), upper=upper),
        np.linalg.solve(t, b),
        mx.float64,
        10,
    )
    if sla is not None:
        want = sla.solve_triangular(t[0], b[0, :, 0], lower=not upper)
        close(
            mx.linalg.solve_triangular(marr(a[0]), marr(b[0, :, 0]), upper=upper),
            want,
            mx.float64,
            10,
        )


def test_singular_errors():
    sing = marr([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(RuntimeError, match=r"\[linalg::inv\].*singular"):
        mx.eval(mx.linalg.inv(sing))
    with pytest.raises(RuntimeError, match=r"\[linalg::solve\].*singular"):
        mx.eval(mx.linalg.solve(sing, marr([1.0, 2.0])))
    with pytest.raises(RuntimeError, match=r"\[linalg::tri_inv\].*singular"):
        mx.eval(mx.linalg.tri_inv(marr([[0.0, 0.0], [2.0, 1.0]])))
    with pytest.raises(RuntimeError, match=r"\[linalg::cholesky\].*not positive definite"):
        mx.eval(mx.linalg.cholesky(marr([[1.0, 2.0], [2.0, 1.0]])))
    # The process and the stream stay usable.
    np.testing.assert_allclose(mx.linalg.inv(marr([[2.0, 0.0], [0.0, 4.0]])), [[0.5, 0], [0, 0.25]])
    # An exactly singular matrix is not an LU error; slogdet reports it.
    s, l = mx.linalg.slogdet(marr(np.ones((4, 4), np.float32)))
    assert s.item() == 0 and l.item() == float("-inf")


def test_argument_errors():
    with pytest.raises(ValueError, match=r"\[linalg::inv\] Inverses are only defined for square"):
        mx.linalg.inv(mx.zeros((2, 3)))
    with pytest.raises(ValueError, match="float32 or float64"):
        mx.linalg.inv(marr([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match="float32 or float64"):
        mx.linalg.cholesky(mx.eye(2, dtype=mx.float16))
    with pytest.raises(ValueError, match=">= 2 dimensions"):
        mx.linalg.qr(marr([0.0, 1.0]))
    with pytest.raises(ValueError, match=">= 2 dimensions"):
        mx.linalg.svd(marr(0.0))
    with pytest.raises(ValueError, match="square"):
        mx.linalg.eigh(mx.zeros((3, 2)))
    with pytest.raises(ValueError, match="UPLO"):
        mx.linalg.eigh(mx.eye(2), UPLO="X")
    with pytest.raises(ValueError, match="promote to float32 or float64"):
        mx.linalg.solve(marr([[1, 0], [0, 1]]), marr([1, 2]))
    with pytest.raises(ValueError, match="must match"):
        mx.linalg.solve(mx.eye(3), mx.ones((2,)))
    with pytest.raises(ValueError, match="Complex inputs"):
        mx.linalg.det(mx.eye(2, dtype=mx.complex64))
    with pytest.raises(ValueError, match="size 2 or 3"):
        mx.linalg.cross(mx.ones(4), mx.ones(4))


# ---------------------------------------------------------------- factorizations


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(rng, dtype, upper):
    s = spd(rng, (2, 3, 6, 6), dtype)
    want = np.linalg.cholesky(s.astype(np.float64))
    if upper:
        want = np.swapaxes(want, -1, -2)
    close(mx.linalg.cholesky(marr(s), upper=upper), want, dtype, 10)
    # Only the named triangle is read.
    junk = s.copy()
    if upper:
        junk += np.tril(np.full_like(s, 7.0), -1)
    else:
        junk += np.triu(np.full_like(s, 7.0), 1)
    close(mx.linalg.cholesky(marr(junk), upper=upper), want, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (1, 1)])
def test_qr(rng, dtype, shape):
    a = rand(rng, shape, dtype)
    q, r = mx.linalg.qr(marr(a))
    k = min(shape[-2:])
    assert q.shape == shape[:-1] + (k,) and r.shape == shape[:-2] + (k, shape[-1])
    q, r = np.array(q, np.float64), np.array(r, np.float64)
    close(q @ r, a.astype(np.float64), dtype, 10)
    close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), dtype, 10)
    assert np.all(np.tril(r, -1) == 0)
    # Same factors as LAPACK's (NumPy's), up to the signs of the columns of Q.
    qn, rn = np.linalg.qr(a.astype(np.float64))
    close(np.abs(q), np.abs(qn), dtype, 100)


@pytest.mark.parametrize("dtype", DTYPES + [mx.complex64])
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 5, 5)])
def test_svd(rng, dtype, shape):
    npd = np.complex64 if dtype == mx.complex64 else NP[dtype]
    a = rng.standard_normal(shape).astype(npd)
    if dtype == mx.complex64:
        a = a + 1j * rng.standard_normal(shape).astype(np.float32)
    u, s, vt = mx.linalg.svd(marr(a))
    m, n = shape[-2:]
    k = min(m, n)
    assert (
        u.shape == shape[:-2] + (m, m)
        and vt.shape == shape[:-2] + (n, n)
        and s.shape == shape[:-2] + (k,)
    )
    assert s.dtype == (mx.float32 if dtype == mx.complex64 else dtype)
    tol = mx.float32 if dtype == mx.complex64 else dtype
    sn = np.linalg.svd(
        a.astype(np.complex128 if dtype == mx.complex64 else np.float64), compute_uv=False
    )
    close(s, sn, tol, 10)
    un, vtn = np.array(u), np.array(vt)
    rec = (un[..., :, :k] * np.array(s)[..., None, :]) @ vtn[..., :k, :]
    close(rec, a, tol, 20)
    close(mx.linalg.svd(marr(a), compute_uv=False), sn, tol, 10)


def test_svd_edge_cases():
    u, s, vt = mx.linalg.svd(mx.zeros((2, 0)))
    assert u.shape == (2, 2) and s.shape == (0,) and vt.shape == (0, 0)
    np.testing.assert_array_equal(u, np.eye(2))
    s = mx.linalg.svd(marr([[float("nan"), 0.0], [0.0, 1.0]]), compute_uv=False)
    assert np.all(np.isnan(np.array(s)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(rng, dtype, uplo):
    a = rand(rng, (3, 6, 6), dtype)
    sym = (a + np.swapaxes(a, -1, -2)) / 2
    # Junk in the triangle that is not read.
    junk = sym + (np.triu(np.ones_like(sym), 1) if uplo == "L" else np.tril(np.ones_like(sym), -1))
    w, v = mx.linalg.eigh(marr(junk), UPLO=uplo)
    wn = np.linalg.eigvalsh(sym.astype(np.float64))
    close(w, wn, dtype, 10)
    vn = np.array(v, np.float64)
    close(sym.astype(np.float64) @ vn, vn * np.array(w, np.float64)[..., None, :], dtype, 20)
    close(mx.linalg.eigvalsh(marr(junk), UPLO=uplo), wn, dtype, 10)


def test_eigh_complex(rng):
    a = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    h = (a + a.conj().T).astype(np.complex64)
    w, v = mx.linalg.eigh(marr(h))
    assert w.dtype == mx.float32 and v.dtype == mx.complex64
    np.testing.assert_allclose(w, np.linalg.eigvalsh(h.astype(np.complex128)), rtol=1e-4, atol=1e-4)
    vn = np.array(v)
    np.testing.assert_allclose(h @ vn, vn * np.array(w)[None, :], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES + [mx.complex64])
def test_eig(rng, dtype):
    npd = np.complex64 if dtype == mx.complex64 else NP[dtype]
    a = rng.standard_normal((2, 5, 5)).astype(npd)
    w, v = mx.linalg.eig(marr(a))
    assert w.dtype == mx.complex64 and v.dtype == mx.complex64
    wn, vn = np.array(w, np.complex128), np.array(v, np.complex128)
    np.testing.assert_allclose(
        a.astype(np.complex128) @ vn, vn * wn[..., None, :], rtol=1e-4, atol=1e-4
    )
    np.testing.assert_allclose(np.linalg.norm(vn, axis=-2), 1.0, rtol=1e-5)
    # Every eigenvalue of the reference has a match (order is LAPACK's, pairs may swap).
    got = np.array(mx.linalg.eigvals(marr(a)))
    for g, r in zip(got, np.linalg.eigvals(a.astype(np.complex128))):
        assert np.abs(g[:, None] - r[None, :]).min(axis=1).max() < 1e-4


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (4, 6), (6, 4), (2, 3, 3)])
def test_lu(rng, dtype, shape):
    a = rand(rng, shape, dtype)
    p, l, u = mx.linalg.lu(marr(a))
    assert p.dtype == mx.uint32
    pl = np.take_along_axis(
        np.array(l, np.float64), np.array(p)[..., None].astype(np.int64), axis=-2
    )
    close(pl @ np.array(u, np.float64), a.astype(np.float64), dtype, 10)
    lu, piv = mx.linalg.lu_factor(marr(a))
    if sla is not None and len(shape) == 2:
        lun, pivn = sla.lu_factor(a.astype(np.float64))
        close(lu, lun, dtype, 100)
        np.testing.assert_array_equal(np.array(piv), pivn)


@pytest.mark.parametrize("dtype", DTYPES)
def test_det_slogdet_pinv(rng, dtype):
    for n in (1, 2, 3, 4, 7):
        a = rand(rng, (3, n, n), dtype)
        a64 = a.astype(np.float64)
        close(mx.linalg.det(marr(a)), np.linalg.det(a64), dtype, 100)
        s, l = mx.linalg.slogdet(marr(a))
        sn, ln = np.linalg.slogdet(a64)
        np.testing.assert_array_equal(np.array(s), sn)
        close(l, ln, dtype, 100)
    assert mx.linalg.det(marr([[1, 2], [3, 4]])).item() == -2.0
    assert mx.linalg.det(mx.zeros((0, 0))).item() == 1.0
    a = rand(rng, (2, 5, 3), dtype)
    close(mx.linalg.pinv(marr(a)), np.linalg.pinv(a.astype(np.float64)), dtype, 100)


def test_cross(rng):
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((2, 1, 3))
    np.testing.assert_allclose(mx.linalg.cross(marr(a), marr(b)), np.cross(a, b), rtol=1e-12)
    a2 = rng.standard_normal((3, 2))
    # 2-vectors are 3-vectors with a zero third component; along axis 0 of transposed views.
    np.testing.assert_allclose(
        mx.linalg.cross(marr(a2), marr(b[0, 0])),
        np.cross(np.pad(a2, ((0, 0), (0, 1))), b[0, 0]),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        mx.linalg.cross(marr(a.T), marr(a[::-1].T), axis=0), np.cross(a, a[::-1]).T, rtol=1e-12
    )
    assert mx.linalg.cross(marr([1, 2, 3]), marr([4, 5, 6])).tolist() == [-3, 6, -3]


# ---------------------------------------------------------------- gradients


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        g[idx] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize(
    "name,fn",
    [
        ("inv", lambda m: mx.linalg.inv(m + 4 * mx.eye(4, dtype=mx.float64))),
        ("cholesky", lambda m: mx.linalg.cholesky(m @ m.T + 4 * mx.eye(4, dtype=mx.float64))),
        ("eigh", lambda m: mx.linalg.eigh(m + m.T)[0] ** 3),
        ("svd_values", lambda m: mx.linalg.svd(m, compute_uv=False)),
        ("qr", lambda m: mx.linalg.qr(m)[1] ** 2),
        (
            "solve",
            lambda m: mx.linalg.solve(
                m + 4 * mx.eye(4, dtype=mx.float64), mx.ones((4, 2), dtype=mx.float64)
            ),
        ),
        ("det", lambda m: mx.linalg.det(m + 2 * mx.eye(4, dtype=mx.float64))),
        ("norm_nuc", lambda m: mx.linalg.norm(m, "nuc")),
    ],
)
def test_gradients_match_finite_differences(rng, name, fn):
    x = rng.standard_normal((4, 4))
    w = rng.standard_normal(np.shape(np.array(fn(marr(x)))))

    def loss(v):
        return float(mx.sum(fn(marr(v)) * marr(w)).item())

    g = mx.grad(lambda v: mx.sum(fn(v) * marr(w)))(marr(x))
    np.testing.assert_allclose(np.array(g), numeric_grad(loss, x), rtol=1e-5, atol=1e-6)


# eig's derivatives (MLX has none) against central differences of NumPy's complex128 eig.
# Inputs have eigenvalues near 1 +- 2i, 4 and 7 and vectors with one dominant component;
# both sides sort the pairs and turn each vector's largest component real and positive
# (geev's normalization up to the sign of real vectors, which may jump between inputs).
_EIG_BASE = np.array([[1, 4, 0, 0], [-1, 1, 0, 0], [0, 0, 4, 0], [0, 0, 0, 7.0]])


# eig's output order and eigenvector phases are LAPACK's choice, so the tests
# compare a canonical form: eigenvalues sorted by a well-separated key, and each
# vector's phase fixed by its component `k` (chosen once, at the unperturbed
# input, so a near-tie between two components cannot pick different rows).
def _sort_key_np(w):
    return np.argsort(w.real - 0.5 * w.imag, axis=-1)


def _canonical_np(w, v, k=None):
    order = _sort_key_np(w)
    w = np.take_along_axis(w, order, -1)
    v = np.take_along_axis(v, order[..., None, :], -1)
    if k is None:
        k = np.abs(v).argmax(-2)[..., None, :]
    vk = np.take_along_axis(v, k, -2)
    return w, v * np.conj(vk) / np.abs(vk)


def _canonical_mx(w, v, k):
    order = mx.argsort(mx.real(w) - 0.5 * mx.imag(w), axis=-1)
    w = mx.take_along_axis(w, order, -1)
    v = mx.take_along_axis(v, mx.broadcast_to(mx.expand_dims(order, -2), v.shape), -1)
    vk = mx.take_along_axis(v, mx.array(k.astype(np.int32)), -2)
    return w, v * mx.conj(vk) / mx.abs(vk).astype(mx.complex64)


@pytest.mark.parametrize("dtype", [mx.float64, mx.float32, mx.complex64])
def test_eig_gradients_match_finite_differences(rng, dtype):
    cplx = dtype == mx.complex64
    x = _EIG_BASE + 0.2 * rng.standard_normal((2, 4, 4))
    if cplx:
        x = x + 0.2j * rng.standard_normal((2, 4, 4))
    x = x.astype(np.complex64 if cplx else NP[dtype])
    cw = rng.standard_normal((2, 4)) + 1j * rng.standard_normal((2, 4))
    cv = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    x128 = x.astype(np.complex128 if cplx else np.float64)
    w0, v0 = np.linalg.eig(x128)
    k = np.abs(np.take_along_axis(v0, _sort_key_np(w0)[..., None, :], -1)).argmax(-2)[..., None, :]

    def loss_np(a):
        w, v = _canonical_np(*np.linalg.eig(a), k)
        return (np.conj(cw) * w).real.sum() + (np.conj(cv) * v).real.sum()

    def loss_mx(a):
        w, v = _canonical_mx(*mx.linalg.eig(a), k)
        return mx.sum(mx.real(mx.conj(mx.array(cw.astype(np.complex64))) * w)) + mx.sum(
            mx.real(mx.conj(mx.array(cv.astype(np.complex64))) * v)
        )

    want = numeric_grad(loss_np, x128)
    if cplx:
        want = want + 1j * numeric_grad(lambda v: loss_np(x128 + 1j * (v - x128)), x128)
    g = mx.grad(loss_mx)(marr(x))
    assert g.dtype == dtype and g.shape == x.shape
    np.testing.assert_allclose(np.array(g), want, rtol=2e-3, atol=2e-3 * np.abs(want).max())

    # eigvals alone (sorted: LAPACK's order may differ between precisions), and
    # the jvp of eig against the directional difference.
    def eigvals_loss_mx(a):
        w = mx.linalg.eigvals(a)
        w = mx.take_along_axis(w, mx.argsort(mx.real(w) - 0.5 * mx.imag(w), axis=-1), -1)
        return mx.sum(mx.real(w * mx.array(cw.astype(np.complex64))))

    def eigvals_loss_np(a):
        w = np.linalg.eigvals(a)
        return (np.take_along_axis(w, _sort_key_np(w), -1) * cw).real.sum()

    gw = mx.grad(eigvals_loss_mx)
    wnum = numeric_grad(eigvals_loss_np, x128)
    if cplx:
        wnum = wnum + 1j * numeric_grad(lambda v: eigvals_loss_np(x128 + 1j * (v - x128)), x128)
    np.testing.assert_allclose(
        np.array(gw(marr(x))), wnum, rtol=2e-3, atol=2e-3 * np.abs(wnum).max()
    )
    t = rng.standard_normal(x.shape) + (1j * rng.standard_normal(x.shape) if cplx else 0)
    t = t.astype(x.dtype)
    _, (dw, dv) = mx.jvp(lambda a: _canonical_mx(*mx.linalg.eig(a), k), [marr(x)], [marr(t)])
    h = 1e-6
    (wp, vp), (wm, vm) = (_canonical_np(*np.linalg.eig(x128 + s * h * t), k) for s in (1, -1))
    np.testing.assert_allclose(np.array(dw), (wp - wm) / (2 * h), rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(np.array(dv), (vp - vm) / (2 * h), rtol=2e-3, atol=2e-3)


def test_vmap_matches_batch(rng):
    a = rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    np.testing.assert_allclose(mx.vmap(mx.linalg.inv)(marr(a)), np.linalg.inv(a), rtol=1e-10)
    w = mx.vmap(lambda m: mx.linalg.eigvalsh(m + m.T))(marr(a))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2)), rtol=1e-10)


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0), (2, 0, 0), (0, 4, 3)])
def test_pinv_of_empty_matrices(shape):
    a = np.zeros(shape, np.float32)
    got = mx.linalg.pinv(mx.array(a))
    assert got.shape == np.linalg.pinv(a).shape
    assert got.dtype == mx.float32


def test_matrix_norm_at_the_top_level_is_linalg_norm(rng):
    # MLX 0.32 binds linalg.norm a second time as mlx.core.matrix_norm.
    assert mx.matrix_norm is mx.linalg.norm
    a = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(np.array(mx.matrix_norm(mx.array(a))), np.linalg.norm(a), rtol=1e-6)
    np.testing.assert_allclose(
        np.array(mx.matrix_norm(mx.array(a), "nuc")), np.linalg.norm(a, "nuc"), rtol=1e-5
    )
