// eval_gpu of the factorization primitives (primitives_factor.h) through cuSOLVER's dense API.
//
// cuSOLVER (libcusolver.so.12/.11) is loaded at run time, never linked: without it these
// raise a RuntimeError naming the library. Matrices are copied into column-major scratch
// (the library's layout) by a strided copy kernel, factorized one matrix per call on the
// kiln stream (batched routines for batches of small matrices: cuSOLVER's potrf and syevj,
// cuBLAS's getrf/getrs in solver_batched.cpp),
// and written row-major into the outputs with triangle masks by the same kernel. A failed
// factorization (singular, not positive definite, no convergence) is read back from the
// per-matrix info after the stream synchronizes and raised as std::runtime_error naming the
// op and the matrix, as on the CPU.
#include <cusolverDn.h>
#include <dlfcn.h>

#include <array>
#include <cstring>
#include <complex>
#include <mutex>
#include <vector>

#include "kiln/backend/cpu/strided.h"
#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/dynlib.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/solver_batched.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_factor.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

// ---------------------------------------------------------------- the library

#define KILN_CUSOLVER_FUNCTIONS(X)                                                             \
  X(cusolverDnCreate) X(cusolverDnSetStream) X(cusolverDnCreateParams)                        \
  X(cusolverDnSpotrf_bufferSize) X(cusolverDnDpotrf_bufferSize) X(cusolverDnSpotrf)           \
  X(cusolverDnDpotrf) X(cusolverDnSpotrfBatched) X(cusolverDnDpotrfBatched)                   \
  X(cusolverDnSgetrf_bufferSize) X(cusolverDnDgetrf_bufferSize) X(cusolverDnSgetrf)           \
  X(cusolverDnDgetrf) X(cusolverDnSgetrs) X(cusolverDnDgetrs) X(cusolverDnXtrtri_bufferSize)  \
  X(cusolverDnXtrtri) X(cusolverDnSgeqrf_bufferSize) X(cusolverDnDgeqrf_bufferSize)           \
  X(cusolverDnSgeqrf) X(cusolverDnDgeqrf) X(cusolverDnSorgqr_bufferSize)                      \
  X(cusolverDnDorgqr_bufferSize) X(cusolverDnSorgqr) X(cusolverDnDorgqr)                      \
  X(cusolverDnSgesvd_bufferSize) X(cusolverDnDgesvd_bufferSize) X(cusolverDnCgesvd_bufferSize) \
  X(cusolverDnSgesvd) X(cusolverDnDgesvd) X(cusolverDnCgesvd) X(cusolverDnSsyevd_bufferSize)  \
  X(cusolverDnDsyevd_bufferSize) X(cusolverDnCheevd_bufferSize) X(cusolverDnSsyevd)           \
  X(cusolverDnDsyevd) X(cusolverDnCheevd) X(cusolverDnCreateSyevjInfo)                        \
  X(cusolverDnSsyevjBatched_bufferSize) X(cusolverDnDsyevjBatched_bufferSize)                 \
  X(cusolverDnSsyevjBatched) X(cusolverDnDsyevjBatched) X(cusolverDnXgeev_bufferSize)         \
  X(cusolverDnXgeev)

struct Cusolver {
#define KILN_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUSOLVER_FUNCTIONS(KILN_MEMBER)
#undef KILN_MEMBER
  std::string error;
};

const Cusolver& lib() {
  static const Cusolver* l = [] {
    auto* c = new Cusolver;
    std::string why;
    void* h = gpu::open_library({"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so"},
                                "KILN_CUSOLVER_PATH", gpu::nvidia_wheel_lib_dirs("cusolver"), why);
    if (!h) {
      c->error = "cuSOLVER (libcusolver.so) is not available: " + why;
      return c;
    }
    // A missing entry point (an older cuSOLVER, e.g. without Xgeev) fails only the ops using it.
#define KILN_RESOLVE(name) c->name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));
    KILN_CUSOLVER_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE
    if (!c->cusolverDnCreate) c->error = "libcusolver.so lacks cusolverDnCreate";
    return c;
  }();
  if (!l->error.empty()) throw std::runtime_error("[linalg] " + l->error + ".");
  return *l;
}

const char* status_name(cusolverStatus_t s) {
  switch (s) {
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    default: return "cusolverStatus_t";
  }
}

void check(const char* call, cusolverStatus_t s) {
  if (s != CUSOLVER_STATUS_SUCCESS) {
    throw std::runtime_error(msg("[", call, "] failed: ", status_name(s), " (", static_cast<int>(s), ")."));
  }
}
template <typename F>
F entry(F f, const char* name) {
  if (!f) throw std::runtime_error(msg("[linalg] The installed cuSOLVER lacks ", name, " (too old)."));
  return f;
}
#define KILN_CUSOLVER(fn, ...) check(#fn, entry(lib().fn, #fn)(__VA_ARGS__))

// The per-device handle, bound to the calling kiln stream; calls hold the lock.
struct Handle {
  std::unique_lock<std::mutex> lock;
  cusolverDnHandle_t h;
  cusolverDnParams_t params;
};

