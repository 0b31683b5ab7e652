"""Convolutions against a direct float64 loop: conv1d/2d/3d and conv_general over a grid of
strides, paddings (also asymmetric and negative), kernel and input dilations, groups and
flips; conv_transpose1d/2d/3d with output padding; convolve against NumPy; float32, float64,
float16 and bfloat16; non-contiguous inputs; gradients for input and weight against finite
differences; errors as MLX raises them. Runs on the default device."""

import itertools

import numpy as np
import pytest

import kiln.core as mx


def marr(x):
    """A kiln array of x, keeping NumPy's float64 (kiln converts it to float32 by default)."""
    x = np.asarray(x)
    return mx.array(x, dtype=mx.float64) if x.dtype == np.float64 else mx.array(x)

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None


def conv_ref(x, w, stride, lo, hi, kdil, idil, groups, flip):
    """The general convolution by its definition (float64, channels last)."""
    d = x.ndim - 2
    N, C = x.shape[0], x.shape[-1]
    O, Cg = w.shape[0], w.shape[-1]
    Og = O // groups
    # Input dilation and padding (negative padding crops).
    din = [(s - 1) * idil[i] + 1 if s else 0 for i, s in enumerate(x.shape[1:-1])]
    xd = np.zeros((N, *din, C))
    xd[(slice(None),) + tuple(slice(None, None, idil[i]) for i in range(d))] = x
    for i in range(d):
        pad = [(0, 0)] * xd.ndim
        pad[i + 1] = (max(lo[i], 0), max(hi[i], 0))
        xd = np.pad(xd, pad)
        sl = [slice(None)] * xd.ndim
        sl[i + 1] = slice(max(-lo[i], 0), xd.shape[i + 1] - max(-hi[i], 0))
        xd = xd[tuple(sl)]
    ks = w.shape[1:-1]
    if flip:
        w = w[(slice(None),) + (slice(None, None, -1),) * d]
    ext = [(k - 1) * kdil[i] + 1 for i, k in enumerate(ks)]
    out_sp = [(xd.shape[i + 1] - ext[i]) // stride[i] + 1 for i in range(d)]
    y = np.zeros((N, *out_sp, O))
    for o in itertools.product(*[range(s) for s in out_sp]):
        for k in itertools.product(*[range(s) for s in ks]):
            pos = tuple(o[i] * stride[i] + k[i] * kdil[i] for i in range(d))
            patch = xd[(slice(None),) + pos]  # (N, C)
            for g in range(groups):
                y[(slice(None),) + o + (slice(g * Og, (g + 1) * Og),)] += (
                    patch[:, g * Cg : (g + 1) * Cg] @ w[(slice(g * Og, (g + 1) * Og),) + k].T
                )
    return y


def close(got, want, dtype=mx.float32):
    tol = {mx.float32: 1e-4, mx.float64: 1e-10, mx.float16: 2e-2, mx.bfloat16: 5e-2}[dtype]
    got = np.array(got.astype(mx.float32) if dtype == mx.bfloat16 else got, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max(initial=0)))


GRID = list(
    itertools.product(
        [1, 2],  # stride
        [(0, 0), (1, 1), (2, 0), (-1, 1)],  # padding (lo, hi)
        [1, 2],  # kernel dilation
        [1, 2],  # input dilation
        [1, 2],  # groups
        [False, True],  # flip
    )
)


@pytest.mark.parametrize("stride,pad,kdil,idil,groups,flip", GRID)
def test_conv_general_1d_grid(rng, stride, pad, kdil, idil, groups, flip):
    x = rng.standard_normal((2, 9, 4))
    w = rng.standard_normal((4, 3, 4 // groups))
    args = ([stride], [pad[0]], [pad[1]], [kdil], [idil], groups, flip)
    want = conv_ref(x, w, *args)
    got = mx.conv_general(marr(x), marr(w), stride=stride, padding=([pad[0]], [pad[1]]),
                          kernel_dilation=kdil, input_dilation=idil, groups=groups, flip=flip)
    close(got, want, mx.float64)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64, mx.float16, mx.bfloat16])
