"""kiln.core.fast.global_norm (a kiln addition to MLX's API): the L2 norm of several arrays at
once, against float64 NumPy over fresh random inputs: every floating dtype, empty and 0-d
arrays, views (transposed, strided, broadcast, offset by one element), more arrays than one
GPU launch takes and arrays of many chunks; its gradient, compile, clip_grad_norm on top of
it, and bad input."""

import numpy as np
import pytest

import kiln.core as mx
import kiln.optimizers as optim
from conftest import on_gpu, random_array

DTYPES = [mx.float16, mx.bfloat16, mx.float32] + ([] if on_gpu() else [mx.float64])


def reference(values):
    return np.sqrt(sum(float(np.sum(np.square(v.astype(np.float64)))) for v in values))


@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_float64_reference(rng, dtype):
    shapes = [(0,), (), (7,), (33, 65), (1025,), (3, 0, 4), (70000,), (129, 257)]
    arrays, values = [], []
    for shape in shapes:
        a, v = random_array(rng, shape, dtype)
        arrays.append(a)
        values.append(v)
    out = mx.fast.global_norm(arrays)
    assert out.shape == () and out.dtype == (mx.float64 if dtype == mx.float64 else mx.float32)
    np.testing.assert_allclose(out.item(), reference(values), rtol=1e-6)


def test_mixed_dtypes_and_many_arrays(rng):
    # More arrays than one GPU launch's table (160), each a different size and dtype.
    arrays, values = [], []
    for i in range(400):
        dtype = [mx.float32, mx.bfloat16, mx.float16][i % 3]
        a, v = random_array(rng, (1 + (i * 97) % 5000,), dtype)
        arrays.append(a)
        values.append(v)
    out = mx.fast.global_norm(arrays)
    assert out.dtype == mx.float32
    np.testing.assert_allclose(out.item(), reference(values), rtol=1e-6)
    # The same arrays give the same bits (a fixed order of additions).
    assert mx.fast.global_norm(arrays).item() == out.item()


def test_views(rng):
    base, vb = random_array(rng, (40, 50), mx.float32)
    flat, vf = random_array(rng, (4099,), mx.bfloat16)
    row, vr = random_array(rng, (1, 300), mx.float32)
    views = [base.T, base[::3, 1::2], flat[1:], mx.broadcast_to(row, (5, 300))]
    expected = [vb.T, vb[::3, 1::2], vf[1:], np.broadcast_to(vr, (5, 300))]
    np.testing.assert_allclose(
        mx.fast.global_norm(views).item(), reference(expected), rtol=1e-6
    )


def test_empty_list_and_zeros():
    assert mx.fast.global_norm([]).item() == 0.0
    assert mx.fast.global_norm([mx.zeros((5, 5))]).item() == 0.0


def test_gradient_and_compile(rng):
    a, va = random_array(rng, (6, 5), mx.float32)
    b, vb = random_array(rng, (11,), mx.float32)
    norm = reference([va, vb])
    ga, gb = mx.grad(lambda xs: mx.fast.global_norm(xs))([a, b])
    np.testing.assert_allclose(np.array(ga), va / norm, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.array(gb), vb / norm, rtol=1e-5, atol=1e-7)

    def f(x, y):
        return mx.fast.global_norm([x * 2.0, y]) + 1.0

    np.testing.assert_allclose(
        mx.compile(f)(a, b).item(), reference([2 * va, vb]) + 1.0, rtol=1e-6
    )
    # vmap over a leading axis: one norm per slice.
    stacked, vs = random_array(rng, (3, 4, 5), mx.float32)
    out = mx.vmap(lambda x: mx.fast.global_norm([x, x]))(stacked)
    expected = [reference([vs[i], vs[i]]) for i in range(3)]
    np.testing.assert_allclose(np.array(out), expected, rtol=1e-5)


def test_clip_grad_norm_uses_it(rng):
    grads = {}
    values = []
    for k, shape in enumerate([(8, 3), (5,), (2, 2, 2)]):
        a, v = random_array(rng, shape, mx.bfloat16)
        grads[f"p{k}"] = a
        values.append(v)
    total = reference(values)
    clipped, norm = optim.clip_grad_norm(grads, total / 4)
    np.testing.assert_allclose(norm.item(), total, rtol=1e-6)
    for k, v in enumerate(values):
        assert clipped[f"p{k}"].dtype == mx.bfloat16
        np.testing.assert_allclose(
            np.array(clipped[f"p{k}"].astype(mx.float32)), v / 4, rtol=1e-2, atol=1e-3
        )


def test_bad_input_raises_and_loses_nothing():
    good = mx.ones((3,))
    with pytest.raises(ValueError, match=r"\[global_norm\] Array 1 has dtype int32"):
        mx.fast.global_norm([good, mx.array([1, 2], dtype=mx.int32)])
    with pytest.raises(ValueError, match=r"\[global_norm\].*complex64"):
        mx.fast.global_norm([mx.array([1 + 2j])])
    assert good.sum().item() == 3.0
