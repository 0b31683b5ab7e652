"""The seed documents' first custom kernel, exp written as a Metal body, in both call forms
and on a strided input. Run: PYTHONPATH=python python examples/python/custom_kernels/exp_kernel.py"""

import kiln.core as mx

source = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""

# The keyword form: names at definition, lists at the call.
kernel = mx.fast.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=source)
a = mx.random.normal(shape=(4, 16)).astype(mx.float16)
out = kernel(
    inputs=[a],
    template=[("T", mx.float32)],
    grid=(a.size, 1, 1),
    threadgroup=(256, 1, 1),
    output_shapes=[a.shape],
    output_dtypes=[a.dtype],
    verbose=True,  # prints the generated source
)[0]
assert mx.allclose(out, mx.exp(a))

# The older form: names come from the dicts of the call, outputs return as a dict.
strided_source = """
    uint elem = thread_position_in_grid.x;
    uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
    T tmp = inp[loc];
    out[elem] = metal::exp(tmp);
"""
kernel = mx.fast.metal_kernel(name="myexp_strided", source=strided_source)
b = a[::2]  # not contiguous: the kernel reads it through its strides, without a copy
outputs = kernel(
    inputs={"inp": b},
    template={"T": mx.float32},
    grid=(b.size, 1, 1),
    threadgroup=(256, 1, 1),
    output_shapes={"out": b.shape},
    output_dtypes={"out": b.dtype},
    ensure_row_contiguous=False,
)
assert mx.allclose(outputs["out"], mx.exp(b))
print("exp kernels: ok")
