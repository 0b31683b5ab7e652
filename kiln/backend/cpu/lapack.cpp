// eval_cpu of the factorization primitives (primitives_factor.h) through LAPACK (OpenBLAS).
//
// Each matrix of the batch is copied into a column-major scratch buffer (LAPACK's layout;
// the copy reads any input strides, so views need no separate copy), factorized, and its
// results written row-major into the outputs. Small matrices are spread over kiln's threads
// one matrix per task; large ones run one at a time, threaded inside OpenBLAS.
#include <cblas.h>

#include <cmath>
#include <complex>
#include <limits>
#include <numeric>
#include <vector>

#include "kiln/backend/cpu/lapack.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_factor.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

using c64 = std::complex<float>;

template <typename T>
struct RealOf {
  using type = T;
};
template <>
struct RealOf<c64> {
  using type = float;
};
template <typename T>
using real_t = typename RealOf<T>::type;

// Where matrix i of x (batch..., rows, cols) lies and how to step through it.
struct MatrixView {
  Shape batch;
  Strides batch_strides;
  int rows, cols;
  int64_t rs, cs;
  size_t count;

  explicit MatrixView(const array& x) {
    const int nd = static_cast<int>(x.ndim());
    batch.assign(x.shape().begin(), x.shape().end() - 2);
    batch_strides.assign(x.strides().begin(), x.strides().end() - 2);
    rows = x.shape(nd - 2);
    cols = x.shape(nd - 1);
    rs = x.strides()[nd - 2];
    cs = x.strides()[nd - 1];
    count = shape_size(batch);
  }
  int64_t offset(size_t i) const { return elem_to_loc(static_cast<int64_t>(i), batch, batch_strides); }
};

// Matrix i of x into dst, column-major with leading dimension ld.
template <typename T>
void load(const array& x, const MatrixView& v, size_t i, T* dst, int ld) {
  const T* src = x.data<T>() + v.offset(i);
  for (int c = 0; c < v.cols; ++c) {
    for (int r = 0; r < v.rows; ++r) dst[r + static_cast<int64_t>(c) * ld] = src[r * v.rs + c * v.cs];
  }
}

// Column-major (ld) rows x cols into row-major dst; `keep(r, c)` false writes zero.
template <typename T, typename Keep>
void store(const T* src, int ld, int rows, int cols, T* dst, Keep keep) {
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      dst[static_cast<int64_t>(r) * cols + c] =
          keep(r, c) ? src[r + static_cast<int64_t>(c) * ld] : T(0);
    }
  }
}

template <typename T>
void store(const T* src, int ld, int rows, int cols, T* dst) {
  store(src, ld, rows, cols, dst, [](int, int) { return true; });
}

// Runs f(i) for every matrix: in parallel when each is small, in turn when OpenBLAS can
// thread a single one.
template <typename F>
void for_each_matrix(size_t count, double flops, F f) {
  constexpr double kSmall = 1 << 21;
  auto run = [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) f(i);
  };
  if (flops <= kSmall) {
    cpu::parallel_for(count, std::max<size_t>(1, static_cast<size_t>(kSmall / std::max(flops, 1.0))), run);
  } else {
    run(0, count);
  }
}

double cube(int n) {
  return static_cast<double>(n) * n * n;
}

template <typename T>
bool all_finite(const T* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(std::real(p[i])) || !std::isfinite(std::imag(p[i]))) return false;
  }
  return true;
}

template <typename T>
int query_size(T w) {
  return std::max(1, static_cast<int>(std::real(w)));
}

[[noreturn]] void fail(const char* op, size_t i, const std::string& what) {
  throw std::runtime_error(msg("[linalg::", op, "] ", what, " (matrix ", i, " of the batch)."));
}

[[noreturn]] void bad_dtype(const char* prim, Dtype d) {
  throw std::invalid_argument(msg("[", prim, "::eval_cpu] Unsupported dtype ", d, "."));
}

void alloc(array& out) {
  out.set_data(Storage::host(out.nbytes()));
}

template <typename F>
void dispatch_real(const char* prim, Dtype d, F f) {
  if (d == float32) return f(float{});
  if (d == float64) return f(double{});
  bad_dtype(prim, d);
}

