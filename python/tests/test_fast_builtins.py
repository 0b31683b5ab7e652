"""kiln.core.fast's fused built-ins: rms_norm, fused_rms_silu, layer_norm, rope,
scaled_dot_product_attention and cross_entropy, with MLX 0.32's signatures (fused_rms_silu:
MLX's newer test_fast).

Each runs on the default device (KILN_DEVICE=gpu runs the GPU kernels) on fresh random inputs
against float64 NumPy references: every dtype, non-contiguous inputs, every attention mask
kind, grouped- and multi-query heads, L_q != L_k, sinks, per-batch rope offsets; gradients
against the gradients of the same formula written with core ops (float64) and against central
differences; argument checks raise ValueError with the op's tag."""

import math

import numpy as np
import pytest

import kiln.core as mx
from conftest import FLOAT_DTYPES, assert_close, on_gpu, random_array, tolerance

HALF = (mx.float16, mx.bfloat16)


def tol(dtype):
    return (
        1e-10
        if dtype == mx.float64
        else (2e-5 if dtype == mx.float32 else tolerance(dtype))
    )


# ---------------------------------------------------------------- references


def np_rms_norm(x, w, eps):
    eps = float(np.float32(eps))  # as the op takes it
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def np_layer_norm(x, w, b, eps):
    eps = float(np.float32(eps))
    xc = x - x.mean(-1, keepdims=True)
    y = xc / np.sqrt(np.mean(xc * xc, axis=-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def np_rope(x, dims, traditional, base, scale, offset, freqs=None):
    """x: (B, *, T, D) float64; offset: int or sequence of B ints."""
    shape = x.shape
    x = x.reshape(shape[0], -1, shape[-2], shape[-1])
    B, _, T, _ = x.shape
    half = dims // 2
    off = np.broadcast_to(np.asarray(offset, dtype=np.float64).reshape(-1), (B,))
    pos = (off[:, None] + np.arange(T)[None, :]) * scale  # (B, T)
    inv = (
        1.0 / np.asarray(freqs, np.float64)
        if freqs is not None
        else base ** (-np.arange(half) / half)
    )
    th = pos[:, None, :, None] * inv  # (B, 1, T, half)
    c, s = np.cos(th), np.sin(th)
    out = x.copy()
    if traditional:
        x1, x2 = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = x1 * c - x2 * s
        out[..., 1:dims:2] = x1 * s + x2 * c
    else:
        x1, x2 = x[..., :half], x[..., half:dims]
        out[..., :half] = x1 * c - x2 * s
        out[..., half:dims] = x1 * s + x2 * c
    return out.reshape(shape)


LOWEST = float(np.finfo(np.float32).min)


def np_attention(q, k, v, scale, mask=None, sinks=None):
    """float64 attention; mask: None, "causal", bool or additive array."""
    B, Hq, Lq, _ = q.shape
    Hk, Lk = k.shape[1], k.shape[2]
    k = np.repeat(k, Hq // Hk, axis=1)
    v = np.repeat(v, Hq // Hk, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    if isinstance(mask, str):
        mask = np.arange(Lk - Lq, Lk)[:, None] >= np.arange(Lk)[None, :]
    if mask is not None:
        mask = np.asarray(mask)
        s = np.where(mask, s, LOWEST) if mask.dtype == np.bool_ else s + mask
    if sinks is not None:
        sk = np.broadcast_to(
            np.asarray(sinks, np.float64).reshape(1, Hq, 1, 1), (B, Hq, Lq, 1)
        )
        s = np.concatenate([sk, s], axis=-1)
    with np.errstate(invalid="ignore"):
        m = s.max(-1, keepdims=True)
        p = np.exp(s - m)
        p = p / p.sum(-1, keepdims=True)
    if sinks is not None:
        p = p[..., 1:]
    return p @ v


def np_cross_entropy(x, t):
    C = x.shape[-1]
    m = x.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))[..., 0]
    t = np.where(t < 0, t + C, t)
    picked = np.take_along_axis(x, np.clip(t, 0, C - 1)[..., None], -1)[..., 0]
    return np.where((t >= 0) & (t < C), lse - picked, np.nan)


# ---------------------------------------------------------------- norms


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(2, 31), (3, 4, 32), (4, 1000), (4099,)])
def test_rms_norm(rng, dtype, shape):
    x, xn = random_array(rng, shape, dtype)
    w, wn = random_array(rng, shape[-1:], dtype, 0.5, 1.5)
    assert_close(
        mx.fast.rms_norm(x, w, 1e-5), np_rms_norm(xn, wn, 1e-5), dtype, rtol=tol(dtype)
    )
    y = mx.fast.rms_norm(x, None, 1e-5)
    assert y.dtype == dtype
    assert_close(y, np_rms_norm(xn, None, 1e-5), dtype, rtol=tol(dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(2, 31), (3, 2, 33), (4, 4096), (4099,)])
