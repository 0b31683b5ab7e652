// Sorting: sort and argsort along any axis (and flattened), stable, NaN last as NumPy.
// Checked against std::stable_sort of each line in float64 on every real dtype, with many
// ties (stability is visible in argsort and in the order of -0.0 and 0.0), NaNs, transposed,
// strided and broadcast inputs, lines split across threads, empty arrays and each argument
// check. The sort's gradient must route each cotangent back to the element it came from.
#include <cmath>
#include <limits>
#include <numeric>

#include "kiln/primitives.h"
#include "test_utils.h"

using namespace kiln;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

bool less_nan_last(double a, double b) {
  return !std::isnan(a) && (std::isnan(b) || a < b);
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

/** Checks sort and argsort of `x` along `axis` against a stable float64 sort. */
void expect_sorted(const array& x, int axis) {
  SCOPED_TRACE(msg(x.dtype(), " ", shape_str(x.shape()), " axis ", axis));
  array s = sort(x, axis), a = argsort(x, axis);
  EXPECT_EQ(s.dtype(), x.dtype());
  EXPECT_EQ(a.dtype(), uint32);
  ASSERT_EQ(s.shape(), x.shape());
  ASSERT_EQ(a.shape(), x.shape());
  auto xv = test::to_double(x), sv = test::to_double(s), av = test::to_double(a);
  int bad = 0;
  for (const auto& line : lines(x.shape(), axis)) {
    std::vector<int64_t> order(line.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t p, int64_t q) { return less_nan_last(xv[line[p]], xv[line[q]]); });
    for (size_t k = 0; k < line.size() && bad < 5; ++k) {
      double want = xv[line[order[k]]], got = sv[line[k]];
      bool same = std::isnan(want) ? std::isnan(got)
                                   : got == want && std::signbit(got) == std::signbit(want);
      if (!same || av[line[k]] != order[k]) {
        ++bad;
        ADD_FAILURE() << "position " << k << ": sort " << got << " (want " << want << "), argsort "
                      << av[line[k]] << " (want " << order[k] << ")";
      }
    }
  }
}

}  // namespace

TEST(Sort, EveryRealDtypeAndAxis) {
  for (Dtype dt : all_dtypes) {
    if (dt == complex64) continue;
    // Few distinct values: ties everywhere, so stability shows in argsort.
    array x = is_inexact(dt) ? astype(test::random_array({4, 5, 30}, int32, -4, 4), dt)
                             : test::random_array({4, 5, 30}, dt, is_unsigned(dt) ? 0 : -4, 4);
    for (int axis : {0, 1, 2, -1}) expect_sorted(x, axis);
    expect_sorted(test::random_array({7, 9}, dt, is_unsigned(dt) ? 0 : -100, 100), 1);
  }
}

TEST(Sort, NaNLastAndSignedZerosInOrder) {
  for (Dtype dt : {float16, bfloat16, float32, float64}) {
    std::vector<double> v = {3, kNaN, -1, 0.0, -0.0, kNaN, -0.0, 2, 0.0, -5};
    array x(v.begin(), {static_cast<int>(v.size())}, dt);
    expect_sorted(x, 0);
    auto s = test::to_double(sort(x));
    EXPECT_TRUE(std::isnan(s[8]) && std::isnan(s[9]));
    EXPECT_EQ(test::to_double(argsort(x)), (std::vector<double>{9, 2, 3, 4, 6, 8, 7, 0, 1, 5}));
  }
}

TEST(Sort, FlattenedOverloads) {
  array x = test::random_array({3, 4, 5}, float32);
  array s = sort(x), a = argsort(x);
  EXPECT_EQ(s.shape(), Shape{60});
  EXPECT_EQ(a.shape(), Shape{60});
  array flat = reshape(x, {-1});
  EXPECT_EQ(test::to_double(s), test::to_double(sort(flat, 0)));
  EXPECT_EQ(test::to_double(a), test::to_double(argsort(flat, 0)));
  EXPECT_EQ(sort(array(2.0f)).shape(), Shape{1});
}

TEST(Sort, NonContiguousAndLargeInputs) {
  array base = test::random_array({6, 8, 10}, float32);
  for (const array& v :
       {transpose(base, {2, 0, 1}), slice(base, {5, 1, 0}, {-7, 8, 10}, {-2, 3, 3}),
        broadcast_to(slice(base, {0, 0, 0}, {6, 1, 10}), {6, 7, 10})}) {
    for (int axis : {0, 1, 2}) expect_sorted(v, axis);
  }
  expect_sorted(test::random_array({4, 50000}, float32), 1);  // long lines on several threads
  expect_sorted(test::random_array({2000, 40}, int16, -1000, 1000), 0);  // many strided lines
}