template <typename F>
void dispatch_inexact(const char* prim, Dtype d, F f) {
  if (d == float32) return f(float{});
  if (d == float64) return f(double{});
  if (d == complex64) return f(c64{});
  bad_dtype(prim, d);
}

// ---------------------------------------------------------------- Cholesky, Inverse

template <typename T>
void cholesky(const array& a, array& out, bool upper) {
  MatrixView v(a);
  const int n = v.rows, ld = std::max(n, 1);
  T* dst = out.data<T>();
  for_each_matrix(v.count, cube(n) / 3, [&](size_t i) {
    std::vector<T> buf(static_cast<size_t>(ld) * n);
    load(a, v, i, buf.data(), ld);
    int info = cpu::lapack::potrf(upper ? 'U' : 'L', n, buf.data(), ld);
    if (info > 0) {
      fail("cholesky", i,
           msg("The matrix is not positive definite (its leading minor of order ", info,
               " is not positive)"));
    }
    store(buf.data(), ld, n, n, dst + i * n * n,
          [&](int r, int c) { return upper ? c >= r : r >= c; });
  });
}

template <typename T>
void inverse(const array& a, array& out, bool tri, bool upper) {
  MatrixView v(a);
  const int n = v.rows, ld = std::max(n, 1);
  T* dst = out.data<T>();
  int lwork = 1;
  if (!tri && n > 0) {
    T w{};
    std::vector<T> tmp(1);
    std::vector<int> piv(1);
    cpu::lapack::getri(n, tmp.data(), ld, piv.data(), &w, -1);
    lwork = query_size(w);
  }
  for_each_matrix(v.count, cube(n), [&](size_t i) {
    std::vector<T> buf(static_cast<size_t>(ld) * n);
    load(a, v, i, buf.data(), ld);
    if (tri) {
      int info = cpu::lapack::trtri(upper ? 'U' : 'L', n, buf.data(), ld);
      if (info > 0) {
        fail("tri_inv", i,
             msg("The matrix is singular: diagonal element ", info - 1, " is exactly zero"));
      }
      store(buf.data(), ld, n, n, dst + i * n * n,
            [&](int r, int c) { return upper ? c >= r : r >= c; });
      return;
    }
    std::vector<int> piv(std::max(n, 1));
    int info = cpu::lapack::getrf(n, n, buf.data(), ld, piv.data());
    if (info > 0) {
      fail("inv", i,
           msg("The matrix is singular: U[", info - 1, ", ", info - 1,
               "] of its LU factorization is exactly zero"));
    }
    std::vector<T> work(lwork);
    if (n > 0) cpu::lapack::getri(n, buf.data(), ld, piv.data(), work.data(), lwork);
    store(buf.data(), ld, n, n, dst + i * n * n);
  });
}

// ---------------------------------------------------------------- LU, QR

template <typename T>
void lu_factor(const array& a, std::vector<array>& outs) {
  MatrixView v(a);
  const int m = v.rows, n = v.cols, k = std::min(m, n), ld = std::max(m, 1);
  T* lu = outs[0].data<T>();
  uint32_t* pivots = outs[1].data<uint32_t>();
  uint32_t* rows = outs[2].data<uint32_t>();
  for_each_matrix(v.count, static_cast<double>(m) * n * k, [&](size_t i) {
    std::vector<T> buf(static_cast<size_t>(ld) * n);
    std::vector<int> piv(std::max(k, 1));
    load(a, v, i, buf.data(), ld);
    if (m > 0 && n > 0) cpu::lapack::getrf(m, n, buf.data(), ld, piv.data());
    store(buf.data(), ld, m, n, lu + i * m * n);
    // perm: factorized row j is input row perm[j]; P is its inverse.
    std::vector<uint32_t> perm(m);
    std::iota(perm.begin(), perm.end(), 0u);
    for (int j = 0; j < k; ++j) {
      pivots[i * k + j] = static_cast<uint32_t>(piv[j] - 1);
      std::swap(perm[j], perm[piv[j] - 1]);
    }
    for (int j = 0; j < m; ++j) rows[i * m + perm[j]] = static_cast<uint32_t>(j);
  });
}

