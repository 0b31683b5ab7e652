"""Operations against NumPy on fresh random inputs: elementwise (every dtype they claim,
broadcasting, non-contiguous views), reductions and scans, layout, creation, linear
algebra, indexing ops and sorting."""

import math

import numpy as np
import pytest

import kiln.core as mx
from conftest import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    assert_close,
    np_dtype,
    random_array,
    to_numpy,
)

try:
    from scipy import special
except ImportError:
    special = None

# ---------------------------------------------------------------- unary

# name: (NumPy reference on float64, input range)
UNARY = {
    "abs": (np.abs, (-3, 3)),
    "negative": (np.negative, (-3, 3)),
    "sign": (np.sign, (-3, 3)),
    "square": (np.square, (-3, 3)),
    "sqrt": (np.sqrt, (0.1, 4)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 4)),
    "reciprocal": (lambda x: 1 / x, (0.5, 3)),
    "exp": (np.exp, (-3, 3)),
    "expm1": (np.expm1, (-1, 1)),
    "log": (np.log, (0.1, 4)),
    "log1p": (np.log1p, (-0.5, 3)),
    "log2": (np.log2, (0.1, 4)),
    "log10": (np.log10, (0.1, 4)),
    "sin": (np.sin, (-3, 3)),
    "cos": (np.cos, (-3, 3)),
    "tan": (np.tan, (-1.2, 1.2)),
    "arcsin": (np.arcsin, (-0.95, 0.95)),
    "arccos": (np.arccos, (-0.95, 0.95)),
    "arctan": (np.arctan, (-3, 3)),
    "sinh": (np.sinh, (-2, 2)),
    "cosh": (np.cosh, (-2, 2)),
    "tanh": (np.tanh, (-3, 3)),
    "arcsinh": (np.arcsinh, (-3, 3)),
    "arccosh": (np.arccosh, (1.1, 4)),
    "arctanh": (np.arctanh, (-0.9, 0.9)),
    "erf": (np.vectorize(math.erf), (-2, 2)),
    "erfinv": (special.erfinv if special else None, (-0.9, 0.9)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-4, 4)),
    "floor": (np.floor, (-3, 3)),
    "ceil": (np.ceil, (-3, 3)),
    "round": (np.round, (-3, 3)),
}
FLOAT_RESULT = {"sqrt", "rsqrt", "reciprocal", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos",
                "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
                "erf", "erfinv", "sigmoid"}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_floating(rng, name, dtype):
    ref, (lo, hi) = UNARY[name]
    if ref is None:
        pytest.skip("needs scipy for the reference")
    a, an = random_array(rng, (4, 33), dtype, lo, hi)
    out = getattr(mx, name)(a)
    assert out.dtype == dtype
    assert_close(out, ref(an))
    # A transposed, strided view.
    t, tn = a.T[::2], an.T[::2]
    assert_close(getattr(mx, name)(t), ref(tn))


@pytest.mark.parametrize("name", sorted(FLOAT_RESULT - {"erfinv"}))
@pytest.mark.parametrize("dtype", [mx.int32, mx.uint8, mx.bool_])
def test_unary_integer_inputs_compute_in_float32(rng, name, dtype):
    ref, (lo, hi) = UNARY[name]
    values = np.clip(np.round(rng.uniform(lo, hi, (10,))), max(lo, 0 if dtype != mx.int32 else lo), hi)
    if name in ("arcsin", "arccos", "arctanh"):
        values = np.zeros(10) if dtype != mx.bool_ else values * 0
    if name in ("log", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "arccosh"):
        values = np.maximum(values, 1)
    a = mx.array(values.astype(np_dtype(dtype)))
    out = getattr(mx, name)(a)
    assert out.dtype == mx.float32
    assert_close(out, ref(values.astype(np_dtype(dtype)).astype(np.float64)))


@pytest.mark.parametrize("dtype", [mx.int8, mx.int32, mx.int64, mx.uint16])
@pytest.mark.parametrize("name", ["abs", "negative", "sign", "square", "floor", "ceil", "round"])
def test_unary_integer_exact(rng, name, dtype):
    if name == "negative" and dtype == mx.uint16:
        pytest.skip("negation of unsigned wraps")
    a, an = random_array(rng, (17,), dtype, int_range=10)
    out = getattr(mx, name)(a)
    assert out.dtype == dtype
    np.testing.assert_array_equal(np.asarray(out), UNARY[name][0](an).astype(np_dtype(dtype)))


