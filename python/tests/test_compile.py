"""kiln.core.compile: results equal to the uncompiled function (bit for bit: fused kernels
round each op as the eager kernels do) on fresh random inputs, trace counts, shapeless
traces, captured state and random numbers, transforms in both orders, custom kernels inside,
disable/enable, and errors."""

import inspect
import io
import os
import subprocess
import sys
from functools import partial

import numpy as np
import pytest

import kiln.core as mx


def bits(a):
    """The elements of `a` as unsigned integers of their size."""
    if a.dtype == mx.bool_:
        return np.array(a).astype(np.uint8)
    width = {1: mx.uint8, 2: mx.uint16, 4: mx.uint32, 8: mx.uint64}[a.itemsize]
    return np.array(a.view(width) if a.dtype != width else a)


ON_GPU = mx.default_device() == mx.gpu


def assert_bitwise(actual, expected, what=""):
    """Bit for bit; on a GPU, float32 and float64 may differ by 2 ulp (NVCC may contract a
    multiply inside one op's functor with an add of the next)."""
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    if ON_GPU and actual.dtype in (mx.float32, mx.float64):
        a, e = np.array(actual), np.array(expected)
        ulp = np.spacing(np.abs(e).astype(a.dtype))
        close = (np.abs(a - e) <= 2 * ulp) | (a == e) | (np.isnan(a) & np.isnan(e))
        assert close.all(), (what, a[~close][:4], e[~close][:4])
        return
    a, e = bits(actual), bits(expected)
    if mx.issubdtype(actual.dtype, mx.inexact):
        # Which NaN an op on two NaNs returns is the instruction's choice (x86 keeps the first
        # operand's, and a compiler may commute the op): NaNs are equal whatever their bits.
        nan = np.isnan(np.array(actual.astype(mx.float32) if actual.itemsize == 2 else actual))
        nan &= np.isnan(np.array(expected.astype(mx.float32) if expected.itemsize == 2 else expected))
        a, e = np.where(nan, 0, a), np.where(nan, 0, e)
    np.testing.assert_array_equal(a, e, err_msg=str(what))


def count_traces(fun):
    calls = [0]

    def counted(*args, **kwargs):
        calls[0] += 1
        return fun(*args, **kwargs)

    counted.__name__ = fun.__name__
    return counted, calls


def gelu_tanh(x):
    return 0.5 * x * (1 + mx.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def ten_ops(x, y):
    z = gelu_tanh(x) * 1.5 + y
    return mx.maximum(z, -1.0) - mx.exp(-mx.abs(x)) / 2


def rand(rng, shape, dtype=mx.float32, lo=-2.0, hi=2.0):
    return mx.array(rng.uniform(lo, hi, size=shape).astype(np.float32)).astype(dtype)


# ---------------------------------------------------------------- results and fusion


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64])
def test_elementwise_chains_equal_uncompiled_bitwise(rng, dtype):
    if dtype == mx.float64 and mx.default_device() == mx.gpu:
        pytest.skip("float64 chains are checked on the CPU")
    cfun = mx.compile(ten_ops)
    for shape in [(3,), (17, 33), (2, 3, 5, 7)]:
        x, y = rand(rng, shape, dtype), rand(rng, shape, dtype)
        assert_bitwise(cfun(x, y), ten_ops(x, y), shape)
    # one kernel for the chain
    out = cfun(x, y)
    s = io.StringIO()
    mx.export_to_dot(s, out)
    assert s.getvalue().count("Compiled") == 1, s.getvalue()


def test_broadcasting_scalars_and_views(rng):
    def fun(x, b, s):
        return mx.sigmoid(x * s + b) * (x - b)

    cfun = mx.compile(fun)
    x = rand(rng, (6, 8))
    for b in [rand(rng, (8,)), rand(rng, (6, 1)), rand(rng, ())]:
        for s in [mx.array(0.5), rand(rng, (1, 8))]:
            assert_bitwise(cfun(x, b, s), fun(x, b, s))
    # non-contiguous inputs: transposed, strided slices, broadcast views
    xt = rand(rng, (8, 6)).T
    xs = rand(rng, (12, 16))[::2, ::2]
    xb = mx.broadcast_to(rand(rng, (1, 8)), (6, 8))
    for v in [xt, xs, xb]:
        b = rand(rng, (8,))
        assert_bitwise(cfun(v, b, mx.array(2.0)), fun(v, b, mx.array(2.0)))


