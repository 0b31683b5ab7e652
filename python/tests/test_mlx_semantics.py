"""MLX's Python semantics that MLX programs rely on beyond the values of ops: how grad and
value_and_grad treat argnums, argnames, containers and auxiliary outputs; jvp tangents of
comparisons and integer functions; vmap axes specs; custom_function rules; operator
operands; printing; the error types of bad conversions and indices; the array API
namespace. References are analytic derivatives and NumPy."""

import platform
from typing import NamedTuple

import numpy as np
import pytest

import kiln.core as mx
from conftest import assert_close, random_array

RTOL = 1e-5


# ---------------------------------------------------------------- grad and value_and_grad


def test_grad_argnums_int_and_tuple(rng):
    x, xn = random_array(rng, (4,), mx.float32)
    y, yn = random_array(rng, (4,), mx.float32)

    def f(a, b):
        return (a * a * b).sum()

    g = mx.grad(f, 1)(x, y)  # an int gives one gradient
    assert_close(g, xn * xn, rtol=RTOL)
    g = mx.grad(f, (0, 1))(x, y)  # a sequence gives a tuple
    assert isinstance(g, tuple) and len(g) == 2
    assert_close(g[0], 2 * xn * yn, rtol=RTOL)
    assert_close(g[1], xn * xn, rtol=RTOL)


def test_grad_argnames_only_gives_none_positional(rng):
    x, xn = random_array(rng, (3,), mx.float32)
    y, yn = random_array(rng, (3,), mx.float32)

    def f(a, b):
        return (a * b).sum()

    for spec in (dict(argnames=["b"]), dict(argnums=[], argnames="b")):
        pos, kw = mx.grad(f, **spec)(x, b=y)
        assert pos is None and set(kw) == {"b"}
        assert_close(kw["b"], xn, rtol=RTOL)
    pos, kw = mx.grad(f, argnums=[0], argnames=["b"])(x, b=y)  # one argnum: no 1-tuple
    assert_close(pos, yn, rtol=RTOL)
    assert_close(kw["b"], xn, rtol=RTOL)


def test_grad_spec_errors_at_creation():
    f = lambda v: v.sum()  # noqa: E731
    with pytest.raises(TypeError, match=r"\[grad\]"):
        mx.grad(f, (None, None))
    with pytest.raises(ValueError, match=r"\[value_and_grad\].*no argument"):
        mx.value_and_grad(f, ())
    with pytest.raises(ValueError, match=r"\[grad\] Repeated argnums 0"):
        mx.grad(f, argnums=(0, 0))


def test_grad_output_rules():
    x = mx.array([1.0, 2.0])
    with pytest.raises(ValueError, match=r"shape \(1, 1\)"):  # one element, but not shape ()
        mx.grad(lambda v: mx.sum(v, keepdims=True).reshape(1, 1))(x)
    with pytest.raises(ValueError, match=r"\[grad\].*tuple"):  # grad takes no aux outputs
        mx.grad(lambda v: (v.sum(), v))(x)
    with pytest.raises(ValueError, match=r"\[value_and_grad\].*list"):  # aux needs a tuple
        mx.value_and_grad(lambda v: [v.sum(), v])(x)
    with pytest.raises(ValueError, match=r"Argument 0"):  # non-array leaves
        mx.grad(lambda p: p["a"] * p["b"])({"a": 0.5, "b": mx.array(2.0)})


def test_value_and_grad_aux_tree(rng):
    x, xn = random_array(rng, (2, 3), mx.float32)

    def f(a):
        loss = (a * a).sum()
        return loss, {"loss": loss, "sq": a * a, "misc": [1, "s", a]}

    (loss, aux), g = mx.value_and_grad(f)(x)
    assert_close(loss, (xn * xn).sum(), rtol=RTOL)
    assert_close(aux["sq"], xn * xn, rtol=RTOL)
    assert aux["misc"][:2] == [1, "s"]
    assert_close(aux["misc"][2], xn, rtol=0)
    assert_close(g, 2 * xn, rtol=RTOL)


def test_grad_integer_arrays():
    # As MLX: integer arguments and losses differentiate to integer gradients.
    g = mx.grad(lambda v: (v * 3 + 10).sum())(mx.array([1, 2, 3]))
    assert g.dtype == mx.int32 and g.tolist() == [3, 3, 3]


