// The GPU kernels of the elementwise, layout and creation families against the CPU backend:
// every primitive on every dtype it takes, in every layout the kernels tell apart (contiguous,
// offset and misaligned, transposed, strided, broadcast, one element broadcast); the values
// whose results the CPU fixes (integer division by zero, Python's signs, NaN propagation,
// half rounding, out-of-range shifts, complex branch cuts); index widths; views; errors.
//
// GPU tests skip without a GPU. GpuElementwiseKernels compiles kernels to PTX and runs
// anywhere: it guards the 16-byte vector accesses of the contiguous kernels (what keeps
// them at copy bandwidth) and the module catalog's integrity.
#include <gtest/gtest.h>

#ifdef KILN_WITH_CUDA

#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <set>

#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/gpu.h"
#include "kiln/primitives.h"
#include "test_utils.h"

using namespace kiln;

#define REQUIRE_GPU()                                        \
  if (!gpu::is_available()) {                                \
    GTEST_SKIP() << "no GPU: " << gpu::unavailable_reason(); \
  }

namespace {

constexpr Device kGpu = Device::gpu;
constexpr Device kCpu = Device::cpu;

const std::vector<Dtype> kAll = {bool_, uint8, uint16,  uint32,   uint64,  int8,    int16,
                                 int32, int64, float16, bfloat16, float32, float64, complex64};
const std::vector<Dtype> kFloats = {float16, bfloat16, float32, float64};
const std::vector<Dtype> kInexact = {float16, bfloat16, float32, float64, complex64};
const std::vector<Dtype> kInts = {uint8, uint16, uint32, uint64, int8, int16, int32, int64};
const std::vector<Dtype> kSigned = {int8, int16, int32, int64};

// Ops as function pointers (the casts pick kiln's overloads over <cmath>'s).
using UnaryOp = array (*)(const array&, StreamOrDevice);
using BinaryOp = array (*)(const array&, const array&, StreamOrDevice);

std::vector<Dtype> join(std::vector<Dtype> a, const std::vector<Dtype>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Compares complex results part by part: NaN matches NaN, infinities must match.
void expect_complex_same(const array& gpu, const array& cpu, double rtol) {
  auto g = test::to_complex(gpu), c = test::to_complex(cpu);
  ASSERT_EQ(g.size(), c.size());
  auto same = [&](double x, double y) {
    if (std::isnan(y)) return std::isnan(x);
    if (std::isinf(y)) return x == y;
    return std::abs(x - y) <= rtol * (1 + std::abs(y));
  };
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    // A part that is tiny next to the other may differ in absolute terms of the magnitude.
    const double scale = std::isfinite(std::abs(c[i])) ? std::abs(c[i]) : 0.0;
    const bool ok = (same(g[i].real(), c[i].real()) ||
                     std::abs(g[i].real() - c[i].real()) <= rtol * (1 + scale)) &&
                    (same(g[i].imag(), c[i].imag()) ||
                     std::abs(g[i].imag() - c[i].imag()) <= rtol * (1 + scale));
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << "element " << i << ": gpu " << g[i] << ", cpu " << c[i] << " (seed "
                    << test::seed() << ")";
    }
  }
}

// Expects `gpu_result` to equal `cpu_result` (dtype, shape, values within `rtol`, by default
// the dtype's tolerance; integers and bool exactly).
void expect_same(const array& gpu_result, const array& cpu_result, double rtol = -1) {
  ASSERT_EQ(gpu_result.dtype(), cpu_result.dtype());
  ASSERT_EQ(gpu_result.shape(), cpu_result.shape());
  if (rtol < 0) rtol = test::tolerance(cpu_result.dtype());
  if (cpu_result.dtype() == complex64) return expect_complex_same(gpu_result, cpu_result, rtol);
  test::expect_allclose(gpu_result, cpu_result.shape(), test::to_double(cpu_result), rtol);
}

// The same op on both devices: f(device) builds the graph.
void expect_gpu_matches_cpu(const std::function<array(Device)>& f, double rtol = -1) {
  array g = f(kGpu), c = f(kCpu);
  eval(g, c);
  expect_same(g, c, rtol);
}

// Random values of `dtype` in [lo, hi) (unsigned types from 0).
array values(const Shape& shape, Dtype dtype, double lo, double hi) {
  if (is_unsigned(dtype) && lo < 0) lo = 0;
  return test::random_array(shape, dtype, lo, std::max(hi, lo + 1));
}

