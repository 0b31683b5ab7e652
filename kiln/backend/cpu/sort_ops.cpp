// eval_cpu of Partition, ArgPartition, Median, SearchSorted and Unique. Elements become the
// GPU kernels' order-preserving unsigned keys (device/sort_keys.cuh: NaN last and equal to
// each other, -0.0 equal to 0.0, complex by real then imaginary part), so comparisons are
// integer ones and both backends order alike by construction. Each row (last axis) is
// gathered as keys; selection finds the key of rank kth by radix select (as the GPU), then
// one pass writes the stable three-way partition; unique sorts (key, position) pairs. Rows
// split across threads.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/backend/cpu/sort_keys.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_sort.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

using cpu::float_bits;
using cpu::is_nan_key;
using cpu::KeyOf;
using cpu::to_key;

constexpr int64_t kGrain = static_cast<int64_t>(cpu::kElementwiseGrain);

/** The value whose key is `k`, for the median: as a double, or a complex64. */
template <typename T>
auto key_value(KeyOf<T> k) {
  if constexpr (is_complex_v<T>) {
    return complex64_t(std::bit_cast<float>(float_bits<uint32_t>(static_cast<uint32_t>(k >> 32))),
                       std::bit_cast<float>(float_bits<uint32_t>(static_cast<uint32_t>(k))));
  } else if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
    return static_cast<double>(k);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<double>(
        static_cast<T>(static_cast<KeyOf<T>>(k ^ (KeyOf<T>(1) << (8 * sizeof(T) - 1)))));
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<double>(float_bits(k));
  } else {
    return static_cast<double>(static_cast<float>(std::bit_cast<T>(float_bits(k))));
  }
}

/** Rows of `in` along its last axis: row r's element k at base(r) + k * stride. */
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
  size_t grain() const {
    return static_cast<size_t>(std::max<int64_t>(1, kGrain / std::max<int64_t>(4 * n, 1)));
  }
};

/** What selection finds: the key of rank kth and the counts of smaller and equal keys. */
template <typename U>
struct Selected {
  U key;
  int64_t less, equal;
};

/**
 * Selects rank kth (< n) among the keys key_at(0 .. n) by radix select, as the GPU kernels:
 * a histogram of the top 11 bits (8 for 8-bit keys), then of the next 8 bits of the
 * candidates left in the bin holding rank kth, and so on, each pass keeping only those
 * candidates (predicated stores: no branch to mispredict, where std::nth_element's
 * comparisons are coin flips). Only the candidates are stored (in `scratch`); the row's
 * keys are computed as they are read. With a non-null `nan`, also tells whether a key is a
 * NaN's (for the median).
 */
template <typename T, typename U, typename KeyAt>
Selected<U> select_rank(int64_t n, KeyAt key_at, int64_t kth, std::vector<U>& scratch,
                        bool* nan = nullptr) {
  constexpr int kBits = 8 * static_cast<int>(sizeof(U));
  constexpr int kFirst = kBits >= 16 ? 11 : 8;
  constexpr uint32_t kBins = 1u << kFirst;
  // First pass: over the row, into four histograms in turn, so that runs of one bin do not
  // serialize on one counter (32 KiB: in L1).
  uint32_t hist4[4][kBins];
  uint32_t* hist = hist4[0];
  int shift = kBits - kFirst;
  std::fill(&hist4[0][0], &hist4[0][0] + 4 * kBins, 0u);
  bool any_nan = false;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const U k0 = key_at(i), k1 = key_at(i + 1), k2 = key_at(i + 2), k3 = key_at(i + 3);
    ++hist4[0][static_cast<uint32_t>(k0 >> shift)];
    ++hist4[1][static_cast<uint32_t>(k1 >> shift)];
    ++hist4[2][static_cast<uint32_t>(k2 >> shift)];
    ++hist4[3][static_cast<uint32_t>(k3 >> shift)];
    if (nan) {
      any_nan |= cpu::is_nan_key<T>(k0) | cpu::is_nan_key<T>(k1) | cpu::is_nan_key<T>(k2) |
                 cpu::is_nan_key<T>(k3);
    }
  }
  for (; i < n; ++i) {
    const U k = key_at(i);
    ++hist[static_cast<uint32_t>(k >> shift)];
    if (nan) any_nan |= cpu::is_nan_key<T>(k);
  }
  for (uint32_t b = 0; b < kBins; ++b) hist[b] += hist4[1][b] + hist4[2][b] + hist4[3][b];
  if (nan) *nan = any_nan;
  int64_t rank = kth, less = 0;
  uint32_t bin = 0;
  while (rank >= hist[bin]) rank -= hist[bin], less += hist[bin], ++bin;
  U prefix = static_cast<U>(static_cast<U>(bin) << shift);
  if (shift == 0) return {prefix, less, hist[bin]};
  size_t m = hist[bin];
  scratch.resize(m + 1);  // a predicated store may write one past the last candidate
  size_t j = 0;
  if (m * 8 < static_cast<size_t>(n)) {
    // Few candidates: a branch that is rarely taken beats the store chain of predication.
    for (int64_t i = 0; i < n; ++i) {
      const U k = key_at(i);
      if (static_cast<uint32_t>(k >> shift) == bin) scratch[j++] = k;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const U k = key_at(i);
      scratch[j] = k;
      j += static_cast<uint32_t>(k >> shift) == bin;
    }
  }
  // Next passes: over the candidates, in place (the write index never passes the read one).
  U* cand = scratch.data();
  while (m > 1) {
    const int width = shift < 8 ? shift : 8;
    const uint32_t mask = (1u << width) - 1;
    shift -= width;
    std::fill(hist, hist + 256, 0u);
    for (size_t i = 0; i < m; ++i) ++hist[static_cast<uint32_t>(cand[i] >> shift) & mask];
    bin = 0;
    while (rank >= hist[bin]) rank -= hist[bin], less += hist[bin], ++bin;
    prefix = static_cast<U>(prefix | static_cast<U>(static_cast<U>(bin) << shift));
    if (shift == 0) return {prefix, less, hist[bin]};
    j = 0;
    for (size_t i = 0; i < m; ++i) {
      const U k = cand[i];
      cand[j] = k;
      j += (static_cast<uint32_t>(k >> shift) & mask) == bin;
    }
    m = j;
  }
  return {cand[0], less, 1};
}

