// Convolution ops: conv1d/2d/3d, conv_general, conv_transpose1d/2d/3d and convolve, with
// MLX's channels-last layouts, argument checks and messages. All build the Convolution
// primitive (primitives_conv.h).
#include <memory>

#include "kiln/ops.h"
#include "kiln/primitives_conv.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

std::string vec_str(const std::vector<int>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

// A per-axis parameter: empty -> `dflt` everywhere, one value -> every axis, else D values.
std::vector<int> expand(const char* name, const std::vector<int>& v, int d, int dflt) {
  if (v.empty()) return std::vector<int>(d, dflt);
  if (v.size() == 1) return std::vector<int>(d, v[0]);
  if (static_cast<int>(v.size()) != d) {
    throw std::invalid_argument(msg("[conv] Invalid ", name, " ", vec_str(v), " for ", d,
                                    " spatial dimensions."));
  }
  return v;
}

array conv_impl(array in, array wt, ConvParams p, const Stream& s) {
  if (in.ndim() < 3 || in.ndim() > 5) {
    throw std::invalid_argument(
        msg("[conv] Only works for inputs with 1-3 spatial dimensions. The inputs must be in the "
            "format [N, ..., C_in]; got shape ",
            shape_str(in.shape()), "."));
  }
  if (wt.ndim() != in.ndim()) {
    throw std::invalid_argument(msg("[conv] Invalid weight array with ", wt.ndim(),
                                    " dimensions for input array with ", in.ndim(),
                                    " dimensions; the weight must be [C_out, ..., C_in]."));
  }
  const Dtype dtype = promote_types(in.dtype(), wt.dtype());
  if (!is_floating_point(dtype)) {
    throw std::invalid_argument(msg("[conv] Invalid input array with type ", dtype,
                                    ". Convolution currently only supports floating point types"));
  }
  const int d = static_cast<int>(in.ndim()) - 2;
  p.stride = expand("strides", p.stride, d, 1);
  p.pad_lo = expand("padding", p.pad_lo, d, 0);
  p.pad_hi = expand("padding", p.pad_hi, d, 0);
  p.kernel_dilation = expand("kernel dilation", p.kernel_dilation, d, 1);
  p.input_dilation = expand("input dilation", p.input_dilation, d, 1);
  auto positive = [&](const char* what, const std::vector<int>& v) {
    for (int x : v) {
      if (x <= 0) {
        throw std::invalid_argument(
            msg("[conv] ", what, " sizes must be positive. Got ", vec_str(v), "."));
      }
    }
  };
  positive("Stride", p.stride);
  positive("Kernel dilation", p.kernel_dilation);
  positive("Input dilation", p.input_dilation);
  if (p.groups < 1) {
    throw std::invalid_argument(msg("[conv] groups must be positive; got ", p.groups, "."));
  }
  const int C = in.shape(-1), Cg = wt.shape(-1), O = wt.shape(0);
  if (C != Cg * p.groups) {
    throw std::invalid_argument(msg(
        "[conv] Expect the input channels in the input and weight array to match but got shapes "
        "- input: ",
        shape_str(in.shape()), " and weight: ", shape_str(wt.shape()),
        p.groups > 1 ? msg(" (with ", p.groups, " groups)") : std::string(), "."));
  }
  if (O % p.groups != 0) {
    throw std::invalid_argument(
        msg("[conv] If groups > 1, the output channels must be divisible by the number of "
            "groups. Got ",
            O, " output channels and ", p.groups, " groups."));
  }
  for (int i = 0; i < d; ++i) {
    const int64_t in_ext =
        in.shape(i + 1) == 0 ? 0 : static_cast<int64_t>(in.shape(i + 1) - 1) * p.input_dilation[i] + 1;
    const int64_t k_ext = static_cast<int64_t>(wt.shape(i + 1) - 1) * p.kernel_dilation[i] + 1;
    if (in_ext + p.pad_lo[i] + p.pad_hi[i] < k_ext) {
      throw std::invalid_argument(msg(
          "[conv] Spatial dimensions of input after padding cannot be smaller than weight "
          "spatial dimensions. Got error at axis ",
          i + 1, " for input with shape ", shape_str(in.shape()), ", padding low ",
          vec_str(p.pad_lo), ", padding high ", vec_str(p.pad_hi), ", and weight of shape ",
          shape_str(wt.shape()), "."));
    }
  }
  in = astype(in, dtype, s);
  wt = astype(wt, dtype, s);
  return conv_detail::forward(in, wt, p, s);
}

// conv_transpose as MLX defines it: a flipped convolution of the input dilated by `stride`,
// padded by dilation * (k - 1) - padding (plus output_padding at the end).
array conv_transpose_impl(const array& in, const array& wt, std::vector<int> stride,
                          std::vector<int> padding, std::vector<int> dilation,
                          std::vector<int> output_padding, int groups, const Stream& s) {
  const int d = static_cast<int>(wt.ndim()) - 2;
  if (d < 1 || d > 3 || in.ndim() != wt.ndim()) {
    throw std::invalid_argument(msg("[conv_transpose] Expected input and weight of equal rank "
                                    "3 to 5; got shapes ",
                                    shape_str(in.shape()), " and ", shape_str(wt.shape()), "."));
  }
  ConvParams p;
  p.groups = groups;
  p.flip = true;
  p.stride = std::vector<int>(d, 1);
  p.input_dilation = stride;
  p.kernel_dilation = dilation;
  for (int i = 0; i < d; ++i) {
    if (output_padding[i] < 0) {
      throw std::invalid_argument(
          msg("[conv_transpose] output_padding must be non-negative; got ", vec_str(output_padding), "."));
    }
    const int ext = dilation[i] * (wt.shape(i + 1) - 1);
    p.pad_lo.push_back(ext - padding[i]);
    p.pad_hi.push_back(ext - padding[i] + output_padding[i]);
  }
  return conv_impl(in, wt, p, s);
}

}  // namespace

