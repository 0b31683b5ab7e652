// The GPU sort family's kernels and launch sequences (kiln/backend/cuda/sort_plan.h), run on
// the CPU kernel runtime (test_sort_kernels_emu.cpp), against the CPU backend's results: the
// GPU's algorithms are checked on every machine, GPU or not. Radix select (one block per
// row, with and without the shared-memory cache and the candidate gathering, and the
// many-blocks path for few long rows), sample select (topk of long rows, and the rows it
// leaves to radix select), the stable partitions they write, medians, LSD radix
// sort (values and positions, one or many segments per row, 8- to 64-bit keys, strided
// output), unique and searchsorted: bit-exact where the orders are fixed, on fresh random
// data with ties, NaNs and signed zeros, for 8- to 64-bit and complex keys.
#include <cstring>
#include <limits>

#include "test_sort_emu.h"
#include "test_utils.h"

using namespace kiln;
namespace sp = kiln::sortplan;

namespace {

constexpr int kEmulatedSMs = 8;
const double kNaN = std::numeric_limits<double>::quiet_NaN();

sp::KeyType key_of(Dtype d) {
  sp::KeyType k{static_cast<int>(d.size), 0};
  if (d == complex64)
    k.kind = 5;
  else if (d == float16)
    k.kind = 3;
  else if (d == float32 || d == float64)
    k.kind = 2;
  else if (is_signed_integer(d))
    k.kind = 1;
  return k;
}

uint64_t addr(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

/** A row-contiguous CPU copy of `a`, evaluated. */
array host(const array& a) {
  array c = contiguous(a, false, Device::cpu);
  c.eval();
  return c;
}

/** Values with many ties, and for floats NaNs and signed zeros sprinkled in (`special` of
 * them per row); complex numbers get such parts. */
std::vector<double> tied(size_t count, int rows, double lo, double hi, int special, bool fl) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(count);
  for (double& e : v) e = fl ? std::round(u(test::rng()) * 4) / 4 : std::trunc(u(test::rng()));
  if (fl) {
    const size_t n = count / rows;
    for (int r = 0; r < rows; ++r) {
      for (int i = 0; i < special; ++i) {
        const size_t at = r * n + test::rng()() % n;
        v[at] = i % 3 == 0 ? kNaN : (i % 3 == 1 ? -0.0 : 0.0);
      }
    }
  }
  return v;
}

array rows_of(Dtype dtype, int rows, int n, double lo, double hi, int special = 0) {
  if (is_unsigned(dtype)) lo = std::max(lo, 0.0), hi = std::max(hi, lo);
  const size_t count = static_cast<size_t>(rows) * n;
  if (dtype == complex64) {
    // Few distinct real parts, so that imaginary parts decide many comparisons.
    auto re = tied(count, rows, lo / 4, hi / 4, special, true);
    auto im = tied(count, rows, lo, hi, special, true);
    std::vector<complex64_t> c(count);
    for (size_t i = 0; i < count; ++i)
      c[i] = {static_cast<float>(re[i]), static_cast<float>(im[i])};
    return host(array(c.begin(), {rows, n}, complex64));
  }
  auto v = tied(count, rows, lo, hi, special, is_floating_point(dtype));
  return host(array(v.begin(), {rows, n}, dtype));
}

/** Rows sorted along the last axis (complex ones on the host, in MLX's order). */
array sort_like_cpu(const array& x) {
  if (x.dtype() != complex64) return sort(x, -1, Device::cpu);
  array c = host(x);
  std::vector<complex64_t> v(c.data<complex64_t>(), c.data<complex64_t>() + c.size());
  auto lnl = [](float a, float b) { return !std::isnan(a) && (std::isnan(b) || a < b); };
  const int n = x.shape().back();
  for (size_t r = 0; r < v.size() / n; ++r) {
    std::stable_sort(v.begin() + r * n, v.begin() + (r + 1) * n, [&](complex64_t a, complex64_t b) {
      if (lnl(a.real(), b.real())) return true;
      if (lnl(b.real(), a.real())) return false;
      return lnl(a.imag(), b.imag());
    });
  }
  return array(v.begin(), x.shape(), complex64);
}

template <typename T>
std::vector<T> values_of(const array& a) {
  array c = host(a);
  return std::vector<T>(c.data<T>(), c.data<T>() + c.size());
}

/** Compares raw bytes of `n` elements of `size` bytes. */
void expect_same_bytes(const void* got, const void* want, size_t n, size_t size,
                       const std::string& what) {
  const auto* g = static_cast<const unsigned char*>(got);
  const auto* w = static_cast<const unsigned char*>(want);
  size_t bad = 0;
  for (size_t i = 0; i < n && bad < 5; ++i) {
    if (std::memcmp(g + i * size, w + i * size, size) != 0) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " differs";
    }
  }
}

