#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "test_utils.h"

using namespace kiln;

TEST(Dtype, SizesAndNames) {
  for (auto d : all_dtypes) {
    EXPECT_EQ(dtype_from_name(std::string(dtype_name(d))), d);
  }
  EXPECT_EQ(bool_.size, 1);
  EXPECT_EQ(bfloat16.size, 2);
  EXPECT_EQ(complex64.size, 8);
  EXPECT_THROW(dtype_from_name("float8"), std::invalid_argument);
}

TEST(Dtype, PromotionTableMatchesMLX) {
  // Spot checks of the rules, including where MLX departs from NumPy.
  EXPECT_EQ(promote_types(bool_, int8), int8);
  EXPECT_EQ(promote_types(uint8, int8), int16);
  EXPECT_EQ(promote_types(uint16, int16), int32);
  EXPECT_EQ(promote_types(uint32, int32), int64);
  EXPECT_EQ(promote_types(uint64, int8), float32);    // NumPy: float64
  EXPECT_EQ(promote_types(int64, float16), float16);  // NumPy: float64
  EXPECT_EQ(promote_types(int32, bfloat16), bfloat16);
  EXPECT_EQ(promote_types(float16, bfloat16), float32);
  EXPECT_EQ(promote_types(float32, float64), float64);
  EXPECT_EQ(promote_types(float64, complex64), complex64);
  EXPECT_EQ(promote_types(uint8, uint64), uint64);
  // Symmetric, idempotent, and bool is the identity.
  for (auto a : all_dtypes) {
    EXPECT_EQ(promote_types(a, a), a);
    EXPECT_EQ(promote_types(bool_, a), a);
    for (auto b : all_dtypes) EXPECT_EQ(promote_types(a, b), promote_types(b, a)) << a << " " << b;
  }
  // A promoted type can hold every value of both inputs among integer pairs of one sign.
  for (auto a : all_dtypes)
    for (auto b : all_dtypes) {
      auto r = promote_types(a, b);
      if (is_integral(a) && is_integral(b) && kind(a) == kind(b)) {
        EXPECT_EQ(r.size, std::max(a.size, b.size));
      }
    }
}

TEST(Dtype, Categories) {
  EXPECT_TRUE(issubdtype(float16, floating));
  EXPECT_TRUE(issubdtype(bfloat16, inexact));
  EXPECT_TRUE(issubdtype(int8, signedinteger));
  EXPECT_TRUE(issubdtype(uint32, integer));
  EXPECT_FALSE(issubdtype(uint32, signedinteger));
  EXPECT_TRUE(issubdtype(complex64, complexfloating));
  EXPECT_TRUE(issubdtype(complex64, number));
  EXPECT_FALSE(issubdtype(bool_, number));
  EXPECT_TRUE(issubdtype(floating, inexact));
  EXPECT_FALSE(issubdtype(inexact, floating));
}

namespace {
// Reference RNE conversion to binary16 through double arithmetic on the exact value grid.
uint16_t ref_half_bits(float f) {
  if (std::isnan(f)) return 0x7E00;
  double v = std::abs(static_cast<double>(f));
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (v >= 65520.0) return sign | 0x7C00;
  // Candidates on the half grid around v; pick nearest, ties to even mantissa.
  int e = v < std::ldexp(1.0, -14) ? -14 : std::ilogb(v);
  double ulp = std::ldexp(1.0, e - 10);
  double q = v / ulp, fl = std::floor(q);
  double r = q - fl;
  double m = fl;
  if (r > 0.5 || (r == 0.5 && std::fmod(fl, 2.0) == 1.0)) m = fl + 1;
  double rv = m * ulp;
  // Encode rv.
  if (rv == 0) return sign;
  if (rv < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(rv / std::ldexp(1.0, -24));
  int ee = std::ilogb(rv);
  uint16_t mant = static_cast<uint16_t>((rv / std::ldexp(1.0, ee) - 1.0) * 1024.0);
  return sign | static_cast<uint16_t>((ee + 15) << 10) | mant;
}
}  // namespace

TEST(HalfTypes, Float16RoundTripsEveryValue) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    auto h = float16_t::from_bits(static_cast<uint16_t>(b));
    float f = h;
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(float(float16_t(f))));
      continue;
    }
    EXPECT_EQ(float16_t(f).bits, b) << std::hex << b;
  }
}

