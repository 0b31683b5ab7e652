// Transformations and shapes of the factorization primitives.
//
// Derivatives of symmetric-input factorizations (Cholesky, Eigh) treat the input as
// symmetric: their vjp is symmetrized, their jvp uses the symmetric part of the tangent, so
// both agree with finite differences of f(sym(a)). Formulas:
//  - Cholesky: Murray, "Differentiation of the Cholesky decomposition" (2016).
//  - Eig, Eigh, SVD: Giles, "An extended collection of matrix derivative results" (2008);
//    Townsend, "Differentiating the singular value decomposition" (2016).
//  - QR: Walter & Lehmann (2018); the wide case splits a = [X | Y] (PyTorch's derivation).
//  - LU: de Hoog, Anderssen & Lukas, "Differentiation of matrix functionals using
//    triangular factorization" (2011); square matrices.
// Derivatives of U and Vt from a full SVD of a non-square matrix use their first
// min(m, n) columns (rows); the others are not unique, their cotangents are ignored and
// their tangents are zero.
#include "kiln/primitives_factor.h"

#include <optional>

#include "kiln/linalg.h"
#include "kiln/ops.h"
#include "kiln/ops_complex.h"
#include "kiln/primitives_transforms.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

array mT(const array& x, const Stream& s) {
  return swapaxes(x, -1, -2, s);
}

array mm(const array& a, const array& b, const Stream& s) {
  return matmul(a, b, s);
}

array sym(const array& x, const Stream& s) {
  return multiply(add(x, mT(x, s), s), array(0.5, x.dtype()), s);
}

array triangle(const array& x, bool upper, int k, const Stream& s) {
  return upper ? triu(x, k, s) : tril(x, k, s);
}

// (..., n) -> (..., n, n) with v on the diagonal.
array diag_embed(const array& v, const Stream& s) {
  const int n = v.shape(-1);
  return multiply(expand_dims(v, -1, s), eye(n, n, 0, v.dtype(), s), s);
}

// The first `k` columns (rows when `rows`) of the matrices of x.
array leading(const array& x, int k, bool rows, const Stream& s) {
  Shape start(x.ndim(), 0), stop = x.shape();
  stop[x.ndim() - (rows ? 2 : 1)] = k;
  return stop == x.shape() ? x : slice(x, start, stop, s);
}

array trailing(const array& x, int from, const Stream& s) {
  Shape start(x.ndim(), 0), stop = x.shape();
  start.back() = from;
  return slice(x, start, stop, s);
}

// x with its mapped axis first (or broadcast along a new first axis of size `size`).
array batched(const array& x, int axis, const Stream& s) {
  return axis >= 0 ? moveaxis(x, axis, 0, s) : x;
}

int mapped_size(const std::vector<array>& inputs, const std::vector<int>& axes) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (axes[i] >= 0) return inputs[i].shape(axes[i]);
  }
  return -1;
}

// Zero tangents for integer outputs (pivots, permutations).
array zero_tangent(const array& out, const Stream& s) {
  return detail::zeros_view(out.shape(), out.dtype(), s);
}

// The same multi-output primitive applied to `a`.
std::vector<array> reapply(const std::shared_ptr<Primitive>& prim, const array& a,
                           const std::vector<Dtype>& dtypes) {
  return array::make_arrays(prim->output_shapes({a}), dtypes, prim, {a});
}

[[noreturn]] void complex_unsupported(const char* what, Dtype d) {
  throw std::invalid_argument(
      msg("[", what, "] Derivatives are implemented for float32 and float64 inputs; got ", d, "."));
}

// F with F_ij = 1 / (d_j - d_i) off the diagonal and 0 on it, for d (..., n).
array gap_inverse(const array& d, const Stream& s) {
  array diff = subtract(expand_dims(d, -2, s), expand_dims(d, -1, s), s);
  const int n = d.shape(-1);
  array off = subtract(array(1.0, d.dtype()), eye(n, n, 0, d.dtype(), s), s);
  // 1 on the diagonal before dividing, so it stays finite; then zeroed.
  array safe = add(diff, eye(n, n, 0, d.dtype(), s), s);
  return multiply(divide(array(1.0, d.dtype()), safe, s), off, s);
}

