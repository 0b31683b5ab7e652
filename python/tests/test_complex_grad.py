"""Derivatives of complex64 arrays follow MLX's convention (docs/transforms.md): jvp is the
directional derivative, vjp its adjoint under Re(sum(conj(u) * v)), so a holomorphic f
gets c * conj(f'(z)) and a real loss L gets dL/dRe(z) + i dL/dIm(z). References are closed
forms and central differences in complex128 NumPy; fresh random inputs each run."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln.core as mx

RTOL = 2e-5


def crandn(rng, shape, scale=1.0):
    return (scale * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape))).astype(
        np.complex64
    )


def close(got, want, rtol=RTOL, atol=1e-5):
    np.testing.assert_allclose(np.array(got), want, rtol=rtol, atol=atol)


# (kiln function, NumPy derivative f'(z) in complex128, input shift away from singularities)
HOLOMORPHIC = {
    "exp": (mx.exp, np.exp, 0),
    "log": (mx.log, lambda z: 1 / z, 3),
    "sin": (mx.sin, np.cos, 0),
    "cos": (mx.cos, lambda z: -np.sin(z), 0),
    "tanh": (mx.tanh, lambda z: 1 - np.tanh(z) ** 2, 0),
    "sinh": (mx.sinh, np.cosh, 0),
    "sqrt": (mx.sqrt, lambda z: 0.5 / np.sqrt(z), 3),
    "rsqrt": (mx.rsqrt, lambda z: -0.5 * z**-1.5, 3),
    "square": (mx.square, lambda z: 2 * z, 0),
    "reciprocal": (mx.reciprocal, lambda z: -1 / z**2, 3),
    "log1p": (mx.log1p, lambda z: 1 / (1 + z), 3),
    "negative": (mx.negative, lambda z: -np.ones_like(z), 0),
}


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_vjp_is_c_times_conj_derivative(rng, name):
    f, df, shift = HOLOMORPHIC[name]
    z = crandn(rng, (3, 5)) + np.complex64(shift)
    c = crandn(rng, (3, 5))
    (out,), (g,) = mx.vjp(f, [mx.array(z)], [mx.array(c)])
    assert g.dtype == mx.complex64 and g.shape == z.shape
    z64 = z.astype(np.complex128)
    close(g, c * np.conj(df(z64)), rtol=1e-4)
    # The jvp has no conjugate: f'(z) t.
    t = crandn(rng, (3, 5))
    _, (tan,) = mx.jvp(f, [mx.array(z)], [mx.array(t)])
    close(tan, df(z64) * t, rtol=1e-4)


def numeric_grad(loss, z, h=1e-6):
    """dL/dRe(z) + i dL/dIm(z) of a real loss of a complex128 array, by central differences."""
    g = np.zeros_like(z)
    for k in np.ndindex(z.shape):
        for unit in (1, 1j):
            e = np.zeros_like(z)
            e[k] = unit * h
            d = (loss(z + e) - loss(z - e)) / (2 * h)
            g[k] += d * unit
    return g


def test_grad_of_real_losses_is_derivative_by_real_and_imaginary_parts(rng):
    z = crandn(rng, (4,))
    w = rng.standard_normal(4)
    cases = [
        (lambda v: mx.real(v).sum(), lambda v: v.real.sum()),
        (lambda v: (3.0 * mx.imag(v)).sum(), lambda v: 3 * v.imag.sum()),
        (lambda v: mx.abs(v).sum(), lambda v: np.abs(v).sum()),
        (
            lambda v: (mx.abs(v * v) * mx.array(w.astype(np.float32))).sum(),
            lambda v: (np.abs(v * v) * w).sum(),
        ),
        (
            lambda v: mx.real(mx.exp(v) * mx.conj(v)).sum(),
            lambda v: (np.exp(v) * v.conj()).real.sum(),
        ),
        (lambda v: mx.imag(mx.fft.fft(v)).sum(), lambda v: np.fft.fft(v).imag.sum()),
        (
            lambda v: mx.abs(mx.cumprod(v)).sum(),
            lambda v: np.abs(np.cumprod(v)).sum(),
        ),
    ]
    for f, ref in cases:
        g = mx.grad(f)(mx.array(z))
        assert g.dtype == mx.complex64
        close(g, numeric_grad(ref, z.astype(np.complex128)), rtol=1e-3, atol=1e-4)


def test_grad_of_real_and_imag_parts():
    # MLX's test values: d real / dz = 1, d imag / dz = 1j.
    z = mx.array([0.0 + 1j, 1.0 + 0.0j, 0.5 + 0.5j])
    close(mx.grad(lambda v: (2.0 * mx.real(v)).sum())(z), 2 * np.ones(3))
    close(mx.grad(lambda v: (2.0 * mx.imag(v)).sum())(z), 2j * np.ones(3))


def test_abs_jvp_real_and_vjp(rng):
    z = crandn(rng, (3, 4)) + np.complex64(0.1)
    t = crandn(rng, (3, 4))
    _, (tan,) = mx.jvp(mx.abs, [mx.array(z)], [mx.array(t)])
    assert tan.dtype == mx.float32
    z64 = z.astype(np.complex128)
    close(tan, (np.conj(z64) * t).real / np.abs(z64))
    c = rng.standard_normal((3, 4)).astype(np.float32)
    _, (g,) = mx.vjp(mx.abs, [mx.array(z)], [mx.array(c)])
    assert g.dtype == mx.complex64
    close(g, c * z64 / np.abs(z64))
    # Real inputs: sign(x) t, unchanged.
    x = rng.standard_normal(6).astype(np.float32)
    _, (g,) = mx.vjp(mx.abs, [mx.array(x)], [mx.array(np.ones(6, np.float32))])
    close(g, np.sign(x))


def test_binary_products_and_reductions(rng):
    a, b, c = (
        crandn(rng, (2, 3)),
        crandn(rng, (2, 3)) + np.complex64(2),
        crandn(rng, (2, 3)),
    )
    A, B, C = mx.array(a), mx.array(b), mx.array(c)
    a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
    _, (ga, gb) = mx.vjp(mx.multiply, [A, B], [C])
    np.testing.assert_array_equal(np.array(ga), np.array(C * mx.conj(B)))
    close(gb, c * np.conj(a64))
    _, (ga, gb) = mx.vjp(mx.divide, [A, B], [C])
    close(ga, c * np.conj(1 / b64), rtol=1e-4)
    close(gb, c * np.conj(-a64 / b64**2), rtol=1e-4)
    _, (ga, gb) = mx.vjp(mx.subtract, [A, B], [C])
    close(ga, c)
    close(gb, -c)
    # prod over an axis of length 2 is multiply: both give exactly c * conj(other).
    p = mx.stack([A[0], A[1]])
    _, (gp,) = mx.vjp(lambda v: v.prod(axis=0), [p], [C[0]])
    _, gm = mx.vjp(mx.multiply, [A[0], A[1]], [C[0]])
    np.testing.assert_array_equal(np.array(gp), np.array(mx.stack(gm)))
    # sum and mean have real coefficients: no conjugate.
    _, (gs,) = mx.vjp(lambda v: v.sum(axis=1), [A], [C[:, 0]])
    close(gs, np.broadcast_to(c[:, :1], (2, 3)))
    _, (gmean,) = mx.vjp(lambda v: v.mean(), [A], [C[0, 0]])
    close(gmean, np.full((2, 3), c[0, 0] / 6))


def test_matmul_vjp_uses_conjugate_transposes(rng):
    a, b = crandn(rng, (3, 4)), crandn(rng, (4, 2))
    c = crandn(rng, (3, 2))
    _, (ga, gb) = mx.vjp(mx.matmul, [mx.array(a), mx.array(b)], [mx.array(c)])
    a64, b64, c64 = (v.astype(np.complex128) for v in (a, b, c))
    close(ga, c64 @ b64.conj().T, rtol=1e-4)
    close(gb, a64.conj().T @ c64, rtol=1e-4)
    # Batched with broadcasting.
    a3 = crandn(rng, (2, 3, 4))
    c3 = crandn(rng, (2, 3, 2))
    _, (ga3, gb3) = mx.vjp(mx.matmul, [mx.array(a3), mx.array(b)], [mx.array(c3)])
    close(ga3, c3 @ b64.conj().T, rtol=1e-4)
    close(gb3, np.einsum("bij,bik->jk", a3.conj().astype(np.complex128), c3), rtol=1e-4)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fft_vjp_is_the_adjoint(rng, norm):
    z = crandn(rng, (3, 8))
    c = crandn(rng, (3, 8))
    n = 8
    scale = {"backward": 1.0, "ortho": 1 / np.sqrt(n), "forward": 1.0 / n}[norm]
    _, (g,) = mx.vjp(lambda v: mx.fft.fft(v, norm=norm), [mx.array(z)], [mx.array(c)])
    # scale * F^H c = scale * n * ifft(c) (the unnormalized inverse direction).
    close(g, scale * n * np.fft.ifft(c.astype(np.complex128)), rtol=1e-4)
    _, (g,) = mx.vjp(lambda v: mx.fft.ifft(v, norm=norm), [mx.array(z)], [mx.array(c)])
    iscale = {"backward": 1.0 / n, "ortho": 1 / np.sqrt(n), "forward": 1.0}[norm]
    close(g, iscale * np.fft.fft(c.astype(np.complex128)), rtol=1e-4)
    # <vjp(c), t> == <c, jvp(t)> for rfft / irfft (real pairing Re(sum(conj(u) v))).
    x = rng.standard_normal((3, 8)).astype(np.float32)
    cr = crandn(rng, (3, 5))
    t = rng.standard_normal((3, 8)).astype(np.float32)
    _, (gr,) = mx.vjp(lambda v: mx.fft.rfft(v), [mx.array(x)], [mx.array(cr)])
    _, (tr,) = mx.jvp(lambda v: mx.fft.rfft(v), [mx.array(x)], [mx.array(t)])
    lhs = (np.array(gr).astype(np.float64) * t).sum()
    rhs = (np.conj(cr.astype(np.complex128)) * np.array(tr)).real.sum()
    assert abs(lhs - rhs) <= 1e-4 * (1 + abs(rhs))


def test_cumprod(rng):
    z = crandn(rng, (5,)) + np.complex64(1.5)
    c = crandn(rng, (5,))
    _, (g,) = mx.vjp(lambda v: mx.cumprod(v), [mx.array(z)], [mx.array(c)])
    z64 = z.astype(np.complex128)
    # d cumprod_k / d z_j = prod_{i<=k, i!=j} z_i for j <= k.
    jac = np.zeros((5, 5), np.complex128)
    for k in range(5):
        for j in range(k + 1):
            jac[k, j] = np.prod(np.delete(z64[: k + 1], j))
    close(g, jac.conj().T @ c, rtol=1e-4)


def test_real_dtypes_are_unchanged(rng):
    x = rng.standard_normal((3, 3)).astype(np.float32)
    y = rng.standard_normal((3, 3)).astype(np.float32)
    _, (gx, gy) = mx.vjp(mx.matmul, [mx.array(x), mx.array(y)], [mx.ones((3, 3))])
    close(gx, np.ones((3, 3)) @ y.T, rtol=1e-5)
    close(gy, x.T @ np.ones((3, 3)), rtol=1e-5)


def test_complex_logcumsumexp_derivative_is_an_error():
    z = mx.array([1 + 1j, 2 - 1j])
    with pytest.raises(ValueError, match=r"\[logcumsumexp\]"):
        mx.eval(mx.vjp(lambda v: mx.logcumsumexp(v), [z], [z]))


# ---------------------------------------------------------------- softmax, logsumexp
# complex64 as MLX: shifted by the lexicographic maximum m (NumPy's order too), so
# logsumexp = log(sum(exp(z - m))) + m keeps Im(m); both are holomorphic.


def lse_ref(z, axis, keepdims=True):
    m = np.max(z, axis=axis, keepdims=True)
    r = np.log(np.exp(z - m).sum(axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


@pytest.mark.parametrize("axis", [-1, 0, (0, 2), None])
def test_complex_softmax_and_logsumexp_values(rng, axis):
    z = crandn(rng, (3, 4, 5), scale=2)
    # A transposed (non-contiguous) view of the input.
    Z = mx.transpose(mx.array(z), (2, 0, 1))
    z = z.transpose(2, 0, 1).astype(np.complex128)
    want = lse_ref(z, axis)
    for keepdims in (True, False):
        got = mx.logsumexp(Z, axis=axis, keepdims=keepdims)
        assert got.dtype == mx.complex64
        close(got, want if keepdims else lse_ref(z, axis, False), rtol=1e-5)
    # The same number as NumPy's log of the sum, up to a whole turn of the imaginary part.
    turns = (
        np.array(mx.logsumexp(Z, axis=axis, keepdims=True))
        - np.log(np.exp(z).sum(axis=axis, keepdims=True))
    ).imag / (2 * np.pi)
    np.testing.assert_allclose(turns, np.round(turns), atol=1e-4)
    for precise in (False, True):  # precise changes nothing for complex64 (MLX)
        y = mx.softmax(Z, axis=axis, precise=precise)
        assert y.dtype == mx.complex64 and y.shape == Z.shape
        close(y, np.exp(z - want), rtol=1e-5)


def test_complex_logsumexp_keeps_the_imaginary_part_of_the_maximum():
    z = np.array([2 - 1j, 0.1 + 0.1j, 3 + 4j], np.complex64)
    got = mx.logsumexp(mx.array(z)).item()
    z = z.astype(np.complex128)
    want = np.log(np.exp(z - z[2]).sum()) + z[2]
    assert abs(got - want) < 1e-5 * abs(want)
    assert got.imag > np.pi  # NumPy's principal value is 2 pi lower
    # An infinite maximum is the result; a row of -inf is -inf; an empty axis is log(0).
    inf = np.inf
    edge = mx.array(
        np.array([[inf + 0j, 1 + 2j], [complex(-inf, 0), complex(-inf, 0)]], np.complex64)
    )
    assert mx.logsumexp(edge, axis=1).tolist() == [complex(inf, 0), complex(-inf, 0)]
    assert mx.logsumexp(mx.zeros((0, 2), mx.complex64), axis=0).real.tolist() == [-inf, -inf]
    assert mx.softmax(mx.zeros((2, 0), mx.complex64), axis=-1).dtype == mx.complex64


def test_complex_softmax_and_logsumexp_derivatives(rng):
    z, c = crandn(rng, (3, 4)), crandn(rng, (3, 4))
    cl = crandn(rng, (3,))
    z64 = z.astype(np.complex128)
    y = np.exp(z64 - lse_ref(z64, 1))
    Z, C = mx.array(z), mx.array(c)
    # vjp = conj(J)^T c with J = diag(y) - y y^T (softmax), J = y (logsumexp); jvp = J t.
    (_,), (g,) = mx.vjp(lambda v: mx.softmax(v, axis=1), [Z], [C])
    close(g, np.conj(y) * (c - (c * np.conj(y)).sum(1, keepdims=True)), rtol=1e-4)
    (_,), (g,) = mx.vjp(lambda v: mx.logsumexp(v, axis=1), [Z], [mx.array(cl)])
    close(g, cl[:, None] * np.conj(y), rtol=1e-4)
    _, (t,) = mx.jvp(lambda v: mx.softmax(v, axis=-1), [Z], [C])
    close(t, y * (c - (c * y).sum(1, keepdims=True)), rtol=1e-4)
    _, (t,) = mx.jvp(lambda v: mx.logsumexp(v, axis=-1), [Z], [C])
    close(t, (c * y).sum(1), rtol=1e-4)
    # Real losses against central differences in complex128, over other axes.
    w = crandn(rng, (3, 4)).astype(np.complex128)
    g = mx.grad(lambda v: (mx.softmax(v, axis=0) * mx.array(w.astype(np.complex64))).sum().real)(Z)
    soft0 = lambda v: np.exp(v - lse_ref(v, 0))
    close(g, numeric_grad(lambda v: (soft0(v) * w).sum().real, z64), rtol=1e-3, atol=1e-4)
    g = mx.grad(lambda v: mx.logsumexp(v).imag)(Z)
    close(g, numeric_grad(lambda v: lse_ref(v, None).imag.sum(), z64), rtol=1e-3, atol=1e-4)


_MLX_SCRIPT = r"""
import json, sys
import numpy as np
import mlx.core as mx
z = np.array(json.loads(sys.argv[1])[0]) + 1j * np.array(json.loads(sys.argv[1])[1])
c = np.array(json.loads(sys.argv[1])[2]) + 1j * np.array(json.loads(sys.argv[1])[3])
Z, C = mx.array(z.astype(np.complex64)), mx.array(c.astype(np.complex64))
out = {}
for name, f in [("exp", mx.exp), ("sin", mx.sin), ("square", mx.square),
                ("mul", lambda v: v * mx.conj(v) * v), ("fft", mx.fft.fft),
                ("matmul", lambda v: (v.reshape(2, 2) @ v.reshape(2, 2)).reshape(4)),
                ("softmax", lambda v: mx.softmax(v.reshape(2, 2), axis=0).reshape(4)),
                ("logsumexp", lambda v: (mx.logsumexp(v.reshape(2, 2), axis=1, keepdims=True)
                                         + mx.zeros((2, 2), mx.complex64)).reshape(4))]:
    g = np.array(mx.vjp(f, [Z], [C])[1][0])
    out[name] = [g.real.tolist(), g.imag.tolist()]