@pytest.mark.parametrize("name, ref", [("abs", np.abs), ("negative", np.negative), ("square", np.square),
                                       ("exp", np.exp), ("sqrt", np.sqrt), ("log", np.log), ("sin", np.sin),
                                       ("cos", np.cos), ("conjugate", np.conjugate), ("real", np.real),
                                       ("imag", np.imag), ("sign", lambda z: z / np.abs(z))])
def test_unary_complex(rng, name, ref):
    a, an = random_array(rng, (12,), mx.complex64, 0.2, 2)
    out = getattr(mx, name)(a)
    assert out.dtype == (mx.float32 if name in ("abs", "real", "imag") else mx.complex64)
    assert_close(out, ref(an), rtol=1e-5)


def test_unary_predicates(rng):
    n = np.array([1.0, np.nan, np.inf, -np.inf, -0.0, 3.5], dtype=np.float32)
    for dtype in (mx.float32, mx.float16, mx.bfloat16, mx.float64):
        a = mx.array(n, dtype=dtype)
        assert mx.isnan(a).tolist() == np.isnan(n).tolist()
        assert mx.isinf(a).tolist() == np.isinf(n).tolist()
        assert mx.isfinite(a).tolist() == np.isfinite(n).tolist()
        assert mx.isposinf(a).tolist() == np.isposinf(n).tolist()
        assert mx.isneginf(a).tolist() == np.isneginf(n).tolist()
    assert mx.isnan(mx.array([1, 2])).tolist() == [False, False]
    assert mx.logical_not(mx.array([0, 2, -1])).tolist() == [True, False, False]
    assert mx.bitwise_invert(mx.array([0, 5], dtype=mx.uint8)).tolist() == [255, 250]


def test_round_decimals(rng):
    a, an = random_array(rng, (20,), mx.float32, -100, 100)
    # Scaling by 10**decimals rounds in float32 as in NumPy on float32 (not on a float64 copy:
    # a value like 12.345f can scale to exactly 1234.5 and round to even).
    a32 = an.astype(np.float32)
    assert_close(mx.round(a, 2), np.round(a32, 2), rtol=1e-6)
    assert_close(mx.round(a, -1), np.round(a32, -1), rtol=1e-6)
    assert mx.round(mx.array([0.5, 1.5, 2.5, -0.5])).tolist() == [0, 2, 2, -0]
    assert mx.round(mx.array([125, -135]), -1).tolist() == [120, -140]


def test_stop_gradient_values(rng):
    a, an = random_array(rng, (3,), mx.float32)
    assert_close(mx.stop_gradient(a), an)


def test_unary_errors():
    with pytest.raises(ValueError, match=r"\[erf\]"):
        mx.erf(mx.array([1j]))
    with pytest.raises(ValueError, match=r"\[bitwise_invert\]"):
        mx.bitwise_invert(mx.array([1.0]))
    with pytest.raises(ValueError, match=r"\[negative\]"):
        mx.negative(mx.array([True]))
    with pytest.raises(TypeError):
        mx.exp()
    with pytest.raises(TypeError):
        mx.exp(mx.array(1.0), mx.array(2.0))


# ---------------------------------------------------------------- binary

BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.true_divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "floor_divide": np.floor_divide,
    "remainder": np.remainder,
    "arctan2": np.arctan2,
    "logaddexp": np.logaddexp,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
}


