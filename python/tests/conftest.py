"""Shared helpers for kiln's Python tests: fresh random inputs (the seed is printed with
every failure and can be fixed with KILN_TEST_SEED), NumPy references and tolerances by
dtype. The suite runs on the default device; KILN_DEVICE=gpu runs it on the GPU."""

import os
import random
import zlib

import numpy as np
import pytest

import kiln.core as mx

try:
    import ml_dtypes
except ImportError:  # bfloat16 cases skip without it
    ml_dtypes = None

SEED = int(os.environ.get("KILN_TEST_SEED", random.SystemRandom().randrange(2**31)))


def pytest_report_header(config):
    return f"kiln {mx.__version__}, default device {mx.default_device()}, seed {SEED} (KILN_TEST_SEED)"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.sections.append(("kiln", f"KILN_TEST_SEED={SEED}"))


_current = {}


def current_rng():
    """A generator for the running test, seeded like the rng fixture, for helpers that take no
    fixture (the same test and KILN_TEST_SEED give the same draws)."""
    nodeid = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
    if nodeid not in _current:
        _current.clear()
        _current[nodeid] = np.random.default_rng([SEED, zlib.crc32(nodeid.encode()), 1])
    return _current[nodeid]


@pytest.fixture
def rng(request):
    """A generator seeded from the run's seed and the test's name."""
    # crc32, not hash(): str hashes change per process, and KILN_TEST_SEED must reproduce a run.
    return np.random.default_rng([SEED, zlib.crc32(request.node.nodeid.encode())])


# kiln dtype -> NumPy dtype (None when NumPy cannot represent it here).
NP_DTYPES = {
    mx.bool_: np.bool_,
    mx.uint8: np.uint8,
    mx.uint16: np.uint16,
    mx.uint32: np.uint32,
    mx.uint64: np.uint64,
    mx.int8: np.int8,
    mx.int16: np.int16,
    mx.int32: np.int32,
    mx.int64: np.int64,
    mx.float16: np.float16,
    mx.bfloat16: ml_dtypes.bfloat16 if ml_dtypes else None,
    mx.float32: np.float32,
    mx.float64: np.float64,
    mx.complex64: np.complex64,
}
ALL_DTYPES = list(NP_DTYPES)
FLOAT_DTYPES = [mx.float16, mx.bfloat16, mx.float32, mx.float64]
INT_DTYPES = [mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16, mx.int32, mx.int64]


def np_dtype(dtype):
    d = NP_DTYPES[dtype]
    if d is None:
        pytest.skip("bfloat16 needs ml_dtypes")
    return d


def tolerance(dtype):
    """Relative tolerance for results computed in `dtype`."""
    if dtype in (mx.float16, mx.bfloat16):
        return 1e-2 if dtype == mx.float16 else 2e-2
    if dtype in (mx.float32, mx.complex64):
        return 1e-5
    return 1e-12 if dtype == mx.float64 else 0


def random_np(rng, shape, dtype, lo=-2.0, hi=2.0, int_range=100):
    """Random NumPy values representable in `dtype` (integers in [-int_range, int_range]
    within the dtype's range)."""
    if dtype == mx.bool_:
        return rng.random(shape) < 0.5
    if dtype in INT_DTYPES:
        info = np.iinfo(NP_DTYPES[dtype])
        lo_i, hi_i = max(info.min, -int_range), min(info.max, int_range)
        return rng.integers(lo_i, hi_i, size=shape, endpoint=True).astype(NP_DTYPES[dtype])
    if dtype == mx.complex64:
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(np.complex64)
    values = rng.uniform(lo, hi, shape)
    # Round through the target type so the float64 reference sees exactly the stored inputs.
    return values.astype(np_dtype(dtype)).astype(np.float64)


def random_array(rng, shape, dtype, lo=-2.0, hi=2.0, int_range=100):
    """(kiln array, float64/complex NumPy copy of exactly its values)."""
    values = random_np(rng, shape, dtype, lo, hi, int_range)
    a = mx.array(values, dtype=dtype)
    return a, np.asarray(values)


def to_numpy(a):
    """A kiln array as NumPy, widening half types (for comparisons)."""
    if a.dtype == mx.bfloat16:
        return np.asarray(a.astype(mx.float32))
    return np.array(a)


def assert_close(actual, expected, dtype=None, rtol=None, atol=None):
    """`actual` (kiln) matches `expected` (NumPy) in shape and values: |a - e| <= rtol * (1 +
    |e|); NaNs must match."""
    dtype = dtype or actual.dtype
    got = to_numpy(actual)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    rtol = tolerance(dtype) if rtol is None else rtol
    if got.dtype == np.bool_ or expected.dtype == np.bool_ or (rtol == 0 and atol is None):
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(
            got.astype(np.complex128 if np.iscomplexobj(got) else np.float64),
            expected,
            rtol=rtol,
            atol=rtol if atol is None else atol,
            equal_nan=True,
        )


def on_gpu():
    return mx.default_device() == mx.gpu
