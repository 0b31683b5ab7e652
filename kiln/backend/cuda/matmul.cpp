// eval_gpu of the matrix products (Matmul, AddMM) through cuBLASLt (backend/cuda/blas.h).
//
// Operands are handed to cuBLASLt as they lie whenever their matrices are plain row-major or
// column-major blocks (unit stride in one dimension): a transposed view is passed as a
// transpose, and batch axes become cuBLASLt's strided batch, a broadcast one with stride 0.
// Batch axes that do not merge into one stride loop on the host; a matrix with no unit
// stride is first copied to row-major scratch. Half types multiply on tensor cores with
// float32 accumulation and round once, like the CPU's float32 accumulation.
#include "kiln/backend/cuda/matmul.h"

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/blas.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_linalg.h"
#include "kiln/utils.h"

namespace kiln::gpu {

namespace {
std::atomic<bool>& tf32_setting() {
  static std::atomic<bool> allow = [] {
    const char* env = std::getenv("KILN_MATMUL_TF32");
    return env && std::strcmp(env, "1") == 0;
  }();
  return allow;
}
}  // namespace

bool matmul_allow_tf32() {
  return tf32_setting().load(std::memory_order_relaxed);
}

bool set_matmul_allow_tf32(bool allow) {
  return tf32_setting().exchange(allow);
}

}  // namespace kiln::gpu

namespace kiln {

namespace {

/** One operand as cuBLASLt reads it: the matrix of batch position `batch` starts at
 * `ptr + elem_to_loc(batch, batch_shape, batch_strides)` elements. */
struct Operand {
  CUdeviceptr ptr;
  bool transposed;  // stored column-major
  int64_t ld;
  Strides batch_strides;
};

// How cuBLASLt can read a rows x cols matrix with strides (rs, cs) without a copy:
// {transposed, leading dimension}, or nothing. Size-1 dimensions place no constraint.
std::optional<std::pair<bool, int64_t>> blas_layout(int64_t rows, int64_t cols, int64_t rs,
                                                    int64_t cs) {
  if (cs == 1 || cols == 1) {
    const int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    if (ld >= std::max<int64_t>(cols, 1)) return std::pair{false, ld};
  }
  if (rs == 1 || rows == 1) {
    const int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    if (ld >= std::max<int64_t>(rows, 1)) return std::pair{true, ld};
  }
  return std::nullopt;
}

/** `x` (batch..., rows, cols) as a GEMM operand, copied to row-major scratch only when
 * cuBLASLt cannot read it in place. */
Operand prepare(const array& x, gpu::DeviceStream& s) {
  const int nd = static_cast<int>(x.ndim());
  const int64_t rows = x.shape(nd - 2), cols = x.shape(nd - 1);
  const Strides& st = x.strides();
  if (auto layout = blas_layout(rows, cols, st[nd - 2], st[nd - 1])) {
    return {gpu::device_address(x), layout->first, layout->second,
            Strides(st.begin(), st.end() - 2)};
  }
  const CUdeviceptr p = gpu::scratch(x.nbytes(), s);
  gpu::copy_to_row_contiguous(x, p, s);
  Strides rm = array::row_major_strides(x.shape());
  return {p, false, std::max<int64_t>(cols, 1), Strides(rm.begin(), rm.end() - 2)};
}

/** out = alpha * a @ b (+ beta * c) on the GPU; `out` is allocated here, row-contiguous. */
void product_gpu(const char* name, const array& a, const array& b, const array* c, float alpha,
                 float beta, array& out, gpu::DeviceStream& s) {
  const Dtype d = out.dtype();
  if (d != float32 && d != float64 && d != float16 && d != bfloat16 && d != complex64) {
    throw std::invalid_argument(
        msg("[", name, "::eval_gpu] Unsupported dtype ", d,
            "; expected float32, float64, float16, bfloat16 or complex64."));
  }
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const int nd = static_cast<int>(out.ndim());
  const int64_t M = out.shape(nd - 2), N = out.shape(nd - 1), K = a.shape(nd - 1);
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  const CUdeviceptr dst = gpu::device_address(out);
  const bool use_c = c != nullptr && beta != 0.0f;
  if (use_c) gpu::copy_to_row_contiguous(*c, dst, s);

  gpu::GemmArgs g;
  g.dtype = d;
  g.m = M;
  g.n = N;
  g.alpha = alpha;
  g.beta = use_c ? beta : 0.0;
  g.allow_tf32 = d == float32 && gpu::matmul_allow_tf32();
  g.ldc = N;

  Operand A, B;
  if (K == 0) {
    // An empty sum: zeros, or beta * c, which cuBLASLt computes as a rank-1 product of zeros.
    if (!use_c) {
      KILN_CU(cuMemsetD8Async, dst, 0, out.nbytes(), s.handle());
      return;
    }
    const CUdeviceptr za = gpu::scratch(M * d.size, s), zb = gpu::scratch(N * d.size, s);
    KILN_CU(cuMemsetD8Async, za, 0, M * d.size, s.handle());
    KILN_CU(cuMemsetD8Async, zb, 0, N * d.size, s.handle());
    A = {za, false, 1, Strides(batch.size(), 0)};
    B = {zb, false, std::max<int64_t>(N, 1), Strides(batch.size(), 0)};
    g.k = 1;
  } else {
    A = prepare(a, s);
    B = prepare(b, s);
    g.k = K;
  }
  g.transpose_a = A.transposed;
  g.lda = A.ld;
  g.transpose_b = B.transposed;
  g.ldb = B.ld;

  // Merge batch axes into as few strided batches as the three operands allow; the last
  // merged axis is cuBLASLt's batch, the others loop here.
  Strides cst = array::row_major_strides(out.shape());
  cst.resize(batch.size());
  auto [bshape, bst] = collapse_contiguous_dims<3>(batch, {A.batch_strides, B.batch_strides, cst});
  const int64_t inner = bshape.back();
  const int64_t sa = bst[0].back(), sb = bst[1].back(), sc = bst[2].back();
  const Shape outer_shape(bshape.begin(), bshape.end() - 1);
  const int64_t outer = static_cast<int64_t>(shape_size(outer_shape));
  const size_t esize = d.size;

  // A batch of A's rows against one B is a single taller GEMM.
  const bool fold = inner > 1 && sb == 0 && !A.transposed && sa == A.ld * M && sc == M * N;
  for (int64_t o = 0; o < outer; ++o) {
    const Strides oa(bst[0].begin(), bst[0].end() - 1), ob(bst[1].begin(), bst[1].end() - 1),
        oc(bst[2].begin(), bst[2].end() - 1);
    g.a = A.ptr + elem_to_loc(o, outer_shape, oa) * esize;
    g.b = B.ptr + elem_to_loc(o, outer_shape, ob) * esize;
    g.c = dst + elem_to_loc(o, outer_shape, oc) * esize;
    if (fold) {
      g.m = M * inner;
      g.batch = 1;
    } else {
      g.batch = inner;
      g.stride_a = sa;
      g.stride_b = sb;
      g.stride_c = sc;
    }
    gpu::gemm(g, s);
  }
}

}  // namespace

void Matmul::eval_gpu(const std::vector<array>& inputs, array& out) {
  product_gpu("Matmul", inputs[0], inputs[1], nullptr, 1.0f, 0.0f, out,
              gpu::device_stream(stream()));
}

void AddMM::eval_gpu(const std::vector<array>& inputs, array& out) {
  product_gpu("AddMM", inputs[1], inputs[2], &inputs[0], alpha_, beta_, out,
              gpu::device_stream(stream()));
}

}  // namespace kiln