// -------------------------------------------------------------------- QR helpers

// vjp of reduced QR for m >= n: gA = [gQ + Q copyltu(gR R^T - Q^T gQ)] R^-T.
array qr_vjp_tall(const array& Q, const array& R, const array& gQ, const array& gR,
                  const Stream& s) {
  array M = subtract(mm(gR, mT(R, s), s), mm(mT(Q, s), gQ, s), s);
  array up = triu(M, 0, s);
  array b = subtract(add(up, mT(up, s), s), diag_embed(linalg_detail::diagonal(M, s), s), s);
  array g = add(mm(Q, b, s), gQ, s);
  // g R^-T = (R^-1 g^T)^T
  return mT(linalg::solve_triangular(R, mT(g, s), true, s), s);
}

// jvp of reduced QR for m >= n.
std::pair<array, array> qr_jvp_tall(const array& Q, const array& R, const array& dA,
                                    const Stream& s) {
  array B = mT(linalg::solve_triangular(mT(R, s), mT(dA, s), false, s), s);  // dA R^-1
  array C = mm(mT(Q, s), B, s);
  array low = tril(C, -1, s);
  array omega = subtract(low, mT(low, s), s);
  array CmO = subtract(C, omega, s);
  return {subtract(B, mm(Q, CmO, s), s), mm(CmO, R, s)};
}

}  // namespace

namespace linalg_detail {
array diagonal(const array& x, const Stream& s) {
  const int nd = static_cast<int>(x.ndim());
  const int m = x.shape(-2), n = x.shape(-1), k = std::min(m, n);
  array c = contiguous(x, false, s);
  Shape shape(x.shape().begin(), x.shape().end() - 2);
  Strides strides(nd - 2);
  int64_t st = static_cast<int64_t>(m) * n;
  for (int i = nd - 3; i >= 0; --i) {
    strides[i] = st;
    st *= x.shape(i);
  }
  shape.push_back(k);
  strides.push_back(n + 1);
  return as_strided(c, shape, strides, 0, s);
}
}  // namespace linalg_detail

// -------------------------------------------------------------------- Cholesky

bool Cholesky::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Cholesky*>(&other);
  return o && o->upper_ == upper_;
}

// Phi(X): the lower triangle with the diagonal halved.
static array phi(const array& x, const Stream& s) {
  return subtract(tril(x, 0, s),
                  multiply(diag_embed(linalg_detail::diagonal(x, s), s), array(0.5, x.dtype()), s),
                  s);
}

std::vector<array> Cholesky::vjp(const std::vector<array>& primals,
                                 const std::vector<array>& cotangents, const std::vector<int>&,
                                 const std::vector<array>& outputs) {
  const auto& s = stream();
  array L = upper_ ? mT(outputs[0], s) : outputs[0];
  array gL = upper_ ? mT(cotangents[0], s) : cotangents[0];
  array Linv = linalg::tri_inv(L, false, s);
  array g = mm(mT(Linv, s), mm(phi(mm(mT(L, s), gL, s), s), Linv, s), s);
  return {sym(g, s)};
}

std::vector<array> Cholesky::jvp(const std::vector<array>& primals,
                                 const std::vector<array>& tangents, const std::vector<int>&) {
  const auto& s = stream();
  array out = linalg::cholesky(primals[0], upper_, s);  // a jvp does not see the outputs
  array L = upper_ ? mT(out, s) : out;
  array Linv = linalg::tri_inv(L, false, s);
  array X = mm(Linv, mm(sym(tangents[0], s), mT(Linv, s), s), s);
  array dL = mm(L, phi(X, s), s);
  return {upper_ ? mT(dL, s) : dL};
}

