"""DLPack round trips: kiln <-> NumPy on the CPU (zero-copy both ways), kiln <-> kiln, and
PyTorch / CuPy / JAX on the GPU when they and a GPU are present."""

import gc

import numpy as np
import pytest

import kiln.core as mx
from conftest import ALL_DTYPES, np_dtype, random_np, to_numpy

HAS_GPU = mx.is_available(mx.gpu)


@pytest.fixture(autouse=True)
def on_cpu(request):
    """NumPy reads DLPack tensors from the CPU only: the CPU tests compute there even when
    the suite runs on the GPU (the GPU tests choose their streams themselves)."""
    if "gpu" in request.node.name:
        yield
        return
    with mx.stream(mx.cpu):
        yield


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_numpy_from_kiln(rng, dtype):
    if dtype == mx.bfloat16:
        pytest.skip("NumPy's from_dlpack has no bfloat16")
    values = random_np(rng, (3, 5), dtype).astype(np_dtype(dtype))
    a = mx.array(values, dtype=dtype)
    n = np.from_dlpack(a)
    assert n.dtype == values.dtype and n.shape == (3, 5)
    np.testing.assert_array_equal(n, values)
    assert n.ctypes.data == np.asarray(a).ctypes.data  # zero-copy
    assert not n.flags.writeable  # kiln buffers are immutable
    assert a.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_kiln_from_numpy(rng, dtype):
    if dtype == mx.bfloat16:
        pytest.skip("NumPy's __dlpack__ has no bfloat16")
    values = random_np(rng, (4, 3), dtype).astype(np_dtype(dtype))
    a = mx.from_dlpack(values)
    assert a.dtype == dtype and a.shape == (4, 3)
    assert np.asarray(a).ctypes.data == values.ctypes.data  # zero-copy
    np.testing.assert_array_equal(np.asarray(a), values)
    np.testing.assert_array_equal(np.asarray(a + a), values + values)


def test_strided_views_are_shared(rng):
    base = rng.standard_normal((6, 8)).astype(np.float32)
    b = np.broadcast_to(base[0], (3, 8))  # overlapping elements: shared too, as MLX
    for view in (base.T, base[::2, ::3], base[1:, 2:5], b):
        a = mx.from_dlpack(view)
        np.testing.assert_array_equal(np.asarray(a), view)
        np.testing.assert_allclose(np.asarray(mx.exp(a)), np.exp(view), rtol=1e-6)
        m = memoryview(a)  # the producer's strides, zero-copy
        assert m.strides == view.strides
        assert np.asarray(a).ctypes.data == view.ctypes.data
        assert m.c_contiguous == view.flags.c_contiguous


def test_negative_strides_need_a_copy(rng):
    base = rng.standard_normal((6, 8)).astype(np.float32)
    for view in (base[::-1], base[::2, ::-3], base[:, ::-1].T):
        with pytest.raises(ValueError, match=r"\[from_dlpack\].*negative strides"):
            mx.from_dlpack(view)
        with pytest.raises(ValueError, match=r"\[from_dlpack\].*negative strides"):
            mx.from_dlpack(view, copy=False)
        c = mx.from_dlpack(view, copy=True)  # an explicit copy takes any strides
        np.testing.assert_array_equal(np.asarray(c), view)
        assert np.asarray(c).flags.c_contiguous


def test_kiln_views_export(rng):
    a = mx.array(rng.standard_normal((5, 6)).astype(np.float32))
    for view in (a.T, a[1:4, ::2], a[::-1]):
        np.testing.assert_array_equal(np.from_dlpack(view), to_numpy(view))


def test_source_outlives_python_references(rng):
    values = rng.standard_normal(1000).astype(np.float32)
    expected = values.copy()
    a = mx.from_dlpack(values)
    del values
    gc.collect()
    np.testing.assert_array_equal(np.asarray(a * 1), expected)
    n = np.from_dlpack(mx.array(expected))  # the kiln array is only held by the capsule
    gc.collect()
    np.testing.assert_array_equal(n, expected)


def test_kiln_round_trip_and_capsules():
    a = mx.array([[1, 2], [3, 4]], dtype=mx.bfloat16)
    b = mx.from_dlpack(a)
    assert b.dtype == mx.bfloat16 and b.tolist() == [[1, 2], [3, 4]]
    cap = mx.array([1.5, 2.5]).__dlpack__()  # legacy (unversioned) capsule
    c = mx.from_dlpack(cap)
    assert c.tolist() == [1.5, 2.5]
    with pytest.raises(ValueError, match="consumed"):
        mx.from_dlpack(cap)
    v = mx.array([3]).__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(v)
    assert mx.from_dlpack(v).tolist() == [3]
    d = mx.from_dlpack(np.arange(4), copy=True)
    assert d.tolist() == [0, 1, 2, 3]


def test_empty_and_0d():
    assert np.from_dlpack(mx.zeros((0, 3))).shape == (0, 3)
    assert mx.from_dlpack(np.zeros((2, 0))).shape == (2, 0)
    assert mx.from_dlpack(np.array(3.5, dtype=np.float32)).item() == 3.5
    assert np.from_dlpack(mx.array(7)).item() == 7


