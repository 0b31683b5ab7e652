// Copies with dtype conversion between arrays of the same shape.
#pragma once

#include "kiln/array.h"

namespace kiln::cpu {

enum class CopyType {
  scalar,           // src holds one element: fill dst
  vector,           // src and dst contiguous in the same layout: one flat loop
  general,          // src any strides, dst row-contiguous
  general_general,  // both any strides (dst may be a view being written into)
};

/** Converts and copies src's elements into the already allocated dst (same shape). */
void copy_inplace(const array& src, array& dst, CopyType ctype);

/** Copies `src` into `dst` over `shape` with explicit strides and element offsets (used to
 * write into part of a buffer, e.g. by concatenate and slice_update). */
void copy_inplace(
    const array& src,
    array& dst,
    const Shape& shape,
    const Strides& src_strides,
    const Strides& dst_strides,
    int64_t src_offset,
    int64_t dst_offset);

/** Allocates dst (keeping a contiguous src's layout for `vector`, else row-contiguous) and
 * copies into it. */
void copy(const array& src, array& dst, CopyType ctype);

}  // namespace kiln::cpu