def test_grad_keeps_container_types():
    class State(NamedTuple):
        a: mx.array
        b: mx.array

    class Pair(tuple):
        pass

    def loss(s):
        return (s[0] * 2).sum() + (s[1] * s[1]).sum()

    x, y = mx.array([1.0, 2.0]), mx.array([3.0, -1.0])
    g = mx.grad(loss)(State(x, y))
    assert isinstance(g, State)
    assert g.a.tolist() == [2.0, 2.0] and g.b.tolist() == [6.0, -2.0]
    g = mx.grad(loss)(Pair([x, y]))
    assert type(g) is Pair and g[1].tolist() == [6.0, -2.0]


def test_grad_sees_callers_containers():
    # The function's own updates to the argument's lists and dicts remain; the traced
    # arrays it did not overwrite are replaced by the caller's originals.
    model = [mx.array(1.0), mx.array(5.0), {"w": mx.array(2.0)}]
    first, wd = model[0], model[2]["w"]

    def loss(m):
        m[1] = m[0] * 3
        return m[0] * m[2]["w"]

    g = mx.grad(loss)(model)
    assert g[0].item() == 2.0 and g[2]["w"].item() == 1.0
    assert model[0] is first and model[2]["w"] is wd
    assert model[1].item() == 3.0  # the function's update stays


# ---------------------------------------------------------------- jvp and vjp


def test_jvp_of_comparison_has_tangent_dtype():
    x = mx.array([1.0, -2.0, 3.0])
    for op in (mx.greater, mx.less_equal, mx.equal, mx.not_equal):
        _, (t,) = mx.jvp(lambda v: op(v, 0.0), [x], [mx.ones_like(x)])
        assert t.dtype == mx.float32 and t.tolist() == [0.0, 0.0, 0.0]


def test_jvp_of_integer_functions():
    a = mx.arange(4)
    t = mx.array([3, 2, 1, 0])
    _, (j,) = mx.jvp(mx.sum, [a], [t])
    assert j.item() == 6
    _, (j,) = mx.jvp(lambda v: v * 2, [a], [t])
    assert j.tolist() == [6, 4, 2, 0]


def test_divmod_has_zero_derivatives():
    x = mx.array([7.0, -2.5])
    _, (dq, dr) = mx.jvp(lambda v: mx.divmod(v, mx.array(3.0)), [x], [mx.ones_like(x)])
    assert dq.tolist() == [0.0, 0.0] and dr.tolist() == [0.0, 0.0]
    g = mx.grad(lambda v: mx.divmod(v, 3.0)[1].sum())(x)
    assert g.tolist() == [0.0, 0.0]


# ---------------------------------------------------------------- vmap


def test_vmap_dict_axes_for_one_argument(rng):
    a, an = random_array(rng, (2, 4), mx.float32)
    b, bn = random_array(rng, (4, 2), mx.float32)
    f = lambda t: t["a"] * t["b"]  # noqa: E731
    out = mx.vmap(f, in_axes={"a": 0, "b": 1})({"a": a, "b": b})
    assert_close(out, an * bn.T, rtol=RTOL)
    with pytest.raises(ValueError, match=r"\[vmap\]"):
        mx.vmap(f, in_axes={"a": 0, "b": (0, 0)})({"a": a, "b": b})


def test_vmap_one_element_out_axes(rng):
    a, an = random_array(rng, (2, 3, 4), mx.float32)
    b, bn = random_array(rng, (4, 5), mx.float32)
    out = mx.vmap(mx.matmul, in_axes=(1, None), out_axes=(1,))(a, b)
    want = np.moveaxis(np.moveaxis(an, 1, 0) @ bn, 0, 1)
    assert_close(out, want, rtol=1e-4)


# ---------------------------------------------------------------- custom_function


def test_custom_function_single_argument_rules():
    f = mx.custom_function(mx.exp)

    @f.vjp
    def f_vjp(x, cot, out):  # x is the argument itself, not a tuple
        return mx.ones_like(x) * 42 * cot

    @f.jvp
    def f_jvp(x, t):
        return x * 0 + 7 * t

    @f.vmap
    def f_vmap(x, ax):
        return mx.zeros_like(x) + 3, ax

    assert mx.grad(f)(mx.array(1.0)).item() == 42.0
    _, (t,) = mx.jvp(f, [mx.array(1.0)], [mx.array(2.0)])
    assert t.item() == 14.0
    assert mx.vmap(f)(mx.ones(4)).tolist() == [3.0] * 4

    @mx.custom_function
    def g(p):
        return {"out": p["x"] * p["y"]}

    @g.vjp
    def g_vjp(p, cot, out):  # a dict argument arrives as the dict
        return {"x": mx.zeros_like(p["x"]), "y": mx.ones_like(p["y"])}

    grads = mx.grad(lambda p: g(p)["out"].sum())({"x": mx.ones(2), "y": mx.ones(2)})
    assert grads["x"].tolist() == [0.0, 0.0] and grads["y"].tolist() == [1.0, 1.0]