// Arrays of `shape` in the layouts the kernels tell apart, built on the CPU (the GPU reads
// them through mirrored copies): row-contiguous; offset by one element (misaligned for
// vector accesses); transposed (contiguous, not row-major); a strided slice; a broadcast of
// a size-1 axis; one element broadcast.
std::vector<std::pair<std::string, array>> layouts(const Shape& shape, Dtype dtype, double lo = -2,
                                                   double hi = 2) {
  std::vector<std::pair<std::string, array>> out;
  out.emplace_back("row", values(shape, dtype, lo, hi));
  {
    Shape big = shape;
    big[0] += 1;
    array b = reshape(values({static_cast<int>(shape_size(big))}, dtype, lo, hi), {-1}, kCpu);
    const int n = static_cast<int>(shape_size(shape));
    out.emplace_back("offset", reshape(slice(b, {1}, {n + 1}, kCpu), shape, kCpu));
  }
  Shape rev(shape.rbegin(), shape.rend());
  out.emplace_back("transposed", transpose(values(rev, dtype, lo, hi), kCpu));
  {
    Shape big = shape, start(shape.size(), 0), step(shape.size(), 1);
    big.back() = 2 * shape.back() + 1;
    start.back() = 1;
    step.back() = 2;
    out.emplace_back("strided", slice(values(big, dtype, lo, hi), start, big, step, kCpu));
  }
  Shape one = shape;
  one[0] = 1;
  out.emplace_back("broadcast", broadcast_to(values(one, dtype, lo, hi), shape, kCpu));
  out.emplace_back("scalar", broadcast_to(values({}, dtype, lo, hi), shape, kCpu));
  for (auto& [name, a] : out) a.eval();
  return out;
}

// Shapes with a ragged vector tail and several non-mergeable dimensions once transposed.
const Shape kShape = {3, 5, 67};

struct UnaryCase {
  const char* name;
  std::function<array(const array&, Device)> fn;
  std::vector<Dtype> dtypes;
  double lo, hi;
};

const std::vector<UnaryCase>& unary_cases() {
  using F = std::function<array(const array&, Device)>;
#define U(NAME) F([](const array& a, Device d) { return NAME(a, d); })
  static const std::vector<UnaryCase> cases = {
      {"abs", U(abs), join(kInts, kInexact), -3, 3},
      {"negative", U(negative), join(kInts, kInexact), -3, 3},
      {"sign", U(sign), join(kInts, kInexact), -3, 3},
      {"square", U(square), join(kInts, kInexact), -3, 3},
      {"sqrt", U(sqrt), kInexact, 0.1, 3},
      {"rsqrt", U(rsqrt), kInexact, 0.1, 3},
      {"exp", U(exp), kInexact, -3, 3},
      {"expm1", U(expm1), kFloats, -2, 2},
      {"log", U(log), kInexact, 0.1, 3},
      {"log1p", U(log1p), kInexact, -0.5, 2},
      {"log2", U(log2), kInexact, 0.1, 3},
      {"log10", U(log10), kInexact, 0.1, 3},
      {"sin", U(sin), kInexact, -3, 3},
      {"cos", U(cos), kInexact, -3, 3},
      {"tan", U(tan), kInexact, -1.2, 1.2},
      {"arcsin", U(arcsin), kInexact, -0.9, 0.9},
      {"arccos", U(arccos), kInexact, -0.9, 0.9},
      {"arctan", U(arctan), kInexact, -3, 3},
      {"sinh", U(sinh), kInexact, -2, 2},
      {"cosh", U(cosh), kInexact, -2, 2},
      {"tanh", U(tanh), kInexact, -3, 3},
      {"arcsinh", U(arcsinh), kInexact, -3, 3},
      {"arccosh", U(arccosh), kInexact, 1.1, 3},
      {"arctanh", U(arctanh), kInexact, -0.9, 0.9},
      {"erf", U(erf), kFloats, -2, 2},
      {"erfinv", U(erfinv), kFloats, -0.99, 0.99},
      {"sigmoid", U(sigmoid), kFloats, -4, 4},
      {"floor", U(floor), kFloats, -3, 3},
      {"ceil", U(ceil), kFloats, -3, 3},
      {"round", F([](const array& a, Device d) { return round(a, 0, d); }), kFloats, -3, 3},
      {"logical_not", U(logical_not), kAll, -2, 2},
      {"bitwise_invert", U(bitwise_invert), join(kInts, {bool_}), -50, 50},
      {"isnan", U(isnan), kAll, -2, 2},
      {"isinf", U(isinf), kAll, -2, 2},
      {"isfinite", U(isfinite), kAll, -2, 2},
      {"isposinf", U(isposinf), join(join(kInts, kFloats), {bool_}), -2, 2},
      {"isneginf", U(isneginf), join(join(kInts, kFloats), {bool_}), -2, 2},
      {"real", U(real), {complex64}, -2, 2},
      {"imag", U(imag), {complex64}, -2, 2},
      {"conjugate", U(conjugate), {complex64}, -2, 2},
  };
#undef U
  return cases;
}

struct BinaryCase {
  const char* name;
  std::function<array(const array&, const array&, Device)> fn;
  std::vector<Dtype> dtypes;
  double la, ha, lb, hb;
};

