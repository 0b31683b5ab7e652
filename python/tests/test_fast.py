"""kiln.core.fast: custom kernels from source strings (metal_kernel, cuda_kernel).

The seed documents' examples as written (both call forms, the strided variant), scalar
inputs, several inputs and outputs of different dtypes, template arguments, headers,
init_value with atomic outputs, shared memory, gradients through custom_function, errors
(ValueError at the call, KernelCompileError with the user's line numbers), and compile()
for sm_90, which needs no GPU. Kernels run on the default device (KILN_DEVICE=gpu runs
them on the GPU); running tests skip where that device cannot run custom kernels."""

import numpy as np
import pytest

import kiln.core as mx
from conftest import assert_close, random_array

EXP_SOURCE = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""

EXP_STRIDED_SOURCE = """
    uint elem = thread_position_in_grid.x;
    // Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
    uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
    T tmp = inp[loc];
    // Output arrays are always row contiguous
    out[elem] = metal::exp(tmp);
"""


def _cannot_run_reason():
    """Why custom kernels cannot run on the default device here (None when they can)."""
    k = mx.fast.metal_kernel(
        name="probe",
        input_names=["x"],
        output_names=["y"],
        source="uint i = thread_position_in_grid.x; y[i] = x[i] + 1;",
    )
    try:
        y = k(
            inputs=[mx.array([1.0, 2.0])],
            output_shapes=[(2,)],
            output_dtypes=[mx.float32],
            grid=(2, 1, 1),
            threadgroup=(2, 1, 1),
        )[0]
        mx.eval(y)
        return None
    except RuntimeError as e:
        return str(e)


@pytest.fixture(scope="module")
def runs():
    reason = _cannot_run_reason()
    if reason:
        pytest.skip(f"custom kernels cannot run on {mx.default_device()}: {reason}")


def _compile_or_skip(kernel, *args, **kwargs):
    try:
        return kernel.compile(*args, **kwargs)
    except mx.fast.KernelCompileError:
        raise
    except RuntimeError as e:
        if "without CUDA" in str(e):
            pytest.skip("kiln was built without CUDA (NVRTC)")
        raise


# ---------------------------------------------------------------- the seed documents


def test_seed_example_keyword_form(runs, capfd):
    def exp_elementwise(a: mx.array):
        kernel = mx.fast.metal_kernel(
            name="myexp", input_names=["inp"], output_names=["out"], source=EXP_SOURCE
        )
        outputs = kernel(
            inputs=[a],
            template=[("T", mx.float32)],
            grid=(a.size, 1, 1),
            threadgroup=(256, 1, 1),
            output_shapes=[a.shape],
            output_dtypes=[a.dtype],
            verbose=True,
        )
        return outputs[0]

    a = mx.random.normal(shape=(4, 16)).astype(mx.float16)
    b = exp_elementwise(a)
    assert mx.allclose(b, mx.exp(a))
    printed = capfd.readouterr().out
    assert "template <typename T>" in printed
    assert "custom_kernel_myexp(" in printed
    assert "out[elem] = metal::exp(tmp);" in printed


def test_seed_example_dict_form(runs):
    def exp_elementwise(a: mx.array):
        kernel = mx.fast.metal_kernel(name="myexp", source=EXP_SOURCE)
        outputs = kernel(
            inputs={"inp": a},
            template={"T": mx.float32},
            grid=(a.size, 1, 1),
            threadgroup=(256, 1, 1),
            output_shapes={"out": a.shape},
            output_dtypes={"out": a.dtype},
        )
        return outputs["out"]

    a = mx.random.normal(shape=(4, 16)).astype(mx.float16)
    b = exp_elementwise(a)
    assert mx.allclose(b, mx.exp(a))


def test_seed_example_strided(runs):
    def exp_elementwise(a: mx.array):
        kernel = mx.fast.metal_kernel(name="myexp_strided", source=EXP_STRIDED_SOURCE)
        outputs = kernel(
            inputs={"inp": a},
            template={"T": mx.float32},
            grid=(a.size, 1, 1),
            threadgroup=(256, 1, 1),
            output_shapes={"out": a.shape},
            output_dtypes={"out": a.dtype},
            ensure_row_contiguous=False,
        )
        return outputs["out"]

    a = mx.random.normal(shape=(4, 16)).astype(mx.float16)
    # make non-contiguous
    a = a[::2]
    b = exp_elementwise(a)
    assert mx.allclose(b, mx.exp(a))