array conv_general(array input, array weight, std::vector<int> stride, std::vector<int> padding_lo,
                   std::vector<int> padding_hi, std::vector<int> kernel_dilation,
                   std::vector<int> input_dilation, int groups, bool flip, StreamOrDevice s) {
  ConvParams p;
  p.stride = std::move(stride);
  p.pad_lo = std::move(padding_lo);
  p.pad_hi = padding_hi.empty() ? p.pad_lo : std::move(padding_hi);
  p.kernel_dilation = std::move(kernel_dilation);
  p.input_dilation = std::move(input_dilation);
  p.groups = groups;
  p.flip = flip;
  return conv_impl(std::move(input), std::move(weight), std::move(p), to_stream(s));
}

array conv1d(const array& input, const array& weight, int stride, int padding, int dilation,
             int groups, StreamOrDevice s) {
  return conv_general(input, weight, {stride}, {padding}, {padding}, {dilation}, {1}, groups,
                      false, s);
}

array conv2d(const array& input, const array& weight, const std::pair<int, int>& stride,
             const std::pair<int, int>& padding, const std::pair<int, int>& dilation, int groups,
             StreamOrDevice s) {
  return conv_general(input, weight, {stride.first, stride.second},
                      {padding.first, padding.second}, {padding.first, padding.second},
                      {dilation.first, dilation.second}, {1, 1}, groups, false, s);
}

array conv3d(const array& input, const array& weight, const std::tuple<int, int, int>& stride,
             const std::tuple<int, int, int>& padding, const std::tuple<int, int, int>& dilation,
             int groups, StreamOrDevice s) {
  auto v = [](const std::tuple<int, int, int>& t) {
    return std::vector<int>{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
  };
  return conv_general(input, weight, v(stride), v(padding), v(padding), v(dilation), {1, 1, 1},
                      groups, false, s);
}

array conv_transpose1d(const array& input, const array& weight, int stride, int padding,
                       int dilation, int output_padding, int groups, StreamOrDevice s) {
  return conv_transpose_impl(input, weight, {stride}, {padding}, {dilation}, {output_padding},
                             groups, to_stream(s));
}

array conv_transpose2d(const array& input, const array& weight, const std::pair<int, int>& stride,
                       const std::pair<int, int>& padding, const std::pair<int, int>& dilation,
                       const std::pair<int, int>& output_padding, int groups, StreamOrDevice s) {
  auto v = [](const std::pair<int, int>& t) { return std::vector<int>{t.first, t.second}; };
  return conv_transpose_impl(input, weight, v(stride), v(padding), v(dilation), v(output_padding),
                             groups, to_stream(s));
}

array conv_transpose3d(const array& input, const array& weight,
                       const std::tuple<int, int, int>& stride,
                       const std::tuple<int, int, int>& padding,
                       const std::tuple<int, int, int>& dilation,
                       const std::tuple<int, int, int>& output_padding, int groups,
                       StreamOrDevice s) {
  auto v = [](const std::tuple<int, int, int>& t) {
    return std::vector<int>{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
  };
  return conv_transpose_impl(input, weight, v(stride), v(padding), v(dilation), v(output_padding),
                             groups, to_stream(s));
}

array convolve(const array& a_in, const array& v_in, const std::string& mode, StreamOrDevice s) {
  auto stream = to_stream(s);
  if (a_in.ndim() != 1 || v_in.ndim() != 1) {
    throw std::invalid_argument(msg("[convolve] Inputs must be 1-d; got shapes ",
                                    shape_str(a_in.shape()), " and ", shape_str(v_in.shape()), "."));
  }
  if (a_in.size() == 0 || v_in.size() == 0) {
    throw std::invalid_argument("[convolve] Inputs cannot be empty.");
  }
  if (mode != "full" && mode != "same" && mode != "valid") {
    throw std::invalid_argument(
        msg("[convolve] Invalid mode '", mode, "'; expected 'full', 'same' or 'valid'."));
  }
  const bool swap = v_in.size() > a_in.size();
  const array& a = swap ? v_in : a_in;
  const array& v = swap ? a_in : v_in;
  const int n = a.shape(0), m = v.shape(0);
  array in = reshape(a, {1, n, 1}, stream);
  array w = reshape(v, {1, m, 1}, stream);
  const int pad = mode == "valid" ? 0 : m - 1;
  array out = conv_general(in, w, {1}, {pad}, {pad}, {1}, {1}, 1, true, stream);
  out = reshape(out, {out.shape(1)}, stream);
  if (mode == "same") out = slice(out, {(m - 1) / 2}, {(m - 1) / 2 + n}, stream);
  return out;
}

}  // namespace kiln