def test_conv2d_dtypes_and_views(rng, dtype):
    if dtype == mx.bfloat16 and ml_dtypes is None:
        pytest.skip("bfloat16 needs ml_dtypes")
    x = rng.standard_normal((2, 7, 6, 6))
    w = rng.standard_normal((4, 3, 2, 3)) * 0.5
    want = conv_ref(x, w, [2, 1], [1, 0], [1, 0], [1, 2], [1, 1], 2, False)
    xm = marr(x).astype(dtype)
    got = mx.conv2d(xm, marr(w).astype(dtype), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
    assert got.dtype == dtype
    # Round the references' inputs like kiln's.
    wm = marr(w).astype(dtype)
    exact = lambda a: np.array(a if a.dtype == mx.float64 else a.astype(mx.float32), np.float64)
    xr, wr = exact(xm), exact(wm)
    close(got, conv_ref(xr, wr, [2, 1], [1, 0], [1, 0], [1, 2], [1, 1], 2, False), dtype)
    # Non-contiguous input (a transposed copy transposed back) and weight.
    xt = mx.swapaxes(marr(np.ascontiguousarray(np.swapaxes(x, 1, 2))), 1, 2)
    wt = marr(np.ascontiguousarray(w[:, ::-1]))[:, ::-1]
    close(mx.conv2d(xt, wt, stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2), want)


def test_conv1d_conv3d(rng):
    x = rng.standard_normal((3, 11, 6))
    w = rng.standard_normal((5, 4, 6))
    close(mx.conv1d(marr(x), marr(w), stride=2, padding=2, dilation=2),
          conv_ref(x, w, [2], [2], [2], [2], [1], 1, False), mx.float64)
    x = rng.standard_normal((2, 5, 4, 6, 4))
    w = rng.standard_normal((6, 2, 3, 2, 2))
    close(mx.conv3d(marr(x), marr(w), stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2),
          conv_ref(x, w, [1, 2, 1], [1, 0, 1], [1, 0, 1], [2, 1, 1], [1, 1, 1], 2, False), mx.float64)
    # Depthwise: groups == channels.
    x = rng.standard_normal((2, 8, 8, 4))
    w = rng.standard_normal((4, 3, 3, 1))
    close(mx.conv2d(marr(x), marr(w), padding=1, groups=4),
          conv_ref(x, w, [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], 4, False), mx.float64)


def transpose_ref(x, w, stride, pad, dil, out_pad, groups):
    d = x.ndim - 2
    ext = [dil[i] * (w.shape[i + 1] - 1) for i in range(d)]
    lo = [ext[i] - pad[i] for i in range(d)]
    hi = [ext[i] - pad[i] + out_pad[i] for i in range(d)]
    return conv_ref(x, w, [1] * d, lo, hi, dil, stride, groups, True)


def test_conv_transpose(rng):
    x = rng.standard_normal((2, 5, 4))
    w = rng.standard_normal((6, 3, 2))
    got = mx.conv_transpose1d(marr(x), marr(w), stride=2, padding=1, dilation=1, output_padding=1, groups=2)
    want = transpose_ref(x, w, [2], [1], [1], [1], 2)
    assert got.shape == (2, (5 - 1) * 2 - 2 + 2 + 1 + 1, 6)
    close(got, want, mx.float64)
    x = rng.standard_normal((1, 4, 3, 2))
    w = rng.standard_normal((3, 3, 2, 2))
    close(mx.conv_transpose2d(marr(x), marr(w), stride=(2, 1), padding=(1, 0), dilation=(1, 2), output_padding=(1, 0)),
          transpose_ref(x, w, [2, 1], [1, 0], [1, 2], [1, 0], 1), mx.float64)
    x = rng.standard_normal((1, 3, 2, 3, 2))
    w = rng.standard_normal((2, 2, 2, 2, 2))
    close(mx.conv_transpose3d(marr(x), marr(w), stride=2),
          transpose_ref(x, w, [2, 2, 2], [0, 0, 0], [1, 1, 1], [0, 0, 0], 1), mx.float64)
    # conv_transpose is the adjoint of conv: the gradient of conv with respect to its input.
    x = rng.standard_normal((2, 9, 3))
    w = rng.standard_normal((3, 3, 3))
    y = rng.standard_normal((2, 4, 3))
    g = mx.grad(lambda v: mx.sum(mx.conv1d(v, marr(w), stride=2) * marr(y)))(marr(x))
    wt = np.swapaxes(w, 0, 2)  # (C_in, K, C_out)
    close(mx.conv_transpose1d(marr(y), marr(wt), stride=2), np.array(g), mx.float64)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(7, 3), (3, 7), (5, 5), (6, 2), (1, 1)])