def binary_inputs(rng, name, dtype, shape_a, shape_b):
    lo, hi, int_range = -3, 3, 20
    if name == "power":
        lo, hi, int_range = 0.5, 2, 3
    a, an = random_array(rng, shape_a, dtype, lo, hi, int_range)
    b, bn = random_array(rng, shape_b, dtype, lo, hi, int_range)
    if name in ("divide", "floor_divide", "remainder") or name == "power":
        # Nonzero divisors; small non-negative integer exponents.
        if dtype in INT_DTYPES:
            bn = np.where(bn == 0, 1, np.abs(bn) if name == "power" else bn).astype(bn.dtype)
            if name == "power":
                bn = np.minimum(bn, 3)
        else:
            bn = np.where(np.abs(bn) < 0.25, 0.5, bn)
        b = mx.array(bn.astype(np_dtype(dtype)), dtype=dtype)
    return a, an, b, bn


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64, mx.int32, mx.int8,
                                   mx.uint32, mx.int64])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary(rng, name, dtype):
    if name in ("arctan2", "logaddexp") and dtype not in FLOAT_DTYPES:
        pytest.skip("floating only")
    a, an, b, bn = binary_inputs(rng, name, dtype, (3, 1, 4), (5, 1))
    out = getattr(mx, name)(a, b)
    expected = BINARY[name](an, bn)
    if dtype in INT_DTYPES and name not in ("divide",) and expected.dtype != np.bool_:
        expected = expected.astype(np_dtype(dtype))
    assert out.shape == expected.shape
    assert_close(out, expected, dtype if dtype in FLOAT_DTYPES else mx.float32)
    # Non-contiguous operands: a transposed view and a stepped slice.
    ta, tan_ = a.T, an.T
    sb, sbn = b[::2], bn[::2]
    expected = BINARY[name](tan_, sbn.T[0])
    if dtype in INT_DTYPES and name != "divide" and expected.dtype != np.bool_:
        expected = expected.astype(np_dtype(dtype))
    assert_close(getattr(mx, name)(ta, sb.T[0]), expected, dtype if dtype in FLOAT_DTYPES else mx.float32)


def test_binary_result_dtypes():
    i = mx.array([1, 2], dtype=mx.int16)
    assert mx.divide(i, i).dtype == mx.float32
    assert mx.equal(i, i).dtype == mx.bool_
    assert mx.logical_and(i, i).dtype == mx.bool_
    assert mx.add(i, mx.array([1.0], dtype=mx.float16)).dtype == mx.float16


def test_binary_complex(rng):
    a, an = random_array(rng, (6,), mx.complex64)
    b, bn = random_array(rng, (6,), mx.complex64, 0.5, 2)
    for name in ("add", "subtract", "multiply", "divide", "equal", "not_equal"):
        assert_close(getattr(mx, name)(a, b), BINARY[name](an, bn), mx.complex64, rtol=1e-5)


@pytest.mark.parametrize("dtype", [mx.int32, mx.uint8, mx.int64, mx.bool_])
def test_bitwise(rng, dtype):
    a, an = random_array(rng, (9,), dtype, int_range=60)
    b, bn = random_array(rng, (9,), dtype, int_range=60)
    for name, ref in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                      ("bitwise_xor", np.bitwise_xor)):
        np.testing.assert_array_equal(np.asarray(getattr(mx, name)(a, b)), ref(an, bn))
    if dtype != mx.bool_:
        an, bn = np.abs(an), np.abs(bn) % 4
        a, b = mx.array(an), mx.array(bn)
        np.testing.assert_array_equal(np.asarray(mx.left_shift(a, b)), np.left_shift(an, bn))
        np.testing.assert_array_equal(np.asarray(mx.right_shift(a, b)), np.right_shift(an, bn))
    with pytest.raises(ValueError, match=r"\[bitwise_and\]"):
        mx.bitwise_and(mx.array([1.0]), mx.array([2.0]))


def test_binary_broadcast_errors():
    with pytest.raises(ValueError, match=r"\[add\].*\(2, 3\).*\(4,\)"):
        mx.add(mx.zeros((2, 3)), mx.zeros((4,)))
    with pytest.raises(ValueError, match=r"\[maximum\].*complex"):
        mx.maximum(mx.array([1j]), mx.array([2j]))


