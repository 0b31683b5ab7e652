// Elementwise kernels on the CPU: unary, binary and ternary maps over strided and
// broadcast inputs, with the output layout and buffer-donation rules they share.
//
// Fast paths: inputs that are contiguous in the same layout (or scalars) run one flat,
// vectorizable loop; anything else walks collapsed dimensions with for_each_elementwise_run.
#pragma once

#include <array>
#include <cstring>

#include "kiln/array.h"
#include "kiln/backend/cpu/simd_loops.h"
#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cpu/threading.h"

namespace kiln::cpu {

/** Allocates `out` like a contiguous `in` (same strides, so one flat loop serves), reusing
 * `in`'s buffer when it is donatable and of the same item size; row-contiguous otherwise.
 * Returns true when the flat (contiguous) path applies. */
bool set_unary_output_data(const array& in, array& out);

/** How two inputs of a binary op are laid out. */
enum class BinaryLayout {
  scalar_scalar,  // both hold one element
  scalar_vector,  // a is one element, b contiguous
  vector_scalar,
  vector_vector,  // both contiguous with the same strides
  general,
};
BinaryLayout binary_layout(const array& a, const array& b);
/** Allocates `out` for a binary op of the given layout (same layout as the contiguous
 * inputs, donating one when possible). */
void set_binary_output_data(const array& a, const array& b, array& out, BinaryLayout layout);

/** Fresh row-contiguous buffer for `out`. */
inline void set_row_contiguous_output(array& out) {
  out.set_data(Storage::host(out.nbytes()));
}

// kClones below: the unit-stride loops of unary_op (simd_loops.h's map_simd) and binary_op
// (map2_clones) compiled per ISA level, for functors that round once per element (no
// a * b + c to contract, so every clone gives the baseline's bits): the branch-free
// float16/bfloat16 conversions vectorize there only.

/** d[i] = op(x[i * sx], y[i * sy]) with each stride 0 (a scalar) or 1, per ISA level. */
template <typename A, typename B, typename Out, typename Op>
KILN_SIMD_CLONES void map2_clones(const A* x, int64_t sx, const B* y, int64_t sy, Out* d, int64_t n,
                                  Op op) {
  if (sx == 0) {
    const A v = *x;
    for (int64_t i = 0; i < n; ++i) d[i] = op(v, y[i]);
  } else if (sy == 0) {
    const B v = *y;
    for (int64_t i = 0; i < n; ++i) d[i] = op(x[i], v);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = op(x[i], y[i]);
  }
}

/** out[i] = op(in[i]) for every element; `out` is allocated here. kClones: unit-stride runs
 * go through map_simd. */
template <typename In, typename Out, bool kClones = false, typename Op>
void unary_op(const array& in, array& out, Op op) {
  bool flat = set_unary_output_data(in, out);
  const In* src = in.data<In>();
  Out* dst = out.data<Out>();
  if (flat) {
    parallel_for(in.data_size(), kElementwiseGrain, [&](size_t b, size_t e) {
      if constexpr (kClones)
        map_simd(src + b, dst + b, static_cast<int64_t>(e - b), op);
      else
        for (size_t i = b; i < e; ++i) dst[i] = op(src[i]);
    });
    return;
  }
  auto [shape, strides] = collapse_contiguous_dims<2>(in.shape(), {in.strides(), out.strides()});
  const int64_t is = strides[0].back(), os = strides[1].back();
  for_each_elementwise_run(shape, strides, [&](const std::array<int64_t, 2>& off, int64_t n) {
    const In* s = src + off[0];
    Out* d = dst + off[1];
    if (is == 1 && os == 1) {
      if constexpr (kClones)
        map_simd(s, d, n, op);
      else
        for (int64_t i = 0; i < n; ++i) d[i] = op(s[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) d[i * os] = op(s[i * is]);
    }
  });
}

/** out[i] = op(a[i], b[i]) with a and b already broadcast to out's shape. kClones: flat and
 * unit-stride runs go through map2_clones. */
template <typename A, typename B, typename Out, bool kClones = false, typename Op>
void binary_op(const array& a, const array& b, array& out, Op op) {
  BinaryLayout layout = binary_layout(a, b);
  set_binary_output_data(a, b, out, layout);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  Out* dst = out.data<Out>();
  switch (layout) {
    case BinaryLayout::scalar_scalar:
      *dst = op(*pa, *pb);
      return;
    case BinaryLayout::scalar_vector: {
      [[maybe_unused]] const A va = *pa;
      parallel_for(out.data_size(), kElementwiseGrain, [&](size_t s, size_t e) {
        if constexpr (kClones)
          map2_clones(pa, 0, pb + s, 1, dst + s, static_cast<int64_t>(e - s), op);
        else
          for (size_t i = s; i < e; ++i) dst[i] = op(va, pb[i]);
      });
      return;
    }
    case BinaryLayout::vector_scalar: {
      [[maybe_unused]] const B vb = *pb;
      parallel_for(out.data_size(), kElementwiseGrain, [&](size_t s, size_t e) {
        if constexpr (kClones)
          map2_clones(pa + s, 1, pb, 0, dst + s, static_cast<int64_t>(e - s), op);
        else
          for (size_t i = s; i < e; ++i) dst[i] = op(pa[i], vb);
      });
      return;
    }
    case BinaryLayout::vector_vector:
      parallel_for(out.data_size(), kElementwiseGrain, [&](size_t s, size_t e) {
        if constexpr (kClones)
          map2_clones(pa + s, 1, pb + s, 1, dst + s, static_cast<int64_t>(e - s), op);
        else
          for (size_t i = s; i < e; ++i) dst[i] = op(pa[i], pb[i]);
      });
      return;
    case BinaryLayout::general:
      break;
  }
  auto [shape, strides] =
      collapse_contiguous_dims<3>(out.shape(), {a.strides(), b.strides(), out.strides()});
  const int64_t sa = strides[0].back(), sb = strides[1].back(), so = strides[2].back();
  for_each_elementwise_run(shape, strides, [&](const std::array<int64_t, 3>& off, int64_t n) {
    const A* x = pa + off[0];
    const B* y = pb + off[1];
    Out* d = dst + off[2];
    if (kClones && (sa == 0 || sa == 1) && (sb == 0 || sb == 1) && (sa | sb) != 0 && so == 1) {
      map2_clones(x, sa, y, sb, d, n, op);
    } else if (sa == 1 && sb == 1 && so == 1) {
      for (int64_t i = 0; i < n; ++i) d[i] = op(x[i], y[i]);
    } else if (sa == 0 && sb == 1 && so == 1) {
      const A vx = *x;
      for (int64_t i = 0; i < n; ++i) d[i] = op(vx, y[i]);
    } else if (sa == 1 && sb == 0 && so == 1) {
      const B vy = *y;
      for (int64_t i = 0; i < n; ++i) d[i] = op(x[i], vy);
    } else {
      for (int64_t i = 0; i < n; ++i) d[i * so] = op(x[i * sa], y[i * sb]);
    }
  });
}

/** out[i] = op(a[i], b[i], c[i]) with all three broadcast to out's shape (row-contiguous
 * output). */
template <typename A, typename B, typename C, typename Out, typename Op>
void ternary_op(const array& a, const array& b, const array& c, array& out, Op op) {
  set_row_contiguous_output(out);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  const C* pc = c.data<C>();
  Out* dst = out.data<Out>();
  auto [shape, strides] = collapse_contiguous_dims<4>(
      out.shape(), {a.strides(), b.strides(), c.strides(), out.strides()});
  const int64_t sa = strides[0].back(), sb = strides[1].back(), sc = strides[2].back(),
                so = strides[3].back();
  for_each_elementwise_run(shape, strides, [&](const std::array<int64_t, 4>& off, int64_t n) {
    const A* x = pa + off[0];
    const B* y = pb + off[1];
    const C* z = pc + off[2];
    Out* d = dst + off[3];
    for (int64_t i = 0; i < n; ++i) d[i * so] = op(x[i * sa], y[i * sb], z[i * sc]);
  });
}

}  // namespace kiln::cpu
