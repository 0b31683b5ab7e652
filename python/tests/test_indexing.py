"""NumPy indexing: a table of cases compared with NumPy result by result, for reading
(a[i]), writing (a[i] = v) and the functional updates (a.at[i].add(v), ...)."""

import numpy as np
import pytest

import kiln.core as mx
from conftest import assert_close, random_array

SHAPE = (4, 5, 6)

# Each case is a function of the module (np or mx) returning the index, so that array
# indices are built by the library being tested.
CASES = {
    "int": lambda m: 1,
    "negative int": lambda m: -1,
    "int tuple": lambda m: (2, 3),
    "all ints": lambda m: (3, -2, 0),
    "slice": lambda m: slice(1, 3),
    "slice step": lambda m: slice(None, None, 2),
    "negative step": lambda m: slice(None, None, -1),
    "negative step bounds": lambda m: slice(3, 0, -2),
    "negative step to start": lambda m: slice(2, None, -1),
    "clamped slice": lambda m: slice(-10, 10),
    "empty slice": lambda m: slice(3, 1),
    "empty backward slice": lambda m: slice(1, 3, -1),
    "slices": lambda m: (slice(1, None), slice(None, None, 3), slice(4, 1, -1)),
    "int and slices": lambda m: (slice(None), 2, slice(1, 4)),
    "ellipsis": lambda m: Ellipsis,
    "ellipsis last": lambda m: (..., 1),
    "ellipsis middle": lambda m: (1, ..., slice(0, 2)),
    "ellipsis first": lambda m: (..., slice(None, None, -2)),
    "newaxis": lambda m: None,
    "newaxis tuple": lambda m: (None, 1, None, slice(None), None),
    "newaxis ellipsis": lambda m: (..., None),
    "empty tuple": lambda m: (),
    "true": lambda m: True,
    "false": lambda m: False,
    "list": lambda m: [0, 2, 3],
    "negative list": lambda m: [-1, 0, -3],  # no duplicates: which write wins is unspecified on the GPU
    "repeated list": lambda m: [1, 1, 1],
    "empty list": lambda m: [],
    "array": lambda m: m.array([3, 0]),
    "2d array": lambda m: m.array([[0, 1], [3, 2]]),
    "array axis 1": lambda m: (slice(None), m.array([4, 0, 1])),
    "array last axis": lambda m: (..., m.array([5, 0])),
    "arrays broadcast": lambda m: (m.array([[0], [1]]), m.array([0, 2, 4])),
    "adjacent arrays": lambda m: (slice(None), m.array([0, 1]), m.array([2, 3])),
    "separated arrays": lambda m: (m.array([0, 1]), slice(None), m.array([2, 3])),
    "int with array": lambda m: (1, m.array([0, 2])),
    "array then int": lambda m: (m.array([0, 2]), 1),
    "int array apart": lambda m: (0, slice(None), m.array([1, 2])),
    "array slice int": lambda m: (m.array([0, 3]), slice(1, 3), 2),
    "array with newaxis": lambda m: (None, m.array([1, 2])),
    "arrays split by newaxis": lambda m: (m.array([1]), None, m.array([2])),
    "all arrays": lambda m: (m.array([0, 1]), m.array([1, 2]), m.array([2, 3])),
    "array of uint8": lambda m: m.array([3, 1], dtype=m.uint8),
    "array of int64": lambda m: m.array([-1, 2], dtype=m.int64),
    "0-d array": lambda m: m.array(2),
    "numpy index array": lambda m: np.array([2, 0]),
    "mask": lambda m: m.array([True, False, True, True]),
    "mask 2d": lambda m: m.array(np.arange(20).reshape(4, 5) % 3 == 0),
    "mask full": lambda m: m.array(np.arange(120).reshape(SHAPE) % 7 == 1),
    "mask axis 1": lambda m: (slice(None), m.array([False, True, True, False, True])),
    "mask and int": lambda m: (m.array([True, False, True, False]), 2),
    "list of bools": lambda m: [True, False, False, True],
    "empty mask": lambda m: m.array([False] * 4),
}


def np_index(index):
    """The same index for NumPy (kiln arrays become NumPy arrays)."""
    if isinstance(index, tuple):
        return tuple(np_index(i) for i in index)
    if isinstance(index, mx.array):
        return np.array(index)
    return index


@pytest.mark.parametrize("case", list(CASES))
def test_getitem(rng, case):
    a, n = random_array(rng, SHAPE, mx.float32)
    index = CASES[case](mx)
    expected = n[np_index(index)]
    got = a[index]
    assert got.shape == expected.shape
    assert_close(got, expected, rtol=0)


@pytest.mark.parametrize("case", list(CASES))
def test_getitem_of_views(rng, case):
    # The same indices on non-contiguous inputs (a transposed, reversed view).
    a, n = random_array(rng, SHAPE[::-1], mx.float32)
    a, n = a.T[::-1], n.T[::-1]
    index = CASES[case](mx)
    assert_close(a[index], n[np_index(index)], rtol=0)


@pytest.mark.parametrize("dtype", [mx.int8, mx.bool_, mx.float16, mx.complex64])
def test_getitem_dtypes(rng, dtype):
    a, n = random_array(rng, (3, 4), dtype)
    assert_close(a[1:, ::2], n[1:, ::2], rtol=0)
    assert_close(a[mx.array([2, 0])], n[[2, 0]], rtol=0)


def test_getitem_0d_and_basic_views(rng):
    a = mx.array(3.0)
    assert a[()].item() == 3.0
    assert a[None].shape == (1,)
    assert a[...].shape == ()