template <typename T>
void qr(const array& a, std::vector<array>& outs) {
  MatrixView v(a);
  const int m = v.rows, n = v.cols, k = std::min(m, n), ld = std::max(m, 1);
  T* q = outs[0].data<T>();
  T* r = outs[1].data<T>();
  int lwork = 1;
  if (k > 0) {
    T w1{}, w2{};
    std::vector<T> tmp(1), tau(1);
    cpu::lapack::geqrf(m, n, tmp.data(), ld, tau.data(), &w1, -1);
    cpu::lapack::orgqr(m, k, k, tmp.data(), ld, tau.data(), &w2, -1);
    lwork = std::max(query_size(w1), query_size(w2));
  }
  for_each_matrix(v.count, 2.0 * m * n * k, [&](size_t i) {
    std::vector<T> buf(static_cast<size_t>(ld) * std::max(n, 1)), tau(std::max(k, 1)), work(lwork);
    load(a, v, i, buf.data(), ld);
    if (k > 0) cpu::lapack::geqrf(m, n, buf.data(), ld, tau.data(), work.data(), lwork);
    store(buf.data(), ld, k, n, r + i * k * n, [](int rr, int c) { return c >= rr; });
    if (k > 0) cpu::lapack::orgqr(m, k, k, buf.data(), ld, tau.data(), work.data(), lwork);
    store(buf.data(), ld, m, k, q + i * m * k);
  });
}

// ---------------------------------------------------------------- SVD

template <typename T>
void svd(const array& a, std::vector<array>& outs, bool compute_uv) {
  using R = real_t<T>;
  MatrixView v(a);
  const int m = v.rows, n = v.cols, k = std::min(m, n), mx = std::max(m, n);
  const int ld = std::max(m, 1), ldu = std::max(m, 1), ldvt = std::max(n, 1);
  const char jobz = compute_uv ? 'A' : 'N';
  R* sv = (compute_uv ? outs[1] : outs[0]).data<R>();
  T* u = compute_uv ? outs[0].data<T>() : nullptr;
  T* vt = compute_uv ? outs[2].data<T>() : nullptr;
  constexpr bool cplx = !std::is_same_v<T, R>;
  const size_t lrwork =
      cplx ? static_cast<size_t>(std::max(1, k)) * std::max(5 * k + 7, 2 * mx + 2 * k + 1) : 1;
  int lwork = 1;
  if (k > 0) {
    T w{};
    std::vector<T> tmp(1), tu(1), tvt(1);
    std::vector<R> ts(1), rw(lrwork);
    std::vector<int> iw(8 * k);
    cpu::lapack::gesdd(jobz, m, n, tmp.data(), ld, ts.data(), tu.data(), ldu, tvt.data(), ldvt, &w,
                       -1, rw.data(), iw.data());
    lwork = query_size(w);
  }
  const R nan = std::numeric_limits<R>::quiet_NaN();
  for_each_matrix(v.count, 4.0 * m * n * k + (compute_uv ? 2.0 * (cube(m) + cube(n)) : 0.0),
                  [&](size_t i) {
    T* ui = compute_uv ? u + i * m * m : nullptr;
    T* vti = compute_uv ? vt + i * n * n : nullptr;
    if (k == 0) {
      // Nothing to decompose: identities complete the (empty) factorization.
      for (int r = 0; r < m && ui; ++r)
        for (int c = 0; c < m; ++c) ui[r * m + c] = T(r == c ? 1 : 0);
      for (int r = 0; r < n && vti; ++r)
        for (int c = 0; c < n; ++c) vti[r * n + c] = T(r == c ? 1 : 0);
      return;
    }
    std::vector<T> buf(static_cast<size_t>(ld) * n);
    load(a, v, i, buf.data(), ld);
    if (!all_finite(buf.data(), buf.size())) {
      std::fill(sv + i * k, sv + (i + 1) * k, nan);
      if (ui) std::fill(ui, ui + m * m, T(nan));
      if (vti) std::fill(vti, vti + n * n, T(nan));
      return;
    }
    std::vector<T> ub(compute_uv ? static_cast<size_t>(ldu) * m : 1),
        vtb(compute_uv ? static_cast<size_t>(ldvt) * n : 1), work(lwork);
    std::vector<R> rwork(lrwork);
    std::vector<int> iwork(8 * k);
    int info = cpu::lapack::gesdd(jobz, m, n, buf.data(), ld, sv + i * k, ub.data(), ldu, vtb.data(),
                                  ldvt, work.data(), lwork, rwork.data(), iwork.data());
    if (info > 0) fail("svd", i, msg("The SVD did not converge (gesdd info ", info, ")"));
    if (compute_uv) {
      store(ub.data(), ldu, m, m, ui);
      store(vtb.data(), ldvt, n, n, vti);
    }
  });
}