def test_fused_rms_silu(rng, dtype, shape):
    x, xn = random_array(rng, shape, dtype)
    w, wn = random_array(rng, shape[-1:], dtype, 0.5, 1.5)
    for wo, wr in ((w, wn), (None, None)):
        h = np_rms_norm(xn, wr, 1e-3)
        y = mx.fast.fused_rms_silu(x, wo, 1e-3)
        assert y.dtype == dtype
        assert_close(y, h / (1 + np.exp(-h)), dtype, rtol=tol(dtype))
    # The gradient: rms_norm's of g * silu'(h), against the composition's.
    ref = lambda a, c: (lambda h: h * mx.sigmoid(h))(
        mx.fast.rms_norm(a, c, 1e-3)
    )  # noqa: E731
    g = mx.ones(x.shape, dtype=dtype)
    got = mx.vjp(lambda a, c: mx.fast.fused_rms_silu(a, c, 1e-3), [x, w], [g])[1]
    want = mx.vjp(ref, [x, w], [g])[1]
    for a, b in zip(got, want):
        assert_close(a, np.array(b.astype(mx.float64)), dtype, rtol=8 * tol(dtype))
    with pytest.raises(ValueError, match=r"\[fused_rms_silu\]"):
        mx.fast.fused_rms_silu(mx.ones((1, 5)), mx.ones((4,)), 1e-5)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(2, 31), (3, 2, 33), (4, 1000), (4099,)])
def test_layer_norm(rng, dtype, shape):
    x, xn = random_array(rng, shape, dtype, 3, 7)
    w, wn = random_array(rng, shape[-1:], dtype, 0.5, 1.5)
    b, bn = random_array(rng, shape[-1:], dtype)
    r = 1e-4 if dtype == mx.float32 else tol(dtype)
    for wo, wr in ((w, wn), (None, None)):
        for bo, br in ((b, bn), (None, None)):
            y = mx.fast.layer_norm(x, wo, bo, 1e-5)
            assert_close(y, np_layer_norm(xn, wr, br, 1e-5), dtype, rtol=r)


def test_norms_layouts_promotion_and_errors(rng):
    base, bn = random_array(rng, (48, 64), mx.float32)
    assert_close(
        mx.fast.rms_norm(base.T, None, 1e-5), np_rms_norm(bn.T, None, 1e-5), rtol=2e-5
    )
    assert_close(
        mx.fast.layer_norm(base[::3, ::2], None, None, 1e-5),
        np_layer_norm(bn[::3, ::2], None, None, 1e-5),
        rtol=1e-4,
    )
    x16, xn = random_array(rng, (4, 16), mx.float16)
    w32, wn = random_array(rng, (16,), mx.float32)
    y = mx.fast.rms_norm(x16, w32, 1e-5)
    assert y.dtype == mx.float32
    assert_close(y, np_rms_norm(xn, wn, 1e-5), rtol=2e-5)
    with pytest.raises(ValueError, match=r"\[rms_norm\]"):
        mx.fast.rms_norm(mx.ones((1, 5)), mx.ones((4,)), 1e-5)
    with pytest.raises(ValueError, match=r"\[rms_norm\]"):
        mx.fast.rms_norm(mx.array(1.0), None, 1e-5)
    with pytest.raises(ValueError, match=r"\[rms_norm\]"):
        mx.fast.rms_norm(mx.ones((2, 3), dtype=mx.int32), None, 1e-5)
    with pytest.raises(ValueError, match=r"\[layer_norm\]"):
        mx.fast.layer_norm(mx.ones((4, 128)), mx.ones((129,)), None, 1e-3)
    with pytest.raises(ValueError, match=r"\[layer_norm\]"):
        mx.fast.layer_norm(mx.ones((4, 128)), None, mx.ones((129,)), 1e-3)
    assert mx.fast.rms_norm(mx.zeros((0, 8)), mx.ones((8,)), 1e-5).shape == (0, 8)