def test_where_clip_isclose(rng):
    c = rng.random((3, 4)) < 0.5
    a, an = random_array(rng, (3, 4), mx.float16)
    out = mx.where(mx.array(c), a, 0.5)
    assert out.dtype == mx.float16
    assert_close(out, np.where(c, an, 0.5))
    assert_close(mx.where(mx.array(c), 1, mx.array([[2], [3], [4]])), np.where(c, 1, [[2], [3], [4]]), rtol=0)
    x, xn = random_array(rng, (20,), mx.float32, -3, 3)
    assert_close(mx.clip(x, -1, 1), np.clip(xn, -1, 1))
    assert_close(mx.clip(x, None, 0.5), np.minimum(xn, 0.5))
    assert_close(mx.clip(x, mx.zeros(20), None), np.maximum(xn, 0))
    with pytest.raises(ValueError, match=r"\[clip\]"):
        mx.clip(x, None, None)
    y = x * (1 + 1e-6)  # relative: x + 1e-7 fails atol + rtol * |x| where x is near 0
    assert mx.allclose(x, y).item()
    assert not mx.allclose(x, x + 1).item()
    n = mx.array([1.0, float("nan")])
    assert mx.isclose(n, n).tolist() == [True, False]
    assert mx.isclose(n, n, equal_nan=True).tolist() == [True, True]
    assert mx.array_equal(mx.array([1, 2]), mx.array([1.0, 2.0])).item()
    assert not mx.array_equal(mx.array([1, 2]), mx.array([1, 2, 3])).item()


# ---------------------------------------------------------------- reductions and scans

REDUCTIONS = {
    "sum": np.sum,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "mean": np.mean,
    "logsumexp": lambda x, axis=None, keepdims=False: np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims)),
}


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (1,)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", list(REDUCTIONS))
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.float64, mx.int32])
def test_reductions(rng, name, dtype, axis, keepdims):
    lo, hi = (0.5, 1.5) if name == "prod" else (-2, 2)
    a, an = random_array(rng, (3, 4, 5), dtype, lo, hi, int_range=3)
    out = getattr(mx, name)(a, axis=axis, keepdims=keepdims)
    expected = REDUCTIONS[name](an, axis=axis, keepdims=keepdims)
    rtol = {mx.float16: 2e-2, mx.float32: 1e-5, mx.float64: 1e-12, mx.int32: 1e-6}[dtype]
    assert_close(out, expected, rtol=rtol * (10 if name == "prod" else 1))


def test_reduction_dtypes_and_views(rng):
    assert mx.sum(mx.array([1, 2], dtype=mx.int8)).dtype == mx.int32
    assert mx.sum(mx.array([True, True, False])).item() == 2
    assert mx.mean(mx.array([1, 2], dtype=mx.int32)).dtype == mx.float32
    assert mx.sum(mx.zeros((0, 3)), axis=0).tolist() == [0, 0, 0]
    a, an = random_array(rng, (6, 8), mx.float32)
    assert_close(mx.sum(a.T[::2], axis=1), an.T[::2].sum(1), rtol=1e-5)
    assert_close(mx.max(mx.broadcast_to(a[0], (3, 8)), axis=0), an[0], rtol=0)
    with pytest.raises(ValueError, match=r"\[sum\]"):
        mx.sum(a, axis=2)
    with pytest.raises(ValueError, match=r"\[sum\]"):
        mx.sum(a, axis=(0, 0))


def test_all_any(rng):
    b = rng.random((4, 5)) < 0.5
    a = mx.array(b)
    for axis in (None, 0, 1, (0, 1)):
        np.testing.assert_array_equal(np.asarray(mx.all(a, axis=axis)), b.all(axis=axis))
        np.testing.assert_array_equal(np.asarray(mx.any(a, axis=axis)), b.any(axis=axis))
    assert mx.all(mx.array([1.0, 2.0])).item() and not mx.any(mx.zeros(3)).item()


@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std(rng, ddof):
    a, an = random_array(rng, (5, 7), mx.float32)
    for axis in (None, 0, (1,)):
        assert_close(mx.var(a, axis=axis, ddof=ddof), an.var(axis=axis, ddof=ddof), rtol=1e-5)
        assert_close(mx.std(a, axis=axis, ddof=ddof, keepdims=True),
                     an.std(axis=axis, ddof=ddof, keepdims=True), rtol=1e-5)


def test_argmax_argmin(rng):
    a, an = random_array(rng, (4, 6), mx.float32)
    assert mx.argmax(a).item() == an.argmax()
    assert mx.argmin(a, axis=0).tolist() == an.argmin(0).tolist()
    assert mx.argmax(a, axis=1, keepdims=True).shape == (4, 1)
    assert mx.argmax(a, axis=1).dtype == mx.uint32


