// Linear algebra: matmul, addmm, inner, outer.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "helpers.h"
#include "ops_common.h"

namespace kiln::python {

void init_ops_linalg(py::module_& m) {
  auto stream = py::arg("stream") = py::none();

  m.def(
      "matmul", [](const array& a, const array& b, StreamOrDevice s) { return matmul(a, b, s); },
      py::arg("a"), py::arg("b"), py::pos_only(), py::kw_only(), stream, R"doc(
    Matrix product with NumPy's semantics (the ``@`` operator).

    1-d operands are promoted to matrices (a row for ``a``, a column for ``b``) and the added
    axis is removed; leading (batch) axes broadcast. float16 and bfloat16 accumulate in
    float32.

    Args:
        a (array): ``(..., M, K)`` or ``(K,)``.
        b (array): ``(..., K, N)`` or ``(K,)``.

    Returns:
        array: ``(..., M, N)``, in the promoted dtype.

    Raises:
        ValueError: The inner dimensions differ, the batch shapes do not broadcast, an
            operand is 0-d, or the dtype is an integer type.
  )doc");
  m.def(
      "addmm",
      [](const array& c, const array& a, const array& b, float alpha, float beta,
         StreamOrDevice s) { return addmm(c, a, b, alpha, beta, s); },
      py::arg("c"), py::arg("a"), py::arg("b"), py::pos_only(), py::arg("alpha") = 1.0f,
      py::arg("beta") = 1.0f, py::kw_only(), stream, R"doc(
    ``alpha * (a @ b) + beta * c``, with ``c`` broadcast to the product's shape.

    Args:
        c (array): The addend.
        a (array): The left matrix operand (see :func:`matmul`).
        b (array): The right matrix operand.
        alpha (float): Scale of the product.
        beta (float): Scale of ``c``.
  )doc");
  m.def(
      "inner", [](const array& a, const array& b, StreamOrDevice s) { return inner(a, b, s); },
      py::arg("a"), py::arg("b"), py::pos_only(), py::kw_only(), stream, R"doc(
    Sum of products over the last axes of ``a`` and ``b`` (the dot product of vectors).

    Args:
        a (array): ``(..., K)``.
        b (array): ``(..., K)``.

    Returns:
        array: ``a.shape[:-1] + b.shape[:-1]``.

    Raises:
        ValueError: The last dimensions differ.
  )doc");
  m.def(
      "outer", [](const array& a, const array& b, StreamOrDevice s) { return outer(a, b, s); },
      py::arg("a"), py::arg("b"), py::pos_only(), py::kw_only(), stream, R"doc(
    Outer product of the flattened ``a`` (length M) and ``b`` (length N).

    Args:
        a (array): Any shape, flattened.
        b (array): Any shape, flattened.

    Returns:
        array: ``(M, N)`` with ``out[i, j] = a[i] * b[j]``, in the promoted dtype.
  )doc");
}

}  // namespace kiln::python
