// Selection and search ops: partition, argpartition, topk, median, searchsorted, unique.
// Checked against float64 references computed here (a stable three-way partition, sorted
// medians, binary searches, grouping), on every dtype (complex64 in MLX's order), with ties,
// NaNs and signed zeros, along every axis and flattened, on transposed, strided and broadcast
// views, long rows (many GPU blocks per row), empty arrays, and every argument check with
// MLX's exception types. Gradients follow MLX's (ties and NaNs included). With a GPU, the GPU's
// results must equal the CPU's exactly.
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "test_utils.h"

#ifdef KILN_WITH_CUDA
#include "kiln/backend/gpu.h"
#endif

using namespace kiln;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

bool less_nan_last(double a, double b) {
  return !std::isnan(a) && (std::isnan(b) || a < b);
}

bool same_value(double got, double want) {
  return std::isnan(want) ? std::isnan(got)
                          : got == want && std::signbit(got) == std::signbit(want);
}

/** Row-major offsets of every line of `shape` along `axis`. */
std::vector<std::vector<int64_t>> lines(const Shape& shape, int axis) {
  if (axis < 0) axis += static_cast<int>(shape.size());
  int64_t n = shape[axis], inner = 1, outer = 1;
  for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  std::vector<std::vector<int64_t>> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> line(n);
      for (int64_t k = 0; k < n; ++k) line[k] = o * n * inner + k * inner + i;
      out.push_back(std::move(line));
    }
  }
  return out;
}

/** The positions of the stable three-way partition of `v` around its element of rank kth. */
std::vector<int64_t> ref_partition(const std::vector<double>& v, int64_t kth) {
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t p, int64_t q) { return less_nan_last(v[p], v[q]); });
  const double pivot = v[order[kth]];
  std::vector<int64_t> lt, eq, gt;
  for (size_t k = 0; k < v.size(); ++k) {
    if (less_nan_last(v[k], pivot))
      lt.push_back(k);
    else if (less_nan_last(pivot, v[k]))
      gt.push_back(k);
    else
      eq.push_back(k);
  }
  lt.insert(lt.end(), eq.begin(), eq.end());
  lt.insert(lt.end(), gt.begin(), gt.end());
  return lt;
}

/** Values with many ties (and, for floats, NaNs and signed zeros when `special`). */
array tied_values(const Shape& shape, Dtype dt, bool special = false) {
  array x = is_inexact(dt) ? astype(test::random_array(shape, int32, -4, 4), dt)
                           : test::random_array(shape, dt, is_unsigned(dt) ? 0 : -4, 4);
  if (!special || !is_floating_point(dt)) return x;
  auto v = test::to_double(x);
  for (size_t i = 0; i < v.size(); ++i) {
    const auto r = test::rng()() % 10;
    if (r == 0) v[i] = kNaN;
    if (r == 1) v[i] = -0.0;
  }
  return array(v.begin(), shape, dt);
}

/** partition / argpartition / topk of `x` along `axis` against ref_partition, exactly. */
void expect_partition(const array& x, int axis, int kth) {
  SCOPED_TRACE(msg(x.dtype(), " ", shape_str(x.shape()), " axis ", axis, " kth ", kth));
  array p = partition(x, kth, axis), a = argpartition(x, kth, axis);
  EXPECT_EQ(p.dtype(), x.dtype());
  EXPECT_EQ(a.dtype(), uint32);
  ASSERT_EQ(p.shape(), x.shape());
  ASSERT_EQ(a.shape(), x.shape());
  const int ax = axis < 0 ? axis + static_cast<int>(x.ndim()) : axis;
  const int n = x.shape()[ax];
  const int k = kth < 0 ? kth + n : kth;
  array t = topk(x, n - k, axis);
  Shape tshape = x.shape();
  tshape[ax] = n - k;
  ASSERT_EQ(t.shape(), tshape);
  auto xv = test::to_double(x), pv = test::to_double(p), av = test::to_double(a),
       tv = test::to_double(t);
  const auto tlines = lines(tshape, ax);
  int bad = 0;
  const auto xl = lines(x.shape(), ax);
  for (size_t l = 0; l < xl.size() && bad < 5; ++l) {
    const auto& line = xl[l];
    std::vector<double> v(line.size());
    for (size_t j = 0; j < line.size(); ++j) v[j] = xv[line[j]];
    const auto want = ref_partition(v, k);
    for (size_t j = 0; j < line.size(); ++j) {
      const double w = v[want[j]];
      bool ok = same_value(pv[line[j]], w) && av[line[j]] == want[j];
      if (j >= static_cast<size_t>(k)) ok = ok && same_value(tv[tlines[l][j - k]], w);
      if (!ok && bad++ < 5) {
        ADD_FAILURE() << "line " << l << " position " << j << ": partition " << pv[line[j]]
                      << ", argpartition " << av[line[j]] << " (want " << w << " from " << want[j]
                      << ")";
      }
    }
  }
}

