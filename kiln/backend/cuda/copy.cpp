#include "kiln/backend/cuda/copy.h"

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/stream.h"

namespace kiln::gpu {

namespace {

// The module of the copies of `bits` elements.
const Module& copy_module(Dtype bits, DeviceStream& s) {
  return get_module(s.context().index(), unary_module_name("Identity", bits, bits),
                    [&] { return unary_module("Identity", bits, bits); });
}

void copy_contiguous(CUdeviceptr src, CUdeviceptr dst, int64_t n, Dtype bits, DeviceStream& s) {
  const int v = vector_width(bits, bits);
  const bool vec = is_aligned(src, bits, v) && is_aligned(dst, bits, v);
  launch_contiguous(copy_module(bits, s).function(unary_v_name("Identity", bits, bits)), n, v, vec,
                    s, src, dst);
}

void fill(CUdeviceptr value, CUdeviceptr dst, int64_t n, Dtype bits, DeviceStream& s) {
  const int v = vector_width(bits, bits);
  const std::string name = "kiln::fill<" + device_type(bits) + ", " + std::to_string(v) + ">";
  launch_contiguous(copy_module(bits, s).function(name), n, v, is_aligned(dst, bits, v), s, value,
                    dst);
}

}  // namespace

void copy_gpu(const array& src, array& out, DeviceStream& s) {
  if (src.flags().contiguous) {
    out.set_data(new_device_storage(src.data_size() * out.itemsize(), s), src.data_size(),
                 src.strides(), src.flags());
    if (src.data_size() == 0) return;
    copy_contiguous(device_address(src), device_address(out), static_cast<int64_t>(src.data_size()),
                    bits_dtype(src.dtype()), s);
  } else {
    out.set_data(new_device_storage(out.nbytes(), s));
    copy_to_row_contiguous(src, device_address(out), s);
  }
}

void copy_to_row_contiguous(const array& src, CUdeviceptr dst, DeviceStream& s) {
  if (src.size() == 0) return;
  const Dtype bits = bits_dtype(src.dtype());
  const int64_t n = static_cast<int64_t>(src.size());
  if (src.data_size() == 1)
    fill(device_address(src), dst, n, bits, s);
  else if (src.flags().row_contiguous)
    copy_contiguous(device_address(src), dst, n, bits, s);
  else
    unary_op_strided("Identity", src, dst, bits, bits, s);
}

void copy_general(CUdeviceptr src, CUdeviceptr dst, Dtype dtype, const Shape& shape,
                  const Strides& src_strides, const Strides& dst_strides, DeviceStream& s) {
  for (auto n : shape)
    if (n == 0) return;
  const Dtype bits = bits_dtype(dtype);
  auto plan = plan_strided<2>(shape, {src_strides, dst_strides});
  // One dense run of the destination (e.g. concatenating along the first axis): a flat copy,
  // or a fill from a broadcast source.
  if (plan.shape.size() == 1 && plan.strides[1][0] == 1) {
    if (plan.strides[0][0] == 1) return copy_contiguous(src, dst, plan.last, bits, s);
    if (plan.strides[0][0] == 0) return fill(src, dst, plan.last, bits, s);
  }
  const std::string name = "kiln::copy_gg<" + device_type(bits) + ", " +
                           strided_args(plan.wide, plan.ndim_template) + ">";
  launch_strided(copy_module(bits, s).function(name), plan, s, src, dst);
}

// Every copy kernel: same-type Identity on each unsigned integer size.
KILN_GPU_MODULE_CATALOG(copy, [](const ModuleSink& sink) {
  for (Dtype d : {uint8, uint16, uint32, uint64})
    sink(unary_module_name("Identity", d, d), unary_module("Identity", d, d));
});

}  // namespace kiln::gpu
