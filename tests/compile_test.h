// Shared by the compile tests (test_compile.cpp: tracing, cache, transforms;
// test_compile_fusion.cpp: simplification, fusion, generated kernels, graph replay).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "test_utils.h"

// Named (not anonymous): both files' TEST_F(Compile, ...) must share one fixture type.
namespace kiln::compile_test {

inline size_t count_prefix(const std::multiset<std::string>& names, const std::string& prefix) {
  size_t n = 0;
  for (const auto& s : names) n += s.rfind(prefix, 0) == 0;
  return n;
}

// Distance in units in the last place between two floats of the same sign, else large.
template <typename F, typename U>
inline uint64_t ulp_distance(const char* x, const char* y) {
  U ux, uy;
  std::memcpy(&ux, x, sizeof(U));
  std::memcpy(&uy, y, sizeof(U));
  F fx, fy;
  std::memcpy(&fx, x, sizeof(F));
  std::memcpy(&fy, y, sizeof(F));
  if (std::isnan(fx) && std::isnan(fy)) return 0;
  if ((fx < 0) != (fy < 0)) return fx == fy ? 0 : ~0ull;
  return ux > uy ? ux - uy : uy - ux;
}

// Whether an element of a floating or complex dtype is (or holds) a NaN. Which NaN an
// operation on two NaNs returns is the instruction's choice (x86 keeps the first operand's,
// and a compiler may commute the op), so NaNs compare equal whatever their bits.
inline bool is_nan_at(Dtype d, const char* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  float f[2];
  double g;
  if (d == float16) return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
  if (d == bfloat16) return (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0;
  if (d == float32 || d == complex64) {
    std::memcpy(f, p, d == float32 ? 4 : 8);
    return std::isnan(f[0]) || (d == complex64 && std::isnan(f[1]));
  }
  if (d == float64) {
    std::memcpy(&g, p, 8);
    return std::isnan(g);
  }
  return false;
}

// Equality of two arrays' elements bit for bit (shapes and dtypes equal too), NaNs equal
// whatever their bits (is_nan_at). On a GPU,
// float32, float64 and complex64 results may differ by 2 ulp: NVCC may contract a multiply
// inside one op's functor with an add of the next (fusion reorders the rounding there).
inline void expect_bitwise_equal(array a, array b, const std::string& what = "") {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  eval(a, b);
  const bool gpu = test::test_device().type == Device::gpu;
  const size_t n = a.size(), w = a.itemsize();
  const char* pa = static_cast<const char*>(a.data<void>());
  const char* pb = static_cast<const char*>(b.data<void>());
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const char* x = pa + test::elem_to_loc_ref(i, a) * static_cast<int64_t>(w);
    const char* y = pb + test::elem_to_loc_ref(i, b) * static_cast<int64_t>(w);
    if (std::memcmp(x, y, w) == 0 || (a.dtype() == bool_ && (*x != 0) == (*y != 0))) continue;
    if (is_nan_at(a.dtype(), x) && is_nan_at(a.dtype(), y)) continue;
    if (gpu) {
      uint64_t d = ~0ull;
      if (a.dtype() == float32) d = ulp_distance<float, uint32_t>(x, y);
      if (a.dtype() == float64) d = ulp_distance<double, uint64_t>(x, y);
      if (a.dtype() == complex64)
        d = std::max(ulp_distance<float, uint32_t>(x, y),
                     ulp_distance<float, uint32_t>(x + 4, y + 4));
      if (d <= 2) continue;
    }
    if (++bad < 4) ADD_FAILURE() << what << ": element " << i << " differs";
  }
  EXPECT_EQ(bad, 0u) << what;
}

struct CompileReset : ::testing::Test {
  void SetUp() override {
    enable_compile();
    detail::reset_compile_stats();
  }
  void TearDown() override { enable_compile(); }
};

using Compile = CompileReset;

}  // namespace kiln::compile_test