def test_softmax(rng):
    a, an = random_array(rng, (3, 5), mx.float32, -5, 5)
    e = np.exp(an - an.max(-1, keepdims=True))
    assert_close(mx.softmax(a, axis=-1), e / e.sum(-1, keepdims=True), rtol=1e-5)
    ea = np.exp(an - an.max())
    assert_close(mx.softmax(a), ea / ea.sum(), rtol=1e-5)  # all axes by default, as MLX
    assert_close(mx.softmax(a, axis=(0, 1)), ea / ea.sum(), rtol=1e-5)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("inclusive", [False, True])
def test_scans(rng, reverse, inclusive):
    a, an = random_array(rng, (4, 6), mx.float32, 0.5, 1.5)

    def ref(x, axis, op, identity):
        x = np.flip(x, axis) if reverse else x
        r = op(x, axis=axis)
        if not inclusive:
            r = np.concatenate([np.full_like(np.take(r, [0], axis), identity), np.delete(r, -1, axis)], axis)
        return np.flip(r, axis) if reverse else r

    for axis in (0, 1):
        assert_close(mx.cumsum(a, axis=axis, reverse=reverse, inclusive=inclusive), ref(an, axis, np.cumsum, 0),
                     rtol=1e-5)
        assert_close(mx.cumprod(a, axis=axis, reverse=reverse, inclusive=inclusive),
                     ref(an, axis, np.cumprod, 1), rtol=1e-5)
    assert_close(mx.cumsum(a), np.cumsum(an), rtol=1e-5)


# ---------------------------------------------------------------- layout


def test_reshape_family(rng):
    a, an = random_array(rng, (2, 3, 4), mx.float32)
    assert_close(mx.reshape(a, (4, -1)), an.reshape(4, -1), rtol=0)
    assert_close(mx.reshape(a.T, (24,)), an.T.reshape(24), rtol=0)
    assert_close(mx.flatten(a, 1, 2), an.reshape(2, 12), rtol=0)
    assert mx.flatten(mx.array(1.0)).shape == (1,)
    assert mx.squeeze(mx.zeros((1, 3, 1))).shape == (3,)
    assert mx.squeeze(mx.zeros((1, 3, 1)), axis=-1).shape == (1, 3)
    assert mx.expand_dims(a, (0, 4)).shape == (1, 2, 3, 4, 1)
    assert mx.expand_dims(a, -1).shape == (2, 3, 4, 1)
    with pytest.raises(ValueError, match=r"\[reshape\]"):
        mx.reshape(a, (5, 5))
    with pytest.raises(ValueError, match=r"\[squeeze\]"):
        mx.squeeze(a, 0)


def test_transpose_family(rng):
    a, an = random_array(rng, (2, 3, 4), mx.float32)
    assert_close(mx.transpose(a), an.T, rtol=0)
    assert_close(mx.transpose(a, (1, 2, 0)), an.transpose(1, 2, 0), rtol=0)
    assert_close(mx.swapaxes(a, 0, -1), np.swapaxes(an, 0, -1), rtol=0)
    assert_close(mx.moveaxis(a, 2, 0), np.moveaxis(an, 2, 0), rtol=0)
    with pytest.raises(ValueError, match=r"\[transpose\]"):
        mx.transpose(a, (0, 1))


def test_broadcasting_ops(rng):
    a, an = random_array(rng, (3, 1), mx.float32)
    assert_close(mx.broadcast_to(a, (2, 3, 4)), np.broadcast_to(an, (2, 3, 4)), rtol=0)
    assert mx.broadcast_to(2.0, 3).tolist() == [2.0, 2.0, 2.0]
    x, y = mx.broadcast_arrays(a, mx.zeros((4,)))
    assert x.shape == y.shape == (3, 4)
    with pytest.raises(ValueError, match=r"\[broadcast_to\]"):
        mx.broadcast_to(a, (2, 2))