/** Runs the GPU selection of rows x (2-D, row-contiguous) and compares with the CPU's
 * partition (w0 == 0) or topk (w0 == kth). */
void check_select(const array& x, int64_t kth, int64_t w0) {
  const int rows = x.shape()[0], n = x.shape()[1];
  SCOPED_TRACE(msg(x.dtype(), " rows ", rows, " n ", n, " kth ", kth, " w0 ", w0));
  auto L = test::make_emulated_sort_launcher(kEmulatedSMs);
  const int64_t out_n = n - w0;
  std::vector<unsigned char> vals(rows * out_n * x.dtype().size);
  std::vector<uint32_t> idx(rows * out_n);
  sp::SelectJob j;
  j.key = key_of(x.dtype());
  j.rows = rows;
  j.n = n;
  j.kth = kth;
  j.w0 = w0;
  j.in = addr(x.data<void>());
  j.row_stride = n;
  j.out_values = addr(vals.data());
  j.out_indices = addr(idx.data());
  sp::select(*L, j);
  array want_v = w0 == 0 ? partition(x, static_cast<int>(kth), -1, Device::cpu)
                         : topk(x, static_cast<int>(out_n), -1, Device::cpu);
  array want_i = w0 == 0 ? argpartition(x, static_cast<int>(kth), -1, Device::cpu)
                         : slice(argpartition(x, static_cast<int>(kth), -1, Device::cpu),
                                 {0, static_cast<int>(w0)}, {rows, n}, Device::cpu);
  array wv = host(want_v), wi = host(want_i);
  expect_same_bytes(vals.data(), wv.data<void>(), rows * out_n, x.dtype().size, "values");
  expect_same_bytes(idx.data(), wi.data<void>(), rows * out_n, 4, "indices");
}

void check_median(const array& x) {
  const int rows = x.shape()[0], n = x.shape()[1];
  SCOPED_TRACE(msg(x.dtype(), " median rows ", rows, " n ", n));
  auto L = test::make_emulated_sort_launcher(kEmulatedSMs);
  const bool wide = x.dtype() == float64 || x.dtype() == complex64;
  std::vector<unsigned char> out(rows * (wide ? 8 : 4));
  sp::SelectJob j;
  j.key = key_of(x.dtype());
  j.median = true;
  j.rows = rows;
  j.n = n;
  j.in = addr(x.data<void>());
  j.row_stride = n;
  j.out_median = addr(out.data());
  sp::select(*L, j);
  // The CPU's median primitive (before the op rounds half types) computes in the same type.
  array want = median(x, -1, false, Device::cpu);
  if (x.dtype() == float16) want = median(astype(x, float32, Device::cpu), -1, false, Device::cpu);
  if (x.dtype() == complex64) {
    array w = host(want);
    for (int r = 0; r < rows; ++r) {
      const complex64_t got = reinterpret_cast<complex64_t*>(out.data())[r];
      const complex64_t expect = w.data<complex64_t>()[r];
      if (std::isnan(expect.real())) {
        EXPECT_TRUE(std::isnan(got.real()) && got.imag() == 0) << "row " << r;
      } else {
        EXPECT_EQ(got, expect) << "row " << r;
      }
    }
    return;
  }
  array w = host(astype(want, wide ? float64 : float32, Device::cpu));
  for (int r = 0; r < rows; ++r) {
    const double got =
        wide ? reinterpret_cast<double*>(out.data())[r] : reinterpret_cast<float*>(out.data())[r];
    const double expect = wide ? w.data<double>()[r] : w.data<float>()[r];
    if (std::isnan(expect)) {
      EXPECT_TRUE(std::isnan(got)) << "row " << r;
    } else {
      EXPECT_EQ(got, expect) << "row " << r;
    }
  }
}

/** The GPU radix sort of rows (values or positions) against the CPU's stable sort. With
 * `inner` > 1, the rows are the columns of an (n, inner) array, given to the kernels as its
 * transposed copy and written back in the array's layout. */