TEST(HalfTypes, Float16RoundsToNearestEven) {
  auto& g = test::rng();
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t x = bits(g);
    float f;
    std::memcpy(&f, &x, 4);
    if (std::isnan(f) || std::isinf(f)) continue;
    EXPECT_EQ(float16_t(f).bits, ref_half_bits(f)) << f;
  }
  // Ties: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 and rounds to even (1).
  EXPECT_EQ(float16_t(1.0f + std::ldexp(1.0f, -11)).bits, 0x3C00);
  EXPECT_EQ(float16_t(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3C02);
  EXPECT_EQ(float16_t(65504.0f).bits, 0x7BFF);
  EXPECT_EQ(float16_t(65519.0f).bits, 0x7BFF);
  EXPECT_EQ(float16_t(65520.0f).bits, 0x7C00);
  EXPECT_EQ(float16_t(std::ldexp(1.0f, -24)).bits, 0x0001);
  EXPECT_EQ(float16_t(std::ldexp(1.0f, -25)).bits, 0x0000);  // tie to even (0)
  EXPECT_EQ(float16_t(std::ldexp(1.5f, -25)).bits, 0x0001);
  EXPECT_TRUE(std::isinf(float(float16_t(std::numeric_limits<float>::infinity()))));
}

// The compiler's own binary16 (_Float16, IEEE conversions) as a second reference, over every
// exponent (every 65537th float, both signs) and densely around the subnormal boundary and
// the overflow threshold; half -> float over every non-NaN half. NaNs stay NaNs, quiet, with
// their top payload bits (a float16 signaling NaN widens with its payload as is).
TEST(HalfTypes, Float16ConversionsMatchTheCompilersBinary16) {
#ifdef __FLT16_MAX__
  auto check = [](uint32_t x) {
    const float f = std::bit_cast<float>(x);
    if (std::isnan(f)) return;
    EXPECT_EQ(float16_t(f).bits, std::bit_cast<uint16_t>(static_cast<_Float16>(f)))
        << std::hex << x;
  };
  for (uint64_t x = 0; x <= 0xFFFFFFFFull; x += 65537) check(static_cast<uint32_t>(x));
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t x = 0x33000000u - 4096; x < 0x33000000u + 4096; ++x) check(sign | x);  // 2^-25
    for (uint32_t x = 0x38800000u - 4096; x < 0x38800000u + 4096; ++x) check(sign | x);  // 2^-14
    for (uint32_t x = 0x477FF000u - 4096; x < 0x477FF000u + 4096; ++x) check(sign | x);  // 65520
  }
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = std::bit_cast<_Float16>(static_cast<uint16_t>(b));
    if (h != h) continue;
    EXPECT_EQ(std::bit_cast<uint32_t>(float(float16_t::from_bits(static_cast<uint16_t>(b)))),
              std::bit_cast<uint32_t>(static_cast<float>(h)))
        << std::hex << b;
  }
#endif
  EXPECT_EQ(float16_t(std::bit_cast<float>(0x7FA00000u)).bits, 0x7F00);  // quieted, payload kept
  EXPECT_EQ(float16_t(std::bit_cast<float>(0xFFC00001u)).bits, 0xFE00);
  EXPECT_EQ(std::bit_cast<uint32_t>(float(float16_t::from_bits(0x7D01))), 0x7FA02000u);
}

TEST(HalfTypes, BFloat16RoundsToNearestEven) {
  auto& g = test::rng();
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t x = bits(g);
    float f;
    std::memcpy(&f, &x, 4);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(float(bfloat16_t(f))));
      continue;
    }
    // Reference: the nearer of the two truncations, ties to even.
    uint32_t lo = x & 0xFFFF0000u, hi = lo + 0x10000u;
    float flo, fhi;
    std::memcpy(&flo, &lo, 4);
    std::memcpy(&fhi, &hi, 4);
    // Past the largest finite value, the next grid point is 2^128 (it encodes as inf).
    double dfhi = std::isinf(fhi) ? std::copysign(std::ldexp(1.0, 128), fhi) : double(fhi);
    double dlo = std::abs(double(f) - flo), dhi = std::abs(double(f) - dfhi);
    uint16_t expect = static_cast<uint16_t>(
        (dlo < dhi || (dlo == dhi && ((lo >> 16) & 1) == 0)) ? lo >> 16 : hi >> 16);
    EXPECT_EQ(bfloat16_t(f).bits, expect) << f;
  }
}

TEST(HalfTypes, ArithmeticPromotesAndRounds) {
  float16_t a(1.0f), b(std::ldexp(1.0f, -11));
  EXPECT_EQ(float(a + b), 1.0f);  // the float sum rounds back to half
  auto widened = a + 0.5;         // half with double widens
  static_assert(std::is_same_v<decltype(widened), double>);
  auto kept = a + 2;  // half with int stays half
  static_assert(std::is_same_v<decltype(kept), float16_t>);
  EXPECT_EQ(float(kept), 3.0f);
  EXPECT_TRUE(bfloat16_t(2.0f) > bfloat16_t(1.0f));
}
