"""Gradients through a Mamba-2 SSD block (the op mix of mlx-lm's mamba2 / ssm_attn):
depthwise conv1d, silu, softplus + clip, exp, a repeat/tril/cumsum segment sum, matmuls,
rms_norm, logsumexp. float64 values and gradients are checked against an independent
NumPy forward and its central finite differences; float32 gradients must sit within
float32 rounding of the float64 ones (mlx-lm's mamba2 LoRA step once drifted ~3e-4 from
MLX: both frameworks' float32 rounding, amplified by the training steps, not a wrong vjp).
"""

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn

B, L, H, P, N, K = (
    2,
    7,
    3,
    4,
    5,
    4,
)  # batch, length, heads, head dim, state size, conv width
D_IN = H * P
D_CONV = D_IN + 2 * N
EPS = 1e-5


def params(rng):
    return {
        "x": rng.standard_normal((B, L, D_IN + D_CONV + H)) * 0.7,
        "conv_w": rng.standard_normal((D_CONV, K, 1)) * 0.5,
        "conv_b": rng.standard_normal(D_CONV) * 0.1,
        "dt_bias": rng.standard_normal(H) * 0.5,
        "A_log": np.log(np.arange(1, H + 1, dtype=np.float64))
        + 0.1 * rng.standard_normal(H),
        "D": 1 + 0.1 * rng.standard_normal(H),
        "norm_w": 1 + 0.1 * rng.standard_normal(D_IN),
        "out_w": rng.standard_normal((D_IN, 6)) / np.sqrt(D_IN),
    }


def segsum(x):
    # mlx-lm's form: repeat along a new last axis, zero the diagonal and above, cumsum down.
    n = x.shape[-1]
    x = mx.repeat(x[..., None], n, axis=-1)
    return mx.cumsum(mx.tril(x, -1), axis=-2)


def ssd_kiln(p):
    gate, conv_in, dt = mx.split(p["x"], [D_IN, D_IN + D_CONV], axis=-1)
    padded = mx.pad(conv_in, [(0, 0), (K - 1, 0), (0, 0)])
    conv = nn.silu(mx.conv1d(padded, p["conv_w"], groups=D_CONV) + p["conv_b"])
    xs, Bm, Cm = mx.split(conv, [D_IN, D_IN + N], axis=-1)
    dt = mx.clip(nn.softplus(dt + p["dt_bias"]), 0.0, 100.0)
    dtA = dt * -mx.exp(p["A_log"])  # (B, L, H)
    decay = mx.exp(segsum(dtA.swapaxes(1, 2)))  # (B, H, L, L)
    CB = (Cm @ Bm.swapaxes(1, 2))[:, None]  # (B, 1, L, L)
    dtx = (dt[..., None] * xs.reshape(B, L, H, P)).swapaxes(1, 2)  # (B, H, L, P)
    y = (mx.tril(CB * decay, 0) @ dtx).swapaxes(1, 2)
    y = y + xs.reshape(B, L, H, P) * p["D"][:, None]
    y = mx.fast.rms_norm(nn.silu(gate) * y.reshape(B, L, D_IN), p["norm_w"], EPS)
    logits = y @ p["out_w"]
    return mx.sum(mx.logsumexp(logits, axis=-1, keepdims=True) - logits[..., :1])


def ssd_numpy(p):
    silu = lambda v: v / (1 + np.exp(-v))
    x = p["x"]
    gate, conv_in, dt = (
        x[..., :D_IN],
        x[..., D_IN : D_IN + D_CONV],
        x[..., D_IN + D_CONV :],
    )
    padded = np.concatenate([np.zeros((B, K - 1, D_CONV)), conv_in], axis=1)
    conv = (
        sum(padded[:, k : k + L] * p["conv_w"][:, k, 0] for k in range(K)) + p["conv_b"]
    )
    conv = silu(conv)
    xs, Bm, Cm = (
        conv[..., :D_IN].reshape(B, L, H, P),
        conv[..., D_IN : D_IN + N],
        conv[..., D_IN + N :],
    )
    dt = np.clip(np.logaddexp(dt + p["dt_bias"], 0.0), 0.0, 100.0)
    cs = np.cumsum(dt * -np.exp(p["A_log"]), axis=1)  # (B, L, H)
    y = np.zeros((B, L, H, P))
    for t in range(L):
        for s in range(t + 1):  # sum over s <= t of (C_t.B_s) exp(cs_t - cs_s) dt_s x_s
            w = (
                (Cm[:, t] * Bm[:, s]).sum(-1)[:, None]
                * np.exp(cs[:, t] - cs[:, s])
                * dt[:, s]
            )
            y[:, t] += w[..., None] * xs[:, s]
    y = (y + xs * p["D"][:, None]).reshape(B, L, D_IN) * silu(gate)
    eps32 = float(
        np.float32(EPS)
    )  # fast.rms_norm takes eps as a C++ float, as MLX does
    y = y / np.sqrt((y * y).mean(-1, keepdims=True) + eps32) * p["norm_w"]
    logits = y @ p["out_w"]
    m = logits.max(-1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(-1, keepdims=True)) + m
    return float((lse - logits[..., :1]).sum())


def test_ssd_float64_value_and_grad_match_numpy_finite_differences(rng):
    p = params(rng)
    names = list(p)
    with mx.stream(mx.cpu):
        args = [mx.array(p[n], dtype=mx.float64) for n in names]
        fn = lambda *a: ssd_kiln(dict(zip(names, a)))
        val, grads = mx.value_and_grad(fn, argnums=tuple(range(len(names))))(*args)
        val = val.item()
        grads = [np.array(g) for g in grads]
    ref = ssd_numpy(p)
    assert abs(val - ref) <= 1e-12 * max(abs(ref), 1.0), (val, ref)
    h = 1e-6
    for name, g in zip(names, grads):
        assert g.dtype == np.float64 and g.shape == p[name].shape
        flat = rng.choice(g.size, size=min(g.size, 12), replace=False)
        for i in flat:
            idx = np.unravel_index(i, g.shape)
            up, dn = dict(p), dict(p)
            up[name], dn[name] = p[name].copy(), p[name].copy()
            up[name][idx] += h
            dn[name][idx] -= h
            fd = (ssd_numpy(up) - ssd_numpy(dn)) / (2 * h)
            # central differences: O(h^2) truncation + O(1e-16 / h) cancellation
            assert abs(g[idx] - fd) <= 1e-6 * max(np.abs(g).max(), 1.0), (
                name,
                idx,
                g[idx],
                fd,
            )


def test_ssd_float32_grad_within_float32_rounding_of_float64(rng):
    p = params(rng)
    p32 = {n: v.astype(np.float32) for n, v in p.items()}
    names = list(p)
    fn = lambda *a: ssd_kiln(dict(zip(names, a)))
    argnums = tuple(range(len(names)))
    g32 = mx.grad(fn, argnums=argnums)(*[mx.array(p32[n]) for n in names])
    with mx.stream(mx.cpu):
        # the float64 reference starts from the same float32-rounded inputs
        g64 = mx.grad(fn, argnums=argnums)(
            *[mx.array(p32[n], dtype=mx.float64) for n in names]
        )
        g64 = [np.array(g) for g in g64]
    eps = np.finfo(np.float32).eps
    for name, a, r in zip(names, g32, g64):
        a = np.array(a)
        assert a.dtype == np.float32
        # rounding through ~20 chained ops: measured <= 8 ulps of the largest entry
        assert np.abs(a - r).max() <= 64 * eps * np.abs(r).max(), (
            name,
            np.abs(a - r).max(),
            np.abs(r).max(),
        )
