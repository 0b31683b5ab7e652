// eval_cpu of the creation primitives.
#include <algorithm>

#include "kiln/backend/cpu/elementwise.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_creation.h"
#include "kiln/utils.h"

namespace kiln {

namespace {
// A truncated integral value as its 64-bit two's-complement pattern: integer outputs then
// compute first + i * delta modulo 2^64, exact for every value the op allowed.
uint64_t to_bits(double v) {
  return v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
}
}  // namespace

void Arange::eval_cpu(const std::vector<array>&, array& out) {
  cpu::set_row_contiguous_output(out);
  const size_t n = out.size();
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    if constexpr (std::is_integral_v<T>) {
      const uint64_t first = to_bits(start_);
      const uint64_t delta = n > 1 ? to_bits(start_ + step_) - first : 0;
      cpu::parallel_for(n, cpu::kElementwiseGrain, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) dst[i] = static_cast<T>(first + i * delta);
      });
    } else {
      cpu::parallel_for(n, cpu::kElementwiseGrain, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i)
          dst[i] = scalar_cast<T>(start_ + static_cast<double>(i) * step_);
      });
    }
  });
}

void Linspace::eval_cpu(const std::vector<array>&, array& out) {
  cpu::set_row_contiguous_output(out);
  const size_t n = out.size();
  if (n == 0) return;
  const double step = n > 1 ? (stop_ - start_) / static_cast<double>(n - 1) : 0.0;
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    cpu::parallel_for(n, cpu::kElementwiseGrain, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i)
        dst[i] = scalar_cast<T>(start_ + static_cast<double>(i) * step);
    });
    // The endpoint exactly, as NumPy.
    if (n > 1) dst[n - 1] = scalar_cast<T>(stop_);
  });
}

void Eye::eval_cpu(const std::vector<array>&, array& out) {
  cpu::set_row_contiguous_output(out);
  if (out.size() == 0) return;
  const int64_t rows = out.shape(0), cols = out.shape(1);
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    const size_t grain = std::max<size_t>(1, cpu::kElementwiseGrain / cols);
    cpu::parallel_for(rows, grain, [&](size_t b, size_t e) {
      std::fill(dst + b * cols, dst + e * cols, T(0));
      for (size_t i = b; i < e; ++i) {
        int64_t j = static_cast<int64_t>(i) + k_;
        if (j >= 0 && j < cols) dst[i * cols + j] = T(1);
      }
    });
  });
}

void Triangular::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& in = inputs[0];
  cpu::set_row_contiguous_output(out);
  if (out.size() == 0) return;
  const int nd = static_cast<int>(in.ndim());
  const int64_t rows = in.shape(nd - 2), cols = in.shape(nd - 1);
  const int64_t col_stride = in.strides()[nd - 1];
  const size_t all_rows = out.size() / cols;
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    const size_t grain = std::max<size_t>(1, cpu::kElementwiseGrain / cols);
    cpu::parallel_for(all_rows, grain, [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        const T* s = src + elem_to_loc(static_cast<int64_t>(r) * cols, in.shape(), in.strides());
        T* d = dst + r * cols;
        // Kept columns [lo, hi): j - i <= k (lower) or j - i >= k (upper), i the row in its
        // matrix; the rest are zero.
        const int64_t i = static_cast<int64_t>(r) % rows;
        const int64_t lo = upper_ ? std::clamp<int64_t>(i + k_, 0, cols) : 0;
        const int64_t hi = upper_ ? cols : std::clamp<int64_t>(i + k_ + 1, 0, cols);
        std::fill(d, d + lo, T(0));
        if (col_stride == 1) {
          std::copy(s + lo, s + hi, d + lo);
        } else {
          for (int64_t j = lo; j < hi; ++j) d[j] = s[j * col_stride];
        }
        std::fill(d + hi, d + cols, T(0));
      }
    });
  });
}

}  // namespace kiln
