"""quantize / dequantize / quantized_matmul / gather_qmm: float64 NumPy references of the
packed formats (always), and bit-exact comparisons with MLX's CPU build when it is importable
(set KILN_MLX_PYTHON to an interpreter with mlx to run those in a subprocess)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kiln.core as mx

FP4 = np.array(
    [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float64
)
AFFINE = [(b, g) for b in (1, 2, 3, 4, 5, 6, 8) for g in (32, 64, 128)]
FP_MODES = {"mxfp4": (32, 4), "mxfp8": (32, 8), "nvfp4": (16, 4)}
MLX_PYTHON = os.environ.get("KILN_MLX_PYTHON", "/work/mlxenv/bin/python")
RNG = None  # set per test from conftest's rng (KILN_TEST_SEED and the test's id)


@pytest.fixture(autouse=True)
def _seeded_rng(rng):
    global RNG
    RNG = rng


def codes(wq, bits, k):
    """The codes of packed rows (little-endian bit stream of `bits`-wide codes)."""
    wq = np.asarray(wq, np.uint32)
    bitsarr = np.unpackbits(
        wq.view(np.uint8).reshape(*wq.shape[:-1], -1), axis=-1, bitorder="little"
    )
    bitsarr = bitsarr[..., : k * bits].reshape(*wq.shape[:-1], k, bits)
    return (bitsarr.astype(np.int64) << np.arange(bits)).sum(-1)


def fp8_e4m3(c):
    c = np.asarray(c, np.int64)
    e, m = (c >> 3) & 15, c & 7
    v = np.where(e == 0, m / 8.0 * 2.0**-6, (1 + m / 8.0) * 2.0 ** (e - 7))
    v = np.where((e == 15) & (m == 7), np.nan, v)
    return np.where(c & 0x80, -v, v)


def ref_dequantize(wq, scales, biases, gs, bits, mode, global_scale=None):
    wq = np.asarray(wq)
    k = wq.shape[-1] * 32 // bits
    q = codes(wq, bits, k)
    s = np.asarray(scales)
    if mode == "affine":
        s = np.repeat(s.astype(np.float64), gs, -1)
        b = np.repeat(np.asarray(biases).astype(np.float64), gs, -1)
        return s * q + b
    if mode == "nvfp4":
        sv = fp8_e4m3(s)
        if global_scale is not None:
            sv = sv * float(global_scale) / (448.0 * 6.0)
    else:
        sv = np.where(s == 0, 2.0**-127, 2.0 ** (s.astype(np.float64) - 127))
    vals = fp8_e4m3(q) if mode == "mxfp8" else FP4[q]
    return vals * np.repeat(sv, gs, -1)


def np_of(a):
    return (
        np.array(a.astype(mx.float32))
        if a.dtype in (mx.bfloat16, mx.float16)
        else np.array(a)
    )


@pytest.mark.parametrize("bits,gs", AFFINE)
def test_affine_roundtrip_matches_reference(bits, gs):
    w = mx.array(RNG.normal(size=(6, 2 * gs)).astype(np.float32))
    wq, s, b = mx.quantize(w, gs, bits)
    assert wq.dtype == mx.uint32 and wq.shape == (6, 2 * gs * bits // 32)
    assert s.shape == (6, 2) and b.shape == (6, 2) and s.dtype == mx.float32
    ref = ref_dequantize(wq, s, b, gs, bits, "affine")
    d = mx.dequantize(wq, s, b, gs, bits)
    np.testing.assert_allclose(np.array(d), ref, rtol=1e-6, atol=1e-6)
    # Round trip: within a step. Inside the grid the error is at most half a step; MLX moves
    # the grid onto the group's larger edge, so the other edge may clip by up to one step.
    step = np.repeat(np.abs(np.array(s)), gs, -1)
    bound = step * (1 + 2.0**-bits) + 1e-5
    assert np.all(np.abs(np.array(d) - np.array(w)) <= bound)


@pytest.mark.parametrize("mode", list(FP_MODES))
def test_fp_modes_match_reference(mode):
    gs, bits = FP_MODES[mode]
    w = mx.array(RNG.normal(size=(5, 4 * gs)).astype(np.float32))
    wq, s = mx.quantize(w, mode=mode)
    assert s.dtype == mx.uint8 and s.shape == (5, 4)
    d = mx.dequantize(wq, s, mode=mode, dtype=mx.float32)
    ref = ref_dequantize(wq, s, None, gs, bits, mode)
    np.testing.assert_allclose(np.array(d), ref, rtol=1e-6)
    # Relative error of the block formats: fp4 values are within 1/4 of the block maximum.
    amax = np.repeat(np.abs(np.array(w)).reshape(5, 4, gs).max(-1), gs, -1)
    tol = 0.26 if bits == 4 else 0.07
    assert np.all(
        np.abs(np.array(d) - np.array(w))
        <= tol * amax * (1.5 if mode != "nvfp4" else 1)
    )
    assert mx.dequantize(wq, s, mode=mode).dtype == mx.bfloat16


def test_nvfp4_global_scale():
    w = mx.array(RNG.normal(size=(4, 64)).astype(np.float32))
    g = mx.abs(w).max()
    wq, s = mx.quantize(w, mode="nvfp4", global_scale=g)
    d = mx.dequantize(wq, s, mode="nvfp4", global_scale=g, dtype=mx.float32)
    ref = ref_dequantize(wq, s, None, 16, 4, "nvfp4", g.item())
    np.testing.assert_allclose(np.array(d), ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("M", [1, 3, 16, 17, 70])
def test_quantized_matmul_affine(dtype, transpose, M):
    for bits, gs in [(4, 64), (3, 32), (8, 128), (2, 32), (5, 64), (6, 32)]:
        K, N = 2 * gs, 3 * gs  # N multiple of gs for the non-transposed layout
        shape = (N, K) if transpose else (K, N)
        w = mx.array(RNG.normal(size=shape).astype(np.float32)).astype(dtype)
        wq, s, b = mx.quantize(w, gs, bits)
        x = mx.array(RNG.normal(size=(M, K)).astype(np.float32)).astype(dtype)
        y = mx.quantized_matmul(x, wq, s, b, transpose, gs, bits)
        assert y.dtype == dtype and y.shape == (M, N)
        wd = ref_dequantize(wq, np_of(s), np_of(b), gs, bits, "affine")
        ref = np_of(x).astype(np.float64) @ (wd.T if transpose else wd)
        tol = 1e-4 if dtype == mx.float32 else 3e-2
        np.testing.assert_allclose(
            np_of(y), ref, rtol=tol, atol=tol * np.abs(ref).max()
        )


@pytest.mark.parametrize("mode", list(FP_MODES))
@pytest.mark.parametrize("transpose", [True, False])
def test_quantized_matmul_fp(mode, transpose):
    gs, bits = FP_MODES[mode]
    K, N = 4 * gs, 2 * gs
    w = mx.array(RNG.normal(size=(N, K) if transpose else (K, N)).astype(np.float32))
    wq, s = mx.quantize(w, mode=mode)
    for M in (1, 5, 33):
        x = mx.array(RNG.normal(size=(M, K)).astype(np.float32))
        y = mx.quantized_matmul(x, wq, s, transpose=transpose, mode=mode)
        wd = ref_dequantize(wq, s, None, gs, bits, mode)
        ref = np.array(x).astype(np.float64) @ (wd.T if transpose else wd)
        np.testing.assert_allclose(
            np.array(y), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max()
        )


def test_batched_broadcast_and_views():
    w = mx.array(RNG.normal(size=(3, 64, 128)).astype(np.float32))
    wq, s, b = mx.quantize(w)
    x = mx.array(RNG.normal(size=(2, 1, 5, 128)).astype(np.float32))
    y = mx.quantized_matmul(x, wq, s, b)
    assert y.shape == (2, 3, 5, 64)
    wd = ref_dequantize(wq, s, b, 64, 4, "affine")
    ref = np.array(x).astype(np.float64) @ np.swapaxes(wd, -1, -2)
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-4)
    # A non-contiguous x (transposed view) and a 1-d x.
    xt = mx.array(RNG.normal(size=(128, 4)).astype(np.float32)).T
    y = mx.quantized_matmul(xt, wq[0], s[0], b[0])
    np.testing.assert_allclose(
        np.array(y), np.array(xt).astype(np.float64) @ wd[0].T, rtol=1e-4, atol=1e-4
    )
    v = mx.array(RNG.normal(size=(128,)).astype(np.float32))
    assert mx.quantized_matmul(v, wq[1], s[1], b[1]).shape == (64,)


def test_empty_batch():
    w = mx.array(RNG.normal(size=(32, 64)).astype(np.float32))
    wq, s, b = mx.quantize(w, 32)
    y = mx.quantized_matmul(mx.zeros((0, 64)), wq, s, b, group_size=32)
    assert y.shape == (0, 32)


def test_gather_qmm():
    w = mx.array(RNG.normal(size=(4, 32, 64)).astype(np.float32))
    wq, s, b = mx.quantize(w, 32)
    x = mx.array(RNG.normal(size=(3, 2, 64)).astype(np.float32))
    lhs = mx.array([0, 2, 1, 1], mx.uint32)
    rhs = mx.array([3, 0, 0, 2], mx.uint32)
    y = mx.gather_qmm(x, wq, s, b, lhs, rhs, group_size=32)
    wd = ref_dequantize(wq, s, b, 32, 4, "affine")
    xn = np.array(x).astype(np.float64)
    ref = np.stack([xn[i] @ wd[j].T for i, j in zip([0, 2, 1, 1], [3, 0, 0, 2])])
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-4)


def test_vjp_jvp_and_vmap():
    w = mx.array(RNG.normal(size=(32, 64)).astype(np.float32))
    wq, s, b = mx.quantize(w, 32)
    wd = mx.dequantize(wq, s, b, 32)
    x = mx.array(RNG.normal(size=(3, 64)).astype(np.float32))
    c = mx.array(RNG.normal(size=(3, 32)).astype(np.float32))

    def f(x, s, b):
        return mx.quantized_matmul(x, wq, s, b, True, 32)

    _, (dx, ds, db) = mx.vjp(f, [x, s, b], [c])
    _, (rx, rs, rb) = mx.vjp(
        lambda x, s, b: x @ mx.dequantize(wq, s, b, 32).T, [x, s, b], [c]
    )
    np.testing.assert_allclose(
        np.array(dx), np.array(c) @ np.array(wd), rtol=1e-4, atol=1e-4
    )
    np.testing.assert_allclose(np.array(ds), np.array(rs), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(db), np.array(rb), rtol=1e-4, atol=1e-4)
    _, (tx,) = mx.jvp(lambda x: f(x, s, b), [x], [x])
    np.testing.assert_allclose(np.array(tx), np.array(f(x, s, b)), rtol=1e-5, atol=1e-5)
    xs = mx.array(RNG.normal(size=(4, 3, 64)).astype(np.float32))
    y = mx.vmap(lambda x: f(x, s, b))(xs)
    np.testing.assert_allclose(np.array(y), np.array(f(xs, s, b)), rtol=1e-5, atol=1e-5)
    ws = mx.array(RNG.normal(size=(2, 32, 64)).astype(np.float32))
    qs = mx.quantize(ws, 32)
    y = mx.vmap(lambda q, s, b: mx.quantized_matmul(x, q, s, b, True, 32))(*qs)
    ref = np.stack(
        [
            np.array(mx.quantized_matmul(x, *[a[i] for a in qs], True, 32))
            for i in (0, 1)
        ]
    )
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-5, atol=1e-5)


def test_errors():
    w = mx.array(RNG.normal(size=(32, 256)).astype(np.float32))
    cases = [
        (lambda: mx.quantize(w, 48, 4), "group size"),
        (lambda: mx.quantize(w, 64, 7), "bits"),
        (lambda: mx.quantize(w, 64, 4, mode="foo"), "mode"),
        (lambda: mx.quantize(w[:, :100], 64, 4), "divisible"),
        (lambda: mx.quantize(w[0], 64, 4), "at least 2"),
        (lambda: mx.quantize(w, 64, 4, mode="mxfp4"), "group size 32"),
        (lambda: mx.quantize(w.astype(mx.int32)), "floating"),
    ]
    wq, s, b = mx.quantize(w)
    x = mx.array(RNG.normal(size=(3, 256)).astype(np.float32))
    cases += [
        (lambda: mx.quantized_matmul(x, wq, s, None), "Biases"),
        (lambda: mx.quantized_matmul(x, wq, s[:, :2], b), "same shape"),
        (lambda: mx.quantized_matmul(x[:, :100], wq, s, b), "does not match"),
        (lambda: mx.quantized_matmul(x, wq.astype(mx.int32), s, b), "uint32"),
        (lambda: mx.quantized_matmul(x, wq, s, b, group_size=32), "incompatible"),
        (lambda: mx.dequantize(wq, s, b, 32), "dequantize"),
        (lambda: mx.dequantize(wq, s), "Biases"),
    ]
    for fn, text in cases:
        with pytest.raises(ValueError, match=text):
            fn()


MLX_SCRIPT = r"""
import json, sys, numpy as np, mlx.core as mx
spec = json.load(sys.stdin)
out = []
for case in spec:
    w = mx.array(np.array(case["w"], np.float32)).astype(getattr(mx, case["dtype"]))
    r = mx.quantize(w, case["gs"], case["bits"], mode=case["mode"])
    x = mx.array(np.array(case["x"], np.float32))
    y = mx.quantized_matmul(x, *r[:2], r[2] if len(r) > 2 else None, True, case["gs"], case["bits"], case["mode"])
    out.append({"q": np.array(r[0]).tolist(),
                "s": np.array(r[1].astype(mx.float32) if r[1].dtype != mx.uint8 else r[1]).tolist(),
                "b": np.array(r[2].astype(mx.float32)).tolist() if len(r) > 2 else None,
                "d": np.array(mx.dequantize(*r[:2], r[2] if len(r) > 2 else None, case["gs"], case["bits"], case["mode"]).astype(mx.float32)).tolist(),
                "y": np.array(y.astype(mx.float32)).tolist()})