double median_ref(std::vector<double> v) {
  for (double e : v)
    if (std::isnan(e)) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] == v[n / 2] ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

template <typename E, typename F>
void expect_throws(F fn, const std::string& tag) {
  test::expect_throw_with<E>(fn, {tag});
}

}  // namespace

// ---------------------------------------------------------------- partition, argpartition, topk

TEST(Partition, EveryRealDtypeAxisAndKth) {
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;
    array x = tied_values({4, 5, 30}, dt, true);
    for (int axis : {0, 1, 2, -1}) {
      const int n = x.shape()[axis < 0 ? 2 : axis];
      for (int kth : {0, n - 1, n / 2, -1, -n}) expect_partition(x, axis, kth);
    }
    expect_partition(test::random_array({7, 9}, dt, is_unsigned(dt) ? 0 : -100, 100), 1, 3);
  }
}

TEST(Partition, NaNLastAndEqualsInOrder) {
  for (Dtype dt : {float16, bfloat16, float32, float64}) {
    std::vector<double> v = {3, kNaN, -1, 0.0, -0.0, kNaN, -0.0, 2, 0.0, -5};
    array x(v.begin(), {10}, dt);
    for (int kth = 0; kth < 10; ++kth) expect_partition(x, 0, kth);
    // The zeros are one run of equals: they keep their order around the pivot 0.
    EXPECT_EQ(test::to_double(argpartition(x, 3)),
              (std::vector<double>{2, 9, 3, 4, 6, 8, 0, 1, 5, 7}));
    auto t = test::to_double(topk(x, 2));
    EXPECT_TRUE(std::isnan(t[0]) && std::isnan(t[1]));
  }
}

TEST(Partition, FlattenedAndScalars) {
  array x = tied_values({3, 4, 5}, float32);
  EXPECT_EQ(partition(x, 7).shape(), Shape{60});
  EXPECT_EQ(argpartition(x, -7).shape(), Shape{60});
  EXPECT_EQ(topk(x, 5).shape(), Shape{5});
  expect_partition(reshape(x, {-1}), 0, 7);
  EXPECT_EQ(test::to_double(partition(x, 7)), test::to_double(partition(reshape(x, {-1}), 7, 0)));
  EXPECT_EQ(test::to_double(topk(x, 5)), test::to_double(topk(reshape(x, {-1}), 5, 0)));
  array s(2.5f);
  EXPECT_EQ(test::to_double(partition(s, 0)), (std::vector<double>{2.5}));
  EXPECT_EQ(test::to_double(argpartition(s, 0)), (std::vector<double>{0}));
  EXPECT_EQ(test::to_double(topk(s, 1)), (std::vector<double>{2.5}));
}

TEST(Partition, NonContiguousAndLongRows) {
  array base = test::random_array({6, 8, 40}, float32);
  for (const array& v :
       {transpose(base, {2, 0, 1}), slice(base, {5, 1, 0}, {-7, 8, 40}, {-2, 3, 3}),
        broadcast_to(slice(base, {0, 0, 0}, {6, 1, 40}), {6, 7, 40})}) {
    for (int axis : {0, 1, 2}) expect_partition(v, axis, v.shape()[axis] / 2);
  }
  // Long rows: on the GPU, few rows spread over many blocks each.
  array longrows = test::random_array({2, 70001}, float32, -1000, 1000);
  expect_partition(longrows, 1, 35000);
  expect_partition(astype(longrows, int32), 1, 3);
  expect_partition(astype(longrows, int32), 1, 69990);
}

TEST(TopK, LargestInPartitionOrder) {
  for (Dtype dt : {float32, int32, uint8, float64, bfloat16}) {
    array x = tied_values({6, 33}, dt);
    auto xv = test::to_double(x);
    for (int k : {0, 1, 5, 33}) {
      array t = topk(x, k, -1);
      ASSERT_EQ(t.shape(), (Shape{6, k}));
      auto tv = test::to_double(t);
      for (int r = 0; r < 6; ++r) {
        std::vector<double> row(xv.begin() + r * 33, xv.begin() + (r + 1) * 33);
        std::vector<double> got(tv.begin() + r * k, tv.begin() + (r + 1) * k);
        std::sort(row.rbegin(), row.rend());
        std::sort(got.rbegin(), got.rend());
        EXPECT_EQ(got, std::vector<double>(row.begin(), row.begin() + k)) << "row " << r;
      }
    }
    expect_partition(x, 1, 33 - 5);
  }
  // k along a leading axis.
  array y = test::random_array({10, 3}, float32);
  array t = topk(y, 2, 0);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  expect_partition(y, 0, 8);
}

