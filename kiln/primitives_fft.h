// The FFT primitive behind kiln::fft (kiln/fft.h).
#pragma once

#include <vector>

#include "kiln/primitive.h"

namespace kiln {

/**
 * Unnormalized discrete Fourier transforms over `axes` (normalized, distinct), multiplied
 * by `scale`. Complex to complex (complex64 in and out, same shape); real to complex
 * (`real`, forward: float32 in, the last of `axes` becomes n / 2 + 1); complex to real
 * (`real`, `inverse`: the last of `axes` goes from n / 2 + 1 to `n_last`, float32 out).
 * The forward transform uses exp(-2 pi i jk / n), the inverse exp(+2 pi i jk / n).
 */
class FFT : public UnaryPrimitive {
 public:
  FFT(Stream stream, std::vector<int> axes, bool inverse, bool real, int n_last, double scale)
      : UnaryPrimitive(stream),
        axes_(std::move(axes)),
        inverse_(inverse),
        real_(real),
        n_last_(n_last),
        scale_(scale) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(FFT)
  bool is_equivalent(const Primitive& other) const override;
  void print(std::ostream& os) override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;

  const std::vector<int>& axes() const { return axes_; }
  bool inverse() const { return inverse_; }
  bool real() const { return real_; }
  int n_last() const { return n_last_; }
  double scale() const { return scale_; }

 private:
  std::vector<int> axes_;
  bool inverse_, real_;
  int n_last_;  // complex-to-real: the output size of the last axis
  double scale_;
};

namespace fft_detail {
/** The FFT primitive applied to `x` (already cropped/padded, of the right dtype). */
array apply(const array& x, const std::vector<int>& axes, bool inverse, bool real, int n_last,
            double scale, const Stream& s);
}  // namespace fft_detail

}  // namespace kiln