def test_norm_gradients(rng):
    x, xn = random_array(rng, (8, 20, 32), mx.float32)
    w, wn = random_array(rng, (32,), mx.float32, 0.5, 1.5)
    b, _ = random_array(rng, (32,), mx.float32)
    y, _ = random_array(rng, (8, 20, 32), mx.float32)

    def ref_rms(x, w):
        x32 = x.astype(mx.float32)
        return x32 * mx.rsqrt(mx.mean(x32 * x32, axis=-1, keepdims=True) + 1e-5) * w

    def ref_ln(x, w, b):
        xc = x - mx.mean(x, axis=-1, keepdims=True)
        return xc * mx.rsqrt(mx.mean(xc * xc, axis=-1, keepdims=True) + 1e-5) * w + b

    f1 = lambda x, w: (mx.fast.rms_norm(x, w, 1e-5) * y).sum()
    f2 = lambda x, w: (ref_rms(x, w) * y).sum()
    g1 = mx.grad(f1, argnums=(0, 1))(x, w)
    g2 = mx.grad(f2, argnums=(0, 1))(x, w)
    for a, r in zip(g1, g2):
        assert_close(a, np.array(r), rtol=1e-4)
    f3 = lambda x, w, b: (mx.fast.layer_norm(x, w, b, 1e-5) * y).sum()
    f4 = lambda x, w, b: (ref_ln(x, w, b) * y).sum()
    g3 = mx.grad(f3, argnums=(0, 1, 2))(x, w, b)
    g4 = mx.grad(f4, argnums=(0, 1, 2))(x, w, b)
    for a, r in zip(g3, g4):
        assert_close(a, np.array(r), rtol=1e-4)

    # Second order, in float64 (the vjp's own gradient through its unfused form).
    x64, w64, b64, y64 = (a.astype(mx.float64) for a in (x[:2, :3], w, b, y[:2, :3]))

    def second(f):
        def inner(x, w, b):
            gx, gw, gb = mx.grad(
                lambda x, w, b: (f(x, w, b) * y64).sum(), argnums=(0, 1, 2)
            )(x, w, b)
            return ((gx + gw + gb) * y64).sum()

        return mx.grad(inner, argnums=(0, 1))(x64, w64, b64)

    h1 = second(lambda x, w, b: mx.fast.layer_norm(x, w, b, 1e-5))
    h2 = second(ref_ln)
    for a, r in zip(h1, h2):
        assert_close(a, np.array(r), rtol=1e-8)


# ---------------------------------------------------------------- rope


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("traditional", [False, True])
def test_rope(rng, dtype, traditional):
    for shape, dims in (((2, 5, 8), 8), ((2, 3, 7, 16), 10), ((2, 2, 3, 4, 8), 8)):
        x, xn = random_array(rng, shape, dtype, -1, 1)
        y = mx.fast.rope(
            x, dims, traditional=traditional, base=10000.0, scale=1.5, offset=3
        )
        assert y.dtype == dtype
        r = 1e-5 if dtype == mx.float32 else tol(dtype)
        assert_close(y, np_rope(xn, dims, traditional, 10000.0, 1.5, 3), dtype, rtol=r)