// ---------------------------------------------------------------- Eigh, Eig

template <typename T>
void eigh(const array& a, std::vector<array>& outs, char uplo, bool vectors) {
  using R = real_t<T>;
  MatrixView v(a);
  const int n = v.rows, ld = std::max(n, 1);
  const char jobz = vectors ? 'V' : 'N';
  R* w = outs[0].data<R>();
  T* vec = vectors ? outs[1].data<T>() : nullptr;
  int lwork = 1, lrwork = 1, liwork = 1;
  if (n > 0) {
    T wq{};
    R rq{};
    int iq = 0;
    std::vector<T> tmp(1);
    std::vector<R> tw(1);
    cpu::lapack::syevd(jobz, uplo, n, tmp.data(), ld, tw.data(), &wq, -1, &rq, -1, &iq, -1);
    lwork = query_size(wq);
    lrwork = query_size(rq);
    liwork = std::max(1, iq);
  }
  const R nan = std::numeric_limits<R>::quiet_NaN();
  for_each_matrix(v.count, 4.0 * cube(n), [&](size_t i) {
    if (n == 0) return;
    std::vector<T> buf(static_cast<size_t>(ld) * n);
    load(a, v, i, buf.data(), ld);
    if (!all_finite(buf.data(), buf.size())) {
      std::fill(w + i * n, w + (i + 1) * n, nan);
      if (vec) std::fill(vec + i * n * n, vec + (i + 1) * n * n, T(nan));
      return;
    }
    std::vector<T> work(lwork);
    std::vector<R> rwork(lrwork);
    std::vector<int> iwork(liwork);
    int info = cpu::lapack::syevd(jobz, uplo, n, buf.data(), ld, w + i * n, work.data(), lwork,
                                  rwork.data(), lrwork, iwork.data(), liwork);
    if (info > 0) fail("eigh", i, msg("The eigensolver did not converge (syevd info ", info, ")"));
    if (vec) store(buf.data(), ld, n, n, vec + i * n * n);
  });
}

// geev for real matrices: complex conjugate pairs come as (re, im) columns of VR.
template <typename T>
int geev(int n, T* a, int ld, c64* w, c64* vecs, bool vectors, std::vector<T>& work) {
  std::vector<T> wr(n), wi(n), vr(vectors ? static_cast<size_t>(ld) * n : 1);
  int info = 0, lwork = static_cast<int>(work.size()), one = 1;
  const char jobvr = vectors ? 'V' : 'N';
  T* vl = nullptr;
  if constexpr (std::is_same_v<T, float>) {
    sgeev_("N", &jobvr, &n, a, &ld, wr.data(), wi.data(), vl, &one, vr.data(), &ld, work.data(),
           &lwork, &info, 1, 1);
  } else {
    dgeev_("N", &jobvr, &n, a, &ld, wr.data(), wi.data(), vl, &one, vr.data(), &ld, work.data(),
           &lwork, &info, 1, 1);
  }
  if (info != 0) return info;
  for (int j = 0; j < n; ++j) w[j] = c64(static_cast<float>(wr[j]), static_cast<float>(wi[j]));
  if (!vectors) return 0;
  for (int j = 0; j < n; ++j) {
    const bool pair = wi[j] != 0 && j + 1 < n;
    for (int r = 0; r < n; ++r) {
      const T re = vr[r + static_cast<int64_t>(j) * ld];
      const T im = pair ? vr[r + static_cast<int64_t>(j + 1) * ld] : T(0);
      vecs[static_cast<int64_t>(r) * n + j] = c64(static_cast<float>(re), static_cast<float>(im));
      if (pair) {
        vecs[static_cast<int64_t>(r) * n + j + 1] =
            c64(static_cast<float>(re), static_cast<float>(-im));
      }
    }
    if (pair) ++j;
  }
  return 0;
}

