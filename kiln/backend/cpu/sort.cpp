// eval_cpu of Sort and ArgSort: a stable sort of every line along the axis, NaN last (as
// NumPy), lines split across threads. Each line is gathered into a buffer first, so any
// input strides and any axis take the same path, and the sort itself runs on dense memory:
// std::stable_sort for short lines, else an LSD radix sort of the lines' order-preserving
// integer keys (sort_keys.h) with their positions, whose passes cost the same for any data.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>

#include "kiln/backend/cpu/sort_keys.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_reduce.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

constexpr int64_t kGrain = static_cast<int64_t>(cpu::kElementwiseGrain);

/** Ascending order with NaN after every number. */
template <typename T>
bool less_nan_last(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return !std::isnan(a) && (std::isnan(b) || a < b);
  else
    return a < b;
}

/** The type lines are sorted in: half types as float (exact both ways, cheaper compares),
 * bool as a byte (vector<bool> packs bits behind proxy references). */
template <typename T>
using SortType = std::conditional_t<is_half_v<T>, float,
                                    std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>;

/**
 * Calls `f(buf, src, src_stride, dst_offset)` for every line along `axis`: a scratch
 * buffer of one line (one per chunk of lines), the line's first input element and its
 * stride, and the offset of its first element in the row-contiguous output (whose stride
 * along the axis is `inner`). Lines split across threads.
 */
template <typename Elem, typename F>
void for_each_line(const array& in, int axis, F&& f) {
  const Shape& shape = in.shape();
  const int64_t n = shape[axis];
  int64_t inner = 1;
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  // The other dimensions, whose row-major enumeration numbers the lines.
  Shape rest;
  Strides rest_strides;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (i == axis) continue;
    rest.push_back(shape[i]);
    rest_strides.push_back(in.strides()[i]);
  }
  const int64_t lines = static_cast<int64_t>(shape_size(rest));
  const int64_t stride = in.strides()[axis];
  size_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(8 * n, 1));
  cpu::parallel_for(lines, grain, [&](size_t b, size_t e) {
    std::vector<Elem> buf(n);
    for (size_t line = b; line < e; ++line) {
      int64_t o = line / inner, i = line % inner;
      f(buf, elem_to_loc(line, rest, rest_strides), stride, o * n * inner + i);
    }
  });
}

/** Lines at least this long sort by radix. */
constexpr int64_t kRadixLine = 256;

/** Stably sorts keys[0, n) with a payload each (`pay`, n of them) by LSD radix sort, 8 bits
 * per pass; a pass whose digit every key shares moves nothing and is skipped. The results end
 * in `keys` and `pay`; `keys2`, `pay2` are scratch. */
template <typename U, typename P>
void radix_sort_pairs(std::vector<U>& keys, std::vector<P>& pay, std::vector<U>& keys2,
                      std::vector<P>& pay2) {
  constexpr int kPasses = static_cast<int>(sizeof(U));
  const size_t n = keys.size();
  std::vector<uint32_t> hist(kPasses * 256, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int p = 0; p < kPasses; ++p) {
      ++hist[p * 256 + (static_cast<uint32_t>(keys[i] >> (8 * p)) & 255u)];
    }
  }
  keys2.resize(n);
  pay2.resize(n);
  for (int p = 0; p < kPasses; ++p) {
    uint32_t* h = hist.data() + p * 256;
    if (std::find(h, h + 256, static_cast<uint32_t>(n)) != h + 256) continue;
    uint32_t offset = 0;
    for (int d = 0; d < 256; ++d) {
      const uint32_t c = h[d];
      h[d] = offset;
      offset += c;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint32_t at = h[static_cast<uint32_t>(keys[i] >> (8 * p)) & 255u]++;
      keys2[at] = keys[i];
      pay2[at] = pay[i];
    }
    keys.swap(keys2);
    pay.swap(pay2);
  }
}

/** Radix-sorts every line of `in` along `axis`: the sorted elements to `values` (their own
 * bits travel as the payload) or their positions to `indices` (row-contiguous in in's shape;
 * one of them null). */