const std::vector<BinaryCase>& binary_cases() {
  using F = std::function<array(const array&, const array&, Device)>;
#define B(NAME) F([](const array& a, const array& b, Device d) { return NAME(a, b, d); })
  const std::vector<Dtype> real = join(join(kInts, kFloats), {bool_});
  static const std::vector<BinaryCase> cases = {
      {"add", B(add), kAll, -3, 3, -3, 3},
      {"subtract", B(subtract), join(kInts, kInexact), -3, 3, -3, 3},
      {"multiply", B(multiply), kAll, -3, 3, -3, 3},
      {"divide", B(divide), kInexact, -3, 3, 0.5, 2},
      {"floor_divide", B(floor_divide), real, -20, 20, -4, 4},
      {"remainder", B(remainder), real, -20, 20, -4, 4},
      {"power", B(power), kFloats, 0.5, 2, -2, 2},
      {"power_int", B(power), join(kInts, {bool_}), -3, 4, -2, 6},
      {"power_complex", B(power), {complex64}, -2, 2, -2, 2},
      {"maximum", B(maximum), real, -3, 3, -3, 3},
      {"minimum", B(minimum), real, -3, 3, -3, 3},
      {"arctan2", B(arctan2), kFloats, -3, 3, -3, 3},
      {"logaddexp", B(logaddexp), kFloats, -3, 3, -3, 3},
      {"equal", B(equal), kAll, -2, 2, -2, 2},
      {"not_equal", B(not_equal), kAll, -2, 2, -2, 2},
      {"less", B(less), real, -2, 2, -2, 2},
      {"less_equal", B(less_equal), real, -2, 2, -2, 2},
      {"greater", B(greater), real, -2, 2, -2, 2},
      {"greater_equal", B(greater_equal), real, -2, 2, -2, 2},
      {"logical_and", B(logical_and), {bool_, float32}, -2, 2, -2, 2},
      {"logical_or", B(logical_or), {bool_, int8}, -2, 2, -2, 2},
      {"bitwise_and", B(bitwise_and), join(kInts, {bool_}), -50, 50, -50, 50},
      {"bitwise_or", B(bitwise_or), join(kInts, {bool_}), -50, 50, -50, 50},
      {"bitwise_xor", B(bitwise_xor), join(kInts, {bool_}), -50, 50, -50, 50},
      {"left_shift", B(left_shift), join(kInts, {bool_}), -50, 50, -3, 70},
      {"right_shift", B(right_shift), join(kInts, {bool_}), -50, 50, -3, 70},
  };
#undef B
  return cases;
}

}  // namespace

// ---------------------------------------------------------------- every op, dtype, layout

TEST(GpuElementwise, UnaryEveryDtypeAndLayout) {
  REQUIRE_GPU();
  for (const auto& c : unary_cases()) {
    for (Dtype d : c.dtypes) {
      for (auto& [layout, x] : layouts(kShape, d, c.lo, c.hi)) {
        SCOPED_TRACE(msg(c.name, " ", d, " ", layout));
        expect_gpu_matches_cpu([&](Device dev) { return c.fn(x, dev); });
      }
    }
  }
}

TEST(GpuElementwise, BinaryEveryDtypeAndLayoutPair) {
  REQUIRE_GPU();
  for (const auto& c : binary_cases()) {
    for (Dtype d : c.dtypes) {
      auto xs = layouts(kShape, d, c.la, c.ha), ys = layouts(kShape, d, c.lb, c.hb);
      for (auto& [xn, x] : xs) {
        for (auto& [yn, y] : ys) {
          SCOPED_TRACE(msg(c.name, " ", d, " ", xn, ", ", yn));
          expect_gpu_matches_cpu([&](Device dev) { return c.fn(x, y, dev); });
        }
      }
      // 0-d operands: one element, computed once.
      array s = values({}, d, c.la, c.ha), t = values({}, d, c.lb, c.hb);
      SCOPED_TRACE(msg(c.name, " ", d, " 0-d"));
      expect_gpu_matches_cpu([&](Device dev) { return c.fn(s, t, dev); });
      expect_gpu_matches_cpu([&](Device dev) { return c.fn(xs[0].second, t, dev); });
      expect_gpu_matches_cpu([&](Device dev) { return c.fn(s, ys[0].second, dev); });
    }
  }
}

TEST(GpuElementwise, EqualNanOnEveryInexactDtype) {
  REQUIRE_GPU();
  for (Dtype d : kInexact) {
    array x = log(values({200}, d, -1, 1), kCpu);  // NaN where negative
    array y = log(values({200}, d, -1, 1), kCpu);
    SCOPED_TRACE(msg(d));
    expect_gpu_matches_cpu([&](Device dev) { return array_equal(x, x, true, dev); });
    expect_gpu_matches_cpu([&](Device dev) {
      return array(x.shape(), bool_, std::make_shared<Equal>(default_stream(dev), true), {x, y});
    });
  }
}

TEST(GpuElementwise, SelectEveryDtypeAndLayout) {
  REQUIRE_GPU();
  for (Dtype d : kAll) {
    auto cs = layouts(kShape, bool_), xs = layouts(kShape, d), ys = layouts(kShape, d);
    for (auto& [cn, c] : cs) {
      for (auto& [xn, x] : xs) {
        for (auto& [yn, y] : ys) {
          if (cn != xn && xn != yn && cn != "row") continue;  // enough pairs, fewer cases
          SCOPED_TRACE(msg(d, " ", cn, ", ", xn, ", ", yn));
          expect_gpu_matches_cpu([&](Device dev) { return where(c, x, y, dev); });
        }
      }
    }
    array s = values({}, bool_, -1, 1);
    expect_gpu_matches_cpu([&](Device dev) { return where(s, xs[0].second, ys[4].second, dev); });
  }
}

