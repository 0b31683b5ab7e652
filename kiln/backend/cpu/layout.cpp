// eval_cpu of the layout primitives: conversions and copies move data; views only compute
// strides over the input's buffer; concatenate and slice_update write parts of one buffer.
#include <cstring>
#include <stdexcept>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/elementwise.h"
#include "kiln/primitives_layout.h"

namespace kiln {

namespace {
// Makes `out` a view of `in`'s buffer with `strides` (offset in elements).
void set_view(const array& in, array& out, const Strides& strides, int64_t offset = 0) {
  auto [flags, data_size] = array::layout(out.shape(), strides);
  out.copy_shared_buffer(in, strides, flags, data_size, offset);
}

// The cheapest copy of `in`: a fill when it holds one element, one flat loop when it is
// dense (keeping its layout), a strided walk otherwise.
cpu::CopyType copy_type(const array& in) {
  if (in.data_size() == 1 && in.size() > 1) return cpu::CopyType::scalar;
  return in.flags().contiguous ? cpu::CopyType::vector : cpu::CopyType::general;
}
}  // namespace

void AsType::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.data_size() == 1) {
    // One element (possibly broadcast): convert it once and keep the input's strides.
    out.set_data(Storage::host(out.itemsize()), 1, in.strides(), in.flags());
    cpu::copy_inplace(in, out, Shape{}, Strides{}, Strides{}, 0, 0);
    return;
  }
  cpu::copy(in, out, copy_type(in));
}

void Copy::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  cpu::copy(in, out, copy_type(in));
}

void Contiguous::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.flags().row_contiguous || (allow_col_major_ && in.flags().col_contiguous)) {
    out.copy_shared_buffer(in);
  } else {
    cpu::set_row_contiguous_output(out);
    cpu::copy_inplace(
        in, out,
        copy_type(in) == cpu::CopyType::scalar ? cpu::CopyType::scalar : cpu::CopyType::general);
  }
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
    cpu::set_row_contiguous_output(out);
    cpu::copy_inplace(in, out, in.shape(), in.strides(), array::row_major_strides(in.shape()), 0,
                      0);
  }
}

void Transpose::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  Strides strides(axes_.size());
  for (size_t i = 0; i < axes_.size(); ++i) strides[i] = in.strides()[axes_[i]];
  set_view(in, out, strides);
}

// A view of the input's bytes; an input whose first byte is not aligned for the new dtype
// (a slice of a narrower type) is copied instead.
void View::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (!in.flags().row_contiguous)
    throw std::runtime_error("[View::eval_cpu] Input must be row-contiguous.");
  if (in.offset() % static_cast<int64_t>(out.itemsize()) == 0) {
    set_view(in, out, array::row_major_strides(out.shape()));
    return;
  }
  out.set_data(Storage::host(out.nbytes()));
  std::memcpy(out.data<char>(), in.data<char>(), out.nbytes());
}

void AsStrided::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  if (in.flags().row_contiguous) {
    set_view(in, out, strides_, offset_);
    return;
  }
  // Strides count in the input's row-major order: view a row-contiguous copy.
  array dense(Storage::host(in.nbytes()), in.shape(), in.dtype());
  cpu::copy_inplace(
      in, dense,
      copy_type(in) == cpu::CopyType::scalar ? cpu::CopyType::scalar : cpu::CopyType::general);
  set_view(dense, out, strides_, offset_);
}

void Slice::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  Strides strides(in.ndim());
  int64_t offset = 0;
  for (size_t i = 0; i < in.ndim(); ++i) {
    offset += static_cast<int64_t>(bounds_.start[i]) * in.strides()[i];
    strides[i] = in.strides()[i] * bounds_.strides[i];
  }
  set_view(in, out, strides, out.size() ? offset : 0);
}

void SliceUpdate::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& src = inputs[0];
  const array& upd = inputs[1];
  // Start from src's values: its own buffer when nothing else can see it (dense, so no
  // broadcast view), else a copy.
  if (src.flags().contiguous && src.data_size() == src.size() && src.is_donatable() &&
      !src.storage().has_device()) {
    out.copy_shared_buffer(src);
  } else {
    cpu::copy(src, out, copy_type(src));
  }
  if (upd.size() == 0) return;
  Strides strides(out.ndim());
  int64_t offset = 0;
  for (size_t i = 0; i < out.ndim(); ++i) {
    offset += static_cast<int64_t>(bounds_.start[i]) * out.strides()[i];
    strides[i] = out.strides()[i] * bounds_.strides[i];
  }
  cpu::copy_inplace(upd, out, upd.shape(), upd.strides(), strides, 0, offset);
}

void Concatenate::eval_cpu(const std::vector<array>& inputs, array& out) {
  cpu::set_row_contiguous_output(out);
  const int64_t step = out.strides()[axis_];
  int64_t offset = 0;
  for (const auto& in : inputs) {
    cpu::copy_inplace(in, out, in.shape(), in.strides(), out.strides(), 0, offset * step);
    offset += in.shape(axis_);
  }
}

}  // namespace kiln
