"""kiln.core.fast as MLX users call it: the custom-kernel tests of MLX's test_fast (written
anew) in both flavours, MLX's CUDA bodies with cooperative groups, compile_options (math
modes), precompiled_cuda_kernel (a PTX text; Triton's output on a GPU when Triton is
installed), printf and os_log captured, and the GPU's checking mode. Kernels run on the
default device (KILN_DEVICE=gpu runs them on the GPU); GPU-only tests skip without one."""

import numpy as np
import pytest

import kiln.core as mx

HAS_GPU = mx.is_available(mx.gpu)

METAL = {
    "basic": """
        uint elem = thread_position_in_grid.x;
        out1[elem] = a[elem];
    """,
    "args": """
        uint elem = thread_position_in_grid.x;
        T tmp = a[0];
        if (e) {
            out1[elem] = a[1] + b[2] + c[3] + d + f;
        } else {
            out1[elem] = 1;
        }
        out2[elem] = a[1] + b[2] + c[1] - d;
    """,
    "strides": """
        uint elem = thread_position_in_grid.x;
        uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        T tmp = inp[loc];
        out[elem] = metal::precise::exp(tmp) * threads_per_simdgroup;
    """,
    "strides_contig": """
        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::precise::exp(tmp) * threads_per_simdgroup;
    """,
    "helper_header": """
        template <typename T>
        T do_exp(T x) {
            return metal::precise::exp(x);
        }
    """,
    "helper": """
        uint elem = thread_position_in_grid.x;
        out1[elem] = do_exp(a[elem]);
    """,
    "attributes": "out[0] = threads_per_threadgroup.x;",
}

CUDA = {
    "basic": """
        auto elem = cooperative_groups::this_grid().thread_rank();
        out1[elem] = a[elem];
    """,
    "args": """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = a[0];
        if (e) {
            out1[elem] = a[1] + b[2] + static_cast<float>(c[3]) + d[0] + f;
        } else {
            out1[elem] = 1;
        }
        out2[elem] = a[1] + b[2] + static_cast<float>(c[1]) - d[0];
    """,
    "strides": """
        auto elem = cooperative_groups::this_grid().thread_rank();
        auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
        T tmp = inp[loc];
        out[elem] = exp(tmp) * WARP_SIZE;
    """,
    "strides_contig": """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = inp[elem];
        out[elem] = exp(tmp) * WARP_SIZE;
    """,
    "helper_header": """
        template <typename T>
        __device__ T do_exp(T x) {
            return exp(x);
        }
    """,
    "helper": """
        auto elem = cooperative_groups::this_grid().thread_rank();
        out1[elem] = do_exp(a[elem]);
    """,
    "attributes": "out[0] = blockDim.x;",
}


def _flavour(name):
    return (mx.fast.metal_kernel, METAL) if name == "metal" else (mx.fast.cuda_kernel, CUDA)


# ---------------------------------------------------------------- MLX's test_fast, both flavours


@pytest.mark.parametrize("flavour", ["metal", "cuda"])
def test_mlx_basic(flavour, rng):
    make, src = _flavour(flavour)
    an = rng.standard_normal((2, 2)).astype(np.float32)
    kernel = make(name=f"basic_{flavour}", input_names=["a"], output_names=["out1"],
                  source=src["basic"])
    out = kernel(inputs=[mx.array(an)], grid=(4, 1, 1), threadgroup=(2, 1, 1),
                 output_shapes=[(2, 2)], output_dtypes=[mx.float32])
    np.testing.assert_array_equal(np.array(out[0]), an)


@pytest.mark.parametrize("flavour", ["metal", "cuda"])
def test_mlx_args(flavour, rng):
    make, src = _flavour(flavour)
    an = rng.standard_normal((3, 6)).astype(np.float32)
    c = mx.array(rng.standard_normal((2, 2)).astype(np.float32)).astype(mx.bfloat16)
    cn = np.array(c.astype(mx.float32))
    kernel = make(name=f"arg_test_{flavour}", input_names=["a", "b", "c", "d"],
                  output_names=["out1", "out2"], source=src["args"])
    out = kernel(
        inputs=[mx.array(an), mx.array([3, 4, 5]), c, 7.3],
        template=[("e", True), ("f", 3), ("T", mx.float16)],
        grid=(6, 1, 1),
        threadgroup=(2, 1, 1),
        output_shapes=[(3, 2), (3, 2)],
        output_dtypes=[mx.float32, mx.int32],
    )
    f32 = np.float32
    o1 = f32(f32(f32(f32(an.flat[1]) + f32(5)) + f32(cn.flat[3])) + f32(7.3)) + f32(3)
    np.testing.assert_allclose(np.array(out[0]), np.full((3, 2), o1), rtol=1e-6)
    o2 = int(f32(f32(f32(an.flat[1]) + f32(5)) + f32(cn.flat[1])) - f32(7.3))
    np.testing.assert_array_equal(np.array(out[1]), np.full((3, 2), o2, dtype=np.int32))


