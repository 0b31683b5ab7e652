// eval_cpu of the matrix products: batched gemm through OpenBLAS (cblas.h).
//
// Each operand is handed to BLAS as it lies whenever its matrices are plain row-major or
// column-major blocks (unit stride in one dimension, any leading dimension): a transposed
// view is passed as a transpose, a broadcast batch axis reuses the same matrix. Other
// layouts, and half-precision inputs, are first copied (converted) to row-major scratch.
#include <cblas.h>

#include <climits>
#include <optional>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/threading.h"
#include "kiln/primitives_linalg.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// OpenBLAS runs a gemm on one thread when M * N * K is at most this (interface/gemm.c:
// SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD). Below it, batches are spread over
// kiln's threads instead; above it, OpenBLAS threads each call and batches run in turn,
// so the two pools never compete for the cores.
constexpr double kBlasSingleThreadWork = 65536.0 * 4;

// One operand as gemm reads it: matrix `i` of the batch starts at data + offset(i).
template <typename T>
struct GemmOperand {
  const T* data;
  bool transposed;  // the matrix is stored column-major
  int ld;           // leading dimension (elements)
  Strides batch_strides;
  std::shared_ptr<Storage> scratch;  // owns a converted copy, if one was made
};

// How BLAS can read a rows x cols matrix with strides (rs, cs) without a copy: {transposed,
// leading dimension}, or nothing. Size-1 dimensions place no constraint on their stride.
std::optional<std::pair<bool, int>> blas_layout(int64_t rows, int64_t cols, int64_t rs,
                                                int64_t cs) {
  auto valid = [](int64_t ld, int64_t min) {
    return ld >= std::max<int64_t>(min, 1) && ld <= INT_MAX;
  };
  if (cs == 1 || cols == 1) {
    int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    if (valid(ld, cols)) return std::pair{false, static_cast<int>(ld)};
  }
  if (rs == 1 || rows == 1) {
    int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    if (valid(ld, rows)) return std::pair{true, static_cast<int>(ld)};
  }
  return std::nullopt;
}

// `x` (batch..., rows, cols) as a gemm operand of type T, copied only if BLAS cannot read
// it: the copy is row-major and keeps broadcast batch axes unmaterialized.
template <typename T>
GemmOperand<T> prepare_operand(const array& x) {
  const int nd = static_cast<int>(x.ndim());
  const int rows = x.shape()[nd - 2], cols = x.shape()[nd - 1];
  const Strides& st = x.strides();
  if (x.dtype() == dtype_v<T>) {
    if (auto layout = blas_layout(rows, cols, st[nd - 2], st[nd - 1])) {
      return {x.data<T>(), layout->first, layout->second, Strides(st.begin(), st.begin() + nd - 2),
              nullptr};
    }
  }
  Shape compact = x.shape();
  for (int i = 0; i < nd - 2; ++i) {
    if (st[i] == 0) compact[i] = 1;
  }
  auto storage = Storage::host(shape_size(compact) * sizeof(T));
  array scratch(storage, compact, dtype_v<T>);
  cpu::copy_inplace(x, scratch, compact, st, scratch.strides(), 0, 0);
  Strides batch_strides(scratch.strides().begin(), scratch.strides().end() - 2);
  for (int i = 0; i < nd - 2; ++i) {
    if (compact[i] == 1) batch_strides[i] = 0;
  }
  return {scratch.data<T>(), false, std::max(cols, 1), std::move(batch_strides), storage};
}

void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda,
          const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool ta, bool tb, int M, int N, int K, complex64_t alpha, const complex64_t* A, int lda,
          const complex64_t* B, int ldb, complex64_t beta, complex64_t* C, int ldc) {
  cblas_cgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
              K, &alpha, A, lda, B, ldb, &beta, C, ldc);
}

// Whether every matrix of `x` follows the previous one at `ld * rows` elements, so the
// whole batch is one (nbatch * rows) x cols row-major matrix.
template <typename T>
bool batch_folds(const GemmOperand<T>& x, const Shape& batch, int rows) {
  if (x.transposed) return false;
  int64_t expect = static_cast<int64_t>(x.ld) * rows;
  for (int i = static_cast<int>(batch.size()) - 1; i >= 0; --i) {
    if (batch[i] == 1) continue;
    if (x.batch_strides[i] != expect) return false;
    expect *= batch[i];
  }
  return true;
}

