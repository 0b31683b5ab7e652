#include "kiln/backend/cpu/copy.h"

#include <cstring>

#include "kiln/backend/cpu/elementwise.h"
#include "kiln/backend/cpu/strided.h"

namespace kiln::cpu {

namespace {

// Same-dtype copies only move bits: dispatch on the item size alone.
template <typename F>
void dispatch_bits(size_t itemsize, F&& f) {
  switch (itemsize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    default: return f(uint64_t{});
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

template <typename S, typename D>
void strided_copy(
    const S* src,
    D* dst,
    const Shape& shape,
    const Strides& ss,
    const Strides& ds) {
  auto [cshape, strides] = collapse_contiguous_dims<2>(shape, {ss, ds});
  const int64_t is = strides[0].back(), os = strides[1].back();
  for_each_run(cshape, strides, [&](const std::array<int64_t, 2>& off, int64_t n) {
    const S* s = src + off[0];
    D* d = dst + off[1];
    if (is == 1 && os == 1) {
      if constexpr (std::is_same_v<S, D>) std::memcpy(d, s, n * sizeof(S));
      else for (int64_t i = 0; i < n; ++i) d[i] = scalar_cast<D>(s[i]);
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
          if constexpr (std::is_same_v<S, D>) std::memcpy(pd + b, ps + b, (e - b) * sizeof(S));
          else for (size_t i = b; i < e; ++i) pd[i] = scalar_cast<D>(ps[i]);
        });
        return;
      case CopyType::general:
      case CopyType::general_general:
        strided_copy(ps, pd, src.shape(), src.strides(), dst.strides());
        return;
    }
  });
}

void copy_inplace(
    const array& src,
    array& dst,
    const Shape& shape,
    const Strides& src_strides,
    const Strides& dst_strides,
    int64_t src_offset,
    int64_t dst_offset) {
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