def test_join_and_split(rng):
    a, an = random_array(rng, (2, 3), mx.float32)
    b, bn = random_array(rng, (4, 3), mx.float32)
    assert_close(mx.concatenate([a, b]), np.concatenate([an, bn]), rtol=0)
    assert_close(mx.concatenate([a, b], axis=None), np.concatenate([an, bn], axis=None), rtol=0)
    assert_close(mx.concatenate([a.T, b[:3].T], axis=1), np.concatenate([an.T, bn[:3].T], axis=1), rtol=0)
    assert mx.concatenate([a, mx.zeros((1, 3), dtype=mx.float16)]).dtype == mx.float32
    assert_close(mx.stack([a, a * 2], axis=1), np.stack([an, an * 2], axis=1), rtol=0)
    parts = mx.split(b, 2)
    assert [p.shape for p in parts] == [(2, 3), (2, 3)]
    parts = mx.split(b, [1, 3], axis=0)
    for p, e in zip(parts, np.split(bn, [1, 3])):
        assert_close(p, e, rtol=0)
    with pytest.raises(ValueError, match=r"\[concatenate\]"):
        mx.concatenate([a, mx.zeros((2, 4))])
    with pytest.raises(ValueError, match=r"\[split\]"):
        mx.split(b, 3)


def test_tile_repeat_pad(rng):
    a, an = random_array(rng, (2, 3), mx.int32)
    assert_close(mx.tile(a, (2, 1, 2)), np.tile(an, (2, 1, 2)), rtol=0)
    assert_close(mx.tile(a, 2), np.tile(an, 2), rtol=0)
    assert_close(mx.repeat(a, 2, axis=1), np.repeat(an, 2, axis=1), rtol=0)
    assert_close(mx.repeat(a, 3), np.repeat(an, 3), rtol=0)
    assert_close(mx.pad(a, 1), np.pad(an, 1), rtol=0)
    assert_close(mx.pad(a, (1, 2)), np.pad(an, (1, 2)), rtol=0)
    assert_close(mx.pad(a, [(0, 1), (2, 0)], constant_values=7), np.pad(an, [(0, 1), (2, 0)], constant_values=7),
                 rtol=0)
    for mode in ("edge", "reflect", "symmetric"):
        for widths in (1, (4, 7), [(0, 5), (9, 2)]):
            assert_close(mx.pad(a, widths, mode=mode), np.pad(an, widths, mode=mode), rtol=0)
        assert_close(mx.pad(a.T, 3, mode=mode), np.pad(an.T, 3, mode=mode), rtol=0)
        with pytest.raises(ValueError, match=r"\[pad\]"):
            mx.pad(mx.zeros((0, 3)), [(1, 1), (0, 0)], mode=mode)
    with pytest.raises(ValueError, match=r"\[pad\]"):
        mx.pad(a, 1, mode="wrap")
    with pytest.raises(ValueError, match=r"\[pad\]"):
        mx.pad(a, [(1, 1)] * 3)


def test_slice_and_slice_update(rng):
    # MLX's signatures: start indices are an array (computed in the graph), clamped to fit.
    a, an = random_array(rng, (5, 6, 7), mx.float32)
    assert_close(mx.slice(a, mx.array([1, 2]), (0, 2), (3, 6, 4)), an[1:4, :, 2:6], rtol=0)
    assert_close(mx.slice(a, mx.array(4), (1,), (5, 2, 7)), an[:, 4:6], rtol=0)
    assert_close(mx.slice(a, mx.array([9]), (-1,), (5, 6, 3)), an[:, :, 4:7], rtol=0)  # clamped
    assert_close(mx.slice(a.transpose(2, 0, 1), mx.array([1, 1]), (0, 1), (2, 3, 6)),
                 an.transpose(2, 0, 1)[1:3, 1:4], rtol=0)
    u, un = random_array(rng, (2, 3, 4), mx.float32)
    expected = an.copy()
    expected[2:4, 0:3, 1:5] = un
    assert_close(mx.slice_update(a, u, mx.array([2, 1]), (0, 2)), expected, rtol=0)
    expected = an.copy()
    expected[:, :, 5:7] = 5
    assert_close(mx.slice_update(a, mx.full((5, 6, 2), 5.0), mx.array([6]), (2,)), expected, rtol=0)
    g = mx.grad(lambda x: (mx.slice(x, mx.array([1]), (0,), (2, 6, 7)) ** 2).sum())(a)
    want = np.zeros_like(an)
    want[1:3] = 2 * an[1:3]
    assert_close(g, want, rtol=1e-6)
    with pytest.raises(ValueError, match=r"\[slice\]"):
        mx.slice(a, mx.array([1]), (0,), (6, 6, 7))
    with pytest.raises(ValueError, match=r"\[slice\]"):
        mx.slice(a, mx.array([1.5]), (0,), (2, 6, 7))


