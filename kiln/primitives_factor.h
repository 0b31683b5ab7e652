// Dense factorization and solver primitives behind kiln::linalg (kiln/linalg.h).
//
// Every one works on the last two axes and treats leading axes as a batch; the ops in
// linalg.cpp check shapes and dtypes (float32/float64, complex64 where noted) before
// building them. eval_cpu: LAPACK through OpenBLAS (backend/cpu/lapack.cpp); eval_gpu:
// cuSOLVER (backend/cuda/solver.cpp). A factorization that fails (singular, not positive
// definite, no convergence) throws std::runtime_error naming the op, the matrix's batch
// index and the library status. Derivative formulas are referenced in primitives_factor.cpp.
#pragma once

#include <string>

#include "kiln/primitive.h"

namespace kiln {

/** L (or U) with a = L L^T (U^T U) from the lower (upper) triangle of a (..., n, n); the
 * other triangle of the result is zero. Not positive definite: runtime_error. */
class Cholesky : public UnaryPrimitive {
 public:
  Cholesky(Stream stream, bool upper) : UnaryPrimitive(stream), upper_(upper) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Cholesky)
  KILN_PRIMITIVE_SAME_SHAPE()
  bool is_equivalent(const Primitive& other) const override;
  bool upper() const { return upper_; }

 private:
  bool upper_;
};

/** The inverse of a (..., n, n): general (LU, getrf + getri) or, when `tri`, of the
 * triangular matrix in its lower (upper) triangle (trtri; the other triangle is zero).
 * Singular: runtime_error. */
class Inverse : public UnaryPrimitive {
 public:
  Inverse(Stream stream, bool tri, bool upper) : UnaryPrimitive(stream), tri_(tri), upper_(upper) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Inverse)
  KILN_PRIMITIVE_SAME_SHAPE()
  bool is_equivalent(const Primitive& other) const override;
  bool tri() const { return tri_; }
  bool upper() const { return upper_; }

 private:
  bool tri_, upper_;
};

/** LU with partial pivoting of a (..., m, n) (getrf): outputs packed LU (..., m, n), pivots
 * (..., k) uint32 (0-based LAPACK swaps) and row indices P (..., m) uint32 with
 * (L @ U)[P] == a. An exactly singular matrix is not an error (U has a zero diagonal). */
class LUF : public Primitive {
 public:
  explicit LUF(Stream stream) : Primitive(stream) {}
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(LUF)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

/** Reduced QR of a (..., m, n): Q (..., m, k), R (..., k, n), k = min(m, n) (geqrf + orgqr). */
class QRF : public Primitive {
 public:
  explicit QRF(Stream stream) : Primitive(stream) {}
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(QRF)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

/** SVD of a (..., m, n) (gesdd): with `compute_uv` outputs U (..., m, m), S (..., k),
 * Vt (..., n, n); otherwise S only. S is real (float32 for complex64 input), descending. */
class SVD : public Primitive {
 public:
  SVD(Stream stream, bool compute_uv) : Primitive(stream), compute_uv_(compute_uv) {}
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(SVD)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  bool compute_uv() const { return compute_uv_; }

 private:
  bool compute_uv_;
};

/** Eigen-decomposition of a symmetric (Hermitian) matrix from its `uplo` ('L' or 'U')
 * triangle (syevd/heevd): values (..., n) ascending, real; with `compute_vectors` also the
 * orthonormal eigenvectors (..., n, n) as columns. */
class Eigh : public Primitive {
 public:
  Eigh(Stream stream, char uplo, bool compute_vectors)
      : Primitive(stream), uplo_(uplo), compute_vectors_(compute_vectors) {}
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Eigh)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  char uplo() const { return uplo_; }
  bool compute_vectors() const { return compute_vectors_; }

 private:
  char uplo_;
  bool compute_vectors_;
};

/** Eigenvalues (..., n) and, with `compute_vectors`, right eigenvectors (..., n, n) of a
 * general square matrix (geev), both complex64: unit columns whose largest-modulus component
 * is real. Its derivatives (which MLX does not define) are those of that normalization, so
 * they match finite differences of eig itself; none exist at repeated eigenvalues. */
class Eig : public Primitive {
 public:
  Eig(Stream stream, bool compute_vectors) : Primitive(stream), compute_vectors_(compute_vectors) {}
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Eig)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  bool compute_vectors() const { return compute_vectors_; }

 private:
  bool compute_vectors_;
};

/** x with a @ x = b for a (..., n, n) and b (..., n, k) of equal batch shapes (getrf +
 * getrs). Singular: runtime_error. */
class Solve : public UnaryPrimitive {
 public:
  explicit Solve(Stream stream) : UnaryPrimitive(stream) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Solve)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

/** x with T @ x = b, T the lower (upper) triangle of a (..., n, n), b (..., n, k) (trsm).
 * A zero on T's diagonal: runtime_error. */
class SolveTriangular : public UnaryPrimitive {
 public:
  SolveTriangular(Stream stream, bool upper) : UnaryPrimitive(stream), upper_(upper) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(SolveTriangular)
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  bool upper() const { return upper_; }

 private:
  bool upper_;
};

}  // namespace kiln

namespace kiln::linalg_detail {
/** The main diagonals (..., min(m, n)) of the matrices of x (a strided view of a
 * contiguous copy; differentiable). */
array diagonal(const array& x, const Stream& s);
}  // namespace kiln::linalg_detail
