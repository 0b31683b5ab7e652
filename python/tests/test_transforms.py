"""Function transformations with MLX's Python semantics: grad, value_and_grad, vjp, jvp,
vmap, custom_function, checkpoint, stop_gradient. References are analytic derivatives and
loops in NumPy."""

import numpy as np
import pytest

import kiln.core as mx
from conftest import assert_close, random_array

RTOL = 1e-5


def test_grad_simple(rng):
    x, xn = random_array(rng, (5,), mx.float32)
    g = mx.grad(lambda v: (v * v).sum())(x)
    assert_close(g, 2 * xn, rtol=RTOL)
    g = mx.grad(lambda v: mx.sin(v).sum())(x)
    assert_close(g, np.cos(xn), rtol=RTOL)


def test_grad_argnums(rng):
    x, xn = random_array(rng, (3,), mx.float32)
    y, yn = random_array(rng, (3,), mx.float32)

    def f(a, b):
        return (a * b * b).sum()

    assert_close(mx.grad(f)(x, y), yn * yn, rtol=RTOL)
    assert_close(mx.grad(f, argnums=1)(x, y), 2 * xn * yn, rtol=RTOL)
    assert_close(mx.grad(f, argnums=-1)(x, y), 2 * xn * yn, rtol=RTOL)
    gx, gy = mx.grad(f, argnums=(0, 1))(x, y)
    assert_close(gx, yn * yn, rtol=RTOL)
    assert_close(gy, 2 * xn * yn, rtol=RTOL)
    gy_only = mx.grad(f, argnums=[1])(x, y)  # one argnum: its gradient (MLX)
    assert_close(gy_only, 2 * xn * yn, rtol=RTOL)


def test_grad_of_trees(rng):
    w, wn = random_array(rng, (3, 2), mx.float32)
    b, bn = random_array(rng, (2,), mx.float32)
    x, xn = random_array(rng, (4, 3), mx.float32)
    params = {"layer": {"w": w, "b": b}, "scales": [mx.array(2.0)]}

    def loss(p, inputs):
        out = inputs @ p["layer"]["w"] + p["layer"]["b"]
        return (p["scales"][0] * out).sum()

    g = mx.grad(loss)(params, x)
    assert set(g) == {"layer", "scales"} and isinstance(g["scales"], list)
    assert_close(g["layer"]["w"], 2 * np.tile(xn.sum(0)[:, None], (1, 2)), rtol=RTOL)
    assert_close(g["layer"]["b"], np.full(2, 2.0 * 4), rtol=RTOL)
    out = xn @ wn + bn
    assert_close(g["scales"][0], out.sum(), rtol=1e-4)


def test_value_and_grad_with_aux_and_kwargs(rng):
    x, xn = random_array(rng, (4,), mx.float32)

    def f(v, scale=1.0):
        y = v * v * scale
        return y.sum(), {"y": y, "note": "kept"}

    (loss, aux), g = mx.value_and_grad(f)(x, scale=3.0)
    assert loss.item() == pytest.approx(3 * (xn * xn).sum(), rel=1e-5)
    assert_close(aux["y"], 3 * xn * xn, rtol=RTOL)
    assert aux["note"] == "kept"
    assert_close(g, 6 * xn, rtol=RTOL)

    def h(v, *, w):
        return (v * w).sum()

    loss, (gpos, gkw) = mx.value_and_grad(h, argnums=0, argnames="w")(x, w=x * 2)
    assert_close(gpos, 2 * xn, rtol=RTOL)
    assert_close(gkw["w"], xn, rtol=RTOL)
    loss, (gpos, gkw) = mx.value_and_grad(h, argnames=["w"])(x, w=x)
    assert gpos is None and set(gkw) == {"w"}  # as MLX: no positional gradients


def test_grad_errors():
    x = mx.array([1.0, 2.0])
    with pytest.raises(ValueError, match=r"\[grad\]"):
        mx.grad(lambda v: v * 2)(x)  # not a scalar
    with pytest.raises(ValueError, match=r"\[grad\] argnums 3 is out of range"):
        mx.grad(lambda v: v.sum(), argnums=3)(x)
    with pytest.raises(ValueError, match=r"\[grad\] Argument 0 must be an array or a tree"):
        mx.grad(lambda v: mx.array(1.0))([x, "a"])
    with pytest.raises(ValueError, match=r"\[value_and_grad\].*must return an array"):
        mx.value_and_grad(lambda v: 1.0)(x)
    with pytest.raises(ValueError, match="Missing keyword argument 'w'"):
        mx.grad(lambda v, w=None: v.sum(), argnames="w")(x)

    def fails(v):
        raise KeyError("from inside")

    with pytest.raises(KeyError, match="from inside"):  # Python errors inside pass through
        mx.grad(fails)(x)


def test_nested_grad(rng):
    x, xn = random_array(rng, (), mx.float32, 0.5, 1.5)
    d2 = mx.grad(mx.grad(lambda v: v**3))(x)
    assert d2.item() == pytest.approx(6 * xn, rel=1e-5)


