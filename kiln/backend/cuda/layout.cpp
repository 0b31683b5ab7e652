// eval_gpu of the layout primitives: conversions and copies run the unary kernels with the
// Identity functor; views only compute strides over the input's buffer.
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_layout.h"

namespace kiln {

void AsType::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  auto& s = gpu::device_stream(stream());
  if (in.dtype() == out.dtype()) {
    gpu::unary_op_gpu("Identity", in, out, gpu::bits_dtype(in.dtype()),
                      gpu::bits_dtype(out.dtype()), s);
  } else {
    gpu::unary_op_gpu("Identity", in, out, s);
  }
}

void Copy::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  Dtype bits = gpu::bits_dtype(in.dtype());
  gpu::unary_op_gpu("Identity", in, out, bits, bits, gpu::device_stream(stream()));
}

// Views touch no data: the CPU implementations only compute strides and share the buffer.
void Broadcast::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

void Transpose::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

void Reshape::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  std::optional<Strides> strides;
  if (in.flags().row_contiguous)
    strides = array::row_major_strides(out.shape());
  else
    strides = view_strides(in, out.shape());
  if (strides) {
    auto [flags, data_size] = array::layout(out.shape(), *strides);
    out.copy_shared_buffer(in, *strides, flags, data_size);
    return;
  }
  // In's elements in row-major order of its shape are out's in row order.
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  Dtype bits = gpu::bits_dtype(in.dtype());
  gpu::unary_op_strided("Identity", in, gpu::device_address(out), bits, bits, s);
}

KILN_GPU_MODULE_CATALOG(copy, [](const gpu::ModuleSink& sink) {
  auto add = [&](Dtype in, Dtype out) { gpu::unary_modules("Identity", in, out, sink); };
  for (Dtype d : {uint8, uint16, uint32, uint64}) add(d, d);  // Copy, Reshape, same-type AsType
  for (Dtype in : all_dtypes)
    for (Dtype out : all_dtypes)
      if (in != out) add(in, out);  // AsType
});

}  // namespace kiln