TEST(GpuElementwise, AsTypeEveryPairAndLayout) {
  REQUIRE_GPU();
  for (Dtype from : kAll) {
    // Non-negative values below 100 (every dtype holds them); signed values between the
    // signed and floating types.
    for (auto [lo, hi] : {std::pair{0.0, 100.0}, std::pair{-100.0, 100.0}}) {
      if (lo < 0 && (is_unsigned(from) || from == bool_)) continue;
      for (auto& [layout, x] : layouts({7, 67}, from, lo, hi)) {
        for (Dtype to : kAll) {
          if (lo < 0 && (is_unsigned(to) || to == bool_)) continue;
          SCOPED_TRACE(msg(from, " -> ", to, " ", layout, " [", lo, ", ", hi, ")"));
          expect_gpu_matches_cpu([&](Device dev) { return astype(x, to, dev); });
        }
      }
    }
  }
}

// ---------------------------------------------------------------- semantics at the edges

TEST(GpuElementwise, IntegerDivisionShiftsAndPowers) {
  REQUIRE_GPU();
  for (Dtype d : kInts) {
    SCOPED_TRACE(msg(d));
    // Every pair of a few values around zero and the type's extremes (as int64 patterns,
    // which convert to `d` modulo 2^bits).
    const int bits = 8 * d.size;
    std::vector<int64_t> v = {0, 1, 2, 3, 7, 100};
    if (is_signed_integer(d)) {
      const int64_t max = static_cast<int64_t>((uint64_t{1} << (bits - 1)) - 1);
      v.insert(v.end(), {-1, -2, -3, -7, -100, -max - 1, -max, max});
    } else {
      v.push_back(bits == 64 ? -1 : static_cast<int64_t>((uint64_t{1} << bits) - 1));
    }
    std::vector<int64_t> av, bv;
    for (int64_t a : v)
      for (int64_t b : v) av.push_back(a), bv.push_back(b);
    const int n = static_cast<int>(av.size());
    array a(av.begin(), {n}, d), b(bv.begin(), {n}, d);
    for (BinaryOp op : std::vector<BinaryOp>{floor_divide, remainder, multiply, add, subtract,
                                             maximum, minimum, equal, less}) {
      expect_gpu_matches_cpu([&](Device dev) { return op(a, b, dev); });
    }
    expect_gpu_matches_cpu(
        [&](Device dev) { return power(a, remainder(b, array(9, d), dev), dev); });
    const std::vector<int64_t> counts = {-1, 0, 1, 7, 8, 15, 16, 31, 32, 63, 64, 100};
    array shifts(counts.begin(), {12}, d);
    array values = broadcast_to(reshape(a, {n, 1}, kCpu), {n, 12}, kCpu);
    for (BinaryOp op : std::vector<BinaryOp>{left_shift, right_shift}) {
      expect_gpu_matches_cpu([&](Device dev) { return op(values, shifts, dev); });
    }
    for (UnaryOp op : std::vector<UnaryOp>{abs, negative, square, sign, bitwise_invert}) {
      expect_gpu_matches_cpu([&](Device dev) { return op(a, dev); });
    }
  }
}

TEST(GpuElementwise, FloatEdgeValues) {
  REQUIRE_GPU();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<double> v = {0.0, -0.0,  0.5,  -0.5, 1.5,  2.5, -2.5,
                                 3.0, -7.25, 1e-3, inf,  -inf, nan};
  for (Dtype d : kFloats) {
    SCOPED_TRACE(msg(d));
    std::vector<double> av, bv;
    for (double a : v)
      for (double b : v) av.push_back(a), bv.push_back(b);
    const int n = static_cast<int>(av.size());
    array a(av.begin(), {n}, d), b(bv.begin(), {n}, d);
    for (BinaryOp op : std::vector<BinaryOp>{floor_divide, remainder, maximum, minimum, logaddexp,
                                             arctan2, power, divide, add, multiply, equal,
                                             not_equal, less, less_equal, greater}) {
      expect_gpu_matches_cpu([&](Device dev) { return op(a, b, dev); });
    }
    for (UnaryOp op :
         std::vector<UnaryOp>{isnan, isinf, isfinite, isposinf, isneginf, sign, abs, floor, ceil,
                              logical_not, sqrt, log, exp, sigmoid, erfinv, tanh}) {
      expect_gpu_matches_cpu([&](Device dev) { return op(a, dev); });
    }
    // Round half to even, in float's range of exact halves.
    array halves = multiply(arange(-40, 40, kCpu), array(0.5), kCpu);
    expect_gpu_matches_cpu([&](Device dev) { return round(astype(halves, d, dev), 0, dev); }, 0.0);
  }
}

TEST(GpuElementwise, HalfTypesRoundOnceFromFloat) {
  REQUIRE_GPU();
  // Results near half's rounding boundaries: computed in float and rounded once on both.
  for (Dtype d : {float16, bfloat16}) {
    array x = values({1 << 16}, d, -8, 8), y = values({1 << 16}, d, -8, 8);
    SCOPED_TRACE(msg(d));
    expect_gpu_matches_cpu([&](Device dev) { return add(x, y, dev); }, 0.0);
    expect_gpu_matches_cpu([&](Device dev) { return multiply(x, y, dev); }, 0.0);
    expect_gpu_matches_cpu([&](Device dev) { return divide(x, y, dev); }, 0.0);
    expect_gpu_matches_cpu([&](Device dev) { return sqrt(abs(x, dev), dev); }, 0.0);
    expect_gpu_matches_cpu([&](Device dev) { return astype(astype(x, float32, dev), d, dev); },
                           0.0);
  }
}