out["abs"] = np.array(mx.grad(lambda v: mx.abs(v).sum())(Z))
out["abs"] = [out["abs"].real.tolist(), out["abs"].imag.tolist()]
print(json.dumps(out))
"""


def test_against_mlx_cpu_build(rng):
    """The same vjps from MLX's CPU build, when KILN_MLX_PYTHON names an interpreter with mlx."""
    py = os.environ.get("KILN_MLX_PYTHON")
    if not py or not os.path.exists(py):
        pytest.skip("set KILN_MLX_PYTHON to an interpreter with MLX to compare")
    z, c = crandn(rng, (4,)), crandn(rng, (4,))
    arg = json.dumps([z.real.tolist(), z.imag.tolist(), c.real.tolist(), c.imag.tolist()])
    res = subprocess.run([py, "-c", _MLX_SCRIPT, arg], capture_output=True, text=True, check=True)
    want = json.loads(res.stdout)
    Z, C = mx.array(z), mx.array(c)
    fns = {
        "exp": mx.exp,
        "sin": mx.sin,
        "square": mx.square,
        "mul": lambda v: v * mx.conj(v) * v,
        "fft": mx.fft.fft,
        "matmul": lambda v: (v.reshape(2, 2) @ v.reshape(2, 2)).reshape(4),
        "softmax": lambda v: mx.softmax(v.reshape(2, 2), axis=0).reshape(4),
        "logsumexp": lambda v: (
            mx.logsumexp(v.reshape(2, 2), axis=1, keepdims=True) + mx.zeros((2, 2), mx.complex64)
        ).reshape(4),
    }
    for name, f in fns.items():
        g = np.array(mx.vjp(f, [Z], [C])[1][0])
        w = np.array(want[name][0]) + 1j * np.array(want[name][1])
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=name)
    g = np.array(mx.grad(lambda v: mx.abs(v).sum())(Z))
    np.testing.assert_allclose(
        g, np.array(want["abs"][0]) + 1j * np.array(want["abs"][1]), rtol=1e-5
    )
