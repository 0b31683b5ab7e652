// Binary elementwise ops: every op x every dtype (and mixed dtypes) against float64
// (complex<double>) loop references on fresh random inputs, over broadcast, scalar,
// transposed, strided, reversed and empty operands; the integer edge cases kiln defines
// (division by zero, INT_MIN // -1, shift counts, negative powers); NaN and infinity
// handling; operators; dtype errors; transforms.
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>
#include <optional>

#include "test_utils.h"

using namespace kiln;

namespace {

using cd = std::complex<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// How an op maps the promoted input dtype t to the output dtype.
enum class Rule {
  arithmetic,    // t
  no_bool,       // t; bool is an error
  true_divide,   // t if floating or complex, else float32
  real,          // t; complex64 is an error
  real_inexact,  // t if floating, else float32; complex64 is an error
  inexact,       // t if floating or complex, else float32
  compare,       // bool
  compare_real,  // bool; complex64 is an error
  logical,       // bool, for any inputs
  integral,      // t for integers and bool; anything else is an error
  shift,         // t for integers, uint8 for bool; anything else is an error
};

std::optional<Dtype> result_dtype(Rule rule, Dtype t) {
  switch (rule) {
    case Rule::arithmetic:
      return t;
    case Rule::no_bool:
      return t == bool_ ? std::nullopt : std::optional(t);
    case Rule::true_divide:
      return is_inexact(t) ? t : float32;
    case Rule::real:
      return is_complex(t) ? std::nullopt : std::optional(t);
    case Rule::real_inexact:
      if (is_complex(t)) return std::nullopt;
      return is_floating_point(t) ? t : float32;
    case Rule::inexact:
      return is_inexact(t) ? t : float32;
    case Rule::compare:
      return bool_;
    case Rule::compare_real:
      return is_complex(t) ? std::nullopt : std::optional(bool_);
    case Rule::logical:
      return bool_;
    case Rule::integral:
      return is_integral(t) ? std::optional(t) : std::nullopt;
    case Rule::shift:
      if (!is_integral(t)) return std::nullopt;
      return t == bool_ ? uint8 : t;
  }
  return std::nullopt;
}

// Reference of a (real) op on values held exactly in doubles; `integral` selects the
// integer semantics of the compute dtype.
using RealRef = std::function<double(double, double, bool integral)>;

struct BinaryCase {
  const char* name;
  std::function<array(const array&, const array&)> op;
  RealRef ref;
  std::function<cd(cd, cd)> cref;  // empty when complex64 is rejected
  Rule rule;
  double alo = -2, ahi = 2, blo = -2, bhi = 2;  // domains of the random inputs
  bool ties = false;  // integer-valued inputs, so that equal elements are common
};

double python_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  return r;
}
double floor_div_ref(double a, double b, bool integral) {
  if (b == 0) return integral ? 0 : a / b;
  return std::floor(a / b);
}
double remainder_ref(double a, double b, bool integral) {
  if (b == 0) return integral ? 0 : kNaN;
  return python_mod(a, b);
}
double power_ref(double a, double b, bool integral) {
  if (integral && b < 0) return 0;  // every base, as MLX
  return std::pow(a, b);
}
double logaddexp_ref(double a, double b, bool) {
  if (a == b) return a + std::numbers::ln2;
  double m = std::max(a, b);
  return std::isnan(a - b) ? kNaN : m + std::log1p(std::exp(-std::abs(a - b)));
}
int64_t to_int(double v) {
  return static_cast<int64_t>(v);
}

#define OP2(NAME) [](const array& a, const array& b) { return NAME(a, b); }

