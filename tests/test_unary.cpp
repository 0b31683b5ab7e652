// Unary elementwise ops: every op x every dtype against float64 (complex<double>) loop
// references on fresh random inputs, laid out contiguous, transposed, strided (negative
// steps too), broadcast, 0-d and empty; special values (NaN, +-inf, +-0, ties); dtype rules
// and every error; the float32 exp's accuracy over the whole float range; transforms.
#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <optional>

#include "test_utils.h"

using namespace kiln;

namespace {

using cd = std::complex<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// How an op maps the input dtype to the output dtype.
enum class Rule {
  math,          // integers and bool -> float32; floating and complex keep theirs
  real_math,     // as math, but complex64 is an error
  keep,          // the input's dtype
  keep_no_bool,  // the input's dtype; bool is an error
  abs,           // complex64 -> float32, else kept
  rounding,      // kept; complex64 is an error
  predicate,     // bool
  integral,      // integers and bool keep theirs; anything else is an error
};

struct UnaryCase {
  const char* name;
  std::function<array(const array&)> op;
  std::function<double(double)> ref;
  std::function<cd(cd)> cref;  // empty when the op rejects (or is not tested on) complex64
  Rule rule;
  double lo = -2.0, hi = 2.0;  // domain of the random inputs
};

std::optional<Dtype> result_dtype(const UnaryCase& c, Dtype in) {
  switch (c.rule) {
    case Rule::math:
      if (is_complex(in) && !c.cref) return std::nullopt;
      return is_inexact(in) ? in : float32;
    case Rule::real_math:
      if (is_complex(in)) return std::nullopt;
      return is_inexact(in) ? in : float32;
    case Rule::keep:
      return in;
    case Rule::keep_no_bool:
      return in == bool_ ? std::nullopt : std::optional(in);
    case Rule::abs:
      return is_complex(in) ? float32 : in;
    case Rule::rounding:
      return is_complex(in) && !c.cref ? std::nullopt : std::optional(in);
    case Rule::predicate:
      return bool_;
    case Rule::integral:
      return is_integral(in) ? std::optional(in) : std::nullopt;
  }
  return std::nullopt;
}

// v reduced into the range of integer dtype d (two's complement wrap-around), or v != 0
// for bool.
double wrap(double v, Dtype d) {
  if (d == bool_) return v != 0;
  double m = std::ldexp(1.0, 8 * d.size);
  double lo = is_signed_integer(d) ? -m / 2 : 0.0;
  if (v >= lo && v < lo + m) return v;  // in range (and exact for 64-bit types)
  v = std::fmod(v, m);
  if (v < 0) v += m;
  if (is_signed_integer(d) && v >= m / 2) v -= m;
  return v;
}

// The float64 reference as the output dtype would hold it (rounded, overflowing to inf).
std::vector<double> as_dtype(const std::vector<double>& v, Dtype d, const Shape& shape) {
  if (is_integral(d)) {
    std::vector<double> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = wrap(v[i], d);
    return out;
  }
  return test::to_double(array(v.begin(), shape, d));
}

double sign_ref(double x) {
  return x > 0 ? 1 : (x < 0 ? -1 : x);
}
double sigmoid_ref(double x) {
  return 1 / (1 + std::exp(-x));
}
double erfinv_ref(double y) {
  // Bisection on erf: slow but independent of the implementation under test.
  if (std::isnan(y)) return y;
  if (std::abs(y) >= 1) return std::abs(y) == 1 ? y * kInf : kNaN;
  double lo = -7, hi = 7;
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

#define OP(NAME) [](const array& a) { return NAME(a); }

const std::vector<UnaryCase>& cases() {
  static const std::vector<UnaryCase> table = {
      {"abs", OP(abs), [](double x) { return std::abs(x); }, [](cd z) { return cd(std::abs(z)); },
       Rule::abs},
      {"negative", OP(negative), [](double x) { return -x; }, [](cd z) { return -z; },
       Rule::keep_no_bool},
      {"sign", OP(sign), sign_ref, [](cd z) { return z == 0.0 ? z : z / std::abs(z); }, Rule::keep},
      {"square", OP(square), [](double x) { return x * x; }, [](cd z) { return z * z; },
       Rule::keep},
      {"sqrt", OP(sqrt), [](double x) { return std::sqrt(x); }, [](cd z) { return std::sqrt(z); },
       Rule::math, 0.0, 4.0},
      {"rsqrt", OP(rsqrt), [](double x) { return 1 / std::sqrt(x); },
       [](cd z) { return 1.0 / std::sqrt(z); }, Rule::math, 0.1, 4.0},
      {"reciprocal", OP(reciprocal), [](double x) { return 1 / x; }, [](cd z) { return 1.0 / z; },
       Rule::math, 0.5, 3.0},
      {"exp", OP(exp), [](double x) { return std::exp(x); }, [](cd z) { return std::exp(z); },
       Rule::math, -5.0, 5.0},
      // expm1 and sigmoid are real-only, as in MLX.
      {"expm1", OP(expm1), [](double x) { return std::expm1(x); }, nullptr, Rule::real_math},
      {"log", OP(log), [](double x) { return std::log(x); }, [](cd z) { return std::log(z); },
       Rule::math, 0.1, 4.0},
      {"log1p", OP(log1p), [](double x) { return std::log1p(x); },
       [](cd z) { return std::log(1.0 + z); }, Rule::math, -0.5, 3.0},
      {"log2", OP(log2), [](double x) { return std::log2(x); },
       [](cd z) { return std::log(z) / std::log(2.0); }, Rule::math, 0.1, 4.0},
      {"log10", OP(log10), [](double x) { return std::log10(x); },
       [](cd z) { return std::log10(z); }, Rule::math, 0.1, 4.0},
      {"sin", OP(sin), [](double x) { return std::sin(x); }, [](cd z) { return std::sin(z); },
       Rule::math, -4.0, 4.0},
      {"cos", OP(cos), [](double x) { return std::cos(x); }, [](cd z) { return std::cos(z); },
       Rule::math, -4.0, 4.0},
      {"tan", OP(tan), [](double x) { return std::tan(x); }, [](cd z) { return std::tan(z); },
       Rule::math, -1.2, 1.2},
      {"arcsin", OP(arcsin), [](double x) { return std::asin(x); },
       [](cd z) { return std::asin(z); }, Rule::math, -0.95, 0.95},
      {"arccos", OP(arccos), [](double x) { return std::acos(x); },
       [](cd z) { return std::acos(z); }, Rule::math, -0.95, 0.95},
      {"arctan", OP(arctan), [](double x) { return std::atan(x); },
       [](cd z) { return std::atan(z); }, Rule::math, -3.0, 3.0},
      {"sinh", OP(sinh), [](double x) { return std::sinh(x); }, [](cd z) { return std::sinh(z); },
       Rule::math, -3.0, 3.0},
      {"cosh", OP(cosh), [](double x) { return std::cosh(x); }, [](cd z) { return std::cosh(z); },
       Rule::math, -3.0, 3.0},
      {"tanh", OP(tanh), [](double x) { return std::tanh(x); }, [](cd z) { return std::tanh(z); },
       Rule::math, -3.0, 3.0},
      {"arcsinh", OP(arcsinh), [](double x) { return std::asinh(x); },
       [](cd z) { return std::asinh(z); }, Rule::math, -3.0, 3.0},
      {"arccosh", OP(arccosh), [](double x) { return std::acosh(x); },
       [](cd z) { return std::acosh(z); }, Rule::math, 1.0, 4.0},
      {"arctanh", OP(arctanh), [](double x) { return std::atanh(x); },
       [](cd z) { return std::atanh(z); }, Rule::math, -0.9, 0.9},
      {"erf", OP(erf), [](double x) { return std::erf(x); }, nullptr, Rule::real_math},
      {"erfinv", OP(erfinv), erfinv_ref, nullptr, Rule::real_math, -0.99, 0.99},
      {"sigmoid", OP(sigmoid), sigmoid_ref, nullptr, Rule::real_math, -6.0, 6.0},
      {"floor", OP(floor), [](double x) { return std::floor(x); }, nullptr, Rule::rounding, -4, 4},
      {"ceil", OP(ceil), [](double x) { return std::ceil(x); }, nullptr, Rule::rounding, -4, 4},
      {"round", OP(round), [](double x) { return std::nearbyint(x); },
       [](cd z) { return cd(std::nearbyint(z.real()), std::nearbyint(z.imag())); }, Rule::rounding,
       -4, 4},
      {"logical_not", OP(logical_not), [](double x) { return double(x == 0); },
       [](cd z) { return cd(z == 0.0); }, Rule::predicate},
      {"bitwise_invert", OP(bitwise_invert), [](double x) { return -x - 1; }, nullptr,
       Rule::integral, -100, 100},
      {"isnan", OP(isnan), [](double x) { return double(std::isnan(x)); },
       [](cd z) { return cd(std::isnan(z.real()) || std::isnan(z.imag())); }, Rule::predicate},
      {"isinf", OP(isinf), [](double x) { return double(std::isinf(x)); },
       [](cd z) { return cd(std::isinf(z.real()) || std::isinf(z.imag())); }, Rule::predicate},
      {"isfinite", OP(isfinite), [](double x) { return double(std::isfinite(x)); },
       [](cd z) { return cd(std::isfinite(z.real()) && std::isfinite(z.imag())); },
       Rule::predicate},
      {"isposinf", OP(isposinf), [](double x) { return double(x == kInf); },
       [](cd z) { return cd(z == cd(kInf, 0.0)); }, Rule::predicate},
      {"isneginf", OP(isneginf), [](double x) { return double(x == -kInf); },
       [](cd z) { return cd(z == cd(-kInf, 0.0)); }, Rule::predicate},
      {"real", OP(real), [](double x) { return x; }, [](cd z) { return cd(z.real()); }, Rule::abs},
      {"imag", OP(imag), [](double) { return 0.0; }, [](cd z) { return cd(z.imag()); }, Rule::abs},
      {"conjugate", OP(conjugate), [](double x) { return x; }, [](cd z) { return std::conj(z); },
       Rule::keep},
  };
  return table;
}

// Random inputs of `dtype` in the case's domain (unsigned types: its non-negative part).
array random_input(const UnaryCase& c, const Shape& shape, Dtype dtype) {
  double lo = is_unsigned(dtype) ? std::max(c.lo, 0.0) : c.lo;
  return test::random_array(shape, dtype, lo, std::max(c.hi, lo + 1.0));
}

// Checks op(x) against the reference, elementwise in row-major order.
void check_values(const UnaryCase& c, const array& x, const array& out, const std::string& what) {
  SCOPED_TRACE(std::string(c.name) + " on " + what + " " + std::string(dtype_name(x.dtype())));
  Dtype od = *result_dtype(c, x.dtype());
  ASSERT_EQ(out.dtype(), od);
  ASSERT_EQ(out.shape(), x.shape());
  if (is_complex(x.dtype())) {
    auto xs = test::to_complex(x);
    auto got = is_complex(od) ? test::to_complex(out) : std::vector<cd>();
    auto got_real = test::to_double(out);
    double tol = 1e-4;  // complex64 library functions are less exact than float ones
    for (size_t i = 0; i < xs.size(); ++i) {
      cd e = c.cref(xs[i]);
      cd g = is_complex(od) ? got[i] : cd(got_real[i]);
      bool ok = std::abs(g - e) <= tol * (1 + std::abs(e)) ||
                (std::isnan(e.real()) && std::isnan(g.real()));
      if (!ok) {
        ADD_FAILURE() << "element " << i << " of " << xs[i] << ": got " << g << ", expected " << e;
        return;
      }
    }
    return;
  }
  bool bool_invert = c.rule == Rule::integral && x.dtype() == bool_;
  auto expected = test::map_ref(test::to_double(x),
                                [&](double v) { return bool_invert ? double(v == 0) : c.ref(v); });
  test::expect_allclose(out, x.shape(), as_dtype(expected, od, x.shape()));
}

}  // namespace

// Every op on every dtype: the result dtype and values, or the documented error.
TEST(Unary, EveryOpEveryDtypeEveryLayout) {
  for (const auto& c : cases()) {
    for (Dtype d : all_dtypes) {
      auto od = result_dtype(c, d);
      if (!od) {
        array x = random_input(c, {2, 3}, d);
        try {
          c.op(x).eval();
          ADD_FAILURE() << c.name << " on " << d << " should throw";
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find(std::string("[") + c.name + "]"), std::string::npos)
              << e.what();
        }
        continue;
      }
      // Contiguous, transposed, column-strided, reversed with steps, broadcast, 0-d, empty.
      array base = random_input(c, {4, 5}, d);
      array tall = random_input(c, {5, 4}, d);
      array wide = random_input(c, {5, 10}, d);
      array row = random_input(c, {1, 5}, d);
      array scalar = random_input(c, {}, d);
      std::vector<std::pair<std::string, array>> inputs = {
          {"contiguous", base},
          {"transposed", transpose(tall)},
          {"strided", slice(wide, {0, 0}, {4, 10}, {1, 2})},
          {"reversed", slice(wide, {4, 9}, {0, 0}, {-1, -2})},
          {"broadcast", broadcast_to(row, {4, 5})},
          {"0-d", scalar},
          {"broadcast 0-d", broadcast_to(scalar, {3, 2})},
          {"empty", random_input(c, {0, 5}, d)},
      };
      for (auto& [what, x] : inputs) check_values(c, x, c.op(x), what);
    }
  }
}