template <typename T>
void radix_lines(const array& in, int axis, T* values, uint32_t* indices) {
  using U = cpu::KeyOf<T>;
  const Shape& shape = in.shape();
  const int64_t n = shape[axis];
  const int64_t inner = array::row_major_strides(shape)[axis];
  Shape rest;
  Strides rest_strides;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (i == axis) continue;
    rest.push_back(shape[i]);
    rest_strides.push_back(in.strides()[i]);
  }
  const int64_t lines = static_cast<int64_t>(shape_size(rest));
  const int64_t stride = in.strides()[axis];
  const T* x = in.data<T>();
  size_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(8 * n, 1));
  cpu::parallel_for(lines, grain, [&](size_t b, size_t e) {
    std::vector<U> keys, keys2, bits, bits2;
    std::vector<uint32_t> pos, pos2;
    for (size_t line = b; line < e; ++line) {
      const T* src = x + elem_to_loc(line, rest, rest_strides);
      keys.resize(n);
      for (int64_t k = 0; k < n; ++k) keys[k] = cpu::to_key(src[k * stride]);
      const int64_t o = line / inner, i = line % inner, dst = o * n * inner + i;
      if (values) {
        bits.resize(n);
        for (int64_t k = 0; k < n; ++k)
          std::memcpy(static_cast<void*>(&bits[k]), static_cast<const void*>(&src[k * stride]),
                      sizeof(T));
        radix_sort_pairs(keys, bits, keys2, bits2);
        for (int64_t k = 0; k < n; ++k)
          std::memcpy(static_cast<void*>(&values[dst + k * inner]), &bits[k], sizeof(T));
      } else {
        pos.resize(n);
        std::iota(pos.begin(), pos.end(), 0u);
        radix_sort_pairs(keys, pos, keys2, pos2);
        for (int64_t k = 0; k < n; ++k) indices[dst + k * inner] = pos[k];
      }
    }
  });
}

template <typename T>
void sort_lines(const array& in, array& out, int axis) {
  const int64_t n = in.shape()[axis];
  const int64_t inner = array::row_major_strides(in.shape())[axis];
  const T* x = in.data<T>();
  T* y = out.data<T>();
  using V = SortType<T>;
  for_each_line<V>(in, axis, [&](std::vector<V>& buf, int64_t src, int64_t stride, int64_t dst) {
    for (int64_t k = 0; k < n; ++k) buf[k] = static_cast<V>(x[src + k * stride]);
    std::stable_sort(buf.begin(), buf.end(), less_nan_last<V>);
    for (int64_t k = 0; k < n; ++k) y[dst + k * inner] = static_cast<T>(buf[k]);
  });
}

template <typename T>
void argsort_lines(const array& in, array& out, int axis) {
  const int64_t n = in.shape()[axis];
  const int64_t inner = array::row_major_strides(in.shape())[axis];
  const T* x = in.data<T>();
  uint32_t* y = out.data<uint32_t>();
  // Sorting (value, index) pairs keeps the comparisons on dense memory; stability keeps
  // equal values in index order.
  using P = std::pair<SortType<T>, uint32_t>;
  for_each_line<P>(in, axis, [&](std::vector<P>& buf, int64_t src, int64_t stride, int64_t dst) {
    for (int64_t k = 0; k < n; ++k) {
      buf[k] = {static_cast<SortType<T>>(x[src + k * stride]), static_cast<uint32_t>(k)};
    }
    std::stable_sort(buf.begin(), buf.end(),
                     [](const auto& a, const auto& b) { return less_nan_last(a.first, b.first); });
    for (int64_t k = 0; k < n; ++k) y[dst + k * inner] = buf[k].second;
  });
}

}  // namespace

void Sort::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      throw std::invalid_argument("[Sort::eval_cpu] complex64 is not supported.");
    } else if (in.shape()[axis_] >= kRadixLine) {
      radix_lines<T>(in, axis_, out.data<T>(), nullptr);
    } else {
      sort_lines<T>(in, out, axis_);
    }
  });
}

void ArgSort::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      throw std::invalid_argument("[ArgSort::eval_cpu] complex64 is not supported.");
    } else if (in.shape()[axis_] >= kRadixLine) {
      radix_lines<T>(in, axis_, nullptr, out.data<uint32_t>());
    } else {
      argsort_lines<T>(in, out, axis_);
    }
  });
}

}  // namespace kiln