void check_radix_sort(const array& x, bool pairs, int inner = 1, int sms = kEmulatedSMs) {
  const int rows = x.shape()[0], n = x.shape()[1];
  SCOPED_TRACE(msg(x.dtype(), " radix ", pairs ? "argsort" : "sort", " rows ", rows, " n ", n,
                   " inner ", inner));
  auto L = test::make_emulated_sort_launcher(sms);
  std::vector<unsigned char> vals(x.nbytes());
  std::vector<uint32_t> idx(x.size());
  sp::RadixSortJob j;
  j.key = key_of(x.dtype());
  j.pairs = pairs;
  j.rows = rows;
  j.n = n;
  j.in = addr(x.data<void>());
  j.in_row_stride = n;
  j.out_inner = inner;
  (pairs ? j.out_indices : j.out_values) = pairs ? addr(idx.data()) : addr(vals.data());
  sp::radix_sort(*L, j);
  // Reference: rows r = o * inner + i of x sort into column i of block o of an
  // (rows / inner, n, inner) array.
  array ref_in =
      transpose(reshape(x, {rows / inner, inner, n}, Device::cpu), {0, 2, 1}, Device::cpu);
  if (pairs) {
    array want = host(argsort(ref_in, 1, Device::cpu));
    expect_same_bytes(idx.data(), want.data<void>(), x.size(), 4, "positions");
    return;
  }
  array got(reinterpret_cast<void*>(vals.data()), ref_in.shape(), x.dtype(), [](void*) {});
  auto g = test::to_double(got), w = test::to_double(sort(ref_in, 1, Device::cpu));
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    if (std::isnan(w[i]) ? !std::isnan(g[i]) : g[i] != w[i]) {
      ++bad;
      ADD_FAILURE() << "sorted value " << i << ": " << g[i] << ", want " << w[i];
    }
  }
}

}  // namespace

TEST(SortKernels, SelectOneBlockPerRow) {
  for (Dtype dt : {float32, int32, float64, uint8, float16, int64, complex64}) {
    // Rows that fit the cache, rows that gather their candidates, rows of one value (every
    // digit pass over the whole row), rows of one element.
    const bool fl = is_inexact(dt);
    std::vector<array> cases = {rows_of(dt, 3, 1000, 0, fl ? 8 : 100, 20),
                                rows_of(dt, 2, 20000, -50, 50, 40), rows_of(dt, 2, 5000, 3, 3),
                                rows_of(dt, 4, 1, 0, 10)};
    for (const array& x : cases) {
      const int64_t n = x.shape()[1];
      for (int64_t kth : {int64_t{0}, n - 1, n / 2, n / 3}) check_select(x, kth, 0);
      for (int64_t k : {int64_t{1}, std::min<int64_t>(5, n), n}) check_select(x, n - k, n - k);
    }
  }
}

/** A float32 row of n whose largest values sit exactly where select_sampled samples (32-byte
 * groups, evenly spread), so that its sample misleads the bracket. */
std::vector<double> sample_trap(int n) {
  const int group = 8, step = n / (256 / group);
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = i % step < group ? 1e6 + i : i % 97;
  return v;
}

TEST(SortKernels, SelectSampledRows) {
  // topk of rows of at least 4096 by a sample select (select_sampled): rows whose sample
  // bound holds, rows of one value (the gathered part overflows) and rows whose sample
  // misleads it, which select_rows redoes, next to rows that hit. Medians do not take it.
  for (Dtype dt : {float32, int32, float64, uint8, float16, int64, complex64}) {
    const bool fl = is_inexact(dt);
    const double hi = dt == uint8 ? 255 : (dt == float16 ? 6e4 : 1e9);
    for (const array& x : {rows_of(dt, 3, 6000, -hi, hi, fl ? 5 : 0), rows_of(dt, 2, 4099, 7, 7)}) {
      const int64_t n = x.shape()[1];
      for (int64_t k : {int64_t{1}, int64_t{64}, int64_t{300}}) check_select(x, n - k, n - k);
      check_median(x);
    }
  }
  for (Dtype dt : {float32, int32}) {
    const int n = 8192;
    std::vector<double> v = tied(2 * n, 2, -1000, 1000, 0, dt == float32);
    std::vector<double> trap = sample_trap(n);
    v.insert(v.begin() + n, trap.begin(), trap.end());
    array x = host(array(v.begin(), {3, n}, dt));
    for (int64_t k : {int64_t{1}, int64_t{64}, int64_t{300}}) check_select(x, n - k, n - k);
    check_median(x);
    // Which rows the sample select answered itself: the spread ones, not the trap.
    auto L = test::make_emulated_sort_launcher(kEmulatedSMs);
    std::vector<uint32_t> missed(3, 7), idx(3 * 64);
    L->run(sp::Family::select, sp::select_sampled_name(key_of(dt)), 3, sp::kSampleBlock,
           addr(x.data<void>()), int64_t{n}, int64_t{n}, int64_t{n - 64}, uint64_t{0},
           addr(idx.data()), addr(missed.data()));
    EXPECT_EQ(missed, (std::vector<uint32_t>{0, 1, 0})) << dt;
  }
}

TEST(SortKernels, SelectManyBlocksPerRow) {
  // Fewer rows than multiprocessors and longer than 65536: each row spread over blocks.
  for (Dtype dt : {float32, int32, complex64}) {
    array x = rows_of(dt, 2, 70001, -1000, 1000, 30);
    const int64_t n = x.shape()[1];
    for (int64_t kth : {int64_t{0}, n / 2, n - 1}) check_select(x, kth, 0);
    check_select(x, n - 7, n - 7);
    check_median(x);
  }
}