const std::vector<BinaryCase>& cases() {
  static const std::vector<BinaryCase> table = {
      {"add", OP2(add), [](double a, double b, bool) { return a + b; },
       [](cd a, cd b) { return a + b; }, Rule::arithmetic},
      {"subtract", OP2(subtract), [](double a, double b, bool) { return a - b; },
       [](cd a, cd b) { return a - b; }, Rule::no_bool},
      {"multiply", OP2(multiply), [](double a, double b, bool) { return a * b; },
       [](cd a, cd b) { return a * b; }, Rule::arithmetic, -3, 3, -3, 3},
      {"divide", OP2(divide), [](double a, double b, bool) { return a / b; },
       [](cd a, cd b) { return a / b; }, Rule::true_divide, -3, 3, -3, 3},
      {"floor_divide", OP2(floor_divide), floor_div_ref, nullptr, Rule::real, -9, 9, -4, 4},
      {"remainder", OP2(remainder), remainder_ref, nullptr, Rule::real, -9, 9, -4, 4},
      {"power", OP2(power), power_ref, [](cd a, cd b) { return std::pow(a, b); }, Rule::arithmetic,
       -3, 4, -2, 4},
      {"maximum", OP2(maximum), [](double a, double b, bool) { return std::max(a, b); }, nullptr,
       Rule::real, -3, 3, -3, 3, true},
      {"minimum", OP2(minimum), [](double a, double b, bool) { return std::min(a, b); }, nullptr,
       Rule::real, -3, 3, -3, 3, true},
      {"arctan2", OP2(arctan2), [](double a, double b, bool) { return std::atan2(a, b); }, nullptr,
       Rule::real_inexact},
      {"logaddexp", OP2(logaddexp), logaddexp_ref,
       [](cd a, cd b) { return std::log(std::exp(a) + std::exp(b)); }, Rule::inexact, -5, 5, -5, 5},
      {"equal", OP2(equal), [](double a, double b, bool) { return double(a == b); },
       [](cd a, cd b) { return cd(a == b); }, Rule::compare, -2, 2, -2, 2, true},
      {"not_equal", OP2(not_equal), [](double a, double b, bool) { return double(a != b); },
       [](cd a, cd b) { return cd(a != b); }, Rule::compare, -2, 2, -2, 2, true},
      {"less", OP2(less), [](double a, double b, bool) { return double(a < b); }, nullptr,
       Rule::compare_real, -2, 2, -2, 2, true},
      {"less_equal", OP2(less_equal), [](double a, double b, bool) { return double(a <= b); },
       nullptr, Rule::compare_real, -2, 2, -2, 2, true},
      {"greater", OP2(greater), [](double a, double b, bool) { return double(a > b); }, nullptr,
       Rule::compare_real, -2, 2, -2, 2, true},
      {"greater_equal", OP2(greater_equal), [](double a, double b, bool) { return double(a >= b); },
       nullptr, Rule::compare_real, -2, 2, -2, 2, true},
      {"logical_and", OP2(logical_and),
       [](double a, double b, bool) { return double(a != 0 && b != 0); },
       [](cd a, cd b) { return cd(a != 0.0 && b != 0.0); }, Rule::logical, -1, 2, -1, 2, true},
      {"logical_or", OP2(logical_or),
       [](double a, double b, bool) { return double(a != 0 || b != 0); },
       [](cd a, cd b) { return cd(a != 0.0 || b != 0.0); }, Rule::logical, -1, 2, -1, 2, true},
      {"bitwise_and", OP2(bitwise_and),
       [](double a, double b, bool) { return double(to_int(a) & to_int(b)); }, nullptr,
       Rule::integral, -100, 100, -100, 100},
      {"bitwise_or", OP2(bitwise_or),
       [](double a, double b, bool) { return double(to_int(a) | to_int(b)); }, nullptr,
       Rule::integral, -100, 100, -100, 100},
      {"bitwise_xor", OP2(bitwise_xor),
       [](double a, double b, bool) { return double(to_int(a) ^ to_int(b)); }, nullptr,
       Rule::integral, -100, 100, -100, 100},
      {"left_shift", OP2(left_shift),
       [](double a, double b, bool) { return a * std::ldexp(1.0, static_cast<int>(b)); }, nullptr,
       Rule::shift, -50, 50, 0, 7},
      {"right_shift", OP2(right_shift),
       [](double a, double b, bool) {
         return std::floor(a / std::ldexp(1.0, static_cast<int>(b)));
       },
       nullptr, Rule::shift, -50, 50, 0, 7},
  };
  return table;
}

