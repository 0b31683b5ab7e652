// Transformations and shapes of the FFT primitive.
//
// The transforms are linear, so jvp applies the same transform to the tangent. The vjp is
// the adjoint under Re(sum(conj(u) * v)) (MLX's convention, docs/transforms.md): the
// adjoint of a DFT matrix is its conjugate transpose, the unnormalized transform in the
// other direction, with the same scale. Real-to-complex (rfft) is the first n / 2 + 1 rows
// of the DFT: its adjoint zero-pads the cotangent to n, transforms it in the inverse
// direction and keeps the real part. Complex-to-real (irfft) reads each frequency
// 0 < k < n / 2 twice (k and its mirror n - k): its adjoint is the forward real-input
// transform of the real cotangent weighted by 2 there.
#include "kiln/primitives_fft.h"

#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln {

namespace fft_detail {
array apply(const array& x, const std::vector<int>& axes, bool inverse, bool real, int n_last,
            double scale, const Stream& s) {
  auto prim = std::make_shared<FFT>(s, axes, inverse, real, n_last, scale);
  const Dtype out = real && inverse ? float32 : complex64;
  return array(prim->output_shapes({x})[0], out, prim, {x});
}
}  // namespace fft_detail

using fft_detail::apply;

bool FFT::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const FFT*>(&other);
  return o && o->axes_ == axes_ && o->inverse_ == inverse_ && o->real_ == real_ &&
         o->n_last_ == n_last_ && o->scale_ == scale_;
}

void FFT::print(std::ostream& os) {
  os << "FFT(axes=[";
  for (size_t i = 0; i < axes_.size(); ++i) os << (i ? ", " : "") << axes_[i];
  os << "], " << (inverse_ ? "inverse" : "forward") << (real_ ? ", real" : "") << ")";
}

std::vector<Shape> FFT::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  if (real_) {
    const int last = axes_.back();
    shape[last] = inverse_ ? n_last_ : shape[last] / 2 + 1;
  }
  return {shape};
}

std::vector<array> FFT::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                            const std::vector<int>&) {
  return {apply(tangents[0], axes_, inverse_, real_, n_last_, scale_, stream())};
}

std::vector<array> FFT::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<int>&, const std::vector<array>&) {
  const auto& s = stream();
  const array& g = cotangents[0];
  if (!real_) return {apply(g, axes_, !inverse_, false, 0, scale_, s)};
  const int last = axes_.back();
  const std::vector<int> others(axes_.begin(), axes_.end() - 1);
  if (!inverse_) {
    // rfft: inverse-direction transforms of the other axes, zero-pad the last to n,
    // transform it in the inverse direction, keep Re.
    array t = others.empty() ? g : apply(g, others, true, false, 0, 1.0, s);
    const int n = primals[0].shape(last), m = t.shape(last);
    if (n > m) {
      std::vector<std::pair<int, int>> w(t.ndim(), {0, 0});
      w[last] = {0, n - m};
      t = pad(t, w, array(complex64_t(0.0f, 0.0f)), s);
    }
    return {kiln::real(apply(t, {last}, true, false, 0, scale_, s), s)};
  }
  // irfft: the forward real-input transform of the real cotangent on the last axis, the
  // forward transform on the others, and the mirror weights.
  const int n = n_last_, m = primals[0].shape(last);
  array t = apply(g, {last}, false, true, 0, scale_, s);
  if (!others.empty()) t = apply(t, others, false, false, 0, 1.0, s);
  Shape wshape(t.ndim(), 1);
  wshape[last] = m;
  std::vector<float> w(m, 2.0f);
  w[0] = 1.0f;
  if (n % 2 == 0 && m > 1) w[m - 1] = 1.0f;
  return {multiply(t, array(w.begin(), wshape, complex64), s)};
}

std::pair<std::vector<array>, std::vector<int>> FFT::vmap(const std::vector<array>& inputs,
                                                          const std::vector<int>& axes) {
  if (axes[0] < 0) return {{apply(inputs[0], axes_, inverse_, real_, n_last_, scale_, stream())}, {-1}};
  array x = moveaxis(inputs[0], axes[0], 0, stream());
  std::vector<int> shifted;
  for (int a : axes_) shifted.push_back(a + 1);
  return {{apply(x, shifted, inverse_, real_, n_last_, scale_, stream())}, {0}};
}

}  // namespace kiln
