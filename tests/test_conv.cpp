// Convolutions against a direct float64 loop over a small grid of strides, paddings (also
// asymmetric and negative), kernel and input dilations, groups and flips, in 1-3 spatial
// dimensions and every float dtype; conv_transpose against its definition; the gradient
// modes against the adjoint identity <dy, conv(x, w)> = <dx, x> = <dw, w>; errors.
// Finite-difference checks are in test_grad_check.cpp (rows conv*).
#include <cmath>

#include "kiln/primitives_conv.h"
#include "test_utils.h"

using namespace kiln;

namespace {

// y = conv_general(x, w, ...) by its definition, for D spatial dims.
std::vector<double> conv_ref(const array& x, const array& w, const ConvParams& p, const Shape& ys) {
  auto xv = test::to_double(x), wv = test::to_double(w);
  const int d = static_cast<int>(x.ndim()) - 2;
  const int N = x.shape(0), C = x.shape(-1), O = w.shape(0), Cg = w.shape(-1), Og = O / p.groups;
  Shape in(x.shape().begin() + 1, x.shape().end() - 1), k(w.shape().begin() + 1, w.shape().end() - 1),
      out(ys.begin() + 1, ys.end() - 1);
  const size_t osp = shape_size(out), ksp = shape_size(k), isp = shape_size(in);
  std::vector<double> y(N * osp * O, 0.0);
  for (int n = 0; n < N; ++n)
    for (size_t o = 0; o < osp; ++o)
      for (size_t t = 0; t < ksp; ++t) {
        // Multi-indices of o and t; the input index per dim, or skip.
        int64_t xi = 0, rem_o = o, rem_t = t, mul = 1;
        bool ok = true;
        std::vector<int> oi(d), ki(d);
        for (int i = d - 1; i >= 0; --i) {
          oi[i] = rem_o % out[i], rem_o /= out[i];
          ki[i] = rem_t % k[i], rem_t /= k[i];
        }
        for (int i = d - 1; i >= 0; --i) {
          int tap = p.flip ? k[i] - 1 - ki[i] : ki[i];
          int64_t pos = static_cast<int64_t>(oi[i]) * p.stride[i] + tap * p.kernel_dilation[i] - p.pad_lo[i];
          if (pos < 0 || pos % p.input_dilation[i] || pos / p.input_dilation[i] >= in[i]) {
            ok = false;
            break;
          }
          xi += pos / p.input_dilation[i] * mul;
          mul *= in[i];
        }
        if (!ok) continue;
        for (int oc = 0; oc < O; ++oc) {
          const int g = oc / Og;
          double s = 0;
          for (int c = 0; c < Cg; ++c) {
            s += xv[(n * isp + xi) * C + g * Cg + c] * wv[(oc * ksp + t) * Cg + c];
          }
          y[(n * osp + o) * O + oc] += s;
        }
      }
  return y;
}

double dot(const array& a, const array& b) {
  auto av = test::to_double(a), bv = test::to_double(b);
  double s = 0;
  for (size_t i = 0; i < av.size(); ++i) s += av[i] * bv[i];
  return s;
}

TEST(Conv, GeneralGridAgainstLoop) {
  const auto dev = test::test_device();
  int cases = 0;
  for (int stride : {1, 2})
    for (auto pad : {std::pair{0, 0}, std::pair{1, 2}, std::pair{-1, 1}})
      for (int kdil : {1, 2})
        for (int idil : {1, 2})
          for (int groups : {1, 2})
            for (bool flip : {false, true}) {
              ConvParams p{{stride, 1}, {pad.first, 0}, {pad.second, 1}, {kdil, 1}, {idil, 1}, groups, flip};
              array x = test::random_array({2, 7, 3, 4}, float64);
              array w = test::random_array({4, 3, 2, 4 / groups}, float64);
              array y = conv_general(x, w, p.stride, p.pad_lo, p.pad_hi, p.kernel_dilation,
                                     p.input_dilation, groups, flip, dev);
              test::expect_allclose(y, y.shape(), conv_ref(x, w, p, y.shape()), 1e-10);
              ++cases;
            }
  EXPECT_EQ(cases, 96);
}

TEST(Conv, DtypesDimsAndTranspose) {
  const auto dev = test::test_device();
  for (Dtype dt : {float32, float16, bfloat16}) {
    array x = test::random_array({2, 6, 5, 4}, dt), w = test::random_array({6, 3, 3, 2}, dt);
    array y = conv2d(x, w, {2, 1}, {1, 1}, {1, 1}, 2, dev);
    EXPECT_EQ(y.dtype(), dt);
    ConvParams p{{2, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2, false};
    test::expect_allclose(y, y.shape(), conv_ref(x, w, p, y.shape()), test::tolerance(dt) * 10);
  }
  array x = test::random_array({1, 4, 3, 5, 2}, float32), w = test::random_array({3, 2, 2, 3, 2}, float32);
  array y = conv3d(x, w, {1, 1, 2}, {1, 0, 1}, {1, 2, 1}, 1, dev);
  test::expect_allclose(y, y.shape(), conv_ref(x, w, {{1, 1, 2}, {1, 0, 1}, {1, 0, 1}, {1, 2, 1}, {1, 1, 1}, 1, false}, y.shape()), 1e-4);
  // conv_transpose1d: a flipped convolution of the stride-dilated input, output size
  // (in - 1) * stride - 2 * pad + dil * (k - 1) + output_padding + 1.
  array xt = test::random_array({2, 5, 4}, float64), wt = test::random_array({3, 3, 4}, float64);
  array yt = conv_transpose1d(xt, wt, 2, 1, 2, 1, 1, dev);
  ASSERT_EQ(yt.shape(), (Shape{2, 4 * 2 - 2 + 4 + 1 + 1, 3}));
  ConvParams pt{{1}, {4 - 1}, {4 - 1 + 1}, {2}, {2}, 1, true};
  test::expect_allclose(yt, yt.shape(), conv_ref(xt, wt, pt, yt.shape()), 1e-10);
}

TEST(Conv, GradientModesAreAdjoint) {
  const auto dev = test::test_device();
  ConvParams p{{2, 1}, {1, 0}, {2, 1}, {2, 1}, {1, 2}, 2, true};
  array x = test::random_array({2, 6, 4, 4}, float64), w = test::random_array({6, 2, 3, 2}, float64);
  array y = conv_detail::forward(x, w, p, to_stream(dev));
  array dy = test::random_array(y.shape(), float64);
  array dx = conv_detail::input_grad(dy, w, x.shape(), p, to_stream(dev));
  array dw = conv_detail::weight_grad(x, dy, w.shape(), p, to_stream(dev));
  const double ref = dot(dy, y);
  EXPECT_NEAR(dot(dx, x), ref, 1e-9 * (1 + std::abs(ref)));
  EXPECT_NEAR(dot(dw, w), ref, 1e-9 * (1 + std::abs(ref)));
}

TEST(Conv, ConvolveAndErrors) {
  const auto dev = test::test_device();
  array a({1.0f, 2.0f, 3.0f}), v({0.0f, 1.0f, 0.5f});
  test::expect_allclose(convolve(a, v, "full", dev), {5}, {0, 1, 2.5, 4, 1.5});
  test::expect_allclose(convolve(a, v, "same", dev), {3}, {1, 2.5, 4});
  test::expect_allclose(convolve(a, v, "valid", dev), {1}, {2.5});
  test::expect_allclose(convolve(array({1.0f, 2.0f}), array({1.0f, 2.0f, 3.0f, 4.0f}), "same", dev), {4}, {1, 4, 7, 10});
  auto expect_conv_error = [](auto f) {
    try {
      f();
      FAIL() << "no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[conv", 0), 0u) << e.what();
    }
  };
  expect_conv_error([] { conv1d(ones({1, 5, 4}), ones({2, 3, 3})); });
  expect_conv_error([] { conv1d(ones({1, 5, 4}), ones({3, 3, 2}), 1, 0, 1, 2); });
  expect_conv_error([] { conv1d(ones({1, 2, 4}), ones({2, 3, 4})); });
  expect_conv_error([] { conv1d(ones({5, 4}), ones({2, 3, 4})); });
  expect_conv_error([] { conv1d(ones({1, 5, 4}), ones({2, 3, 4}), 0); });
  expect_conv_error([] { conv1d(ones({1, 5, 4}, int32), ones({2, 3, 4}, int32)); });
  expect_conv_error([] { convolve(ones({2, 2}), ones({2})); });
}

}  // namespace