def test_reductions_in_the_middle(rng):
    def fun(x):
        m = mx.max(x, axis=-1, keepdims=True)
        e = mx.exp(x - m)
        return e / mx.sum(e, axis=-1, keepdims=True), mx.logsumexp(x * 2 + 1, axis=0)

    cfun = mx.compile(fun)
    x = rand(rng, (5, 9))
    for a, b in zip(cfun(x), fun(x)):
        assert_bitwise(a, b)


def test_multiple_outputs_and_intermediates(rng):
    def fun(x):
        a = mx.sin(x) * 2
        b = a + 1
        c = mx.cos(b) * a
        return [a, c], {"b": b, "const": 3, "none": None}

    cfun = mx.compile(fun)
    x = rand(rng, (4, 4))
    (a, c), d = cfun(x)
    (ea, ec), ed = fun(x)
    assert_bitwise(a, ea)
    assert_bitwise(c, ec)
    assert_bitwise(d["b"], ed["b"])
    assert d["const"] == 3 and d["none"] is None


UNARY = [
    "abs",
    "negative",
    "sign",
    "square",
    "sqrt",
    "rsqrt",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "erf",
    "erfinv",
    "sigmoid",
    "floor",
    "ceil",
    "round",
    "isnan",
    "isinf",
    "isfinite",
    "logical_not",
]
BINARY = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "floor_divide",
    "remainder",
    "power",
    "maximum",
    "minimum",
    "arctan2",
    "logaddexp",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.int32, mx.uint8])
def test_every_elementwise_op_fused_bitwise(rng, dtype):
    """Each op's result inside a fused kernel equals the eager op's, for every dtype it takes."""
    floating = mx.issubdtype(dtype, mx.floating)
    unary = [
        u
        for u in UNARY
        if floating
        or u in ("abs", "negative", "sign", "square", "logical_not", "isnan", "isinf", "isfinite")
    ]
    binary = [b for b in BINARY if floating or b not in ("divide", "arctan2", "logaddexp")]
    if not floating:
        binary.append("bitwise_xor")

    def fun(x, y):
        outs = {}
        acc = mx.zeros(x.shape, mx.float32)
        for name in unary:
            outs[name] = getattr(mx, name)(x)
            acc = acc + outs[name].astype(mx.float32)
        for name in binary:
            outs[name] = getattr(mx, name)(x, y)
            acc = acc + outs[name].astype(mx.float32)
        return outs, acc

    if floating:
        x, y = rand(rng, (7, 9), dtype, 0.1, 0.9), rand(rng, (7, 9), dtype, 0.2, 3.0)
    else:
        x = mx.array(rng.integers(0, 50, size=(7, 9))).astype(dtype)
        y = mx.array(rng.integers(1, 7, size=(7, 9))).astype(dtype)
    got, acc = mx.compile(fun)(x, y)
    want, eacc = fun(x, y)
    for name in want:
        assert_bitwise(got[name], want[name], name)
    assert_bitwise(acc, eacc, "sum")


@pytest.mark.parametrize("src", [mx.float32, mx.float16, mx.bfloat16, mx.int32, mx.uint8, mx.bool_])
def test_fused_casts_bitwise(rng, src):
    targets = [
        mx.bool_,
        mx.uint8,
        mx.int8,
        mx.int16,
        mx.uint32,
        mx.int64,
        mx.float16,
        mx.bfloat16,
        mx.float32,
    ]

    def fun(x):
        return [(x * 3).astype(t) for t in targets]

    x = rand(rng, (33,), mx.float32, -300, 300).astype(src)
    for t, a, b in zip(targets, mx.compile(fun)(x), fun(x)):
        assert_bitwise(a, b, f"{src} -> {t}")


def test_where_and_literals(rng):
    def fun(x):
        y = mx.where(x > 0, x * 2, mx.array(float("nan")))
        return mx.where(mx.isnan(y), mx.array(-np.inf), y + 1)

    x = rand(rng, (50,))
    assert_bitwise(mx.compile(fun)(x), fun(x))


def test_large_inputs_run_in_parallel(rng):
    x = rand(rng, (300_001,))
    y = rand(rng, (300_001,))
    assert_bitwise(mx.compile(ten_ops)(x, y), ten_ops(x, y))