TEST(SortKernels, Median) {
  for (Dtype dt : {float32, int32, float64, uint8, float16, int64, complex64}) {
    const bool fl = is_inexact(dt);
    for (int n : {1, 2, 7, 1000, 1001, 20000}) {
      check_median(rows_of(dt, 3, n, fl ? -4 : 0, fl ? 4 : 50, 0));
    }
    if (fl) check_median(rows_of(dt, 4, 999, -4, 4, 2));  // NaNs in some rows
    // Even rows whose middle pair straddles a run of equal values.
    std::vector<double> v = {1, 1, 1, 2, 5, 5};
    check_median(host(astype(array(v.begin(), {1, 6}, float64), dt, Device::cpu)));
  }
  array nan_row = host(array({1.0f, NAN, 3.0f, 4.0f, 2.0f, 1.0f, 0.0f, 9.0f}, {2, 4}));
  check_median(nan_row);
}

TEST(SortKernels, RadixSort) {
  for (Dtype dt : {float32, int32, float64, uint8, float16, int64}) {
    const bool fl = is_floating_point(dt);
    for (bool pairs : {false, true}) {
      // Several segments per row (an upsweep and a scan per pass), one long row, one segment
      // per row (one histogram pass for all) with several tiles, strided output.
      check_radix_sort(rows_of(dt, 2, 4500, fl ? -100 : 0, fl ? 100 : 200, 30), pairs);
      check_radix_sort(rows_of(dt, 1, 9000, -60, 60, 10), pairs);
      check_radix_sort(rows_of(dt, 12, 4500, -60, 60, 10), pairs, 1, 2);
      check_radix_sort(rows_of(dt, 8, 2100, -60, 60, 10), pairs, 4, 2);
    }
  }
}

TEST(SortKernels, Unique) {
  for (Dtype dt : {float32, int32, float64, uint8, float16, complex64}) {
    const bool fl = is_inexact(dt);
    for (int n : {1, 10, 5000}) {
      array x = rows_of(dt, 1, n, fl ? -20 : 0, fl ? 20 : 60, fl ? 12 : 0);
      for (int size : {0, 3, 60, 200}) {
        for (bool fill : {false, true}) {
          SCOPED_TRACE(msg(dt, " n ", n, " size ", size, " fill ", fill));
          auto L = test::make_emulated_sort_launcher(kEmulatedSMs);
          array f = host(array(7.0, dt));
          std::vector<unsigned char> vals(size * dt.size);
          std::vector<uint32_t> index(size), inverse(n);
          std::vector<int32_t> counts(size);
          sp::UniqueJob j;
          j.key = key_of(dt);
          j.rows = 1;
          j.n = n;
          j.size = size;
          j.in = addr(x.data<void>());
          j.row_stride = n;
          j.fill = fill ? addr(f.data<void>()) : 0;
          j.fill_stride = 0;
          j.values = addr(vals.data());
          j.index = addr(index.data());
          j.inverse = addr(inverse.data());
          j.counts = addr(counts.data());
          sp::unique(*L, j);
          auto want = unique(reshape(x, {-1}), size, true, true, true,
                             fill ? std::optional<array>(f) : std::nullopt, Device::cpu);
          array wv = host(want[0]), wi = host(want[1]), winv = host(want[2]), wc = host(want[3]);
          expect_same_bytes(vals.data(), wv.data<void>(), size, dt.size, "values");
          expect_same_bytes(index.data(), wi.data<void>(), size, 4, "index");
          expect_same_bytes(inverse.data(), winv.data<void>(), n, 4, "inverse");
          expect_same_bytes(counts.data(), wc.data<void>(), size, 4, "counts");
        }
      }
    }
  }
}

TEST(SortKernels, SearchSorted) {
  for (Dtype dt : {float32, int32, float64, uint8, float16, complex64}) {
    const bool fl = is_inexact(dt);
    array seq = host(sort_like_cpu(rows_of(dt, 1, 999, fl ? -10 : 0, fl ? 10 : 100, 6)));
    array v = rows_of(dt, 3, 1000, fl ? -12 : 0, fl ? 12 : 120, 20);
    for (bool right : {false, true}) {
      SCOPED_TRACE(msg(dt, right ? " right" : " left"));
      auto L = test::make_emulated_sort_launcher(kEmulatedSMs);
      std::vector<uint32_t> out(v.size());
      sp::SearchJob j;
      j.key = key_of(dt);
      j.right = right;
      j.seq = addr(seq.data<void>());
      j.n = 999;
      j.values = addr(v.data<void>());
      j.count = v.size();
      j.out = addr(out.data());
      sp::searchsorted(*L, j);
      array want = host(searchsorted(reshape(seq, {-1}), v, right ? "right" : "left", Device::cpu));
      expect_same_bytes(out.data(), want.data<void>(), v.size(), 4, "positions");
    }
  }
}
