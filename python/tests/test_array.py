"""The array class: construction, properties, conversions, operators and methods."""

import copy
import pickle

import numpy as np
import pytest

import kiln.core as mx
from conftest import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    assert_close,
    ml_dtypes,
    np_dtype,
    random_array,
    random_np,
    to_numpy,
)

# ---------------------------------------------------------------- construction


@pytest.mark.parametrize(
    "value, dtype",
    [
        (True, mx.bool_),
        (3, mx.int32),
        (-(2**40), mx.int64),
        (2**63 + 5, mx.uint64),
        (2.5, mx.float32),
        (1 + 2j, mx.complex64),
    ],
)
def test_scalar_default_dtypes(value, dtype):
    a = mx.array(value)
    assert a.dtype == dtype
    assert a.shape == ()
    assert a.ndim == 0 and a.size == 1
    assert a.item() == pytest.approx(value) if dtype != mx.bool_ else a.item() is value


@pytest.mark.parametrize(
    "value, dtype, shape",
    [
        ([1, 2, 3], mx.int32, (3,)),
        ([[1, 2], [3, 4]], mx.int32, (2, 2)),
        ([True, False], mx.bool_, (2,)),
        ([1, 2.5], mx.float32, (2,)),
        ([True, 2], mx.int32, (2,)),
        ([1, 2**35], mx.int64, (2,)),
        ([1.0, 1j], mx.complex64, (2,)),
        ((1, (2, 3)[0]), mx.int32, (2,)),
        ([], mx.float32, (0,)),
        ([[], []], mx.float32, (2, 0)),
        ([[[1], [2]], [[3], [4]]], mx.int32, (2, 2, 1)),
    ],
)
def test_nested_list_inference(value, dtype, shape):
    a = mx.array(value)
    assert a.dtype == dtype
    assert a.shape == shape
    np.testing.assert_array_equal(np.array(a.tolist(), dtype=np.complex128 if dtype == mx.complex64 else None),
                                  np.array(value))


def test_list_of_arrays_and_mixed_leaves(rng):
    x = mx.array([1.0, 2.0], dtype=mx.float16)
    a = mx.array([x, [3, 4]])  # an array beside a list; ints are weak against float16
    assert a.dtype == mx.float16 and a.shape == (2, 2)
    assert a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    n = rng.standard_normal((3,)).astype(np.float32)
    b = mx.array([n, n * 2])
    assert b.dtype == mx.float32
    assert_close(b, np.stack([n, n * 2]))
    c = mx.array([np.int64(3), 4])
    assert c.dtype == mx.int64


@pytest.mark.parametrize(
    "value",
    [
        [1, [2, 3]],
        [[1, 2], [3]],
        [[1, 2], 3],
        [mx.array([1, 2]), mx.array([1, 2, 3])],
        [mx.array([1.0]), 1.0],
        [1.0, mx.array([1.0])],
    ],
)
def test_ragged_lists_raise(value):
    with pytest.raises(ValueError, match=r"^Initialization encountered non-uniform length\.$"):
        mx.array(value)


@pytest.mark.parametrize("value", ["abc", None, {"a": 1}, object()])
def test_unsupported_types_raise(value):
    with pytest.raises(TypeError, match=r"\[array\]"):
        mx.array(value)
    with pytest.raises(ValueError, match=r"\[array\]"):  # a bad element: ValueError, as MLX
        mx.array([1, value])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_numpy_round_trip_every_dtype(rng, dtype):
    values = random_np(rng, (3, 4), dtype).astype(np_dtype(dtype))
    # NumPy's float64 becomes float32 by default, as in MLX; asked for, it stays float64.
    a = mx.array(values, dtype=dtype) if dtype == mx.float64 else mx.array(values)
    assert a.dtype == dtype
    if dtype == mx.float64:
        assert mx.array(values).dtype == mx.float32
    assert a.shape == (3, 4)
    back = np.asarray(a)
    assert back.dtype == values.dtype
    np.testing.assert_array_equal(back, values)


def test_numpy_conversions_keep_values(rng):
    # Non-contiguous, byte-swapped and complex128 inputs.
    base = rng.standard_normal((4, 6))
    np.testing.assert_array_equal(np.asarray(mx.array(base[::2, ::-3], dtype=mx.float64)),
                                  base[::2, ::-3])
    swapped = base.astype(">f4")
    np.testing.assert_array_equal(np.asarray(mx.array(swapped)), base.astype(np.float32))
    z = (base + 1j * base).astype(np.complex128)
    a = mx.array(z)
    assert a.dtype == mx.complex64
    np.testing.assert_allclose(np.asarray(a), z.astype(np.complex64))


