#include "kiln/backend/cpu/elementwise.h"

namespace kiln::cpu {

namespace {
// A buffer may take the output when nothing else uses it and no device copy would go stale.
bool can_donate(const array& in, const array& out) {
  return in.is_donatable() && in.itemsize() == out.itemsize() && !in.storage().has_device();
}

// Allocates `out` with the layout of the contiguous `like`.
void set_like(const array& like, array& out) {
  out.set_data(
      Storage::host(like.data_size() * out.itemsize()), like.data_size(), like.strides(),
      like.flags());
}
}  // namespace

bool set_unary_output_data(const array& in, array& out) {
  if (in.flags().contiguous) {
    if (can_donate(in, out)) out.copy_shared_buffer(in);
    else set_like(in, out);
    return true;
  }
  set_row_contiguous_output(out);
  return false;
}

BinaryLayout binary_layout(const array& a, const array& b) {
  bool a_scalar = a.data_size() == 1, b_scalar = b.data_size() == 1;
  if (a_scalar && b_scalar) return BinaryLayout::scalar_scalar;
  if (a_scalar && b.flags().contiguous) return BinaryLayout::scalar_vector;
  if (b_scalar && a.flags().contiguous) return BinaryLayout::vector_scalar;
  if ((a.flags().row_contiguous && b.flags().row_contiguous) ||
      (a.flags().col_contiguous && b.flags().col_contiguous) ||
      (a.flags().contiguous && b.flags().contiguous && a.strides() == b.strides())) {
    return BinaryLayout::vector_vector;
  }
  return BinaryLayout::general;
}

void set_binary_output_data(const array& a, const array& b, array& out, BinaryLayout layout) {
  switch (layout) {
    case BinaryLayout::scalar_scalar:
      // The result is one element broadcast over out's shape, as the inputs are.
      out.set_data(Storage::host(out.itemsize()), 1, a.strides(), a.flags());
      return;
    case BinaryLayout::scalar_vector:
      if (can_donate(b, out)) out.copy_shared_buffer(b);
      else set_like(b, out);
      return;
    case BinaryLayout::vector_scalar:
      if (can_donate(a, out)) out.copy_shared_buffer(a);
      else set_like(a, out);
      return;
    case BinaryLayout::vector_vector:
      if (can_donate(a, out)) out.copy_shared_buffer(a);
      else if (can_donate(b, out)) out.copy_shared_buffer(b);
      else set_like(a, out);
      return;
    case BinaryLayout::general:
      set_row_contiguous_output(out);
      return;
  }
}

}  // namespace kiln::cpu