TEST(Partition, EmptyArrays) {
  EXPECT_EQ(partition(zeros({0, 5}), 2, -1).shape(), (Shape{0, 5}));
  EXPECT_EQ(argpartition(zeros({0, 5}), 4, 1).shape(), (Shape{0, 5}));
  EXPECT_EQ(topk(zeros({0, 5}), 2, -1).shape(), (Shape{0, 2}));
  array t = topk(zeros({3, 0}), 0, -1);
  t.eval();
  EXPECT_EQ(t.shape(), (Shape{3, 0}));
  EXPECT_EQ(topk(test::random_array({3, 4}, float32), 0, -1).shape(), (Shape{3, 0}));
  EXPECT_EQ(topk(zeros({0, 5}), 0).shape(), Shape{0});
  eval(partition(zeros({0, 5}), 2, 1), argpartition(zeros({0, 5}), 4, 1));
}

// ---------------------------------------------------------------- median

TEST(Median, EveryDtypeAndAxisSet) {
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;
    array x = dt == bool_ ? test::random_array({4, 5, 6}, bool_) : tied_values({4, 5, 6}, dt, true);
    const Dtype want_dt = is_floating_point(dt) ? dt : float32;
    auto xv = test::to_double(x);
    struct Case {
      std::vector<int> axes;
      Shape out;
    };
    for (const Case& c : {Case{{0, 1, 2}, {}}, Case{{1}, {4, 6}}, Case{{-1}, {4, 5}},
                          Case{{0, 2}, {5}}, Case{{2, 0}, {5}}}) {
      SCOPED_TRACE(msg(dt, " axes ", shape_str(Shape(c.axes.begin(), c.axes.end()))));
      array m = median(x, c.axes);
      EXPECT_EQ(m.dtype(), want_dt);
      // Reference: group the elements by their kept coordinates.
      std::vector<bool> reduced(3, false);
      for (int a : c.axes) reduced[a < 0 ? a + 3 : a] = true;
      std::map<std::vector<int>, std::vector<double>> groups;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 5; ++j)
          for (int k = 0; k < 6; ++k) {
            std::vector<int> key;
            int idx[3] = {i, j, k};
            for (int d = 0; d < 3; ++d)
              if (!reduced[d]) key.push_back(idx[d]);
            groups[key].push_back(xv[(i * 5 + j) * 6 + k]);
          }
      std::vector<double> want;
      for (auto& [key, vals] : groups) want.push_back(median_ref(vals));
      test::expect_allclose(m, c.out, want);
      array kd = median(x, c.axes, true);
      Shape kshape = {4, 5, 6};
      for (int d = 0; d < 3; ++d)
        if (reduced[d]) kshape[d] = 1;
      test::expect_allclose(kd, kshape, want);
    }
    test::expect_allclose(median(x), {}, {median_ref(xv)});
    test::expect_allclose(median(x, 1, true), {4, 1, 6}, test::to_double(median(x, 1)));
  }
}

TEST(Median, NaNsInfinitiesAndScalars) {
  std::vector<double> v = {1, kNaN, 3, 1, 2, 3, 1, INFINITY, -INFINITY, 3};
  array x(v.begin(), {2, 5}, float32);
  test::expect_allclose(median(x, 1), {2}, {kNaN, 3.0});  // rows {1,nan,3,1,2}, {3,1,inf,-inf,3}
  test::expect_allclose(median(array({1.0f, INFINITY, INFINITY, 3.0f})), {}, {INFINITY});
  test::expect_allclose(median(array({1.0f, INFINITY, -INFINITY, 3.0f})), {}, {2.0});
  test::expect_allclose(median(array(3.5f)), {}, {3.5});
  test::expect_allclose(median(array({1, 2, 3, 4})), {}, {2.5});
  EXPECT_EQ(median(array({1, 2, 3, 4})).dtype(), float32);
  test::expect_allclose(median(zeros({2, 0}), 0), {0}, {});
  // float16 averages without overflowing: (20000 + 40000) / 2.
  test::expect_allclose(median(array({10000.0, 20000.0, 40000.0, 50000.0}, float16)), {},
                        {30000.0});
}

TEST(Median, NonContiguousAndLongRows) {
  array base = test::random_array({6, 8, 41}, float64);
  for (const array& v :
       {transpose(base, {2, 0, 1}), slice(base, {5, 1, 0}, {-7, 8, 41}, {-2, 3, 3}),
        broadcast_to(slice(base, {0, 0, 0}, {6, 1, 41}), {6, 7, 41})}) {
    auto xv = test::to_double(v);
    const auto ls = lines(v.shape(), 1);
    std::vector<double> want;
    for (const auto& line : ls) {
      std::vector<double> g;
      for (auto i : line) g.push_back(xv[i]);
      want.push_back(median_ref(g));
    }
    Shape out = v.shape();
    out.erase(out.begin() + 1);
    test::expect_allclose(median(v, 1), out, want);
  }
  for (int n : {200000, 200001}) {
    array x = test::random_array({n}, float32, -50, 50);
    test::expect_allclose(median(x), {}, {median_ref(test::to_double(x))});
    array xi = astype(x, int32);
    test::expect_allclose(median(xi), {}, {median_ref(test::to_double(xi))});
  }
}