@pytest.mark.parametrize("dtype", [np.dtype("U3"), np.dtype(object), np.dtype("M8[s]"), np.longdouble])
def test_unsupported_numpy_dtypes_raise(dtype):
    if np.dtype(dtype) == np.float64:  # long double is double on some platforms
        pytest.skip("long double is float64 here")
    with pytest.raises(TypeError, match="not supported"):
        mx.array(np.zeros(2, dtype=dtype))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dtype_argument_converts(rng, dtype):
    values = rng.uniform(-3, 3, (5,))
    a = mx.array(values.tolist(), dtype=dtype)
    assert a.dtype == dtype
    expected = values.astype(np_dtype(dtype))
    np.testing.assert_array_equal(np.asarray(a), expected)
    b = mx.array(values, dtype=dtype)
    np.testing.assert_array_equal(np.asarray(b), expected)


def test_integer_overflow_raises():
    with pytest.raises(OverflowError, match="uint8"):
        mx.array([1, 300], dtype=mx.uint8)
    with pytest.raises(OverflowError):
        mx.array(-1, dtype=mx.uint32)
    with pytest.raises(OverflowError):
        mx.array(2**70)


def test_array_from_array_and_array_like():
    a = mx.array([1, 2, 3])
    assert mx.array(a).tolist() == [1, 2, 3]
    assert mx.array(a, dtype=mx.float32).dtype == mx.float32
    assert mx.array(memoryview(np.arange(3, dtype=np.int16))).dtype == mx.int16

    class Like:
        def __array__(self, dtype=None, copy=None):
            return np.array([4.0, 5.0], dtype=np.float32)

    assert mx.array(Like()).tolist() == [4.0, 5.0]


# ---------------------------------------------------------------- properties and conversion


def test_properties(rng):
    a, _ = random_array(rng, (2, 3, 4), mx.float16)
    assert a.shape == (2, 3, 4)
    assert isinstance(a.shape, tuple)
    assert a.ndim == 3
    assert a.size == 24
    assert a.dtype == mx.float16
    assert a.itemsize == 2
    assert a.nbytes == 48
    assert len(a) == 2
    assert a.T.shape == (4, 3, 2)