// NaN, infinities, signed zeros, halfway cases and large values in every floating dtype.
TEST(Unary, SpecialValues) {
  const std::vector<double> specials = {kNaN, kInf, -kInf, 0.0,  -0.0, 0.5,   -0.5, 1.5,  2.5,
                                        -2.5, 1.0,  -1.0,  1e-3, 30.0, -30.0, 100., -100.};
  const Shape shape{static_cast<int>(specials.size())};
  for (const auto& c : cases()) {
    for (Dtype d : {float16, bfloat16, float32, float64}) {
      if (!result_dtype(c, d)) continue;
      array x(specials.begin(), shape, d);
      check_values(c, x, c.op(x), "special values");
    }
  }
  // Complex NaN and infinity in either part.
  std::vector<complex64_t> cz = {{NAN, 0}, {0, NAN}, {INFINITY, 1}, {1, -INFINITY}, {1, 2}};
  array z(cz.begin(), {5}, complex64);
  EXPECT_EQ(test::to_double(isnan(z)), (std::vector<double>{1, 1, 0, 0, 0}));
  EXPECT_EQ(test::to_double(isinf(z)), (std::vector<double>{0, 0, 1, 1, 0}));
  EXPECT_EQ(test::to_double(isfinite(z)), (std::vector<double>{0, 0, 0, 0, 1}));
}