/**
 * Positions [start, n) of the stable three-way partition of each row around its element of
 * rank kth: values (the input's elements) to `values` and/or positions to `indices`, row r
 * at r * (n - start).
 */
template <typename T>
void partition_rows(const array& in, int64_t kth, int64_t start, T* values, uint32_t* indices) {
  using U = KeyOf<T>;
  const Rows rows(in);
  const int64_t n = rows.n, out_n = n - start, stride = rows.stride;
  const T* x = in.data<T>();
  cpu::parallel_for(rows.count, rows.grain(), [&](size_t b, size_t e) {
    std::vector<U> scratch;
    for (size_t r = b; r < e; ++r) {
      const T* src = x + rows.base(static_cast<int64_t>(r));
      auto key_at = [&](int64_t i) { return to_key(src[i * stride]); };
      const Selected<U> s = select_rank<T>(n, key_at, kth, scratch);
      int64_t next[3] = {0, s.less, s.less + s.equal};
      const int64_t out = static_cast<int64_t>(r) * out_n - start;
      if (start >= s.less) {
        // topk: the smaller elements all land before `start`; skip them (for a small k,
        // nearly every element: a branch that predicts well).
        for (int64_t k = 0; k < n; ++k) {
          const U key = key_at(k);
          if (key < s.key) continue;
          const int64_t dest = next[key == s.key ? 1 : 2]++;
          if (dest < start) continue;
          if (values) values[out + dest] = src[k * stride];
          if (indices) indices[out + dest] = static_cast<uint32_t>(k);
        }
        continue;
      }
      // Next position of each class (smaller, equal, larger), picked without a branch.
      for (int64_t k = 0; k < n; ++k) {
        const U key = key_at(k);
        const int c = 2 - 2 * (key < s.key) - (key == s.key);
        const int64_t dest = next[c]++;
        if (dest < start) continue;
        if (values) values[out + dest] = src[k * stride];
        if (indices) indices[out + dest] = static_cast<uint32_t>(k);
      }
    }
  });
}

/** The median of each row into `out` (O: float, double, or complex64 for complex rows). */
template <typename T, typename O>
void median_rows(const array& in, O* out) {
  using U = KeyOf<T>;
  const Rows rows(in);
  const int64_t n = rows.n, lo = (n - 1) / 2, hi = n / 2, stride = rows.stride;
  const T* x = in.data<T>();
  cpu::parallel_for(rows.count, rows.grain(), [&](size_t b, size_t e) {
    std::vector<U> scratch;
    for (size_t r = b; r < e; ++r) {
      const T* src = x + rows.base(static_cast<int64_t>(r));
      auto key_at = [&](int64_t i) { return to_key(src[i * stride]); };
      bool nan = false;
      const Selected<U> s = select_rank<T>(n, key_at, lo, scratch, &nan);
      if (nan) {
        if constexpr (is_complex_v<O>)
          out[r] = O(std::numeric_limits<float>::quiet_NaN(), 0.0f);
        else
          out[r] = std::numeric_limits<O>::quiet_NaN();
        continue;
      }
      U upper = s.key;
      if (s.less + s.equal <= hi) {  // the upper middle is the smallest larger key
        upper = static_cast<U>(~U(0));
        for (int64_t i = 0; i < n; ++i) {
          const U k = key_at(i);
          upper = k > s.key && k < upper ? k : upper;
        }
      }
      auto middle = [](double a, double c) { return a == c ? a : (a + c) * 0.5; };
      const auto a = key_value<T>(s.key), c = key_value<T>(upper);
      if constexpr (is_complex_v<O>) {
        out[r] = O(static_cast<float>(middle(a.real(), c.real())),
                   static_cast<float>(middle(a.imag(), c.imag())));
      } else {
        out[r] = static_cast<O>(middle(a, c));
      }
    }
  });
}

