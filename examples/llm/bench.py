"""The custom kernels against the built-in compositions: correctness (values and every
gradient, float32 and bfloat16, against a float64 NumPy reference) and speed on this
model's shapes, alone and inside the full compiled training step."""

import time

import numpy as np

from .framework import mx

from . import config as C
from . import kernels as K
from .model import Model, loss_fn


def _f64(a):
    return np.asarray(a.astype(mx.float32), dtype=np.float64)


def _ref_swiglu(g, u, ct):
    s = 1 / (1 + np.exp(-g))
    out = g * s * u
    return out, [ct * u * s * (1 + g * (1 - s)), ct * g * s]


def _ref_add_rms(x, r, w, eps, ct_h, ct_y):
    h = x + r
    inv = 1 / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + eps)
    y = h * inv * w
    g = ct_y * w
    dh = ct_h + inv * g - h * inv**3 * np.mean(g * h, axis=-1, keepdims=True)
    dw = np.sum((ct_y * h * inv).reshape(-1, h.shape[-1]), axis=0)
    return (h, y), [dh, dh, dw]


def check_kernels(shape=(2, 9, 96), seed=0):
    """For float32 and bfloat16: the largest error of the custom kernels' outputs and
    gradients and of the built-ins' against float64, {(kernel, dtype): (custom, builtin)},
    errors relative to the reference's largest magnitude."""
    rng = np.random.default_rng(seed)
    res = {}
    for dtype in (mx.float32, mx.bfloat16):
        arrs = [
            mx.array(rng.standard_normal(shape).astype(np.float32)).astype(dtype) for _ in range(5)
        ]
        g, u, ct, x, r = arrs
        w = mx.array((1 + 0.1 * rng.standard_normal(shape[-1])).astype(np.float32)).astype(dtype)
        ct2 = mx.array(rng.standard_normal(shape).astype(np.float32)).astype(dtype)

        ref_out, ref_grads = _ref_swiglu(_f64(g), _f64(u), _f64(ct))
        errs = []
        for fn in (K.swiglu, K.swiglu_reference):
            out, grads = mx.vjp(fn, [g, u], [ct])
            errs.append(_rel_err([out[0], *grads], [ref_out, *ref_grads]))
        res[("swiglu", str(dtype))] = tuple(errs)

        (h_ref, y_ref), ref_grads = _ref_add_rms(
            _f64(x), _f64(r), _f64(w), 1e-5, _f64(ct), _f64(ct2)
        )
        errs = []
        for fn in (K.add_rms_norm, K.add_rms_norm_reference):
            outs, grads = mx.vjp(lambda x, r, w: fn(x, r, w, 1e-5), [x, r, w], [ct, ct2])
            errs.append(_rel_err([*outs, *grads], [h_ref, y_ref, *ref_grads]))
        res[("add_rms_norm", str(dtype))] = tuple(errs)
    return res


def _rel_err(got, want):
    return max(
        float(np.max(np.abs(_f64(a) - b)) / max(np.max(np.abs(b)), 1e-30))
        for a, b in zip(got, want)
    )


def _time(fn, repeat=5, warmup=1):
    for _ in range(warmup):
        mx.eval(fn())
    best = float("inf")
    for _ in range(repeat):
        tic = time.perf_counter()
        mx.eval(fn())
        best = min(best, time.perf_counter() - tic)
    return best


def kernel_timings(cfg: C.ModelConfig, tokens: int, dtype=mx.float32, repeat=5):
    """Each kernel alone (forward + backward) at the model's shapes for `tokens` tokens:
    {name: (custom seconds, builtin seconds)}."""
    key = mx.random.key(1)
    k = mx.random.split(key, 6)
    D, F = cfg.hidden_size, cfg.intermediate_size
    g, u, ctf = (mx.random.normal((tokens, F), key=k[i]).astype(dtype) for i in range(3))
    x, r, ctd = (mx.random.normal((tokens, D), key=k[3 + i]).astype(dtype) for i in range(3))
    w = mx.ones((D,), dtype)
    out = {}
    for name, custom, builtin, prims, cts in (
        ("swiglu", K.swiglu, K.swiglu_reference, [g, u], [ctf]),
        (
            "add_rms_norm",
            lambda x, r, w: K.add_rms_norm(x, r, w, cfg.rms_norm_eps),
            lambda x, r, w: K.add_rms_norm_reference(x, r, w, cfg.rms_norm_eps),
            [x, r, w],
            [ctd, ctd],
        ),
    ):
        times = []
        for fn in (custom, builtin):

            def fwd_bwd(*a, fn=fn):
                outs, grads = mx.vjp(fn, list(a[: len(prims)]), list(a[len(prims) :]))
                return [*outs, *grads]

            step = mx.compile(fwd_bwd)
            times.append(_time(lambda: step(*prims, *cts), repeat))
        out[name] = tuple(times)
    return out


def step_timings(cfg: C.ModelConfig, tc: C.TrainConfig, dtype: str = "float32", repeat=4):
    """The compiled training step (forward, backward, AdamW) on one batch with each kernel
    set: {"builtin": seconds, "custom": seconds}."""
    from .train import build_model, make_optimizer, make_step

    rng = np.random.default_rng(0)
    x = mx.array(rng.integers(0, cfg.vocab_size, (tc.batch_size, tc.seq_len)).astype(np.int32))
    y = mx.array(rng.integers(0, cfg.vocab_size, (tc.batch_size, tc.seq_len)).astype(np.int32))
    out = {}
    for kernels in ("builtin", "custom"):
        model = build_model(cfg, kernels, dtype)
        opt = make_optimizer(tc)
        opt.init(model.trainable_parameters())
        step = make_step(model, opt, tc, 1, compile=True)
        out[kernels] = _time(lambda: (step(x, y), model.parameters(), opt.state), repeat, warmup=2)
    return out


def report(cfg: C.ModelConfig, tc: C.TrainConfig, dtype: str = "float32", log=print, step=True):
    """Checks the kernels, then prints their speed-up alone and in the training step."""
    log(
        "[kernels] custom kernels against float64 (largest error / largest value; built-ins beside):"
    )
    for (name, dt), (mine, builtin) in check_kernels().items():
        log(
            f"[kernels]   {name:13s} {dt.split('.')[-1]:9s} custom {mine:.1e}   built-in {builtin:.1e}"
        )
    tokens = tc.batch_size * tc.seq_len
    dt = {"float32": mx.float32, "bfloat16": mx.bfloat16}[dtype]
    times = kernel_timings(cfg, tokens, dt)
    log(
        f"[kernels] forward + backward at this model's shapes ({tokens} tokens, {dtype}, {mx.default_device()}):"
    )
    for name, (c, b) in times.items():
        log(
            f"[kernels]   {name:13s} custom {c * 1e3:7.2f} ms   built-in {b * 1e3:7.2f} ms   speed-up {b / c:.2f}x"
        )
    result = {"kernels": times}
    if step:
        st = step_timings(cfg, tc, dtype)
        log(
            f"[kernels]   training step  custom {st['custom'] * 1e3:7.1f} ms   built-in {st['builtin'] * 1e3:7.1f} ms"
            f"   speed-up {st['builtin'] / st['custom']:.2f}x"
        )
        result["step"] = st
    return result