@pytest.mark.parametrize("flavour", ["metal", "cuda"])
@pytest.mark.parametrize("contig", [True, False])
def test_mlx_strides(flavour, contig, rng):
    make, src = _flavour(flavour)
    an = rng.standard_normal((3, 6)).astype(np.float32)
    a = mx.tile(mx.array(an)[::2], [4, 1])  # not contiguous
    kernel = make(name=f"myexp_{flavour}_{contig}", input_names=["inp"], output_names=["out"],
                  source=src["strides_contig" if contig else "strides"],
                  ensure_row_contiguous=contig)
    out = kernel(inputs=[a], template=[("T", mx.float32)], grid=(a.size, 1, 1),
                 threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[a.dtype])
    np.testing.assert_allclose(np.array(out[0]), np.exp(np.tile(an[::2], [4, 1])) * 32, rtol=1e-5)


@pytest.mark.parametrize("flavour", ["metal", "cuda"])
def test_mlx_helper(flavour, rng):
    make, src = _flavour(flavour)
    an = rng.standard_normal((2, 2)).astype(np.float32)
    kernel = make(name=f"helper_{flavour}", input_names=["a"], output_names=["out1"],
                  header=src["helper_header"], source=src["helper"])
    out = kernel(inputs=[mx.array(an)], grid=(4, 1, 1), threadgroup=(2, 1, 1),
                 output_shapes=[(2, 2)], output_dtypes=[mx.float32])
    np.testing.assert_allclose(np.array(out[0]), np.exp(an), rtol=1e-5)


@pytest.mark.parametrize("flavour", ["metal", "cuda"])
def test_mlx_attributes(flavour):
    make, src = _flavour(flavour)
    kernel = make(name=f"test_fun_{flavour}", input_names=["a"], output_names=["out"],
                  source=src["attributes"])
    out = kernel(inputs=[mx.zeros((1, 1))], grid=(2, 1, 1), threadgroup=(2, 1, 1),
                 output_shapes=[(1, 1)], output_dtypes=[mx.uint32])[0]
    assert out.item() == 2


def test_mlx_caching_same_name_new_source():
    def call(a, source):
        kernel = mx.fast.metal_kernel(name="my_kernel", input_names=["inp"],
                                      output_names=["out"], source=source)
        return kernel(inputs=[a], grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1),
                      output_shapes=[a.shape], output_dtypes=[a.dtype])[0]

    a = mx.random.normal(shape=(32,))
    out = call(a, "uint elem = thread_position_in_grid.x;\nout[elem] = 0.0;")
    assert np.array_equal(np.array(out), np.zeros(32))
    out = call(a, "uint elem = thread_position_in_grid.x;\nout[elem] = 1.0;")
    assert np.array_equal(np.array(out), np.ones(32))


# ---------------------------------------------------------------- cooperative groups


def test_cuda_body_with_cooperative_groups(rng):
    """Block reductions through tiles of 32 (tile.shfl_down tree, then shared memory), as
    MLX CUDA kernels write them, with a grid that runs past the data."""
    kernel = mx.fast.cuda_kernel(
        name="cg_block_sum",
        input_names=["x"],
        output_names=["out"],
        source="""
            namespace cg = cooperative_groups;
            auto block = cg::this_thread_block();
            auto warp = cg::tiled_partition<WARP_SIZE>(block);
            auto i = cg::this_grid().thread_rank();
            float v = i < x_shape[0] ? x[i] : 0.0f;
            v = cg::reduce(warp, v, cg::plus<float>());
            __shared__ float partial[32];
            if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = v;
            block.sync();
            if (warp.meta_group_rank() == 0) {
                float w = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0.0f;
                w = cg::reduce(warp, w, cg::plus<float>());
                if (warp.thread_rank() == 0) out[block.group_index().x] = w;
            }
        """,
    )
    xn = rng.integers(-50, 50, size=1000).astype(np.float32)
    out = kernel(inputs=[mx.array(xn)], grid=(1024, 1, 1), threadgroup=(256, 1, 1),
                 output_shapes=[(4,)], output_dtypes=[mx.float32])[0]
    ref = np.pad(xn, (0, 24)).reshape(4, 256).sum(axis=1)
    np.testing.assert_array_equal(np.array(out), ref)