def test_donates_input_buffers():
    fun = mx.compile(lambda x: mx.sin(x) * 2 + 1)
    with mx.stream(mx.cpu):
        x = mx.arange(64, dtype=mx.float32)
        mx.eval(x)
        ptr = np.asarray(x).__array_interface__["data"][0]
        out = fun(x)
        del x
        mx.eval(out)
        assert np.asarray(out).__array_interface__["data"][0] == ptr


# ---------------------------------------------------------------- the cache


def test_traces_once_per_shapes_and_dtypes(rng):
    fun, calls = count_traces(lambda x, y: mx.exp(x) * y)
    cfun = mx.compile(fun)
    for _ in range(3):
        cfun(rand(rng, (2, 3)), rand(rng, (2, 3)))
    assert calls[0] == 1
    cfun(rand(rng, (3, 3)), rand(rng, (3, 3)))
    assert calls[0] == 2
    cfun(rand(rng, (3, 3), mx.float16), rand(rng, (3, 3), mx.float16))
    assert calls[0] == 3
    cfun(rand(rng, (2, 3)), rand(rng, (2, 3)))
    assert calls[0] == 3


def test_constants_and_structure_are_part_of_the_key(rng):
    fun, calls = count_traces(lambda x, k, opts: x * k if opts["scale"] else x + k)
    cfun = mx.compile(fun)
    x = rand(rng, (4,))
    assert_bitwise(cfun(x, 2.0, {"scale": True}), x * 2.0)
    assert_bitwise(cfun(x, 2.0, {"scale": True}), x * 2.0)
    assert calls[0] == 1
    assert_bitwise(cfun(x, 3.0, {"scale": True}), x * 3.0)
    assert_bitwise(cfun(x, 3.0, {"scale": False}), x + 3.0)
    assert calls[0] == 3
    # a list and a tuple of the same arrays, and nested lists of different shapes
    g, gcalls = count_traces(lambda t: t[0] + t[1])
    cg = mx.compile(g)
    cg([x, x])
    cg((x, x))
    assert gcalls[0] == 2


def test_shapeless_reuses_the_trace_across_shapes(rng):
    def ref(x, b):
        return gelu_tanh(x) * 2 + b

    fun, calls = count_traces(ref)
    cfun = mx.compile(fun, shapeless=True)
    for shape in [(2, 3), (5, 7), (1, 1), (64, 33)]:
        x, b = rand(rng, shape), rand(rng, shape[-1:])
        assert_bitwise(cfun(x, b), ref(x, b))
    assert calls[0] == 1
    cfun(rand(rng, (2, 2, 2)), rand(rng, (2,)))
    assert calls[0] == 2


def test_shapeless_with_reductions_reshapes_and_fills(rng):
    def fun(x):
        m = mx.mean(x, axis=-1, keepdims=True)
        v = mx.var(x, axis=-1, keepdims=True)
        z = mx.zeros_like(x) + (x - m) / mx.sqrt(v + 1e-5)
        return z.reshape(-1), mx.expand_dims(mx.sum(z, axis=-1), 0)

    cfun = mx.compile(fun, shapeless=True)
    for shape in [(3, 4), (5, 8), (1, 2)]:
        x = rand(rng, shape)
        for a, b in zip(cfun(x), fun(x)):
            np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6)
            assert a.shape == b.shape


def test_shapeless_refuses_what_it_cannot_replay(rng):
    cfun = mx.compile(lambda x: x.reshape(6, 4), shapeless=True)
    cfun(mx.zeros((2, 3, 4)))
    with pytest.raises(ValueError):
        cfun(mx.zeros((5, 5, 5)))
    sfun = mx.compile(lambda x: x[:, 1:] * 2, shapeless=True)
    sfun(mx.zeros((3, 4)))
    assert sfun(mx.zeros((5, 4))).shape == (5, 3)  # the whole first axis follows
    with pytest.raises(ValueError):
        sfun(mx.zeros((3, 8)))  # 1: of another size


def test_closures_are_frozen_and_uncaptured_inputs_raise(rng):
    x = mx.array([1.0, 2.0])
    cfun = mx.compile(lambda a: a + x)
    assert_bitwise(cfun(mx.array([1.0, 1.0])), mx.array([2.0, 3.0]))
    x = mx.array([5.0, 5.0])
    assert_bitwise(cfun(mx.array([1.0, 1.0])), mx.array([2.0, 3.0]))

    y = mx.array([1.0, 2.0]) + 1
    with pytest.raises(ValueError, match="uncaptured"):
        mx.compile(lambda a: a + (y * 2))(y)


