"""kiln.core.fft against numpy.fft (float64 references): every transform, any length (1, 7,
1000, 4097, a large prime), n/s cropping and padding, axes, the three norms, batches and
non-contiguous views, frequencies and shifts, stft/istft, gradients by finite differences
and errors. Runs on the default device (KILN_DEVICE=gpu: the GPU)."""

import numpy as np
import pytest

import kiln.core as mx


def cpu_fft_available():
    try:
        mx.eval(mx.fft.fft(mx.zeros(4), stream=mx.cpu))
        return True
    except RuntimeError as e:
        if "without an FFT library" in str(e):
            return False
        raise


pytestmark = pytest.mark.skipif(
    mx.default_device() == mx.cpu and not cpu_fft_available(),
    reason="kiln was built without KISS FFT (libkissfft-dev)",
)

NORMS = ["backward", "ortho", "forward"]


def crand(rng, shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def close(got, want, rtol=2e-5):
    got = np.array(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    scale = max(1.0, float(np.max(np.abs(want)))) if np.size(want) else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("n", [1, 2, 7, 16, 1000, 4097, 10007])
def test_fft_any_length(rng, n):
    x = crand(rng, (3, n))
    xd = x.astype(np.complex128)
    rtol = 1e-4 if n > 1000 else 2e-5
    close(mx.fft.fft(mx.array(x)), np.fft.fft(xd), rtol)
    close(mx.fft.ifft(mx.array(x)), np.fft.ifft(xd), rtol)
    r = x.real.copy()
    close(mx.fft.rfft(mx.array(r)), np.fft.rfft(r.astype(np.float64)), rtol)
    h = np.fft.rfft(r.astype(np.float64))
    close(mx.fft.irfft(mx.array(h.astype(np.complex64)), n), np.fft.irfft(h, n), rtol)


# Long lines: the CPU's four-step path (2^15, 3 * 2^15, 10^5, 2^17), its fallback for a
# length with a large prime factor (2 * 65537: Bluestein), real lines through KISS FFT's real
# transforms (2^15, 3 * 2^15), through the four-step path of half their length (10^5, 2^17)
# and through the complex path (odd 99999); lines along the last axis and strided along the
# first.
@pytest.mark.parametrize("n", [2**15, 3 * 2**15, 10**5, 2**17, 2 * 65537, 99999])
def test_long_lines(rng, n):
    x = crand(rng, (2, n))
    xd = x.astype(np.complex128)
    rtol = 1e-4
    close(mx.fft.fft(mx.array(x)), np.fft.fft(xd), rtol)
    close(mx.fft.ifft(mx.array(x), norm="ortho"), np.fft.ifft(xd, norm="ortho"), rtol)
    close(mx.fft.fft(mx.array(x.T.copy()), axis=0), np.fft.fft(xd.T, axis=0), rtol)
    r = x.real.copy()
    close(mx.fft.rfft(mx.array(r)), np.fft.rfft(r.astype(np.float64)), rtol)
    close(mx.fft.rfft(mx.array(r.T.copy()), axis=0), np.fft.rfft(r.T.astype(np.float64), axis=0), rtol)
    h = np.fft.rfft(r.astype(np.float64))
    close(mx.fft.irfft(mx.array(h.astype(np.complex64)), n), np.fft.irfft(h, n), rtol)
    hk = mx.array(h.astype(np.complex64))
    close(mx.fft.irfft(hk, n, norm="ortho"), np.fft.irfft(h, n, norm="ortho"), rtol)


@pytest.mark.parametrize("norm", NORMS)
def test_one_d_n_axis_norm(rng, norm):
    x = crand(rng, (4, 6, 5))
    xd = x.astype(np.complex128)
    for n in (None, 3, 9):
        for axis in (0, 1, -1):
            close(mx.fft.fft(mx.array(x), n=n, axis=axis, norm=norm), np.fft.fft(xd, n=n, axis=axis, norm=norm))
            close(mx.fft.ifft(mx.array(x), n=n, axis=axis, norm=norm), np.fft.ifft(xd, n=n, axis=axis, norm=norm))
            r = x.real.astype(np.float64)
            close(mx.fft.rfft(mx.array(x.real), n=n, axis=axis, norm=norm), np.fft.rfft(r, n=n, axis=axis, norm=norm))
            close(mx.fft.irfft(mx.array(x), n=n, axis=axis, norm=norm), np.fft.irfft(xd, n=n, axis=axis, norm=norm))


@pytest.mark.parametrize("norm", NORMS)
def test_nd(rng, norm):
    x = crand(rng, (3, 4, 5, 6))
    xd = x.astype(np.complex128)
    r = x.real.astype(np.float64)
    cases = [(None, None), (None, (0, 2)), ((5, 3), (1, 3)), ((2, 4, 7), (1, 2, 3)), (None, (-1, 0))]
    for s, axes in cases:
        kw = dict(s=s, axes=axes, norm=norm)
        close(mx.fft.fftn(mx.array(x), **kw), np.fft.fftn(xd, **kw))
        close(mx.fft.ifftn(mx.array(x), **kw), np.fft.ifftn(xd, **kw))
        close(mx.fft.rfftn(mx.array(x.real), **kw), np.fft.rfftn(r, **kw))
        close(mx.fft.irfftn(mx.array(x), **kw), np.fft.irfftn(xd, **kw))
    for s in (None, (4, 8)):
        close(mx.fft.fft2(mx.array(x), s=s, norm=norm), np.fft.fft2(xd, s=s, norm=norm))
        close(mx.fft.ifft2(mx.array(x), s=s, norm=norm), np.fft.ifft2(xd, s=s, norm=norm))
        close(mx.fft.rfft2(mx.array(x.real), s=s, norm=norm), np.fft.rfft2(r, s=s, norm=norm))
        close(mx.fft.irfft2(mx.array(x), s=s, norm=norm), np.fft.irfft2(xd, s=s, norm=norm))


def test_views_and_dtypes(rng):
    x = crand(rng, (8, 6))
    view = mx.array(x)[::2, ::-1].T  # strided, reversed, transposed
    close(mx.fft.fft(view), np.fft.fft(x[::2, ::-1].T.astype(np.complex128)))
    b = mx.broadcast_to(mx.array(x[0]), (3, 6))
    close(mx.fft.fft(b), np.fft.fft(np.broadcast_to(x[0], (3, 6)).astype(np.complex128)))
    for dt in (mx.float16, mx.float64, mx.int32):
        out = mx.fft.fft(mx.arange(8).astype(dt))
        assert out.dtype == mx.complex64
        close(out, np.fft.fft(np.arange(8.0)))
    assert mx.fft.rfft(mx.arange(8.0)).dtype == mx.complex64
    assert mx.fft.irfft(mx.ones(5, dtype=mx.complex64)).dtype == mx.float32


def test_freq_and_shift():
    for n in (1, 6, 7):
        for d in (1.0, 0.25):
            close(mx.fft.fftfreq(n, d), np.fft.fftfreq(n, d))
            close(mx.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    x = np.arange(30).reshape(5, 6)
    for axes in (None, 0, [1], [0, 1]):
        np.testing.assert_array_equal(mx.fft.fftshift(mx.array(x), axes), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(mx.fft.ifftshift(mx.array(x), axes), np.fft.ifftshift(x, axes))


def stft_ref(x, n_fft, hop, win, center=True, mode="reflect", norm="backward", onesided=True):
    if center:
        p = n_fft // 2
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(p, p)], mode=mode)
    frames = 1 + (x.shape[-1] - n_fft) // hop
    fr = np.stack([x[..., t * hop : t * hop + n_fft] * win for t in range(frames)], -2)
    f = np.fft.rfft if onesided else np.fft.fft
    return np.swapaxes(f(fr, axis=-1, norm=norm), -1, -2)


@pytest.mark.parametrize("mode", ["reflect", "constant", "edge"])
def test_stft_istft(rng, mode):
    x = rng.standard_normal((2, 100))
    w = np.hanning(16)
    got = mx.fft.stft(mx.array(x.astype(np.float32)), n_fft=16, hop_length=4, window=mx.array(w.astype(np.float32)), pad_mode=mode)
    want = stft_ref(x, 16, 4, w, mode=mode)
    close(got, want, 1e-4)
    back = mx.fft.istft(got, n_fft=16, hop_length=4, window=mx.array(w.astype(np.float32)), length=100)
    close(back, x, 1e-4)
    # A shorter window, centred; ortho norm; no centring.
    wp = np.zeros(16)
    wp[3:13] = np.hanning(10)
    got = mx.fft.stft(mx.array(x.astype(np.float32)), n_fft=16, hop_length=5, win_length=10,
                      window=mx.array(np.hanning(10).astype(np.float32)), center=False, norm="ortho")
    close(got, stft_ref(x, 16, 5, wp, center=False, norm="ortho"), 1e-4)
    c = (x + 1j * x[::-1]).astype(np.complex64)
    got = mx.fft.stft(mx.array(c), n_fft=16, hop_length=4)
    close(got, stft_ref(c.astype(np.complex128), 16, 4, np.ones(16), onesided=False), 1e-4)


def numeric_grad(f, x, eps=1e-3):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        g[idx] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


@pytest.mark.parametrize(
    "fn",
    [
        lambda v: mx.abs(mx.fft.fft(v, n=9)) ** 2,
        lambda v: mx.abs(mx.fft.rfft(v)) ** 2,
        lambda v: mx.fft.irfft(mx.fft.rfft(v) * mx.fft.rfft(v), n=7),
        lambda v: mx.real(mx.fft.ifft2(v * (1 + 2j), norm="ortho")),
        lambda v: mx.fft.irfftn(mx.fft.fftn(v), s=(3, 7), axes=(0, 1)),
    ],
)
def test_gradients(rng, fn):
    x = rng.standard_normal((3, 7))
    w = rng.standard_normal(np.shape(np.array(fn(mx.array(x)))))

    def loss(v):
        return float(mx.sum(fn(mx.array(v.astype(np.float32))) * mx.array(w.astype(np.float32))).item())

    g = mx.grad(lambda v: mx.sum(fn(v) * mx.array(w.astype(np.float32))))(mx.array(x.astype(np.float32)))
    np.testing.assert_allclose(np.array(g), numeric_grad(loss, x), rtol=2e-2, atol=2e-2)


def test_errors():
    with pytest.raises(ValueError):
        mx.fft.fft(mx.array(1.0))
    with pytest.raises(ValueError, match="Invalid FFT output size"):
        mx.fft.fft(mx.ones(4), n=0)
    with pytest.raises(ValueError, match="Duplicated axis"):
        mx.fft.fftn(mx.ones((2, 2)), axes=[0, 0])
    with pytest.raises(ValueError, match="Invalid axis|out of bounds"):
        mx.fft.fftn(mx.ones((2, 2)), axes=[2])
    with pytest.raises(ValueError, match="Invalid norm"):
        mx.fft.fft(mx.ones(4), norm="sideways")
    with pytest.raises(ValueError, match="different sizes"):
        mx.fft.fftn(mx.ones((2, 2)), s=[2], axes=[0, 1])
    with pytest.raises(ValueError, match="should not be `None`"):
        mx.fft.fftn(mx.ones((2, 2)), s=[2, 2])
    # As MLX: a complex input to a real transform keeps its real part.
    close(mx.fft.rfft(mx.array([1 + 2j, 3, 4, 5j])), np.fft.rfft([1.0, 3, 4, 0]))
    with pytest.raises(ValueError, match="pad_mode"):
        mx.fft.stft(mx.ones(64), n_fft=16, pad_mode="wrap")