# ---------------------------------------------------------------- compile_options


def test_compile_options_errors():
    kwargs = dict(name="co", input_names=["x"], output_names=["y"], source="y[0] = x[0];")
    with pytest.raises(ValueError, match="Expected `compile_options` to be a dict"):
        mx.fast.metal_kernel(**kwargs, compile_options=[1])
    with pytest.raises(ValueError, match="Unknown compile option `foo`"):
        mx.fast.metal_kernel(**kwargs, compile_options={"foo": "fast"})
    with pytest.raises(ValueError, match="math_mode to be 'safe', 'relaxed', or 'fast'"):
        mx.fast.metal_kernel(**kwargs, compile_options={"math_mode": "bogus"})


@pytest.mark.parametrize("mode", ["safe", "relaxed", "fast"])
def test_math_modes(mode, rng):
    kernel = mx.fast.metal_kernel(
        name=f"modes_{mode}",
        input_names=["x"],
        output_names=["out"],
        source="""
            uint i = thread_position_in_grid.x;
            out[2 * i] = metal::exp(x[i]) / 3.0f;
            out[2 * i + 1] = metal::exp(-INFINITY);
        """,
        compile_options={"math_mode": mode},
    )
    xn = rng.standard_normal(64).astype(np.float32)
    out = np.array(kernel(inputs=[mx.array(xn)], grid=(64, 1, 1), threadgroup=(32, 1, 1),
                          output_shapes=[(128,)], output_dtypes=[mx.float32])[0])
    np.testing.assert_allclose(out[0::2], np.exp(xn) / 3, rtol=1e-4)
    if mode != "fast":  # fast math assumes no infinities
        assert (out[1::2] == 0).all()


# ---------------------------------------------------------------- precompiled kernels

# y[i] = x[i] * s + 1 for i < n: PTX as NVRTC writes it (sm_75, runs on later GPUs).
PTX = b"""
.version 7.0
.target sm_75
.address_size 64

.visible .entry add_scaled(
    .param .u64 add_scaled_param_0,
    .param .u64 add_scaled_param_1,
    .param .u32 add_scaled_param_2,
    .param .f32 add_scaled_param_3
)
{
    .reg .pred %p<2>;
    .reg .f32 %f<4>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [add_scaled_param_0];
    ld.param.u64 %rd2, [add_scaled_param_1];
    ld.param.u32 %r2, [add_scaled_param_2];
    ld.param.f32 %f1, [add_scaled_param_3];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.s32 %p1, %r1, %r2;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    mul.wide.s32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.f32 %f2, [%rd5];
    fma.rn.f32 %f3, %f2, %f1, 0f3F800000;
    cvta.to.global.u64 %rd6, %rd2;
    add.s64 %rd7, %rd6, %rd4;
    st.global.f32 [%rd7], %f3;
DONE:
    ret;
}
"""


def _precompiled(source, name="add_scaled", scalars=(100, 1.5), stream=None, n=100):
    x = mx.arange(n, dtype=mx.float32)
    return mx.fast.precompiled_cuda_kernel(
        name=name, compiled_source=source, inputs=[x], output_shapes=[(n,)],
        output_dtypes=[mx.float32], scalars=list(scalars), grid=(n, 1, 1),
        threadgroup=(64, 1, 1), stream=stream)


def test_precompiled_errors_at_the_call():
    with pytest.raises(ValueError, match="neither PTX"):
        _precompiled(b"not a kernel", stream=mx.cpu)
    with pytest.raises(ValueError, match="no kernel named 'add_one'.*'add_scaled'"):
        _precompiled(PTX, name="add_one", stream=mx.cpu)
    with pytest.raises(ValueError, match="takes 4 parameters.*the call passes 3"):
        _precompiled(PTX, scalars=(100,), stream=mx.cpu)
    with pytest.raises(ValueError, match="Invalid scalar argument type"):
        _precompiled(PTX, scalars=(100, "x"), stream=mx.cpu)
    with pytest.raises(ValueError, match="GPU streams only"):
        _precompiled(PTX, stream=mx.cpu)