// ---------------------------------------------------------------- searchsorted

TEST(SearchSorted, BothSidesEveryDtype) {
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;
    array seq = sort(reshape(tied_values({40}, dt, true), {-1}));
    array v = tied_values({3, 7}, dt, true);
    auto sv = test::to_double(seq), vv = test::to_double(v);
    for (const char* side : {"left", "right"}) {
      SCOPED_TRACE(msg(dt, " ", side));
      array r = searchsorted(seq, v, side);
      EXPECT_EQ(r.dtype(), uint32);
      std::vector<double> want;
      for (double x : vv) {
        auto it = std::string(side) == "left"
                      ? std::lower_bound(sv.begin(), sv.end(), x, less_nan_last)
                      : std::upper_bound(sv.begin(), sv.end(), x, less_nan_last);
        want.push_back(static_cast<double>(it - sv.begin()));
      }
      test::expect_allclose(r, {3, 7}, want, 0);
    }
  }
}

TEST(SearchSorted, PromotionViewsAndEdges) {
  // MLX's examples, and comparisons in the promoted dtype.
  array a({1, 2, 2, 4});
  array q({0, 2, 3, 5});
  test::expect_allclose(searchsorted(a, q), {4}, {0, 1, 3, 4}, 0);
  test::expect_allclose(searchsorted(a, q, "right"), {4}, {0, 3, 3, 4}, 0);
  test::expect_allclose(searchsorted(array({1, 2, 3}, uint8), array({-1, 300})), {2}, {0, 3}, 0);
  test::expect_allclose(searchsorted(array({1, 2, 3}), array({1.5f, 2.5f})), {2}, {1, 2}, 0);
  test::expect_allclose(searchsorted(array({1.0f, 2.0f, NAN}), array({0.0f, 2.0f, 5.0f, NAN})), {4},
                        {0, 1, 2, 2}, 0);
  test::expect_allclose(
      searchsorted(array({1.0f, 2.0f, NAN}), array({0.0f, 2.0f, 5.0f, NAN}), "right"), {4},
      {0, 2, 2, 3}, 0);
  test::expect_allclose(searchsorted(array({-0.0f, 0.0f}), array({0.0f, -0.0f})), {2}, {0, 0}, 0);
  test::expect_allclose(searchsorted(a, array(3)), {}, {3}, 0);
  test::expect_allclose(searchsorted(zeros({0}), array({1.0f, 2.0f})), {2}, {0, 0}, 0);
  EXPECT_EQ(searchsorted(a, zeros({0, 2}, int32)).shape(), (Shape{0, 2}));
  // Strided sequence, transposed values.
  array seq = slice(arange(0, 40, 1, float32), {0}, {40}, {3});
  array vals = transpose(test::random_array({4, 5}, float32, -2, 42));
  auto sv = test::to_double(seq), vv = test::to_double(vals);
  std::vector<double> want;
  for (double x : vv) want.push_back(std::lower_bound(sv.begin(), sv.end(), x) - sv.begin());
  test::expect_allclose(searchsorted(seq, vals), {5, 4}, want, 0);
}

// ---------------------------------------------------------------- unique

namespace {

/** Reference unique of `v` (sorted groups, NaNs apart) in `size` entries. */
struct UniqueRef {
  std::vector<double> values, index, inverse, counts;
};

UniqueRef unique_ref(const std::vector<double>& v, int size, std::optional<double> fill) {
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t p, int64_t q) { return less_nan_last(v[p], v[q]); });
  UniqueRef r;
  r.inverse.assign(v.size(), 0);
  int64_t g = -1;
  std::vector<double> vals, idx, cnt;
  for (size_t i = 0; i < order.size(); ++i) {
    const double x = v[order[i]];
    if (i == 0 || less_nan_last(v[order[i - 1]], x) || std::isnan(x)) {
      ++g;
      vals.push_back(x);
      idx.push_back(order[i]);
      cnt.push_back(0);
    }
    cnt[g] += 1;
    r.inverse[order[i]] = size == 0 ? 0 : std::min<int64_t>(g, size - 1);
  }
  for (int e = 0; e < size; ++e) {
    if (e < static_cast<int>(vals.size())) {
      r.values.push_back(vals[e]);
      r.index.push_back(idx[e]);
      r.counts.push_back(cnt[e]);
    } else {
      r.values.push_back(fill ? *fill : vals[0]);
      r.index.push_back(idx.empty() ? 0 : idx[0]);
      r.counts.push_back(0);
    }
  }
  return r;
}