// C[i] = alpha * A[i] @ B[i] + beta * C[i] for every batch element i; C is row-contiguous.
template <typename T>
void batched_gemm(const GemmOperand<T>& A, const GemmOperand<T>& B, T* C, const Shape& batch, int M,
                  int N, int K, T alpha, T beta) {
  const size_t nbatch = shape_size(batch);
  const bool b_shared =
      std::all_of(B.batch_strides.begin(), B.batch_strides.end(), [](int64_t s) { return s == 0; });
  if (nbatch == 1 ||
      (b_shared && batch_folds(A, batch, M) && static_cast<int64_t>(nbatch) * M <= INT_MAX)) {
    // One call: a single matrix, or a batch of A rows against one B.
    gemm(A.transposed, B.transposed, static_cast<int>(nbatch * M), N, K, alpha, A.data, A.ld,
         B.data, B.ld, beta, C, N);
    return;
  }
  auto run = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      gemm(A.transposed, B.transposed, M, N, K, alpha,
           A.data + elem_to_loc(i, batch, A.batch_strides), A.ld,
           B.data + elem_to_loc(i, batch, B.batch_strides), B.ld, beta,
           C + static_cast<int64_t>(i) * M * N, N);
    }
  };
  const double work = static_cast<double>(M) * N * K;
  if (work <= kBlasSingleThreadWork) {
    cpu::parallel_for(nbatch, static_cast<size_t>(kBlasSingleThreadWork / std::max(work, 1.0)),
                      run);
  } else {
    run(0, nbatch);
  }
}

// out = alpha * a @ b (+ beta * c), computing in Acc (float for the half types).
template <typename T, typename Acc>
void product(const array& a, const array& b, const array* c, float alpha, float beta, array& out) {
  const int nd = static_cast<int>(out.ndim());
  const int M = out.shape()[nd - 2], N = out.shape()[nd - 1], K = a.shape()[nd - 1];
  const Shape batch(out.shape().begin(), out.shape().end() - 2);

  // The accumulator: the output itself, or float32 scratch rounded into it at the end.
  array acc = out;
  if constexpr (!std::is_same_v<T, Acc>) {
    acc = array(Storage::host(out.size() * sizeof(Acc)), out.shape(), dtype_v<Acc>);
  }
  const bool use_c = c != nullptr && beta != 0.0f;
  if (use_c) {
    cpu::copy_inplace(*c, acc, out.shape(), c->strides(), acc.strides(), 0, 0);
  }
  Acc* dst = acc.data<Acc>();
  if (K == 0) {
    // An empty sum: zeros, or beta * c.
    cpu::parallel_for(out.size(), cpu::kElementwiseGrain, [&](size_t s, size_t e) {
      for (size_t i = s; i < e; ++i) dst[i] = use_c ? static_cast<Acc>(beta) * dst[i] : Acc(0);
    });
  } else {
    auto A = prepare_operand<Acc>(a);
    auto B = prepare_operand<Acc>(b);
    batched_gemm<Acc>(A, B, dst, batch, M, N, K, static_cast<Acc>(alpha),
                      use_c ? static_cast<Acc>(beta) : Acc(0));
  }
  if constexpr (!std::is_same_v<T, Acc>) {
    T* o = out.data<T>();
    cpu::parallel_for(out.size(), cpu::kElementwiseGrain, [&](size_t s, size_t e) {
      for (size_t i = s; i < e; ++i) o[i] = T(dst[i]);
    });
  }
}

void eval_product(const char* name, const array& a, const array& b, const array* c, float alpha,
                  float beta, array& out) {
  out.set_data(Storage::host(out.nbytes()));
  if (out.size() == 0) return;
  switch (out.dtype().val) {
    case Dtype::Val::float32:
      return product<float, float>(a, b, c, alpha, beta, out);
    case Dtype::Val::float64:
      return product<double, double>(a, b, c, alpha, beta, out);
    case Dtype::Val::float16:
      return product<float16_t, float>(a, b, c, alpha, beta, out);
    case Dtype::Val::bfloat16:
      return product<bfloat16_t, float>(a, b, c, alpha, beta, out);
    case Dtype::Val::complex64:
      return product<complex64_t, complex64_t>(a, b, c, alpha, beta, out);
    default:
      throw std::invalid_argument(
          msg("[", name, "::eval_cpu] Unsupported dtype ", out.dtype(), "."));
  }
}

}  // namespace

void Matmul::eval_cpu(const std::vector<array>& inputs, array& out) {
  eval_product("Matmul", inputs[0], inputs[1], nullptr, 1.0f, 0.0f, out);
}

void AddMM::eval_cpu(const std::vector<array>& inputs, array& out) {
  eval_product("AddMM", inputs[1], inputs[2], &inputs[0], alpha_, beta_, out);
}

}  // namespace kiln
