"""A gather kernel whose vjp is a scatter-add: several outputs may read the same table
entry, so the backward kernel adds their cotangents with atomics into outputs that start
at zero (atomic_outputs=True, init_value=0).
Run: PYTHONPATH=python python examples/python/custom_kernels/scatter_gradient.py"""

import numpy as np

import kiln.core as mx

gather = mx.fast.metal_kernel(
    name="gather",
    input_names=["table", "idx"],
    output_names=["out"],
    source="""
        uint i = thread_position_in_grid.x;
        out[i] = table[idx[i]];
    """,
)
scatter_add = mx.fast.metal_kernel(
    name="scatter_add",
    input_names=["cotangent", "idx"],
    output_names=["dtable"],
    source="""
        uint i = thread_position_in_grid.x;
        atomic_fetch_add_explicit(&dtable[idx[i]], cotangent[i], memory_order_relaxed);
    """,
    atomic_outputs=True,
)


@mx.custom_function
def lookup(table, idx):
    return gather(
        inputs=[table, idx],
        output_shapes=[idx.shape],
        output_dtypes=[table.dtype],
        grid=(idx.size, 1, 1),
        threadgroup=(256, 1, 1),
    )[0]


@lookup.vjp
def lookup_vjp(primals, cotangent, output):
    table, idx = primals
    dtable = scatter_add(
        inputs=[cotangent, idx],
        output_shapes=[table.shape],
        output_dtypes=[table.dtype],
        grid=(idx.size, 1, 1),
        threadgroup=(256, 1, 1),
        init_value=0,
    )[0]
    return dtable, None  # the indices have no gradient


table = mx.random.normal(shape=(32,))
idx_np = np.random.default_rng(0).integers(0, 32, 4096).astype(np.int32)
idx = mx.array(idx_np)
cot = mx.random.normal(shape=(4096,))
(out,), (dtable, _) = mx.vjp(lookup, [table, idx], [cot])
expected = np.bincount(idx_np, weights=np.array(cot), minlength=32)
assert np.allclose(np.array(dtable), expected, rtol=1e-4, atol=1e-4)
assert mx.array_equal(out, mx.take(table, idx))
print("gather with a scatter-add vjp: ok")