# ---------------------------------------------------------------- captured state


def test_captured_state_is_read_and_updated():
    state = {"w": mx.array([1.0, 2.0]), "step": mx.array(0)}

    @partial(mx.compile, inputs=state, outputs=state)
    def step(g):
        state["w"] = state["w"] - 0.5 * g
        state["step"] = state["step"] + 1
        return mx.sum(state["w"])

    for i in range(3):
        loss = step(mx.array([1.0, 1.0]))
    assert state["step"].item() == 3
    np.testing.assert_allclose(np.array(state["w"]), [-0.5, 0.5])
    assert loss.item() == 0.0
    # the captured state is read at each call
    state["w"] = mx.array([10.0, 10.0])
    step(mx.array([0.0, 0.0]))
    np.testing.assert_allclose(np.array(state["w"]), [10.0, 10.0])


def test_random_state_is_captured():
    @partial(mx.compile, inputs=mx.random.state, outputs=mx.random.state)
    def noise(x):
        return x + mx.random.uniform(shape=x.shape)

    x = mx.zeros((100,))
    a, b = noise(x), noise(x)
    assert not mx.allclose(a, b).item()
    mx.random.seed(7)
    c = noise(x)
    mx.random.seed(7)
    d = noise(x)
    assert_bitwise(c, d)
    # the same numbers as uncompiled sampling from the same seed
    mx.random.seed(7)
    e = x + mx.random.uniform(shape=x.shape)
    assert_bitwise(c, e)


def test_random_without_captured_state_is_frozen():
    fun = mx.compile(lambda x: x + mx.random.uniform(shape=x.shape))
    x = mx.zeros((10,))
    assert_bitwise(fun(x), fun(x))