std::pair<std::vector<array>, std::vector<int>> Cholesky::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  return {{linalg::cholesky(batched(inputs[0], axes[0], stream()), upper_, stream())},
          {axes[0] >= 0 ? 0 : -1}};
}

// -------------------------------------------------------------------- Inverse

bool Inverse::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Inverse*>(&other);
  return o && o->tri_ == tri_ && o->upper_ == upper_;
}

std::vector<array> Inverse::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                const std::vector<int>&, const std::vector<array>& outputs) {
  const auto& s = stream();
  const array& Y = outputs[0];
  array g = negative(mm(mT(Y, s), mm(cotangents[0], mT(Y, s), s), s), s);
  return {tri_ ? triangle(g, upper_, 0, s) : g};
}

std::vector<array> Inverse::jvp(const std::vector<array>& primals,
                                const std::vector<array>& tangents, const std::vector<int>&) {
  const auto& s = stream();
  array Y = tri_ ? linalg::tri_inv(primals[0], upper_, s) : linalg::inv(primals[0], s);
  array dA = tri_ ? triangle(tangents[0], upper_, 0, s) : tangents[0];
  return {negative(mm(Y, mm(dA, Y, s), s), s)};
}

std::pair<std::vector<array>, std::vector<int>> Inverse::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  array x = batched(inputs[0], axes[0], stream());
  array y = tri_ ? linalg::tri_inv(x, upper_, stream()) : linalg::inv(x, stream());
  return {{y}, {axes[0] >= 0 ? 0 : -1}};
}

// -------------------------------------------------------------------- LUF

std::vector<Shape> LUF::output_shapes(const std::vector<array>& inputs) {
  const array& a = inputs[0];
  const int m = a.shape(-2), n = a.shape(-1);
  Shape piv(a.shape().begin(), a.shape().end() - 2), rows = piv;
  piv.push_back(std::min(m, n));
  rows.push_back(m);
  return {a.shape(), piv, rows};
}

static void check_square_lu(const char* what, const array& a) {
  if (a.shape(-1) != a.shape(-2)) {
    throw std::invalid_argument(msg("[", what,
                                    "] Derivatives of an LU factorization are implemented for "
                                    "square matrices only; got shape ",
                                    shape_str(a.shape()), "."));
  }
  if (is_complex(a.dtype())) complex_unsupported(what, a.dtype());
}

// Unit lower L and upper U from the packed LU.
static std::pair<array, array> unpack_lu(const array& LU, const Stream& s) {
  const int n = LU.shape(-1);
  return {add(tril(LU, -1, s), eye(n, n, 0, LU.dtype(), s), s), triu(LU, 0, s)};
}

std::vector<array> LUF::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<int>&, const std::vector<array>& outputs) {
  const auto& s = stream();
  check_square_lu("LUF::vjp", primals[0]);
  auto [L, U] = unpack_lu(outputs[0], s);
  const array& g = cotangents[0];
  array phiL = tril(mm(mT(L, s), tril(g, -1, s), s), -1, s);
  array phiU = triu(mm(triu(g, 0, s), mT(U, s), s), 0, s);
  // X = L^-T (phiL + phiU) U^-T is the gradient with respect to the permuted rows a[perm].
  array X = linalg::solve_triangular(mT(L, s), add(phiL, phiU, s), true, s);
  X = mT(linalg::solve_triangular(U, mT(X, s), true, s), s);
  // Row j of a is row P[j] of a[perm].
  return {take_along_axis(X, expand_dims(outputs[2], -1, s), -2, s)};
}