def test_vjp_jvp(rng):
    x, xn = random_array(rng, (3,), mx.float32)
    y, yn = random_array(rng, (3,), mx.float32)
    ct, ctn = random_array(rng, (3,), mx.float32)

    def f(a, b):
        return a * mx.exp(b), a + b

    outs, vjps = mx.vjp(f, [x, y], [ct, mx.ones((3,))])
    assert len(outs) == 2 and len(vjps) == 2
    assert_close(outs[0], xn * np.exp(yn), rtol=RTOL)
    assert_close(vjps[0], ctn * np.exp(yn) + 1, rtol=RTOL)
    assert_close(vjps[1], ctn * xn * np.exp(yn) + 1, rtol=RTOL)

    tx, txn = random_array(rng, (3,), mx.float32)
    outs, jvps = mx.jvp(f, [x, y], [tx, mx.zeros((3,))])
    assert_close(jvps[0], txn * np.exp(yn), rtol=RTOL)
    assert_close(jvps[1], txn, rtol=RTOL)

    outs, vjps = mx.vjp(lambda a: mx.sin(a), [x], [ct])
    assert_close(vjps[0], ctn * np.cos(xn), rtol=RTOL)
    with pytest.raises(ValueError, match=r"\[vjp\]"):
        mx.vjp(lambda a: mx.sin(a), [x], [mx.ones((4,))])
    with pytest.raises(ValueError, match=r"\[jvp\]"):
        mx.jvp(lambda a: mx.sin(a), [x], [])


def test_vmap_basic(rng):
    x, xn = random_array(rng, (4, 3), mx.float32)
    y, yn = random_array(rng, (3,), mx.float32)
    f = mx.vmap(lambda a, b: (a * b).sum(), in_axes=(0, None))
    assert_close(f(x, y), xn @ yn, rtol=RTOL)
    g = mx.vmap(lambda a: a * 2, in_axes=1, out_axes=1)
    assert_close(g(x), xn * 2, rtol=RTOL)
    h = mx.vmap(lambda a: mx.exp(a), in_axes=-1)
    assert_close(h(x), np.exp(xn).T, rtol=RTOL)


def test_vmap_trees(rng):
    x, xn = random_array(rng, (5, 2), mx.float32)
    y, yn = random_array(rng, (2, 5), mx.float32)

    def f(d, scale):
        return {"sum": d["a"] + d["b"] * scale, "prod": d["a"] * d["b"]}

    out = mx.vmap(f, in_axes=({"a": 0, "b": 1}, None))({"a": x, "b": y}, 3.0)
    assert_close(out["sum"], xn + yn.T * 3, rtol=RTOL)
    assert_close(out["prod"], xn * yn.T, rtol=RTOL)
    out = mx.vmap(lambda t: [t[0] * 2, t[1]], in_axes=([0, 1],), out_axes=[0, 1])([x, y])
    assert_close(out[0], xn * 2, rtol=RTOL)
    assert_close(out[1], yn, rtol=RTOL)


def test_vmap_of_grad(rng):
    x, xn = random_array(rng, (6, 3), mx.float32)
    per_example = mx.vmap(mx.grad(lambda v: (v**3).sum()))(x)
    assert_close(per_example, 3 * xn**2, rtol=RTOL)


def test_vmap_errors(rng):
    x = mx.zeros((2, 3))
    with pytest.raises(ValueError, match=r"\[vmap\]"):
        mx.vmap(lambda a, b: a + b)(x, mx.zeros((3, 3)))  # mapped sizes differ
    with pytest.raises(ValueError, match=r"\[vmap\]"):
        mx.vmap(lambda a: a, in_axes=(0, 0))(x)  # spec does not match
    with pytest.raises(ValueError, match=r"\[vmap\]"):
        mx.vmap(lambda a: a, in_axes=5)(x)


def test_custom_function_vjp_jvp_vmap(rng):
    calls = {"vjp": 0, "jvp": 0, "vmap": 0}

    @mx.custom_function
    def f(x, y):
        return mx.sin(x) * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        calls["vjp"] += 1
        x, y = primals
        return cotangent * mx.cos(x) * y, cotangent * mx.sin(x)

    @f.jvp
    def f_jvp(primals, tangents):
        calls["jvp"] += 1
        x, y = primals
        dx, dy = tangents
        return dx * mx.cos(x) * y + dy * mx.sin(x)

    @f.vmap
    def f_vmap(inputs, axes):
        calls["vmap"] += 1
        x, y = inputs
        ax, ay = axes
        if ay != ax and ax is not None and ay is not None:
            y = y.swapaxes(ay, ax)
        return mx.sin(x) * y, (ax if ax is not None else ay)

    x, xn = random_array(rng, (4,), mx.float32)
    y, yn = random_array(rng, (4,), mx.float32)
    assert_close(f(x, y), np.sin(xn) * yn, rtol=RTOL)
    gx, gy = mx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(x, y)
    assert_close(gx, np.cos(xn) * yn, rtol=RTOL)
    assert_close(gy, np.sin(xn), rtol=RTOL)
    assert calls["vjp"] == 1
    _, (t,) = mx.jvp(f, [x, y], [mx.ones((4,)), mx.zeros((4,))])
    assert_close(t, np.cos(xn) * yn, rtol=RTOL)
    assert calls["jvp"] == 1
    out = mx.vmap(f, in_axes=(0, None))(mx.array(np.stack([xn, xn]).astype(np.float32)), y)
    assert_close(out, np.stack([np.sin(xn) * yn] * 2), rtol=RTOL)
    assert calls["vmap"] == 1