@pytest.mark.parametrize("ensure_row_contiguous", [True, False])
def test_strided_inputs(runs, rng, ensure_row_contiguous):
    source = (
        "uint i = thread_position_in_grid.x;\n"
        + (
            "out[i] = x[i] * 2;\n"
            if ensure_row_contiguous
            else "out[i] = x[elem_to_loc(i, x_shape, x_strides, x_ndim)] * 2;\n"
        )
    )
    kernel = mx.fast.metal_kernel(
        name="twice",
        input_names=["x"],
        output_names=["out"],
        source=source,
        ensure_row_contiguous=ensure_row_contiguous,
    )
    a, an = random_array(rng, (6, 5), mx.float32)
    for view, ref in [(a.T, an.T), (a[1::2, ::2], an[1::2, ::2]), (a[::-1], an[::-1])]:
        out = kernel(
            inputs=[view],
            output_shapes=[view.shape],
            output_dtypes=[mx.float32],
            grid=(view.size, 1, 1),
            threadgroup=(32, 1, 1),
        )[0]
        assert_close(out, 2 * ref)


# ---------------------------------------------------------------- signatures


def test_scalar_inputs(runs, rng):
    kernel = mx.fast.metal_kernel(
        name="affine",
        input_names=["x", "scale", "shift", "negate"],
        output_names=["out"],
        source="""
            uint i = thread_position_in_grid.x;
            float v = x[i] * scale + shift;
            out[i] = negate ? -v : v;
        """,
    )
    x, xn = random_array(rng, (100,), mx.float32)
    out = kernel(
        inputs=[x, 1.5, -3, True],
        output_shapes=[(100,)],
        output_dtypes=[mx.float32],
        grid=(100, 1, 1),
        threadgroup=(64, 1, 1),
    )[0]
    assert_close(out, -(xn * 1.5 - 3))


def test_several_inputs_and_outputs_of_different_dtypes(runs, rng):
    kernel = mx.fast.cuda_kernel(
        name="mixed",
        input_names=["a", "b", "c"],
        output_names=["s", "p", "f"],
        source="""
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= a_shape[0]) return;
            s[i] = float16_t(float(a[i]) + float(c[i]));
            p[i] = (int64_t)b[i] * 3;
            f[i] = a[i] > 0.0f;
        """,
    )
    n = 333
    a, an = random_array(rng, (n,), mx.float32)
    b, bn = random_array(rng, (n,), mx.int32, int_range=10**6)
    c, cn = random_array(rng, (n,), mx.float16)
    s, p, f = kernel(
        inputs=[a, b, c],
        output_shapes=[(n,), (n,), (n,)],
        output_dtypes=[mx.float16, mx.int64, mx.bool_],
        grid=(n, 1, 1),
        threadgroup=(128, 1, 1),
    )
    assert (s.dtype, p.dtype, f.dtype) == (mx.float16, mx.int64, mx.bool_)
    assert_close(s, (an + cn).astype(np.float16).astype(np.float64), dtype=mx.float16)
    assert_close(p, bn.astype(np.int64) * 3)
    assert_close(f, an > 0)


def test_template_arguments(runs, rng):
    kernel = mx.fast.metal_kernel(
        name="scaled",
        input_names=["x"],
        output_names=["out"],
        source="""
            uint i = thread_position_in_grid.x;
            out[i] = FLAG ? T(float(x[i]) * N) : T(-float(x[i]));
        """,
    )
    x, xn = random_array(rng, (64,), mx.float32)
    for t, n, flag, ref in [
        (mx.float32, 3, True, 3 * xn),
        (mx.float16, -2, False, -xn),
    ]:
        out = kernel(
            inputs=[x],
            template=[("T", t), ("N", n), ("FLAG", flag)],
            output_shapes=[(64,)],
            output_dtypes=[t],
            grid=(64, 1, 1),
            threadgroup=(32, 1, 1),
        )[0]
        assert_close(out, ref, dtype=t)


