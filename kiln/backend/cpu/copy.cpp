#include "kiln/backend/cpu/copy.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kiln/backend/cpu/elementwise.h"
#include "kiln/backend/cpu/strided.h"

namespace kiln::cpu {

namespace {

// Same-dtype copies only move bits: dispatch on the item size alone.
template <typename F>
void dispatch_bits(size_t itemsize, F&& f) {
  switch (itemsize) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

template <typename F>
void dispatch_pair(Dtype from, Dtype to, F&& f) {
  if (from == to) {
    dispatch_bits(from.size, [&](auto t) { f(t, t); });
    return;
  }
  dispatch_dtype(from, [&](auto s) { dispatch_dtype(to, [&](auto d) { f(s, d); }); });
}

// Conversions to or from float16/bfloat16 run in the per-ISA clones (simd_loops.h), where
// the branch-free half conversions vectorize; baseline code converts one value at a time.
template <typename S, typename D>
constexpr bool kHalfConversion = !std::is_same_v<S, D> && (is_half_v<S> || is_half_v<D>);

template <typename S, typename D>
void convert(const S* s, D* d, int64_t n) {
  if constexpr (kHalfConversion<S, D>)
    map_simd(s, d, n, [](S v) { return scalar_cast<D>(v); });
  else
    for (int64_t i = 0; i < n; ++i) d[i] = scalar_cast<D>(s[i]);
}

// Square tiles for transposing copies: a tile's source cache lines stay in L1 while its
// destination rows are written (32 x 32 elements: 4 KiB of float32 per side).
constexpr int64_t kTile = 32;

// dst's last dimension is contiguous and src's second-to-last one is: the plain row walk
// would read src with a large stride and miss the cache on every element, so copy the last
// two dimensions tile by tile instead.
template <typename S, typename D>
void tiled_copy(const S* src, D* dst, const Shape& shape, const std::array<Strides, 2>& strides) {
  const int nd = static_cast<int>(shape.size());
  const int64_t rows = shape[nd - 2], cols = shape[nd - 1];
  const int64_t src_col = strides[0][nd - 1], dst_row = strides[1][nd - 2];
  const Shape outer(shape.begin(), shape.end() - 2);
  const Strides src_outer(strides[0].begin(), strides[0].end() - 2);
  const Strides dst_outer(strides[1].begin(), strides[1].end() - 2);
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const size_t tasks = shape_size(outer) * static_cast<size_t>(row_tiles);
  const size_t grain = std::max<size_t>(1, kElementwiseGrain / static_cast<size_t>(kTile * cols));
  parallel_for(tasks, grain, [&](size_t begin, size_t end) {
    for (size_t task = begin; task < end; ++task) {
      const int64_t o = static_cast<int64_t>(task) / row_tiles;
      const int64_t r0 = static_cast<int64_t>(task) % row_tiles * kTile;
      const int64_t r1 = std::min(r0 + kTile, rows);
      const S* s = src + elem_to_loc(o, outer, src_outer);
      D* d = dst + elem_to_loc(o, outer, dst_outer);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(c0 + kTile, cols);
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t c = c0; c < c1; ++c) d[r * dst_row + c] = scalar_cast<D>(s[r + c * src_col]);
        }
      }
    }
  });
}

template <typename S, typename D>
void strided_copy(const S* src, D* dst, const Shape& shape, const Strides& ss, const Strides& ds) {
  auto [cshape, strides] = collapse_contiguous_dims<2>(shape, {ss, ds});
  const int nd = static_cast<int>(cshape.size());
  const int64_t is = strides[0].back(), os = strides[1].back();
  if (nd >= 2 && os == 1 && strides[0][nd - 2] == 1 && std::abs(is) >= kTile &&
      cshape[nd - 1] >= kTile && cshape[nd - 2] >= kTile) {
    tiled_copy(src, dst, cshape, strides);
    return;
  }
  for_each_run(cshape, strides, [&](const std::array<int64_t, 2>& off, int64_t n) {
    const S* s = src + off[0];
    D* d = dst + off[1];
    if (is == 1 && os == 1) {
      if constexpr (std::is_same_v<S, D>)
        std::memcpy(d, s, n * sizeof(S));
      else
        convert(s, d, n);
    } else if (is == 0 && os == 1) {
      std::fill_n(d, n, scalar_cast<D>(*s));  // a broadcast source, e.g. slice_update's fill
    } else {
      for (int64_t i = 0; i < n; ++i) d[i * os] = scalar_cast<D>(s[i * is]);
    }
  });
}

}  // namespace

void copy_inplace(const array& src, array& dst, CopyType ctype) {
  if (dst.size() == 0) return;
  dispatch_pair(src.dtype(), dst.dtype(), [&](auto s, auto d) {
    using S = decltype(s);
    using D = decltype(d);
    const S* ps = src.data<S>();
    D* pd = dst.data<D>();
    switch (ctype) {
      case CopyType::scalar: {
        D v = scalar_cast<D>(*ps);
        parallel_for(dst.data_size(), kElementwiseGrain, [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) pd[i] = v;
        });
        return;
      }
      case CopyType::vector:
        parallel_for(src.data_size(), kElementwiseGrain, [&](size_t b, size_t e) {
          if constexpr (std::is_same_v<S, D>)
            std::memcpy(pd + b, ps + b, (e - b) * sizeof(S));
          else
            convert(ps + b, pd + b, static_cast<int64_t>(e - b));
        });
        return;
      case CopyType::general:
      case CopyType::general_general:
        strided_copy(ps, pd, src.shape(), src.strides(), dst.strides());
        return;
    }
  });
}

void copy_inplace(const array& src, array& dst, const Shape& shape, const Strides& src_strides,
                  const Strides& dst_strides, int64_t src_offset, int64_t dst_offset) {
  for (auto n : shape)
    if (n == 0) return;
  dispatch_pair(src.dtype(), dst.dtype(), [&](auto s, auto d) {
    using S = decltype(s);
    using D = decltype(d);
    strided_copy(src.data<S>() + src_offset, dst.data<D>() + dst_offset, shape, src_strides,
                 dst_strides);
  });
}

void copy(const array& src, array& dst, CopyType ctype) {
  if (ctype == CopyType::vector && src.flags().contiguous) {
    dst.set_data(Storage::host(src.data_size() * dst.itemsize()), src.data_size(), src.strides(),
                 src.flags());
  } else {
    set_row_contiguous_output(dst);
    if (ctype == CopyType::vector) ctype = CopyType::general;
  }
  copy_inplace(src, dst, ctype);
}

}  // namespace kiln::cpu
