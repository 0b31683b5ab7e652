"""Moving data between NumPy and kiln as MLX code does: construction, np.array / buffer
views, DLPack, and NumPy operators on kiln arrays."""

import numpy as np

import kiln.core as mx

rng = np.random.default_rng(0)
a_np = rng.standard_normal((4, 5)).astype(np.float32)
a = mx.array(a_np)
assert a.dtype == mx.float32 and a.shape == (4, 5)

# Compute in kiln, read back in NumPy (a view, no copy).
b = mx.exp(a) @ a.T
b_np = np.array(b)
assert np.allclose(b_np, np.exp(a_np) @ a_np.T, rtol=1e-5, atol=1e-5)
assert np.allclose(np.asarray(memoryview(a)), a_np)

# NumPy operators and ufuncs accept kiln arrays.
assert isinstance(a_np + a, np.ndarray) and isinstance(a + a_np, mx.array)
assert np.allclose(np.exp(a), np.exp(a_np))

# DLPack both ways, zero-copy.
c = mx.from_dlpack(a_np)
assert np.shares_memory(np.asarray(c), a_np)
# NumPy reads host memory: device="cpu" asks for it (a copy when c * 2 ran on the GPU).
d = np.from_dlpack(c * 2, device="cpu")
assert np.allclose(d, 2 * a_np)

# Half precision round trip.
h = mx.array(a_np, dtype=mx.float16)
assert np.asarray(h).dtype == np.float16
assert np.allclose(np.asarray(h), a_np, rtol=1e-2, atol=1e-2)
print("ok")
