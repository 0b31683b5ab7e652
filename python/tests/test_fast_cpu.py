"""Custom kernels on a CPU stream (kiln.core.fast): the seed examples in both call forms,
barriers and threadgroup memory, simdgroup functions on partial simdgroups, atomics, printf,
checking mode (KILN_KERNEL_CHECK=1), compile errors and custom_function gradients; NumPy
references."""

import numpy as np
import pytest

import kiln.core as mx

pytestmark = pytest.mark.skipif(
    not hasattr(mx.fast, "metal_kernel"), reason="kiln.core.fast has no custom kernels in this build"
)

SEED_SOURCE = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""


def test_seed_example_on_the_cpu(rng):
    kernel = mx.fast.metal_kernel(
        name="py_cpu_myexp", input_names=["inp"], output_names=["out"], source=SEED_SOURCE
    )
    an = rng.standard_normal((4, 16)).astype(np.float16)
    a = mx.array(an)
    out = kernel(
        inputs=[a],
        template=[("T", mx.float32)],
        grid=(a.size, 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes=[a.shape],
        output_dtypes=[a.dtype],
        stream=mx.cpu,
    )[0]
    assert out.dtype == mx.float16
    np.testing.assert_allclose(np.array(out).astype(np.float32), np.exp(an.astype(np.float32)),
                               rtol=5e-3)


def test_seed_example_dict_form_on_the_cpu(rng):
    kernel = mx.fast.metal_kernel(name="py_cpu_myexp_dict", source=SEED_SOURCE)
    an = rng.standard_normal((4, 16)).astype(np.float32)
    outs = kernel(
        inputs={"inp": mx.array(an)},
        template={"T": mx.float32},
        grid=(an.size, 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes={"out": an.shape},
        output_dtypes={"out": mx.float32},
        stream=mx.cpu,
    )
    np.testing.assert_allclose(np.array(outs["out"]), np.exp(an), rtol=1e-5)


def test_row_sums_with_threadgroup_memory_and_barriers(rng):
    kernel = mx.fast.metal_kernel(
        name="py_cpu_row_sum",
        input_names=["x"],
        output_names=["out"],
        source="""
        uint row = threadgroup_position_in_grid.x, t = thread_position_in_threadgroup.x;
        threadgroup int part[256];
        int acc = 0;
        for (uint j = t; j < uint(x_shape[1]); j += 256) acc += x[row * x_shape[1] + j];
        part[t] = acc;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint s = 128; s > 0; s /= 2) {
          if (t < s) part[t] += part[t + s];
          threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (t == 0) out[row] = part[0];
        """,
    )
    xn = rng.integers(-1000, 1000, size=(33, 1000)).astype(np.int32)
    out = kernel(inputs=[mx.array(xn)], grid=(33 * 256, 1, 1), threadgroup=(256, 1, 1),
                 output_shapes=[(33,)], output_dtypes=[mx.int32], stream=mx.cpu)[0]
    np.testing.assert_array_equal(np.array(out), xn.sum(axis=1))


def test_simd_sum_on_partial_simdgroups_and_early_returns(rng):
    kernel = mx.fast.metal_kernel(
        name="py_cpu_simd_sum",
        input_names=["x"],
        output_names=["out"],
        source="""
        uint i = thread_position_in_grid.x;
        if (x[i] < 0) return;
        out[i] = simd_sum(x[i]);
        """,
    )
    n, tg = 100, 50  # simdgroups of 32 and 18 lanes
    xn = rng.integers(-5, 20, size=n).astype(np.int32)
    out = np.array(kernel(inputs=[mx.array(xn)], grid=(n, 1, 1), threadgroup=(tg, 1, 1),
                          output_shapes=[(n,)], output_dtypes=[mx.int32], init_value=-1,
                          stream=mx.cpu)[0])
    for g in range(n // tg):
        for start, stop in ((0, 32), (32, tg)):
            lanes = xn[g * tg + start : g * tg + stop]
            expect = np.where(lanes < 0, -1, lanes[lanes >= 0].sum())
            np.testing.assert_array_equal(out[g * tg + start : g * tg + stop], expect)


def test_atomic_histogram(rng):
    kernel = mx.fast.metal_kernel(
        name="py_cpu_hist",
        input_names=["x"],
        output_names=["hist"],
        source="""
        uint i = thread_position_in_grid.x;
        atomic_fetch_add_explicit(&hist[x[i]], 1, memory_order_relaxed);
        """,
        atomic_outputs=True,
    )
    xn = rng.integers(0, 16, size=10000).astype(np.int32)
    out = kernel(inputs=[mx.array(xn)], grid=(xn.size, 1, 1), threadgroup=(128, 1, 1),
                 output_shapes=[(16,)], output_dtypes=[mx.int32], init_value=0, stream=mx.cpu)[0]
    np.testing.assert_array_equal(np.array(out), np.bincount(xn, minlength=16))


def test_printf_from_a_cuda_kernel(capfd):
    kernel = mx.fast.cuda_kernel(
        name="py_cpu_printf",
        input_names=["x"],
        output_names=["out"],
        source='printf("py thread %d\\n", (int)threadIdx.x); out[threadIdx.x] = x[threadIdx.x];',
    )
    out = kernel(inputs=[mx.array([1, 2], dtype=mx.int32)], grid=(2, 1, 1), threadgroup=(2, 1, 1),
                 output_shapes=[(2,)], output_dtypes=[mx.int32], stream=mx.cpu)[0]
    mx.eval(out)
    captured = capfd.readouterr().out
    assert "py thread 0\n" in captured and "py thread 1\n" in captured


def test_checking_mode_reports_out_of_bounds(monkeypatch):
    monkeypatch.setenv("KILN_KERNEL_CHECK", "1")
    kernel = mx.fast.metal_kernel(
        name="py_cpu_oob",
        input_names=["x"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x; out[i + 2] = x[i];",
    )
    out = kernel(inputs=[mx.zeros((8,))], grid=(8, 1, 1), threadgroup=(8, 1, 1),
                 output_shapes=[(8,)], output_dtypes=[mx.float32], stream=mx.cpu)[0]
    with pytest.raises(RuntimeError, match=r"py_cpu_oob.*thread \(6, 0, 0\).*'out' at index 8"):
        mx.eval(out)


def test_compile_error_points_at_the_source_line():
    kernel = mx.fast.metal_kernel(
        name="py_cpu_bad",
        input_names=["x"],
        output_names=["out"],
        source="uint i = thread_position_in_grid.x;\nout[i] = x[i] + not_declared;\n",
    )
    out = kernel(inputs=[mx.zeros((4,))], grid=(4, 1, 1), threadgroup=(4, 1, 1),
                 output_shapes=[(4,)], output_dtypes=[mx.float32], stream=mx.cpu)[0]
    with pytest.raises(RuntimeError, match=r"source:2") as info:
        mx.eval(out)
    assert type(info.value).__name__ == "KernelCompileError"
    assert mx.allclose(mx.exp(mx.zeros((4,)), stream=mx.cpu), mx.ones((4,))).item()


def test_custom_function_gradient_with_cpu_kernels(rng):
    exp_kernel = mx.fast.metal_kernel(
        name="py_cpu_exp_fwd", input_names=["x"], output_names=["y"],
        source="uint i = thread_position_in_grid.x; y[i] = metal::exp(x[i]);",
    )
    vjp_kernel = mx.fast.metal_kernel(
        name="py_cpu_exp_vjp", input_names=["y", "ct"], output_names=["dx"],
        source="uint i = thread_position_in_grid.x; dx[i] = y[i] * ct[i];",
    )

    def launch(k, inputs):
        n = inputs[0].size
        return k(inputs=inputs, grid=(n, 1, 1), threadgroup=(64, 1, 1),
                 output_shapes=[inputs[0].shape], output_dtypes=[mx.float32], stream=mx.cpu)[0]

    @mx.custom_function
    def kexp(x):
        return launch(exp_kernel, [x])

    @kexp.vjp
    def kexp_vjp(primals, cotangent, output):
        return launch(vjp_kernel, [output, cotangent])

    xn = rng.standard_normal(100).astype(np.float32)
    g = mx.grad(lambda x: kexp(x).sum())(mx.array(xn))
    np.testing.assert_allclose(np.array(g), np.exp(xn), rtol=1e-5)


def test_many_kernels_with_thread_locals_and_atomics():
    # Each CPU kernel is its own shared object whose thread-locals (the current GPU thread,
    # __shared__ arrays) glibc places in static TLS until its small reserve runs out, then
    # allocates dynamically. Dozens of kernels with atomics (which read the current thread)
    # must keep working past that point: with TLS descriptors, glibc's dynamic path once
    # clobbered a register the kernels relied on and they crashed.
    n = 1024
    idx = mx.array(np.arange(n) % 16, dtype=mx.int32)
    for k in range(40):
        kernel = mx.fast.metal_kernel(
            name=f"py_cpu_tls_{k}",
            input_names=["idx"],
            output_names=["hist"],
            source=f"""
                threadgroup float scratch[{256 + 64 * k}];
                uint i = thread_position_in_grid.x;
                scratch[thread_position_in_threadgroup.x] = {k + 1}.0f;
                atomic_fetch_add_explicit(&hist[idx[i]], {k + 1}, memory_order_relaxed);
            """,
            atomic_outputs=True,
        )
        (hist,) = kernel(
            inputs=[idx], output_shapes=[(16,)], output_dtypes=[mx.int32], grid=(n, 1, 1),
            threadgroup=(256, 1, 1), init_value=0, stream=mx.cpu,
        )
        assert hist.tolist() == [(k + 1) * n // 16] * 16, k