void expect_unique(const array& x, int size, std::optional<double> fill) {
  SCOPED_TRACE(
      msg(x.dtype(), " ", shape_str(x.shape()), " size ", size, fill ? " fill" : " no fill"));
  std::optional<array> f;
  if (fill) f = array(*fill);
  auto out = unique(x, size, true, true, true, f);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].dtype(), x.dtype());
  EXPECT_EQ(out[1].dtype(), uint32);
  EXPECT_EQ(out[2].dtype(), uint32);
  EXPECT_EQ(out[3].dtype(), int32);
  EXPECT_EQ(out[2].shape(), x.shape());
  std::optional<double> fill_in_dtype;
  if (fill) fill_in_dtype = test::to_double(astype(*f, x.dtype()))[0];
  UniqueRef want = unique_ref(test::to_double(x), size, fill_in_dtype);
  auto got = test::to_double(out[0]);
  ASSERT_EQ(got.size(), want.values.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(same_value(got[i], want.values[i]))
        << "entry " << i << ": " << got[i] << ", want " << want.values[i];
  }
  EXPECT_EQ(test::to_double(out[1]), want.index);
  EXPECT_EQ(test::to_double(out[2]), want.inverse);
  EXPECT_EQ(test::to_double(out[3]), want.counts);
}

}  // namespace

TEST(Unique, EveryDtypeSizeAndFill) {
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;
    array x = tied_values({5, 9}, dt, true);
    for (int size : {0, 1, 4, 9, 60}) {
      expect_unique(x, size, std::nullopt);
      expect_unique(x, size, 1.0);
    }
  }
  expect_unique(transpose(tied_values({5, 9}, int32)), 7, std::nullopt);
  expect_unique(broadcast_to(tied_values({1, 9}, float32), {4, 9}), 7, -1.0);
  expect_unique(test::random_array({3000}, float32, -100, 100), 3000, std::nullopt);
}

TEST(Unique, ReturnsWhatIsAskedInMlxOrder) {
  // MLX's example.
  array a({2, 1, 2, 3, 1});
  test::expect_allclose(unique(a, 3)[0], {3}, {1, 2, 3}, 0);
  test::expect_allclose(unique(a, 5)[0], {5}, {1, 2, 3, 1, 1}, 0);
  auto r = unique(a, 4, true, true, true, array(0));
  ASSERT_EQ(r.size(), 4u);
  test::expect_allclose(r[0], {4}, {1, 2, 3, 0}, 0);
  test::expect_allclose(r[1], {4}, {1, 0, 3, 1}, 0);
  test::expect_allclose(r[2], {5}, {1, 0, 1, 2, 0}, 0);
  test::expect_allclose(r[3], {4}, {2, 2, 1, 0}, 0);
  auto inv = unique(a, 2, false, true);
  ASSERT_EQ(inv.size(), 2u);
  test::expect_allclose(inv[1], {5}, {1, 0, 1, 1, 0}, 0);
  auto cnt = unique(a, 2, false, false, true);
  test::expect_allclose(cnt[1], {2}, {2, 2}, 0);
  // NaNs are apart, -0.0 and 0.0 together (the first one met in sorted order stays).
  array f({1.0f, NAN, NAN, 1.0f, -0.0f, 0.0f});
  auto u = unique(f, 5, true, true, true);
  auto uv = test::to_double(u[0]);
  EXPECT_TRUE(same_value(uv[0], -0.0));
  EXPECT_TRUE(std::isnan(uv[2]) && std::isnan(uv[3]));
  test::expect_allclose(u[3], {5}, {2, 2, 1, 1, 0}, 0);
  // Empty inputs.
  auto e = unique(zeros({0}, int32), 2, true, true, true, array(7));
  test::expect_allclose(e[0], {2}, {7, 7}, 0);
  test::expect_allclose(e[1], {2}, {0, 0}, 0);
  EXPECT_EQ(e[2].shape(), Shape{0});
  test::expect_allclose(e[3], {2}, {0, 0}, 0);
  EXPECT_EQ(unique(zeros({0}), 0)[0].shape(), Shape{0});
  auto z = unique(a, 0, true, true, true);
  test::expect_allclose(z[2], {5}, {0, 0, 0, 0, 0}, 0);
  // bool, and a fill cast to the dtype.
  test::expect_allclose(unique(array({true, false, true}), 3)[0], {3}, {0, 1, 0}, 0);
  test::expect_allclose(unique(array({2, 1}), 3, false, false, false, array(9.5f))[0], {3},
                        {1, 2, 9}, 0);
}

// ---------------------------------------------------------------- errors