std::vector<array> LUF::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                            const std::vector<int>&) {
  const auto& s = stream();
  check_square_lu("LUF::jvp", primals[0]);
  auto outs = linalg::lu_factor(primals[0], s);
  auto P = linalg::lu(primals[0], s)[0];
  auto [L, U] = unpack_lu(outs.first, s);
  // The rows of the tangent in factorized order: dA[perm], perm = argsort(P).
  array dAp = take_along_axis(tangents[0], expand_dims(argsort(P, -1, s), -1, s), -2, s);
  array X = linalg::solve_triangular(L, dAp, false, s);                       // L^-1 dAp
  X = mT(linalg::solve_triangular(mT(U, s), mT(X, s), false, s), s);        // ... U^-1
  array dLU = add(mm(L, tril(X, -1, s), s), mm(triu(X, 0, s), U, s), s);
  Shape piv = outs.second.shape();
  return {dLU, detail::zeros_view(piv, uint32, s), detail::zeros_view(P.shape(), uint32, s)};
}

std::pair<std::vector<array>, std::vector<int>> LUF::vmap(const std::vector<array>& inputs,
                                                          const std::vector<int>& axes) {
  array x = batched(inputs[0], axes[0], stream());
  auto out = reapply(std::make_shared<LUF>(stream()), x, {x.dtype(), uint32, uint32});
  int ax = axes[0] >= 0 ? 0 : -1;
  return {out, {ax, ax, ax}};
}

// -------------------------------------------------------------------- QRF

std::vector<Shape> QRF::output_shapes(const std::vector<array>& inputs) {
  const array& a = inputs[0];
  const int m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  Shape q = a.shape(), r = a.shape();
  q.back() = k;
  r[r.size() - 2] = k;
  return {q, r};
}

std::vector<array> QRF::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<int>&, const std::vector<array>& outputs) {
  const auto& s = stream();
  const array& A = primals[0];
  const int m = A.shape(-2), n = A.shape(-1);
  const array &Q = outputs[0], &R = outputs[1], &gQ = cotangents[0], &gR = cotangents[1];
  if (m >= n) return {qr_vjp_tall(Q, R, gQ, gR, s)};
  // Wide: a = [X | Y] with X square, R = [U | V], V = Q^T Y.
  array Y = trailing(A, m, s);
  array U = leading(R, m, false, s), gU = leading(gR, m, false, s), gV = trailing(gR, m, s);
  array gY = mm(Q, gV, s);
  array gX = qr_vjp_tall(Q, U, add(gQ, mm(Y, mT(gV, s), s), s), gU, s);
  return {concatenate({gX, gY}, -1, s)};
}

std::vector<array> QRF::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                            const std::vector<int>&) {
  const auto& s = stream();
  const array& A = primals[0];
  const int m = A.shape(-2), n = A.shape(-1);
  auto [Q, R] = linalg::qr(A, s);
  if (m >= n) {
    auto [dQ, dR] = qr_jvp_tall(Q, R, tangents[0], s);
    return {dQ, dR};
  }
  array Y = trailing(A, m, s), dY = trailing(tangents[0], m, s);
  array U = leading(R, m, false, s);
  auto [dQ, dU] = qr_jvp_tall(Q, U, leading(tangents[0], m, false, s), s);
  array dV = add(mm(mT(dQ, s), Y, s), mm(mT(Q, s), dY, s), s);
  return {dQ, concatenate({dU, dV}, -1, s)};
}

std::pair<std::vector<array>, std::vector<int>> QRF::vmap(const std::vector<array>& inputs,
                                                          const std::vector<int>& axes) {
  array x = batched(inputs[0], axes[0], stream());
  auto [q, r] = linalg::qr(x, stream());
  int ax = axes[0] >= 0 ? 0 : -1;
  return {{q, r}, {ax, ax}};
}

// -------------------------------------------------------------------- SVD

bool SVD::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const SVD*>(&other);
  return o && o->compute_uv_ == compute_uv_;
}

std::vector<Shape> SVD::output_shapes(const std::vector<array>& inputs) {
  const array& a = inputs[0];
  const int m = a.shape(-2), n = a.shape(-1);
  Shape batch(a.shape().begin(), a.shape().end() - 2);
  Shape sv = batch, u = batch, vt = batch;
  sv.push_back(std::min(m, n));
  if (!compute_uv_) return {sv};
  u.insert(u.end(), {m, m});
  vt.insert(vt.end(), {n, n});
  return {u, sv, vt};
}

