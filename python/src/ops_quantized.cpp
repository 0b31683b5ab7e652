// kiln.core bindings of the quantization family: quantize, dequantize, quantized_matmul,
// gather_qmm, qqmm, gather_qqmm (MLX 0.32's names, arguments and defaults).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "convert.h"
#include "helpers.h"
#include "kiln/quantized.h"
#include "ops_common.h"

namespace kiln::python {

void init_ops_quantized(py::module_& m) {
  auto stream = py::arg("stream") = py::none();
  m.def(
      "quantize",
      [](const array& w, std::optional<int> group_size, std::optional<int> bits,
         const std::string& mode, std::optional<array> global_scale, StreamOrDevice s) {
        return py::list(py::cast(quantize(w, group_size, bits, mode, global_scale, s)));  // as MLX
      },
      py::arg("w"), py::pos_only(), py::arg("group_size") = py::none(),
      py::arg("bits") = py::none(), py::arg("mode") = "affine", py::kw_only(),
      py::arg("global_scale") = py::none(), stream, R"doc(
    Quantize the array ``w``: every ``group_size`` elements of its last axis share a scale
    (and, for ``"affine"``, a bias); each element takes ``bits`` bits, packed into uint32
    words from the lowest bits up, in MLX's layout.

    Modes: ``"affine"`` (group size 32, 64 (default) or 128; bits 1, 2, 3, 4 (default), 5, 6
    or 8), ``"mxfp4"`` (32, 4: e2m1 values, e8m0 scales), ``"mxfp8"`` (32, 8: e4m3 values,
    e8m0 scales), ``"nvfp4"`` (16, 4: e2m1 values, e4m3 scales, optional float32
    ``global_scale``).

    Returns:
        list: ``[w_q, scales, biases]`` for ``"affine"``, ``[w_q, scales]`` otherwise.
  )doc");
  m.def(
      "dequantize",
      [](const array& w, const array& scales, std::optional<array> biases,
         std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
         std::optional<array> global_scale, std::optional<Dtype> dtype, StreamOrDevice s) {
        return dequantize(w, scales, biases, group_size, bits, mode, global_scale, dtype, s);
      },
      py::arg("w"), py::pos_only(), py::arg("scales"), py::arg("biases") = py::none(),
      py::arg("group_size") = py::none(), py::arg("bits") = py::none(), py::arg("mode") = "affine",
      py::arg("global_scale") = py::none(), py::arg("dtype") = py::none(), py::kw_only(), stream,
      R"doc(
    Dequantize ``w`` packed by :func:`quantize`: ``scale * q + bias`` for ``"affine"``, the
    e2m1/e4m3 value times its group's scale otherwise. ``dtype`` defaults to the scales'
    dtype for ``"affine"`` and to bfloat16 for the other modes.
  )doc");
  m.def(
      "quantized_matmul",
      [](const array& x, const array& w, const array& scales, std::optional<array> biases,
         bool transpose, std::optional<int> group_size, std::optional<int> bits,
         const std::string& mode, StreamOrDevice s) {
        return quantized_matmul(x, w, scales, biases, transpose, group_size, bits, mode, s);
      },
      py::arg("x"), py::arg("w"), py::pos_only(), py::arg("scales"), py::arg("biases") = py::none(),
      py::arg("transpose") = true, py::arg("group_size") = py::none(), py::arg("bits") = py::none(),
      py::arg("mode") = "affine", py::kw_only(), stream, R"doc(
    ``x @ dequantize(w).T`` (``transpose=True``) or ``x @ dequantize(w)`` without forming the
    dequantized matrix. Batch axes broadcast.
  )doc");
  m.def(
      "gather_qmm",
      [](const array& x, const array& w, const array& scales, std::optional<array> biases,
         std::optional<array> lhs, std::optional<array> rhs, bool transpose,
         std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
         std::optional<array> global_scale, bool sorted, StreamOrDevice s) {
        return gather_qmm(x, w, scales, biases, lhs, rhs, transpose, group_size, bits, mode,
                          global_scale, sorted, s);
      },
      py::arg("x"), py::arg("w"), py::pos_only(), py::arg("scales"), py::arg("biases") = py::none(),
      py::arg("lhs_indices") = py::none(), py::arg("rhs_indices") = py::none(),
      py::arg("transpose") = true, py::arg("group_size") = py::none(), py::arg("bits") = py::none(),
      py::arg("mode") = "affine", py::arg("global_scale") = py::none(), py::kw_only(),
      py::arg("sorted_indices") = false, stream, R"doc(
    :func:`quantized_matmul` of the matrices of ``x`` and ``w`` picked by flat indices into
    their batch axes (``lhs_indices``, ``rhs_indices``), as :func:`gather_mm`. With
    ``"nvfp4"``, ``global_scale`` is a scalar or one scale per matrix of ``w``
    (shape ``w.shape[:-2]``).
  )doc");
  m.def(
      "qqmm",
      [](const array& x, const array& w, std::optional<array> scales, std::optional<int> group_size,
         std::optional<int> bits, const std::string& mode, std::optional<array> gx,
         std::optional<array> gw,
         StreamOrDevice s) { return qqmm(x, w, scales, group_size, bits, mode, gx, gw, s); },
      py::arg("x"), py::arg("w"), py::arg("scales") = py::none(),
      py::arg("group_size") = py::none(), py::arg("bits") = py::none(), py::arg("mode") = "nvfp4",
      py::arg("global_scale_x") = py::none(), py::arg("global_scale_w") = py::none(), py::kw_only(),
      stream, R"doc(
    ``x @ w.T`` with ``x`` quantized on the fly in ``mode`` (``"nvfp4"``, ``"mxfp8"`` or
    ``"mxfp4"``); ``w`` is used as is when packed (uint32, with ``scales``) and quantized on
    the fly otherwise. Gradients pass straight through the rounding.
  )doc");
  m.def(
      "gather_qqmm",
      [](const array& x, const array& w, std::optional<array> scales, std::optional<array> lhs,
         std::optional<array> rhs, std::optional<int> group_size, std::optional<int> bits,
         const std::string& mode, std::optional<array> gx, std::optional<array> gw, bool sorted,
         StreamOrDevice s) {
        return gather_qqmm(x, w, scales, lhs, rhs, group_size, bits, mode, gx, gw, sorted, s);
      },
      py::arg("x"), py::arg("w"), py::pos_only(), py::arg("scales") = py::none(),
      py::arg("lhs_indices") = py::none(), py::arg("rhs_indices") = py::none(),
      py::arg("group_size") = py::none(), py::arg("bits") = py::none(), py::arg("mode") = "nvfp4",
      py::arg("global_scale_x") = py::none(), py::arg("global_scale_w") = py::none(), py::kw_only(),
      py::arg("sorted_indices") = false, stream, R"doc(
    :func:`qqmm` of the matrices of ``x`` and ``w`` picked by flat indices into their batch
    axes (``lhs_indices``, ``rhs_indices``), as :func:`gather_mm`. ``global_scale_w``
    (``"nvfp4"``) is a scalar or one scale per matrix of ``w``.
  )doc");
}

}  // namespace kiln::python