TEST(SortOps, ErrorsCarryMlxTypesAndTags) {
  array x = zeros({2, 3});
  expect_throws<std::invalid_argument>([&] { topk(x, 4, -1); }, "[topk]");
  expect_throws<std::invalid_argument>([&] { topk(x, 7); }, "[topk]");
  expect_throws<std::invalid_argument>([&] { topk(x, -1, 0); }, "[topk]");
  expect_throws<std::out_of_range>([&] { topk(x, 1, 2); }, "[topk]");
  expect_throws<std::out_of_range>([&] { topk(array(1.0f), 1, -1); }, "[topk]");
  expect_throws<std::invalid_argument>([&] { partition(x, 3, -1); }, "[partition]");
  expect_throws<std::invalid_argument>([&] { partition(x, 6); }, "[partition]");
  expect_throws<std::invalid_argument>([&] { partition(x, -4, 1); }, "[partition]");
  expect_throws<std::invalid_argument>([&] { partition(zeros({2, 0}), 0, -1); }, "[partition]");
  expect_throws<std::out_of_range>([&] { partition(x, 0, -3); }, "[partition]");
  expect_throws<std::invalid_argument>([&] { argpartition(x, 2, 0); }, "[argpartition]");
  expect_throws<std::out_of_range>([&] { argpartition(x, 0, 5); }, "[argpartition]");
  expect_throws<std::invalid_argument>([&] { median(zeros({0})); }, "[median]");
  expect_throws<std::invalid_argument>([&] { median(zeros({2, 0}), 1); }, "[median]");
  expect_throws<std::invalid_argument>([&] { median(x, std::vector<int>{0, -2}); }, "[median]");
  expect_throws<std::invalid_argument>([&] { median(x, std::vector<int>{}); }, "[median]");
  expect_throws<std::out_of_range>([&] { median(x, 2); }, "[median]");
  expect_throws<std::invalid_argument>([&] { searchsorted(x, x); }, "[searchsorted]");
  expect_throws<std::invalid_argument>([&] { searchsorted(array(1), x); }, "[searchsorted]");
  expect_throws<std::invalid_argument>([&] { searchsorted(zeros({3}), x, "middle"); },
                                       "[searchsorted]");
  expect_throws<std::invalid_argument>([&] { unique(x, -1); }, "[unique]");
  expect_throws<std::invalid_argument>([&] { unique(x, 2, false, false, false, zeros({2})); },
                                       "[unique]");
  expect_throws<std::invalid_argument>([&] { unique(zeros({0}), 2); }, "[unique]");
  // The process stays usable.
  test::expect_allclose(topk(array({1.0f, 3.0f, 2.0f}), 1), {1}, {3});
}

// ---------------------------------------------------------------- gradients (MLX's values)

TEST(SortOpsGrad, TopKRoutesToTheSelectedElements) {
  array a({1.0f, 2.0f, 6.0f, 4.0f, 5.0f, 9.0f, 5.0f, 6.0f, 7.0f, 8.0f}, {2, 5});
  auto g = vjp([](const array& x) { return topk(x, 2, -1); }, a, ones({2, 2})).second;
  test::expect_allclose(g, {2, 5}, {0, 0, 1, 0, 1, 1, 0, 0, 0, 1}, 0);
  // Of tied largest values, the last one is selected (as MLX).
  auto t =
      vjp([](const array& x) { return topk(x, 1); }, array({5.0f, 1.0f, 5.0f}), ones({1})).second;
  test::expect_allclose(t, {3}, {0, 0, 1}, 0);
  auto p = grad([](const array& x) { return sum(multiply(partition(x, 1), arange(4, float32))); })(
      array({1.0f, 5.0f, 3.0f, 2.0f}));
  test::expect_allclose(p, {4}, {0, 2, 3, 1}, 0);  // the stable partition [1, 2, 5, 3]
  auto j =
      jvp([](const array& x) { return topk(x, 2, -1); }, a, reshape(arange(10, float32), {2, 5}))
          .second;
  test::expect_allclose(j, {2, 2}, {4, 2, 9, 5}, 0);  // values [5, 6], [8, 9]: equal, then larger
}