// Wrap-around and identities of the integer paths.
TEST(Unary, IntegerEdges) {
  array i8 = array({int8_t(-128), int8_t(100), int8_t(-3)}, int8);
  EXPECT_EQ(test::to_double(abs(i8)), (std::vector<double>{-128, 100, 3}));  // as NumPy
  EXPECT_EQ(test::to_double(negative(i8)), (std::vector<double>{-128, -100, 3}));
  EXPECT_EQ(test::to_double(square(i8)), (std::vector<double>{0, 16, 9}));  // 10000 mod 256
  EXPECT_EQ(test::to_double(negative(array({uint8_t(1), uint8_t(0)}, uint8))),
            (std::vector<double>{255, 0}));
  EXPECT_EQ(test::to_double(bitwise_invert(array({uint16_t(0), uint16_t(5)}, uint16))),
            (std::vector<double>{65535, 65530}));
  int64_t big = (int64_t{1} << 62) + 1;  // beyond float64's exact integers
  array i64 = array({big, -big}, int64);
  EXPECT_EQ(floor(i64).data<int64_t>()[0], big);  // the identity: no float round trip
  EXPECT_EQ(round(i64).data<int64_t>()[0], big);
  EXPECT_EQ(test::to_double(sign(i64)), (std::vector<double>{1, -1}));
  EXPECT_EQ(abs(array(std::numeric_limits<int32_t>::min())).item<int32_t>(),
            std::numeric_limits<int32_t>::min());
  // Identities return the input itself.
  array u = test::random_array({3}, uint32, 0, 100);
  EXPECT_EQ(abs(u).id(), u.id());
  EXPECT_EQ(ceil(u).id(), u.id());
}