@pytest.mark.skipif(not HAS_GPU, reason="no GPU")
def test_precompiled_ptx_runs_on_gpu():
    out = _precompiled(PTX, stream=mx.gpu)[0]
    np.testing.assert_allclose(np.array(out), np.arange(100) * 1.5 + 1, rtol=1e-6)


@pytest.mark.skipif(not HAS_GPU, reason="no GPU")
def test_precompiled_triton_kernel_runs_on_gpu():
    """A kernel compiled by Triton, given to precompiled_cuda_kernel as PTX and as a cubin
    (Triton's trailing scratch-pointer parameters are passed as null)."""
    triton = pytest.importorskip("triton")
    tl = pytest.importorskip("triton.language")

    @triton.jit
    def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, alpha * x + y, mask=mask)

    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                 "alpha": "fp32"}
    try:
        src = triton.compiler.ASTSource(fn=axpy, signature=signature,
                                        constexprs={"BLOCK": 256})
    except TypeError:  # Triton 3.0/3.1: `constants`
        src = triton.compiler.ASTSource(fn=axpy, signature=signature, constants={"BLOCK": 256})
    compiled = triton.compile(src)
    name = compiled.metadata.name
    threads = compiled.metadata.num_warps * 32
    n = 1000
    xn = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    yn = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    blocks = (n + 255) // 256
    for image in (compiled.asm["ptx"], compiled.asm["cubin"]):
        if isinstance(image, str):
            image = image.encode()
        out = mx.fast.precompiled_cuda_kernel(
            name=name, compiled_source=image, inputs=[mx.array(xn), mx.array(yn)],
            output_shapes=[(n,)], output_dtypes=[mx.float32], scalars=[n, 2.0],
            grid=(blocks * threads, 1, 1), threadgroup=(threads, 1, 1),
            shared_memory=compiled.metadata.shared, stream=mx.gpu)[0]
        np.testing.assert_allclose(np.array(out), 2 * xn + yn, rtol=1e-6)


# ---------------------------------------------------------------- printf, os_log, checking


def test_printf_and_os_log_are_captured_in_order(capfd):
    kernel = mx.fast.metal_kernel(
        name="py_os_log",
        input_names=["x"],
        output_names=["out"],
        source="""
            uint i = thread_position_in_grid.x;
            os_log_default.log("thread %u sees %d", i, x[i]);
            printf("printf from %u\\n", i);
            out[i] = x[i];
        """,
    )
    out = kernel(inputs=[mx.array([5, 6], dtype=mx.int32)], grid=(2, 1, 1),
                 threadgroup=(2, 1, 1), output_shapes=[(2,)], output_dtypes=[mx.int32])[0]
    mx.eval(out)
    print("after eval", flush=True)
    text = capfd.readouterr().out
    for line in ["thread 0 sees 5\n", "thread 1 sees 6\n", "printf from 0\n", "printf from 1\n"]:
        assert line in text
        assert text.index(line) < text.index("after eval")


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_checking_mode_reports_out_of_bounds(device, monkeypatch):
    if device == "gpu" and not HAS_GPU:
        pytest.skip("no GPU")
    monkeypatch.setenv("KILN_KERNEL_CHECK", "1")
    kernel = mx.fast.metal_kernel(
        name="py_check_oob",
        input_names=["x"],
        output_names=["out"],
        source="""
            threadgroup float tile[16];
            uint t = thread_position_in_threadgroup.x;
            tile[t] = x[thread_position_in_grid.x];
            threadgroup_barrier(mem_flags::mem_threadgroup);
            out[thread_position_in_grid.x] = tile[t == 7 ? 16 : t];
        """,
    )
    stream = mx.gpu if device == "gpu" else mx.cpu
    out = kernel(inputs=[mx.zeros((16,))], grid=(16, 1, 1), threadgroup=(16, 1, 1),
                 output_shapes=[(16,)], output_dtypes=[mx.float32], stream=stream)[0]
    with pytest.raises(RuntimeError, match=r"py_check_oob.*thread \(7, 0, 0\).*'tile'.*index 16"):
        mx.eval(out)
    # The process and the device stay usable.
    assert mx.sum(mx.ones((8,), stream=stream), stream=stream).item() == 8