array random_operand(const Shape& shape, Dtype d, double lo, double hi, bool ties) {
  if (is_unsigned(d)) lo = std::max(lo, 0.0), hi = std::max(hi, lo + 1);
  if (ties && d != bool_) return astype(test::random_array(shape, int32, lo, hi), d);
  return test::random_array(shape, d, lo, hi);
}

// v reduced into the range of integer dtype d (two's complement), or v != 0 for bool.
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

// Checks op(a, b) against the loop reference over the broadcast of a and b.
void check(const BinaryCase& c, const array& a, const array& b, const std::string& what) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  auto od = result_dtype(c.rule, t);
  SCOPED_TRACE(std::string(c.name) + " " + what + " " + std::string(dtype_name(a.dtype())) + " x " +
               std::string(dtype_name(b.dtype())));
  if (!od) {
    try {
      c.op(a, b).eval();
      ADD_FAILURE() << "should throw";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("[") + c.name + "]"), std::string::npos)
          << e.what();
    }
    return;
  }
  array out = c.op(a, b);
  Shape shape = broadcast_shapes(a.shape(), b.shape());
  ASSERT_EQ(out.dtype(), *od);
  ASSERT_EQ(out.shape(), shape);
  array ab = broadcast_to(a, shape), bb = broadcast_to(b, shape);
  if (is_complex(t)) {
    auto xa = test::to_complex(ab), xb = test::to_complex(bb);
    auto got = is_complex(*od) ? test::to_complex(out) : std::vector<cd>();
    auto got_real = test::to_double(out);
    for (size_t i = 0; i < xa.size(); ++i) {
      cd e = c.cref(xa[i], xb[i]);
      cd g = is_complex(*od) ? got[i] : cd(got_real[i]);
      if (std::abs(g - e) > 1e-4 * (1 + std::abs(e))) {
        ADD_FAILURE() << "element " << i << ": got " << g << ", expected " << e;
        return;
      }
    }
    return;
  }
  // The compute dtype: what the op converted both inputs to.
  Dtype compute = c.rule == Rule::compare || c.rule == Rule::compare_real ? t
                  : c.rule == Rule::logical                               ? bool_
                                                                          : *od;
  bool integral = is_integral(compute);
  auto xa = test::to_double(ab), xb = test::to_double(bb);
  std::vector<double> want(xa.size());
  for (size_t i = 0; i < xa.size(); ++i) {
    double v = c.ref(xa[i], xb[i], integral);
    want[i] = is_integral(*od) ? wrap(v, *od) : v;
  }
  if (!is_integral(*od)) want = test::to_double(array(want.begin(), shape, *od));  // round
  test::expect_allclose(out, shape, want);
}

}  // namespace

// Every op on every dtype (both inputs alike), in every layout of the operands.
TEST(Binary, EveryOpEveryDtypeEveryLayout) {
  for (const auto& c : cases()) {
    for (Dtype d : all_dtypes) {
      auto A = [&](Shape s) { return random_operand(s, d, c.alo, c.ahi, c.ties); };
      auto B = [&](Shape s) { return random_operand(s, d, c.blo, c.bhi, c.ties); };
      if (!result_dtype(c.rule, d)) {
        check(c, A({2, 3}), B({2, 3}), "error");
        continue;
      }
      check(c, A({4, 5}), B({4, 5}), "contiguous");
      check(c, A({3, 1}), B({1, 4}), "(3,1) x (1,4)");
      check(c, A({}), B({4, 5}), "scalar x array");
      check(c, A({4, 5}), B({}), "array x scalar");
      check(c, A({}), B({}), "0-d x 0-d");
      check(c, A({2, 3, 4}), B({4}), "(2,3,4) x (4,)");
      check(c, transpose(A({5, 4})), B({4, 5}), "transposed x contiguous");
      check(c, transpose(A({5, 4})), transpose(B({5, 4})), "transposed x transposed");
      check(c, slice(A({4, 10}), {0, 0}, {4, 10}, {1, 2}), broadcast_to(B({1, 5}), {4, 5}),
            "strided x broadcast");
      check(c, slice(A({5, 10}), {4, 9}, {0, 0}, {-1, -2}), transpose(B({5, 4})),
            "reversed x transposed");
      check(c, A({0, 5}), B({5}), "empty x (5,)");
      check(c, A({0, 5}), B({0, 5}), "empty x empty");
    }
  }
}