TEST(Unary, RoundDecimals) {
  // Half to even at the given decimals, as NumPy: 0.125 -> 0.12, 0.375 -> 0.38 (exact
  // binary values); negative decimals round to tens and hundreds.
  array f({0.125, 0.375, -2.675, 1234.5678, 1250.0, 1350.0}, float64);
  test::expect_allclose(round(f, 2), {6}, {0.12, 0.38, -2.68, 1234.57, 1250.0, 1350.0});
  test::expect_allclose(round(f, -2), {6}, {0.0, 0.0, -0.0, 1200.0, 1200.0, 1400.0});
  test::expect_allclose(round(f, 1), {6}, {0.1, 0.4, -2.7, 1234.6, 1250.0, 1350.0});
  array i({1234, -1250, 1350, 49}, int32);
  EXPECT_EQ(round(i, -2).dtype(), int32);
  EXPECT_EQ(test::to_double(round(i, -2)), (std::vector<double>{1200, -1200, 1400, 0}));
  EXPECT_EQ(round(i, 2).id(), i.id());
  // Every floating dtype against a float64 reference on random values.
  for (Dtype d : {float16, bfloat16, float32, float64}) {
    for (int dec : {-1, 1, 2, 3}) {
      array x = test::random_array({50}, d, -20, 20);
      double scale = std::pow(10.0, dec);
      auto ref = test::map_ref(test::to_double(x),
                               [&](double v) { return std::nearbyint(v * scale) / scale; });
      array r = round(x, dec);
      EXPECT_EQ(r.dtype(), d);
      // A value within rounding of a tie may go either way: allow one unit of the last
      // decimal kept.
      auto got = test::to_double(r);
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_LE(std::abs(got[k] - ref[k]),
                  1.0 / scale * 1.0001 + 4 * test::tolerance(d) * std::abs(ref[k]))
            << d << " decimals " << dec << " x " << test::to_double(x)[k];
      }
    }
  }
}

