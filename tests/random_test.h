// Shared pieces of the random-number tests (test_random.cpp, test_random_distributions.cpp):
// fresh keys, host values, sample moments and the Kolmogorov-Smirnov statistic.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <utility>
#include <vector>

#include "kiln/random.h"
#include "test_utils.h"

namespace random_test {

using namespace kiln;
namespace rnd = kiln::random;

inline constexpr Dtype kFloatTypes[] = {float32, float64, float16, bfloat16};

// A fresh key per run (the seed of the test run is printed on failure).
inline array fresh_key() {
  return rnd::key(test::rng()());
}

inline std::pair<uint32_t, uint32_t> key_words(const array& key) {
  auto v = test::to_double(key);
  return {static_cast<uint32_t>(v[0]), static_cast<uint32_t>(v[1])};
}

template <typename T>
std::vector<T> values(array a) {
  a = contiguous(a);
  a.eval();
  return std::vector<T>(a.data<T>(), a.data<T>() + a.size());
}

inline double mean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s / x.size();
}

inline double variance(const std::vector<double>& x) {
  double m = mean(x), s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return s / x.size();
}

// Kolmogorov-Smirnov statistic of the samples against the continuous CDF `cdf`.
inline double ks_statistic(std::vector<double> x, const std::function<double(double)>& cdf) {
  std::sort(x.begin(), x.end());
  double d = 0, n = static_cast<double>(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double f = cdf(x[i]);
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  return d;
}

inline double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::numbers::sqrt2);
}
inline double normal_pdf(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
}

// The KS bound's multiple of 1 / sqrt(n): sqrt(n) D exceeds t with probability
// 2 exp(-2 t^2) (Kolmogorov), 7e-10 at 3.3 (2.5 gave 7.5e-6 per check, ~1e-4 over the
// 15 checks of a run).
inline constexpr double kKolmogorovBound = 3.3;

// Spacing of `dtype` around magnitude `x` (the resolution of samples near it).
inline double spacing(Dtype dtype, double x) {
  int mantissa = dtype == float16 ? 10 : dtype == bfloat16 ? 7 : dtype == float32 ? 23 : 52;
  return std::ldexp(1.0, std::ilogb(std::max(std::abs(x), 1e-30)) - mantissa);
}

inline bool all_equal(const array& a, const array& b) {
  return a.shape() == b.shape() && test::to_double(a) == test::to_double(b);
}

}  // namespace random_test
