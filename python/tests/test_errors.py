"""Errors: C++ exceptions become the matching Python exceptions, messages keep their [op]
tag and the offending values, and nothing a user passes crashes the interpreter."""

import numpy as np
import pytest

import kiln.core as mx

A = mx.zeros((2, 3))

CASES = [
    # (call, exception, message pattern)
    (lambda: mx.reshape(A, (4, 2)), ValueError, r"\[reshape\] Cannot reshape an array of size 6 into shape \(4, 2\)"),
    (lambda: mx.add(A, mx.zeros((3, 2))), ValueError, r"\[add\].*\(2, 3\).*\(3, 2\)"),
    (lambda: mx.matmul(A, A), ValueError, r"\[matmul\]"),
    (lambda: mx.concatenate([A, mx.zeros((2,))]), ValueError, r"\[concatenate\]"),
    (lambda: mx.transpose(A, (0, 0)), ValueError, r"\[transpose\]"),
    (lambda: mx.sum(A, axis=5), ValueError, r"\[sum\].*5"),
    (lambda: mx.expand_dims(A, 7), ValueError, r"\[expand_dims\]"),
    (lambda: mx.split(A, 4, axis=1), ValueError, r"\[split\]"),
    (lambda: mx.zeros((-1, 2)), ValueError, r"\[zeros\]|\[array\]|-1"),
    (lambda: mx.arange(0, 10, 0), ValueError, r"\[arange\]"),
    (lambda: mx.random.uniform(shape=(2,), dtype=mx.int32), ValueError, r"\[uniform\]"),
    (lambda: mx.random.split(mx.zeros((3,))), ValueError, r"\[split\]"),
    (lambda: mx.pad(A, 1, mode="wrap"), ValueError, r"\[pad\]"),
    (lambda: mx.array([[1], [2, 3]]), ValueError, r"non-uniform length"),  # MLX's exact text
    (lambda: mx.array([1]).item() + mx.array([1, 2]).item(), ValueError, r"\[item\]"),
    (lambda: bool(A), ValueError, r"ambiguous"),
    (lambda: mx.set_default_device(mx.Device(mx.cpu, 3)), ValueError, r"\[set_default_device\]"),
    (lambda: mx.finfo(mx.int8), ValueError, r"\[finfo\]"),
    (lambda: A[5], IndexError, r"\[getitem\] Index 5 is out of bounds for axis 0 with size 2"),
    (lambda: A[0, 0, 0], IndexError, r"Too many indices"),
    (lambda: mx.array(2**80), OverflowError, r"\[array\]"),
    (lambda: mx.array([1], dtype=mx.int8) + 1000, OverflowError, r"1000 is out of range for int8"),
    (lambda: mx.array("text"), TypeError, r"\[array\] Cannot convert an object of type str"),
    (lambda: mx.array(np.array(["a"])), TypeError, r"NumPy dtype <U1 is not supported"),
    (lambda: mx.exp("x"), TypeError, r"incompatible function arguments"),
    (lambda: mx.zeros((2,), dtype="float32"), TypeError, r"incompatible function arguments"),
    (lambda: mx.sum(A, axes=0), TypeError, r"incompatible function arguments"),
    (lambda: mx.add(A), TypeError, r"incompatible function arguments"),
    (lambda: A + "x", ValueError, r"\[__add__\] Cannot apply"),
        (lambda: A + object(), TypeError, r"unsupported operand"),
    (lambda: mx.from_dlpack(3), TypeError, r"\[from_dlpack\]"),
    (lambda: memoryview(mx.array([1.0], dtype=mx.bfloat16)), BufferError, r"buffer"),
]


@pytest.mark.parametrize("call, exc, pattern", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_error_mapping(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_arrays_stay_usable_after_errors():
    a = mx.array([1.0, 2.0])
    for _ in range(3):
        with pytest.raises(ValueError):
            mx.add(a, mx.zeros((3,)))
    assert (a * 2).tolist() == [2.0, 4.0]


def test_errors_during_evaluation_surface_at_eval():
    keep = mx.array([1.0, 2.0]) + 1
    mx.eval(keep)
    prev = mx.set_memory_limit(1 << 20)
    try:
        big = mx.zeros((1 << 24,))  # 64 MiB beyond a 1 MiB limit
        with pytest.raises((RuntimeError, MemoryError)):
            mx.eval(big)
    finally:
        mx.set_memory_limit(prev)
    assert keep.tolist() == [2.0, 3.0]
    assert (mx.zeros((1 << 16,)) + 1).sum().item() == 1 << 16


def test_transform_errors_keep_tags():
    with pytest.raises(ValueError, match=r"\[vjp\]"):
        mx.vjp(lambda x: x * 2, [mx.array([1.0])], [mx.array([1.0, 2.0])])
    with pytest.raises(ValueError, match=r"\[vmap\]"):
        mx.vmap(lambda x: x)(mx.array(1.0))


def test_bad_keyword_arguments():
    with pytest.raises(TypeError):
        mx.reshape(A, shape=(3, 2), axis=0)
    with pytest.raises(TypeError):
        mx.random.normal((2,), scale=1.0, sigma=2.0)
    with pytest.raises(TypeError):
        A.sum(axes=1)


def test_async_eval_error_surfaces_in_synchronize_once():
    # As MLX: the error of work submitted by async_eval is raised by synchronize (once).
    singular = mx.array([[1.0, 2.0], [2.0, 4.0]])
    a = mx.linalg.inv(singular, stream=mx.cpu)
    mx.async_eval(a)
    with pytest.raises(RuntimeError, match=r"\[linalg::inv\]"):
        mx.synchronize(mx.cpu)  # a device names its default stream
    mx.synchronize(mx.cpu)
    with pytest.raises(RuntimeError):
        mx.eval(a)  # the array keeps its error
    b = mx.linalg.inv(singular, stream=mx.cpu)
    mx.async_eval(b)
    with pytest.raises(RuntimeError):
        mx.eval(b)
    mx.synchronize()  # already raised through the array
    mx.synchronize(mx.default_stream(mx.cpu))
