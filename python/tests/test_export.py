"""export_function / exporter / import_function: round trips of many primitive kinds against
direct evaluation on fresh random inputs (float64 NumPy references where a loop is simpler),
MLX's argument forms, keyword inputs, several traces, shapeless traces, constants, metadata,
the callback, transformations of imported functions, custom kernels, damaged files, leaks.
"""

import gc
import json
import os

import numpy as np
import pytest

import kiln.core as mx
import kiln.nn as nn


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "fn.kilnfn")


def rand(rng, *shape, lo=-2.0, hi=2.0, dtype=mx.float32):
    return mx.array(rng.uniform(lo, hi, size=shape).astype(np.float32)).astype(dtype)


def assert_same(got, want, exact=False, tol=1e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if exact or not mx.issubdtype(w.dtype, mx.inexact):
            assert mx.array_equal(g, w, equal_nan=True).item()
        else:
            np.testing.assert_allclose(
                np.array(g.astype(mx.float32)),
                np.array(w.astype(mx.float32)),
                rtol=tol,
                atol=tol,
            )


def as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


# name, function, inputs (from an rng), exact comparison
CASES = [
    (
        "unary",
        lambda x: [mx.abs(mx.sin(x)), mx.exp(x), mx.erf(x), mx.sigmoid(x)],
        lambda r: [rand(r, 3, 4)],
        False,
    ),
    (
        "logs",
        lambda x: [mx.log(x), mx.log2(x), mx.log10(x), mx.log1p(x)],
        lambda r: [rand(r, 5, lo=0.1)],
        False,
    ),
    (
        "binary",
        lambda a, b: [
            a + b,
            a * b,
            mx.maximum(a, b),
            a == b,
            a // b,
            a % b,
            mx.arctan2(a, b),
        ],
        lambda r: [rand(r, 2, 3), rand(r, 3, lo=0.5)],
        False,
    ),
    (
        "ints",
        lambda a, b: [a << b, a ^ b, a & b, mx.bitwise_invert(a), mx.right_shift(a, b)],
        lambda r: [mx.array(r.integers(0, 100, 6)), mx.array(r.integers(0, 5, 6))],
        True,
    ),
    (
        "where",
        lambda a, b: [mx.where(a > b, a, b), a.astype(mx.int32), b.astype(mx.float16)],
        lambda r: [rand(r, 4), rand(r, 4)],
        False,
    ),
    (
        "reduce",
        lambda x: [
            x.sum(1),
            x.max(0),
            x.argmin(1),
            x.var(0),
            mx.logsumexp(x, 1),
            (x > 0).any(1),
            x.prod(),
        ],
        lambda r: [rand(r, 3, 5)],
        False,
    ),
    (
        "scan",
        lambda x: [
            mx.cumsum(x, 1),
            mx.cumprod(x, 0, reverse=True),
            mx.cummax(x, 1),
            mx.logcumsumexp(x, 1),
        ],
        lambda r: [rand(r, 3, 5)],
        False,
    ),
    (
        "layout",
        lambda x, y: [
            x.T.reshape(2, 6),
            x[1:3, ::2],
            mx.concatenate([x, x], 0),
            mx.broadcast_to(y, (3, 4)),
            mx.as_strided(x, (2, 2), (1, 4), 1),
            mx.stack([x, x]),
            mx.split(x, 2, axis=1)[1],
            mx.pad(x, 1),
            mx.moveaxis(x[None], 0, 2),
        ],
        lambda r: [rand(r, 3, 4), rand(r, 1, 4)],
        True,
    ),
    (
        "slice_update",
        lambda x, y: [x.at[0:1].add(y), mx.flip(x, 0), mx.roll(x, 1, 1)],
        lambda r: [rand(r, 3, 4), rand(r, 1, 4)],
        True,
    ),
    (
        "creation",
        lambda x, y: [
            x + mx.arange(4),
            x + mx.linspace(0, 1, 4),
            mx.tril(y, -1),
            mx.triu(y, 1),
            y + mx.eye(4, k=1),
        ],
        lambda r: [rand(r, 4), rand(r, 4, 4)],
        True,
    ),
    (
        "gather_scatter",
        lambda x, i, j, v: [
            x[i],
            mx.take_along_axis(x, j, 0),
            mx.put_along_axis(x, j, v, 0),
            x.at[i].add(v[0]),
            x.at[i].maximum(v[0]),
            x[i, 1:3],
        ],
        lambda r: [
            rand(r, 4, 4),
            mx.array(r.integers(0, 4, 2)),
            mx.array(r.integers(0, 4, (2, 4))),
            rand(r, 2, 4),
        ],
        True,
    ),
    (
        "sort",
        lambda x, s: [
            mx.sort(x, 1),
            mx.argsort(x, 1),
            mx.topk(x, 2, 1),
            mx.partition(x, 2, 1),
            mx.median(x, 1),
            mx.searchsorted(mx.sort(s), x, side="right"),
        ],
        lambda r: [rand(r, 3, 6), rand(r, 10)],
        True,
    ),
    (
        "matmul",
        lambda a, b, c: [a @ b, mx.addmm(c, a, b, alpha=0.5, beta=2.0)],
        lambda r: [rand(r, 2, 3, 4), rand(r, 4, 5), rand(r, 3, 5)],
        False,
    ),
    (
        "conv",
        lambda x, w, y, v: [
            mx.conv1d(x, w, stride=2, padding=1),
            mx.conv2d(y, v, padding=1),
            mx.conv_transpose1d(x, w.swapaxes(0, 2)[:, :, :3].swapaxes(0, 2), stride=2),
        ],
        lambda r: [
            rand(r, 2, 9, 3),
            rand(r, 4, 3, 3),
            rand(r, 1, 6, 6, 2),
            rand(r, 3, 3, 3, 2),
        ],
        False,
    ),
    (
        "fft",
        lambda x: [
            mx.abs(mx.fft.fft(x.astype(mx.complex64))),
            mx.fft.irfft(mx.fft.rfft(x)),
        ],
        lambda r: [rand(r, 3, 8)],
        False,
    ),
    (
        "random_key_input",
        lambda k: [
            mx.random.uniform(shape=(3, 2), key=k),
            mx.random.normal((5,), key=k),
            mx.random.randint(0, 9, (4,), key=k),
        ],
        lambda r: [mx.random.key(int(r.integers(0, 2**30)))],
        True,
    ),
    (
        "quantized",
        lambda x, w: [
            mx.quantized_matmul(
                x, *mx.quantize(w, 32, 4), transpose=True, group_size=32, bits=4
            ),
            mx.dequantize(*mx.quantize(w, 32, 4), 32, 4),
        ],
        lambda r: [rand(r, 2, 64), rand(r, 8, 64)],
        False,
    ),
    (
        "fast",
        lambda x, w: [
            mx.fast.rms_norm(x, w, 1e-5),
            mx.fast.layer_norm(x, w, w, 1e-5),
            mx.softmax(x, -1),
            mx.fast.rope(
                x[None], 8, traditional=False, base=10000.0, scale=1.0, offset=2
            )[0],
        ],
        lambda r: [rand(r, 3, 8), rand(r, 8)],
        False,
    ),
    (
        "attention",
        lambda q, k, v: [
            mx.fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask="causal")
        ],
        lambda r: [rand(r, 1, 2, 4, 8), rand(r, 1, 2, 4, 8), rand(r, 1, 2, 4, 8)],
        False,
    ),
]