std::vector<array> SVD::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<int>&, const std::vector<array>& outputs) {
  const auto& s = stream();
  const array& A = primals[0];
  if (is_complex(A.dtype())) complex_unsupported("SVD::vjp", A.dtype());
  const int m = A.shape(-2), n = A.shape(-1), k = std::min(m, n);
  std::vector<array> usv = compute_uv_ ? outputs : linalg::svd(A, true, s);
  array U = leading(usv[0], k, false, s);           // (..., m, k)
  array S = usv[1];                                  // (..., k)
  array V = mT(leading(usv[2], k, true, s), s);     // (..., n, k)
  if (!compute_uv_) return {mm(multiply(U, expand_dims(cotangents[0], -2, s), s), mT(V, s), s)};
  array gU = leading(cotangents[0], k, false, s);
  array gS = cotangents[1];
  array gV = mT(leading(cotangents[2], k, true, s), s);
  array Srow = expand_dims(S, -2, s), Scol = expand_dims(S, -1, s);
  array F = gap_inverse(square(S, s), s);  // 1 / (S_j^2 - S_i^2)
  auto skew = [&](const array& x) { return subtract(x, mT(x, s), s); };
  array UtgU = mm(mT(U, s), gU, s), VtgV = mm(mT(V, s), gV, s);
  array inner = add(add(multiply(multiply(skew(UtgU), F, s), Srow, s),
                        multiply(Scol, multiply(skew(VtgV), F, s), s), s),
                    diag_embed(gS, s), s);
  array gA = mm(U, mm(inner, mT(V, s), s), s);
  if (m > k) {
    gA = add(gA, mm(divide(subtract(gU, mm(U, UtgU, s), s), Srow, s), mT(V, s), s), s);
  }
  if (n > k) {
    gA = add(gA, mm(U, mT(divide(subtract(gV, mm(V, VtgV, s), s), Srow, s), s), s), s);
  }
  return {gA};
}

std::vector<array> SVD::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                            const std::vector<int>&) {
  const auto& s = stream();
  const array& A = primals[0];
  if (is_complex(A.dtype())) complex_unsupported("SVD::jvp", A.dtype());
  const int m = A.shape(-2), n = A.shape(-1), k = std::min(m, n);
  auto usv = linalg::svd(A, true, s);
  array U = leading(usv[0], k, false, s), S = usv[1], V = mT(leading(usv[2], k, true, s), s);
  const array& dA = tangents[0];
  array dP = mm(mT(U, s), mm(dA, V, s), s);
  array dS = linalg_detail::diagonal(dP, s);
  if (!compute_uv_) return {dS};
  array Srow = expand_dims(S, -2, s), Scol = expand_dims(S, -1, s);
  array F = gap_inverse(square(S, s), s);
  array dPS = multiply(dP, Srow, s), SdP = multiply(Scol, dP, s);
  array dU = mm(U, multiply(F, add(dPS, mT(dPS, s), s), s), s);
  array dV = mm(V, multiply(F, add(SdP, mT(SdP, s), s), s), s);
  if (m > k) {
    array r = mm(dA, V, s);
    dU = add(dU, divide(subtract(r, mm(U, mm(mT(U, s), r, s), s), s), Srow, s), s);
  }
  if (n > k) {
    array r = mm(mT(dA, s), U, s);
    dV = add(dV, divide(subtract(r, mm(V, mm(mT(V, s), r, s), s), s), Srow, s), s);
  }
  // Full U (m x m) and Vt (n x n): tangents of the non-unique extra columns are zero.
  if (m > k) {
    std::vector<std::pair<int, int>> w(dU.ndim(), {0, 0});
    w.back() = {0, m - k};
    dU = pad(dU, w, array(0.0, dU.dtype()), s);
  }
  array dVt = mT(dV, s);
  if (n > k) {
    std::vector<std::pair<int, int>> w(dVt.ndim(), {0, 0});
    w[dVt.ndim() - 2] = {0, n - k};
    dVt = pad(dVt, w, array(0.0, dVt.dtype()), s);
  }
  return {dU, dS, dVt};
}