def test_instances_differing_only_in_int_and_bool_template_arguments(runs, rng):
    # Same source and dtypes: only the instantiation differs (one module each, not one shared).
    kernel = mx.fast.cuda_kernel(
        name="scaled_only_values",
        input_names=["x"],
        output_names=["out"],
        source="""
            uint i = blockIdx.x * blockDim.x + threadIdx.x;
            out[i] = FLAG ? x[i] * N : -x[i];
        """,
    )
    x, xn = random_array(rng, (64,), mx.float32)

    def call(n, flag):
        return kernel(inputs=[x], template=[("N", n), ("FLAG", flag)], output_shapes=[(64,)],
                      output_dtypes=[mx.float32], grid=(64, 1, 1), threadgroup=(32, 1, 1))[0]

    a, b, c = call(3, True), call(128, True), call(3, False)
    mx.eval(a, b, c)  # one eval, three instances
    assert_close(a, 3 * xn, dtype=mx.float32)
    assert_close(b, 128 * xn, dtype=mx.float32)
    assert_close(c, -xn, dtype=mx.float32)
    assert_close(call(7, True), 7 * xn, dtype=mx.float32)  # a later eval, a new instance


def test_header_with_a_templated_helper(runs, rng):
    kernel = mx.fast.metal_kernel(
        name="sqplus",
        input_names=["a", "b"],
        output_names=["out"],
        header="template <typename T>\nMETAL_FUNC T square_plus(T x, T y) { return x * x + y; }\n",
        source="uint i = thread_position_in_grid.x;\nout[i] = square_plus(a[i], b[i]);\n",
    )
    a, an = random_array(rng, (50,), mx.float32)
    b, bn = random_array(rng, (50,), mx.float32)
    out = kernel(
        inputs=[a, b],
        output_shapes=[(50,)],
        output_dtypes=[mx.float32],
        grid=(50, 1, 1),
        threadgroup=(64, 1, 1),
    )[0]
    assert_close(out, an * an + bn)


def test_threadgroup_larger_than_grid(runs):
    kernel = mx.fast.metal_kernel(
        name="small",
        input_names=[],
        output_names=["out"],
        source="out[thread_position_in_grid.x] = threads_per_threadgroup.x;",
    )
    out = kernel(
        inputs=[], output_shapes=[(5,)], output_dtypes=[mx.uint32], grid=(5, 1, 1),
        threadgroup=(256, 1, 1),
    )[0]
    assert out.tolist() == [5] * 5


def test_init_value_and_atomic_outputs(runs, rng):
    kernel = mx.fast.metal_kernel(
        name="histogram",
        input_names=["idx", "vals"],
        output_names=["hist", "counts"],
        source="""
            uint i = thread_position_in_grid.x;
            atomic_fetch_add_explicit(&hist[idx[i]], vals[i], memory_order_relaxed);
            atomic_fetch_add_explicit(&counts[idx[i]], 1, memory_order_relaxed);
        """,
        atomic_outputs=True,
    )
    n, bins = 1000, 16
    idx = rng.integers(0, bins, n).astype(np.int32)
    vals, vn = random_array(rng, (n,), mx.float32)
    hist, counts = kernel(
        inputs=[mx.array(idx), vals],
        output_shapes=[(bins,), (bins,)],
        output_dtypes=[mx.float32, mx.int32],
        grid=(n, 1, 1),
        threadgroup=(128, 1, 1),
        init_value=0,
    )
    assert_close(hist, np.bincount(idx, weights=vn, minlength=bins), rtol=1e-4)
    assert counts.tolist() == np.bincount(idx, minlength=bins).tolist()


def test_shared_memory_above_48kb(runs, rng):
    kernel = mx.fast.cuda_kernel(
        name="reverse64k",
        input_names=["x"],
        output_names=["out"],
        source="""
            extern __shared__ float smem[];
            const int per_block = 16384;
            const float* src = x + blockIdx.x * per_block;
            for (int j = threadIdx.x; j < per_block; j += blockDim.x) smem[j] = src[j];
            __syncthreads();
            for (int j = threadIdx.x; j < per_block; j += blockDim.x)
              out[blockIdx.x * per_block + j] = smem[per_block - 1 - j];
        """,
        shared_memory=65536,
    )
    x, xn = random_array(rng, (2 * 16384,), mx.float32)
    out = kernel(
        inputs=[x],
        output_shapes=[x.shape],
        output_dtypes=[mx.float32],
        grid=(512, 1, 1),
        threadgroup=(256, 1, 1),
    )[0]
    assert_close(out, xn.reshape(2, -1)[:, ::-1].reshape(-1), rtol=0)


# ---------------------------------------------------------------- gradients


def _exp_kernels():
    fwd = mx.fast.metal_kernel(
        name="exp_fwd",
        input_names=["x"],
        output_names=["y"],
        source="uint i = thread_position_in_grid.x; y[i] = metal::exp(x[i]);",
    )
    bwd = mx.fast.metal_kernel(
        name="exp_vjp",
        input_names=["cot", "y"],
        output_names=["dx"],
        source="uint i = thread_position_in_grid.x; dx[i] = cot[i] * y[i];",
    )
    return fwd, bwd