@pytest.mark.parametrize("name,fn,make,exact", CASES, ids=[c[0] for c in CASES])
def test_round_trip_matches_direct_evaluation(path, rng, name, fn, make, exact):
    mx.export_function(path, fn, *make(rng))
    imported = mx.import_function(path)
    for _ in range(2):
        x = make(rng)  # fresh inputs, not the example ones
        # Fused fast kernels are exported as their composed fallback: close, not equal.
        tol = 2e-4 if name in ("fast", "attention") else 1e-5
        assert_same(imported(*x), as_list(fn(*x)), exact, tol)


def test_linalg_round_trip(path, rng):
    def fn(a, b):
        q, r = mx.linalg.qr(b, stream=mx.cpu)
        return [
            mx.linalg.inv(a, stream=mx.cpu),
            mx.linalg.cholesky(a, stream=mx.cpu),
            q @ r,
            mx.linalg.eigvalsh(a, stream=mx.cpu),
            mx.linalg.solve(a, b, stream=mx.cpu),
        ]

    def make():
        m = rand(rng, 4, 4)
        return [m @ m.T + 4 * mx.eye(4), rand(rng, 4, 4)]

    mx.export_function(path, fn, *make())
    imported = mx.import_function(path)
    x = make()
    ref = np.linalg.inv(np.array(x[0], dtype=np.float64))
    np.testing.assert_allclose(np.array(imported(*x)[0]), ref, rtol=1e-4, atol=1e-5)
    assert_same(imported(*x), fn(*x))


