// eval_gpu of the layout primitives: conversions run the unary kernels with the Identity
// functor, copies the bit-moving kernels of copy.h; views only compute strides over the
// input's buffer, as on the CPU; slice_update and concatenate write parts of one buffer.
#include <set>
#include <string>
#include <utility>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_layout.h"

namespace kiln {

namespace {

// Makes `out` a view of `in`'s buffer with `strides` (offset in elements).
void set_view(const array& in, array& out, const Strides& strides, int64_t offset = 0) {
  auto [flags, data_size] = array::layout(out.shape(), strides);
  out.copy_shared_buffer(in, strides, flags, data_size, offset);
}

/**
 * The (read, written) dtypes of the kernel converting `from` to `to`. Conversions whose
 * result depends only on the bits share one kernel (Identity between the bits types is a
 * copy):
 *  - the same dtype, and bool, which converts as the uint8 0 or 1;
 *  - between integers: the target's signedness never matters, and the source's only when
 *    widening (sign extension);
 *  - integers to bool: a test of the bits against zero;
 *  - floats and complex64 to integers narrower than 64 bits: the value truncates to int64
 *    first and then wraps (device/cast.cuh), whatever the target's signedness.
 */
std::pair<Dtype, Dtype> astype_kernel_dtypes(Dtype from, Dtype to) {
  using gpu::bits_dtype;
  if (from == to) return {bits_dtype(from), bits_dtype(to)};
  if (from == bool_) from = uint8;
  if (from == to) return {uint8, uint8};
  if (is_integral(from)) {
    if (to == bool_) return {bits_dtype(from), bool_};
    if (is_integral(to)) return {from.size >= to.size ? bits_dtype(from) : from, bits_dtype(to)};
  } else if (is_integral(to) && to != bool_ && to.size < 8) {
    return {from, bits_dtype(to)};
  }
  return {from, to};
}

}  // namespace

// One element (possibly broadcast) converts once and keeps the input's strides, as on the
// CPU; contiguous inputs keep their layout.
void AsType::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  auto [kin, kout] = astype_kernel_dtypes(in.dtype(), out.dtype());
  gpu::unary_op_gpu("Identity", in, out, kin, kout, gpu::device_stream(stream()));
}

void Copy::eval_gpu(const std::vector<array>& inputs, array& out) {
  gpu::copy_gpu(inputs[0], out, gpu::device_stream(stream()));
}

void Contiguous::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.flags().row_contiguous || (allow_col_major_ && in.flags().col_contiguous)) {
    out.copy_shared_buffer(in);
    return;
  }
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size()) gpu::copy_to_row_contiguous(in, gpu::device_address(out), s);
}

// Views touch no data: the CPU implementations only compute strides and share the buffer.
void Broadcast::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

void Transpose::eval_gpu(const std::vector<array>& inputs, array& out) {
  eval_cpu(inputs, out);
}

void Slice::eval_gpu(const std::vector<array>& inputs, array& out) {
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
    set_view(in, out, *strides);
    return;
  }
  // In's elements in row-major order of its shape are out's in row order.
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size()) gpu::copy_to_row_contiguous(in, gpu::device_address(out), s);
}

void View::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (!in.flags().row_contiguous)
    throw std::runtime_error("[View::eval_gpu] Input must be row-contiguous.");
  if (in.offset() % static_cast<int64_t>(out.itemsize()) == 0) {
    set_view(in, out, array::row_major_strides(out.shape()));
    return;
  }
  // Misaligned for the new dtype: copy the bytes to a fresh (aligned) buffer.
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size()) gpu::copy_to_row_contiguous(in, gpu::device_address(out), s);
}

void AsStrided::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.flags().row_contiguous) {
    set_view(in, out, strides_, offset_);
    return;
  }
  // Strides count in the input's row-major order: view a row-contiguous copy.
  auto& s = gpu::device_stream(stream());
  array dense(gpu::new_device_storage(in.nbytes(), s), in.shape(), in.dtype());
  if (in.size()) gpu::copy_to_row_contiguous(in, gpu::device_address(dense), s);
  set_view(dense, out, strides_, offset_);
}

// The GPU allocator never donates a buffer yet: the result starts as a copy of src.
void SliceUpdate::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  const array& upd = inputs[1];
  auto& s = gpu::device_stream(stream());
  gpu::copy_gpu(src, out, s);
  if (upd.size() == 0) return;
  Strides strides(out.ndim());
  int64_t offset = 0;
  for (size_t i = 0; i < out.ndim(); ++i) {
    offset += static_cast<int64_t>(bounds_.start[i]) * out.strides()[i];
    strides[i] = out.strides()[i] * bounds_.strides[i];
  }
  const CUdeviceptr dst =
      gpu::device_address(out) + static_cast<CUdeviceptr>(offset) * out.itemsize();
  gpu::copy_general(gpu::device_address(upd), dst, out.dtype(), upd.shape(), upd.strides(), strides,
                    s);
}

void Concatenate::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const int64_t step = out.strides()[axis_];
  int64_t offset = 0;
  for (const auto& in : inputs) {
    if (in.size()) {
      const CUdeviceptr dst =
          gpu::device_address(out) + static_cast<CUdeviceptr>(offset * step) * out.itemsize();
      gpu::copy_general(gpu::device_address(in), dst, out.dtype(), in.shape(), in.strides(),
                        out.strides(), s);
    }
    offset += in.shape(axis_);
  }
}

// Every conversion between two dtypes (same-type ones are the copy family's).
KILN_GPU_MODULE_CATALOG(astype, [](const gpu::ModuleSink& sink) {
  std::set<std::string> seen;
  for (Dtype from : all_dtypes) {
    for (Dtype to : all_dtypes) {
      auto [kin, kout] = astype_kernel_dtypes(from, to);
      if (kin == kout) continue;
      const std::string name = gpu::unary_module_name("Identity", kin, kout);
      if (seen.insert(name).second) sink(name, gpu::unary_module("Identity", kin, kout));
    }
  }
});

}  // namespace kiln
