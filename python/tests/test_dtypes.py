"""Dtype objects, categories, promotion (MLX's table), finfo and iinfo."""

import itertools

import numpy as np
import pytest

import kiln.core as mx
from conftest import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES

NAMES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
         "float16", "bfloat16", "float32", "float64", "complex64"]
SIZES = [1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 8]


def test_dtype_objects():
    for name, size in zip(NAMES, SIZES):
        d = getattr(mx, name)
        assert isinstance(d, mx.Dtype)
        assert d.size == size
        assert repr(d) == f"kiln.core.{'bool' if name == 'bool_' else name}"
        assert d == getattr(mx, name) and hash(d) == hash(getattr(mx, name))
    assert mx.float32 != mx.float16
    assert mx.float32 != "float32"
    assert len(set(ALL_DTYPES)) == 14


CATEGORY_MEMBERS = {
    mx.floating: {mx.float16, mx.bfloat16, mx.float32, mx.float64},
    mx.complexfloating: {mx.complex64},
    mx.inexact: {mx.float16, mx.bfloat16, mx.float32, mx.float64, mx.complex64},
    mx.signedinteger: {mx.int8, mx.int16, mx.int32, mx.int64},
    mx.unsignedinteger: {mx.uint8, mx.uint16, mx.uint32, mx.uint64},
    mx.integer: set(INT_DTYPES),
    mx.number: set(ALL_DTYPES) - {mx.bool_},
    mx.generic: set(ALL_DTYPES),
}


@pytest.mark.parametrize("category", list(CATEGORY_MEMBERS), ids=lambda c: c.name)
def test_issubdtype_categories(category):
    for d in ALL_DTYPES:
        assert mx.issubdtype(d, category) == (d in CATEGORY_MEMBERS[category]), d


def test_issubdtype_between_categories_and_dtypes():
    assert mx.issubdtype(mx.floating, mx.inexact)
    assert mx.issubdtype(mx.signedinteger, mx.number)
    assert not mx.issubdtype(mx.inexact, mx.floating)
    assert mx.issubdtype(mx.float32, mx.float32)
    assert not mx.issubdtype(mx.float32, mx.float64)
    assert not mx.issubdtype(mx.floating, mx.float32)
    assert isinstance(mx.floating, mx.DtypeCategory)


# The result of a binary op on two arrays: NumPy's table except where MLX differs (integers
# with a floating type, uint64 with signed integers, float16 with bfloat16).
def expected_promotion(a, b):
    if a == b:
        return a
    half = {mx.float16, mx.bfloat16}
    if {a, b} == half:
        return mx.float32
    # Integers (and bool) with a floating type keep the floating type, whatever its width.
    for f in FLOAT_DTYPES:
        if f in (a, b):
            other = b if a == f else a
            if other in INT_DTYPES or other == mx.bool_:
                return f
    if mx.bfloat16 in (a, b):
        other = b if a == mx.bfloat16 else a
        return {mx.float32: mx.float32, mx.float64: mx.float64, mx.complex64: mx.complex64}[other]
    if mx.uint64 in (a, b):
        other = b if a == mx.uint64 else a
        if other in (mx.int8, mx.int16, mx.int32, mx.int64):
            return mx.float32
    np_a, np_b = (np.dtype(n.rstrip("_")) for n in (NAMES[ALL_DTYPES.index(a)], NAMES[ALL_DTYPES.index(b)]))
    result = np.promote_types(np_a, np_b)
    if result == np.complex128:
        return mx.complex64
    return getattr(mx, str(result) if str(result) != "bool" else "bool_")


@pytest.mark.parametrize("a, b", list(itertools.product(ALL_DTYPES, ALL_DTYPES)))
def test_promotion_table(a, b):
    assert mx.promote_types(a, b) == expected_promotion(a, b)


@pytest.mark.parametrize("a, b", [(mx.int8, mx.uint8), (mx.float16, mx.int64), (mx.uint64, mx.int32),
                                  (mx.bool_, mx.float16), (mx.bfloat16, mx.float16), (mx.int32, mx.complex64)])
def test_operations_follow_promotion(a, b):
    x, y = mx.array([1], dtype=a), mx.array([2], dtype=b)
    assert (x + y).dtype == mx.promote_types(a, b)
    assert mx.multiply(x, y).dtype == mx.promote_types(a, b)


def test_finfo_iinfo():
    f = mx.finfo(mx.float16)
    assert f.max == 65504.0 and f.min == -65504.0 and f.eps == 2.0**-10
    assert mx.finfo(mx.float32).eps == np.finfo(np.float32).eps
    assert mx.finfo(mx.float64).max == np.finfo(np.float64).max
    assert mx.finfo(mx.bfloat16).eps == 2.0**-7
    assert mx.finfo(mx.complex64).eps == np.finfo(np.float32).eps
    for d in INT_DTYPES:
        info = np.iinfo(np.dtype(NAMES[ALL_DTYPES.index(d)]))
        assert (mx.iinfo(d).min, mx.iinfo(d).max) == (info.min, info.max)
    with pytest.raises(ValueError, match=r"\[finfo\]"):
        mx.finfo(mx.int32)
    with pytest.raises(ValueError, match=r"\[iinfo\]"):
        mx.iinfo(mx.float32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [mx.complex64])
def test_astype_round_trip(dtype):
    x = mx.array([0.5, -1.25, 3.0])
    assert x.astype(dtype).astype(mx.float32).tolist() == [0.5, -1.25, 3.0]


def test_astype_casting_rules():
    x = mx.array([-1.7, 0.0, 2.9])
    assert x.astype(mx.int32).tolist() == [-1, 0, 2]
    assert x.astype(mx.bool_).tolist() == [True, False, True]
    assert mx.array([1 + 2j]).astype(mx.float32).tolist() == [1.0]
