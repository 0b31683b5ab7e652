#include "kiln/backend/cuda/blas.h"

#include <cublasLt.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/utils.h"

namespace kiln::gpu {

namespace {

// NVIDIA's recommended cuBLASLt workspace for Hopper; enough for every algorithm we pick.
constexpr size_t kWorkspace = 32 << 20;
constexpr int kMaxDevices = 64;

void check_cublas(const char* call, cublasStatus_t s) {
  if (s != CUBLAS_STATUS_SUCCESS) [[unlikely]] {
    throw std::runtime_error(std::string("[") + call + "] failed: " + cublasLtGetStatusName(s) +
                             " (" + cublasLtGetStatusString(s) + ").");
  }
}
#define KILN_CUBLAS(fn, ...) check_cublas(#fn, fn(__VA_ARGS__))

// Types of a GEMM in cuBLASLt's terms.
struct GemmTypes {
  cudaDataType_t data;
  cudaDataType_t scale;
  cublasComputeType_t compute;
};

GemmTypes gemm_types(Dtype d, bool tf32) {
  switch (d.val) {
    case Dtype::Val::float32:
      return {CUDA_R_32F, CUDA_R_32F, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
    case Dtype::Val::float16:
      return {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case Dtype::Val::bfloat16:
      return {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case Dtype::Val::float64:
      return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case Dtype::Val::complex64:
      return {CUDA_C_32F, CUDA_C_32F, CUBLAS_COMPUTE_32F};
    default:
      throw std::invalid_argument(
          msg("[gemm] Unsupported dtype ", d, "; expected float32, float16, bfloat16 or float64."));
  }
}

// A matrix layout with optional strided batching.
cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                                   int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  KILN_CUBLAS(cublasLtMatrixLayoutCreate, &l, type, static_cast<uint64_t>(rows),
              static_cast<uint64_t>(cols), ld);
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    KILN_CUBLAS(cublasLtMatrixLayoutSetAttribute, l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                sizeof(count));
    KILN_CUBLAS(cublasLtMatrixLayoutSetAttribute, l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                &stride, sizeof(stride));
  }
  return l;
}

// Everything cuBLASLt needs for one problem shape; built once and reused (never freed:
// the set of shapes a program uses is small).
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t x = nullptr, y = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

// The alignment (bytes, a power of two up to 256) of every batch's start of an operand:
// cuBLASLt picks kernels assuming 256 unless told otherwise.
uint32_t operand_alignment(CUdeviceptr p, int64_t stride, int64_t batch, Dtype d) {
  uint64_t bits = p | 256;
  if (batch > 1) bits |= static_cast<uint64_t>(stride) * d.size;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

using PlanKey =
    std::tuple<int, bool, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
               int64_t, int64_t, int64_t, uint32_t, uint32_t, uint32_t>;

struct DeviceBlas {
  std::mutex mu;
  cublasLtHandle_t handle = nullptr;
  std::map<PlanKey, Plan> plans;
};

DeviceBlas& device_blas(int device) {
  static auto* all = new std::array<DeviceBlas, kMaxDevices>;
  return (*all)[device];
}

// The plan for `g`, as seen by cuBLASLt (column-major). A row-major (r, c) matrix is a
// column-major (c, r) one, so C^T = op(B)^T op(A)^T: cuBLASLt's first operand X is our B
// and its second Y our A; its output is C^T, (n, m) with leading dimension ldc.
Plan make_plan(cublasLtHandle_t handle, const GemmArgs& g, const GemmTypes& t) {
  Plan p;
  KILN_CUBLAS(cublasLtMatmulDescCreate, &p.desc, t.compute, t.scale);
  cublasOperation_t op_x = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_y = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  KILN_CUBLAS(cublasLtMatmulDescSetAttribute, p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_x,
              sizeof(op_x));
  KILN_CUBLAS(cublasLtMatmulDescSetAttribute, p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_y,
              sizeof(op_y));
  // Stored shapes (column-major rows, cols) of X = B and Y = A.
  p.x = g.transpose_b ? make_layout(t.data, g.k, g.n, g.ldb, g.batch, g.stride_b)
                      : make_layout(t.data, g.n, g.k, g.ldb, g.batch, g.stride_b);
  p.y = g.transpose_a ? make_layout(t.data, g.m, g.k, g.lda, g.batch, g.stride_a)
                      : make_layout(t.data, g.k, g.m, g.lda, g.batch, g.stride_a);
  p.c = make_layout(t.data, g.n, g.m, g.ldc, g.batch, g.stride_c);

  cublasLtMatmulPreference_t pref = nullptr;
  KILN_CUBLAS(cublasLtMatmulPreferenceCreate, &pref);
  size_t ws = kWorkspace;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  try {
    KILN_CUBLAS(cublasLtMatmulPreferenceSetAttribute, pref,
                CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    // cuBLASLt's A is our B and its B our A (see above); C and D are the same buffer.
    const uint32_t align_x = operand_alignment(g.b, g.stride_b, g.batch, g.dtype);
    const uint32_t align_y = operand_alignment(g.a, g.stride_a, g.batch, g.dtype);
    const uint32_t align_c = operand_alignment(g.c, g.stride_c, g.batch, g.dtype);
    KILN_CUBLAS(cublasLtMatmulPreferenceSetAttribute, pref,
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_x, sizeof(align_x));
    KILN_CUBLAS(cublasLtMatmulPreferenceSetAttribute, pref,
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_y, sizeof(align_y));
    KILN_CUBLAS(cublasLtMatmulPreferenceSetAttribute, pref,
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c));
    KILN_CUBLAS(cublasLtMatmulPreferenceSetAttribute, pref,
                CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof(align_c));
    KILN_CUBLAS(cublasLtMatmulAlgoGetHeuristic, handle, p.desc, p.x, p.y, p.c, p.c, pref, 1,
                &result, &found);
  } catch (...) {
    cublasLtMatmulPreferenceDestroy(pref);
    throw;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  if (found < 1) {
    throw std::runtime_error(msg("[cublasLtMatmulAlgoGetHeuristic] No algorithm for a ", g.dtype,
                                 " GEMM of (", g.m, ", ", g.k, ") x (", g.k, ", ", g.n, "), batch ",
                                 g.batch, "."));
  }
  p.algo = result.algo;
  p.workspace = result.workspaceSize;
  return p;
}

void check_args(const GemmArgs& g) {
  auto bad = [&](const std::string& what) {
    throw std::invalid_argument("[gemm] " + what + " (m=" + std::to_string(g.m) +
                                ", n=" + std::to_string(g.n) + ", k=" + std::to_string(g.k) + ").");
  };
  if (g.m < 0 || g.n < 0 || g.batch < 0) bad("Negative size");
  if (g.k < 1) bad("k must be at least 1");
  if (g.batch > INT32_MAX) bad("Batch count " + std::to_string(g.batch) + " is too large");
  if (g.lda < (g.transpose_a ? g.m : g.k))
    bad("lda " + std::to_string(g.lda) + " is shorter than a row of A");
  if (g.ldb < (g.transpose_b ? g.k : g.n))
    bad("ldb " + std::to_string(g.ldb) + " is shorter than a row of B");
  if (g.ldc < g.n) bad("ldc " + std::to_string(g.ldc) + " is shorter than a row of C");
}

}  // namespace

void gemm(const GemmArgs& g, DeviceStream& stream) {
  const GemmTypes t = gemm_types(g.dtype, g.allow_tf32);
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  check_args(g);
  DeviceContext& ctx = stream.context();
  ctx.make_current();
  DeviceBlas& blas = device_blas(ctx.index());
  cublasLtHandle_t handle;
  const Plan* plan;
  {
    std::lock_guard lk(blas.mu);
    if (!blas.handle) KILN_CUBLAS(cublasLtCreate, &blas.handle);
    handle = blas.handle;
    bool tf32 = g.dtype == float32 && g.allow_tf32;
    PlanKey key{static_cast<int>(g.dtype.val),
                g.transpose_a,
                g.transpose_b,
                tf32,
                g.m,
                g.n,
                g.k,
                g.lda,
                g.ldb,
                g.ldc,
                g.stride_a,
                g.stride_b,
                g.stride_c,
                g.batch,
                operand_alignment(g.a, g.stride_a, g.batch, g.dtype),
                operand_alignment(g.b, g.stride_b, g.batch, g.dtype),
                operand_alignment(g.c, g.stride_c, g.batch, g.dtype)};
    auto it = blas.plans.find(key);
    if (it == blas.plans.end()) it = blas.plans.emplace(key, make_plan(handle, g, t)).first;
    plan = &it->second;  // std::map nodes are stable
  }
  std::shared_ptr<Storage> workspace;
  CUdeviceptr ws = 0;
  if (plan->workspace) {
    workspace = new_device_storage(plan->workspace, stream);
    stream.keep_alive(workspace);
    ws = reinterpret_cast<CUdeviceptr>(workspace->device_copy()->ptr());
  }
  float alpha32 = static_cast<float>(g.alpha), beta32 = static_cast<float>(g.beta);
  // Complex scales are (re, im) pairs; alpha and beta are real.
  float alpha_c[2] = {alpha32, 0.0f}, beta_c[2] = {beta32, 0.0f};
  const void* alpha = t.scale == CUDA_R_64F   ? static_cast<const void*>(&g.alpha)
                      : t.scale == CUDA_C_32F ? static_cast<const void*>(alpha_c)
                                              : &alpha32;
  const void* beta = t.scale == CUDA_R_64F   ? static_cast<const void*>(&g.beta)
                     : t.scale == CUDA_C_32F ? static_cast<const void*>(beta_c)
                                             : &beta32;
  KILN_CUBLAS(cublasLtMatmul, handle, plan->desc, alpha, reinterpret_cast<const void*>(g.b),
              plan->x, reinterpret_cast<const void*>(g.a), plan->y, beta,
              reinterpret_cast<const void*>(g.c), plan->c, reinterpret_cast<void*>(g.c), plan->c,
              &plan->algo, reinterpret_cast<void*>(ws), plan->workspace, stream.handle());
}

}  // namespace kiln::gpu