TEST(GpuElementwise, ComplexBranchCutsAndSpecialValues) {
  REQUIRE_GPU();
  const float inf = std::numeric_limits<float>::infinity();
  // Points on the cuts with both signs of zero, near the branch points, and generic ones.
  std::vector<complex64_t> z;
  for (float re : {-3.0f, -2.0f, -1.0f, -0.5f, -0.0f, 0.0f, 0.5f, 1.0f, 2.0f, 3.0f})
    for (float im : {-3.0f, -1.0f, -0.25f, -0.0f, 0.0f, 0.25f, 1.0f, 3.0f}) z.emplace_back(re, im);
  const int n = static_cast<int>(z.size());
  array x(z.begin(), {n}, complex64);
  for (UnaryOp op : std::vector<UnaryOp>{
           sqrt,     rsqrt,     exp,  log,  log1p, log2,    log10,    sin,        cos,  tan, arcsin,
           arccos,   arctan,    sinh, cosh, tanh,  arcsinh, arccosh,  arctanh,    sign, abs, square,
           negative, conjugate, real, imag, isnan, isinf,   isfinite, logical_not}) {
    expect_gpu_matches_cpu([&](Device dev) { return op(x, dev); }, 1e-5);
  }
  // Division by zero and by infinities recovers infinities and zeros (C99 Annex G).
  std::vector<complex64_t> a = {{1, 0}, {1, 1}, {0, 0}, {inf, 1}, {2, -3}, {2, -3}};
  std::vector<complex64_t> b = {{0, 0}, {0, 0}, {0, 0}, {1, 2}, {inf, 0}, {1, 1}};
  array ca(a.begin(), {6}, complex64), cb(b.begin(), {6}, complex64);
  expect_gpu_matches_cpu([&](Device dev) { return divide(ca, cb, dev); }, 1e-6);
  array reversed = slice(x, {n - 1}, {-n - 1}, {-1}, kCpu);  // zeros meet non-zeros
  expect_gpu_matches_cpu([&](Device dev) { return divide(x, reversed, dev); }, 1e-5);
  // Powers, a zero base included.
  array base(std::vector<complex64_t>{{0, 0}, {2, 0}, {-8, 0}, {1, 1}, {0.5f, -2}}.begin(), {5},
             complex64);
  array ex(std::vector<complex64_t>{{2, 1}, {0, 0}, {1.0f / 3, 0}, {0.5f, 0.5f}, {-1, 2}}.begin(),
           {5}, complex64);
  expect_gpu_matches_cpu([&](Device dev) { return power(base, ex, dev); }, 1e-5);
}

TEST(GpuElementwise, AsTypeEdgeValues) {
  REQUIRE_GPU();
  const double nan = std::nan("");
  // Conversions of out-of-range values to integers are undefined in C++: floats convert to
  // integers only in range.
  array f(std::vector<double>{-0.0, 0.0, nan, 1e-40, -2.75, 3e9, -3e9, 65504, 65520, 1e38}.begin(),
          {10}, float32);
  for (Dtype to : {bool_, float16, bfloat16, float64, complex64}) {
    SCOPED_TRACE(msg("float32 -> ", to));
    expect_gpu_matches_cpu([&](Device dev) { return astype(f, to, dev); }, 0.0);
  }
  array g(std::vector<double>{-0.0, 0.75, -2.75, 3e9, -3e9, 1e15, -1e15}.begin(), {7}, float64);
  for (Dtype to : {int64, float32, float16}) {
    SCOPED_TRACE(msg("float64 -> ", to));
    expect_gpu_matches_cpu([&](Device dev) { return astype(g, to, dev); }, 0.0);
  }
  array big(std::vector<uint64_t>{0, 1, (1ull << 53) + 1, 1ull << 63, ~0ull}.begin(), {5}, uint64);
  for (Dtype to : {float32, float64, float16, int64, uint32, int8, bool_}) {
    SCOPED_TRACE(msg("uint64 -> ", to));
    expect_gpu_matches_cpu([&](Device dev) { return astype(big, to, dev); }, 0.0);
  }
  array neg(
      std::vector<int64_t>{-1, -128, -129, std::numeric_limits<int64_t>::min(), 70000}.begin(), {5},
      int64);
  for (Dtype to : {int8, int16, int32, uint8, uint16, uint32, uint64, float16, bool_}) {
    SCOPED_TRACE(msg("int64 -> ", to));
    expect_gpu_matches_cpu([&](Device dev) { return astype(neg, to, dev); }, 0.0);
  }
}

// ---------------------------------------------------------------- copies and views