template <typename T>
void searchsorted_values(const array& seq, const array& values, bool right, uint32_t* out) {
  using U = KeyOf<T>;
  const int64_t n = seq.shape()[0];
  std::vector<U> s(n);
  const T* sp = seq.data<T>();
  for (int64_t k = 0; k < n; ++k) s[k] = to_key(sp[k * seq.strides()[0]]);
  const T* vp = values.data<T>();
  const int64_t count = static_cast<int64_t>(values.size());
  cpu::parallel_for(count, kGrain / 16, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const U v =
          to_key(vp[elem_to_loc(static_cast<int64_t>(i), values.shape(), values.strides())]);
      auto it =
          right ? std::upper_bound(s.begin(), s.end(), v) : std::lower_bound(s.begin(), s.end(), v);
      out[i] = static_cast<uint32_t>(it - s.begin());
    }
  });
}

/** unique of each row; `fill` (null: pad with the row's first entry) is 0-d or one per row. */
template <typename T>
void unique_rows(const array& in, const array* fill, int64_t size, T* values, uint32_t* index,
                 uint32_t* inverse, int32_t* counts) {
  using U = KeyOf<T>;
  const Rows rows(in);
  const int64_t n = rows.n;
  const T* x = in.data<T>();
  cpu::parallel_for(rows.count, rows.grain(), [&](size_t b, size_t e) {
    // (key, position) pairs sort on dense memory; stability keeps equal values in order.
    std::vector<std::pair<U, uint32_t>> sorted(n);
    for (size_t r = b; r < e; ++r) {
      const T* src = x + rows.base(static_cast<int64_t>(r));
      for (int64_t k = 0; k < n; ++k)
        sorted[k] = {to_key(src[k * rows.stride]), static_cast<uint32_t>(k)};
      std::stable_sort(sorted.begin(), sorted.end(),
                       [](const auto& p, const auto& q) { return p.first < q.first; });
      T* vals = values + r * size;
      uint32_t* idx = index + r * size;
      int32_t* cnt = counts + r * size;
      std::fill(cnt, cnt + size, 0);
      int64_t g = -1;
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t p = sorted[i].second;
        // A new group where the key changes; every NaN is its own (NaN != NaN).
        if (i == 0 || sorted[i].first != sorted[i - 1].first || is_nan_key<T>(sorted[i].first)) {
          ++g;
          if (g < size) vals[g] = src[p * rows.stride], idx[g] = p;
        }
        if (g < size) ++cnt[g];
        inverse[r * n + p] = size == 0 ? 0u : static_cast<uint32_t>(std::min<int64_t>(g, size - 1));
      }
      const T pad = !fill ? T{}
                    : fill->ndim() == 0
                        ? *fill->data<T>()
                        : fill->data<T>()[elem_to_loc(static_cast<int64_t>(r), fill->shape(),
                                                      fill->strides())];
      for (int64_t h = std::max<int64_t>(g + 1, 0); h < size; ++h) {
        vals[h] = fill ? pad : vals[0];
        idx[h] = g >= 0 ? idx[0] : 0u;
      }
    }
  });
}

}  // namespace

void Partition::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  dispatch_dtype(inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    partition_rows<T>(inputs[0], kth_, start_, out.data<T>(), nullptr);
  });
}

void ArgPartition::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  dispatch_dtype(inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    partition_rows<T>(inputs[0], kth_, start_, nullptr, out.data<uint32_t>());
  });
}

void Median::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  dispatch_dtype(inputs[0].dtype(), [&](auto tag) {
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
  dispatch_dtype(inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    searchsorted_values<T>(inputs[0], inputs[1], right_, out.data<uint32_t>());
  });
}

void Unique::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (auto& o : outputs) o.set_data(Storage::host(o.nbytes()));
  dispatch_dtype(inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    unique_rows<T>(inputs[0], has_fill_ ? &inputs[1] : nullptr, size_, outputs[0].data<T>(),
                   outputs[1].data<uint32_t>(), outputs[2].data<uint32_t>(),
                   outputs[3].data<int32_t>());
  });
}

}  // namespace kiln