// Mixed dtypes promote (promote_types) before the op's own rule applies.
TEST(Binary, MixedDtypesPromote) {
  const std::vector<std::pair<Dtype, Dtype>> pairs = {
      {int8, uint8},    {int32, float16},    {bool_, int8},      {uint16, int32},
      {uint64, int64},  {float16, bfloat16}, {float32, float64}, {int64, float32},
      {bool_, float32}, {int16, complex64},  {uint8, bool_}};
  for (const auto& c : cases()) {
    for (auto [da, db] : pairs) {
      check(c, random_operand({3, 4}, da, c.alo, c.ahi, c.ties),
            random_operand({4}, db, c.blo, c.bhi, c.ties), "mixed");
    }
  }
}

TEST(Binary, IntegerDivisionEdges) {
  for (Dtype d : {int8, int16, int32, int64}) {
    SCOPED_TRACE(dtype_name(d));
    double lo = -std::ldexp(1.0, 8 * d.size - 1);
    array a = array({7.0, -7.0, 7.0, -7.0, 5.0, lo, lo}, d);
    array b = array({2.0, 2.0, -2.0, -2.0, 0.0, -1.0, 1.0}, d);
    EXPECT_EQ(test::to_double(floor_divide(a, b)), (std::vector<double>{3, -4, -4, 3, 0, lo, lo}));
    EXPECT_EQ(test::to_double(remainder(a, b)), (std::vector<double>{1, 1, -1, -1, 0, 0, 0}));
  }
  array u = array({7u, 0u, 9u}, uint32);
  EXPECT_EQ(test::to_double(floor_divide(u, array({0u, 0u, 4u}, uint32))),
            (std::vector<double>{0, 0, 2}));
  EXPECT_EQ(test::to_double(remainder(u, array({0u, 3u, 4u}, uint32))),
            (std::vector<double>{0, 0, 1}));
  // True division of integers is float32 and follows IEEE for zero divisors.
  array q = divide(array({1, -1, 0}), array({0, 0, 0}));
  EXPECT_EQ(q.dtype(), float32);
  test::expect_allclose(q, {3}, {kInf, -kInf, kNaN});
}

TEST(Binary, FloatFloorDivideAndRemainderSpecials) {
  for (Dtype d : {float16, bfloat16, float32, float64}) {
    SCOPED_TRACE(dtype_name(d));
    array a({1.0, -1.0, 0.0, 5.0, -5.0, 6.0, -0.0, kInf}, d);
    array b({0.0, 0.0, 0.0, kInf, kInf, 3.0, 2.0, 2.0}, d);
    test::expect_allclose(floor_divide(a, b), {8}, {kInf, -kInf, kNaN, 0, -1, 2, -0.0, kNaN});
    test::expect_allclose(remainder(a, b), {8}, {kNaN, kNaN, kNaN, 5, kInf, 0, 0, kNaN});
    // The remainder of an exact division is a zero with the divisor's sign (NumPy).
    EXPECT_TRUE(std::signbit(test::to_double(remainder(array({6.0}, d), array({-3.0}, d)))[0]));
  }
}

TEST(Binary, ShiftCountsOutOfRange) {
  array one = array({1, 1, 1, 1}, int32);
  EXPECT_EQ(test::to_double(left_shift(one, array({31, 32, 100, -1}, int32))),
            (std::vector<double>{-2147483648.0, 0, 0, 0}));
  EXPECT_EQ(
      test::to_double(right_shift(array({-8, 8, -8, 8}, int32), array({40, 40, -1, 3}, int32))),
      (std::vector<double>{-1, 0, -1, 1}));
  array u = array({uint8_t(0x81), uint8_t(0x81)}, uint8);
  EXPECT_EQ(test::to_double(left_shift(u, array({uint8_t(1), uint8_t(8)}, uint8))),
            (std::vector<double>{2, 0}));
  EXPECT_EQ(test::to_double(right_shift(u, array({uint8_t(7), uint8_t(9)}, uint8))),
            (std::vector<double>{1, 0}));
  // Bools shift as uint8.
  array t = left_shift(array({true, true}), array({true, false}));
  EXPECT_EQ(t.dtype(), uint8);
  EXPECT_EQ(test::to_double(t), (std::vector<double>{2, 1}));
}