TEST(GpuElementwise, CopiesOfEveryLayout) {
  REQUIRE_GPU();
  for (Dtype d : kAll) {
    for (auto& [layout, x] : layouts(kShape, d)) {
      SCOPED_TRACE(msg(d, " ", layout));
      expect_gpu_matches_cpu([&](Device dev) { return copy(x, dev); }, 0.0);
      expect_gpu_matches_cpu([&](Device dev) { return contiguous(x, false, dev); }, 0.0);
      expect_gpu_matches_cpu([&](Device dev) { return contiguous(x, true, dev); }, 0.0);
      expect_gpu_matches_cpu([&](Device dev) { return reshape(x, {15, 67}, dev); }, 0.0);
      expect_gpu_matches_cpu([&](Device dev) { return reshape(x, {-1}, dev); }, 0.0);
      expect_gpu_matches_cpu(
          [&](Device dev) {
            return as_strided(x, {10, 7}, {3, 5}, 4, dev);
          },
          0.0);
    }
  }
}

TEST(GpuElementwise, CopyOfABroadcastScalarIsDense) {
  REQUIRE_GPU();
  array s = values({}, float32, -2, 2);
  array c = copy(broadcast_to(s, {300, 7}, kGpu), kGpu);
  c.eval();
  EXPECT_EQ(c.data_size(), c.size());
  EXPECT_TRUE(c.flags().row_contiguous);
  expect_same(c, copy(broadcast_to(s, {300, 7}, kCpu), kCpu), 0.0);
}

TEST(GpuElementwise, OneElementResultsStayOneElement) {
  REQUIRE_GPU();
  array s = values({}, float32, -2, 2);
  array e = exp(broadcast_to(s, {1000, 10}, kGpu), kGpu);
  e.eval();
  EXPECT_EQ(e.data_size(), 1u) << "exp of a broadcast scalar is computed once";
  test::expect_allclose(e, {1000, 10}, std::vector<double>(10000, std::exp(s.item<float>())));
  array i = isnan(values({64, 3}, int32, -5, 5), kGpu);
  i.eval();
  EXPECT_EQ(i.data_size(), 1u) << "isnan of integers is a constant";
  EXPECT_EQ(test::to_double(i), std::vector<double>(192, 0.0));
  array f = isfinite(values({0, 3}, int8, -5, 5), kGpu);
  f.eval();
  EXPECT_EQ(f.size(), 0u);
}

TEST(GpuElementwise, ViewsStayOnTheDevice) {
  REQUIRE_GPU();
  array x = copy(values({8, 16}, float32, -2, 2), kGpu);
  x.eval();
  array sl = slice(x, {1, 2}, {7, 16}, {2, 3}, kGpu);
  array st = as_strided(x, {4, 4}, {16, 1}, 5, kGpu);
  eval(sl, st);
  EXPECT_EQ(sl.storage_ptr(), x.storage_ptr());
  EXPECT_EQ(st.storage_ptr(), x.storage_ptr());
  EXPECT_FALSE(x.storage().has_host()) << "a view must not bring the data to the host";
  expect_same(sl, slice(x, {1, 2}, {7, 16}, {2, 3}, kCpu), 0.0);
}

TEST(GpuElementwise, SliceUpdateLeavesTheSourceAlone) {
  REQUIRE_GPU();
  for (Dtype d : kAll) {
    SCOPED_TRACE(msg(d));
    for (auto& [layout, src] : layouts({6, 9}, d)) {
      array upd = values({3, 3}, d, -2, 2);
      array before = copy(src, kCpu);
      expect_gpu_matches_cpu(
          [&](Device dev) {
            return slice_update(src, upd, {5, 1}, {-7, 9}, {-2, 3}, dev);
          },
          0.0);
      expect_gpu_matches_cpu(
          [&](Device dev) {
            return slice_update(src, upd, {0, 0}, {6, 9}, {2, 3}, dev);
          },
          0.0);
      array scalar = values({}, d, -2, 2);  // made once: both devices must get the same value
      expect_gpu_matches_cpu(
          [&](Device dev) {
            return slice_update(src, scalar, {1, 0}, {4, 9}, dev);
          },
          0.0);
      expect_same(src, before, 0.0);
    }
  }
}

TEST(GpuElementwise, ConcatenateLayoutsAndEmptyParts) {
  REQUIRE_GPU();
  for (Dtype d : kAll) {
    auto xs = layouts({4, 5, 6}, d);
    array empty = values({4, 0, 6}, d, -2, 2);
    for (int axis : {0, 1, 2}) {
      SCOPED_TRACE(msg(d, " axis ", axis));
      expect_gpu_matches_cpu(
          [&](Device dev) {
            std::vector<array> parts;
            for (auto& [name, x] : xs) parts.push_back(x);
            return concatenate(parts, axis, dev);
          },
          0.0);
    }
    expect_gpu_matches_cpu(
        [&](Device dev) {
          return concatenate({xs[0].second, empty}, 1, dev);
        },
        0.0);
  }
}

// ---------------------------------------------------------------- creation