def test_dlpack_errors():
    with pytest.raises(TypeError, match=r"\[from_dlpack\]"):
        mx.from_dlpack([1, 2])
    with pytest.raises(BufferError):
        mx.array([1.0]).__dlpack__(dl_device=(2, 0))


# ---------------------------------------------------------------- GPU interoperability

try:
    import torch
except ImportError:
    torch = None
try:
    import cupy
except ImportError:
    cupy = None


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_torch_cpu_round_trip(rng):
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    a = mx.from_dlpack(t)
    np.testing.assert_array_equal(np.asarray(a), t.numpy())
    back = torch.from_dlpack(mx.exp(a))
    torch.testing.assert_close(back, torch.exp(t))


@pytest.mark.skipif(
    torch is None or not HAS_GPU or not (torch and torch.cuda.is_available()),
    reason="needs PyTorch with CUDA and a GPU",
)
def test_torch_gpu_round_trip():
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    a = mx.from_dlpack(t)
    b = mx.exp(a, stream=mx.gpu)
    back = torch.from_dlpack(b)
    assert back.is_cuda
    torch.testing.assert_close(back, torch.exp(t))


@pytest.mark.skipif(cupy is None or not HAS_GPU, reason="needs CuPy and a GPU")
def test_cupy_gpu_round_trip():
    c = cupy.arange(10, dtype=cupy.float32)
    a = mx.from_dlpack(c)
    back = cupy.from_dlpack(mx.add(a, a, stream=mx.gpu))
    assert back.data.ptr != c.data.ptr
    cupy.testing.assert_allclose(back, c * 2)


@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU")
def test_gpu_array_to_numpy_needs_the_cpu_device(rng):
    values = rng.standard_normal((4, 6)).astype(np.float32)
    b = mx.multiply(mx.array(values), 2.0, stream=mx.gpu)
    mx.eval(b)
    assert b.__dlpack_device__()[0] == 2  # kDLCUDA: where the data is
    with pytest.raises(BufferError):
        np.from_dlpack(b)  # NumPy takes host memory only
    with pytest.raises(BufferError, match="copy"):
        b.__dlpack__(dl_device=(1, 0), copy=False)  # no host copy yet
    np.testing.assert_array_equal(np.from_dlpack(b, device="cpu"), 2 * values)


def test_from_dlpack_copy_true_copies_at_the_call():
    src = np.arange(1000, dtype=np.float32)
    c = mx.from_dlpack(src, copy=True)
    shared = mx.from_dlpack(src)
    src[:] = -1  # an in-place change after the call
    assert c.tolist() == list(range(1000))
    assert shared.tolist() == [-1.0] * 1000


def test_from_dlpack_copy_false_shares():
    src = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]  # strided: shared
    s = mx.from_dlpack(src, copy=False)
    src[0, 0] = 99
    assert s.tolist()[0][0] == 99
    base = np.arange(4, dtype=np.int32)
    b = np.broadcast_to(base, (3, 4))  # overlapping: shared as well
    shared = mx.from_dlpack(b, copy=False)
    base[1] = -7
    assert shared.tolist() == [[0, -7, 2, 3]] * 3
    assert mx.from_dlpack(b, copy=True).tolist() == b.tolist()


class _DlpackOnly:
    """A producer with only the DLPack protocol (no __array__, no buffer): as PyTorch's
    bfloat16 tensors are to NumPy."""

    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kwargs):
        return self.x.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


def test_array_constructor_reads_dlpack_producers():
    src = mx.array([1.5, -2.0, 3.25], mx.bfloat16)
    a = mx.array(_DlpackOnly(src))
    assert a.dtype == mx.bfloat16 and a.tolist() == [1.5, -2.0, 3.25]
    assert mx.array(_DlpackOnly(src), mx.float32).dtype == mx.float32
    # A copy, as mx.array of any other source: later changes of the producer do not show.
    values = np.arange(6, dtype=np.int16).reshape(2, 3)
    b = mx.array(_DlpackOnly(values))
    values[:] = 0
    assert b.tolist() == [[0, 1, 2], [3, 4, 5]]

    # A producer kiln cannot read falls back to NumPy's conversion where there is one.
    class DeviceOnly(_DlpackOnly):
        def __dlpack__(self, **kwargs):
            raise BufferError("not readable from the host")

        def __array__(self, dtype=None, copy=None):
            return np.asarray(self.x)

    assert mx.array(DeviceOnly(np.array([4, 5], np.int32))).tolist() == [4, 5]


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_array_constructor_takes_torch_bfloat16():
    t = torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16)
    a = mx.array(t)
    assert a.dtype == mx.bfloat16 and a.tolist() == [1.0, 2.0, 3.0]
    if HAS_GPU and torch.cuda.is_available():
        g = mx.array(t.cuda() * 2)
        assert g.dtype == mx.bfloat16 and g.tolist() == [2.0, 4.0, 6.0]
