"""RMSNorm with one simdgroup per row (the kernel guide's pattern): each lane accumulates a
strided part of the row in float32, simd_sum combines the lanes, and every lane writes its
part. Rows are float16; the weight is float32.
Run: PYTHONPATH=python python examples/python/custom_kernels/simd_rmsnorm.py"""

import kiln.core as mx

rmsnorm = mx.fast.metal_kernel(
    name="rmsnorm",
    input_names=["x", "w", "eps"],
    output_names=["out"],
    source="""
        uint row = threadgroup_position_in_grid.x;
        uint lane = thread_index_in_simdgroup;
        const uint D = x_shape[1];
        float acc = 0.0f;
        for (uint i = lane; i < D; i += 32) {
            float v = float(x[row * D + i]);
            acc += v * v;
        }
        acc = simd_sum(acc);
        float scale = metal::rsqrt(acc / float(D) + eps);
        for (uint i = lane; i < D; i += 32)
            out[row * D + i] = T(float(x[row * D + i]) * scale * w[i]);
    """,
)

rows, dim = 64, 1000
x = mx.random.normal(shape=(rows, dim)).astype(mx.float16)
w = mx.random.uniform(shape=(dim,))
out = rmsnorm(
    inputs=[x, w, 1e-5],
    template=[("T", mx.float16)],
    grid=(rows * 32, 1, 1),
    threadgroup=(32, 1, 1),
    output_shapes=[x.shape],
    output_dtypes=[mx.float16],
)[0]
xf = x.astype(mx.float32)
ref = xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + 1e-5) * w
assert mx.allclose(out.astype(mx.float32), ref, rtol=1e-2, atol=1e-2)
print("simdgroup RMSNorm: ok")