def test_custom_function_single_argument_and_fallback(rng):
    @mx.custom_function
    def clip_grad(x):
        return x * 1

    @clip_grad.vjp
    def _(primals, cotangent, output):
        return mx.clip(cotangent, -0.5, 0.5)

    x = mx.array([1.0, 2.0])
    g = mx.grad(lambda v: (clip_grad(v) * mx.array([3.0, 0.1])).sum())(x)
    assert_close(g, [0.5, 0.1], rtol=RTOL)

    @mx.custom_function
    def plain(x):  # no rules: transforms fall back to differentiating the function
        return x**2

    assert_close(mx.grad(lambda v: plain(v).sum())(x), [2.0, 4.0], rtol=RTOL)


def test_checkpoint(rng):
    x, xn = random_array(rng, (5,), mx.float32)

    def block(v):
        return mx.sin(mx.exp(v)).sum()

    g = mx.grad(mx.checkpoint(block))(x)
    assert_close(g, np.cos(np.exp(xn)) * np.exp(xn), rtol=1e-4)
    assert_close(mx.checkpoint(lambda a, b: a * b)(x, 2.0), xn * 2, rtol=RTOL)


def test_stop_gradient(rng):
    x, xn = random_array(rng, (3,), mx.float32)
    g = mx.grad(lambda v: (v * mx.stop_gradient(v)).sum())(x)
    assert_close(g, xn, rtol=RTOL)


def test_half_precision_gradients(rng):
    x, xn = random_array(rng, (8,), mx.float16)
    g = mx.grad(lambda v: (v * v).sum())(x)
    assert g.dtype == mx.float16
    assert_close(g, 2 * xn, mx.float16)


def test_indices_computed_from_the_input_carry_no_derivative(rng):
    # Integer arrays carry no derivative, so indices derived from the differentiated input
    # (argsort, argmax) act as if behind stop_gradient. MLX 0.32.4 raises a ValueError
    # asking for that stop_gradient instead; kiln's result is the one it would then give.
    w = mx.array(rng.permutation(8).astype(np.float32) + rng.uniform(0, 0.5, 8).astype(np.float32))
    wn = np.array(w, dtype=np.float64)
    a = mx.array(rng.standard_normal((8, 2, 3)).astype(np.float32))
    b = mx.array(rng.standard_normal((8, 3, 2)).astype(np.float32))
    order = np.argsort(wn)

    def cases(sg):
        return {
            "take": lambda v: mx.take(v * v, sg(mx.argsort(v)[:3])).sum(),
            "argmax": lambda v: (v * 3)[sg(mx.argmax(v))],
            "along": lambda v: (mx.take_along_axis(v, sg(mx.argsort(v)), 0) * mx.arange(8)).sum(),
            "scatter": lambda v: (
                mx.zeros(8).at[sg(mx.argsort(v))].add(v * v) * mx.arange(8)
            ).sum(),
            "gather_mm": lambda v: (
                mx.gather_mm(a * v[:, None, None], b, sg(mx.argsort(v)[:4]), sg(mx.argsort(v)[4:]))
            ).sum(),
        }

    ref = {
        "take": np.where(np.isin(np.arange(8), order[:3]), 2 * wn, 0.0),
        "argmax": np.eye(8)[np.argmax(wn)] * 3,
    }
    along = np.zeros(8)
    along[order] = np.arange(8)
    ref["along"] = along
    ref["scatter"] = 2 * wn * order
    am, bm = np.array(a, dtype=np.float64), np.array(b, dtype=np.float64)
    gm = np.zeros(8)
    for lhs, rhs in zip(order[:4], order[4:]):
        gm[lhs] = (am[lhs] @ bm[rhs]).sum()
    ref["gather_mm"] = gm

    plain, stopped = cases(lambda i: i), cases(mx.stop_gradient)
    for name in plain:
        g = mx.grad(plain[name])(w)
        np.testing.assert_allclose(np.array(g), ref[name], rtol=1e-5, atol=1e-5, err_msg=name)
        np.testing.assert_array_equal(np.array(g), np.array(mx.grad(stopped[name])(w)))
        t = mx.array(rng.standard_normal(8).astype(np.float32))
        _, (jv,) = mx.jvp(plain[name], [w], [t])
        np.testing.assert_allclose(jv.item(), float(ref[name] @ np.array(t)), rtol=1e-4, atol=1e-4)