Handle handle(gpu::DeviceStream& s) {
  struct PerDevice {
    std::mutex mu;
    cusolverDnHandle_t h = nullptr;
    cusolverDnParams_t params = nullptr;
  };
  static auto* all = new std::array<PerDevice, 64>;
  s.context().make_current();
  PerDevice& d = (*all)[s.context().index()];
  std::unique_lock lk(d.mu);
  if (!d.h) {
    KILN_CUSOLVER(cusolverDnCreate, &d.h);
    KILN_CUSOLVER(cusolverDnCreateParams, &d.params);
  }
  KILN_CUSOLVER(cusolverDnSetStream, d.h, reinterpret_cast<cudaStream_t>(s.handle()));
  return {std::move(lk), d.h, d.params};
}

// ---------------------------------------------------------------- kernels

std::string bits_name(size_t size) {
  return size == 4 ? "unsigned int" : size == 8 ? "unsigned long long" : "ulonglong2";
}

gpu::ModuleSource linalg_module() {
  std::vector<std::string> k;
  for (size_t sz : {4, 8}) {
    k.push_back("kiln::matrix_copy<" + bits_name(sz) + ">");
    k.push_back("kiln::identity_bits<" + bits_name(sz) + ">");
  }
  k.push_back("kiln::lu_pivots");
  k.push_back("kiln::iota_pivots");
  k.push_back("kiln::zero_diagonal_info<float>");
  k.push_back("kiln::zero_diagonal_info<double>");
  k.push_back("kiln::to_complex64<float>");
  k.push_back("kiln::to_complex64<double>");
  k.push_back("kiln::scale_floats");
  return {"linalg", "#include \"kiln/backend/cuda/device/linalg.cuh\"\n", k};
}

CUfunction kernel(gpu::DeviceStream& s, const std::string& name) {
  return gpu::get_kernel(s.context().index(), "linalg", linalg_module, name);
}

void launch(gpu::DeviceStream& s, const std::string& name, int64_t threads, auto... args) {
  if (threads <= 0) return;
  gpu::launch_kernel(kernel(s, name), gpu::grid_1d(threads, gpu::kElementwiseBlock),
                     {gpu::kElementwiseBlock}, 0, s, args...);
}

// Strides of a batch of matrices (b, r, c).
struct Layout {
  int64_t b, r, c;
};
Layout row_major(int64_t rows, int64_t cols) { return {rows * cols, cols, 1}; }
Layout col_major(int64_t rows, int64_t cols, int64_t ld) { return {ld * cols, 1, ld}; }

// dst = src (rows x cols per matrix) between layouts, keeping a triangle when mask is 1 (lower)
// or 2 (upper).
void copy_matrices(gpu::DeviceStream& s, size_t elem, CUdeviceptr src, Layout sl, CUdeviceptr dst,
                   Layout dl, int64_t batch, int64_t rows, int64_t cols, int mask = 0) {
  launch(s, "kiln::matrix_copy<" + bits_name(elem) + ">", batch * rows * cols, src, dst, batch,
         rows, cols, sl.b, sl.r, sl.c, dl.b, dl.r, dl.c, mask);
}

// A batch of the matrices of `a` (any strides) as column-major scratch (ld = rows), or with
// `transposed` as row-major scratch (the column-major transposes, ld = cols). Batch axes are
// flattened; a broadcast batch is read through its strides.
CUdeviceptr load_col_major(const array& a, gpu::DeviceStream& s, bool transposed = false) {
  const int nd = static_cast<int>(a.ndim());
  const int64_t rows = a.shape(nd - 2), cols = a.shape(nd - 1);
  const CUdeviceptr dst = gpu::scratch(std::max<size_t>(a.nbytes(), 1), s);
  if (a.size() == 0) return dst;
  // Flatten batch axes: copy matrix by matrix when they do not collapse to one stride.
  Shape batch(a.shape().begin(), a.shape().end() - 2);
  Strides bst(a.strides().begin(), a.strides().end() - 2);
  auto [cshape, cstr] = collapse_contiguous_dims<1>(batch, {bst});
  const int64_t inner = cshape.empty() ? 1 : cshape.back();
  const int64_t inner_stride = cstr[0].empty() ? 0 : cstr[0].back();
  const Shape outer(cshape.begin(), cshape.empty() ? cshape.end() : cshape.end() - 1);
  const Strides ostr(cstr[0].begin(), cstr[0].empty() ? cstr[0].end() : cstr[0].end() - 1);
  const int64_t n_outer = static_cast<int64_t>(shape_size(outer));
  const size_t es = a.itemsize();
  const Layout src{inner_stride, a.strides(nd - 2), a.strides(nd - 1)};
  for (int64_t o = 0; o < n_outer; ++o) {
    const CUdeviceptr from = gpu::device_address(a) + elem_to_loc(o, outer, ostr) * es;
    const CUdeviceptr to = dst + o * inner * rows * cols * es;
    copy_matrices(s, es, from, src, to, transposed ? row_major(rows, cols) : col_major(rows, cols, rows),
                  inner, rows, cols);
  }
  return dst;
}

