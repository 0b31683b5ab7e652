// kiln.core.fft: discrete Fourier transforms (kiln/fft.h) with MLX's names and arguments.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "bindings.h"
#include "helpers.h"
#include "kiln/fft.h"

namespace kiln::python {

namespace {

using fft::FFTNorm;

constexpr const char* kNormDoc =
    "        norm (str): ``'backward'`` (scale the inverse by ``1/n``), ``'ortho'``\n"
    "            (``1/sqrt(n)`` both ways) or ``'forward'`` (scale the forward by ``1/n``).\n";

std::string doc1(const std::string& what, const std::string& n_doc, const std::string& ret) {
  return what +
         "\n\nArgs:\n        a (array): The input.\n        n (int, optional): " + n_doc +
         "\n        axis (int): The axis to transform (default ``-1``).\n" + kNormDoc +
         "\nReturns:\n        array: " + ret + "\n";
}

std::string docn(const std::string& what, const std::string& axes_default, const std::string& ret) {
  return what +
         "\n\nArgs:\n        a (array): The input.\n        s (list(int), optional): Sizes of the "
         "transformed axes; the input is cropped or zero-padded to them.\n        axes "
         "(list(int), optional): The axes to transform (default " +
         axes_default + ").\n" + kNormDoc + "\nReturns:\n        array: " + ret + "\n";
}

using OptShape = std::optional<std::vector<int>>;
using OptAxes = std::optional<std::vector<int>>;

// n-d transforms with MLX's rules: axes None means every axis (and then `s` must be None),
// sizes default to the input's.
template <typename WithN, typename WithAxes>
array nd(const array& a, const OptShape& s, const OptAxes& axes, WithN with_n, WithAxes with_axes) {
  std::vector<int> ax;
  if (s && !axes) {
    throw std::invalid_argument("[fftn] `axes` should not be `None` if `s` is not `None`.");
  }
  if (axes) {
    ax = *axes;
  } else {
    for (int i = 0; i < static_cast<int>(a.ndim()); ++i) ax.push_back(i);
  }
  if (s) return with_n(Shape(s->begin(), s->end()), ax);
  return with_axes(ax);
}

}  // namespace

void init_fft(py::module_& parent) {
  auto m = parent.def_submodule("fft", R"doc(
    Discrete Fourier transforms (NumPy's ``numpy.fft`` names and MLX's arguments), complex64,
    of any length, on the CPU (KISS FFT) and the GPU (cuFFT), differentiable.
  )doc");
  auto stream = py::arg("stream") = py::none();
  auto norm = py::arg("norm") = "backward";

#define KILN_FFT_1D(NAME, N_DOC, RET)                                                         \
  m.def(                                                                                      \
      #NAME,                                                                                  \
      [](const array& a, std::optional<int> n, int axis, const std::string& nm,              \
         StreamOrDevice s) { return fft::NAME(a, n, axis, fft::norm_from_string(nm), s); },  \
      py::arg("a"), py::arg("n") = py::none(), py::arg("axis") = -1, norm, stream,           \
      doc1(std::string("One-dimensional ") + (#NAME[0] == 'i' ? "inverse " : "") +            \
               "discrete Fourier transform (" #NAME ").",                                     \
           N_DOC, RET)                                                                        \
          .c_str());
  KILN_FFT_1D(fft, "Size of the transformed axis (default: the input's).",
              "The transform, complex64.")
  KILN_FFT_1D(ifft, "Size of the transformed axis (default: the input's).",
              "The inverse transform, complex64.")
  KILN_FFT_1D(rfft, "Size of the real input along the axis (default: the input's).",
              "``n // 2 + 1`` frequencies along the axis, complex64.")
  KILN_FFT_1D(irfft, "Size of the real output (default ``2 * (m - 1)``).",
              "The real signal (float32) of size ``n`` along the axis.")
#undef KILN_FFT_1D

#define KILN_FFT_ND(NAME, PYNAME, DEFAULT_AXES, AXES_DOC, RET)                                 \
  m.def(                                                                                       \
      PYNAME,                                                                                  \
      [](const array& a, const OptShape& sz, const OptAxes& axes, const std::string& nm,     \
         StreamOrDevice s) {                                                                   \
        FFTNorm n = fft::norm_from_string(nm);                                                 \
        return nd(                                                                             \
            a, sz, axes,                                                                       \
            [&](const Shape& shp, const std::vector<int>& ax) { return fft::NAME(a, shp, ax, n, s); }, \
            [&](const std::vector<int>& ax) { return fft::NAME(a, ax, n, s); });               \
      },                                                                                       \
      py::arg("a"), py::arg("s") = py::none(), py::arg("axes") = DEFAULT_AXES, norm, stream,   \
      docn(std::string("The ") + PYNAME + " transform.", AXES_DOC, RET).c_str());
  KILN_FFT_ND(fftn, "fft2", (std::vector<int>{-2, -1}), "``[-2, -1]``; None: all axes", "complex64.")
  KILN_FFT_ND(ifftn, "ifft2", (std::vector<int>{-2, -1}), "``[-2, -1]``; None: all axes", "complex64.")
  KILN_FFT_ND(rfftn, "rfft2", (std::vector<int>{-2, -1}), "``[-2, -1]``; None: all axes", "complex64, the last axis halved plus one.")
  KILN_FFT_ND(irfftn, "irfft2", (std::vector<int>{-2, -1}), "``[-2, -1]``; None: all axes", "float32.")
  KILN_FFT_ND(fftn, "fftn", py::none(), "all axes; required with ``s``", "complex64.")
  KILN_FFT_ND(ifftn, "ifftn", py::none(), "all axes; required with ``s``", "complex64.")
  KILN_FFT_ND(rfftn, "rfftn", py::none(), "all axes; required with ``s``",
              "complex64, the last axis halved plus one.")
  KILN_FFT_ND(irfftn, "irfftn", py::none(), "all axes; required with ``s``", "float32.")
#undef KILN_FFT_ND

  m.def(
      "fftfreq", [](int n, double d, StreamOrDevice s) { return fft::fftfreq(n, d, s); },
      py::arg("n"), py::arg("d") = 1.0, stream, R"doc(
    Sample frequencies of an ``n``-point transform with sample spacing ``d`` (float32).
  )doc");
  m.def(
      "rfftfreq", [](int n, double d, StreamOrDevice s) { return fft::rfftfreq(n, d, s); },
      py::arg("n"), py::arg("d") = 1.0, stream, R"doc(
    Non-negative sample frequencies of an ``n``-point real transform (float32).
  )doc");
  auto shift = [](bool inverse) {
    return [inverse](const array& a, const std::variant<std::monostate, int, std::vector<int>>& axes,
                     StreamOrDevice s) {
      std::optional<std::vector<int>> ax;
      if (auto* i = std::get_if<int>(&axes)) ax = std::vector<int>{*i};
      if (auto* v = std::get_if<std::vector<int>>(&axes)) ax = *v;
      return inverse ? fft::ifftshift(a, ax, s) : fft::fftshift(a, ax, s);
    };
  };
  m.def("fftshift", shift(false), py::arg("a"), py::arg("axes") = py::none(), stream, R"doc(
    Moves the zero frequency to the centre: rolls each of ``axes`` (default all) by half its size.
  )doc");
  m.def("ifftshift", shift(true), py::arg("a"), py::arg("axes") = py::none(), stream, R"doc(
    The inverse of :func:`fftshift`.
  )doc");
  m.def(
      "stft",
      [](const array& x, int n_fft, std::optional<int> hop, std::optional<int> win,
         std::optional<array> window, bool center, const std::string& pad_mode,
         const std::string& nm, std::optional<bool> onesided, StreamOrDevice s) {
        return fft::stft(x, n_fft, hop, win, window, center, pad_mode, fft::norm_from_string(nm),
                         onesided, s);
      },
      py::arg("x"), py::arg("n_fft") = 2048, py::arg("hop_length") = py::none(),
      py::arg("win_length") = py::none(), py::arg("window") = py::none(),
      py::arg("center") = true, py::arg("pad_mode") = "reflect", norm,
      py::arg("onesided") = py::none(), stream, R"doc(
    Short-time Fourier transform of the last axis of ``x``.

    Args:
        x (array): The signal.
        n_fft (int): Transform size (default ``2048``).
        hop_length (int, optional): Samples between frames (default ``n_fft // 4``).
        win_length (int, optional): Window size (default ``n_fft``).
        window (array, optional): 1-d window of ``win_length``, centred and zero-padded to
            ``n_fft`` (default rectangular).
        center (bool): Pad ``n_fft // 2`` on both ends so frames are centred.
        pad_mode (str): ``'reflect'``, ``'constant'`` or ``'edge'``.
        norm (str): As for :func:`fft`.
        onesided (bool, optional): Only non-negative frequencies (default: for real input).

    Returns:
        array: ``(..., n_freq, n_frames)``, complex64.
  )doc");
  m.def(
      "istft",
      [](const array& z, std::optional<int> n_fft, std::optional<int> hop,
         std::optional<int> win, std::optional<array> window, bool center, const std::string& nm,
         std::optional<bool> onesided, std::optional<int> length, StreamOrDevice s) {
        return fft::istft(z, n_fft, hop, win, window, center, fft::norm_from_string(nm),
                          onesided, length, s);
      },
      py::arg("stft_matrix"), py::arg("n_fft") = py::none(), py::arg("hop_length") = py::none(),
      py::arg("win_length") = py::none(), py::arg("window") = py::none(),
      py::arg("center") = true, norm, py::arg("onesided") = py::none(),
      py::arg("length") = py::none(), stream, R"doc(
    Inverse of :func:`stft`: windowed overlap-add divided by the squared-window envelope.

    Args:
        stft_matrix (array): ``(..., n_freq, n_frames)``.
        n_fft (int, optional): Transform size (default from ``n_freq`` and ``onesided``).
        hop_length, win_length, window, center, norm: As for :func:`stft`.
        onesided (bool, optional): Whether only non-negative frequencies are given (default True).
        length (int, optional): Trim or zero-pad the output to this length.

    Returns:
        array: The signal, float32.
  )doc");
}

}  // namespace kiln::python
