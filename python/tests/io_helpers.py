"""Helpers of the array I/O tests (test_load.py, test_load_gguf.py): optional reference
packages and their skip markers, random values of every dtype, and a bit-exact comparison.
"""

import numpy as np
import pytest

import kiln.core as mx
from conftest import NP_DTYPES, ml_dtypes, random_np

try:
    import safetensors
    import safetensors.numpy as st_numpy
except ImportError:  # the interop checks skip
    safetensors = st_numpy = None
try:
    import torch
    import safetensors.torch as st_torch
except ImportError:
    torch = st_torch = None
try:
    import gguf
    import gguf.quants as gguf_quants
except ImportError:
    gguf = gguf_quants = None

needs_safetensors = pytest.mark.skipif(
    st_numpy is None, reason="the safetensors package is not installed"
)
needs_torch = pytest.mark.skipif(st_torch is None, reason="PyTorch is not installed")
needs_gguf = pytest.mark.skipif(
    gguf is None, reason="the gguf package is not installed"
)
needs_ml_dtypes = pytest.mark.skipif(
    ml_dtypes is None, reason="bfloat16 in NumPy needs ml_dtypes"
)

SHAPES = [(), (0,), (1,), (23,), (3, 4), (2, 0, 3), (4, 6, 3, 1, 2)]
GGUF_DTYPES = [
    mx.float32,
    mx.float16,
    mx.bfloat16,
    mx.float64,
    mx.int8,
    mx.int16,
    mx.int32,
    mx.int64,
]


def np_values(rng, shape, dtype):
    """Random NumPy values of kiln `dtype` (bfloat16 through ml_dtypes)."""
    if dtype == mx.bfloat16:
        if ml_dtypes is None:
            pytest.skip("bfloat16 in NumPy needs ml_dtypes")
        return rng.uniform(-50, 50, shape).astype(ml_dtypes.bfloat16)
    if dtype in (mx.float16, mx.float32, mx.float64):
        return rng.uniform(-50, 50, shape).astype(NP_DTYPES[dtype])
    return np.asarray(random_np(rng, shape, dtype, int_range=120)).astype(
        NP_DTYPES[dtype]
    )


def fresh(rng, shape, dtype):
    values = np_values(rng, shape, dtype)
    return mx.array(values, dtype=dtype), values


def raw(a):
    """The bytes of a kiln or NumPy array in row-major order."""
    if isinstance(a, mx.array):
        if a.dtype == mx.bfloat16 and ml_dtypes is None:
            a = a.astype(mx.float32)  # exact: every bfloat16 is a float32
        a = np.asarray(a)
    return np.ascontiguousarray(a).tobytes()


def assert_same(got, want):
    """Same shape, dtype and bits (kiln arrays; `want` may be NumPy with kiln's dtype)."""
    assert isinstance(got, mx.array), type(got)
    assert got.shape == tuple(want.shape), (got.shape, want.shape)
    if isinstance(want, mx.array):
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert raw(got) == raw(want)