// Raises the first non-zero info (one int per matrix) as `what(info, index)`.
template <typename What>
void check_infos(CUdeviceptr infos, int64_t count, gpu::DeviceStream& s, const char* op, What what) {
  if (count == 0) return;
  std::vector<int> host(count);
  KILN_CU(cuStreamSynchronize, s.handle());
  KILN_CU(cuMemcpyDtoH, host.data(), infos, count * sizeof(int));
  for (int64_t i = 0; i < count; ++i) {
    if (host[i] > 0) {
      throw std::runtime_error(msg("[linalg::", op, "] ", what(host[i]), " (matrix ", i, " of the batch)."));
    }
    if (host[i] < 0) {
      throw std::runtime_error(msg("[linalg::", op, "] cuSOLVER rejected argument ", -host[i], "."));
    }
  }
}

CUdeviceptr zeroed_infos(int64_t count, gpu::DeviceStream& s) {
  const CUdeviceptr p = gpu::scratch(std::max<int64_t>(count, 1) * sizeof(int), s);
  KILN_CU(cuMemsetD8Async, p, 0, std::max<int64_t>(count, 1) * sizeof(int), s.handle());
  return p;
}

std::string singular(int info) {
  return msg("The matrix is singular: U[", info - 1, ", ", info - 1, "] of its LU factorization is exactly zero");
}

template <typename T>
T* ptr(CUdeviceptr p) {
  return reinterpret_cast<T*>(p);
}

int64_t batch_of(const array& a) {
  return static_cast<int64_t>(shape_size(Shape(a.shape().begin(), a.shape().end() - 2)));
}

void alloc(array& out, gpu::DeviceStream& s) {
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
}

[[noreturn]] void bad_dtype(const char* prim, Dtype d) {
  throw std::invalid_argument(msg("[", prim, "::eval_gpu] Unsupported dtype ", d, "."));
}

// getrf of one column-major n x n matrix in place (ipiv, info on the device).
void getrf(Handle& h, Dtype d, int m, int n, CUdeviceptr a, int ld, CUdeviceptr ipiv, CUdeviceptr info,
           gpu::DeviceStream& s) {
  int lwork = 0;
  if (d == float32) {
    KILN_CUSOLVER(cusolverDnSgetrf_bufferSize, h.h, m, n, ptr<float>(a), ld, &lwork);
    CUdeviceptr w = gpu::scratch(std::max(lwork, 1) * sizeof(float), s);
    KILN_CUSOLVER(cusolverDnSgetrf, h.h, m, n, ptr<float>(a), ld, ptr<float>(w), ptr<int>(ipiv), ptr<int>(info));
  } else {
    KILN_CUSOLVER(cusolverDnDgetrf_bufferSize, h.h, m, n, ptr<double>(a), ld, &lwork);
    CUdeviceptr w = gpu::scratch(std::max(lwork, 1) * sizeof(double), s);
    KILN_CUSOLVER(cusolverDnDgetrf, h.h, m, n, ptr<double>(a), ld, ptr<double>(w), ptr<int>(ipiv), ptr<int>(info));
  }
}

void getrs(Handle& h, Dtype d, bool trans, int n, int k, CUdeviceptr a, CUdeviceptr ipiv, CUdeviceptr b,
           CUdeviceptr info) {
  const cublasOperation_t op = trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (d == float32) {
    KILN_CUSOLVER(cusolverDnSgetrs, h.h, op, n, k, ptr<float>(a), n, ptr<int>(ipiv), ptr<float>(b), n, ptr<int>(info));
  } else {
    KILN_CUSOLVER(cusolverDnDgetrs, h.h, op, n, k, ptr<double>(a), n, ptr<int>(ipiv), ptr<double>(b), n, ptr<int>(info));
  }
}

void fill_identity(gpu::DeviceStream& s, Dtype d, CUdeviceptr dst, int64_t batch, int64_t n) {
  if (d == float32) {
    uint32_t one;
    float f = 1.0f;
    std::memcpy(&one, &f, 4);
    launch(s, "kiln::identity_bits<unsigned int>", batch * n * n, dst, batch, n, one);
  } else {
    uint64_t one;
    double f = 1.0;
    std::memcpy(&one, &f, 8);
    launch(s, "kiln::identity_bits<unsigned long long>", batch * n * n, dst, batch, n, one);
  }
}

cudaDataType cuda_type(Dtype d) {
  return d == float32 ? CUDA_R_32F : d == float64 ? CUDA_R_64F : CUDA_C_32F;
}

}  // namespace

// ---------------------------------------------------------------- Cholesky