// Worst error, in ulps of the float nearest the true value, of the float32 op f against
// the double function ref over every 4099th float and `edges`. Results that round to
// +-inf (or NaN) must be exactly that.
double worst_ulp_error(const std::function<array(const array&)>& f, double (*ref)(double),
                       const std::vector<float>& edges, float& worst_x) {
  std::vector<float> xs;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4099) {
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  }
  xs.insert(xs.end(), edges.begin(), edges.end());
  array y = f(array(xs.begin(), {static_cast<int>(xs.size())}, float32));
  y.eval();
  const float* got = y.data<float>();
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double r = ref(static_cast<double>(xs[i]));
    double err;
    if (std::isnan(r)) {
      err = std::isnan(got[i]) ? 0 : kInf;
    } else if (std::abs(r) >= 0x1.ffffffp+127) {  // rounds to inf
      err = got[i] == (r > 0 ? INFINITY : -INFINITY) ? 0 : kInf;
    } else {
      int e;
      std::frexp(r, &e);
      double ulp = std::ldexp(1.0, std::max(e - 24, -149));  // subnormals: 2^-149
      err = std::abs(static_cast<double>(got[i]) - r) / ulp;
    }
    if (err > worst) worst = err, worst_x = xs[i];
  }
  return worst;
}

// The CPU's float32 exp, tanh and erf are the library's own (simd_math.h): within 1.5 ulp of the
// correctly rounded result over the whole float range. (On the GPU they are CUDA's expf and
// tanhf, documented within 2 ulp; the GPU suites compare them with the CPU.)
TEST(Unary, Float32ExpTanhAndErfAccuracyOverTheWholeRange) {
  float at = 0;
  double e = worst_ulp_error(
      [](const array& a) { return exp(a, Device::cpu); }, [](double x) { return std::exp(x); },
      {88.72283f, 88.7228394f, 88.72284f, -87.33654f, -103.27893f, -103.97208f, -104.0f, -1e-30f,
       1e-30f, 0.0f, -0.0f, 1.0f, INFINITY, -INFINITY, NAN},
      at);
  EXPECT_LE(e, 1.5) << "exp at x = " << std::hexfloat << at;
  double t = worst_ulp_error([](const array& a) { return tanh(a, Device::cpu); },
                             [](double x) { return std::tanh(x); },
                             {1.0f, 0.99999994f, 1.0000001f, -1.0f, 1e-40f, -1e-40f, 9.0f, 44.0f,
                              45.0f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN},
                             at);
  EXPECT_LE(t, 1.5) << "tanh at x = " << std::hexfloat << at;
  double r = worst_ulp_error([](const array& a) { return erf(a, Device::cpu); },
                             [](double x) { return std::erf(x); },
                             {1.0f, 0.99999994f, 1.0000001f, -1.0f, 1e-40f, -1e-40f, 3.9f, 3.95f,
                              4.0f, 4.0000005f, 0.0f, -0.0f, INFINITY, -INFINITY, NAN},
                             at);
  EXPECT_LE(r, 1.5) << "erf at x = " << std::hexfloat << at;
  EXPECT_EQ(erf(array(INFINITY)).item<float>(), 1.0f);
  EXPECT_EQ(erf(array(-INFINITY)).item<float>(), -1.0f);
  EXPECT_TRUE(std::signbit(erf(array(-0.0f)).item<float>()));
  EXPECT_TRUE(std::isnan(erf(array(NAN)).item<float>()));
  EXPECT_EQ(exp(array(-INFINITY)).item<float>(), 0.0f);
  EXPECT_EQ(exp(array(INFINITY)).item<float>(), INFINITY);
  EXPECT_EQ(exp(array(0.0f)).item<float>(), 1.0f);
  EXPECT_TRUE(std::isinf(exp(array(88.73f)).item<float>()));
  EXPECT_GT(exp(array(-103.0f)).item<float>(), 0.0f);  // subnormal, not flushed
  EXPECT_EQ(tanh(array(-INFINITY)).item<float>(), -1.0f);
  EXPECT_TRUE(std::signbit(tanh(array(-0.0f)).item<float>()));
}