def test_copies_and_strides(rng):
    a, an = random_array(rng, (3, 4), mx.float32)
    assert_close(mx.copy(a), an, rtol=0)
    assert_close(mx.contiguous(a.T), an.T, rtol=0)
    assert_close(mx.as_strided(a, (2, 2), (4, 1), 1), np.lib.stride_tricks.as_strided(
        an[0, 1:], (2, 2), (4 * 8, 8)), rtol=0)
    assert_close(mx.astype(a, mx.int32), an.astype(np.int32), rtol=0)


# ---------------------------------------------------------------- creation


def test_arange_linspace():
    assert mx.arange(5).tolist() == list(range(5))
    assert mx.arange(5).dtype == mx.int32
    assert mx.arange(2, 10, 3).tolist() == [2, 5, 8]
    assert mx.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert mx.arange(0.0, 1.0, 0.25).dtype == mx.float32
    assert_close(mx.arange(0, 1, 0.1), np.arange(0, 1, 0.1), rtol=1e-6)
    assert mx.arange(3, dtype=mx.float16).dtype == mx.float16
    assert mx.arange(3, 1).tolist() == []
    assert_close(mx.linspace(0, 1, 7), np.linspace(0, 1, 7), rtol=1e-6)
    assert mx.linspace(0, 1).shape == (50,)
    with pytest.raises(ValueError, match=r"\[arange\]"):
        mx.arange(0, 1, 0)
    with pytest.raises(TypeError, match=r"\[arange\]"):
        mx.arange("3")


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_filled_arrays(dtype):
    z = mx.zeros((2, 3), dtype=dtype)
    assert z.dtype == dtype and z.shape == (2, 3)
    np.testing.assert_array_equal(to_numpy(z), np.zeros((2, 3)))
    np.testing.assert_array_equal(to_numpy(mx.ones(4, dtype=dtype)), np.ones(4))
    np.testing.assert_array_equal(to_numpy(mx.zeros_like(z)), np.zeros((2, 3)))
    np.testing.assert_array_equal(to_numpy(mx.ones_like(z)), np.ones((2, 3)))
    f = mx.full((2, 2), 1, dtype=dtype)
    assert f.dtype == dtype
    np.testing.assert_array_equal(to_numpy(f), np.ones((2, 2)))


def test_full_and_eye():
    assert mx.full(3, 2.5).tolist() == [2.5, 2.5, 2.5]
    assert mx.full((2, 2), mx.array([1, 2])).tolist() == [[1, 2], [1, 2]]
    assert mx.full((2,), 7).dtype == mx.int32
    assert mx.full_like(mx.zeros(2, dtype=mx.float16), 3).dtype == mx.float16
    np.testing.assert_array_equal(np.asarray(mx.eye(3, 4, 1)), np.eye(3, 4, 1))
    np.testing.assert_array_equal(np.asarray(mx.eye(3, k=-1, dtype=mx.int8)), np.eye(3, k=-1))
    np.testing.assert_array_equal(np.asarray(mx.identity(3)), np.identity(3))
    a = mx.array(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(np.asarray(mx.tril(a)), np.tril(np.arange(12.0).reshape(3, 4)))
    np.testing.assert_array_equal(np.asarray(mx.triu(a, 1)), np.triu(np.arange(12.0).reshape(3, 4), 1))
    with pytest.raises(ValueError, match=r"\[full\]"):
        mx.full((-1,), 0)


# ---------------------------------------------------------------- linear algebra


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64, mx.float16, mx.bfloat16])
def test_matmul(rng, dtype):
    rtol = {mx.float32: 1e-5, mx.float64: 1e-12, mx.float16: 1e-2, mx.bfloat16: 3e-2}[dtype]
    for sa, sb in [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4, 3)), ((3, 4), (4,)), ((1, 2, 3), (5, 3, 2)),
                   ((4,), (4,))]:
        a, an = random_array(rng, sa, dtype)
        b, bn = random_array(rng, sb, dtype)
        assert_close(mx.matmul(a, b), an @ bn, rtol=rtol, atol=rtol * 4)
    a, an = random_array(rng, (5, 3), dtype)
    assert_close(mx.matmul(a.T, a), an.T @ an, rtol=rtol, atol=rtol * 4)