void Cholesky::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  const Dtype d = out.dtype();
  if (d != float32 && d != float64) bad_dtype("Cholesky", d);
  alloc(out, s);
  const int64_t batch = batch_of(out);
  const int n = out.shape(-1);
  if (out.size() == 0) return;
  CUdeviceptr a = load_col_major(inputs[0], s);
  auto h = handle(s);
  const cublasFillMode_t uplo = upper_ ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  CUdeviceptr info = zeroed_infos(batch, s);
  const size_t es = d.size;
  if (batch > 1 && n <= 256) {
    // Small matrices: the batched routine (an array of matrix pointers on the device).
    const CUdeviceptr dptrs = gpu::device_pointer_array(a, n * n * es, batch, s);
    if (d == float32)
      KILN_CUSOLVER(cusolverDnSpotrfBatched, h.h, uplo, n, ptr<float*>(dptrs), n, ptr<int>(info), static_cast<int>(batch));
    else
      KILN_CUSOLVER(cusolverDnDpotrfBatched, h.h, uplo, n, ptr<double*>(dptrs), n, ptr<int>(info), static_cast<int>(batch));
  } else {
    int lwork = 0;
    if (d == float32) {
      KILN_CUSOLVER(cusolverDnSpotrf_bufferSize, h.h, uplo, n, ptr<float>(a), n, &lwork);
    } else {
      KILN_CUSOLVER(cusolverDnDpotrf_bufferSize, h.h, uplo, n, ptr<double>(a), n, &lwork);
    }
    CUdeviceptr w = gpu::scratch(std::max(lwork, 1) * es, s);
    for (int64_t i = 0; i < batch; ++i) {
      const CUdeviceptr ai = a + i * n * n * es, inf = info + i * sizeof(int);
      if (d == float32)
        KILN_CUSOLVER(cusolverDnSpotrf, h.h, uplo, n, ptr<float>(ai), n, ptr<float>(w), lwork, ptr<int>(inf));
      else
        KILN_CUSOLVER(cusolverDnDpotrf, h.h, uplo, n, ptr<double>(ai), n, ptr<double>(w), lwork, ptr<int>(inf));
    }
  }
  copy_matrices(s, es, a, col_major(n, n, n), gpu::device_address(out), row_major(n, n), batch, n, n,
                upper_ ? 2 : 1);
  check_infos(info, batch, s, "cholesky", [](int i) {
    return msg("The matrix is not positive definite (its leading minor of order ", i, " is not positive)");
  });
}

// ---------------------------------------------------------------- Inverse

void Inverse::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  const Dtype d = out.dtype();
  if (d != float32 && d != float64) bad_dtype("Inverse", d);
  alloc(out, s);
  const int64_t batch = batch_of(out);
  const int n = out.shape(-1);
  if (out.size() == 0) return;
  const size_t es = d.size;
  CUdeviceptr a = load_col_major(inputs[0], s);
  auto h = handle(s);
  CUdeviceptr info = zeroed_infos(batch, s);
  if (tri_) {
    const cublasFillMode_t uplo = upper_ ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
    size_t dev_bytes = 0, host_bytes = 0;
    KILN_CUSOLVER(cusolverDnXtrtri_bufferSize, h.h, uplo, CUBLAS_DIAG_NON_UNIT, n, cuda_type(d),
                  reinterpret_cast<void*>(a), n, &dev_bytes, &host_bytes);
    CUdeviceptr w = gpu::scratch(std::max<size_t>(dev_bytes, 1), s);
    std::vector<char> hw(std::max<size_t>(host_bytes, 1));
    for (int64_t i = 0; i < batch; ++i) {
      KILN_CUSOLVER(cusolverDnXtrtri, h.h, uplo, CUBLAS_DIAG_NON_UNIT, n, cuda_type(d),
                    reinterpret_cast<void*>(a + i * n * n * es), n, reinterpret_cast<void*>(w),
                    dev_bytes, hw.data(), host_bytes, ptr<int>(info + i * sizeof(int)));
    }
    copy_matrices(s, es, a, col_major(n, n, n), gpu::device_address(out), row_major(n, n), batch, n, n,
                  upper_ ? 2 : 1);
    check_infos(info, batch, s, "tri_inv", [](int i) {
      return msg("The matrix is singular: diagonal element ", i - 1, " is exactly zero");
    });
    return;
  }
  // LU, then solve against the identity.
  CUdeviceptr ipiv = gpu::scratch(batch * n * sizeof(int), s);
  CUdeviceptr x = gpu::scratch(batch * n * n * es, s);
  fill_identity(s, d, x, batch, n);
  if (gpu::use_batched_lu(batch, n)) {
    gpu::getrf_batched(d, n, a, batch, ipiv, info, s);
    gpu::getrs_batched(d, n, n, a, ipiv, x, batch, s);
  } else {
    for (int64_t i = 0; i < batch; ++i) {
      getrf(h, d, n, n, a + i * n * n * es, n, ipiv + i * n * sizeof(int), info + i * sizeof(int), s);
    }
    CUdeviceptr info2 = zeroed_infos(batch, s);
    for (int64_t i = 0; i < batch; ++i) {
      getrs(h, d, false, n, n, a + i * n * n * es, ipiv + i * n * sizeof(int), x + i * n * n * es,
            info2 + i * sizeof(int));
    }
  }
  copy_matrices(s, es, x, col_major(n, n, n), gpu::device_address(out), row_major(n, n), batch, n, n);
  check_infos(info, batch, s, "inv", singular);
}

// ---------------------------------------------------------------- LUF, QRF