def test_rope_offsets_freqs_and_errors(rng):
    x, xn = random_array(rng, (3, 4, 6, 32), mx.float32, -1, 1)
    off = mx.array([5, 0, 17])
    y = mx.fast.rope(x, 32, traditional=False, base=10000.0, scale=1.0, offset=off)
    assert_close(y, np_rope(xn, 32, False, 10000.0, 1.0, [5, 0, 17]), rtol=1e-5)
    y = mx.fast.rope(x, 32, traditional=True, base=500.0, scale=1.0, offset=mx.array(7))
    assert_close(y, np_rope(xn, 32, True, 500.0, 1.0, 7), rtol=1e-5)
    freqs, fn = random_array(rng, (16,), mx.float32, 0.5, 4)
    y = mx.fast.rope(
        x, 32, traditional=False, base=None, scale=1.0, offset=2, freqs=freqs
    )
    assert_close(y, np_rope(xn, 32, False, None, 1.0, 2, fn), rtol=1e-5)
    xt = x.swapaxes(1, 2)
    assert_close(
        mx.fast.rope(xt, 32, traditional=False, base=1e4, scale=1.0, offset=1),
        np_rope(np.swapaxes(xn, 1, 2), 32, False, 1e4, 1.0, 1),
        rtol=1e-5,
    )
    kw = dict(traditional=False, scale=1.0, offset=0)
    x3 = mx.ones((1, 4, 64))
    for bad in (
        dict(dims=0, base=1e4),
        dict(dims=-2, base=1e4),
        dict(dims=7, base=1e4),
        dict(dims=128, base=1e4),
    ):
        with pytest.raises(ValueError, match=r"\[rope\]"):
            mx.fast.rope(x3, **bad, **kw)
    with pytest.raises(ValueError, match=r"\[rope\]"):
        mx.fast.rope(x3, 8, base=None, **kw)
    with pytest.raises(ValueError, match=r"\[rope\]"):
        mx.fast.rope(x3, 8, base=None, freqs=mx.ones((3,)), **kw)
    with pytest.raises(ValueError, match=r"\[rope\]"):
        mx.fast.rope(mx.ones((4, 64)), 8, base=1e4, **kw)
    with pytest.raises(ValueError, match=r"\[rope\]"):
        mx.fast.rope(mx.ones((2, 4, 8), dtype=mx.int32), 8, base=1e4, **kw)
    with pytest.raises(ValueError, match=r"\[rope\]"):
        mx.fast.rope(
            mx.ones((8, 4, 4, 32)),
            32,
            traditional=True,
            base=1e4,
            scale=1.0,
            offset=mx.array([1, 2, 3]),
        )


def test_rope_transforms(rng):
    x, xn = random_array(rng, (2, 4, 8), mx.float64)
    kw = dict(traditional=False, base=1e4, scale=1.0, offset=2)
    g = mx.grad(lambda x: (mx.fast.rope(x, 8, **kw) * mx.arange(8)).sum())(x)
    # The rotation's transpose: the gradient of sum(rope(x) * u) is rope(u) rotated back.
    u = np.broadcast_to(np.arange(8, dtype=np.float64), xn.shape)
    eps = 1e-6
    num = np.zeros_like(xn)
    for idx in [(0, 0, 0), (1, 3, 5), (0, 2, 7)]:
        d = np.zeros_like(xn)
        d[idx] = eps
        fp = (np_rope(xn + d, 8, False, 1e4, 1.0, 2) * u).sum()
        fm = (np_rope(xn - d, 8, False, 1e4, 1.0, 2) * u).sum()
        num[idx] = (fp - fm) / (2 * eps)
        assert abs(np.array(g)[idx] - num[idx]) < 1e-6
    _, jv = mx.jvp(lambda x: mx.fast.rope(x, 8, **kw), (x,), (mx.ones_like(x),))
    assert_close(jv[0], np_rope(np.ones_like(xn), 8, False, 1e4, 1.0, 2), rtol=1e-10)
    xs, xsn = random_array(rng, (3, 2, 4, 8), mx.float32)
    vm = mx.vmap(lambda x: mx.fast.rope(x, 8, **kw))(xs)
    assert_close(
        vm,
        np.stack([np_rope(xsn[i], 8, False, 1e4, 1.0, 2) for i in range(3)]),
        rtol=1e-5,
    )


# ---------------------------------------------------------------- attention


def make_qkv(rng, B, Hq, Hk, Lq, Lk, D, dtype, transpose=False, Dv=None):
    Dv = Dv or D
    if transpose:
        q, qn = random_array(rng, (B, Lq, Hq, D), dtype, -1, 1)
        k, kn = random_array(rng, (B, Lk, Hk, D), dtype, -1, 1)
        v, vn = random_array(rng, (B, Lk, Hk, Dv), dtype, -1, 1)
        return (q.swapaxes(1, 2), k.swapaxes(1, 2), v.swapaxes(1, 2)), (
            np.swapaxes(qn, 1, 2),
            np.swapaxes(kn, 1, 2),
            np.swapaxes(vn, 1, 2),
        )
    q, qn = random_array(rng, (B, Hq, Lq, D), dtype, -1, 1)
    k, kn = random_array(rng, (B, Hk, Lk, D), dtype, -1, 1)
    v, vn = random_array(rng, (B, Hk, Lk, Dv), dtype, -1, 1)
    return (q, k, v), (qn, kn, vn)


