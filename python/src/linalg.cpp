// kiln.core.linalg: norms, factorizations, inverses and solvers (kiln/linalg.h), with
// MLX's names and arguments. Every function runs on either device.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "bindings.h"
#include "helpers.h"
#include "kiln/linalg.h"

namespace kiln::python {

namespace {

using Ord = std::variant<std::monostate, int, double, std::string>;

std::optional<std::vector<int>> to_axes(const Axis& axis) {
  if (auto* i = std::get_if<int>(&axis)) return std::vector<int>{*i};
  if (auto* v = std::get_if<std::vector<int>>(&axis)) return *v;
  return std::nullopt;
}

array norm_py(const array& a, const Ord& ord, const Axis& axis, bool keepdims, StreamOrDevice s) {
  auto axes = to_axes(axis);
  if (std::holds_alternative<std::monostate>(ord)) return linalg::norm(a, axes, keepdims, s);
  if (auto* str = std::get_if<std::string>(&ord)) return linalg::norm(a, *str, axes, keepdims, s);
  double o = std::holds_alternative<int>(ord) ? std::get<int>(ord) : std::get<double>(ord);
  return linalg::norm(a, o, axes, keepdims, s);
}

py::tuple as_tuple(const std::vector<array>& v) {
  py::tuple t(v.size());
  for (size_t i = 0; i < v.size(); ++i) t[i] = py::cast(v[i]);
  return t;
}

}  // namespace

void init_linalg(py::module_& parent) {
  auto m = parent.def_submodule("linalg", R"doc(
    Linear algebra: norms, factorizations (Cholesky, LU, QR, SVD, eigen-decompositions),
    inverses and solvers, batched over leading axes. Factorizations use LAPACK (OpenBLAS) on
    the CPU and cuSOLVER on the GPU; unlike MLX, every function runs on either device.
  )doc");
  auto stream = py::arg("stream") = py::none();

  m.def("norm", &norm_py, py::arg("a"), py::pos_only(), py::arg("ord") = py::none(),
        py::arg("axis") = py::none(), py::arg("keepdims") = false, py::kw_only(), stream,
        R"doc(
    Matrix or vector norm, as NumPy's ``linalg.norm``.

    Without ``ord``: the 2-norm of the flattened array (``axis`` None), of vectors along one
    axis, or the Frobenius norm over two axes. Vector ``ord``: ``0`` (non-zeros), ``1``,
    ``2``, ``inf``, ``-inf`` or any other ``p``. Matrix ``ord``: ``'fro'``, ``'nuc'``, ``1``,
    ``-1``, ``2``, ``-2``, ``inf``, ``-inf``. With ``ord`` and no ``axis``, ``a`` must be
    1-d or 2-d.

    Args:
        a (array): Input (integers are computed in float32).
        ord (int, float or str, optional): The order.
        axis (int or list(int), optional): One axis (vector norm) or two (matrix norm).
        keepdims (bool): Keep the reduced axes with size 1.

    Returns:
        array: The norm, real (float32 for integer or complex64 input).

    Raises:
        ValueError: An ``ord`` invalid for the number of axes, or more than two axes.
  )doc");
  m.def(
      "matrix_norm",
      [](const array& a, const Ord& ord, const std::vector<int>& axis, bool keepdims,
         StreamOrDevice s) {
        if (std::holds_alternative<std::monostate>(ord))
          return linalg::matrix_norm(a, "fro", axis, keepdims, s);
        if (auto* str = std::get_if<std::string>(&ord))
          return linalg::matrix_norm(a, *str, axis, keepdims, s);
        double o = std::holds_alternative<int>(ord) ? std::get<int>(ord) : std::get<double>(ord);
        return linalg::matrix_norm(a, o, axis, keepdims, s);
      },
      py::arg("a"), py::pos_only(), py::arg("ord") = "fro",
      py::arg("axis") = std::vector<int>{-2, -1}, py::arg("keepdims") = false, py::kw_only(),
      stream, R"doc(
    Matrix norm over two axes (default the last two): ``'fro'``, ``'nuc'``, ``1``, ``-1``,
    ``2``, ``-2``, ``inf``, ``-inf``.
  )doc");
  m.def(
      "cholesky",
      [](const array& a, bool upper, StreamOrDevice s) { return linalg::cholesky(a, upper, s); },
      py::arg("a"), py::pos_only(), py::arg("upper") = false, py::kw_only(), stream, R"doc(
    Cholesky factor of symmetric positive-definite matrices.

    Args:
        a (array): ``(..., n, n)``, float32 or float64; only the lower (``upper``: upper)
            triangle is read.
        upper (bool): Return upper ``U`` with ``a = U.T @ U`` instead of lower ``L`` with
            ``a = L @ L.T``.

    Raises:
        ValueError: Not square, fewer than 2 dimensions, or another dtype.
        RuntimeError: A matrix is not positive definite (at evaluation).
  )doc");
  m.def(
      "cholesky_inv",
      [](const array& a, bool upper, StreamOrDevice s) { return linalg::cholesky_inv(a, upper, s); },
      py::arg("a"), py::pos_only(), py::arg("upper") = false, py::kw_only(), stream, R"doc(
    Inverse of ``a = L @ L.T`` (``U.T @ U`` with ``upper``) from its Cholesky factor ``a``.
  )doc");
  m.def(
      "inv", [](const array& a, StreamOrDevice s) { return linalg::inv(a, s); }, py::arg("a"),
      py::pos_only(), py::kw_only(), stream, R"doc(
    Inverse of square matrices ``(..., n, n)`` (LU with partial pivoting).

    Raises:
        ValueError: Not square, fewer than 2 dimensions, or not float32/float64.
        RuntimeError: A matrix is singular (at evaluation).
  )doc");
  m.def(
      "tri_inv",
      [](const array& a, bool upper, StreamOrDevice s) { return linalg::tri_inv(a, upper, s); },
      py::arg("a"), py::pos_only(), py::arg("upper") = false, py::kw_only(), stream, R"doc(
    Inverse of the triangular matrices in the lower (``upper``: upper) triangle of ``a``;
    the other triangle is ignored, and zero in the result.
  )doc");
  m.def(
      "pinv", [](const array& a, StreamOrDevice s) { return linalg::pinv(a, s); }, py::arg("a"),
      py::pos_only(), py::kw_only(), stream, R"doc(
    Moore-Penrose pseudo-inverse ``(..., n, m)`` of ``a`` ``(..., m, n)`` through the SVD.
  )doc");
  m.def(
      "cross",
      [](const array& a, const array& b, int axis, StreamOrDevice s) {
        return linalg::cross(a, b, axis, s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::arg("axis") = -1, py::kw_only(), stream,
      R"doc(
    Cross product of 2- or 3-vectors along ``axis``; shapes broadcast.

    Raises:
        ValueError: ``axis`` is out of range or its size is not 2 or 3.
  )doc");
  m.def(
      "qr",
      [](const array& a, StreamOrDevice s) {
        auto [q, r] = linalg::qr(a, s);
        return py::make_tuple(q, r);
      },
      py::arg("a"), py::pos_only(), py::kw_only(), stream, R"doc(
    Reduced QR factorization: ``Q`` ``(..., m, k)`` with orthonormal columns and upper
    triangular ``R`` ``(..., k, n)``, ``k = min(m, n)``.

    Returns:
        tuple(array, array): ``(Q, R)``.
  )doc");
  m.def(
      "svd",
      [](const array& a, bool compute_uv, StreamOrDevice s) -> py::object {
        auto out = linalg::svd(a, compute_uv, s);
        if (!compute_uv) return py::cast(out[0]);
        return as_tuple(out);
      },
      py::arg("a"), py::pos_only(), py::arg("compute_uv") = true, py::kw_only(), stream, R"doc(
    Singular value decomposition ``a = U @ diag(S) @ Vt``.

    Args:
        a (array): ``(..., m, n)``: float32, float64 or complex64.
        compute_uv (bool): Also return the singular vectors.

    Returns:
        tuple(array, array, array) or array: ``(U, S, Vt)`` with full ``U`` ``(..., m, m)``
        and ``Vt`` ``(..., n, n)``, or ``S`` alone; ``S`` is descending and real.
  )doc");
  m.def(
      "eigvalsh",
      [](const array& a, const std::string& UPLO, StreamOrDevice s) {
        return linalg::eigvalsh(a, UPLO, s);
      },
      py::arg("a"), py::pos_only(), py::arg("UPLO") = "L", py::kw_only(), stream, R"doc(
    Eigenvalues (ascending) of symmetric (Hermitian) matrices, from the ``UPLO`` triangle.
  )doc");
  m.def(
      "eigh",
      [](const array& a, const std::string& UPLO, StreamOrDevice s) {
        auto [w, v] = linalg::eigh(a, UPLO, s);
        return py::make_tuple(w, v);
      },
      py::arg("a"), py::pos_only(), py::arg("UPLO") = "L", py::kw_only(), stream, R"doc(
    Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric (Hermitian)
    matrices, from the ``UPLO`` (``'L'`` or ``'U'``) triangle.

    Returns:
        tuple(array, array): ``(w, V)`` with ``a @ V == V * w[..., None, :]``.
  )doc");
  m.def(
      "eigvals", [](const array& a, StreamOrDevice s) { return linalg::eigvals(a, s); },
      py::arg("a"), py::pos_only(), py::kw_only(), stream, R"doc(
    Eigenvalues of general square matrices, complex64.
  )doc");
  m.def(
      "eig",
      [](const array& a, StreamOrDevice s) {
        auto [w, v] = linalg::eig(a, s);
        return py::make_tuple(w, v);
      },
      py::arg("a"), py::pos_only(), py::kw_only(), stream, R"doc(
    Eigenvalues and unit-norm right eigenvectors (columns) of general square matrices, both
    complex64. Not differentiable.
  )doc");
  m.def(
      "lu", [](const array& a, StreamOrDevice s) { return as_tuple(linalg::lu(a, s)); },
      py::arg("a"), py::pos_only(), py::kw_only(), stream, R"doc(
    LU factorization with partial pivoting.

    Returns:
        tuple(array, array, array): ``(P, L, U)``: row indices ``P`` (uint32) with
        ``L[P] @ U == a``, unit lower ``L`` ``(..., m, k)``, upper ``U`` ``(..., k, n)``.
  )doc");
  m.def(
      "lu_factor",
      [](const array& a, StreamOrDevice s) {
        auto [lu, piv] = linalg::lu_factor(a, s);
        return py::make_tuple(lu, piv);
      },
      py::arg("a"), py::pos_only(), py::kw_only(), stream, R"doc(
    Packed LU factorization (LAPACK's ``getrf``).

    Returns:
        tuple(array, array): ``LU`` (``L`` below the diagonal, ``U`` on and above) and the
        0-based pivots (uint32): row ``i`` was swapped with row ``pivots[i]``.
  )doc");
  m.def(
      "solve",
      [](const array& a, const array& b, StreamOrDevice s) { return linalg::solve(a, b, s); },
      py::arg("a"), py::arg("b"), py::pos_only(), py::kw_only(), stream, R"doc(
    Solution ``x`` of ``a @ x = b`` for square ``a``; ``b`` is ``(..., n)`` when 1-d, else
    ``(..., n, k)``; batch axes broadcast.

    Raises:
        ValueError: Shapes that do not match or inputs not promoting to float32/float64.
        RuntimeError: A singular matrix (at evaluation).
  )doc");
  m.def(
      "solve_triangular",
      [](const array& a, const array& b, bool upper, StreamOrDevice s) {
        return linalg::solve_triangular(a, b, upper, s);
      },
      py::arg("a"), py::arg("b"), py::pos_only(), py::kw_only(), py::arg("upper") = false, stream,
      R"doc(
    As :func:`solve`, with ``a`` the triangular matrix in its lower (``upper``: upper)
    triangle.
  )doc");
  m.def(
      "det", [](const array& a, StreamOrDevice s) { return linalg::det(a, s); }, py::arg("a"),
      py::pos_only(), py::kw_only(), stream, R"doc(
    Determinant of square matrices (integers are computed in float32).
  )doc");
  m.def(
      "slogdet",
      [](const array& a, StreamOrDevice s) {
        auto [sg, ld] = linalg::slogdet(a, s);
        return py::make_tuple(sg, ld);
      },
      py::arg("a"), py::pos_only(), py::kw_only(), stream, R"doc(
    Sign and natural log of the absolute determinant; a singular matrix gives ``(0, -inf)``.

    Returns:
        tuple(array, array): ``(sign, logabsdet)``.
  )doc");
}

}  // namespace kiln::python