void LUF::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  const array& in = inputs[0];
  const Dtype d = in.dtype();
  if (d != float32 && d != float64) bad_dtype("LUF", d);
  for (auto& o : outputs) alloc(o, s);
  const int64_t batch = batch_of(in);
  const int m = in.shape(-2), n = in.shape(-1), k = std::min(m, n);
  if (batch == 0 || m == 0) return;
  const size_t es = d.size;
  CUdeviceptr a = load_col_major(in, s);
  CUdeviceptr ipiv = gpu::scratch(std::max<int64_t>(batch * k, 1) * sizeof(int), s);
  if (n > 0) {
    auto h = handle(s);
    CUdeviceptr info = zeroed_infos(batch, s);  // singular is not an error for lu
    if (m == n && gpu::use_batched_lu(batch, n)) {
      gpu::getrf_batched(d, n, a, batch, ipiv, info, s);
    } else {
      for (int64_t i = 0; i < batch; ++i) {
        getrf(h, d, m, n, a + i * m * n * es, m, ipiv + i * k * sizeof(int), info + i * sizeof(int), s);
      }
    }
  }
  copy_matrices(s, es, a, col_major(m, n, m), gpu::device_address(outputs[0]), row_major(m, n), batch, m, n);
  CUdeviceptr perm = gpu::scratch(batch * m * sizeof(int), s);
  launch(s, "kiln::lu_pivots", batch, ipiv, gpu::device_address(outputs[1]), gpu::device_address(outputs[2]),
         perm, batch, m, k);
}

void QRF::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  const array& in = inputs[0];
  const Dtype d = in.dtype();
  if (d != float32 && d != float64) bad_dtype("QRF", d);
  for (auto& o : outputs) alloc(o, s);
  const int64_t batch = batch_of(in);
  const int m = in.shape(-2), n = in.shape(-1), k = std::min(m, n);
  if (batch == 0 || k == 0) return;
  const size_t es = d.size;
  CUdeviceptr a = load_col_major(in, s);
  CUdeviceptr tau = gpu::scratch(batch * k * es, s);
  auto h = handle(s);
  CUdeviceptr info = zeroed_infos(batch, s);
  int l1 = 0, l2 = 0;
  if (d == float32) {
    KILN_CUSOLVER(cusolverDnSgeqrf_bufferSize, h.h, m, n, ptr<float>(a), m, &l1);
    KILN_CUSOLVER(cusolverDnSorgqr_bufferSize, h.h, m, k, k, ptr<float>(a), m, ptr<float>(tau), &l2);
  } else {
    KILN_CUSOLVER(cusolverDnDgeqrf_bufferSize, h.h, m, n, ptr<double>(a), m, &l1);
    KILN_CUSOLVER(cusolverDnDorgqr_bufferSize, h.h, m, k, k, ptr<double>(a), m, ptr<double>(tau), &l2);
  }
  const int lwork = std::max({l1, l2, 1});
  CUdeviceptr w = gpu::scratch(lwork * es, s);
  for (int64_t i = 0; i < batch; ++i) {
    const CUdeviceptr ai = a + i * m * n * es, ti = tau + i * k * es;
    const CUdeviceptr inf = info + i * sizeof(int);
    if (d == float32)
      KILN_CUSOLVER(cusolverDnSgeqrf, h.h, m, n, ptr<float>(ai), m, ptr<float>(ti), ptr<float>(w), lwork, ptr<int>(inf));
    else
      KILN_CUSOLVER(cusolverDnDgeqrf, h.h, m, n, ptr<double>(ai), m, ptr<double>(ti), ptr<double>(w), lwork, ptr<int>(inf));
  }
  // R: the upper triangle of the first k rows.
  copy_matrices(s, es, a, col_major(m, n, m), gpu::device_address(outputs[1]), row_major(k, n), batch, k, n, 2);
  for (int64_t i = 0; i < batch; ++i) {
    const CUdeviceptr ai = a + i * m * n * es, ti = tau + i * k * es;
    const CUdeviceptr inf = info + i * sizeof(int);
    if (d == float32)
      KILN_CUSOLVER(cusolverDnSorgqr, h.h, m, k, k, ptr<float>(ai), m, ptr<float>(ti), ptr<float>(w), lwork, ptr<int>(inf));
    else
      KILN_CUSOLVER(cusolverDnDorgqr, h.h, m, k, k, ptr<double>(ai), m, ptr<double>(ti), ptr<double>(w), lwork, ptr<int>(inf));
  }
  copy_matrices(s, es, a, col_major(m, n, m), gpu::device_address(outputs[0]), row_major(m, k), batch, m, k);
  check_infos(info, batch, s, "qr", [](int i) { return msg("QR failed (info ", i, ")"); });
}

// ---------------------------------------------------------------- SVD