def attn_tol(dtype):
    return 1e-4 if dtype == mx.float32 else tol(dtype)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
@pytest.mark.parametrize("mask", [None, "causal", "bool", "additive", "bool_bcast"])
@pytest.mark.parametrize("lengths", [(7, 7), (1, 9), (5, 13), (13, 5)])
def test_sdpa_masks(rng, dtype, mask, lengths):
    Lq, Lk = lengths
    B, Hq, Hk, D = 2, 4, 2, 64
    (q, k, v), (qn, kn, vn) = make_qkv(rng, B, Hq, Hk, Lq, Lk, D, dtype)
    m, mn = mask, mask
    if mask == "bool":
        mn = rng.random((B, Hq, Lq, Lk)) < 0.6
        m = mx.array(mn)
    elif mask == "bool_bcast":
        mn = rng.random((Lq, Lk)) < 0.6
        m = mx.array(mn)
    elif mask == "additive":
        m, mn = random_array(rng, (B, 1, Lq, Lk), dtype, -2, 1)
    scale = 1.0 / math.sqrt(D)
    out = mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask=m)
    assert out.dtype == dtype
    assert_close(out, np_attention(qn, kn, vn, scale, mn), dtype, rtol=attn_tol(dtype))


@pytest.mark.parametrize("D", [64, 80, 96, 128, 256])
def test_sdpa_head_dims_gqa_sinks(rng, D):
    for dtype in (mx.float32, mx.bfloat16):
        (q, k, v), (qn, kn, vn) = make_qkv(
            rng, 1, 8, 2, 33, 70, D, dtype, transpose=True
        )
        sinks, sn = random_array(rng, (8,), dtype)
        out = mx.fast.scaled_dot_product_attention(
            q, k, v, scale=0.1, mask="causal", sinks=sinks
        )
        assert_close(
            out,
            np_attention(qn, kn, vn, 0.1, "causal", sn),
            dtype,
            rtol=attn_tol(dtype),
        )
    # Multi-query decode with a long context.
    (q, k, v), (qn, kn, vn) = make_qkv(rng, 2, 8, 1, 1, 1000, D, mx.float16)
    out = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.1)
    assert_close(
        out, np_attention(qn, kn, vn, 0.1), mx.float16, rtol=attn_tol(mx.float16)
    )


def test_sdpa_long_sequences(rng):
    (q, k, v), (qn, kn, vn) = make_qkv(rng, 1, 2, 1, 1000, 1000, 64, mx.float32)
    out = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.125, mask="causal")
    assert_close(out, np_attention(qn, kn, vn, 0.125, "causal"), rtol=1e-4)
    if on_gpu():
        (q, k, v), (qn, kn, vn) = make_qkv(rng, 1, 4, 2, 4097, 4097, 128, mx.bfloat16)
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.0884, mask="causal")
        assert_close(out, np_attention(qn, kn, vn, 0.0884, "causal"), mx.bfloat16)