std::pair<std::vector<array>, std::vector<int>> SVD::vmap(const std::vector<array>& inputs,
                                                          const std::vector<int>& axes) {
  array x = batched(inputs[0], axes[0], stream());
  auto out = linalg::svd(x, compute_uv_, stream());
  return {out, std::vector<int>(out.size(), axes[0] >= 0 ? 0 : -1)};
}

// -------------------------------------------------------------------- Eigh

bool Eigh::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Eigh*>(&other);
  return o && o->uplo_ == uplo_ && o->compute_vectors_ == compute_vectors_;
}

std::vector<Shape> Eigh::output_shapes(const std::vector<array>& inputs) {
  const array& a = inputs[0];
  Shape w(a.shape().begin(), a.shape().end() - 1);
  if (!compute_vectors_) return {w};
  return {w, a.shape()};
}

std::vector<array> Eigh::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                             const std::vector<int>&, const std::vector<array>& outputs) {
  const auto& s = stream();
  const array& A = primals[0];
  if (is_complex(A.dtype())) complex_unsupported("Eigh::vjp", A.dtype());
  const std::string uplo(1, uplo_);
  array w = outputs[0];
  array V = compute_vectors_ ? outputs[1] : linalg::eigh(A, uplo, s).second;
  array inner = diag_embed(cotangents[0], s);
  if (compute_vectors_) {
    inner = add(inner, multiply(gap_inverse(w, s), mm(mT(V, s), cotangents[1], s), s), s);
  }
  return {sym(mm(V, mm(inner, mT(V, s), s), s), s)};
}

std::vector<array> Eigh::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  const auto& s = stream();
  const array& A = primals[0];
  if (is_complex(A.dtype())) complex_unsupported("Eigh::jvp", A.dtype());
  auto [w, V] = linalg::eigh(A, std::string(1, uplo_), s);
  array X = mm(mT(V, s), mm(sym(tangents[0], s), V, s), s);
  array dw = linalg_detail::diagonal(X, s);
  if (!compute_vectors_) return {dw};
  return {dw, mm(V, multiply(gap_inverse(w, s), X, s), s)};
}

std::pair<std::vector<array>, std::vector<int>> Eigh::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  array x = batched(inputs[0], axes[0], stream());
  const Dtype r = x.dtype() == complex64 ? float32 : x.dtype();
  auto prim = std::make_shared<Eigh>(stream(), uplo_, compute_vectors_);
  auto out = reapply(prim, x, compute_vectors_ ? std::vector<Dtype>{r, x.dtype()} : std::vector<Dtype>{r});
  return {out, std::vector<int>(out.size(), axes[0] >= 0 ? 0 : -1)};
}

// -------------------------------------------------------------------- Eig

bool Eig::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Eig*>(&other);
  return o && o->compute_vectors_ == compute_vectors_;
}

std::vector<Shape> Eig::output_shapes(const std::vector<array>& inputs) {
  const array& a = inputs[0];
  Shape w(a.shape().begin(), a.shape().end() - 1);
  if (!compute_vectors_) return {w};
  return {w, a.shape()};
}

