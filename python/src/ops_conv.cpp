// Convolutions: conv1d/2d/3d, conv_general, conv_transpose1d/2d/3d, convolve (MLX's layouts).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <tuple>
#include <variant>
#include <vector>

#include "helpers.h"
#include "ops_common.h"

namespace kiln::python {

namespace {

using IntOrSeq = std::variant<int, std::vector<int>>;
// conv_general's padding: an int, a sequence, or a pair of sequences (low, high).
using Padding = std::variant<int, std::vector<int>, std::pair<std::vector<int>, std::vector<int>>>;

std::vector<int> seq(const IntOrSeq& v) {
  if (auto* i = std::get_if<int>(&v)) return {*i};
  return std::get<std::vector<int>>(v);
}

// An int or a tuple of exactly `n` ints, as (name)'s n values.
std::vector<int> fixed(const char* op, const char* name, const IntOrSeq& v, int n) {
  if (auto* i = std::get_if<int>(&v)) return std::vector<int>(n, *i);
  const auto& s = std::get<std::vector<int>>(v);
  if (static_cast<int>(s.size()) != n) {
    throw std::invalid_argument(std::string("[") + op + "] " + name + " must be an int or a tuple of " +
                                std::to_string(n) + " ints; got " + std::to_string(s.size()) +
                                " values.");
  }
  return s;
}

std::pair<int, int> p2(const std::vector<int>& v) { return {v[0], v[1]}; }
std::tuple<int, int, int> p3(const std::vector<int>& v) { return {v[0], v[1], v[2]}; }

constexpr const char* kConvArgs = R"doc(
    Args:
        input (array): ``(N, ..., C_in)`` (channels last).
        weight (array): ``(C_out, ..., C_in / groups)``.
        stride (int or tuple(int)): Step between output positions (per spatial axis).
        padding (int or tuple(int)): Zeros added on both sides (per spatial axis).
        dilation (int or tuple(int)): Spacing of the kernel taps (per spatial axis).
        groups (int): Channel groups: ``C_in`` and ``C_out`` are divided into ``groups``
            parts convolved separately.

    Returns:
        array: ``(N, ..., C_out)`` in the promoted floating dtype.

    Raises:
        ValueError: Mismatched ranks or channels, non-positive strides or dilations, a padded
            input smaller than the dilated kernel, or a non-floating dtype.
)doc";

}  // namespace

