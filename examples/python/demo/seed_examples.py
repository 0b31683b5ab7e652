"""The seed documents' custom-kernel examples, as written for MLX (only the import differs):
exp as a Metal kernel in the keyword form (input_names/output_names, list arguments), in
the older dict form (names taken from the dicts' keys), and the strided variant that reads
its input through elem_to_loc instead of a row-contiguous copy."""

import kiln.core as mx

SOURCE = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""

STRIDED_SOURCE = """
    uint elem = thread_position_in_grid.x;
    // Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
    uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
    T tmp = inp[loc];
    // Output arrays are always row contiguous
    out[elem] = metal::exp(tmp);
"""


def exp_keyword_form(a: mx.array):
    """mlx.core.fast.metal_kernel's reference example (seed 004)."""
    kernel = mx.fast.metal_kernel(
        name="myexp",
        input_names=["inp"],
        output_names=["out"],
        source=SOURCE,
    )
    outputs = kernel(
        inputs=[a],
        template=[("T", mx.float32)],
        grid=(a.size, 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes=[a.shape],
        output_dtypes=[a.dtype],
    )
    return outputs[0]


def exp_dict_form(a: mx.array):
    """The "Custom Metal Kernels" page's first example (seed 000): dicts name everything."""
    kernel = mx.fast.metal_kernel(
        name="myexp_dict",
        source=SOURCE,
    )
    outputs = kernel(
        inputs={"inp": a},
        template={"T": mx.float32},
        grid=(a.size, 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes={"out": a.shape},
        output_dtypes={"out": a.dtype},
    )
    return outputs["out"]


def exp_strided(a: mx.array):
    """The same page's strided variant (dict form, ensure_row_contiguous=False at the call,
    as the page has it): no copy of a non-contiguous input."""
    kernel = mx.fast.metal_kernel(
        name="myexp_strided",
        source=STRIDED_SOURCE,
    )
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


def run(log=print):
    """Runs the three examples on (4, 16) float16 inputs (the strided one on a[::2]) and
    checks each against mx.exp as the seed does (mx.allclose). Returns [(name, ok, error)]."""
    results = []
    a = mx.random.normal(shape=(4, 16), key=mx.random.key(0)).astype(mx.float16)
    cases = [
        ("keyword form (input_names, lists)", exp_keyword_form, a),
        ("dict form (names from the dicts)", exp_dict_form, a),
        ("strided: elem_to_loc on a[::2]", exp_strided, a[::2]),
    ]
    for label, fn, x in cases:
        b = fn(x)
        want = mx.exp(x)
        ok = mx.allclose(b, want).item()
        err = mx.max(mx.abs(b.astype(mx.float32) - want.astype(mx.float32))).item()
        dtype = str(x.dtype).split(".")[-1]
        log(f"  {label:36s} {dtype:8s} {str(tuple(x.shape)):8s} "
            f"max |error| {err:.1e}  {'ok' if ok else 'MISMATCH'}")
        results.append((label, ok, err))
    return results