TEST(GpuElementwise, CreationEveryDtype) {
  REQUIRE_GPU();
  for (Dtype d : kAll) {
    SCOPED_TRACE(msg(d));
    if (d != bool_) {
      const bool signed_ok = !is_unsigned(d);
      expect_gpu_matches_cpu([&](Device dev) {
        return signed_ok ? arange(-7.0, 50.0, 0.75, d, dev) : arange(1.0, 120.0, 3.0, d, dev);
      });
    }
    expect_gpu_matches_cpu([&](Device dev) {
      return is_unsigned(d) ? linspace(0.0, 200.0, 33, d, dev) : linspace(-3.0, 11.0, 57, d, dev);
    });
    expect_gpu_matches_cpu([&](Device dev) { return linspace(2.0, 9.0, 1, d, dev); });
    for (int k : {-9, -2, 0, 3, 20}) {
      expect_gpu_matches_cpu([&](Device dev) { return eye(7, 11, k, d, dev); }, 0.0);
    }
    for (auto& [layout, x] : layouts({3, 7, 9}, d)) {
      for (int k : {-10, -3, 0, 2, 12}) {
        SCOPED_TRACE(msg(layout, " k ", k));
        expect_gpu_matches_cpu([&](Device dev) { return tril(x, k, dev); }, 0.0);
        expect_gpu_matches_cpu([&](Device dev) { return triu(x, k, dev); }, 0.0);
      }
    }
  }
  expect_gpu_matches_cpu([&](Device dev) { return arange(0, 1 << 22, dev); }, 0.0);
  // start + i * step rounds twice on both devices (no fused multiply-add on the GPU).
  expect_gpu_matches_cpu([&](Device dev) { return arange(0.1, 100.0, 1.0 / 3, float64, dev); },
                         0.0);
  expect_gpu_matches_cpu([&](Device dev) { return linspace(0.1, 7.3, 1001, float64, dev); }, 0.0);
  expect_gpu_matches_cpu([&](Device dev) { return eye(2000, 1500, 7, float32, dev); }, 0.0);
}

// ---------------------------------------------------------------- sizes and errors

// More than 2^31 elements: every kernel family switches to 64-bit indices.
TEST(GpuElementwise, WideIndexing) {
  REQUIRE_GPU();
  if (gpu::device_context(0).total_memory() < (size_t(24) << 30)) GTEST_SKIP() << "needs 24 GiB";
  const int rows = 256, cols = (1 << 23) + 1;  // 2^31 + 256 elements
  array col = reshape(arange(0.0, 256.0, 1.0, uint8, kGpu), {rows, 1}, kGpu);
  array wide = broadcast_to(col, {rows, cols}, kGpu);
  array c = copy(wide, kGpu);  // strided copy, 64-bit
  array s = add(c, transpose(broadcast_to(reshape(col, {1, rows}, kGpu), {cols, rows}, kGpu), kGpu),
                kGpu);             // binary strided, 64-bit
  array e = logical_not(c, kGpu);  // contiguous, > 2^31 elements
  // any/all test every element through a strided pass over c, whose dimensions must not
  // merge into one extent past 32 bits (MLX's test_large_offsets).
  array has = any(c, false, kGpu), every = all(c, false, kGpu);
  eval(c, s, e, has, every);
  EXPECT_TRUE(has.item<bool>());
  EXPECT_FALSE(every.item<bool>());
  // Check the corners and a band in the middle on the host.
  for (auto [r0, c0] : {std::pair{0, 0}, {rows - 3, cols - 5}, {128, cols / 2}}) {
    Shape start = {r0, c0}, stop = {r0 + 3, c0 + 5};
    // Copies of the slices on the device, so that only they come to the host.
    auto cv = test::to_double(copy(slice(c, start, stop, kGpu), kGpu));
    auto sv = test::to_double(copy(slice(s, start, stop, kGpu), kGpu));
    auto ev = test::to_double(copy(slice(e, start, stop, kGpu), kGpu));
    for (int i = 0; i < 15; ++i) {
      const double r = r0 + i / 5;
      EXPECT_EQ(cv[i], r);
      EXPECT_EQ(sv[i], std::fmod(2 * r, 256.0));
      EXPECT_EQ(ev[i], r == 0 ? 1.0 : 0.0);
    }
  }
}

TEST(GpuElementwise, ManyDimensions) {
  REQUIRE_GPU();
  // Ten dimensions that cannot be merged: the looping strided kernels.
  Shape shape(10, 2);
  std::vector<int> perm = {9, 0, 8, 1, 7, 2, 6, 3, 5, 4};
  array x = values(shape, float32, -2, 2), y = values(shape, float32, -2, 2);
  expect_gpu_matches_cpu([&](Device dev) { return add(transpose(x, perm, dev), y, dev); });
  expect_gpu_matches_cpu([&](Device dev) { return exp(transpose(x, perm, dev), dev); });
  expect_gpu_matches_cpu([&](Device dev) { return copy(transpose(x, perm, dev), dev); });
  // Seventeen are past what a strided kernel takes: a clear error, and the stream goes on.
  Shape big(17, 2);
  std::vector<int> rev(17);
  for (int i = 0; i < 17; ++i) rev[i] = 16 - i;
  array z = transpose(values(big, uint8, 0, 100), rev, kCpu);
  array w = values(big, uint8, 0, 100);
  try {
    add(z, w, kGpu).eval();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[gpu]"), std::string::npos) << e.what();
  }
  expect_gpu_matches_cpu([&](Device dev) { return add(x, y, dev); });
}

