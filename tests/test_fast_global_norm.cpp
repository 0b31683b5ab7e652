// fast::global_norm (kiln/fast.h): the L2 norm of many arrays, on the default device
// (KILN_DEVICE=gpu runs the GPU kernels), against float64 sums of the stored values: every
// floating dtype, views, empty arrays, more arrays than one GPU launch's table and arrays of
// many 16 KB chunks; the same bits on a second call; bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/fast.h"
#include "kiln/kiln.h"
#include "test_utils.h"

namespace kiln {
namespace {

using test::random_array;

double reference(const std::vector<array>& arrays) {
  double total = 0;
  for (const auto& a : arrays)
    for (double v : test::to_double(a)) total += v * v;
  return std::sqrt(total);
}

TEST(FastGlobalNorm, MatchesFloat64SumsForEveryDtype) {
  for (Dtype d : {float16, bfloat16, float32, float64}) {
    if (d == float64 && test::test_device().type == Device::gpu) continue;
    std::vector<array> xs;
    for (const Shape& s : std::vector<Shape>{{0}, {}, {7}, {33, 65}, {70001}, {3, 0, 2}})
      xs.push_back(random_array(s, d));
    array n = fast::global_norm(xs);
    EXPECT_EQ(n.shape(), Shape{});
    EXPECT_EQ(n.dtype(), d == float64 ? float64 : float32);
    test::expect_allclose(n, {}, {reference(xs)}, 1e-6);
  }
}

TEST(FastGlobalNorm, ViewsManyArraysAndRepeatability) {
  array base = random_array({40, 50}, float32);
  array flat = random_array({4099}, bfloat16);
  std::vector<array> xs = {transpose(base), slice(base, {0, 1}, {40, 50}, {3, 2}),
                           slice(flat, {1}, {4099}),
                           broadcast_to(random_array({1, 300}, float32), {5, 300})};
  for (int i = 0; i < 300; ++i)
    xs.push_back(random_array({1 + (i * 97) % 3000}, i % 2 ? float16 : float32));
  array a = fast::global_norm(xs), b = fast::global_norm(xs);
  test::expect_allclose(a, {}, {reference(xs)}, 1e-6);
  EXPECT_EQ(a.item<float>(), b.item<float>()) << "a fixed order of additions";
  EXPECT_EQ(fast::global_norm({}).item<float>(), 0.0f);
}

TEST(FastGlobalNorm, GradientIsXOverTheNorm) {
  array x = random_array({6, 5}, float32), y = random_array({11}, float32);
  const double n = reference({x, y});
  auto g =
      vjp([](const std::vector<array>& in) { return std::vector<array>{fast::global_norm(in)}; },
          {x, y}, {array(1.0f)})
          .second;
  auto expect = [&](const array& grad, const array& v) {
    std::vector<double> ref;
    for (double e : test::to_double(v)) ref.push_back(e / n);
    test::expect_allclose(grad, v.shape(), ref, 1e-5);
  };
  expect(g[0], x);
  expect(g[1], y);
}

TEST(FastGlobalNorm, NonFloatingArraysRaise) {
  array good = ones({3});
  try {
    fast::global_norm({good, astype(array({1, 2}), int32)});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[global_norm] Array 1 has dtype int32"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(sum(good).item<float>(), 3.0f);
}

}  // namespace
}  // namespace kiln