void init_ops_conv(py::module_& m) {
  auto stream = py::arg("stream") = py::none();

  m.def(
      "conv1d",
      [](const array& in, const array& w, int stride, int padding, int dilation, int groups,
         StreamOrDevice s) { return conv1d(in, w, stride, padding, dilation, groups, s); },
      py::arg("input"), py::arg("weight"), py::pos_only(), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::kw_only(), stream,
      (std::string("1-d convolution (cross-correlation) over ``(N, L, C_in)``.\n") + kConvArgs).c_str());
  m.def(
      "conv2d",
      [](const array& in, const array& w, const IntOrSeq& stride, const IntOrSeq& padding,
         const IntOrSeq& dilation, int groups, StreamOrDevice s) {
        return conv2d(in, w, p2(fixed("conv2d", "stride", stride, 2)),
                      p2(fixed("conv2d", "padding", padding, 2)),
                      p2(fixed("conv2d", "dilation", dilation, 2)), groups, s);
      },
      py::arg("input"), py::arg("weight"), py::pos_only(), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::kw_only(), stream,
      (std::string("2-d convolution (cross-correlation) over ``(N, H, W, C_in)``.\n") + kConvArgs).c_str());
  m.def(
      "conv3d",
      [](const array& in, const array& w, const IntOrSeq& stride, const IntOrSeq& padding,
         const IntOrSeq& dilation, int groups, StreamOrDevice s) {
        return conv3d(in, w, p3(fixed("conv3d", "stride", stride, 3)),
                      p3(fixed("conv3d", "padding", padding, 3)),
                      p3(fixed("conv3d", "dilation", dilation, 3)), groups, s);
      },
      py::arg("input"), py::arg("weight"), py::pos_only(), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::kw_only(), stream,
      (std::string("3-d convolution (cross-correlation) over ``(N, D, H, W, C_in)``.\n") + kConvArgs).c_str());
  m.def(
      "conv_general",
      [](const array& in, const array& w, const IntOrSeq& stride, const Padding& padding,
         const IntOrSeq& kernel_dilation, const IntOrSeq& input_dilation, int groups, bool flip,
         StreamOrDevice s) {
        std::vector<int> lo, hi;
        if (auto* i = std::get_if<int>(&padding)) {
          lo = hi = {*i};
        } else if (auto* v = std::get_if<std::vector<int>>(&padding)) {
          lo = hi = *v;
        } else {
          std::tie(lo, hi) = std::get<std::pair<std::vector<int>, std::vector<int>>>(padding);
        }
        return conv_general(in, w, seq(stride), lo, hi, seq(kernel_dilation), seq(input_dilation),
                            groups, flip, s);
      },
      py::arg("input"), py::arg("weight"), py::pos_only(), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("kernel_dilation") = 1, py::arg("input_dilation") = 1,
      py::arg("groups") = 1, py::arg("flip") = false, py::kw_only(), stream, R"doc(
    General convolution over 1 to 3 spatial axes (channels last).

    Args:
        input (array): ``(N, ..., C_in)``.
        weight (array): ``(C_out, ..., C_in / groups)``.
        stride (int or list(int)): Step between output positions.
        padding (int, list(int) or tuple(list(int), list(int))): Zeros added on both sides,
            or ``(low, high)`` per axis (may be negative).
        kernel_dilation (int or list(int)): Spacing of the kernel taps.
        input_dilation (int or list(int)): Spacing of the input elements (zeros between).
        groups (int): Channel groups.
        flip (bool): Flip the kernel (a convolution rather than a cross-correlation).

    Returns:
        array: ``(N, ..., C_out)``.
  )doc");
  auto transpose_doc = [](const char* what) {
    return std::string(what) +
           "\n\n    Output size per axis: ``(in - 1) * stride - 2 * padding + dilation * (k - 1) + "
           "output_padding + 1``.\n" +
           kConvArgs;
  };
  static const std::string t1 = transpose_doc("1-d transposed convolution over ``(N, L, C_in)``.");
  static const std::string t2 = transpose_doc("2-d transposed convolution over ``(N, H, W, C_in)``.");
  static const std::string t3 = transpose_doc("3-d transposed convolution over ``(N, D, H, W, C_in)``.");
  m.def(
      "conv_transpose1d",
      [](const array& in, const array& w, int stride, int padding, int dilation,
         int output_padding, int groups, StreamOrDevice s) {
        return conv_transpose1d(in, w, stride, padding, dilation, output_padding, groups, s);
      },
      py::arg("input"), py::arg("weight"), py::pos_only(), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("output_padding") = 0,
      py::arg("groups") = 1, py::kw_only(), stream, t1.c_str());
  m.def(
      "conv_transpose2d",
      [](const array& in, const array& w, const IntOrSeq& stride, const IntOrSeq& padding,
         const IntOrSeq& dilation, const IntOrSeq& output_padding, int groups, StreamOrDevice s) {
        const char* op = "conv_transpose2d";
        return conv_transpose2d(in, w, p2(fixed(op, "stride", stride, 2)),
                                p2(fixed(op, "padding", padding, 2)),
                                p2(fixed(op, "dilation", dilation, 2)),
                                p2(fixed(op, "output_padding", output_padding, 2)), groups, s);
      },
      py::arg("input"), py::arg("weight"), py::pos_only(), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("output_padding") = 0,
      py::arg("groups") = 1, py::kw_only(), stream, t2.c_str());
  m.def(
      "conv_transpose3d",
      [](const array& in, const array& w, const IntOrSeq& stride, const IntOrSeq& padding,
         const IntOrSeq& dilation, const IntOrSeq& output_padding, int groups, StreamOrDevice s) {
        const char* op = "conv_transpose3d";
        return conv_transpose3d(in, w, p3(fixed(op, "stride", stride, 3)),
                                p3(fixed(op, "padding", padding, 3)),
                                p3(fixed(op, "dilation", dilation, 3)),
                                p3(fixed(op, "output_padding", output_padding, 3)), groups, s);
      },
      py::arg("input"), py::arg("weight"), py::pos_only(), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("output_padding") = 0,
      py::arg("groups") = 1, py::kw_only(), stream, t3.c_str());
  m.def(
      "convolve",
      [](const array& a, const array& v, const std::string& mode, StreamOrDevice s) {
        return convolve(a, v, mode, s);
      },
      py::arg("a"), py::arg("v"), py::pos_only(), py::arg("mode") = "full", py::kw_only(), stream,
      R"doc(
    Discrete 1-d convolution of ``a`` and ``v`` (NumPy's ``convolve``).

    Args:
        a (array): 1-d.
        v (array): 1-d.
        mode (str): ``'full'`` (length ``n + m - 1``), ``'same'`` (``max(n, m)``) or
            ``'valid'`` (``max(n, m) - min(n, m) + 1``).

    Returns:
        array: The convolution (floating inputs only).
  )doc");
}

}  // namespace kiln::python