namespace {

array mH(const array& x, const Stream& s) {
  return conjugate(mT(x, s), s);
}

// x with a @ x = b for complex64 a (..., n, n), b (..., n, k): the real system
// [[Re a, -Im a], [Im a, Re a]] [Re x; Im x] = [Re b; Im b] (Solve is real-only).
array complex_solve(const array& a, const array& b, const Stream& s) {
  const int n = a.shape(-1);
  array ar = real(a, s), ai = imag(a, s);
  array m =
      concatenate({concatenate({ar, negative(ai, s)}, -1, s), concatenate({ai, ar}, -1, s)}, -2, s);
  array x = linalg::solve(m, concatenate({real(b, s), imag(b, s)}, -2, s), s);
  const int r = static_cast<int>(x.ndim()) - 2;
  Shape zero(x.ndim(), 0), half = x.shape(), mid(x.ndim(), 0);
  half[r] = n;
  mid[r] = n;
  return detail::complex_from_parts(slice(x, zero, half, s), slice(x, mid, x.shape(), s), s);
}

// geev's (and cuSOLVER's) normalization makes each eigenvector's largest-modulus component
// real: K (..., n, n) is 1 at that component of each column, vk (..., n) its real value.
std::pair<array, array> largest_components(const array& V, const Stream& s) {
  const int n = V.shape(-1);
  array k = argmax(abs(V, s), -2, true, s);  // the first maximum, as LAPACK's i?amax
  array K = astype(equal(reshape(arange(n, s), {n, 1}, s), k, s), complex64, s);
  return {K, real(sum(multiply(V, K, s), -2, false, s), s)};
}

}  // namespace

// Derivatives of A V = V diag(w) with unit columns whose largest-modulus component is real
// (the normalization geev and cuSOLVER return, so these match finite differences of eig
// itself): with P = V^-1 dA V and F_ij = 1 / (w_j - w_i), dw = diag(P),
// dV = V (F o P) + V diag(c), c_i = -Re(v_i^H (V (F o P))_i) - i Im((V (F o P))_ki) / v_ki.
// The vjp is its adjoint (Giles 2008; PyTorch's linalg_eig_backward without the gauge term).
// Repeated eigenvalues have no eigenvector derivative (infinite F).
std::vector<array> Eig::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<int>&, const std::vector<array>& outputs) {
  const auto& s = stream();
  const array& A = primals[0];
  array V = compute_vectors_ ? outputs[1] : linalg::eig(A, s).second;
  array Vh = mH(V, s);
  array gP = diag_embed(astype(cotangents[0], complex64, s), s);
  if (compute_vectors_) {
    array gV = astype(cotangents[1], complex64, s);
    array h = linalg_detail::diagonal(mm(Vh, gV, s), s);
    auto [K, vk] = largest_components(V, s);
    // The adjoint of c: -Re(h_i) v_i on column i, and -i Im(h_i) / v_ki at its component k.
    array gU =
        subtract(gV, multiply(V, astype(expand_dims(real(h, s), -2, s), complex64, s), s), s);
    array phase = astype(expand_dims(divide(imag(h, s), vk, s), -2, s), complex64, s);
    gU = subtract(gU, multiply(multiply(K, phase, s), array(std::complex<float>(0, 1)), s), s);
    array F = conjugate(gap_inverse(outputs[0], s), s);
    gP = add(gP, multiply(F, mm(Vh, gU, s), s), s);
  }
  array gA = complex_solve(Vh, mm(gP, Vh, s), s);  // V^-H gP V^H
  if (!is_complex(A.dtype())) gA = real(gA, s);
  return {astype(gA, A.dtype(), s)};
}

std::vector<array> Eig::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                            const std::vector<int>&) {
  const auto& s = stream();
  auto [w, V] = linalg::eig(primals[0], s);
  array P = complex_solve(V, mm(astype(tangents[0], complex64, s), V, s), s);
  array dw = linalg_detail::diagonal(P, s);
  if (!compute_vectors_) return {dw};
  array U = mm(V, multiply(gap_inverse(w, s), P, s), s);
  auto [K, vk] = largest_components(V, s);
  array re = real(linalg_detail::diagonal(mm(mH(V, s), U, s), s), s);
  array im = divide(imag(sum(multiply(U, K, s), -2, false, s), s), vk, s);
  array c = negative(detail::complex_from_parts(re, im, s), s);
  return {dw, add(U, multiply(V, expand_dims(c, -2, s), s), s)};
}

