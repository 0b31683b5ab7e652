// eval_cpu of Partition, ArgPartition, Median, SearchSorted and Unique: each row (last axis)
// gathered into a buffer, then std::nth_element (selection) or std::stable_sort (unique);
// rows split across threads. The orders follow primitives_sort.h (NaN last, -0.0 equal to
// 0.0, complex by real then imaginary part, stable three-way partitions), which the GPU
// kernels reproduce exactly.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_sort.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

constexpr int64_t kGrain = static_cast<int64_t>(cpu::kElementwiseGrain);

/** A complex64 as it orders: by real part, then imaginary part, each with NaN last (MLX's
 * order, and the GPU kernels' keys). */
struct ComplexKey {
  float re, im;
  ComplexKey() = default;
  ComplexKey(complex64_t z) : re(z.real()), im(z.imag()) {}
};

/** The type elements compare in: half types as float (exact), bool as a byte. */
template <typename T>
using Key = std::conditional_t<
    is_complex_v<T>, ComplexKey,
    std::conditional_t<is_half_v<T>, float,
                       std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>>;

/** Ascending order with NaN after every number (and NaNs equal to each other). */
template <typename K>
bool less_nan_last(K a, K b) {
  if constexpr (std::is_same_v<K, ComplexKey>) {
    if (less_nan_last(a.re, b.re)) return true;
    if (less_nan_last(b.re, a.re)) return false;
    return less_nan_last(a.im, b.im);
  } else if constexpr (std::is_floating_point_v<K>) {
    return !std::isnan(a) && (std::isnan(b) || a < b);
  } else {
    return a < b;
  }
}

template <typename K>
bool is_nan(K a) {
  if constexpr (std::is_same_v<K, ComplexKey>)
    return std::isnan(a.re) || std::isnan(a.im);
  else if constexpr (std::is_floating_point_v<K>)
    return std::isnan(a);
  else
    return false;
}

/** The mean of two middle values (exact when they are equal, so no overflow). */
double middle(double a, double b) {
  return a == b ? a : (a + b) * 0.5;
}

/** Rows of `in` along its last axis: row r's element k at row_base(r) + k * stride. */
struct Rows {
  int64_t n = 0, count = 0, stride = 0;
  Shape outer;
  Strides outer_strides;

  explicit Rows(const array& in) {
    n = in.ndim() ? in.shape().back() : 1;
    stride = in.ndim() ? in.strides().back() : 0;
    outer.assign(in.shape().begin(), in.shape().end() - (in.ndim() ? 1 : 0));
    outer_strides.assign(in.strides().begin(), in.strides().end() - (in.ndim() ? 1 : 0));
    count = static_cast<int64_t>(shape_size(outer));
  }
  int64_t base(int64_t r) const { return elem_to_loc(r, outer, outer_strides); }
  /** Rows per task: enough work to be worth a thread. */
  size_t grain() const { return static_cast<size_t>(std::max<int64_t>(1, kGrain / std::max<int64_t>(4 * n, 1))); }
};

/**
 * Positions [start, n) of the stable three-way partition of each row around its element of
 * rank kth: values (the input's elements) to `values` and/or positions to `indices`, row r
 * at r * (n - start).
 */
template <typename T>
void partition_rows(const array& in, int64_t kth, int64_t start, T* values, uint32_t* indices) {
  using K = Key<T>;
  const Rows rows(in);
  const int64_t n = rows.n, out_n = n - start;
  const T* x = in.data<T>();
  cpu::parallel_for(rows.count, rows.grain(), [&](size_t b, size_t e) {
    std::vector<K> line(n), tmp(n);
    for (size_t r = b; r < e; ++r) {
      const T* src = x + rows.base(static_cast<int64_t>(r));
      for (int64_t k = 0; k < n; ++k) line[k] = static_cast<K>(src[k * rows.stride]);
      tmp = line;
      std::nth_element(tmp.begin(), tmp.begin() + kth, tmp.end(), less_nan_last<K>);
      const K v = tmp[kth];
      int64_t less = 0, equal = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (less_nan_last(line[k], v))
          ++less;
        else if (!less_nan_last(v, line[k]))
          ++equal;
      }
      int64_t o_lt = 0, o_eq = less, o_gt = less + equal;
      const int64_t out = static_cast<int64_t>(r) * out_n - start;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t dest = less_nan_last(line[k], v)   ? o_lt++
                             : !less_nan_last(v, line[k]) ? o_eq++
                                                          : o_gt++;
        if (dest < start) continue;
        if (values) values[out + dest] = src[k * rows.stride];
        if (indices) indices[out + dest] = static_cast<uint32_t>(k);
      }
    }
  });
}