void SVD::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  const array& in = inputs[0];
  const Dtype d = in.dtype();
  if (d != float32 && d != float64 && d != complex64) bad_dtype("SVD", d);
  for (auto& o : outputs) alloc(o, s);
  const int64_t batch = batch_of(in);
  const int m = in.shape(-2), n = in.shape(-1), k = std::min(m, n);
  if (batch == 0) return;
  const size_t es = d.size, rs = d == float64 ? 8 : 4;
  array& sv = compute_uv_ ? outputs[1] : outputs[0];
  if (k == 0) {
    // Nothing to decompose: identities complete the empty factorization.
    if (compute_uv_) {
      for (int which : {0, 2}) {
        const int64_t sz = which == 0 ? m : n;
        if (sz == 0) continue;
        KILN_CU(cuMemsetD8Async, gpu::device_address(outputs[which]), 0, outputs[which].nbytes(), s.handle());
        if (d == complex64) {
          // complex 1 = (1.0f, 0.0f): the bits of 1.0f in the low word.
          launch(s, "kiln::identity_bits<unsigned long long>", batch * sz * sz,
                 gpu::device_address(outputs[which]), batch, sz, uint64_t{0x3f800000});
        } else {
          fill_identity(s, d, gpu::device_address(outputs[which]), batch, sz);
        }
      }
    }
    return;
  }
  // gesvd needs rows >= columns: a wide matrix is decomposed as its transpose, whose
  // column-major layout is the row-major layout of a (A^T = U' S V'^T gives U = V' and
  // Vt = U'^T, read straight from the factors' buffers; for complex input the same holds
  // without conjugation).
  const bool wide = m < n;
  const int M = wide ? n : m, N = wide ? m : n;
  CUdeviceptr a = load_col_major(in, s, wide);
  auto h = handle(s);
  CUdeviceptr info = zeroed_infos(batch, s);
  const signed char job = compute_uv_ ? 'A' : 'N';
  int lwork = 0;
  if (d == float32)
    KILN_CUSOLVER(cusolverDnSgesvd_bufferSize, h.h, M, N, &lwork);
  else if (d == float64)
    KILN_CUSOLVER(cusolverDnDgesvd_bufferSize, h.h, M, N, &lwork);
  else
    KILN_CUSOLVER(cusolverDnCgesvd_bufferSize, h.h, M, N, &lwork);
  lwork = std::max(lwork, 1);
  CUdeviceptr w = gpu::scratch(lwork * es, s);
  CUdeviceptr rwork = gpu::scratch(std::max(k, 1) * rs, s);
  CUdeviceptr u = compute_uv_ ? gpu::scratch(batch * M * M * es, s) : 0;
  CUdeviceptr vt = compute_uv_ ? gpu::scratch(batch * N * N * es, s) : 0;
  const int ldu = M, ldvt = N;
  for (int64_t i = 0; i < batch; ++i) {
    const CUdeviceptr ai = a + i * M * N * es, si = gpu::device_address(sv) + i * k * rs;
    const CUdeviceptr ui = compute_uv_ ? u + i * M * M * es : 0, vi = compute_uv_ ? vt + i * N * N * es : 0;
    const CUdeviceptr inf = info + i * sizeof(int);
    if (d == float32) {
      KILN_CUSOLVER(cusolverDnSgesvd, h.h, job, job, M, N, ptr<float>(ai), M, ptr<float>(si), ptr<float>(ui),
                    ldu, ptr<float>(vi), ldvt, ptr<float>(w), lwork, ptr<float>(rwork), ptr<int>(inf));
    } else if (d == float64) {
      KILN_CUSOLVER(cusolverDnDgesvd, h.h, job, job, M, N, ptr<double>(ai), M, ptr<double>(si), ptr<double>(ui),
                    ldu, ptr<double>(vi), ldvt, ptr<double>(w), lwork, ptr<double>(rwork), ptr<int>(inf));
    } else {
      KILN_CUSOLVER(cusolverDnCgesvd, h.h, job, job, M, N, ptr<cuComplex>(ai), M, ptr<float>(si),
                    ptr<cuComplex>(ui), ldu, ptr<cuComplex>(vi), ldvt, ptr<cuComplex>(w), lwork,
                    ptr<float>(rwork), ptr<int>(inf));
    }
  }
  if (compute_uv_) {
    const CUdeviceptr U = gpu::device_address(outputs[0]), V = gpu::device_address(outputs[2]);
    if (wide) {
      copy_matrices(s, es, vt, row_major(m, m), U, row_major(m, m), batch, m, m);
      copy_matrices(s, es, u, row_major(n, n), V, row_major(n, n), batch, n, n);
    } else {
      copy_matrices(s, es, u, col_major(m, m, m), U, row_major(m, m), batch, m, m);
      copy_matrices(s, es, vt, col_major(n, n, n), V, row_major(n, n), batch, n, n);
    }
  }
  check_infos(info, batch, s, "svd", [](int i) { return msg("The SVD did not converge (gesvd info ", i, ")"); });
}

// ---------------------------------------------------------------- Eigh, Eig