# ---------------------------------------------------------------- operators


def test_operators_refuse_lists_tuples_strings():
    a = mx.array([1.0, 2.0, 3.0])
    for other in ([1, 2, 3], (1, 2, 3), "abc"):
        assert (a == other) is False
        assert (a != other) is True
        with pytest.raises(ValueError, match="Cannot apply"):
            a + other
        with pytest.raises(ValueError, match="Cannot apply"):
            a < other
        with pytest.raises(ValueError, match="Cannot apply"):
            other * a
    b = a
    with pytest.raises(ValueError):
        b /= [1, 2, 3]
    # NumPy arrays and scalars still convert.
    assert (a + np.ones(3, np.float32)).tolist() == [2.0, 3.0, 4.0]
    assert (a == np.array([1.0, 0.0, 3.0])).tolist() == [True, False, True]


def test_inplace_true_divide_needs_floats():
    a = mx.array([4, 6])
    with pytest.raises(ValueError, match=r"__itruediv__.*int32"):
        a /= 2
    f = mx.array([4.0])
    g = f
    g /= 2
    assert g.item() == 2.0


# ---------------------------------------------------------------- printing and conversions


def test_repr_summarizes_long_axes():
    assert repr(mx.ones(6, mx.int32)) == "array([1, 1, 1, 1, 1, 1], dtype=int32)"
    assert repr(mx.arange(7)) == "array([0, 1, 2, ..., 4, 5, 6], dtype=int32)"
    two = repr(mx.zeros((7, 2), mx.int32))
    assert two.count("[0, 0]") == 6 and "...,\n" in two


def test_format_spec_needs_one_element():
    assert f"{mx.array(0.35487):.1f}" == "0.4"
    assert f"{mx.array([1, 2])}" == "array([1, 2], dtype=int32)"
    with pytest.raises(TypeError, match=r"\[format\].*\(3,\)"):
        f"{mx.arange(3):.2f}"


def test_integer_range_errors_are_overflow_and_value_errors():
    y = mx.array(2_000_000_000, dtype=mx.int32)
    for exc in (OverflowError, ValueError):
        with pytest.raises(exc, match="3000000000 is out of range for int32"):
            y + 3_000_000_000
        with pytest.raises(exc, match="uint8"):
            mx.array([1, 300], dtype=mx.uint8)


def test_construction_from_bytes_and_bad_elements():
    assert mx.array(b"Hi!").tolist() == [72, 105, 33]
    assert mx.array(b"Hi!").dtype == mx.uint8
    assert mx.array(bytearray([1, 2])).dtype == mx.uint8
    with pytest.raises(ValueError, match="type str"):
        mx.array([[0, 1], ["a", 1]])


def test_astype_stream_positional():
    x = mx.array([1.5, 2.5], mx.float32)
    y = x.astype(mx.float16, mx.cpu)
    assert y.dtype == mx.float16 and y.tolist() == [1.5, 2.5]


def test_asarray_copy_false_refuses_arrays():
    a = mx.array([1, 2])
    with pytest.raises(ValueError, match=r"\[asarray\]"):
        mx.asarray(a, copy=False)
    with pytest.raises(ValueError, match=r"\[asarray\]"):
        mx.asarray(a, dtype=mx.float32, copy=False)
    assert mx.asarray(a, copy=True).tolist() == [1, 2]


@pytest.mark.parametrize("np_dtype", [np.int32, np.float32, np.complex64, np.uint8])
def test_asarray_shares_host_buffers_unless_asked_to_copy(rng, np_dtype):
    # As MLX on unified memory: copy=None/False adopt the buffer, so writes show.
    a = (np.abs(rng.standard_normal(40)) * 50).astype(np_dtype)
    shared = mx.asarray(a, copy=False)
    same = mx.asarray(a, dtype=shared.dtype, copy=False)
    view = mx.asarray(a[3::2], copy=False)  # a strided view is shared too
    copied = mx.asarray(a, copy=True)
    before = a.copy()
    a[5] = a[7] = 3
    np.testing.assert_array_equal(np.array(shared), a)
    np.testing.assert_array_equal(np.array(same), a)
    np.testing.assert_array_equal(np.array(view), a[3::2])
    np.testing.assert_array_equal(np.array(copied), before)
    with pytest.raises(ValueError, match=r"\[asarray\]"):
        mx.asarray(a[::-1], copy=False)  # negative strides cannot be shared
    np.testing.assert_array_equal(np.array(mx.asarray(a[::-1])), a[::-1])
    with pytest.raises(ValueError, match=r"\[asarray\] Converting a ndarray to"):
        mx.asarray(a, dtype=mx.float16, copy=False)


