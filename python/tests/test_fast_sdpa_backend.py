"""scaled_dot_product_attention's GPU backend switch (KILN_SDPA_BACKEND, the internal
kiln.core.fast._set_sdpa_backend) and, with KILN_DEVICE=gpu, its cuDNN path against float64
NumPy references (outputs and the gradients of q, k and v), with kiln's counters showing which
path ran. Without a GPU only the switch tests run."""

import numpy as np
import pytest

import kiln.core as mx
from conftest import on_gpu, random_array, tolerance

fast = mx.fast


@pytest.fixture
def no_override():
    fast._set_sdpa_backend(None)
    yield
    fast._set_sdpa_backend(None)


def test_switch_reads_the_environment(monkeypatch, no_override):
    monkeypatch.delenv("KILN_SDPA_BACKEND", raising=False)
    assert fast._sdpa_backend() == "auto"  # the default
    for value in ("kiln", "cudnn", "auto"):
        monkeypatch.setenv("KILN_SDPA_BACKEND", value)
        assert fast._sdpa_backend() == value
    monkeypatch.setenv("KILN_SDPA_BACKEND", "")
    assert fast._sdpa_backend() == "auto"


def test_override_wins_and_restores(monkeypatch, no_override):
    monkeypatch.setenv("KILN_SDPA_BACKEND", "cudnn")
    fast._set_sdpa_backend("kiln")
    assert fast._sdpa_backend() == "kiln"
    fast._set_sdpa_backend("auto")
    assert fast._sdpa_backend() == "auto"
    fast._set_sdpa_backend(None)
    assert fast._sdpa_backend() == "cudnn"


@pytest.mark.parametrize("bad", ["CUDNN", "flash", "cudnn ", "automatic", "1"])
def test_bad_values_raise_clearly(monkeypatch, no_override, bad):
    with pytest.raises(ValueError, match=r"'kiln', 'cudnn' or 'auto'") as e:
        fast._set_sdpa_backend(bad)
    assert f"'{bad}'" in str(e.value)
    assert "[scaled_dot_product_attention]" in str(e.value)
    monkeypatch.setenv("KILN_SDPA_BACKEND", bad)
    with pytest.raises(ValueError, match="KILN_SDPA_BACKEND=") as e:
        fast._sdpa_backend()
    assert f"'{bad}'" in str(e.value)


def test_cpu_attention_ignores_the_switch(monkeypatch, rng, no_override):
    monkeypatch.setenv("KILN_SDPA_BACKEND", "not-a-backend")
    q, _ = random_array(rng, (1, 2, 5, 8), mx.float32)
    out = fast.scaled_dot_product_attention(q, q, q, scale=0.5, stream=mx.cpu)
    mx.eval(out)
    counts = fast._sdpa_cudnn_counts()
    assert set(counts) == {
        "forward",
        "backward",
        "forward_fallbacks",
        "backward_fallbacks",
    }
    assert isinstance(fast._sdpa_cudnn_status(), str)


# ---------------------------------------------------------------- the cuDNN path (GPU)


def ref_attention(q, k, v, scale, causal):
    """float64 attention and the vjp of sum(out * g) with respect to q, k, v (NumPy)."""
    B, Hq, Lq, D = q.shape
    Hk, Lk = k.shape[1], k.shape[2]
    R = Hq // Hk
    kk, vv = np.repeat(k, R, axis=1), np.repeat(v, R, axis=1)
    s = scale * q @ kk.transpose(0, 1, 3, 2)
    if causal:
        visible = np.arange(Lk)[None, :] <= np.arange(Lq)[:, None] + (Lk - Lq)
        s = np.where(visible, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p, kk, vv


def ref_grads(q, k, v, g, scale, causal):
    p, kk, vv = ref_attention(q, k, v, scale, causal)
    out = p @ vv
    dp = g @ vv.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = scale * ds @ kk
    dk_full = scale * ds.transpose(0, 1, 3, 2) @ q
    dv_full = p.transpose(0, 1, 3, 2) @ g
    B, Hk = k.shape[0], k.shape[1]
    R = q.shape[1] // Hk
    dk = dk_full.reshape(B, Hk, R, *dk_full.shape[2:]).sum(2)
    dv = dv_full.reshape(B, Hk, R, *dv_full.shape[2:]).sum(2)
    return out, dq, dk, dv


def needs_cudnn_path():
    if not on_gpu():
        pytest.skip("the cuDNN path runs on the GPU (KILN_DEVICE=gpu)")
    why = fast._sdpa_cudnn_status()
    if "built without" in why:
        pytest.skip(why)
    assert why == "", f"the cuDNN path is compiled in but cannot run: {why}"


@pytest.mark.parametrize("dtype", [mx.bfloat16, mx.float16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lengths", [(77, 77), (77, 300)])
def test_cudnn_path_matches_float64(rng, no_override, dtype, causal, lengths):
    needs_cudnn_path()
    Lq, Lk = lengths
    B, Hq, Hk, D = 2, 8, 2, 64
    q, nq = random_array(rng, (B, Hq, Lq, D), dtype, -1, 1)
    k, nk = random_array(rng, (B, Hk, Lk, D), dtype, -1, 1)
    v, nv = random_array(rng, (B, Hk, Lk, D), dtype, -1, 1)
    g, ng = random_array(rng, (B, Hq, Lq, D), dtype, -1, 1)
    scale = D**-0.5
    mask = "causal" if causal else None
    fast._set_sdpa_backend("cudnn")
    before = fast._sdpa_cudnn_counts()
    (out,), grads = mx.vjp(
        lambda a, b, c: fast.scaled_dot_product_attention(
            a, b, c, scale=scale, mask=mask
        ),
        [q, k, v],
        [g],
    )
    mx.eval(out, grads)
    after = fast._sdpa_cudnn_counts()
    assert after["forward"] - before["forward"] == 1, "the forward did not run on cuDNN"
    assert (
        after["backward"] - before["backward"] == 1
    ), "the backward did not run on cuDNN"
    r_out, r_dq, r_dk, r_dv = ref_grads(nq, nk, nv, ng, scale, causal)
    tol = tolerance(dtype)

    def close(a, e, t):
        got = np.asarray(a.astype(mx.float32), dtype=np.float64)
        assert got.shape == e.shape
        err = np.abs(got - e) / (1 + np.abs(e))
        assert err.max() <= t, f"max error {err.max()} > {t}"

    close(out, r_out, tol)
    close(grads[0], r_dq, 4 * tol)
    close(grads[1], r_dk, 16 * tol)
    close(grads[2], r_dv, 16 * tol)


def test_float32_stays_on_kiln_kernels(rng, no_override):
    needs_cudnn_path()
    q, nq = random_array(rng, (1, 4, 33, 64), mx.float32, -1, 1)
    fast._set_sdpa_backend("cudnn")
    before = fast._sdpa_cudnn_counts()
    out = fast.scaled_dot_product_attention(q, q, q, scale=0.125, mask="causal")
    mx.eval(out)
    assert fast._sdpa_cudnn_counts()["forward"] == before["forward"]
    p, _, vv = ref_attention(nq, nq, nq, 0.125, True)
    np.testing.assert_allclose(np.array(out), p @ vv, rtol=1e-4, atol=1e-4)