WRITE_CASES = [
    "int",
    "negative int",
    "int tuple",
    "all ints",
    "slice",
    "slice step",
    "negative step",
    "negative step bounds",
    "slices",
    "int and slices",
    "ellipsis",
    "ellipsis middle",
    "newaxis tuple",
    "empty slice",
    "list",
    "negative list",
    "array",
    "2d array",
    "array axis 1",
    "array last axis",
    "arrays broadcast",
    "adjacent arrays",
    "separated arrays",
    "int with array",
    "array slice int",
    "all arrays",
    "mask",
    "mask 2d",
    "mask axis 1",
    "false",
]


@pytest.mark.parametrize("case", WRITE_CASES)
def test_setitem(rng, case):
    a, n = random_array(rng, SHAPE, mx.float32)
    index = CASES[case](mx)
    target = n[np_index(index)]
    values = rng.standard_normal(target.shape).astype(np.float32)
    expected = n.copy()
    expected[np_index(index)] = values
    a[index] = mx.array(values)
    assert_close(a, expected, rtol=0)


@pytest.mark.parametrize("case", ["int", "slice step", "list", "arrays broadcast", "mask 2d"])
def test_setitem_broadcasts_scalars_and_rows(rng, case):
    a, n = random_array(rng, SHAPE, mx.float32)
    index = CASES[case](mx)
    expected = n.copy()
    expected[np_index(index)] = 7
    b = a
    b[index] = 7
    assert_close(b, expected, rtol=0)
    row = rng.standard_normal((6,)).astype(np.float32)
    expected[np_index(index)] = row
    a[index] = mx.array(row)
    assert_close(a, expected, rtol=0)


def test_setitem_casts_and_keeps_views():
    a = mx.array([1, 2, 3, 4], dtype=mx.int16)
    view = a[1:3]
    a[1:3] = mx.array([7.9, -8.2])
    assert a.dtype == mx.int16
    assert a.tolist() == [1, 7, -8, 4]
    assert view.tolist() == [2, 3]
    a[...] = 0
    assert a.tolist() == [0, 0, 0, 0]


def test_setitem_leading_unit_dims():
    a = mx.zeros((2, 3))
    a[0] = mx.ones((1, 1, 3))  # NumPy drops leading size-1 dimensions of the value
    assert a.tolist() == [[1, 1, 1], [0, 0, 0]]
    with pytest.raises(ValueError, match=r"\[setitem\]"):
        a[0] = mx.ones((2, 3))


AT_OPS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


@pytest.mark.parametrize("op", list(AT_OPS))
@pytest.mark.parametrize("case", ["int", "slice step", "repeated list", "arrays broadcast", "separated arrays",
                                  "mask 2d", "int and slices"])
def test_at_updates(rng, op, case):
    a, n = random_array(rng, SHAPE, mx.float32, 0.5, 2)
    index = CASES[case](mx)
    shape = n[np_index(index)].shape
    values = rng.uniform(0.5, 2, shape).astype(np.float32)
    expected = n.copy()
    AT_OPS[op].at(expected, np_index(index), values)  # repeated indices apply repeatedly
    got = getattr(a.at[index], op)(mx.array(values))
    assert_close(got, expected, rtol=1e-5)
    assert_close(a, n, rtol=0)  # `a` itself is unchanged


def test_at_weak_scalar_and_integer_divide():
    x = mx.array([1, 2, 3], dtype=mx.float16)
    assert x.at[mx.array([0, 0])].add(1.0).dtype == mx.float16
    assert x.at[mx.array([0, 0])].add(1.0).tolist() == [3, 2, 3]
    i = mx.array([10, 20, 30])
    assert i.at[1].divide(4).tolist() == [10, 5, 30]
    assert i.at[mx.array([2, 2])].divide(2).tolist() == [10, 20, 7]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "index, message",
    [
        (4, r"\[getitem\] Index 4 is out of bounds for axis 0 with size 4"),
        ((0, -6), r"Index -6 is out of bounds for axis 1 with size 5"),
        ((0, 0, 0, 0), r"Too many indices"),
        ((..., 0, ...), r"single ellipsis"),
        ([0, 9], r"Index 9 is out of bounds for axis 0"),
        ((slice(None), [5]), r"Index 5 is out of bounds for axis 1"),
        (mx.array([True, False]), r"Boolean index did not match"),
        ((mx.array([0, 1]), mx.array([0, 1, 2])), r"could not be broadcast"),
        (mx.array([0.5]), r"integer \(or boolean\) type"),
        ("a", r"valid indices; got str"),
        (1.0, r"valid indices; got float"),
    ],
)
def test_index_errors(index, message):
    a = mx.zeros(SHAPE)
    with pytest.raises(IndexError, match=message):
        a[index]
    with pytest.raises(IndexError):
        a[index] = 1


def test_slice_with_non_integer_raises():
    with pytest.raises(TypeError):
        mx.zeros(3)[1.5:]


def test_take_one_element_index_array_keeps_its_axes():
    # A one-element index array is an array, not an int: its axes stay (as NumPy).
    x = mx.arange(12).reshape(4, 3)
    assert mx.take(x, mx.array([1]), axis=0).shape == (1, 3)
    assert mx.take(x, mx.array([[2]]), axis=1).shape == (4, 1, 1)
    assert mx.take(x, mx.array([5])).tolist() == [5]
    assert mx.take(x, 1, axis=0).shape == (3,)