// The vectorized contiguous loop and the strided loop compute the same float32 values.
TEST(Unary, VectorizedFunctionsContiguousMatchesStrided) {
  array x = test::random_array({300, 514}, float32, -90, 90);
  auto xs = test::to_double(slice(x, {0, 0}, {300, 514}, {1, 2}));
  for (auto [name, f] : std::vector<std::pair<std::string, std::function<array(const array&)>>>{
           {"exp", OP(exp)}, {"sigmoid", OP(sigmoid)}, {"tanh", OP(tanh)}, {"erf", OP(erf)}}) {
    array flat = slice(f(x), {0, 0}, {300, 514}, {1, 2});
    array strided = f(slice(x, {0, 0}, {300, 514}, {1, 2}));
    auto a = test::to_double(flat), b = test::to_double(strided);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_TRUE(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))
          << name << " of " << std::hexfloat << xs[i] << ": " << a[i] << " vs " << b[i];
    }
  }
}

// float16 and bfloat16 run the same float32 clones in blocks: contiguous and strided runs
// agree, and each value is the float32 result of the widened input rounded once.
TEST(Unary, HalfTypesRunTheFloatClonesRoundedOnce) {
  for (Dtype d : {float16, bfloat16}) {
    array x = test::random_array({300, 514}, d, -12, 12);
    for (auto [name, f] : std::vector<std::pair<std::string, std::function<array(const array&)>>>{
             {"exp", OP(exp)}, {"sigmoid", OP(sigmoid)}, {"tanh", OP(tanh)}, {"erf", OP(erf)}}) {
      SCOPED_TRACE(name);
      array strided_in = slice(x, {0, 0}, {300, 514}, {1, 2});
      array flat = slice(f(x), {0, 0}, {300, 514}, {1, 2});
      array strided = f(strided_in);
      array via_float = astype(f(astype(strided_in, float32)), d);
      EXPECT_EQ(flat.dtype(), d);
      auto a = test::to_double(flat), b = test::to_double(strided), c = test::to_double(via_float);
      ASSERT_EQ(a.size(), c.size());
      for (size_t i = 0; i < a.size(); ++i) {
        auto same = [](double u, double v) { return u == v || (std::isnan(u) && std::isnan(v)); };
        ASSERT_TRUE(same(a[i], b[i]) && same(a[i], c[i]))
            << d << " element " << i << ": " << a[i] << ", strided " << b[i] << ", float32 "
            << c[i];
      }
    }
  }
}