def test_mlx_argument_forms(path, rng):
    fn = lambda x: mx.abs(mx.sin(x))  # noqa: E731
    x = rand(rng, 5)
    for example in ([x], (x,)):
        mx.export_function(path, fn, example)
        f = mx.import_function(path)
        for call in (f(x), f([x]), f((x,))):
            assert isinstance(call, tuple)
            assert_same(call, [fn(x)])
    for bad in (("hi",), (x, "hi"), ([[x]],), (x, [x])):
        with pytest.raises(ValueError, match=r"\[export_function\]"):
            mx.export_function(path, fn, *bad)
    for out in (
        lambda: (mx.zeros(3), 1),
        lambda: (mx.zeros(3), [mx.zeros(3)]),
        lambda: None,
    ):
        with pytest.raises(ValueError, match=r"\[export_function\]"):
            mx.export_function(path, out)
    mx.export_function(path, lambda a, b: a + b, mx.array(1.0), mx.array(1.0))
    f = mx.import_function(path)
    for bad in (
        (mx.array(1.0), 1.0),
        (mx.array(1.0),) * 3,
        (mx.array(1.0), [mx.array(1.0)]),
    ):
        with pytest.raises(ValueError):
            f(*bad)


def test_keyword_inputs(path, rng):
    def fn(x, y, z=None):
        return x - y if z is None else (x - y) * z

    x, y, z = rand(rng, 3), rand(rng, 3), rand(rng, 3)
    mx.export_function(path, fn, x=x, y=y, z=z)
    f = mx.import_function(path)
    a, b, c = rand(rng, 3), rand(rng, 3), rand(rng, 3)
    assert_same(f(z=c, y=b, x=a), [fn(a, b, c)])
    assert_same(f({"x": a, "y": b, "z": c}), [fn(a, b, c)])
    with pytest.raises(ValueError, match="keyword"):
        f(a, b, c)
    with pytest.raises(ValueError):
        f(x=a, y=b, w=c)
    with pytest.raises(ValueError):
        f(x=a, y=b, z=c.astype(mx.float16))


def test_exporter_traces_and_shared_constant(path, rng):
    big = rand(rng, 32, 512)
    mx.eval(big)

    def fn(*args, scale=None):
        out = big + sum(args) if args else big
        return out * scale if scale is not None else out

    with mx.exporter(path, fn) as e:
        for n in range(4):
            e(*[rand(rng, 512) for _ in range(n)])
        e(rand(rng, 512), scale=rand(rng))
    with pytest.raises(RuntimeError):
        e(rand(rng, 512))
    assert os.path.getsize(path) < big.nbytes + 8192  # one copy of the constant
    f = mx.import_function(path)
    for n in range(4):
        xs = [rand(rng, 512) for _ in range(n)]
        assert_same(f(*xs), [fn(*xs)])
    x, s = rand(rng, 512), rand(rng)
    assert_same(f(x, scale=s), [fn(x, scale=s)])
    with pytest.raises(ValueError, match="No function"):
        f(rand(rng, 3))