def test_item_and_tolist_types():
    assert mx.array(True).item() is True
    assert isinstance(mx.array(3, dtype=mx.uint64).item(), int)
    assert isinstance(mx.array(3.5, dtype=mx.float16).item(), float)
    assert mx.array(1 + 2j).item() == 1 + 2j
    assert mx.array([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert mx.array(2.5).tolist() == 2.5
    assert mx.array([[1.5, 2]], dtype=mx.bfloat16).tolist() == [[1.5, 2.0]]
    with pytest.raises(ValueError, match=r"\[item\]"):
        mx.array([1, 2]).item()


def test_scalar_conversions():
    assert int(mx.array(7)) == 7
    assert float(mx.array(2.5)) == 2.5
    assert complex(mx.array(1j)) == 1j
    assert bool(mx.array([1]))
    assert not bool(mx.array(0.0))
    assert [10, 20, 30][mx.array(1)] == 20  # __index__
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.array([1, 2]))
    with pytest.raises(TypeError):
        [1, 2][mx.array(1.0)]
    assert f"{mx.array(3.14159):.2f}" == "3.14"


def test_repr():
    assert repr(mx.array([1, 2])) == "array([1, 2], dtype=int32)"
    assert repr(mx.array(1.5)) == "array(1.5, dtype=float32)"
    assert repr(mx.array([True, False])) == "array([True, False], dtype=bool)"
    assert repr(mx.array([[1.0, 2.5], [3, 4]])) == "array([[1, 2.5],\n       [3, 4]], dtype=float32)"
    assert repr(mx.array([1 + 2j])) == "array([1+2j], dtype=complex64)"
    assert repr(mx.array([[]])) == "array([[]], dtype=float32)"
    assert str(mx.array([3], dtype=mx.uint8)) == "array([3], dtype=uint8)"
    big = repr(mx.array(np.arange(2000, dtype=np.int32)))
    assert big == "array([0, 1, 2, ..., 1997, 1998, 1999], dtype=int32)"
    cube = repr(mx.array(np.arange(8).reshape(2, 2, 2)))
    assert cube == "array([[[0, 1],\n        [2, 3]],\n       [[4, 5],\n        [6, 7]]], dtype=int64)"
    assert "nan" in repr(mx.array([float("nan"), float("-inf")])) and "-inf" in repr(mx.array([float("-inf")]))


def test_numpy_views_are_zero_copy_and_writable(rng):
    a = mx.array(rng.standard_normal((3, 4)).astype(np.float32))
    v1 = np.asarray(a)
    v2 = np.asarray(a)
    assert v1.ctypes.data == v2.ctypes.data  # both view the array's buffer
    assert v1.flags.writeable and not v1.flags.owndata  # as MLX
    m = memoryview(a)
    assert not m.readonly and m.shape == (3, 4) and m.format == "f"
    np.testing.assert_array_equal(np.asarray(m), v1)
    t = np.asarray(a.T)  # strided views keep their strides
    assert t.ctypes.data == v1.ctypes.data
    np.testing.assert_array_equal(t, v1.T)
    c = np.array(a)  # np.array copies and is writable
    c[0, 0] = 100
    assert a[0, 0].item() != 100


@pytest.mark.parametrize("dtype", [mx.float32, mx.int32, mx.uint8, mx.float16, mx.complex64, mx.bool_])
def test_writes_through_views_show_in_the_array(rng, dtype):
    # MLX's semantics: np.array(a, copy=False), np.asarray and memoryview share a writable
    # buffer; later reads and ops (on any device) see the writes.
    values = random_np(rng, (3, 4), dtype).astype(np_dtype(dtype))
    a = mx.array(values)
    rtol = 1e-2 if dtype == mx.float16 else 1e-6

    def check_square(x, v):
        got = np.array(mx.multiply(x, x)).astype(np.complex128)
        np.testing.assert_allclose(got, (v * v).astype(np.complex128), rtol=rtol)

    check_square(a, values)  # a first use (on the GPU: the upload)
    view = np.array(a, copy=False)
    assert view.flags.writeable and not view.flags.owndata
    new = random_np(rng, (3, 4), dtype).astype(np_dtype(dtype))
    view[...] = new
    np.testing.assert_array_equal(np.array(a), new)
    assert a.tolist() == new.tolist()
    check_square(a, new)  # on the GPU: the refreshed upload
    # A transposed view writes through to the same elements.
    t = np.asarray(a.T)
    t[1, 0] = values[0, 1]
    assert np.array(a)[0, 1] == values[0, 1]
    # memoryview writes (as bytes of a flat view).
    flat = mx.array(values.reshape(-1))
    m = memoryview(flat).cast("B")  # bytes: memoryview has no item access for e and Zf
    size = flat.itemsize
    m[2 * size : 3 * size] = new.reshape(-1)[5:6].tobytes()
    assert flat[2].item() == new.reshape(-1)[5].item()
    # copy=True is a separate buffer.
    c = np.array(a, copy=True)
    c[...] = values
    np.testing.assert_array_equal(np.array(a)[1:], new[1:])


def test_views_of_computed_and_broadcast_arrays(rng):
    x = mx.array(rng.standard_normal((2, 3)).astype(np.float32))
    y = mx.exp(x)  # a computed (lazy, then evaluated) array
    v = np.array(y, copy=False)
    v[0, 0] = 5.0
    assert y[0, 0].item() == 5.0 and (y + 0)[0, 0].item() == 5.0
    b = mx.broadcast_to(mx.ones((2, 2)), (5, 2, 2))
    bv = np.array(b, copy=False)
    assert bv.strides == (0, 8, 4) and bv.flags.writeable and not bv.flags.owndata
    np.testing.assert_array_equal(bv, np.ones((5, 2, 2), np.float32))
    e = np.array(mx.zeros((0, 3)), copy=False)
    assert e.shape == (0, 3) and e.flags.writeable


def test_views_outlive_rebinding():
    a = mx.array(np.arange(1000, dtype=np.float32))
    view = np.asarray(a)
    mem = memoryview(a)
    a += 1  # rebinds `a`; the views keep the old buffer alive
    del a
    np.testing.assert_array_equal(view, np.arange(1000, dtype=np.float32))
    assert mem[999] == 999


def test_buffer_formats():
    for dtype, fmt in [(mx.bool_, "?"), (mx.int8, "b"), (mx.uint16, "H"), (mx.float16, "e"), (mx.complex64, "Zf")]:
        assert memoryview(mx.array([1, 0], dtype=dtype)).format == fmt
    with pytest.raises(BufferError):
        memoryview(mx.array([1.0], dtype=mx.bfloat16))


@pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes")
def test_bfloat16_to_numpy():
    a = mx.array([1.5, -2.25], dtype=mx.bfloat16)
    n = np.asarray(a)
    assert n.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(n.astype(np.float32), [1.5, -2.25])


def test_array_protocol_dtype_and_copy():
    a = mx.array([1, 2, 3], dtype=mx.int16)
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    c = a.__array__(copy=True)
    assert c.flags.writeable


def test_iteration_and_len(rng):
    a, n = random_array(rng, (3, 2), mx.float32)
    rows = list(a)
    assert len(rows) == 3
    for r, e in zip(rows, n):
        assert_close(r, e)
    assert len(mx.array([[1]])) == 1
    with pytest.raises(TypeError):
        len(mx.array(1))
    with pytest.raises(TypeError):
        iter(mx.array(1))


def test_pickle_and_copy(rng):
    for dtype in [mx.float32, mx.bfloat16, mx.int8, mx.complex64]:
        a, _ = random_array(rng, (2, 3), dtype)
        b = pickle.loads(pickle.dumps(a.T))
        assert b.dtype == dtype and b.shape == (3, 2)
        np.testing.assert_array_equal(to_numpy(b), to_numpy(a.T))
    assert pickle.loads(pickle.dumps(mx.float16)) == mx.float16
    a = mx.array([1, 2])
    assert copy.copy(a).tolist() == [1, 2] and copy.deepcopy(a).tolist() == [1, 2]


def test_hashable():
    a, b = mx.array(1), mx.array(1)
    assert len({a, b, a}) == 2


# ---------------------------------------------------------------- operators


BINARY_OPERATORS = [
    ("+", lambda x, y: x + y),
    ("-", lambda x, y: x - y),
    ("*", lambda x, y: x * y),
    ("/", lambda x, y: x / y),
    ("//", lambda x, y: x // y),
    ("%", lambda x, y: x % y),
    ("**", lambda x, y: x**y),
    ("==", lambda x, y: x == y),
    ("!=", lambda x, y: x != y),
    ("<", lambda x, y: x < y),
    ("<=", lambda x, y: x <= y),
    (">", lambda x, y: x > y),
    (">=", lambda x, y: x >= y),
]


@pytest.mark.parametrize("name, op", BINARY_OPERATORS, ids=[n for n, _ in BINARY_OPERATORS])
def test_binary_operators(rng, name, op):
    lo = 0.5 if name in ("**",) else -3
    a, an = random_array(rng, (3, 4), mx.float32, lo, 3)
    b, bn = random_array(rng, (4,), mx.float32, 0.5, 3)
    assert_close(op(a, b), op(an, bn), mx.float32, rtol=1e-5)
    # Reflected forms with a Python scalar and with a NumPy array.
    assert_close(op(2.5, b), op(2.5, bn), mx.float32, rtol=1e-5)
    assert_close(op(a, 1.5), op(an, 1.5), mx.float32, rtol=1e-5)
    # A NumPy array on the left converts the kiln array and gives NumPy's result, as with
    # MLX arrays; on the right, a kiln array.
    r = op(bn.astype(np.float32), a)
    assert isinstance(r, np.ndarray)
    np.testing.assert_allclose(r, op(bn, an).astype(r.dtype), rtol=1e-5)
    r = op(a, bn.astype(np.float32))
    assert isinstance(r, mx.array)
    assert_close(r, op(an, bn), mx.float32, rtol=1e-5)


@pytest.mark.parametrize("op", ["&", "|", "^", "<<", ">>"])
def test_bitwise_operators(rng, op):
    a, an = random_array(rng, (5,), mx.int32)
    an, bn = np.abs(an).astype(np.int32), rng.integers(0, 5, (5,)).astype(np.int32)
    a, b = mx.array(an), mx.array(bn)
    expected = eval(f"an {op} bn")
    np.testing.assert_array_equal(np.asarray(eval(f"a {op} b")), expected)
    np.testing.assert_array_equal(np.asarray(eval(f"a {op} 3")), eval(f"an {op} 3"))
    np.testing.assert_array_equal(np.asarray(eval(f"3 {op} b")), eval(f"3 {op} bn"))


def test_unary_operators(rng):
    a, an = random_array(rng, (6,), mx.float32)
    assert_close(-a, -an)
    assert_close(+a, an)
    assert_close(abs(a), np.abs(an))
    i = mx.array([1, -2, 3])
    assert (~i).tolist() == [-2, 1, -4]
    assert (~mx.array([True, False])).tolist() == [False, True]
    assert_close(round(mx.array([1.25, 2.5, -0.5])), np.round([1.25, 2.5, -0.5]))


def test_matmul_operator(rng):
    a, an = random_array(rng, (3, 4), mx.float32)
    b, bn = random_array(rng, (4, 2), mx.float32)
    assert_close(a @ b, an @ bn, rtol=1e-5)
    assert_close(an.astype(np.float32) @ b, an @ bn, rtol=1e-5)
    c = a
    c @= b
    assert c.shape == (3, 2)


def test_in_place_operators_rebind(rng):
    a = mx.array([1.0, 2.0])
    alias = a
    before = a[0:1]  # a view taken before the update keeps the old value
    a += 1
    assert alias is a  # the same Python object, now holding the new array
    assert a.tolist() == [2.0, 3.0]
    assert before.tolist() == [1.0]
    a *= mx.array([2.0, 0.5])
    a -= 1
    a /= 2
    assert a.tolist() == [1.5, 0.25]
    b, ref = mx.array([7, 9]), np.array([7, 9], dtype=np.int32)
    b //= 2
    ref //= 2
    b %= 3
    ref %= 3
    b **= 2
    ref **= 2
    b <<= 2
    ref <<= 2
    b >>= 1
    ref >>= 1
    b |= 8
    ref |= 8
    b &= 12
    ref &= 12
    b ^= 1
    ref ^= 1
    assert b.dtype == mx.int32
    assert b.tolist() == ref.tolist()


def test_divmod(rng):
    a, an = random_array(rng, (8,), mx.int32)
    bn = rng.integers(1, 5, (8,)).astype(np.int32)
    q, r = divmod(a, mx.array(bn))
    np.testing.assert_array_equal(np.asarray(q), an.astype(np.int64) // bn)
    np.testing.assert_array_equal(np.asarray(r), an.astype(np.int64) % bn)
    q, r = divmod(7, mx.array([2, 3]))
    assert q.tolist() == [3, 2] and r.tolist() == [1, 1]


def test_equality_with_other_types():
    a = mx.array([1, 2])
    assert (a == None) is False  # noqa: E711
    assert (a != "x") is True
    with pytest.raises(ValueError):  # lists, tuples and strings: ValueError, as MLX
        a < "x"
    with pytest.raises(ValueError):
        a + "x"
    with pytest.raises(TypeError):  # other objects: Python's TypeError
        a + object()


# ---------------------------------------------------------------- weak scalars


@pytest.mark.parametrize(
    "dtype, scalar, expected",
    [
        (mx.float16, 1.0, mx.float16),
        (mx.bfloat16, 2, mx.bfloat16),
        (mx.int8, 3, mx.int8),
        (mx.uint8, 3, mx.uint8),
        (mx.int16, 2.5, mx.float32),
        (mx.bool_, 1, mx.int32),
        (mx.bool_, True, mx.bool_),
        (mx.float32, 1j, mx.complex64),
        (mx.float64, 1.0, mx.float64),
        (mx.complex64, 2.0, mx.complex64),
        (mx.int64, 2**40, mx.int64),
    ],
)
def test_weak_python_scalars(dtype, scalar, expected):
    x = mx.array([1, 0], dtype=dtype)
    assert (x + scalar).dtype == expected
    assert (scalar + x).dtype == expected
    assert mx.add(x, scalar).dtype == expected
    assert mx.multiply(scalar, x).dtype == expected


def test_weak_scalar_overflow():
    with pytest.raises(OverflowError, match="uint8"):
        mx.array([1], dtype=mx.uint8) + 300


def test_strong_numpy_scalars():
    x = mx.array([1, 2], dtype=mx.float16)
    assert (x + np.float32(1)).dtype == mx.float32
    assert (x + mx.array(1.0)).dtype == mx.float32


# ---------------------------------------------------------------- methods


def test_methods_mirror_ops(rng):
    a, an = random_array(rng, (2, 3, 4), mx.float32, 0.5, 2)
    assert_close(a.sum(), an.sum(), rtol=1e-5)
    assert_close(a.sum(axis=1), an.sum(axis=1), rtol=1e-5)
    assert_close(a.mean((0, 2), keepdims=True), an.mean((0, 2), keepdims=True), rtol=1e-5)
    assert_close(a.max(-1), an.max(-1))
    assert_close(a.min(), an.min())
    assert_close(a.prod(2), an.prod(2), rtol=1e-5)
    assert_close(a.var(1, ddof=1), an.var(1, ddof=1), rtol=1e-4)
    assert_close(a.std(), an.std(), rtol=1e-4)
    assert a.argmax(1).tolist() == an.argmax(1).tolist()
    assert a.argmin().item() == an.argmin()
    assert (a > 1).all().item() == (an > 1).all()
    assert (a > 1).any(0).tolist() == (an > 1).any(0).tolist()
    assert_close(a.logsumexp(-1), np.log(np.exp(an).sum(-1)), rtol=1e-5)
    assert_close(a.cumsum(1), an.cumsum(1), rtol=1e-5)
    assert_close(a.cumprod(), an.cumprod(), rtol=1e-4)
    assert a.reshape(4, 6).shape == (4, 6)
    assert a.reshape((6, -1)).shape == (6, 4)
    assert a.transpose(2, 0, 1).shape == (4, 2, 3)
    assert a.transpose().shape == (4, 3, 2)
    assert a.flatten().shape == (24,)
    assert a.flatten(1).shape == (2, 12)
    assert a[:, :1].squeeze(1).shape == (2, 4)
    assert a.swapaxes(0, 2).shape == (4, 3, 2)
    assert a.moveaxis(0, -1).shape == (3, 4, 2)
    assert [p.shape for p in a.split(2, axis=2)] == [(2, 3, 2), (2, 3, 2)]
    assert_close(a.astype(mx.float16), an, mx.float16)
    refs = {"rsqrt": lambda v: 1 / np.sqrt(v), "reciprocal": lambda v: 1 / v}
    for name in ["exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos", "log2", "log10", "log1p", "abs"]:
        ref = refs[name] if name in refs else getattr(np, name)
        assert_close(getattr(a, name)(), ref(an), rtol=1e-5)
    z = mx.array([1 + 2j])
    assert z.conj().item() == 1 - 2j
    assert z.real.item() == 1 and z.imag.item() == 2
    # NumPy rounds float32 in float32, as kiln: on the float64 copy, a value like 1.15f
    # (scaled to exactly 11.5f) rounds the other way (1.3e-5 of draws).
    assert_close(a.round(1), np.round(an.astype(np.float32), 1), rtol=1e-6)


def test_array_dimension_overflow():
    # As MLX: a NumPy dimension beyond int32 is an OverflowError naming it.
    big = np.empty(2**31, dtype=np.bool_)  # not touched: no memory is committed
    with pytest.raises(OverflowError, match=r"\[array\] Shape dimension 2147483648 is outside"):
        mx.array(big)


def test_list_of_arrays_keeps_the_graph_under_transforms(rng):
    # As MLX: mx.array([x, ...]) inside grad/vmap keeps x in the graph.
    xn = rng.standard_normal(3).astype(np.float32)

    def f(x):
        y = mx.array([x, mx.array([2.0, 3.0, 4.0]), [1.0, x[0], 0.5]])
        return (y * y).sum()

    g = mx.grad(f)(mx.array(xn))
    ref = 2 * xn
    ref[0] += 2 * xn[0]  # x[0] appears twice
    np.testing.assert_allclose(np.array(g), ref, rtol=1e-6)
    out = mx.vmap(lambda v: mx.array([v, 2 * v]))(mx.array(xn))
    np.testing.assert_allclose(np.array(out), np.stack([xn, 2 * xn], axis=1), rtol=1e-6)
    # Outside transforms the values are copied, with the same promotion.
    z = mx.array([mx.array([1, 2], dtype=mx.int8), [3.5, 4]])
    assert z.dtype == mx.float32 and z.tolist() == [[1.0, 2.0], [3.5, 4.0]]


def test_buffer_formats_of_64_bit_integers():
    # 'q'/'Q' (long long), as MLX's buffers, where NumPy's own say 'l'/'L'.
    assert memoryview(mx.array([1, -2], dtype=mx.int64)).format == "q"
    assert memoryview(mx.array([1, 2], dtype=mx.uint64)).format == "Q"
    np.testing.assert_array_equal(
        np.asarray(memoryview(mx.array([2**40], dtype=mx.uint64))), [2**40]
    )