void Eigh::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  const array& in = inputs[0];
  const Dtype d = in.dtype();
  if (d != float32 && d != float64 && d != complex64) bad_dtype("Eigh", d);
  for (auto& o : outputs) alloc(o, s);
  const int64_t batch = batch_of(in);
  const int n = in.shape(-1);
  if (batch == 0 || n == 0) return;
  const size_t es = d.size, rs = d == float64 ? 8 : 4;
  CUdeviceptr a = load_col_major(in, s);
  auto h = handle(s);
  CUdeviceptr info = zeroed_infos(batch, s);
  const cusolverEigMode_t jobz = compute_vectors_ ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  const cublasFillMode_t uplo = uplo_ == 'U' ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  const CUdeviceptr W = gpu::device_address(outputs[0]);
  int lwork = 0;
  if (d != complex64 && n <= 32 && batch > 1) {
    // Jacobi on the whole batch at once: the fast path for many small matrices.
    static syevjInfo_t params = [] {
      syevjInfo_t p = nullptr;
      KILN_CUSOLVER(cusolverDnCreateSyevjInfo, &p);
      return p;
    }();
    if (d == float32) {
      KILN_CUSOLVER(cusolverDnSsyevjBatched_bufferSize, h.h, jobz, uplo, n, ptr<float>(a), n, ptr<float>(W),
                    &lwork, params, static_cast<int>(batch));
      CUdeviceptr w = gpu::scratch(std::max(lwork, 1) * es, s);
      KILN_CUSOLVER(cusolverDnSsyevjBatched, h.h, jobz, uplo, n, ptr<float>(a), n, ptr<float>(W), ptr<float>(w),
                    lwork, ptr<int>(info), params, static_cast<int>(batch));
    } else {
      KILN_CUSOLVER(cusolverDnDsyevjBatched_bufferSize, h.h, jobz, uplo, n, ptr<double>(a), n, ptr<double>(W),
                    &lwork, params, static_cast<int>(batch));
      CUdeviceptr w = gpu::scratch(std::max(lwork, 1) * es, s);
      KILN_CUSOLVER(cusolverDnDsyevjBatched, h.h, jobz, uplo, n, ptr<double>(a), n, ptr<double>(W), ptr<double>(w),
                    lwork, ptr<int>(info), params, static_cast<int>(batch));
    }
  } else {
    if (d == float32)
      KILN_CUSOLVER(cusolverDnSsyevd_bufferSize, h.h, jobz, uplo, n, ptr<float>(a), n, ptr<float>(W), &lwork);
    else if (d == float64)
      KILN_CUSOLVER(cusolverDnDsyevd_bufferSize, h.h, jobz, uplo, n, ptr<double>(a), n, ptr<double>(W), &lwork);
    else
      KILN_CUSOLVER(cusolverDnCheevd_bufferSize, h.h, jobz, uplo, n, ptr<cuComplex>(a), n, ptr<float>(W), &lwork);
    CUdeviceptr w = gpu::scratch(std::max(lwork, 1) * es, s);
    for (int64_t i = 0; i < batch; ++i) {
      const CUdeviceptr ai = a + i * n * n * es, wi = W + i * n * rs, inf = info + i * sizeof(int);
      if (d == float32)
        KILN_CUSOLVER(cusolverDnSsyevd, h.h, jobz, uplo, n, ptr<float>(ai), n, ptr<float>(wi), ptr<float>(w), lwork, ptr<int>(inf));
      else if (d == float64)
        KILN_CUSOLVER(cusolverDnDsyevd, h.h, jobz, uplo, n, ptr<double>(ai), n, ptr<double>(wi), ptr<double>(w), lwork, ptr<int>(inf));
      else
        KILN_CUSOLVER(cusolverDnCheevd, h.h, jobz, uplo, n, ptr<cuComplex>(ai), n, ptr<float>(wi), ptr<cuComplex>(w), lwork, ptr<int>(inf));
    }
  }
  if (compute_vectors_) {
    copy_matrices(s, es, a, col_major(n, n, n), gpu::device_address(outputs[1]), row_major(n, n), batch, n, n);
  }
  check_infos(info, batch, s, "eigh", [](int i) { return msg("The eigensolver did not converge (info ", i, ")"); });
}

void Eig::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  const array& in = inputs[0];
  const Dtype d = in.dtype();
  if (d != float32 && d != float64 && d != complex64) bad_dtype("Eig", d);
  for (auto& o : outputs) alloc(o, s);
  const int64_t batch = batch_of(in);
  const int n = in.shape(-1);
  if (batch == 0 || n == 0) return;
  CUdeviceptr a = load_col_major(in, s);
  if (d != complex64) {
    // geev runs in complex64 here: the outputs are complex64 either way.
    const int64_t count = batch * n * n;
    CUdeviceptr c = gpu::scratch(count * 8, s);
    launch(s, d == float32 ? "kiln::to_complex64<float>" : "kiln::to_complex64<double>", count, a, c, count);
    a = c;
  }
  auto h = handle(s);
  CUdeviceptr info = zeroed_infos(batch, s);
  const cusolverEigMode_t jobvr = compute_vectors_ ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  CUdeviceptr vr = compute_vectors_ ? gpu::scratch(batch * n * n * 8, s) : 0;
  const CUdeviceptr W = gpu::device_address(outputs[0]);
  size_t dev_bytes = 0, host_bytes = 0;
  KILN_CUSOLVER(cusolverDnXgeev_bufferSize, h.h, h.params, CUSOLVER_EIG_MODE_NOVECTOR, jobvr, n, CUDA_C_32F,
                reinterpret_cast<const void*>(a), n, CUDA_C_32F, reinterpret_cast<const void*>(W), CUDA_C_32F,
                nullptr, 1, CUDA_C_32F, reinterpret_cast<const void*>(vr), n, CUDA_C_32F, &dev_bytes,
                &host_bytes);
  CUdeviceptr w = gpu::scratch(std::max<size_t>(dev_bytes, 1), s);
  std::vector<char> hw(std::max<size_t>(host_bytes, 1));
  for (int64_t i = 0; i < batch; ++i) {
    KILN_CUSOLVER(cusolverDnXgeev, h.h, h.params, CUSOLVER_EIG_MODE_NOVECTOR, jobvr, n, CUDA_C_32F,
                  reinterpret_cast<void*>(a + i * n * n * 8), n, CUDA_C_32F, reinterpret_cast<void*>(W + i * n * 8),
                  CUDA_C_32F, nullptr, 1, CUDA_C_32F,
                  compute_vectors_ ? reinterpret_cast<void*>(vr + i * n * n * 8) : nullptr, n, CUDA_C_32F,
                  reinterpret_cast<void*>(w), dev_bytes, hw.data(), host_bytes, ptr<int>(info + i * sizeof(int)));
  }
  if (compute_vectors_) {
    copy_matrices(s, 8, vr, col_major(n, n, n), gpu::device_address(outputs[1]), row_major(n, n), batch, n, n);
  }
  check_infos(info, batch, s, "eig", [](int i) { return msg("The eigensolver did not converge (geev info ", i, ")"); });
}