def test_shapeless(path, rng):
    w = rand(rng, 16, 5)

    def fn(x):
        y = x @ w
        return [mx.exp(y).sum(-1), y.reshape(-1), x + 1, mx.softmax(y, -1)]

    mx.export_function(path, fn, rand(rng, 2, 3, 16), shapeless=True)
    f = mx.import_function(path)
    for shape in [(2, 3, 16), (1, 40, 16), (7, 1, 16)]:
        x = rand(rng, *shape)
        assert_same(f(x), fn(x))
    with pytest.raises(ValueError):
        f(rand(rng, 3, 16))

    with mx.exporter(path, lambda *a: sum(a), shapeless=True) as e:
        e(mx.array([1]))
        e(mx.array([1]), mx.array([2]))
    f = mx.import_function(path)
    assert f(mx.array([1, 2]), mx.array([3, 4]))[0].tolist() == [4, 6]
    with pytest.raises(ValueError):
        f(mx.array(10), mx.array([5, 10, 20]))


def test_conv_shapeless(path, rng):
    conv = nn.Conv2d(3, 6, kernel_size=3, stride=2, padding=1, bias=False)
    mx.eval(conv.parameters())
    mx.export_function(path, conv, rand(rng, 2, 16, 16, 3), shapeless=True)
    f = mx.import_function(path)
    for shape in [(1, 15, 9, 3), (3, 32, 20, 3)]:
        x = rand(rng, *shape)
        assert_same(f(x), [conv(x)])


def test_constants_and_metadata(path, rng):
    w = mx.array(rng.standard_normal((3, 3)), dtype=mx.float64)  # a float64 constant
    k = mx.array(rng.integers(0, 100, 3))
    meta = json.dumps({"name": "m", "params": 7_000_000_000})
    mx.export_function(
        path, lambda x: x @ w + k, mx.zeros((2, 3), dtype=mx.float64), metadata=meta
    )
    f, m = mx.import_function(path, return_metadata=True)
    assert m == meta
    x = mx.array(rng.standard_normal((2, 3)), dtype=mx.float64)
    np.testing.assert_allclose(
        np.array(f(x)[0]), np.array(x) @ np.array(w) + np.array(k), rtol=1e-12
    )
    mx.export_function(path, lambda x: x, x)
    assert mx.import_function(path, return_metadata=True)[1] == ""
    with pytest.raises(TypeError):
        mx.export_function(path, lambda x: x, x, metadata={"a": 1})
    with pytest.raises(ValueError):
        mx.export_function(lambda d: None, lambda x: x, x, metadata=meta)


def test_random_with_global_key_reproduces(path):
    mx.random.seed(11)
    mx.export_function(path, lambda: mx.random.normal((4,)))
    f = mx.import_function(path)
    mx.random.seed(11)
    assert mx.array_equal(f()[0], mx.random.normal((4,))).item()


def test_imported_function_transforms(path, rng):
    def fn(x, y):
        return (mx.sin(x) * y).sum()

    mx.export_function(path, fn, rand(rng, 4), rand(rng, 4))
    f = mx.import_function(path)
    g = lambda x, y: f(x, y)[0]  # noqa: E731
    x, y = rand(rng, 4), rand(rng, 4)
    for a, b in zip(
        mx.grad(g, argnums=(0, 1))(x, y), mx.grad(fn, argnums=(0, 1))(x, y)
    ):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6)
    xs = rand(rng, 3, 4)
    np.testing.assert_allclose(
        np.array(mx.vmap(g, in_axes=(0, None))(xs, y)),
        np.array(mx.vmap(fn, in_axes=(0, None))(xs, y)),
        rtol=1e-5,
    )
    np.testing.assert_allclose(
        np.array(mx.compile(g)(x, y)), np.array(fn(x, y)), rtol=1e-5
    )