def test_custom_function_with_a_vjp_kernel(runs, rng):
    fwd, bwd = _exp_kernels()

    @mx.custom_function
    def my_exp(x):
        return fwd(
            inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
            threadgroup=(128, 1, 1),
        )[0]

    @my_exp.vjp
    def my_exp_vjp(primals, cotangent, output):
        return bwd(
            inputs=[cotangent, output], output_shapes=[output.shape],
            output_dtypes=[output.dtype], grid=(output.size, 1, 1), threadgroup=(128, 1, 1),
        )[0]

    x, xn = random_array(rng, (200,), mx.float32)
    cot, cn = random_array(rng, (200,), mx.float32)
    (y,), (dx,) = mx.vjp(my_exp, [x], [cot])
    assert_close(y, np.exp(xn))
    assert_close(dx, cn * np.exp(xn))


def test_scatter_style_vjp_with_atomic_outputs(runs, rng):
    gather = mx.fast.metal_kernel(
        name="gather_fwd",
        input_names=["table", "idx"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = table[idx[i]];",
    )
    scatter_add = mx.fast.metal_kernel(
        name="gather_vjp",
        input_names=["cot", "idx"],
        output_names=["dtable"],
        source="""
            uint i = thread_position_in_grid.x;
            atomic_fetch_add_explicit(&dtable[idx[i]], cot[i], memory_order_relaxed);
        """,
        atomic_outputs=True,
    )
    m, n = 20, 300

    @mx.custom_function
    def lookup(table, idx):
        return gather(
            inputs=[table, idx], output_shapes=[idx.shape], output_dtypes=[table.dtype],
            grid=(idx.size, 1, 1), threadgroup=(128, 1, 1),
        )[0]

    @lookup.vjp
    def lookup_vjp(primals, cotangent, output):
        table, idx = primals
        dtable = scatter_add(
            inputs=[cotangent, idx], output_shapes=[table.shape], output_dtypes=[table.dtype],
            grid=(idx.size, 1, 1), threadgroup=(128, 1, 1), init_value=0,
        )[0]
        return dtable, None

    table, tn = random_array(rng, (m,), mx.float32)
    idx = rng.integers(0, m, n).astype(np.int32)
    cot, cn = random_array(rng, (n,), mx.float32)
    (out,), (dtable, _) = mx.vjp(lookup, [table, mx.array(idx)], [cot])
    assert_close(out, tn[idx])
    assert_close(dtable, np.bincount(idx, weights=cn, minlength=m), rtol=1e-5)


# ---------------------------------------------------------------- caches


def test_same_name_new_source_never_runs_stale_code(runs):
    def make(v):
        return mx.fast.metal_kernel(
            name="same",
            input_names=["x"],
            output_names=["out"],
            source=f"uint i = thread_position_in_grid.x; out[i] = x[i] + {v};",
        )

    x = mx.array([1.0, 2.0, 3.0])
    call = dict(output_shapes=[(3,)], output_dtypes=[mx.float32], grid=(3, 1, 1),
                threadgroup=(3, 1, 1))
    a = make(10)(inputs=[x], **call)[0]
    b = make(20)(inputs=[x], **call)[0]
    mx.eval(a, b)  # both in one eval
    assert a.tolist() == [11, 12, 13] and b.tolist() == [21, 22, 23]
    assert make(30)(inputs=[x], **call)[0].tolist() == [31, 32, 33]


# ---------------------------------------------------------------- errors


def test_argument_errors():
    kernel = mx.fast.metal_kernel(
        name="copy", input_names=["x"], output_names=["out"],
        source="out[thread_position_in_grid.x] = x[thread_position_in_grid.x];",
    )
    x = mx.zeros((8,))
    good = dict(inputs=[x], output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
                threadgroup=(8, 1, 1))
    kernel(**good)  # builds the graph; nothing runs
    for change, message in [
        (dict(inputs=[x, x]), "takes 1 inputs"),
        (dict(output_shapes=[(8,), (8,)]), "output shapes"),
        (dict(output_dtypes=[]), "output dtypes"),
        (dict(grid=(0, 1, 1)), "grid"),
        (dict(grid=(8, 1)), "3 entries"),
        (dict(threadgroup=(2048, 1, 1), grid=(4096, 1, 1)), "1024"),
        (dict(template=[("T", 1.5)]), "dtype, int or bool"),
        (dict(template=[("T", "float")]), "dtype, int or bool"),
        (dict(template=[("x", 1)]), "template argument"),
        (dict(output_dtypes=["float32"]), "dtypes"),
    ]:
        with pytest.raises(ValueError, match=message):
            kernel(**{**good, **change})
    # Keywords are parsed by kiln: unknown, missing, mistyped and positional arguments.
    for call, message in [
        (lambda: kernel(**good, outputs=[x]), r"\[metal_kernel\] Unexpected keyword argument 'outputs'"),
        (lambda: kernel(**{k: v for k, v in good.items() if k != "grid"}), "Missing keyword argument 'grid'"),
        (lambda: kernel(**good, init_value="0"), "'init_value' has the wrong type str"),
        (lambda: kernel(**good, stream="gpu"), "'stream' has the wrong type str"),
        (lambda: kernel([x]), "keyword arguments only"),
    ]:
        with pytest.raises(TypeError, match=message):
            call()
    out = kernel(**good, init_value=None, template=None, verbose=False, stream=None)[0]
    assert out.shape == (8,)
    with pytest.raises(ValueError, match="input_names"):
        mx.fast.metal_kernel(name="k", input_names=["x"], source="")
    with pytest.raises(ValueError, match="identifier"):
        mx.fast.metal_kernel(name="bad name", input_names=["x"], output_names=["y"], source="")
    with pytest.raises(ValueError, match="dicts"):
        mx.fast.metal_kernel(name="k", source="")(**good)


def test_transforms_point_to_custom_function():
    kernel = mx.fast.metal_kernel(
        name="copy_t", input_names=["x"], output_names=["out"],
        source="out[thread_position_in_grid.x] = x[thread_position_in_grid.x];",
    )

    def f(x):
        return kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                      grid=(x.size, 1, 1), threadgroup=(8, 1, 1))[0]

    x = mx.zeros((8,))
    with pytest.raises(ValueError, match="custom_function"):
        mx.vjp(f, [x], [x])
    with pytest.raises(ValueError, match="custom_function"):
        mx.vmap(f)(mx.zeros((2, 8)))