def test_matmul_errors_and_friends(rng):
    with pytest.raises(ValueError, match=r"\[matmul\]"):
        mx.matmul(mx.zeros((2, 3)), mx.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"\[matmul\]"):
        mx.matmul(mx.zeros((2, 2), dtype=mx.int32), mx.zeros((2, 2), dtype=mx.int32))
    a, an = random_array(rng, (3, 4), mx.float32)
    b, bn = random_array(rng, (4, 2), mx.float32)
    c, cn = random_array(rng, (2,), mx.float32)
    assert_close(mx.addmm(c, a, b, alpha=0.5, beta=2.0), 0.5 * (an @ bn) + 2 * cn, rtol=1e-5)
    assert_close(mx.inner(a, a), np.inner(an, an), rtol=1e-5)
    assert_close(mx.outer(c, an[0]), np.outer(cn, an[0]), rtol=1e-6)


# ---------------------------------------------------------------- indexing ops and sorting


def test_take_family(rng):
    a, an = random_array(rng, (4, 5), mx.float32)
    idx = np.array([[0, 3], [-1, 2]])
    assert_close(mx.take(a, mx.array(idx)), np.take(an, idx), rtol=0)
    assert_close(mx.take(a, mx.array(idx), axis=1), np.take(an, idx, axis=1), rtol=0)
    assert_close(mx.take(a, 2, axis=0), an[2], rtol=0)
    assert mx.take(a, 7).item() == an.flat[7]
    ti = rng.integers(0, 5, (4, 3))
    assert_close(mx.take_along_axis(a, mx.array(ti), axis=1), np.take_along_axis(an, ti, axis=1), rtol=0)
    fi = rng.integers(0, 20, (6,))
    assert_close(mx.take_along_axis(a, mx.array(fi), axis=None), np.take_along_axis(an.ravel(), fi, 0), rtol=0)
    expected = an.copy()
    pi = np.array([[1], [0], [4], [2]])
    np.put_along_axis(expected, pi, 9.0, axis=1)
    assert_close(mx.put_along_axis(a, mx.array(pi), 9.0, axis=1), expected, rtol=0)


def test_gather_scatter(rng):
    a, an = random_array(rng, (4, 5, 3), mx.float32)
    i0, i1 = np.array([0, 3, 1]), np.array([4, 0, 2])
    g = mx.gather(a, [mx.array(i0), mx.array(i1)], [0, 1], [1, 1, 3])
    assert g.shape == (3, 1, 1, 3)
    assert_close(g.reshape(3, 3), an[i0, i1], rtol=0)
    upd, updn = random_array(rng, (3, 1, 1, 3), mx.float32)
    expected = an.copy()
    expected[i0, i1] = updn.reshape(3, 3)
    assert_close(mx.scatter(a, [mx.array(i0), mx.array(i1)], upd, [0, 1]), expected, rtol=0)
    # Repeated indices along axis 0, each update a whole (1, 5, 3) slice.
    rep = np.array([1, 1, 2])
    u, un = random_array(rng, (3, 1, 5, 3), mx.float32, 0.5, 2)
    for fn, ufunc in ((mx.scatter_add, np.add), (mx.scatter_prod, np.multiply), (mx.scatter_max, np.maximum),
                      (mx.scatter_min, np.minimum)):
        expected = an.copy()
        ufunc.at(expected, rep, un.reshape(3, 5, 3))
        assert_close(fn(a, [mx.array(rep)], u, [0]), expected, rtol=1e-6)


@pytest.mark.parametrize("dtype", [mx.float32, mx.int32, mx.float16, mx.uint8])
def test_sort_argsort(rng, dtype):
    a, an = random_array(rng, (4, 7), dtype, int_range=5)
    assert_close(mx.sort(a), np.sort(an, axis=-1), rtol=0)
    assert_close(mx.sort(a, axis=0), np.sort(an, axis=0), rtol=0)
    assert_close(mx.sort(a, axis=None), np.sort(an, axis=None), rtol=0)
    idx = mx.argsort(a, axis=1)
    assert idx.dtype == mx.uint32
    np.testing.assert_array_equal(np.asarray(idx), np.argsort(an, axis=1, kind="stable"))
    np.testing.assert_array_equal(np.asarray(mx.argsort(a, axis=None)), np.argsort(an, axis=None, kind="stable"))