int geev(int n, c64* a, int ld, c64* w, c64* vecs, bool vectors, std::vector<c64>& work) {
  std::vector<c64> vr(vectors ? static_cast<size_t>(ld) * n : 1);
  std::vector<float> rwork(2 * n);
  int info = 0, lwork = static_cast<int>(work.size()), one = 1;
  const char jobvr = vectors ? 'V' : 'N';
  cgeev_("N", &jobvr, &n, a, &ld, w, nullptr, &one, vr.data(), &ld, work.data(), &lwork,
         rwork.data(), &info, 1, 1);
  if (info == 0 && vectors) store(vr.data(), ld, n, n, vecs);
  return info;
}

template <typename T>
void eig(const array& a, std::vector<array>& outs, bool vectors) {
  MatrixView v(a);
  const int n = v.rows, ld = std::max(n, 1);
  c64* w = outs[0].data<c64>();
  c64* vec = vectors ? outs[1].data<c64>() : nullptr;
  // geev's optimal workspace; 4n (+ a margin) is what it needs with right vectors only.
  const size_t lwork = static_cast<size_t>(std::max(1, 8 * n + 64 * n));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for_each_matrix(v.count, 10.0 * cube(n), [&](size_t i) {
    if (n == 0) return;
    std::vector<T> buf(static_cast<size_t>(ld) * n), work(lwork);
    load(a, v, i, buf.data(), ld);
    if (!all_finite(buf.data(), buf.size())) {
      std::fill(w + i * n, w + (i + 1) * n, c64(nan, nan));
      if (vec) std::fill(vec + i * n * n, vec + (i + 1) * n * n, c64(nan, nan));
      return;
    }
    int info = geev(n, buf.data(), ld, w + i * n, vec ? vec + i * n * n : nullptr, vectors, work);
    if (info > 0) fail("eig", i, msg("The eigensolver did not converge (geev info ", info, ")"));
  });
}

// ---------------------------------------------------------------- solvers

template <typename T>
void solve(const array& a, const array& b, array& out) {
  MatrixView va(a), vb(b);
  const int n = va.rows, k = vb.cols, ld = std::max(n, 1);
  T* dst = out.data<T>();
  for_each_matrix(va.count, cube(n) + 2.0 * n * n * k, [&](size_t i) {
    if (n == 0 || k == 0) return;
    std::vector<T> A(static_cast<size_t>(ld) * n), B(static_cast<size_t>(ld) * k);
    std::vector<int> piv(n);
    load(a, va, i, A.data(), ld);
    load(b, vb, i, B.data(), ld);
    int info = cpu::lapack::getrf(n, n, A.data(), ld, piv.data());
    if (info > 0) {
      fail("solve", i,
           msg("The matrix is singular: U[", info - 1, ", ", info - 1,
               "] of its LU factorization is exactly zero"));
    }
    cpu::lapack::getrs(n, k, A.data(), ld, piv.data(), B.data(), ld);
    if constexpr (std::is_same_v<T, float>) {
      // One step of iterative refinement with the residual in double: float32 LU leaves an
      // error of about cond(a) * eps32; the correction brings it near the float32 rounding of
      // the exact solution for all but ill-conditioned matrices, at O(n^2 k) extra cost.
      std::vector<T> A0(static_cast<size_t>(ld) * n), R(static_cast<size_t>(ld) * k);
      load(a, va, i, A0.data(), ld);
      load(b, vb, i, R.data(), ld);
      std::vector<double> acc(n);
      for (int c = 0; c < k; ++c) {
        T* rc = R.data() + static_cast<int64_t>(c) * ld;
        for (int r = 0; r < n; ++r) acc[r] = rc[r];
        for (int j = 0; j < n; ++j) {
          const double xj = B[j + static_cast<int64_t>(c) * ld];
          const T* col = A0.data() + static_cast<int64_t>(j) * ld;
          for (int r = 0; r < n; ++r) acc[r] -= static_cast<double>(col[r]) * xj;
        }
        for (int r = 0; r < n; ++r) rc[r] = static_cast<T>(acc[r]);
      }
      cpu::lapack::getrs(n, k, A.data(), ld, piv.data(), R.data(), ld);
      for (size_t j = 0; j < B.size(); ++j) B[j] += R[j];
    }
    store(B.data(), ld, n, k, dst + i * n * k);
  });
}