def test_asarray_of_numpy_float64_is_float32_as_the_constructor(rng):
    a = rng.standard_normal((3, 4))
    x = mx.asarray(a)
    assert x.dtype == mx.float32 == mx.array(a).dtype
    np.testing.assert_array_equal(np.array(x), a.astype(np.float32))
    a[0, 0] = 1e3  # a copy: the source's writes do not show
    assert np.array(x)[0, 0] != np.float32(1e3)
    with pytest.raises(ValueError, match=r"\[asarray\] A NumPy float64 array"):
        mx.asarray(a, copy=False)
    kept = mx.asarray(a, dtype=mx.float64, copy=False)
    a[1, 2] = -7.5
    assert kept.dtype == mx.float64 and kept[1, 2].item() == -7.5


# ---------------------------------------------------------------- indexing errors


def test_index_errors_are_index_and_value_errors():
    x = mx.array([0, 1, 2])
    for exc in (IndexError, ValueError):
        with pytest.raises(exc, match="Too many indices"):
            x[..., 0, 0]
        with pytest.raises(exc, match="Too many indices"):
            s = mx.array(0)
            s[0] = 1
        with pytest.raises(exc, match="32-bit"):
            x[: 2**32]
        with pytest.raises(exc, match="32-bit"):
            x[2**32]
        with pytest.raises(exc, match="Boolean index did not match"):
            m = mx.arange(8).reshape(2, 2, 2)
            m[np.zeros((1, 2, 2), dtype=bool)] = 0
        with pytest.raises(exc, match="out of bounds for axis 1"):
            z = mx.zeros((4, 3, 4))
            z[mx.array([2, 3]), None, mx.array([2, 3])] = mx.arange(2)
        with pytest.raises(exc, match="single ellipsis"):
            x[..., ...] = 1
    assert x[: 2**31 - 1].tolist() == [0, 1, 2]


def test_concatenate_overflow_reports_the_full_size():
    big = mx.zeros(2**30)  # lazy: nothing of this size is allocated
    for parts in (3, 5):
        with pytest.raises(OverflowError, match=str(2**30 * parts)):
            mx.concatenate([big] * parts)


def test_at_without_index():
    a = mx.array([0, 1, 2])
    with pytest.raises(ValueError, match=r"\[at\] Index first"):
        a.at.add(1)
    assert a.at[1].add(2).tolist() == [0, 3, 2]


# ---------------------------------------------------------------- array API, devices


def test_array_namespace():
    x = mx.array(1.0)
    xp = x.__array_namespace__()
    assert xp is mx
    assert xp.asarray([1, 2]).tolist() == [1, 2]
    info = mx.__array_namespace_info__()
    assert info.default_device() == mx.default_device()
    assert info.default_dtypes()["real floating"] == mx.float32
    assert info.dtypes(kind="real floating") == {"float32": mx.float32, "float64": mx.float64}
    assert info.dtypes(kind=("bool", "complex floating")) == {
        "bool": mx.bool_,
        "complex64": mx.complex64,
    }
    assert mx.Device(mx.cpu) in info.devices()
    with pytest.raises(ValueError, match="Unknown dtype kind"):
        info.dtypes(kind="nope")
    with pytest.raises(TypeError):
        info.dtypes(device="cpu")


def test_cpu_device_info():
    info = mx.device_info(mx.cpu)
    assert info["architecture"] == platform.machine()
    assert isinstance(info["device_name"], str) and len(info["device_name"]) > 0
    assert info["threads"] >= 1


# ---------------------------------------------------------------- export_to_dot


def test_export_to_dot(tmp_path):
    import io

    a, b = mx.array(1.0), mx.array([2.0, 3.0])
    f = io.StringIO()
    mx.export_to_dot(f, mx.exp(a + b))
    text = f.getvalue()
    assert text.startswith("digraph {") and text.rstrip().endswith("}")
    assert 'label="Add' in text and 'label="Exp' in text and "(2,) float32" in text

    f = io.StringIO()
    mx.export_to_dot(f, *mx.divmod(a, b))  # several outputs, one multi-output graph
    assert f.getvalue().count("fillcolor=lightblue") == 2

    path = tmp_path / "g.dot"
    mx.export_to_dot(path, {"out": a * 2})  # a path; trees of arrays
    assert 'label="Multiply' in path.read_text()
    with pytest.raises(TypeError, match=r"\[export_to_dot\]"):
        mx.export_to_dot(3, a)