def test_sdpa_edge_cases_and_errors(rng):
    q = mx.random.normal((1, 1, 3, 8))
    k = mx.random.normal((1, 1, 4, 8))
    v = mx.random.normal((1, 1, 4, 8))
    # A query that sees no key averages the values (MLX's composite), an -inf row is NaN.
    out = mx.fast.scaled_dot_product_attention(
        q, k, v, scale=0.3, mask=mx.zeros((3, 4), dtype=mx.bool_)
    )
    assert_close(
        out,
        np.broadcast_to(np.array(v).mean(2, keepdims=True), (1, 1, 3, 8)),
        rtol=1e-5,
    )
    out = mx.fast.scaled_dot_product_attention(
        q, k, v, scale=0.3, mask=mx.full((3, 4), -np.inf)
    )
    assert np.isnan(np.array(out)).all()
    # Mask dtypes that promote, and those that do not.
    out = mx.fast.scaled_dot_product_attention(
        q, k, v, scale=1.0, mask=mx.array(2.0, mx.bfloat16)
    )
    assert out.dtype == mx.float32
    tag = r"\[scaled_dot_product_attention\]"
    qh = q.astype(mx.float16)
    with pytest.raises(ValueError, match=tag):
        mx.fast.scaled_dot_product_attention(
            qh, qh, qh, scale=1.0, mask=mx.ones((3, 3))
        )
    with pytest.raises(ValueError, match=tag):
        mx.fast.scaled_dot_product_attention(q, k, v, scale=1.0, mask="foo")
    with pytest.raises(ValueError, match=tag):
        mx.fast.scaled_dot_product_attention(q, k, v, scale=1.0, mask=mx.ones((2, 4)))
    with pytest.raises(ValueError, match=tag):
        mx.fast.scaled_dot_product_attention(
            mx.ones((1, 3, 2, 8)),
            mx.ones((1, 2, 4, 8)),
            mx.ones((1, 2, 4, 8)),
            scale=1.0,
        )
    with pytest.raises(ValueError, match=tag):
        mx.fast.scaled_dot_product_attention(q, mx.ones((1, 1, 4, 7)), v, scale=1.0)
    with pytest.raises(ValueError, match=tag):
        mx.fast.scaled_dot_product_attention(q, k, v, scale=1.0, sinks=mx.ones((2,)))
    with pytest.raises(ValueError, match=tag):
        mx.fast.scaled_dot_product_attention(q[0], k, v, scale=1.0)


def test_sdpa_gradients(rng):
    (q, k, v), _ = make_qkv(rng, 1, 4, 2, 9, 11, 16, mx.float64)
    sinks = mx.random.normal((4,)).astype(mx.float64)
    y = mx.random.normal((1, 4, 9, 16)).astype(mx.float64)

    def ref(q, k, v, s, mask):
        qn, kn, vn = q, mx.repeat(k, 2, axis=1), mx.repeat(v, 2, axis=1)
        sc = 0.25 * (qn @ kn.swapaxes(-1, -2))
        if mask == "causal":
            sc = mx.where(mx.arange(2, 11)[:, None] >= mx.arange(11)[None], sc, LOWEST)
        sc = mx.concatenate(
            [mx.broadcast_to(s.reshape(1, 4, 1, 1), (1, 4, 9, 1)), sc], axis=-1
        )
        p = mx.softmax(sc, axis=-1)[..., 1:]
        return p @ vn

    for mask in (None, "causal"):
        f1 = lambda q, k, v, s: (
            mx.fast.scaled_dot_product_attention(
                q, k, v, scale=0.25, mask=mask, sinks=s
            )
            * y
        ).sum()
        f2 = lambda q, k, v, s: (ref(q, k, v, s, mask) * y).sum()
        g1 = mx.grad(f1, argnums=(0, 1, 2, 3))(q, k, v, sinks)
        g2 = mx.grad(f2, argnums=(0, 1, 2, 3))(q, k, v, sinks)
        for a, r in zip(g1, g2):
            assert_close(a, np.array(r), rtol=1e-9)


# ---------------------------------------------------------------- cross entropy


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_cross_entropy(rng, dtype):
    for shape, C in (((3,), 5), ((4, 3), 1000), ((2,), 40000)):
        x, xn = random_array(rng, shape + (C,), dtype, -8, 8)
        tn = rng.integers(0, C, size=shape)
        loss = mx.fast.cross_entropy(x, mx.array(tn))
        assert loss.dtype == (mx.float64 if dtype == mx.float64 else mx.float32)
        assert_close(
            loss, np_cross_entropy(xn, tn), rtol=1e-12 if dtype == mx.float64 else 2e-5
        )


