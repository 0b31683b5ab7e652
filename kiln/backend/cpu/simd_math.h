// Math functions written so that a loop calling them auto-vectorizes: straight-line code,
// selects instead of branches, no library calls (std::exp in a loop stays scalar).
#pragma once

#include <bit>
#include <cstdint>

// Compiles a function once per x86-64 micro-architecture level and picks the best at load
// time, so hot loops get AVX2/AVX-512 without raising the build's baseline. `flatten`
// inlines every call (the functions below included) into each version, so that none runs
// baseline code. Where the ISA has FMA, GCC contracts a * b + c into it: results may then
// differ by an ulp between machines, never between two calls on one machine.
// Not under ThreadSanitizer: the clones' IFUNC resolvers run during relocation, before the
// sanitizer's runtime is initialized, and its instrumentation of them crashes the loader.
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
#define KILN_SIMD_CLONES \
  __attribute__((flatten, target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#elif defined(__GNUC__)
#define KILN_SIMD_CLONES __attribute__((flatten))
#else
#define KILN_SIMD_CLONES
#endif

namespace kiln::cpu {

/** c ? a : b as bit operations: compilers keep this a vector blend rather than turning it
 * back into a branch (which stops vectorization). */
inline float select_bits(bool c, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

/**
 * e^x in float32, at most about 1 ulp from the correctly rounded result over the whole
 * float range (tests/test_unary.cpp checks every 4099th float against double exp).
 * exp(+inf) = +inf, exp(-inf) = 0, NaN stays NaN, overflow gives +inf and small results
 * underflow gradually through the subnormals to 0.
 *
 * Method (Cody and Waite, "Software Manual for the Elementary Functions", 1980): with
 * n = round(x / ln 2) and r = x - n ln 2 (|r| <= ln(2)/2, ln 2 split in two parts so that
 * n * ln2_hi is exact), e^x = 2^n e^r; e^r is its Taylor polynomial of degree 7, whose
 * truncation error (|r|^8 / 8! < 5.2e-9) is below 0.1 ulp.
 */
inline float exp_f32(float x) {
  // Beyond these bounds the result is +inf or 0 anyway; clamping keeps n small, and the
  // two-step scaling below then produces the inf / subnormal / zero results. NaN compares
  // false both times and passes through.
  x = select_bits(x > 88.8f, 88.8f, x);
  x = select_bits(x < -104.0f, -104.0f, x);

  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // 9 significant bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;
  // Adding 1.5 * 2^23 rounds to the nearest integer (ties to even) and leaves that
  // integer in the low mantissa bits: a vectorizable rint that also yields n's bits.
  constexpr float kShifter = 12582912.0f;
  const float t = x * kLog2e + kShifter;
  const int32_t n =
      static_cast<int32_t>(std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kShifter));
  const float nf = t - kShifter;
  float r = x - nf * kLn2Hi;
  r = r - nf * kLn2Lo;

  // e^r = 1 + (r + r^2 q(r)) with q(r) = 1/2! + r/3! + ... + r^5/7!; adding the small
  // terms first leaves a single rounding at the scale of 1.
  float q = 1.98412698e-4f;    // 1/7!
  q = q * r + 1.38888889e-3f;  // 1/6!
  q = q * r + 8.33333333e-3f;  // 1/5!
  q = q * r + 4.16666667e-2f;  // 1/4!
  q = q * r + 1.66666667e-1f;  // 1/3!
  q = q * r + 0.5f;
  const float p = 1.0f + (r + (r * r) * q);

  // 2^n as two factors 2^n1 * 2^n2 (n1 = floor(n / 2)), each a normal float for
  // n in [-151, 129]; the final product rounds once, into inf or the subnormals if needed.
  const int32_t n1 = n >> 1;
  const int32_t n2 = n - n1;
  const float s1 = std::bit_cast<float>(static_cast<uint32_t>(n1 + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<uint32_t>(n2 + 127) << 23);
  return p * s1 * s2;
}

/**
 * tanh(x) in float32, at most about 1 ulp from the correctly rounded result (tested on
 * every 4099th float against double tanh). tanh(+-inf) = +-1, NaN stays NaN, signed
 * zeros and subnormals pass through.
 *
 * Below |x| = 1, tanh(x) = x + x^3 P(x^2) with P the degree-7 least-squares fit on
 * Chebyshev nodes of (tanh(x) - x) / x^3 over x^2 in [0, 1] (relative error 2e-9),
 * computed for kiln. Above, 1 - 2 / (e^(2|x|) + 1) loses less than a bit to cancellation
 * (tanh(1) = 0.76).
 */
inline float tanh_f32(float x) {
  const float a = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu);
  const float u = a * a;
  float p = 1.438288214e-04f;
  p = p * u - 9.271475334e-04f;
  p = p * u + 3.211853749e-03f;
  p = p * u - 8.701321090e-03f;
  p = p * u + 2.183077769e-02f;
  p = p * u - 5.396362237e-02f;
  p = p * u + 1.333331198e-01f;
  p = p * u - 3.333333317e-01f;
  const float small = a + a * u * p;
  // e^(2|x|) = inf (|x| > 44) gives exactly 1.
  const float large = 1.0f - 2.0f / (exp_f32(2.0f * a) + 1.0f);
  const float t = select_bits(a < 1.0f, small, large);
  // Put x's sign back (NaN keeps its own).
  return std::bit_cast<float>(std::bit_cast<uint32_t>(t) |
                              (std::bit_cast<uint32_t>(x) & 0x80000000u));
}

/**
 * erf(x) in float32, at most about 1 ulp from the correctly rounded result (tested on every
 * 4099th float against double erf). erf(+-inf) = +-1, NaN stays NaN, signed zeros and
 * subnormals pass through.
 *
 * Below |x| = 1, erf(x) = x + x S(x^2) with S the degree-6 least-squares fit on Chebyshev
 * nodes of erf(x) / x - 1 over x^2 in [0, 1] (relative error 1.3e-9 of erf(x) / x), so the
 * leading term is exact. Above, erf(x) = 1 - e^(-x^2) R(1/x) with R the degree-9 fit of
 * erfc(x) e^(x^2) over 1/x in [1/4, 1] (relative error 1.7e-8; erfc <= 0.16 there, and
 * erf(x) rounds to 1 beyond |x| = 3.92, so |x| is clamped to 4). Both fits computed for kiln.
 */
inline float erf_f32(float x) {
  const float a = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu);
  const float u = a * a;
  float s = 7.847259258e-05f;
  s = s * u - 8.008189034e-04f;
  s = s * u + 5.188099109e-03f;
  s = s * u - 2.685369179e-02f;
  s = s * u + 1.128358245e-01f;
  s = s * u - 3.761262596e-01f;
  s = s * u + 1.283791661e-01f;
  const float small = a + a * s;
  // NaN compares false and stays NaN through the large branch.
  const float c = select_bits(a > 4.0f, 4.0f, a);
  const float t = 1.0f / c;
  float r = 2.967723645e-02f;
  r = r * t - 1.740014404e-01f;
  r = r * t + 4.245884418e-01f;
  r = r * t - 5.183950067e-01f;
  r = r * t + 2.225583047e-01f;
  r = r * t + 2.390853763e-01f;
  r = r * t - 3.789607584e-01f;
  r = r * t + 2.122417279e-02f;
  r = r * t + 5.616815090e-01f;
  r = r * t + 1.257577824e-04f;
  const float large = 1.0f - exp_f32(-(c * c)) * r;
  const float e = select_bits(a < 1.0f, small, large);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(e) |
                              (std::bit_cast<uint32_t>(x) & 0x80000000u));
}

}  // namespace kiln::cpu
