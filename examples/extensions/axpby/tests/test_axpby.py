"""Tests of the sample extension: axpby against float64 NumPy references on every dtype and
layout (CPU; GPU when one is present), its transforms against finite differences and loops,
its errors, the compile-only check of its CUDA kernels, and the documented usage script.

Run from anywhere with the built package importable, e.g. after
``python setup.py build_ext --inplace`` in the extension's directory::

    python -m pytest -q tests
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import kiln.core as mx
from kiln_sample_extensions import _ext, axpby

HERE = pathlib.Path(__file__).resolve().parent

DTYPES = [mx.float32, mx.float16, mx.bfloat16, mx.complex64]
DEVICES = [
    pytest.param(mx.cpu, id="cpu"),
    pytest.param(
        mx.gpu,
        id="gpu",
        marks=pytest.mark.skipif(not mx.is_available(mx.gpu), reason="no GPU"),
    ),
]
KERNELS = ["axpby_general", "axpby_general_large", "axpby_contiguous"]
TYPE_NAMES = ["float32", "float16", "bfloat16", "complex64"]


@pytest.fixture
def rng():
    # Fresh inputs each run; KILN_TEST_SEED repeats one.
    seed = int(os.environ.get("KILN_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
    print(f"seed {seed}")  # shown on failure
    return np.random.default_rng(seed)


def random(rng, shape, dtype=mx.float32):
    """Fresh N(0, 1) values (complex: both parts) in `dtype`."""
    values = rng.standard_normal(shape)
    if dtype == mx.complex64:
        return mx.array((values + 1j * rng.standard_normal(shape)).astype(np.complex64))
    return mx.array(values.astype(np.float32)).astype(dtype)


def to_numpy(a):
    """float64 (complex128) values of `a`, for references."""
    if a.dtype == mx.complex64:
        return np.array(a).astype(np.complex128)
    return np.array(a.astype(mx.float32)).astype(np.float64)


def tolerance(dtype):
    """(rtol, atol): a rounding of the output in `dtype`, plus float32 arithmetic."""
    if dtype in (mx.float16, mx.bfloat16):
        return 1e-2, 1e-3
    return 1e-5, 1e-6


def check(x, y, alpha, beta, device):
    out = axpby(x, y, alpha, beta, stream=device)
    mx.eval(out)
    expected = alpha * to_numpy(x) + beta * to_numpy(y)
    assert out.shape == expected.shape
    rtol, atol = tolerance(out.dtype)
    np.testing.assert_allclose(to_numpy(out), expected, rtol=rtol, atol=atol)
    return out


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=TYPE_NAMES)
def test_every_dtype(rng, device, dtype):
    # Sizes that leave a tail after the GPU's 16-byte vectors, and a large flat case.
    for shape in [(3, 4), (17, 33), (1 << 16,), ()]:
        x, y = random(rng, shape, dtype), random(rng, shape, dtype)
        out = check(x, y, 4.0, 2.0, device)
        assert out.dtype == dtype


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=TYPE_NAMES)
def test_broadcasting(rng, device, dtype):
    x, y = random(rng, (4, 1, 5), dtype), random(rng, (3, 5), dtype)
    assert check(x, y, 0.5, -1.5, device).shape == (4, 3, 5)
    # A 0-d array and a Python scalar broadcast over the other input.
    check(random(rng, (), dtype), y, 2.0, 3.0, device)
    out = axpby(x, 2.0, 1.0, 1.0, stream=device)
    rtol, atol = tolerance(dtype)
    np.testing.assert_allclose(to_numpy(out), to_numpy(x) + 2.0, rtol=rtol, atol=atol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=TYPE_NAMES)
def test_transposed(rng, device, dtype):
    # Both column-contiguous (the BLAS path for float32 on the CPU), and one of each.
    a, b = random(rng, (24, 17), dtype), random(rng, (24, 17), dtype)
    out = check(a.T, b.T, 4.0, 2.0, device)
    assert out.shape == (17, 24)
    check(a.T, random(rng, (17, 24), dtype), -1.0, 0.25, device)
    # Transposed 3-d views with the same permutation.
    c, d = random(rng, (3, 4, 5), dtype), random(rng, (3, 4, 5), dtype)
    check(mx.transpose(c, (2, 0, 1)), mx.transpose(d, (2, 0, 1)), 1.5, 2.5, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=TYPE_NAMES)
def test_strided(rng, device, dtype):
    a, b = random(rng, (20, 31), dtype), random(rng, (20, 31), dtype)
    check(a[::2, 1::3], b[::2, 1::3], 4.0, 2.0, device)
    check(a[1:, ::-2], b[:-1, ::2], -2.0, 0.5, device)
    # A view at an odd offset: contiguous, but not aligned for vector loads on the GPU.
    flat_a, flat_b = random(rng, (1001,), dtype), random(rng, (1001,), dtype)
    check(flat_a[1:], flat_b[:-1], 3.0, -1.0, device)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_and_upcast(rng, device):
    out = check(random(rng, (0, 3)), random(rng, (0, 3)), 4.0, 2.0, device)
    assert out.shape == (0, 3)
    # Integers and bool become float32; float16 with float32 promotes to float32.
    ints = mx.array(rng.integers(-5, 5, (3, 4)).astype(np.int32))
    out = axpby(ints, mx.array([True, False, True, False]), 4.0, 2.0, stream=device)
    assert out.dtype == mx.float32
    np.testing.assert_allclose(
        np.array(out), 4.0 * np.array(ints) + 2.0 * np.array([1, 0, 1, 0]), rtol=1e-6
    )
    assert axpby(random(rng, (3,), mx.float16), random(rng, (3,)), 1.0, 1.0).dtype == mx.float32


# ---------------------------------------------------------------- transforms


def finite_differences(f, args, eps):
    """Central differences of the scalar f(*args) with respect to each element of each arg."""
    grads = []
    for i, a in enumerate(args):
        base = np.array(a)
        g = np.zeros(base.shape)
        for idx in np.ndindex(base.shape):
            step = np.zeros(base.shape, dtype=base.dtype)
            step[idx] = eps
            hi = [mx.array(base + step) if j == i else b for j, b in enumerate(args)]
            lo = [mx.array(base - step) if j == i else b for j, b in enumerate(args)]
            g[idx] = (f(*hi).item() - f(*lo).item()) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("device", DEVICES)
def test_grad_against_finite_differences(rng, device):
    alpha, beta = 0.5, -1.5

    def f(x, y):
        return mx.sum(mx.sin(axpby(x, y, alpha, beta, stream=device)))

    x, y = random(rng, (3, 4)), random(rng, (3, 4))
    gx, gy = mx.grad(f, argnums=(0, 1))(x, y)
    fx, fy = finite_differences(f, [x, y], 1e-2)
    np.testing.assert_allclose(np.array(gx), fx, rtol=1e-2, atol=2e-3)
    np.testing.assert_allclose(np.array(gy), fy, rtol=1e-2, atol=2e-3)
    # One argument at a time, and through a broadcast input (its gradient sums).
    np.testing.assert_allclose(np.array(mx.grad(f, argnums=1)(x, y)), fy, rtol=1e-2, atol=2e-3)
    row = random(rng, (4,))
    g_row = mx.grad(f, argnums=1)(x, row)
    (f_row,) = finite_differences(lambda r: f(x, r), [row], 1e-2)
    np.testing.assert_allclose(np.array(g_row), f_row, rtol=1e-2, atol=2e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_jvp_and_vjp(rng, device):
    alpha, beta = 4.0, 2.0
    x, y = random(rng, (5, 6)), random(rng, (5, 6))
    tx, ty = random(rng, (5, 6)), random(rng, (5, 6))
    fun = lambda a, b: axpby(a, b, alpha, beta, stream=device)  # noqa: E731
    _, (tangent,) = mx.jvp(fun, [x, y], [tx, ty])
    # axpby is linear: its jvp is axpby of the tangents, which finite differences match.
    eps = 1e-2
    hi, lo = fun(x + eps * tx, y + eps * ty), fun(x - eps * tx, y - eps * ty)
    fd = (to_numpy(hi) - to_numpy(lo)) / (2 * eps)
    np.testing.assert_allclose(to_numpy(tangent), fd, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(
        to_numpy(tangent), alpha * to_numpy(tx) + beta * to_numpy(ty), rtol=1e-5, atol=1e-5
    )
    # Only y varies.
    _, (tangent_y,) = mx.jvp(lambda b: fun(x, b), [y], [ty])
    np.testing.assert_allclose(to_numpy(tangent_y), beta * to_numpy(ty), rtol=1e-6)
    cotan = random(rng, (5, 6))
    _, (vx, vy) = mx.vjp(fun, [x, y], [cotan])
    np.testing.assert_allclose(to_numpy(vx), alpha * to_numpy(cotan), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(vy), beta * to_numpy(cotan), rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16, mx.complex64], ids=str)
def test_vmap_against_loop(rng, device, dtype):
    fun = lambda a, b: axpby(a, b, 4.0, -2.0, stream=device)  # noqa: E731
    rtol, atol = tolerance(dtype)
    # x mapped along its axis 1, y along its axis 0.
    x, y = random(rng, (4, 3, 5), dtype), random(rng, (3, 4, 5), dtype)
    out = mx.vmap(fun, in_axes=(1, 0))(x, y)
    loop = mx.stack([fun(x[:, b], y[b]) for b in range(3)])
    assert out.shape == loop.shape == (3, 4, 5)
    np.testing.assert_allclose(to_numpy(out), to_numpy(loop), rtol=rtol, atol=atol)
    # y not mapped: shared by every batch element (and broadcast against x's rows).
    row = random(rng, (5,), dtype)
    out = mx.vmap(fun, in_axes=(0, None))(x, row)
    loop = mx.stack([fun(x[b], row) for b in range(4)])
    np.testing.assert_allclose(to_numpy(out), to_numpy(loop), rtol=rtol, atol=atol)
    # Output batch axis elsewhere, and vmap of vmap.
    out = mx.vmap(fun, in_axes=(0, 1), out_axes=2)(x, y)
    loop = mx.stack([fun(x[b], y[:, b]) for b in range(4)], axis=2)
    np.testing.assert_allclose(to_numpy(out), to_numpy(loop), rtol=rtol, atol=atol)
    nested = mx.vmap(mx.vmap(fun))(x, x)
    np.testing.assert_allclose(to_numpy(nested), to_numpy(fun(x, x)), rtol=rtol, atol=atol)


# ---------------------------------------------------------------- errors


def test_unsupported_dtype():
    x64 = mx.array(np.ones((2, 3)), dtype=mx.float64)
    with pytest.raises(ValueError, match=r"\[axpby\] Unsupported dtype float64"):
        axpby(x64, x64, 1.0, 1.0, stream=mx.cpu)
    with pytest.raises(ValueError, match=r"\[axpby\]"):
        axpby(mx.ones((2, 3)), x64, 1.0, 1.0, stream=mx.cpu)


def test_mismatched_shapes():
    with pytest.raises(ValueError, match=r"\[axpby\].*\(3, 4\).*\(5,\)"):
        axpby(mx.ones((3, 4)), mx.ones((5,)), 1.0, 1.0, stream=mx.cpu)
    # The inputs stay usable.
    x = mx.ones((3, 4))
    assert mx.all(axpby(x, x, 1.0, 1.0, stream=mx.cpu) == 2.0).item()


# ---------------------------------------------------------------- CUDA kernels

needs_cuda = pytest.mark.skipif(not _ext._has_cuda, reason="kiln was built without CUDA")


@needs_cuda
def test_kernels_compile():
    # NVRTC alone: no GPU needed. Every kernel Axpby::eval_gpu can request, in one run.
    _ext._compile_kernels([f"{k}_{t}" for k in KERNELS for t in TYPE_NAMES], "sm_90")


@needs_cuda
def test_missing_kernel_source():
    with pytest.raises(RuntimeError, match=r"\[axpby\] No CUDA kernel library 'no_such_library'"):
        _ext._compile_kernels(["axpby_general_float32"], "sm_90", "no_such_library")
    # A kernel the source does not define: NVRTC names it.
    with pytest.raises(RuntimeError, match="axpby_general_float64"):
        _ext._compile_kernels(["axpby_general_float64"], "sm_90")


# ---------------------------------------------------------------- the documented script


def test_usage_script(tmp_path):
    # usage.py as a user runs it; from an empty directory, so that the package imported is
    # the built one (a script's own directory comes first on sys.path).
    script = (HERE.parent / "usage.py").read_text()
    import kiln
    import kiln_sample_extensions

    # The packages' parent folders (not resolving links: a package may be a folder of links).
    modules = (kiln, kiln_sample_extensions)
    paths = [os.path.dirname(os.path.dirname(os.path.abspath(m.__file__))) for m in modules]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.splitlines() == [
        "c shape: (3, 4)",
        "c dtype: kiln.core.float32",
        "c correctness: True",
    ]