/** The median of each row into `out` (O: float, double, or complex64 for complex rows). */
template <typename T, typename O>
void median_rows(const array& in, O* out) {
  using K = Key<T>;
  const Rows rows(in);
  const int64_t n = rows.n, lo = (n - 1) / 2;
  const T* x = in.data<T>();
  cpu::parallel_for(rows.count, rows.grain(), [&](size_t b, size_t e) {
    std::vector<K> line(n);
    for (size_t r = b; r < e; ++r) {
      const T* src = x + rows.base(static_cast<int64_t>(r));
      bool nan = false;
      for (int64_t k = 0; k < n; ++k) {
        line[k] = static_cast<K>(src[k * rows.stride]);
        nan = nan || is_nan(line[k]);
      }
      const float qnan = std::numeric_limits<float>::quiet_NaN();
      if (nan) {
        if constexpr (is_complex_v<O>)
          out[r] = O(qnan, 0.0f);
        else
          out[r] = std::numeric_limits<O>::quiet_NaN();
        continue;
      }
      std::nth_element(line.begin(), line.begin() + lo, line.end(), less_nan_last<K>);
      // The upper middle element: the smallest after the lower one.
      const K a = line[lo];
      const K c = n % 2 ? a : *std::min_element(line.begin() + lo + 1, line.end(), less_nan_last<K>);
      if constexpr (is_complex_v<O>) {
        out[r] = O(static_cast<float>(middle(a.re, c.re)), static_cast<float>(middle(a.im, c.im)));
      } else {
        out[r] = static_cast<O>(middle(static_cast<double>(a), static_cast<double>(c)));
      }
    }
  });
}

template <typename T>
void searchsorted_values(const array& seq, const array& values, bool right, uint32_t* out) {
  using K = Key<T>;
  const int64_t n = seq.shape()[0];
  std::vector<K> s(n);
  const T* sp = seq.data<T>();
  for (int64_t k = 0; k < n; ++k) s[k] = static_cast<K>(sp[k * seq.strides()[0]]);
  const T* vp = values.data<T>();
  const int64_t count = static_cast<int64_t>(values.size());
  cpu::parallel_for(count, kGrain / 16, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const K v = static_cast<K>(vp[elem_to_loc(static_cast<int64_t>(i), values.shape(),
                                                values.strides())]);
      auto it = right ? std::upper_bound(s.begin(), s.end(), v, less_nan_last<K>)
                      : std::lower_bound(s.begin(), s.end(), v, less_nan_last<K>);
      out[i] = static_cast<uint32_t>(it - s.begin());
    }
  });
}

/** unique of each row; `fill` (null: pad with the row's first entry) is 0-d or one per row. */
template <typename T>
void unique_rows(const array& in, const array* fill, int64_t size, T* values, uint32_t* index,
                 uint32_t* inverse, int32_t* counts) {
  using K = Key<T>;
  const Rows rows(in);
  const int64_t n = rows.n;
  const T* x = in.data<T>();
  cpu::parallel_for(rows.count, rows.grain(), [&](size_t b, size_t e) {
    // (value, position) pairs sort on dense memory; stability keeps equal values in order.
    std::vector<std::pair<K, uint32_t>> sorted(n);
    for (size_t r = b; r < e; ++r) {
      const T* src = x + rows.base(static_cast<int64_t>(r));
      for (int64_t k = 0; k < n; ++k) {
        sorted[k] = {static_cast<K>(src[k * rows.stride]), static_cast<uint32_t>(k)};
      }
      std::stable_sort(sorted.begin(), sorted.end(), [](const auto& p, const auto& q) {
        return less_nan_last(p.first, q.first);
      });
      T* vals = values + r * size;
      uint32_t* idx = index + r * size;
      int32_t* cnt = counts + r * size;
      std::fill(cnt, cnt + size, 0);
      int64_t g = -1;
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t p = sorted[i].second;
        // A new group where the value differs from the previous one; every NaN is its own.
        if (i == 0 || less_nan_last(sorted[i - 1].first, sorted[i].first) ||
            is_nan(sorted[i].first)) {
          ++g;
          if (g < size) vals[g] = src[p * rows.stride], idx[g] = p;
        }
        if (g < size) ++cnt[g];
        inverse[r * n + p] = size == 0 ? 0u : static_cast<uint32_t>(std::min<int64_t>(g, size - 1));
      }
      const T pad = !fill               ? T{}
                    : fill->ndim() == 0 ? *fill->data<T>()
                                        : fill->data<T>()[elem_to_loc(static_cast<int64_t>(r),
                                                                      fill->shape(),
                                                                      fill->strides())];
      for (int64_t h = std::max<int64_t>(g + 1, 0); h < size; ++h) {
        vals[h] = fill ? pad : vals[0];
        idx[h] = g >= 0 ? idx[0] : 0u;
      }
    }
  });
}

template <typename F>
void dispatch_all(Dtype d, F&& f) {
  dispatch_dtype(d, [&](auto tag) { f(tag); });
}

}  // namespace

void Partition::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  dispatch_all(inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    partition_rows<T>(inputs[0], kth_, start_, out.data<T>(), nullptr);
  });
}

void ArgPartition::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  dispatch_all(inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    partition_rows<T>(inputs[0], kth_, start_, nullptr, out.data<uint32_t>());
  });
}

void Median::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  dispatch_all(inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>)
      median_rows<T>(inputs[0], out.data<complex64_t>());
    else if (out.dtype() == float64)
      median_rows<T>(inputs[0], out.data<double>());
    else
      median_rows<T>(inputs[0], out.data<float>());
  });
}

void SearchSorted::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  dispatch_all(inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    searchsorted_values<T>(inputs[0], inputs[1], right_, out.data<uint32_t>());
  });
}

void Unique::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (auto& o : outputs) o.set_data(Storage::host(o.nbytes()));
  dispatch_all(inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    unique_rows<T>(inputs[0], has_fill_ ? &inputs[1] : nullptr, size_, outputs[0].data<T>(), outputs[1].data<uint32_t>(),
                   outputs[2].data<uint32_t>(), outputs[3].data<int32_t>());
  });
}

}  // namespace kiln