void trsm(bool upper, int n, int k, const float* A, int ld, float* B) {
  cblas_strsm(CblasColMajor, CblasLeft, upper ? CblasUpper : CblasLower, CblasNoTrans,
              CblasNonUnit, n, k, 1.0f, A, ld, B, ld);
}
void trsm(bool upper, int n, int k, const double* A, int ld, double* B) {
  cblas_dtrsm(CblasColMajor, CblasLeft, upper ? CblasUpper : CblasLower, CblasNoTrans,
              CblasNonUnit, n, k, 1.0, A, ld, B, ld);
}

template <typename T>
void solve_triangular(const array& a, const array& b, array& out, bool upper) {
  MatrixView va(a), vb(b);
  const int n = va.rows, k = vb.cols, ld = std::max(n, 1);
  T* dst = out.data<T>();
  for_each_matrix(va.count, static_cast<double>(n) * n * k, [&](size_t i) {
    if (n == 0 || k == 0) return;
    std::vector<T> A(static_cast<size_t>(ld) * n), B(static_cast<size_t>(ld) * k);
    load(a, va, i, A.data(), ld);
    for (int j = 0; j < n; ++j) {
      if (A[j + static_cast<int64_t>(j) * ld] == T(0)) {
        fail("solve_triangular", i, msg("The matrix is singular: diagonal element ", j, " is zero"));
      }
    }
    load(b, vb, i, B.data(), ld);
    trsm(upper, n, k, A.data(), ld, B.data());
    store(B.data(), ld, n, k, dst + i * n * k);
  });
}

}  // namespace

void Cholesky::eval_cpu(const std::vector<array>& inputs, array& out) {
  alloc(out);
  dispatch_real("Cholesky", out.dtype(), [&](auto t) { cholesky<decltype(t)>(inputs[0], out, upper_); });
}

void Inverse::eval_cpu(const std::vector<array>& inputs, array& out) {
  alloc(out);
  dispatch_real("Inverse", out.dtype(),
                [&](auto t) { inverse<decltype(t)>(inputs[0], out, tri_, upper_); });
}

void LUF::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (auto& o : outputs) alloc(o);
  dispatch_real("LUF", inputs[0].dtype(), [&](auto t) { lu_factor<decltype(t)>(inputs[0], outputs); });
}

void QRF::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (auto& o : outputs) alloc(o);
  dispatch_real("QRF", inputs[0].dtype(), [&](auto t) { qr<decltype(t)>(inputs[0], outputs); });
}

void SVD::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (auto& o : outputs) alloc(o);
  dispatch_inexact("SVD", inputs[0].dtype(),
                   [&](auto t) { svd<decltype(t)>(inputs[0], outputs, compute_uv_); });
}

void Eigh::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (auto& o : outputs) alloc(o);
  dispatch_inexact("Eigh", inputs[0].dtype(),
                   [&](auto t) { eigh<decltype(t)>(inputs[0], outputs, uplo_, compute_vectors_); });
}

void Eig::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (auto& o : outputs) alloc(o);
  dispatch_inexact("Eig", inputs[0].dtype(),
                   [&](auto t) { eig<decltype(t)>(inputs[0], outputs, compute_vectors_); });
}

void Solve::eval_cpu(const std::vector<array>& inputs, array& out) {
  alloc(out);
  dispatch_real("Solve", out.dtype(), [&](auto t) { solve<decltype(t)>(inputs[0], inputs[1], out); });
}

void SolveTriangular::eval_cpu(const std::vector<array>& inputs, array& out) {
  alloc(out);
  dispatch_real("SolveTriangular", out.dtype(),
                [&](auto t) { solve_triangular<decltype(t)>(inputs[0], inputs[1], out, upper_); });
}

}  // namespace kiln