std::pair<std::vector<array>, std::vector<int>> Eig::vmap(const std::vector<array>& inputs,
                                                          const std::vector<int>& axes) {
  array x = batched(inputs[0], axes[0], stream());
  auto prim = std::make_shared<Eig>(stream(), compute_vectors_);
  auto out = reapply(prim, x, compute_vectors_ ? std::vector<Dtype>{complex64, complex64}
                                               : std::vector<Dtype>{complex64});
  return {out, std::vector<int>(out.size(), axes[0] >= 0 ? 0 : -1)};
}

// -------------------------------------------------------------------- Solve, SolveTriangular

std::vector<Shape> Solve::output_shapes(const std::vector<array>& inputs) {
  return {inputs[1].shape()};
}

std::vector<array> Solve::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                              const std::vector<int>& argnums, const std::vector<array>& outputs) {
  const auto& s = stream();
  array gB = linalg::solve(mT(primals[0], s), cotangents[0], s);
  std::vector<array> out;
  for (int a : argnums) out.push_back(a == 0 ? negative(mm(gB, mT(outputs[0], s), s), s) : gB);
  return out;
}

std::vector<array> Solve::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                              const std::vector<int>& argnums) {
  const auto& s = stream();
  std::optional<array> rhs;
  for (size_t i = 0; i < argnums.size(); ++i) {
    array t = argnums[i] == 1
                  ? tangents[i]
                  : negative(mm(tangents[i], linalg::solve(primals[0], primals[1], s), s), s);
    rhs = rhs ? add(*rhs, t, s) : t;
  }
  return {linalg::solve(primals[0], *rhs, s)};
}

std::pair<std::vector<array>, std::vector<int>> Solve::vmap(const std::vector<array>& inputs,
                                                            const std::vector<int>& axes) {
  const auto& s = stream();
  array a = batched(inputs[0], axes[0], s), b = batched(inputs[1], axes[1], s);
  if (axes[1] < 0) b = expand_dims(b, 0, s);  // keep b a stack of matrices after broadcasting
  if (axes[0] < 0) a = expand_dims(a, 0, s);
  return {{linalg::solve(a, b, s)}, {0}};
}

bool SolveTriangular::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const SolveTriangular*>(&other);
  return o && o->upper_ == upper_;
}

std::vector<Shape> SolveTriangular::output_shapes(const std::vector<array>& inputs) {
  return {inputs[1].shape()};
}

std::vector<array> SolveTriangular::vjp(const std::vector<array>& primals,
                                        const std::vector<array>& cotangents,
                                        const std::vector<int>& argnums,
                                        const std::vector<array>& outputs) {
  const auto& s = stream();
  array gB = linalg::solve_triangular(mT(primals[0], s), cotangents[0], !upper_, s);
  std::vector<array> out;
  for (int a : argnums) {
    out.push_back(a == 0 ? triangle(negative(mm(gB, mT(outputs[0], s), s), s), upper_, 0, s) : gB);
  }
  return out;
}

std::vector<array> SolveTriangular::jvp(const std::vector<array>& primals,
                                        const std::vector<array>& tangents,
                                        const std::vector<int>& argnums) {
  const auto& s = stream();
  std::optional<array> rhs;
  for (size_t i = 0; i < argnums.size(); ++i) {
    array t = argnums[i] == 1
                  ? tangents[i]
                  : negative(mm(triangle(tangents[i], upper_, 0, s),
                                linalg::solve_triangular(primals[0], primals[1], upper_, s), s),
                             s);
    rhs = rhs ? add(*rhs, t, s) : t;
  }
  return {linalg::solve_triangular(primals[0], *rhs, upper_, s)};
}

std::pair<std::vector<array>, std::vector<int>> SolveTriangular::vmap(
    const std::vector<array>& inputs, const std::vector<int>& axes) {
  const auto& s = stream();
  array a = batched(inputs[0], axes[0], s), b = batched(inputs[1], axes[1], s);
  if (axes[1] < 0) b = expand_dims(b, 0, s);
  if (axes[0] < 0) a = expand_dims(a, 0, s);
  return {{linalg::solve_triangular(a, b, upper_, s)}, {0}};
}

}  // namespace kiln
