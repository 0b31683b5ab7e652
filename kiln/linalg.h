// kiln::linalg: norms, factorizations, inverses and solvers (MLX's `mlx.core.linalg`).
//
// Matrices are the last two axes; leading axes are a batch, computed matrix by matrix.
// Factorizations run through LAPACK (OpenBLAS) on the CPU and cuSOLVER on the GPU, both
// devices alike (MLX runs most of them on the CPU only). Unless a function says otherwise it
// takes float32 or float64 and returns that dtype; integer and half inputs are an error, as
// in MLX. A matrix the factorization cannot handle (singular for inv/solve, not positive
// definite for cholesky, no convergence for svd/eig) raises std::runtime_error when the
// result is evaluated, naming the op and the LAPACK/cuSOLVER status; non-finite inputs to
// svd, eig and eigh give NaN outputs. Derivatives (vjp, jvp) exist for every function (MLX
// has none for eig/eigvals); those of factorizations follow the usual matrix-calculus
// identities (cited in primitives_factor.cpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln::linalg {

/**
 * The 2-norm of the flattened array (`axis` absent), of vectors along one axis, or the
 * Frobenius norm of matrices over two axes. Integer inputs give float32; complex inputs
 * their modulus' norm (float32). Throws std::invalid_argument for more than two axes.
 */
array norm(const array& a, const std::optional<std::vector<int>>& axis = std::nullopt,
           bool keepdims = false, StreamOrDevice s = {});
/**
 * NumPy's norm with a numeric `ord`. Over one axis (vector norms): 0 (count of non-zeros),
 * 1, 2, inf, -inf and any other p (sum |x|^p)^(1/p). Over two axes (matrix norms): 1, -1
 * (max/min column sum), inf, -inf (max/min row sum), 2, -2 (largest/smallest singular
 * value). Without `axis`, every axis of a 1-d or 2-d array. Throws std::invalid_argument
 * for an `ord` the number of axes does not take, or more than two axes.
 */
array norm(const array& a, double ord, const std::optional<std::vector<int>>& axis = std::nullopt,
           bool keepdims = false, StreamOrDevice s = {});
/** Matrix norms by name: "fro" (or "f", Frobenius) and "nuc" (sum of singular values).
 * Throws std::invalid_argument unless exactly two axes are reduced or for another name. */
array norm(const array& a, const std::string& ord,
           const std::optional<std::vector<int>>& axis = std::nullopt, bool keepdims = false,
           StreamOrDevice s = {});
/** The matrix norm `ord` (as norm's two-axis forms) over `axis` (default: the last two). */
array matrix_norm(const array& a, double ord, const std::vector<int>& axis = {-2, -1},
                  bool keepdims = false, StreamOrDevice s = {});
array matrix_norm(const array& a, const std::string& ord = "fro",
                  const std::vector<int>& axis = {-2, -1}, bool keepdims = false,
                  StreamOrDevice s = {});

/** The Cholesky factor of symmetric positive-definite `a` (..., n, n): lower L with
 * a = L L^T, or upper U with a = U^T U. Reads only that triangle of `a`. */
array cholesky(const array& a, bool upper = false, StreamOrDevice s = {});
/** The inverse of a = L L^T (or U^T U) from its Cholesky factor. */
array cholesky_inv(const array& L, bool upper = false, StreamOrDevice s = {});
/** The inverse of square `a` (..., n, n) (LU with partial pivoting). */
array inv(const array& a, StreamOrDevice s = {});
/** The inverse of the triangular matrix in the lower (upper) triangle of `a`; the other
 * triangle of `a` is ignored and is zero in the result. */
array tri_inv(const array& a, bool upper = false, StreamOrDevice s = {});
/** The Moore-Penrose pseudo-inverse (..., n, m) of `a` (..., m, n), from the SVD with
 * singular values below 10 * max(m, n) * eps * max(S) treated as zero (as MLX). */
array pinv(const array& a, StreamOrDevice s = {});

/** Cross product of 2- or 3-vectors along `axis` (NumPy's cross; 2-vectors are padded with
 * a zero third component). Shapes broadcast; dtypes promote. */
array cross(const array& a, const array& b, int axis = -1, StreamOrDevice s = {});

/** Reduced QR of `a` (..., m, n): Q (..., m, k) with orthonormal columns and upper
 * triangular R (..., k, n), k = min(m, n). */
std::pair<array, array> qr(const array& a, StreamOrDevice s = {});
/**
 * Singular value decomposition a = U diag(S) Vt. With `compute_uv`: {U (..., m, m),
 * S (..., k), Vt (..., n, n)} (full U and Vt, as MLX); otherwise {S}. S is descending.
 * float32, float64 or complex64 (S then float32).
 */
std::vector<array> svd(const array& a, bool compute_uv = true, StreamOrDevice s = {});

/** Eigenvalues (ascending) of the symmetric (Hermitian) matrix in the `UPLO` ("L" or "U")
 * triangle of `a`. float32, float64 or complex64 (values float32). */
array eigvalsh(const array& a, const std::string& UPLO = "L", StreamOrDevice s = {});
/** Eigenvalues (ascending) and orthonormal eigenvectors (columns) of a symmetric matrix. */
std::pair<array, array> eigh(const array& a, const std::string& UPLO = "L", StreamOrDevice s = {});
/** Eigenvalues of a general square matrix, complex64 (in LAPACK's order). */
array eigvals(const array& a, StreamOrDevice s = {});
/** Eigenvalues and unit-norm eigenvectors (columns, largest-modulus component real, as
 * LAPACK's geev), both complex64. */
std::pair<array, array> eig(const array& a, StreamOrDevice s = {});

/**
 * LU with partial pivoting of `a` (..., m, n): {P, L, U} with P (..., m) uint32 row indices
 * such that L[P] @ U == a (MLX's convention), L (..., m, k) unit lower, U (..., k, n).
 */
std::vector<array> lu(const array& a, StreamOrDevice s = {});
/** LAPACK's packed LU (..., m, n) and pivots (..., k) uint32, 0-based: row i was swapped
 * with row pivots[i]. */
std::pair<array, array> lu_factor(const array& a, StreamOrDevice s = {});

/** The solution x of a @ x = b: a (..., n, n); b (..., n) when 1-d, else (..., n, k);
 * batch axes broadcast. Inputs promote to float32 or float64. */
array solve(const array& a, const array& b, StreamOrDevice s = {});
/** As solve, with `a` the triangular matrix in its lower (upper) triangle. */
array solve_triangular(const array& a, const array& b, bool upper = false, StreamOrDevice s = {});

/** Determinant of square matrices (integers promote to float32). */
array det(const array& a, StreamOrDevice s = {});
/** {sign, log|det|} of square matrices; a singular matrix gives {0, -inf}. */
std::pair<array, array> slogdet(const array& a, StreamOrDevice s = {});

}  // namespace kiln::linalg