json.dump(out, sys.stdout)
"""


def test_bit_exact_with_mlx():
    if not os.path.exists(MLX_PYTHON):
        pytest.skip("MLX's CPU build is not installed")
    try:
        subprocess.run(
            [MLX_PYTHON, "-c", "import mlx.core"], check=True, capture_output=True
        )
    except Exception:
        pytest.skip("mlx is not importable")
    cases = []
    for bits, gs in AFFINE:
        for dtype in ("float32", "bfloat16", "float16"):
            cases.append(dict(mode="affine", bits=bits, gs=gs, dtype=dtype))
    for mode, (gs, bits) in FP_MODES.items():
        for dtype in ("float32", "bfloat16", "float16"):
            cases.append(dict(mode=mode, bits=bits, gs=gs, dtype=dtype))
    for c in cases:
        c["w"] = (
            (RNG.normal(size=(8, 2 * c["gs"])) * RNG.uniform(0.01, 10))
            .astype(np.float32)
            .tolist()
        )
        c["x"] = RNG.normal(size=(3, 2 * c["gs"])).astype(np.float32).tolist()
    res = subprocess.run(
        [MLX_PYTHON, "-c", MLX_SCRIPT],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    ref = json.loads(res.stdout)
    for c, r in zip(cases, ref):
        w = mx.array(np.array(c["w"], np.float32)).astype(getattr(mx, c["dtype"]))
        out = mx.quantize(w, c["gs"], c["bits"], mode=c["mode"])
        tag = f'{c["mode"]} bits={c["bits"]} gs={c["gs"]} {c["dtype"]}'
        np.testing.assert_array_equal(
            np.array(out[0]), np.array(r["q"], np.uint32), err_msg=tag
        )
        np.testing.assert_array_equal(
            np_of(out[1]), np.array(r["s"]).astype(np_of(out[1]).dtype), err_msg=tag
        )
        if r["b"] is not None:
            np.testing.assert_array_equal(
                np_of(out[2]), np.array(r["b"], np.float32), err_msg=tag
            )
        bb = out[2] if len(out) > 2 else None
        d = mx.dequantize(out[0], out[1], bb, c["gs"], c["bits"], c["mode"])
        np.testing.assert_array_equal(
            np_of(d), np.array(r["d"], np.float32), err_msg=tag
        )
        x = mx.array(np.array(c["x"], np.float32))
        y = mx.quantized_matmul(
            x, out[0], out[1], bb, True, c["gs"], c["bits"], c["mode"]
        )
        yr = np.array(r["y"])
        tol = 2e-5 if c["dtype"] == "float32" else 1e-2
        np.testing.assert_allclose(
            np_of(y), yr, rtol=tol, atol=tol * np.abs(yr).max(), err_msg=tag
        )


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8", "mxfp4"])
def test_qqmm(mode):
    gs, bits = FP_MODES[mode]
    x = mx.array(RNG.normal(size=(3, 4 * gs)).astype(np.float32))
    w = mx.array(RNG.normal(size=(2 * gs, 4 * gs)).astype(np.float32))
    xq = mx.quantize(x, mode=mode)
    x_hat = ref_dequantize(xq[0], xq[1], None, gs, bits, mode)
    wq, s = mx.quantize(w, mode=mode)
    w_hat = ref_dequantize(wq, s, None, gs, bits, mode)
    ref = x_hat @ w_hat.T
    for y in (mx.qqmm(x, wq, s, mode=mode), mx.qqmm(x, w, mode=mode)):
        np.testing.assert_allclose(
            np.array(y), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max()
        )
    # Straight-through gradient w.r.t. x: the cotangent times the rounded w.
    c = mx.array(RNG.normal(size=(3, 2 * gs)).astype(np.float32))
    _, (dx,) = mx.vjp(lambda x: mx.qqmm(x, wq, s, mode=mode), [x], [c])
    np.testing.assert_allclose(np.array(dx), np.array(c) @ w_hat, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="qqmm"):
        mx.qqmm(x, w, mode="affine")


def test_gather_qqmm_and_per_expert_global_scale():
    # Three nvfp4 experts, each with its own tensor scale (global_scale of shape (E,)).
    E, N, K = 3, 32, 128
    w = mx.array(RNG.normal(size=(E, N, K)).astype(np.float32)) * mx.array(
        [1.0, 4.0, 16.0]
    ).reshape(E, 1, 1)
    gs = mx.abs(w).max(axis=(1, 2))
    packed = [mx.quantize(w[e], mode="nvfp4", global_scale=gs[e]) for e in range(E)]
    wq = mx.stack([q for q, _ in packed])
    s = mx.stack([sc for _, sc in packed])
    w_hat = np.stack(
        [
            ref_dequantize(q, sc, None, 16, 4, "nvfp4", gs[e].item())
            for e, (q, sc) in enumerate(packed)
        ]
    )
    x = mx.array(RNG.normal(size=(2, 1, K)).astype(np.float32))
    lhs, rhs = [0, 1, 1, 0], [2, 0, 2, 1]
    xn = np.array(x).astype(np.float64)
    y = mx.gather_qmm(
        x, wq, s, None, mx.array(lhs), mx.array(rhs), mode="nvfp4", global_scale=gs
    )
    ref = np.stack([xn[i] @ w_hat[j].T for i, j in zip(lhs, rhs)])
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    # gather_qqmm rounds x through nvfp4 as well.
    gx = mx.abs(x).max()
    xq = mx.quantize(x, mode="nvfp4", global_scale=gx)
    x_hat = ref_dequantize(xq[0], xq[1], None, 16, 4, "nvfp4", gx.item())
    yq = mx.gather_qqmm(
        x, wq, s, mx.array(lhs), mx.array(rhs), global_scale_x=gx, global_scale_w=gs
    )
    ref_q = np.stack([x_hat[i] @ w_hat[j].T for i, j in zip(lhs, rhs)])
    np.testing.assert_allclose(
        np.array(yq), ref_q, rtol=1e-4, atol=1e-4 * np.abs(ref_q).max()
    )
    with pytest.raises(ValueError, match="gather_qmm"):
        mx.gather_qmm(x, wq, s, mode="nvfp4", global_scale=mx.ones((2,)))
    with pytest.raises(ValueError, match="gather_qqmm"):
        mx.gather_qqmm(x, w, mode="affine")