TEST(GpuElementwise, UnsupportedDtypesThrowAndTheStreamGoesOn) {
  REQUIRE_GPU();
  auto run = [](std::shared_ptr<Primitive> p, std::vector<array> in, Dtype out) {
    Shape shape = in[0].shape();
    array a(std::move(shape), out, std::move(p), std::move(in));
    a.eval();
  };
  array i = values({10}, int32, -5, 5), c = values({10}, complex64, -1, 1);
  const Stream s = default_stream(kGpu);
  try {
    run(std::make_shared<Sqrt>(s), {i}, int32);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[Sqrt::eval_gpu]"), std::string::npos) << e.what();
  }
  try {
    run(std::make_shared<Less>(s), {c, c}, bool_);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[Less::eval_gpu]"), std::string::npos) << e.what();
  }
  expect_gpu_matches_cpu([&](Device dev) { return sqrt(abs(i, dev), dev); });
}

// ---------------------------------------------------------------- kernel shapes (no GPU)

namespace {

// The PTX of `kernel` in the module `m`, compiled for compute_90.
std::string kernel_ptx(const gpu::ModuleSource& m, const std::string& kernel) {
  gpu::CompiledModule c = gpu::compile(m, "compute_90");
  const std::string* lowered = c.lowered_name(kernel);
  if (!lowered) return "";
  const size_t begin = c.image.find(".entry " + *lowered + "(");
  if (begin == std::string::npos) return "";
  const size_t end = c.image.find(".entry ", begin + 1);
  return c.image.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

}  // namespace

// The contiguous kernels move 16 bytes per access (what keeps float32 exp and add at copy
// bandwidth), and float32 math stays in float32.
TEST(GpuElementwiseKernels, ContiguousKernelsUse16ByteAccesses) {
  const std::regex load16(R"(ld\.global(\.nc)?\.(v4\.[bfsu]32|v2\.[bfsu]64))");
  const std::regex store16(R"(st\.global\.(v4\.[bfsu]32|v2\.[bfsu]64))");
  struct Case {
    gpu::ModuleSource module;
    std::string kernel;
    bool load16;  // false where the input is narrower than the output
  };
  const std::vector<Case> cases = {
      {gpu::unary_module("Exp", float32, float32), gpu::unary_v_name("Exp", float32, float32),
       true},
      {gpu::unary_module("Exp", bfloat16, bfloat16), gpu::unary_v_name("Exp", bfloat16, bfloat16),
       true},
      {gpu::unary_module("Identity", uint32, uint32), gpu::unary_v_name("Identity", uint32, uint32),
       true},
      {gpu::unary_module("Identity", float16, float32),
       gpu::unary_v_name("Identity", float16, float32), false},
      {gpu::binary_module("Add", float32, float32),
       "kiln::binary_v<kiln::Add, kiln::float32, kiln::float32, 4>", true},
      {gpu::binary_module("Add", bfloat16, bfloat16),
       "kiln::binary_v<kiln::Add, kiln::bfloat16, kiln::bfloat16, 8>", true},
      {gpu::binary_module("Add", float64, float64),
       "kiln::binary_v<kiln::Add, kiln::float64, kiln::float64, 2>", true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.kernel);
    const std::string ptx = kernel_ptx(c.module, c.kernel);
    ASSERT_FALSE(ptx.empty()) << "kernel not found in its module";
    if (c.load16) {
      EXPECT_TRUE(std::regex_search(ptx, load16)) << ptx;
    }
    EXPECT_TRUE(std::regex_search(ptx, store16)) << ptx;
  }
  const std::string exp_ptx = kernel_ptx(gpu::unary_module("Exp", float32, float32),
                                         gpu::unary_v_name("Exp", float32, float32));
  EXPECT_EQ(exp_ptx.find(".f64"), std::string::npos) << "float32 exp computes in double";
}

TEST(GpuElementwiseKernels, CatalogFamiliesAndUniqueModuleNames) {
  auto families = gpu::module_catalog_families();
  for (const char* f : {"unary", "binary", "ternary", "copy", "astype", "creation"}) {
    EXPECT_NE(std::find(families.begin(), families.end(), f), families.end()) << f;
  }
  // Two different sources must never share a name (get_module looks modules up by name).
  std::map<std::string, std::string> sources;
  size_t kernels = 0;
  for (const auto& f : families) {
    gpu::for_each_catalog_module(f, [&](const std::string& name, const gpu::ModuleSource& m) {
      auto [it, inserted] =
          sources.emplace(name, m.source + "|" + std::to_string(m.kernels.size()));
      if (!inserted) {
        EXPECT_EQ(it->second, m.source + "|" + std::to_string(m.kernels.size()))
            << name << " names two different modules";
      }
      kernels += m.kernels.size();
    });
  }
  RecordProperty("modules", static_cast<int>(sources.size()));
  RecordProperty("kernels", static_cast<int>(kernels));
}

#else

TEST(GpuElementwise, RequiresCuda) {
  GTEST_SKIP() << "kiln was built without CUDA";
}

#endif  // KILN_WITH_CUDA