def test_custom_function_exports_its_forward(path, rng):
    @mx.custom_function
    def f(x):
        return mx.exp(x) * 2

    @f.vjp
    def f_vjp(primals, cotangent, output):
        return (cotangent * 0,)

    mx.export_function(path, f, rand(rng, 3))
    g = mx.import_function(path)
    x = rand(rng, 3)
    assert_same(g(x), [f(x)])


def test_callback(rng):
    seen = {"primitives": [], "args": []}

    def callback(d):
        if d["type"] == "primitive":
            seen["primitives"].append(d["name"])
            seen["args"].append(d["arguments"])
        else:
            seen[d["type"]] = d

    mx.export_function(
        callback,
        lambda x, y: mx.log(mx.abs(x - y)).astype(mx.int32),
        mx.array(1.0),
        y=mx.array(1.0),
    )
    assert seen["primitives"] == ["Subtract", "Abs", "Log", "AsType"]
    assert seen["args"] == [[], [], [2], [mx.int32]]
    assert len(seen["inputs"]["inputs"]) == 2
    assert seen["keyword_inputs"]["keywords"][0][0] == "y"
    assert len(seen["constants"]["constants"]) == 0
    assert len(seen["outputs"]["outputs"]) == 1


def test_custom_kernel_round_trip(path, rng):
    kernel = mx.fast.metal_kernel(
        name="export_scale",
        input_names=["a"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x;\nout[i] = a[i] * T(K);",
    )

    def call(a):
        return kernel(
            inputs=[a],
            template=[("T", mx.float32), ("K", 3)],
            grid=(a.size, 1, 1),
            threadgroup=(32, 1, 1),
            output_shapes=[a.shape],
            output_dtypes=[a.dtype],
        )[0]

    mx.export_function(path, call, rand(rng, 50))
    f = mx.import_function(path)
    x = rand(rng, 50)
    assert_same(f(x), [x * 3])


@pytest.mark.skipif(mx.is_available(mx.gpu), reason="needs a machine without a GPU")
@pytest.mark.parametrize("math_mode", ["safe", "relaxed", "fast"])
def test_gpu_kernel_exports_without_a_gpu(path, rng, math_mode):
    # As MLX: the kernel is recorded for the importing process's GPU, not run here.
    kernel = mx.fast.metal_kernel(
        name="export_gpu_only",
        input_names=["a"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x;\nout[i] = metal::exp(a[i]);",
        compile_options={"math_mode": math_mode},
    )

    def call(a):
        out = kernel(
            inputs=[a],
            grid=(a.size, 1, 1),
            threadgroup=(min(a.size, 256), 1, 1),
            output_shapes=[a.shape],
            output_dtypes=[a.dtype],
            stream=mx.gpu,
        )[0]
        return out + 1

    x = rand(rng, 3, 5)
    with pytest.raises(ValueError, match="GPU is not available"):
        call(x)
    for shapeless in (False, True):
        mx.export_function(path, call, x, shapeless=shapeless)
        with pytest.raises(RuntimeError, match="on the GPU"):
            mx.import_function(path)(x)

    # Two distinct uncompiled GPU programs in one eval make the scheduler try to
    # compile them ahead; the placeholder stream must still give the [eval] error.
    other = mx.fast.metal_kernel(
        name="export_gpu_only_log",
        input_names=["a"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x;\nout[i] = metal::log(a[i]);",
    )

    def evaluates(a):
        ones = mx.ones((4,))
        y = call(ones)
        z = other(
            inputs=[ones],
            grid=(4, 1, 1),
            threadgroup=(4, 1, 1),
            output_shapes=[(4,)],
            output_dtypes=[ones.dtype],
            stream=mx.gpu,
        )[0]
        mx.eval(y, z)
        return a + y + z

    with pytest.raises(ValueError, match=r"\[eval\]"):
        mx.export_function(path, evaluates, rand(rng, 4))
    # On a CPU stream the same kernel runs here (kiln compiles Metal bodies for the CPU).
    cpu = kernel(
        inputs=[x],
        grid=(x.size, 1, 1),
        threadgroup=(32, 1, 1),
        output_shapes=[x.shape],
        output_dtypes=[x.dtype],
        stream=mx.cpu,
    )[0]
    np.testing.assert_allclose(
        np.array(cpu), np.exp(np.array(x, dtype=np.float64)), rtol=1e-5
    )


def test_quantized_model(path):
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 64))
    nn.quantize(model, group_size=32)
    mx.eval(model.parameters())
    x = mx.random.normal((8, 64))
    mx.export_function(path, model, x)
    assert mx.allclose(mx.import_function(path)(x)[0], model(x)).item()


def test_damaged_files(path, rng):
    mx.export_function(path, lambda x: mx.exp(x + x), rand(rng, 8))
    good = open(path, "rb").read()
    with pytest.raises(RuntimeError, match=r"\[import_function\]"):
        mx.import_function(path + ".missing")
    for n in range(0, len(good), 5):
        open(path, "wb").write(good[:n])
        with pytest.raises(RuntimeError, match=r"\[import_function\]"):
            mx.import_function(path)
    for i in range(12, len(good), 3):
        bad = bytearray(good)
        bad[i] ^= 0xA5
        open(path, "wb").write(bytes(bad))
        with pytest.raises((RuntimeError, ValueError)):
            mx.import_function(path)
    bad = bytearray(good)
    bad[8] = 9
    open(path, "wb").write(bytes(bad))
    with pytest.raises(RuntimeError, match="format version 9"):
        mx.import_function(path)
    open(path, "wb").write(b"garbage")
    with pytest.raises(RuntimeError, match="not a function exported by kiln"):
        mx.import_function(path)
    # The process stays usable.
    open(path, "wb").write(good)
    x = rand(rng, 8)
    assert_same(mx.import_function(path)(x), [mx.exp(x + x)])


def test_exporter_cycle_is_collected(path):
    def outer():
        d = {}

        def f(x):
            return d["x"]

        d["f"] = mx.exporter(path, f)
        d["x"] = mx.ones((1000,))
        mx.eval(d["x"])

    outer()  # first-use caches
    gc.collect()
    mx.synchronize()
    before = mx.get_active_memory()
    for _ in range(5):
        outer()
        gc.collect()
    mx.synchronize()
    assert mx.get_active_memory() == before


def test_import_leaves_no_memory(path, rng):
    x = rand(rng, 256)
    mx.export_function(path, lambda a: mx.exp(a) + mx.ones(256), x)
    mx.eval(x)
    mx.synchronize()
    for _ in range(3):  # warm caches
        mx.eval(mx.import_function(path)(x))
    gc.collect()
    mx.synchronize()
    before = mx.get_active_memory()
    for _ in range(20):
        f = mx.import_function(path)
        mx.eval(f(x))
        del f
    gc.collect()
    mx.synchronize()
    assert mx.get_active_memory() == before


def test_compiled_function_inside_is_exported(path, rng):
    cf = mx.compile(lambda a: mx.exp(a) * 2 + 1)
    c = rand(rng, 6)
    mx.eval(c)

    def fn(x):
        return x + cf(c) + cf(x)

    mx.export_function(path, fn, rand(rng, 6))
    f = mx.import_function(path)
    x = rand(rng, 6)
    assert_same(f(x), [fn(x)])


def test_compiled_group_and_global_norm_are_exported(path, rng):
    # Two independent updates of one code become a CompiledGroup; global_norm is a fused node.
    cf = mx.compile(lambda a, b: [mx.exp(a) * 2 + 1, mx.exp(b) * 2 + 1])

    def fn(x, y):
        u, v = cf(x, y)
        return u, v, mx.fast.global_norm([u, v])

    mx.export_function(path, fn, rand(rng, 6), rand(rng, 2, 3))
    f = mx.import_function(path)
    x, y = rand(rng, 6), rand(rng, 2, 3)
    assert_same(f(x, y), list(fn(x, y)))


def test_exported_gradient_function(path, rng):
    w = rand(rng, 8)

    def loss(x, y):
        h = mx.fast.rms_norm(x @ y, w, 1e-5)
        return (mx.tanh(h) ** 2).mean()

    g = mx.grad(loss, argnums=(0, 1))
    mx.export_function(path, g, rand(rng, 4, 6), rand(rng, 6, 8))
    f = mx.import_function(path)
    x, y = rand(rng, 4, 6), rand(rng, 6, 8)
    assert_same(f(x, y), list(g(x, y)), tol=2e-4)


def test_fused_norms_keep_their_kernel(path, rng):
    import io

    w = rand(rng, 8)
    fn = lambda x: [
        mx.fast.rms_norm(x, w, 1e-5),
        mx.fast.layer_norm(x, w, None, 1e-6),
    ]  # noqa: E731
    mx.export_function(path, fn, rand(rng, 2, 8), shapeless=True)
    f = mx.import_function(path)
    x = rand(rng, 5, 8)
    out = f(x)
    s = io.StringIO()
    mx.export_to_dot(s, *out)
    assert "RMSNorm" in s.getvalue() and "LayerNorm" in s.getvalue()
    assert_same(out, fn(x))
    g = mx.grad(lambda x: f(x)[0].sum())(x)
    np.testing.assert_allclose(
        np.array(g),
        np.array(mx.grad(lambda x: fn(x)[0].sum())(x)),
        rtol=1e-5,
        atol=1e-6,
    )


def test_fused_gradients_keep_their_kernels(path, rng):
    import io

    def loss(x, w, t):
        h = mx.fast.rope(x, 8, traditional=False, base=10000.0, scale=1.0, offset=2)
        h = mx.fast.layer_norm(mx.fast.rms_norm(h, w, 1e-5), w, None, 1e-5)
        return mx.fast.cross_entropy(h, t).mean()

    step = mx.value_and_grad(loss, argnums=(0, 1))
    t = mx.array(rng.integers(0, 8, (2, 2, 4)).astype(np.int32))

    def flat(x, w):
        value, grads = step(x, w, t)
        return [value, *grads]

    mx.export_function(path, flat, rand(rng, 2, 2, 4, 8), rand(rng, 8))
    f = mx.import_function(path)
    x, w = rand(rng, 2, 2, 4, 8), rand(rng, 8)
    out = f(x, w)
    s = io.StringIO()
    mx.export_to_dot(s, *out)
    for name in ("RoPE", "RMSNormVJP", "LayerNormVJP", "CrossEntropyVJP"):
        assert name in s.getvalue(), name
    assert s.getvalue().count("RoPE") >= 2  # the rotation and its transpose
    assert_same(out, flat(x, w), tol=1e-5)


def test_attention_keeps_its_kernel(path, rng):
    import io

    def fn(q, k, v, m):
        return [
            mx.fast.scaled_dot_product_attention(q, k, v, scale=0.3, mask="causal"),
            mx.fast.scaled_dot_product_attention(q, k, v, scale=0.3, mask=m),
        ]

    def make(L):
        return [
            rand(rng, 1, 2, L, 8),
            rand(rng, 1, 2, L, 8),
            rand(rng, 1, 2, L, 8),
            rand(rng, 1, 2, L, L),
        ]

    mx.export_function(path, fn, *make(4))
    f = mx.import_function(path)
    x = make(4)
    out = f(*x)
    s = io.StringIO()
    mx.export_to_dot(s, *out)
    assert s.getvalue().count("ScaledDotProductAttention") >= 2
    assert_same(out, fn(*x))