def test_compile_only_for_sm90():
    kernel = mx.fast.metal_kernel(
        name="myexp", input_names=["inp"], output_names=["out"], source=EXP_SOURCE
    )
    src = _compile_or_skip(kernel, [mx.float16], [2], [mx.float16], template=[("T", mx.float32)])
    assert "custom_kernel_myexp" in src and "metal::exp(tmp)" in src
    cuda = mx.fast.cuda_kernel(
        name="axpy", input_names=["a", "x", "y"], output_names=["out"],
        source="""
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < x_shape[0]) out[i] = a * x[i] + y[i];
        """,
    )
    src = _compile_or_skip(cuda, [mx.float32, mx.bfloat16, mx.bfloat16], [0, 1, 1], [mx.float32])
    # A 0-d input of a CUDA body is its value, and indexes as MLX's pointer (a[0]).
    assert "kiln_cuda::scalar_input<float> a" in src


def test_compile_errors_point_at_the_users_lines():
    kernel = mx.fast.metal_kernel(
        name="broken", input_names=["x"], output_names=["out"],
        source="uint i = thread_position_in_grid.x;\nout[i] = undefined_function(x[i]);\n",
    )
    with pytest.raises(mx.fast.KernelCompileError) as info:
        _compile_or_skip(kernel, [mx.float32], [1], [mx.float32])
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    for part in ["broken", "source(2)", "undefined_function", "Generated signature"]:
        assert part in message, message


def test_compile_error_at_eval_leaves_other_arrays_usable(runs):
    bad = mx.fast.metal_kernel(name="broken_eval", input_names=["x"], output_names=["out"],
                               source="out[0] = nope;")
    good = mx.fast.metal_kernel(
        name="good_eval", input_names=["x"], output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i] = x[i] * 2;",
    )
    x = mx.array([1.0, 2.0])
    call = dict(inputs=[x], output_shapes=[(2,)], output_dtypes=[mx.float32], grid=(2, 1, 1),
                threadgroup=(2, 1, 1))
    a = good(**call)[0]
    b = bad(**call)[0]
    with pytest.raises(mx.fast.KernelCompileError, match=r"source[(:]1"):
        mx.eval(a, b)
    assert a.tolist() == [2.0, 4.0]
    assert good(**call)[0].tolist() == [2.0, 4.0]