TEST(Sort, EmptyArraysAndErrors) {
  for (const Shape& s : {Shape{0, 3}, Shape{3, 0}, Shape{0}}) {
    for (int axis = 0; axis < static_cast<int>(s.size()); ++axis) {
      array y = sort(zeros(s), axis), a = argsort(zeros(s), axis);
      eval(y, a);
      EXPECT_EQ(y.shape(), s);
      EXPECT_EQ(a.shape(), s);
    }
  }
  auto expect_tag = [](auto fn, const std::string& tag) {
    try {
      fn();
      ADD_FAILURE() << "expected " << tag;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(tag), std::string::npos) << e.what();
    }
  };
  array x = zeros({2, 3});
  expect_tag([&] { sort(x, 2); }, "[sort]");
  expect_tag([&] { argsort(x, -3); }, "[argsort]");
}

// Complex values sort by real part, then imaginary part, stably (NumPy, MLX), NaN last.
TEST(Sort, ComplexOrdersByRealThenImag) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  array re = astype(test::random_array({4, 9}, int32, -2, 3), float32);
  array im = astype(test::random_array({4, 9}, int32, -2, 3), float32);
  array z = add(astype(re, complex64), multiply(astype(im, complex64), array(complex64_t(0, 1))));
  z = where(equal(re, array(2.0f)), array(complex64_t(nan, 1)), z);
  z.eval();
  array idx = argsort(z, 1), sorted = sort(z, 1);
  eval(idx, sorted);
  const complex64_t* v = z.data<complex64_t>();
  auto lnl = [](float a, float b) { return !std::isnan(a) && (std::isnan(b) || a < b); };
  for (int r = 0; r < 4; ++r) {
    std::vector<uint32_t> ref(9);
    std::iota(ref.begin(), ref.end(), 0u);
    std::stable_sort(ref.begin(), ref.end(), [&](uint32_t i, uint32_t j) {
      complex64_t a = v[r * 9 + i], b = v[r * 9 + j];
      if (lnl(a.real(), b.real())) return true;
      if (lnl(b.real(), a.real())) return false;
      return lnl(a.imag(), b.imag());
    });
    for (int k = 0; k < 9; ++k) {
      EXPECT_EQ(idx.data<uint32_t>()[r * 9 + k], ref[k]) << "row " << r << " position " << k;
      complex64_t got = sorted.data<complex64_t>()[r * 9 + k], want = v[r * 9 + ref[k]];
      EXPECT_TRUE(got == want || (std::isnan(got.real()) && std::isnan(want.real())));
    }
  }
}

TEST(SortGrad, CotangentsReturnToTheirElements) {
  array x = test::random_array({3, 7}, float32);
  array g = test::random_array({3, 7}, float32);
  for (int axis : {0, 1}) {
    auto idx = test::to_double(argsort(x, axis));
    auto gv = test::to_double(g);
    auto dx = test::to_double(vjp([=](const array& a) { return sort(a, axis); }, x, g).second);
    auto dy = test::to_double(jvp([=](const array& a) { return sort(a, axis); }, x, g).second);
    for (const auto& line : lines(x.shape(), axis)) {
      for (size_t k = 0; k < line.size(); ++k) {
        int64_t src = line[static_cast<int64_t>(idx[line[k]])];
        EXPECT_FLOAT_EQ(dx[src], gv[line[k]]);  // sorted position k came from src
        EXPECT_FLOAT_EQ(dy[line[k]], gv[src]);
      }
    }
  }
  // argsort's output is an index: no gradient flows through it.
  auto d = test::to_double(
      vjp([](const array& a) { return multiply(a, astype(argsort(a, 1), float32)); }, x,
          ones({3, 7}))
          .second);
  EXPECT_EQ(d, test::to_double(argsort(x, 1)));
}

TEST(SortVmap, MatchesALoop) {
  array x = test::random_array({4, 3, 5}, float32);
  for (int in_axis : {0, 1, 2}) {
    for (bool indices : {false, true}) {
      UnaryFn f = [=](const array& a) {
        return indices ? astype(argsort(a, 0), float32) : sort(a, -1);
      };
      array y = vmap(f, in_axis)(x);
      for (int b = 0; b < x.shape()[in_axis]; ++b) {
        Shape start(3, 0), stop = x.shape();
        start[in_axis] = b;
        stop[in_axis] = b + 1;
        array want = f(squeeze(slice(x, start, stop), in_axis));
        array got = squeeze(slice(y, {b, 0, 0}, {b + 1, y.shape()[1], y.shape()[2]}), 0);
        test::expect_allclose(got, want.shape(), test::to_double(want));
      }
    }
  }
}