def test_cross_entropy_targets_gradients_and_errors(rng):
    x, xn = random_array(rng, (6, 10), mx.float32, -3, 3)
    tn = np.array([0, 9, -1, -10, 10, 3])
    assert_close(
        mx.fast.cross_entropy(x, mx.array(tn, dtype=mx.int64)), np_cross_entropy(xn, tn)
    )
    assert_close(
        mx.fast.cross_entropy(x, mx.array(np.abs(tn), dtype=mx.uint8)),
        np_cross_entropy(xn, np.abs(tn)),
    )
    t = mx.array([1, 2, 3, 4, 5, 6])
    g = mx.grad(lambda x: mx.fast.cross_entropy(x, t).sum())(x)
    sm = np.exp(xn - xn.max(-1, keepdims=True))
    sm /= sm.sum(-1, keepdims=True)
    sm[np.arange(6), np.arange(1, 7)] -= 1
    assert_close(g, sm, rtol=1e-5)
    vm = mx.vmap(lambda a, b: mx.fast.cross_entropy(a, b))(
        x.reshape(2, 3, 10), t.reshape(2, 3)
    )
    assert_close(vm, np_cross_entropy(xn, np.arange(1, 7)).reshape(2, 3))
    with pytest.raises(ValueError, match=r"\[cross_entropy\]"):
        mx.fast.cross_entropy(x, mx.array([0, 1]))
    with pytest.raises(ValueError, match=r"\[cross_entropy\]"):
        mx.fast.cross_entropy(x, t.astype(mx.float32))
    with pytest.raises(ValueError, match=r"\[cross_entropy\]"):
        mx.fast.cross_entropy(x.astype(mx.int32), t)
    with pytest.raises(ValueError, match=r"\[cross_entropy\]"):
        mx.fast.cross_entropy(mx.array(1.0), mx.array(0))


def test_softmax_rows(rng):
    # The core softmax's fused kernel: short and long rows, aligned and not, every float dtype.
    for dtype in FLOAT_DTYPES:
        for shape in ((3, 7), (5, 4096), (2, 40000), (4, 33)):
            x, xn = random_array(rng, shape, dtype, -10, 10)
            e = np.exp(xn - xn.max(-1, keepdims=True))
            assert_close(mx.softmax(x, axis=-1), e / e.sum(-1, keepdims=True), dtype)


def test_matches_pytorch_on_gpu(rng):
    """On the GPU machine: the same inputs through PyTorch's F.rms_norm, F.layer_norm,
    F.scaled_dot_product_attention and F.cross_entropy."""
    torch = pytest.importorskip("torch")
    if not (on_gpu() and torch.cuda.is_available()):
        pytest.skip("needs kiln and PyTorch on a GPU")
    F = torch.nn.functional
    x, xn = random_array(rng, (64, 4096), mx.float32)
    w, wn = random_array(rng, (4096,), mx.float32, 0.5, 1.5)
    b, bn = random_array(rng, (4096,), mx.float32)
    tx, tw, tb = (
        torch.tensor(a, dtype=torch.float32, device="cuda") for a in (xn, wn, bn)
    )
    if hasattr(F, "rms_norm"):
        assert_close(
            mx.fast.rms_norm(x, w, 1e-5),
            F.rms_norm(tx, (4096,), tw, 1e-5).cpu().numpy(),
            rtol=2e-5,
        )
    assert_close(
        mx.fast.layer_norm(x, w, b, 1e-5),
        F.layer_norm(tx, (4096,), tw, tb, 1e-5).cpu().numpy(),
        rtol=1e-4,
    )
    (q, k, v), (qn, kn, vn) = make_qkv(rng, 2, 8, 2, 300, 300, 128, mx.bfloat16)
    tq, tk, tv = (
        torch.tensor(a, dtype=torch.float32, device="cuda").to(torch.bfloat16)
        for a in (qn, kn, vn)
    )
    for causal in (False, True):
        ref = F.scaled_dot_product_attention(
            tq,
            tk.repeat_interleave(4, 1),
            tv.repeat_interleave(4, 1),
            is_causal=causal,
            scale=0.088,
        )
        out = mx.fast.scaled_dot_product_attention(
            q, k, v, scale=0.088, mask="causal" if causal else None
        )
        assert_close(out, ref.float().cpu().numpy(), mx.bfloat16, rtol=3e-2)
    logits, ln = random_array(rng, (128, 32000), mx.float32, -5, 5)
    tn = rng.integers(0, 32000, size=(128,))
    ref = F.cross_entropy(
        torch.tensor(ln, device="cuda"),
        torch.tensor(tn, device="cuda"),
        reduction="none",
    )
    assert_close(
        mx.fast.cross_entropy(logits, mx.array(tn)), ref.cpu().numpy(), rtol=2e-5
    )
