// eval_cpu of the layout primitives: conversions and copies move data; views only compute
// strides over the input's buffer.
#include "kiln/backend/cpu/copy.h"
#include "kiln/primitives_layout.h"

namespace kiln {

namespace {
// Makes `out` a view of `in`'s buffer with `strides`.
void set_view(const array& in, array& out, const Strides& strides, int64_t offset = 0) {
  auto [flags, data_size] = array::layout(out.shape(), strides);
  out.copy_shared_buffer(in, strides, flags, data_size, offset);
}
}  // namespace

void AsType::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  cpu::copy(in, out, in.flags().contiguous ? cpu::CopyType::vector : cpu::CopyType::general);
}

void Copy::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  cpu::copy(in, out, in.flags().contiguous ? cpu::CopyType::vector : cpu::CopyType::general);
}

void Broadcast::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  size_t added = out.ndim() - in.ndim();
  Strides strides(out.ndim(), 0);
  for (size_t i = 0; i < in.ndim(); ++i) {
    if (in.shape()[i] == out.shape()[i + added]) strides[i + added] = in.strides()[i];
  }
  set_view(in, out, strides);
}

void Reshape::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.flags().row_contiguous) {
    set_view(in, out, array::row_major_strides(out.shape()));
  } else if (auto strides = view_strides(in, out.shape())) {
    set_view(in, out, *strides);
  } else {
    // Copy in row-major order of in's shape: those are out's elements in row order.
    out.set_data(Storage::host(out.nbytes()));
    cpu::copy_inplace(in, out, in.shape(), in.strides(), array::row_major_strides(in.shape()), 0, 0);
  }
}

void Transpose::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  Strides strides(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) strides[i] = in.strides()[axes_[i]];
  set_view(in, out, strides);
}

}  // namespace kiln
