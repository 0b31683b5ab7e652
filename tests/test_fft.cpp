// kiln::fft against a direct O(n^2) DFT in double: lengths 1, 7, 16, 1000, 4097, 2^15 and
// 3 * 2^15 (radix, Bluestein and four-step paths), real and inverse-real transforms, n-d
// transforms over chosen axes with cropping/padding, the norms, strided inputs, and argument
// errors. Derivatives are checked in test_grad_check.cpp (rows fft::*).
#include <cmath>
#include <complex>

#include "test_utils.h"

using namespace kiln;

namespace {

using cd = std::complex<double>;

std::vector<cd> dft(const std::vector<cd>& x, int n, bool inverse) {
  std::vector<cd> y(n);
  const double sign = inverse ? 1.0 : -1.0;
  for (int k = 0; k < n; ++k) {
    cd s = 0;
    for (int j = 0; j < n && j < static_cast<int>(x.size()); ++j) {
      s += x[j] * std::polar(1.0, sign * 2 * M_PI * std::fmod(static_cast<double>(j) * k, n) / n);
    }
    y[k] = s;
  }
  return y;
}

bool cpu_fft_missing() {
  try {
    eval(fft::fft(zeros({4}), std::nullopt, -1, fft::FFTNorm::Backward, Device::cpu));
    return false;
  } catch (const std::runtime_error&) {
    return true;
  }
}

#define SKIP_WITHOUT_FFT()                                     \
  if (test::test_device() == Device::cpu && cpu_fft_missing()) \
  GTEST_SKIP() << "kiln was built without KISS FFT (libkissfft-dev)"

void expect_complex_near(const std::vector<std::complex<double>>& got, const std::vector<cd>& want,
                         double tol) {
  ASSERT_EQ(got.size(), want.size());
  double scale = 1;
  for (auto& w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i].real(), want[i].real(), tol * scale) << "at " << i;
    ASSERT_NEAR(got[i].imag(), want[i].imag(), tol * scale) << "at " << i;
  }
}

TEST(FFT, LengthsAndDirections) {
  SKIP_WITHOUT_FFT();
  const auto dev = test::test_device();
  for (int n : {1, 7, 16, 1000, 4097, 1 << 15, 3 << 15}) {
    if (n > 1000) {
      // Bluestein's path (4097) and the four-step one (2^15, 3 * 2^15): the round trip and
      // Parseval's identity, plus 16 bins by definition.
      array x = astype(test::random_array({2, n}, float32), complex64);
      auto xv = test::to_complex(x);
      auto f = test::to_complex(fft::fft(x, std::nullopt, -1, fft::FFTNorm::Ortho, dev));
      auto back =
          test::to_complex(fft::ifft(fft::fft(x, std::nullopt, -1, fft::FFTNorm::Backward, dev),
                                     std::nullopt, -1, fft::FFTNorm::Backward, dev));
      double ex = 0, ef = 0;
      for (size_t i = 0; i < xv.size(); ++i) {
        ASSERT_NEAR(std::abs(back[i] - xv[i]), 0.0, 1e-4) << i;
        ex += std::norm(xv[i]);
        ef += std::norm(f[i]);
      }
      EXPECT_NEAR(ef, ex, 1e-4 * ex);
      for (int k = 0; k < n; k += n / 16) {
        cd s = 0;
        for (int j = 0; j < n; ++j)
          s += xv[j] * std::polar(1.0, -2 * M_PI * std::fmod(double(j) * k, n) / n);
        ASSERT_NEAR(std::abs(f[k] - s / std::sqrt(double(n))), 0.0, 1e-4 * std::sqrt(double(n)))
            << k;
      }
      continue;
    }
    array re = test::random_array({2, n}, float32), im = test::random_array({2, n}, float32);
    array x = add(astype(re, complex64), multiply(astype(im, complex64), array(complex64_t(0, 1))));
    auto xv = test::to_complex(x);
    auto fwd = test::to_complex(fft::fft(x, std::nullopt, -1, fft::FFTNorm::Backward, dev));
    auto inv = test::to_complex(fft::ifft(x, std::nullopt, -1, fft::FFTNorm::Backward, dev));
    auto rf = test::to_complex(fft::rfft(re, std::nullopt, -1, fft::FFTNorm::Backward, dev));
    auto rv = test::to_double(re);
    std::vector<cd> want_f, want_i, want_r;
    for (int b = 0; b < 2; ++b) {
      std::vector<cd> row(xv.begin() + b * n, xv.begin() + (b + 1) * n), rrow;
      for (int j = 0; j < n; ++j) rrow.push_back(rv[b * n + j]);
      auto f = dft(row, n, false), i = dft(row, n, true), r = dft(rrow, n, false);
      want_f.insert(want_f.end(), f.begin(), f.end());
      for (auto& v : i) want_i.push_back(v / static_cast<double>(n));
      want_r.insert(want_r.end(), r.begin(), r.begin() + n / 2 + 1);
    }
    const double tol = n > 1000 ? 1e-4 : 2e-5;
    expect_complex_near(fwd, want_f, tol);
    expect_complex_near(inv, want_i, tol);
    expect_complex_near(rf, want_r, tol);
    // irfft(rfft(x), n) == x
    auto back = test::to_double(fft::irfft(fft::rfft(re), n, -1, fft::FFTNorm::Backward, dev));
    for (size_t i = 0; i < back.size(); ++i)
      ASSERT_NEAR(back[i], rv[i], tol * 10) << n << " at " << i;
  }
}