// ---------------------------------------------------------------- Solve, SolveTriangular

void Solve::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  const Dtype d = out.dtype();
  if (d != float32 && d != float64) bad_dtype("Solve", d);
  alloc(out, s);
  const int64_t batch = batch_of(out);
  const int n = out.shape(-2), k = out.shape(-1);
  if (out.size() == 0) return;
  const size_t es = d.size;
  CUdeviceptr a = load_col_major(inputs[0], s), b = load_col_major(inputs[1], s);
  CUdeviceptr ipiv = gpu::scratch(batch * n * sizeof(int), s);
  auto h = handle(s);
  CUdeviceptr info = zeroed_infos(batch, s);
  if (gpu::use_batched_lu(batch, n)) {
    gpu::getrf_batched(d, n, a, batch, ipiv, info, s);
    gpu::getrs_batched(d, n, k, a, ipiv, b, batch, s);
  } else {
    for (int64_t i = 0; i < batch; ++i) {
      getrf(h, d, n, n, a + i * n * n * es, n, ipiv + i * n * sizeof(int), info + i * sizeof(int), s);
    }
    CUdeviceptr info2 = zeroed_infos(batch, s);
    for (int64_t i = 0; i < batch; ++i) {
      getrs(h, d, false, n, k, a + i * n * n * es, ipiv + i * n * sizeof(int), b + i * n * k * es,
            info2 + i * sizeof(int));
    }
  }
  copy_matrices(s, es, b, col_major(n, k, n), gpu::device_address(out), row_major(n, k), batch, n, k);
  check_infos(info, batch, s, "solve", singular);
}

void SolveTriangular::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  const Dtype d = out.dtype();
  if (d != float32 && d != float64) bad_dtype("SolveTriangular", d);
  alloc(out, s);
  const int64_t batch = batch_of(out);
  const int n = out.shape(-2), k = out.shape(-1);
  if (out.size() == 0) return;
  const size_t es = d.size;
  // getrs with identity pivots solves L U x = b with unit L: an upper T is U itself; a lower T
  // is solved as (T^T)^T x = b, T^T (upper) being the row-major layout of a read column-major.
  CUdeviceptr a = load_col_major(inputs[0], s, !upper_);
  copy_matrices(s, es, a, col_major(n, n, n), a, col_major(n, n, n), batch, n, n, 2);
  CUdeviceptr b = load_col_major(inputs[1], s);
  CUdeviceptr ipiv = gpu::scratch(batch * n * sizeof(int), s);
  launch(s, "kiln::iota_pivots", batch * n, ipiv, batch, n);
  // A zero on the diagonal: singular, as on the CPU (getrs would divide by it).
  CUdeviceptr singular_info = gpu::scratch(batch * sizeof(int), s);
  launch(s, d == float32 ? "kiln::zero_diagonal_info<float>" : "kiln::zero_diagonal_info<double>", batch, a,
         singular_info, batch, n);
  auto h = handle(s);
  CUdeviceptr info = zeroed_infos(batch, s);
  for (int64_t i = 0; i < batch; ++i) {
    getrs(h, d, !upper_, n, k, a + i * n * n * es, ipiv + i * n * sizeof(int), b + i * n * k * es,
          info + i * sizeof(int));
  }
  copy_matrices(s, es, b, col_major(n, k, n), gpu::device_address(out), row_major(n, k), batch, n, k);
  check_infos(singular_info, batch, s, "solve_triangular", [](int i) {
    return msg("The matrix is singular: diagonal element ", i - 1, " is zero");
  });
  check_infos(info, batch, s, "solve_triangular", [](int i) { return msg("getrs info ", i); });
}

KILN_GPU_MODULE_CATALOG(linalg, [](const gpu::ModuleSink& sink) { sink("linalg", linalg_module()); });

}  // namespace kiln