def test_convolve(rng, mode, n, m):
    a, v = rng.standard_normal(n), rng.standard_normal(m)
    close(mx.convolve(marr(a), marr(v), mode=mode), np.convolve(a, v, mode), mx.float64)


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        g[idx] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize(
    "conv",
    [
        lambda x, w: mx.conv_general(x, w, stride=2, padding=([1], [2]), kernel_dilation=2, input_dilation=2),
        lambda x, w: mx.conv1d(x, w, padding=1, groups=2),
        lambda x, w: mx.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1),
        lambda x, w: mx.conv_general(x, w, padding=([-1], [1]), flip=True),
    ],
)
def test_gradients(rng, conv):
    x = rng.standard_normal((2, 6, 4))
    w = rng.standard_normal((4, 3, 2))
    try:
        y = conv(marr(x), marr(w))
    except ValueError:
        w = rng.standard_normal((4, 3, 4))
        y = conv(marr(x), marr(w))
    c = rng.standard_normal(y.shape)
    loss = lambda a, b: mx.sum(conv(a, b) * marr(c))
    gx, gw = mx.grad(loss, argnums=(0, 1))(marr(x), marr(w))
    fx = numeric_grad(lambda v: loss(marr(v), marr(w)).item(), x)
    fw = numeric_grad(lambda v: loss(marr(x), marr(v)).item(), w)
    np.testing.assert_allclose(np.array(gx), fx, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.array(gw), fw, rtol=1e-6, atol=1e-6)


def test_second_order_and_vmap(rng):
    x = marr(rng.standard_normal((1, 5, 2)))
    w = marr(rng.standard_normal((2, 3, 2)))
    # d/dw of (d/dx sum(conv^2)) exists and matches finite differences of the inner gradient.
    inner = lambda w_: mx.sum(mx.grad(lambda v: mx.sum(mx.conv1d(v, w_, padding=1) ** 2))(x))
    g = mx.grad(inner)(w)
    wn = np.array(w)
    fd = numeric_grad(lambda v: inner(marr(v)).item(), wn)
    np.testing.assert_allclose(np.array(g), fd, rtol=1e-5, atol=1e-5)
    xs = marr(rng.standard_normal((3, 2, 6, 2)))
    out = mx.vmap(lambda v: mx.conv1d(v, w))(xs)
    for i in range(3):
        np.testing.assert_allclose(out[i], mx.conv1d(xs[i], w), rtol=1e-12)
    ws = marr(rng.standard_normal((3, 2, 3, 2)))
    out = mx.vmap(lambda ww: mx.conv1d(xs[0], ww))(ws)
    for i in range(3):
        np.testing.assert_allclose(out[i], mx.conv1d(xs[0], ws[i]), rtol=1e-12)


def test_errors():
    with pytest.raises(ValueError, match="input channels in the input and weight"):
        mx.conv1d(mx.ones((1, 5, 4)), mx.ones((2, 3, 3)))
    with pytest.raises(ValueError, match="divisible by the number of groups"):
        mx.conv1d(mx.ones((1, 5, 4)), mx.ones((3, 3, 2)), groups=2)
    with pytest.raises(ValueError, match="cannot be smaller than weight"):
        mx.conv1d(mx.ones((1, 2, 4)), mx.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="1-3 spatial dimensions"):
        mx.conv1d(mx.ones((5, 4)), mx.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="Stride sizes must be positive"):
        mx.conv1d(mx.ones((1, 5, 4)), mx.ones((2, 3, 4)), stride=0)
    with pytest.raises(ValueError, match="floating point"):
        mx.conv1d(mx.ones((1, 5, 4), dtype=mx.int32), mx.ones((2, 3, 4), dtype=mx.int32))
    with pytest.raises(ValueError, match="tuple of 2"):
        mx.conv2d(mx.ones((1, 5, 5, 1)), mx.ones((1, 3, 3, 1)), stride=(1, 2, 3))
    with pytest.raises(ValueError, match="Inputs must be 1-d"):
        mx.convolve(mx.ones((2, 2)), mx.ones(2))
    with pytest.raises(ValueError, match="Invalid mode"):
        mx.convolve(mx.ones(3), mx.ones(2), mode="circular")
