// Transformations and shapes of the convolution primitive.
//
// forward F(x, w), input_grad B(dy, w) and weight_grad W(x, dy) are bilinear and adjoint to
// each other: <dy, F(x, w)> = <B(dy, w), x> = <W(x, dy), w>. So every vjp and jvp is one of
// the three applied to a cotangent or tangent, which keeps higher derivatives available.
#include "kiln/primitives_conv.h"

#include <algorithm>
#include <optional>

#include "kiln/ops.h"
#include "kiln/utils.h"

namespace kiln {

namespace conv_detail {

Shape forward_shape(const Shape& x, const Shape& w, const ConvParams& p) {
  const int d = static_cast<int>(x.size()) - 2;
  Shape out{x[0]};
  for (int i = 0; i < d; ++i) {
    const int64_t in = x[i + 1] == 0 ? 0 : static_cast<int64_t>(x[i + 1] - 1) * p.input_dilation[i] + 1;
    const int64_t k = static_cast<int64_t>(w[i + 1] - 1) * p.kernel_dilation[i] + 1;
    const int64_t span = in + p.pad_lo[i] + p.pad_hi[i] - k;
    out.push_back(span < 0 ? 0 : static_cast<int>(span / p.stride[i] + 1));
  }
  out.push_back(w[0]);
  return out;
}

static array make(const array& a, const array& b, const ConvParams& p, Convolution::Mode mode,
                  const Shape& other, const Stream& s) {
  auto prim = std::make_shared<Convolution>(s, p, mode, other);
  return array(prim->output_shapes({a, b})[0], a.dtype(), prim, {a, b});
}

array forward(const array& x, const array& w, const ConvParams& p, const Stream& s) {
  return make(x, w, p, Convolution::Mode::forward, {}, s);
}
array input_grad(const array& dy, const array& w, const Shape& x_shape, const ConvParams& p,
                 const Stream& s) {
  return make(dy, w, p, Convolution::Mode::input_grad, x_shape, s);
}
array weight_grad(const array& x, const array& dy, const Shape& w_shape, const ConvParams& p,
                  const Stream& s) {
  return make(x, dy, p, Convolution::Mode::weight_grad, w_shape, s);
}

}  // namespace conv_detail

using namespace conv_detail;

bool Convolution::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Convolution*>(&other);
  return o && o->params_ == params_ && o->mode_ == mode_ && o->other_shape_ == other_shape_;
}

void Convolution::print(std::ostream& os) {
  auto v = [&](const char* name, const std::vector<int>& x) {
    os << name << "=(";
    for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
    os << ")";
  };
  os << "Convolution(";
  if (mode_ != Mode::forward) os << (mode_ == Mode::input_grad ? "input_grad, " : "weight_grad, ");
  v("stride", params_.stride);
  v(", pad_lo", params_.pad_lo);
  v(", pad_hi", params_.pad_hi);
  v(", kernel_dilation", params_.kernel_dilation);
  v(", input_dilation", params_.input_dilation);
  os << ", groups=" << params_.groups << (params_.flip ? ", flip" : "") << ")";
}

std::vector<Shape> Convolution::output_shapes(const std::vector<array>& inputs) {
  if (mode_ == Mode::forward) return {forward_shape(inputs[0].shape(), inputs[1].shape(), params_)};
  return {other_shape_};
}

std::vector<array> Convolution::vjp(const std::vector<array>& primals,
                                    const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  const auto& s = stream();
  const array &a = primals[0], &b = primals[1], &g = cotangents[0];
  std::vector<array> out;
  for (int arg : argnums) {
    switch (mode_) {
      case Mode::forward:  // y = F(x, w)
        out.push_back(arg == 0 ? input_grad(g, b, a.shape(), params_, s)
                               : weight_grad(a, g, b.shape(), params_, s));
        break;
      case Mode::input_grad:  // dx = B(dy, w)
        out.push_back(arg == 0 ? forward(g, b, params_, s)
                               : weight_grad(g, a, b.shape(), params_, s));
        break;
      case Mode::weight_grad:  // dw = W(x, dy)
        out.push_back(arg == 0 ? input_grad(b, g, a.shape(), params_, s)
                               : forward(a, g, params_, s));
        break;
    }
  }
  return out;
}

std::vector<array> Convolution::jvp(const std::vector<array>& primals,
                                    const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  const auto& s = stream();
  const array &a = primals[0], &b = primals[1];
  std::optional<array> out;
  for (size_t i = 0; i < argnums.size(); ++i) {
    const array& t = tangents[i];
    const bool first = argnums[i] == 0;
    array r = make(first ? t : a, first ? b : t, params_, mode_, other_shape_, s);
    out = out ? add(*out, r, s) : r;
  }
  return {*out};
}

std::pair<std::vector<array>, std::vector<int>> Convolution::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  // A loop over the mapped axis: convolutions batch over N already, but a mapped weight or
  // a mapped gradient changes the reduction, so each slice is its own convolution.
  const auto& s = stream();
  if (mode_ == Mode::forward && axes[0] >= 0 && axes[1] < 0) {
    // Only x mapped: fold the mapped axis into the batch axis N.
    array x = moveaxis(inputs[0], axes[0], 0, s);
    Shape folded(x.shape().begin() + 1, x.shape().end());
    const int v = x.shape(0);
    folded[0] *= v;
    array y = forward(reshape(x, folded, s), inputs[1], params_, s);
    Shape shape = y.shape();
    shape[0] /= std::max(v, 1);
    shape.insert(shape.begin(), v);
    return {{reshape(y, shape, s)}, {0}};
  }
  int size = axes[0] >= 0 ? inputs[0].shape(axes[0]) : inputs[1].shape(axes[1]);
  std::vector<array> outs;
  for (int i = 0; i < size; ++i) {
    auto pick = [&](int k) {
      return axes[k] >= 0 ? take(inputs[k], i, axes[k], s) : inputs[k];
    };
    outs.push_back(make(pick(0), pick(1), params_, mode_, other_shape_, s));
  }
  if (outs.empty()) {
    Shape shape = output_shapes(inputs)[0];
    shape.insert(shape.begin(), 0);
    return {{zeros(shape, inputs[0].dtype(), s)}, {0}};
  }
  return {{stack(outs, 0, s)}, {0}};
}

}  // namespace kiln