TEST(Binary, IntegerPowers) {
  array base = array({2, 1, -1, -1, 0, 3, -2, 0}, int32);
  array expo = array({-1, -5, -3, -2, -2, 4, 3, 0}, int32);
  // Negative exponents give 0 for every base (MLX's rule).
  EXPECT_EQ(test::to_double(power(base, expo)), (std::vector<double>{0, 0, 0, 0, 0, 81, -8, 1}));
  // Wrap-around, as C's unsigned arithmetic: 3^5 = 243 = -13 in int8.
  EXPECT_EQ(power(array(int8_t(3), int8), array(int8_t(5), int8)).item<int>(), -13);
  EXPECT_EQ(power(array(int64_t(3)), array(int64_t(39))).item<int64_t>(), 4052555153018976267LL);
}

TEST(Binary, NaNPropagationAndInfinities) {
  for (Dtype d : {float16, bfloat16, float32, float64}) {
    SCOPED_TRACE(dtype_name(d));
    array a({kNaN, 1.0, kNaN, -kInf, kInf}, d);
    array b({1.0, kNaN, kNaN, 2.0, 2.0}, d);
    test::expect_allclose(maximum(a, b), {5}, {kNaN, kNaN, kNaN, 2.0, kInf});
    test::expect_allclose(minimum(a, b), {5}, {kNaN, kNaN, kNaN, -kInf, 2.0});
    test::expect_allclose(
        logaddexp(array({-kInf, kInf, 1.0, kNaN, 60.0}, d),
                  array({-kInf, kInf, kNaN, 1.0, 60.0}, d)),
        {5}, test::to_double(array({-kInf, kInf, kNaN, kNaN, 60.0 + std::numbers::ln2}, d)));
    EXPECT_EQ(test::to_double(equal(a, b)), (std::vector<double>{0, 0, 0, 0, 0}));
    EXPECT_EQ(test::to_double(not_equal(a, b)), (std::vector<double>{1, 1, 1, 1, 1}));
    EXPECT_EQ(test::to_double(equal(a, a)), (std::vector<double>{0, 1, 0, 1, 1}));
  }
  // No overflow for large arguments (exp(1000) would be inf).
  test::expect_allclose(logaddexp(array(1000.0), array(999.0)), {},
                        {1000.0 + std::log1p(std::exp(-1.0))});
}