TEST(SortOpsGrad, MedianSplitsBetweenTheMiddleElements) {
  auto g = [](std::vector<float> v) {
    array x(v.begin(), {static_cast<int>(v.size())});
    return test::to_double(grad([](const array& y) { return median(y); })(x));
  };
  EXPECT_EQ(g({1, 3, 2, 4}), (std::vector<double>{0, 0.5, 0.5, 0}));
  EXPECT_EQ(g({2, 2, 2, 2}), (std::vector<double>{0, 0.5, 0.5, 0}));
  EXPECT_EQ(g({2, 2, 2}), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(g({5, 1, NAN}), (std::vector<double>{0, 0, 0}));
  auto rows = grad([](const array& y) { return sum(median(y, 1)); })(
      array({1.0f, 5.0f, 3.0f, 2.0f, 4.0f, 4.0f, 0.0f, 9.0f}, {2, 4}));
  test::expect_allclose(rows, {2, 4}, {0, 0, 0.5, 0.5, 0.5, 0.5, 0, 0}, 0);
  auto t = jvp([](const array& y) { return median(y, 1); },
               array({1.0f, 5.0f, 3.0f, 2.0f, 4.0f, 4.0f, 0.0f, 9.0f}, {2, 4}),
               reshape(arange(8, float32), {2, 4}))
               .second;
  test::expect_allclose(t, {2}, {2.5, 4.5}, 0);
}

TEST(SortOpsGrad, UniqueValuesComeFromFirstOccurrences) {
  array x({3.0f, 1.0f, 3.0f, 2.0f});
  auto g = [&](int size, std::optional<array> fill) {
    return test::to_double(grad(
        [=](const array& y) { return sum(unique(y, size, false, false, false, fill)[0]); })(x));
  };
  EXPECT_EQ(g(5, std::nullopt), (std::vector<double>{1, 3, 0, 1}));
  EXPECT_EQ(g(5, array(7.0f)), (std::vector<double>{1, 1, 0, 1}));
  EXPECT_EQ(g(2, std::nullopt), (std::vector<double>{0, 1, 0, 1}));
  // The fill value gets the padding's cotangents.
  auto df = grad([&](const array& f) { return sum(unique(x, 6, false, false, false, f)[0]); })(
      array(7.0f));
  test::expect_allclose(df, {}, {3}, 0);
}

TEST(SortOpsVmap, SearchOverValuesAndUniquePerRow) {
  array seq = sort(test::random_array({20}, float32));
  array v = test::random_array({4, 6}, float32);
  for (const char* side : {"left", "right"}) {
    array y = vmap([side, seq](const array& w) { return searchsorted(seq, w, side); }, 1)(v);
    test::expect_allclose(y, {6, 4}, test::to_double(transpose(searchsorted(seq, v, side))), 0);
  }
  // A batch of sequences is refused, as MLX does.
  std::function<array(const array&, const array&)> f = [](const array& q, const array& w) {
    return searchsorted(q, w);
  };
  EXPECT_THROW(vmap(f)(sort(test::random_array({4, 20}, float32), -1), v), std::invalid_argument);
  array x = tied_values({3, 12}, int32);
  array fills({-1, -2, -3});
  auto vf = vmap(ArrayFn([](const std::vector<array>& in) {
                   return unique(in[0], 8, true, true, true, in[1]);
                 }),
                 {0, 0});
  auto outs = vf({x, fills});
  for (int b = 0; b < 3; ++b) {
    auto want =
        unique(squeeze(slice(x, {b, 0}, {b + 1, 12}), 0), 8, true, true, true, array(-1 - b));
    for (int k = 0; k < 4; ++k) {
      const Shape shp = outs[k].shape();
      array got = squeeze(slice(outs[k], {b, 0}, {b + 1, shp[1]}), 0);
      EXPECT_EQ(test::to_double(got), test::to_double(want[k])) << "batch " << b << " output " << k;
    }
  }
}

// ---------------------------------------------------------------- complex (MLX's order)

TEST(SortOps, ComplexOrdersByRealThenImaginary) {
  using cf = std::complex<float>;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto lnl = [](float a, float b) { return !std::isnan(a) && (std::isnan(b) || a < b); };
  auto less = [&](cf a, cf b) {
    return lnl(a.real(), b.real()) || (!lnl(b.real(), a.real()) && lnl(a.imag(), b.imag()));
  };
  // Few real parts, so that imaginary parts decide; NaNs in either part.
  std::vector<cf> v(60);
  for (auto& z : v) {
    z = cf(static_cast<float>(test::rng()() % 3), static_cast<float>(test::rng()() % 5) - 2);
  }
  v[7] = cf(nan, 1);
  v[19] = cf(1, nan);
  array x(v.begin(), {3, 20}, complex64);
  auto rows = [&](const array& a) {
    auto c = test::to_complex(a);
    return std::vector<cf>(c.begin(), c.end());
  };
  for (int kth : {0, 7, 19}) {
    auto p = rows(partition(x, kth, -1));
    auto idx = test::to_double(argpartition(x, kth, -1));
    for (int r = 0; r < 3; ++r) {
      std::vector<cf> line(v.begin() + r * 20, v.begin() + (r + 1) * 20), sorted = line;
      std::stable_sort(sorted.begin(), sorted.end(), less);
      const cf pivot = p[r * 20 + kth];
      EXPECT_FALSE(less(pivot, sorted[kth]) || less(sorted[kth], pivot)) << "row " << r;
      for (int j = 0; j < 20; ++j) {
        const cf e = p[r * 20 + j];
        if (j < kth) {
          EXPECT_FALSE(less(pivot, e)) << "row " << r << " position " << j;
        }
        if (j > kth) {
          EXPECT_FALSE(less(e, pivot)) << "row " << r << " position " << j;
        }
        const cf src = line[static_cast<int>(idx[r * 20 + j])];
        EXPECT_TRUE(src == e || (std::isnan(src.real()) || std::isnan(src.imag())))
            << "argpartition row " << r;
      }
    }
  }
  // MLX's examples.
  std::vector<cf> m = {{1, 2}, {3, 0}, {2, 5}};
  EXPECT_EQ(rows(median(array(m.begin(), {3}, complex64))), (std::vector<cf>{{2, 5}}));
  m.push_back({0, 0});
  EXPECT_EQ(rows(median(array(m.begin(), {4}, complex64))), (std::vector<cf>{{1.5f, 3.5f}}));
  EXPECT_EQ(median(array(m.begin(), {4}, complex64)).dtype(), complex64);
  std::vector<cf> withnan = {{1, 0}, {nan, 0}, {0, 0}};
  EXPECT_TRUE(std::isnan(rows(median(array(withnan.begin(), {3}, complex64)))[0].real()));
  auto t = rows(topk(array(m.begin(), {4}, complex64), 2));
  std::sort(t.begin(), t.end(), less);
  EXPECT_EQ(t, (std::vector<cf>{{2, 5}, {3, 0}}));
  std::vector<cf> u = {{1, 2}, {3, 0}, {1, 2}};
  EXPECT_EQ(rows(unique(array(u.begin(), {3}, complex64), 3)[0]),
            (std::vector<cf>{{1, 2}, {3, 0}, {1, 2}}));
  std::vector<cf> seq = {{1, 2}, {3, 0}};
  std::vector<cf> q = {{2, 0}, {1, 2}, {1, 3}};
  test::expect_allclose(
      searchsorted(array(seq.begin(), {2}, complex64), array(q.begin(), {3}, complex64)), {3},
      {1, 0, 1}, 0);
}

// ---------------------------------------------------------------- the GPU equals the CPU

TEST(SortOps, GpuMatchesCpuExactly) {
#ifdef KILN_WITH_CUDA
  if (!gpu::is_available()) GTEST_SKIP() << "no GPU: " << gpu::unavailable_reason();
#else
  GTEST_SKIP() << "kiln was built without CUDA";
#endif
  auto same = [](const array& g, const array& c, const std::string& what) {
    ASSERT_EQ(g.shape(), c.shape()) << what;
    auto gv = test::to_double(g), cv = test::to_double(c);
    int bad = 0;
    for (size_t i = 0; i < gv.size() && bad < 5; ++i) {
      if (!(std::isnan(cv[i]) ? std::isnan(gv[i]) : gv[i] == cv[i])) {
        ++bad;
        ADD_FAILURE() << what << " element " << i << ": gpu " << gv[i] << ", cpu " << cv[i];
      }
    }
  };
  struct Shaped {
    Shape shape;
    Dtype dtype;
  };
  // One long row (many blocks per row), many medium rows, many short rows, 64-bit keys.
  for (const Shaped& c :
       {Shaped{{1 << 20}, float32}, Shaped{{300, 4099}, float32}, Shaped{{5000, 37}, int32},
        Shaped{{64, 5000}, float64}, Shaped{{3, 100000}, float16}, Shaped{{40, 3000}, uint8},
        Shaped{{20, 3000}, complex64}}) {
    SCOPED_TRACE(msg(c.dtype, " ", shape_str(c.shape)));
    array x = astype(test::random_array(c.shape, float32, -300, 300), c.dtype);
    x.eval();
    const int n = c.shape.back();
    auto both = [&](auto fn, const std::string& what) {
      array g = fn(Device::gpu), cpu = fn(Device::cpu);
      same(g, cpu, what);
    };
    both([&](Device d) { return partition(x, n / 3, -1, d); }, "partition");
    both([&](Device d) { return argpartition(x, n - 2, -1, d); }, "argpartition");
    both([&](Device d) { return topk(x, std::min(n, 8), -1, d); }, "topk");
    both([&](Device d) { return topk(x, n / 2, -1, d); }, "topk half");
    both([&](Device d) { return median(x, -1, false, d); }, "median");
    both([&](Device d) { return argsort(x, -1, d); }, "argsort");
    both([&](Device d) { return sort(x, -1, d); }, "sort");
    both([&](Device d) { return argsort(x, 0, d); }, "argsort axis 0");
    both([&](Device d) { return unique(x, 1000, true, true, true, std::nullopt, d)[0]; },
         "unique values");
    both([&](Device d) { return unique(x, 1000, true, true, true, std::nullopt, d)[2]; },
         "unique inverse");
    both([&](Device d) { return unique(x, 1000, true, true, true, std::nullopt, d)[3]; },
         "unique counts");
    array seq = sort(reshape(x, {-1}), Device::cpu);
    both([&](Device d) { return searchsorted(seq, x, "left", d); }, "searchsorted");
    both([&](Device d) { return searchsorted(seq, x, "right", d); }, "searchsorted right");
  }
}