def test_training_step_with_value_and_grad(rng):
    w = {"a": rand(rng, (4, 3)), "b": rand(rng, (3,))}
    x, y = rand(rng, (8, 4)), rand(rng, (8, 3))

    def loss(params, x, y):
        return mx.mean(mx.square(mx.tanh(x @ params["a"] + params["b"]) - y))

    def step(params, x, y):
        l, g = mx.value_and_grad(loss)(params, x, y)
        return l, {k: params[k] - 0.1 * g[k] for k in params}

    cstep = mx.compile(step)
    p1, p2 = w, w
    for _ in range(3):
        l1, p1 = step(p1, x, y)
        l2, p2 = cstep(p2, x, y)
        np.testing.assert_allclose(l1.item(), l2.item(), rtol=1e-6)
        for k in p1:
            np.testing.assert_allclose(np.array(p1[k]), np.array(p2[k]), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- transforms


def test_transforms_in_both_orders(rng):
    def f(x, y):
        return mx.sum(mx.sin(x) * mx.exp(y))

    x, y = rand(rng, (5,)), rand(rng, (5,))
    for a, b in zip(mx.compile(mx.grad(f, argnums=(0, 1)))(x, y), mx.grad(f, argnums=(0, 1))(x, y)):
        assert_bitwise(a, b)
    for a, b in zip(mx.grad(mx.compile(f), argnums=(0, 1))(x, y), mx.grad(f, argnums=(0, 1))(x, y)):
        assert_bitwise(a, b)
    g = lambda x: mx.tanh(x) * x
    ct = rand(rng, (5,))
    assert_bitwise(mx.vjp(mx.compile(g), [x], [ct])[1][0], mx.vjp(g, [x], [ct])[1][0])
    assert_bitwise(mx.jvp(mx.compile(g), [x], [ct])[1][0], mx.jvp(g, [x], [ct])[1][0])
    m = rand(rng, (3, 5))
    assert_bitwise(mx.vmap(mx.compile(g))(m), mx.vmap(g)(m))
    assert_bitwise(mx.compile(mx.vmap(g, in_axes=1))(m), mx.vmap(g, in_axes=1)(m))
    d1 = mx.grad(lambda x: mx.sum(mx.sin(x) * x))
    d2 = mx.grad(lambda x: mx.sum(d1(x)))
    assert_bitwise(mx.compile(d2)(x), d2(x))
    assert_bitwise(mx.grad(lambda x: mx.sum(mx.compile(d1)(x)))(x), d2(x))


def test_custom_function_and_checkpoint_inside(rng):
    @mx.custom_function
    def f(x):
        return mx.exp(x)

    @f.vjp
    def f_vjp(primals, cotangent, output):
        return cotangent * output * 3  # not the true derivative: shows the rule ran

    def loss(x):
        return mx.sum(mx.checkpoint(lambda z: f(z) * 2)(x))

    x = rand(rng, (6,))
    assert_bitwise(mx.compile(mx.grad(loss))(x), mx.grad(loss)(x))
    np.testing.assert_allclose(
        np.array(mx.compile(mx.grad(loss))(x)), np.exp(np.array(x)) * 6, rtol=1e-6
    )


@pytest.mark.skipif(not hasattr(mx.fast, "metal_kernel"), reason="no custom kernels")
def test_custom_kernels_inside(rng):
    kernel = mx.fast.metal_kernel(
        name="compile_double",
        input_names=["inp"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = inp[i] * 2;",
    )

    def fun(x):
        y = kernel(
            inputs=[mx.exp(x) + 1],
            template=[("T", mx.float32)],
            grid=(x.size, 1, 1),
            threadgroup=(64, 1, 1),
            output_shapes=[x.shape],
            output_dtypes=[x.dtype],
        )[0]
        return mx.sqrt(y) * x

    x = rand(rng, (128,))
    assert_bitwise(mx.compile(fun)(x), fun(x))
    np.testing.assert_allclose(
        np.array(mx.compile(fun)(x)),
        np.sqrt((np.exp(np.array(x)) + 1) * 2) * np.array(x),
        rtol=1e-5,
    )


# ---------------------------------------------------------------- disable / enable


def test_disable_and_enable():
    fun, calls = count_traces(lambda x: x + 1)
    cfun = mx.compile(fun)
    x = mx.array(1.0)
    cfun(x)
    cfun(x)
    assert calls[0] == 1
    mx.disable_compile()
    try:
        cfun(x)
        cfun(x)
        assert calls[0] == 3
    finally:
        mx.enable_compile()
    cfun(x)
    assert calls[0] == 3


def test_disabled_by_the_environment():
    code = (
        "import kiln.core as mx\n"
        "n = [0]\n"
        "def f(x):\n    n[0] += 1\n    return x + 1\n"
        "c = mx.compile(f)\nc(mx.array(1.0)); c(mx.array(1.0))\nassert n[0] == 2, n\n"
    )
    env = dict(os.environ, KILN_DISABLE_COMPILE="1")
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# ---------------------------------------------------------------- the Python function


def test_decorator_forms_and_attributes():
    @mx.compile
    def f(x: mx.array, scale: float = 2.0):
        """Doubles."""
        return x * scale

    assert f.__name__ == "f" and f.__doc__ == "Doubles."
    assert str(inspect.signature(f)) == "(x: kiln.core.array, scale: float = 2.0)" or list(
        inspect.signature(f).parameters
    ) == ["x", "scale"]

    @partial(mx.compile, shapeless=True)
    def g(x):
        return x + 1

    assert g(mx.array([1])).item() == 2

    class Model:
        def __init__(self):
            self.k = 3.0

        def __call__(self, x):
            return x * self.k

    assert mx.compile(Model())(mx.array(2.0)).item() == 6.0
    assert mx.compile(Model().__call__)(mx.array(2.0)).item() == 6.0


def test_export_to_dot_shows_the_fused_graph(rng):
    fun = mx.compile(
        lambda x, y, z: (x + mx.broadcast_to(y, z.shape) * z, mx.broadcast_to(y, z.shape).sum())
    )
    a, b, c = rand(rng, (4, 4)), mx.array(0.5), rand(rng, (4, 4))
    d = fun(a, b, c)
    s = io.StringIO()
    mx.export_to_dot(s, a=a, b=b, c=c, d1=d[0], d2=d[1])
    assert "CompiledBroadcastMultiplyAdd" in s.getvalue()
    assert s.getvalue().startswith("digraph")


# ---------------------------------------------------------------- errors


def test_errors_name_the_argument():
    cfun = mx.compile(lambda x, y: x)

    class Thing:
        pass

    with pytest.raises(ValueError, match="argument 1"):
        cfun(mx.array(1.0), Thing())
    with pytest.raises(ValueError, match="keyword argument 'y'"):
        cfun(mx.array(1.0), y=Thing())
    with pytest.raises(ValueError, match=r"argument 1\[0\]\['k'\]"):
        cfun(mx.array(1.0), [{"k": Thing()}])


def test_non_array_outputs_raise():
    with pytest.raises(ValueError, match=r"output\[1\] is of type"):
        mx.compile(lambda x: (x, np.zeros(2)))(mx.array(1.0))


def test_reading_values_while_traced_raises_and_recovers():
    def fun(x):
        if x.item() > 0:
            return x
        return -x

    cfun = mx.compile(fun)
    with pytest.raises(ValueError, match="compile"):
        cfun(mx.array(1.0))
    assert (mx.array(1.0) + 1).item() == 2.0  # still usable


def test_captured_output_structure_must_not_change():
    state = [mx.array(1.0)]

    @partial(mx.compile, outputs=state)
    def f(x):
        state[0] = x + 1
        return x

    f(mx.array(1.0))
    state.append(mx.array(2.0))
    with pytest.raises(ValueError, match="captured outputs"):
        f(mx.array(1.0))


def test_compile_needs_a_callable():
    with pytest.raises(ValueError, match="callable"):
        mx.compile(3)


def test_debug_prints_graphs_and_kernels():
    code = (
        "import kiln.core as mx\n"
        "f = mx.compile(lambda x: mx.exp(x) * 2 + 1)\n"
        "mx.eval(f(mx.ones((4,))))\n"
    )
    env = dict(os.environ, KILN_DEBUG_COMPILE="1", PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert "traced graph" in r.stderr
    assert "CompiledExp" in r.stderr
    assert "kiln_fused_run" in r.stderr or "kiln_fused::contig" in r.stderr or "contig(" in r.stderr


def test_a_kernel_that_cannot_build_runs_unfused():
    if ON_GPU:
        pytest.skip("the host compiler's path")
    code = (
        "import kiln.core as mx, numpy as np\n"
        "fun = lambda x: mx.sin(x) * 3 - x / 7\n"
        "x = mx.arange(50, dtype=mx.float32)\n"
        "a, b = mx.compile(fun)(x), fun(x)\n"
        "assert np.array_equal(np.array(a), np.array(b))\n"
        "s = mx._core._compile_stats()\n"
        "assert s['fallback_runs'] == 1 and s['fused_runs'] == 0, s\n"
    )
    env = dict(
        os.environ,
        KILN_CXX="/nonexistent/c++",
        KILN_CACHE="0",
        PYTHONPATH=os.pathsep.join(sys.path),
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "runs unfused" in r.stderr


def test_shapeless_replays_that_would_mix_shapes_raise():
    # The samples' shape is fixed by the trace: a replay on another shape must not reach a
    # kernel with operands of two shapes.
    k = mx.random.key(1)
    fun = mx.compile(lambda x: x * mx.random.uniform(shape=x.shape, key=k), shapeless=True)
    fun(mx.ones((2, 3)))
    with pytest.raises(ValueError):
        fun(mx.ones((4, 5)))
    mm = mx.compile(lambda a, b: a @ b, shapeless=True)
    mm(mx.ones((2, 3)), mx.ones((3, 4)))
    assert mm(mx.ones((5, 6)), mx.ones((6, 2))).shape == (5, 2)
    with pytest.raises(ValueError):
        mm(mx.ones((5, 6)), mx.ones((7, 2)))


def random_program(rng, n_ops):
    """A random function of two (4, 6) float32 arrays: elementwise ops on values of the
    graph, with broadcasts from reductions and slices in between, several outputs."""
    unary = [
        mx.exp,
        mx.sin,
        mx.tanh,
        mx.abs,
        mx.sqrt,
        mx.square,
        mx.sigmoid,
        mx.negative,
        lambda v: v * 0.5,
        lambda v: v + 1.25,
        lambda v: mx.maximum(v, 0.0),
        lambda v: v.astype(mx.float16).astype(mx.float32),
        lambda v: mx.log1p(mx.abs(v)),
    ]
    binary = [
        mx.add,
        mx.subtract,
        mx.multiply,
        mx.minimum,
        mx.maximum,
        lambda a, b: a / (mx.abs(b) + 1),
        lambda a, b: mx.where(a > b, a, b * 2),
    ]
    plan = []
    for k in range(n_ops):
        kind = rng.choice(["unary", "binary", "reduce", "transpose"], p=[0.45, 0.4, 0.1, 0.05])
        plan.append((kind, int(rng.integers(0, 10**6)), int(rng.integers(0, 10**6))))
    outs = sorted(set(int(i) for i in rng.integers(2, n_ops + 2, size=3)))

    def fun(x, y):
        vals = [x, y]
        for kind, a, b in plan:
            u, v = vals[a % len(vals)], vals[b % len(vals)]
            if kind == "unary":
                vals.append(unary[b % len(unary)](u))
            elif kind == "binary":
                vals.append(binary[a % len(binary)](u, v))
            elif kind == "reduce":
                vals.append(u - mx.sum(u, axis=-1, keepdims=True) * 0.1)
            else:
                vals.append(mx.transpose(u.reshape(6, 4)).reshape(4, 6) * 1.5)
        return [vals[i % len(vals)] for i in outs]

    return fun


@pytest.mark.parametrize("trial", range(6))
def test_random_programs_equal_uncompiled(rng, trial):
    fun = random_program(rng, int(rng.integers(4, 25)))
    x, y = rand(rng, (4, 6)), rand(rng, (4, 6))
    for a, b in zip(mx.compile(fun)(x, y), fun(x, y)):
        assert_bitwise(a, b, f"trial {trial}")


def test_shapeless_gathers_follow_whole_axes_and_refuse_partial_ones(rng):
    fun = mx.compile(lambda x, i: mx.take(x, i, axis=0) * 2, shapeless=True)
    x = mx.arange(12, dtype=mx.float32).reshape(4, 3)
    assert_bitwise(fun(x, mx.array([0, 2])), mx.take(x, mx.array([0, 2]), axis=0) * 2)
    assert fun(x, mx.array([1, 2, 3])).shape == (3, 3)  # the indices' shape follows
    # take's slices span the other axes whole, so they follow the source's (MLX keeps the
    # traced sizes and reads the wrong elements).
    y = rand(rng, (6, 5))
    i = mx.array([[5, 0], [2, 2]])
    np.testing.assert_array_equal(np.array(fun(y, i)), np.take(np.array(y), np.array(i), 0) * 2)
    # A slice that takes part of an axis has no meaning for another size of it.
    part = mx.compile(lambda x, i: mx.gather(x, [i], [0], [1, 2]), shapeless=True)
    assert part(x, mx.array([3])).tolist() == [[[9.0, 10.0]]]
    with pytest.raises(ValueError, match=r"\[gather\] A shapeless compiled function"):
        part(mx.zeros((4, 5)), mx.array([0]))


def test_compiled_functions_inside_custom_function_and_checkpoint(rng):
    g = mx.compile(lambda x: mx.exp(x) * mx.sin(x))

    @mx.custom_function
    def f(x):
        return g(x)

    @f.vjp
    def f_vjp(primals, cotangent, output):
        return cotangent * 2  # not the true derivative: shows the rule ran

    x = rand(rng, (7,))
    assert_bitwise(f(x), mx.exp(x) * mx.sin(x))
    assert_bitwise(mx.grad(lambda z: mx.sum(f(z)))(x), mx.full(x.shape, 2.0))
    ref = mx.grad(lambda z: mx.sum(mx.exp(z) * mx.sin(z)))(x)
    assert_bitwise(mx.grad(lambda z: mx.sum(mx.checkpoint(g)(z)))(x), ref)


def test_ops_that_need_a_contiguous_input_keep_it_when_compiled(rng):
    # view, stft and the collectives read their input's buffer row-major: compile once
    # dropped the copy that makes a transposed input so (view raised, all_sum summed the
    # wrong elements).
    a = mx.array(rng.standard_normal((3, 4)).astype(np.float32))
    s = mx.array(rng.standard_normal((2, 64)).astype(np.float32))
    for f in (
        lambda a: mx.view(a.T, mx.int32),
        lambda a: mx.view(a[:, ::2], mx.uint8),
    ):
        assert np.array_equal(np.array(mx.compile(f)(a)), np.array(f(a)))
    g = lambda s: mx.fft.stft(s.T.T[:, ::2], n_fft=8, hop_length=4)  # noqa: E731
    assert np.array_equal(np.array(mx.compile(g)(s)), np.array(g(s)))