// Large inputs take the multi-threaded paths; every chunk must be written.
TEST(Unary, LargeArrays) {
  array x = test::random_array({3, 1 << 17}, float32, -3, 3);
  auto xs = test::to_double(x);
  test::expect_allclose(exp(x), x.shape(), test::map_ref(xs, [](double v) { return std::exp(v); }));
  test::expect_allclose(sin(transpose(x)), {1 << 17, 3}, test::to_double(transpose(sin(x))));
  test::expect_allclose(sigmoid(x), x.shape(), test::map_ref(xs, sigmoid_ref));
}

TEST(Unary, Operators) {
  array x = test::random_array({3, 4}, float32);
  EXPECT_EQ(test::to_double(-x), test::to_double(negative(x)));
  array b = test::random_array({3, 4}, bool_);
  EXPECT_EQ(test::to_double(!b), test::to_double(logical_not(b)));
  array i = test::random_array({3, 4}, int16, -100, 100);
  EXPECT_EQ(test::to_double(~i), test::to_double(bitwise_invert(i)));
  EXPECT_THROW(-b, std::invalid_argument);
  EXPECT_THROW(~x, std::invalid_argument);
}

// Errors leave other arrays usable.
TEST(Unary, ErrorsMessages) {
  array c = array(complex64_t(1, 2));
  auto message = [](auto f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { negative(array(true)); }),
            "[negative] The negative of a bool array is not defined; use logical_not.");
  EXPECT_EQ(message([&] { bitwise_invert(array(1.5f)); }),
            "[bitwise_invert] Requires an integer or bool array; got float32.");
  EXPECT_EQ(message([&] { erf(c); }),
            "[erf] Not defined for complex64 input; apply it to real(a) and imag(a).");
  EXPECT_THROW(floor(c), std::invalid_argument);
  EXPECT_THROW(ceil(c), std::invalid_argument);
  EXPECT_THROW(expm1(c), std::invalid_argument);
  EXPECT_THROW(sigmoid(c), std::invalid_argument);
  // round takes the parts separately; isposinf is "equal to inf + 0j", as MLX.
  EXPECT_EQ(round(array(complex64_t(2.6f, -1.4f))).item<complex64_t>(), complex64_t(3, -1));
  EXPECT_FALSE(isposinf(array(complex64_t(INFINITY, 1))).item<bool>());
  EXPECT_TRUE(isposinf(array(complex64_t(INFINITY, 0))).item<bool>());
  EXPECT_THROW(erfinv(c), std::invalid_argument);
  EXPECT_EQ(exp(c).item<complex64_t>(), std::exp(complex64_t(1, 2)));
}

// Transforms of a few ops by central differences in float64 (the full table is in
// test_grad_check.cpp).
TEST(Unary, GradientsMatchFiniteDifferences) {
  struct G {
    std::function<array(const array&)> f;
    double lo, hi;
  };
  std::vector<G> fs = {{OP(erfinv), -0.9, 0.9}, {OP(sigmoid), -4, 4},  {OP(rsqrt), 0.2, 3},
                       {OP(log2), 0.2, 3},      {OP(arccosh), 1.2, 3}, {OP(tan), -1, 1},
                       {OP(expm1), -2, 2},      {OP(abs), -2, 2}};
  for (const auto& g : fs) {
    array x = test::random_array({7}, float64, g.lo, g.hi);
    array ct = test::random_array({7}, float64, -1, 1);
    const double h = 1e-6;
    auto fd = test::to_double(
        divide(subtract(g.f(add(x, array(h))), g.f(subtract(x, array(h)))), array(2 * h)));
    auto cts = test::to_double(ct);
    std::vector<double> want(fd.size());
    for (size_t i = 0; i < fd.size(); ++i) want[i] = fd[i] * cts[i];
    auto [y, grad] = vjp(g.f, x, ct);
    test::expect_allclose(grad, {7}, want, 1e-6);
    auto [y2, tangent] = jvp(g.f, x, ct);
    test::expect_allclose(tangent, {7}, want, 1e-6);
    test::expect_allclose(y2, {7}, test::to_double(g.f(x)));
  }
}

TEST(Unary, VmapMapsTheSameFunction) {
  array x = test::random_array({3, 4}, float32);
  auto f = vmap(UnaryFn([](const array& a) { return sigmoid(a); }), 1, 0);
  test::expect_allclose(f(x), {4, 3}, test::to_double(transpose(sigmoid(x))));
}