TEST(Binary, ComplexEquality) {
  array a(std::vector<complex64_t>{{1, 2}, {1, 2}, {NAN, 0}}.begin(), {3}, complex64);
  array b(std::vector<complex64_t>{{1, 2}, {1, -2}, {NAN, 0}}.begin(), {3}, complex64);
  EXPECT_EQ(test::to_double(equal(a, b)), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(test::to_double(not_equal(a, b)), (std::vector<double>{0, 1, 1}));
}

TEST(Binary, Operators) {
  array a = test::random_array({3, 4}, float32, 0.5, 2);
  array b = test::random_array({4}, float32, 0.5, 2);
  auto same = [](const array& x, const array& y) {
    EXPECT_EQ(x.dtype(), y.dtype());
    EXPECT_EQ(test::to_double(x), test::to_double(y));
  };
  same(a + b, add(a, b));
  same(a - b, subtract(a, b));
  same(a * b, multiply(a, b));
  same(a / b, divide(a, b));
  same(a % b, remainder(a, b));
  same(a == b, equal(a, b));
  same(a != b, not_equal(a, b));
  same(a < b, less(a, b));
  same(a <= b, less_equal(a, b));
  same(a > b, greater(a, b));
  same(a >= b, greater_equal(a, b));
  same(a && b, logical_and(a, b));
  same(a || b, logical_or(a, b));
  array i = test::random_array({3, 4}, int32, -50, 50), j = test::random_array({4}, int32, 0, 5);
  same(i & j, bitwise_and(i, j));
  same(i | j, bitwise_or(i, j));
  same(i ^ j, bitwise_xor(i, j));
  same(i << j, left_shift(i, j));
  same(i >> j, right_shift(i, j));
  // A C++ scalar becomes a 0-d array of its own dtype (float + double promotes, as MLX).
  same(a + 1.0f, add(a, array(1.0f)));
  same(2.0f * a, multiply(array(2.0f), a));
  EXPECT_EQ((i + 1).dtype(), int32);
  EXPECT_EQ((a / 2).dtype(), float32);
}

TEST(Binary, Errors) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  array x({1.0f, 2.0f}), y({1.0f, 2.0f, 3.0f});
  EXPECT_EQ(message([&] { add(x, y); }), "[add] Shapes (2,) and (3,) cannot be broadcast.");
  EXPECT_EQ(message([&] { x < y; }), "[less] Shapes (2,) and (3,) cannot be broadcast.");
  EXPECT_EQ(message([&] { subtract(array(true), array(false)); }),
            "[subtract] Not supported for bool inputs; use logical_xor (not_equal) instead.");
  EXPECT_EQ(message([&] { maximum(array(complex64_t(1, 1)), x); }),
            "[maximum] Not supported for complex64 inputs (complex numbers are not ordered).");
  EXPECT_EQ(message([&] { bitwise_and(x, array(1)); }),
            "[bitwise_and] Not supported for float32 inputs; it needs integer or bool arrays.");
  // The failed calls left the inputs usable.
  test::expect_allclose(add(x, x), {2}, {2.0, 4.0});
}