TEST(FFT, NdAxesCropPadNormsAndViews) {
  SKIP_WITHOUT_FFT();
  const auto dev = test::test_device();
  array x = astype(test::random_array({4, 3, 5}, float32), complex64);
  // fftn over axes (2, 0) with sizes (6, 3): crop axis 0 to 3, pad axis 2 to 6.
  array got = fft::fftn(x, {6, 3}, {2, 0}, fft::FFTNorm::Ortho, dev);
  ASSERT_EQ(got.shape(), (Shape{3, 3, 6}));
  auto xv = test::to_complex(x);
  std::vector<cd> want(3 * 3 * 6);
  for (int i1 = 0; i1 < 3; ++i1)
    for (int k0 = 0; k0 < 3; ++k0)
      for (int k2 = 0; k2 < 6; ++k2) {
        cd s = 0;
        for (int j0 = 0; j0 < 3; ++j0)
          for (int j2 = 0; j2 < 5; ++j2)
            s += xv[(j0 * 3 + i1) * 5 + j2] *
                 std::polar(1.0, -2 * M_PI * (j0 * k0 / 3.0 + j2 * k2 / 6.0));
        want[(k0 * 3 + i1) * 6 + k2] = s / std::sqrt(18.0);
      }
  expect_complex_near(test::to_complex(got), want, 2e-5);
  // A transposed, strided view gives the same as its contiguous copy.
  array v = slice(transpose(x, {2, 1, 0}), {0, 0, 0}, {5, 3, 4}, {2, 1, 1});
  expect_complex_near(
      test::to_complex(fft::fftn(v, {0, 2}, fft::FFTNorm::Forward, dev)),
      [&] {
        auto r = test::to_complex(fft::fftn(contiguous(v), {0, 2}, fft::FFTNorm::Forward, dev));
        return std::vector<cd>(r.begin(), r.end());
      }(),
      1e-6);
  // irfftn(rfftn(y)) == y for odd and even last sizes.
  for (int last : {6, 7}) {
    array y = test::random_array({3, last}, float32);
    auto back = test::to_double(
        fft::irfftn(fft::rfftn(y, {0, 1}), {3, last}, {0, 1}, fft::FFTNorm::Backward, dev));
    auto yv = test::to_double(y);
    for (size_t i = 0; i < yv.size(); ++i) ASSERT_NEAR(back[i], yv[i], 1e-5);
  }
}

TEST(FFT, FrequenciesShiftsAndErrors) {
  test::expect_allclose(fft::fftfreq(5, 0.5), {5}, {0, 0.4, 0.8, -0.8, -0.4});
  test::expect_allclose(fft::rfftfreq(6), {4}, {0, 1.0 / 6, 2.0 / 6, 0.5});
  test::expect_allclose(fft::fftshift(arange(5)), {5}, {3, 4, 0, 1, 2});
  test::expect_allclose(fft::ifftshift(arange(5)), {5}, {2, 3, 4, 0, 1});
  EXPECT_THROW(fft::fft(array(1.0f)), std::invalid_argument);
  EXPECT_THROW(fft::fft(ones({4}), 0), std::invalid_argument);
  EXPECT_THROW(fft::fftn(ones({2, 2}), {0, 0}), std::invalid_argument);
  EXPECT_THROW(fft::fftn(ones({2, 2}), {3}), std::invalid_argument);
  EXPECT_THROW(fft::norm_from_string("sideways"), std::invalid_argument);
  EXPECT_THROW(fft::fftfreq(0), std::invalid_argument);
  EXPECT_THROW(fft::stft(ones({64}), 16, std::nullopt, std::nullopt, std::nullopt, true, "wrap"),
               std::invalid_argument);
}

}  // namespace