// Results are right when an input's buffer is donated to the output (a temporary used once).
TEST(Binary, DonatedInputs) {
  array a = test::random_array({1000}, float32);
  array b = test::random_array({1000}, float32);
  auto xa = test::to_double(a), xb = test::to_double(b);
  array out = multiply(add(a, b), subtract(a, b));  // both temporaries donatable
  std::vector<double> want(xa.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = (xa[i] + xb[i]) * (xa[i] - xb[i]);
  test::expect_allclose(out, {1000}, want, 1e-5);
  // Different item size: comparisons cannot take a float32 buffer.
  array cmp = greater(add(a, b), b);
  auto c = test::to_double(cmp);
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_EQ(c[i], double(float(xa[i] + xb[i]) > float(xb[i])));
}

// Large inputs take the multi-threaded flat and strided paths.
TEST(Binary, LargeArrays) {
  array a = test::random_array({3, 1 << 17}, float32), b = test::random_array({1 << 17}, float32);
  array s = add(a, b);
  array t = add(transpose(a), reshape(b, {-1, 1}));
  auto xa = test::to_double(a), xb = test::to_double(b);
  std::vector<double> want(xa.size()), want_t(xa.size());
  const size_t n = 1 << 17;
  for (size_t i = 0; i < xa.size(); ++i) want[i] = xa[i] + xb[i % n];
  for (size_t j = 0; j < n; ++j) {
    for (size_t r = 0; r < 3; ++r) want_t[j * 3 + r] = xa[r * n + j] + xb[j];
  }
  test::expect_allclose(s, a.shape(), want);
  test::expect_allclose(t, {1 << 17, 3}, want_t);
}

// Transposed operands larger than a tile (64) walk the last two dimensions in tiles,
// ragged at the edges, under a batch dimension; every element must be written once.
TEST(Binary, TransposedOperandsWalkInTiles) {
  const int64_t B = 2, R = 131, C = 70;
  array a = test::random_array({B, C, R}, float32), b = test::random_array({B, R, C}, float32);
  array at = swapaxes(a, 1, 2);  // (B, R, C) with strides (C*R, 1, R)
  auto xa = test::to_double(a), xb = test::to_double(b);
  std::vector<double> sum(B * R * C), neg(B * R * C), sel(B * R * C);
  for (int64_t n = 0; n < B; ++n) {
    for (int64_t i = 0; i < R; ++i) {
      for (int64_t j = 0; j < C; ++j) {
        const double va = xa[(n * C + j) * R + i], vb = xb[(n * R + i) * C + j];
        sum[(n * R + i) * C + j] = va + vb;
        neg[(n * R + i) * C + j] = -va;
        sel[(n * R + i) * C + j] = va > 0 ? va : vb;
      }
    }
  }
  test::expect_allclose(add(at, b), {B, R, C}, sum);
  test::expect_allclose(add(b, at), {B, R, C}, sum);
  test::expect_allclose(negative(at), {B, R, C}, neg);
  test::expect_allclose(
      exp(at), {B, R, C},
      test::map_ref(test::to_double(contiguous(at)), [](double v) { return std::exp(v); }));
  test::expect_allclose(where(greater(at, array(0.0f)), at, b), {B, R, C}, sel);
  array ai = astype(at, int32);
  auto xi = test::to_double(contiguous(ai));
  std::vector<double> doubled(xi.size());
  for (size_t k = 0; k < xi.size(); ++k) doubled[k] = 2 * xi[k];
  test::expect_allclose(add(ai, ai), {B, R, C}, doubled);
}

// Gradients by central differences in float64 (the full table is in test_grad_check.cpp).
TEST(Binary, GradientsMatchFiniteDifferences) {
  struct G {
    std::function<array(const array&, const array&)> f;
    double alo, ahi, blo, bhi;
  };
  std::vector<G> fs = {{OP2(divide), -2, 2, 0.5, 2},     {OP2(power), 0.5, 2, -2, 2},
                       {OP2(arctan2), -2, 2, -2, 2},     {OP2(logaddexp), -3, 3, -3, 3},
                       {OP2(remainder), 0.1, 5, 0.7, 2}, {OP2(maximum), -2, 2, -2, 2},
                       {OP2(minimum), -2, 2, -2, 2},     {OP2(multiply), -2, 2, -2, 2}};
  const double h = 1e-6;
  for (const auto& g : fs) {
    array a = test::random_array({6}, float64, g.alo, g.ahi);
    array b = test::random_array({6}, float64, g.blo, g.bhi);
    array ct = test::random_array({6}, float64, -1, 1);
    auto fn = [f = g.f](const std::vector<array>& x) { return std::vector<array>{f(x[0], x[1])}; };
    auto [outs, grads] = vjp(fn, {a, b}, {ct});
    auto [outs2, tangents] = jvp(fn, {a, b}, {ct, ct});
    auto cts = test::to_double(ct);
    std::vector<double> sum(6, 0.0);
    for (int arg = 0; arg < 2; ++arg) {
      array ap = arg == 0 ? add(a, array(h)) : a, am = arg == 0 ? subtract(a, array(h)) : a;
      array bp = arg == 1 ? add(b, array(h)) : b, bm = arg == 1 ? subtract(b, array(h)) : b;
      auto d = test::to_double(divide(subtract(g.f(ap, bp), g.f(am, bm)), array(2 * h)));
      std::vector<double> want(6);
      for (size_t i = 0; i < 6; ++i) want[i] = d[i] * cts[i], sum[i] += want[i];
      test::expect_allclose(grads[arg], {6}, want, 1e-6);
    }
    test::expect_allclose(tangents[0], {6}, sum, 1e-6);
  }
}

TEST(Binary, Vmap) {
  using Fn2 = std::function<array(const array&, const array&)>;
  array a = test::random_array({4, 3}, float32), b = test::random_array({3}, float32);
  // Mapped along axis 0 of a, b unmapped: every row of a with all of b.
  auto f = vmap(Fn2(OP2(logaddexp)), 0, -1);
  test::expect_allclose(f(a, b), {4, 3}, test::to_double(logaddexp(a, b)));
  // Both mapped, along different axes: row i of a with column i of c.
  array c = test::random_array({3, 4}, float32);
  auto g = vmap(Fn2(OP2(power)), 0, 1);
  array base = abs(a);
  test::expect_allclose(g(base, c), {4, 3}, test::to_double(power(base, transpose(c))));
}
