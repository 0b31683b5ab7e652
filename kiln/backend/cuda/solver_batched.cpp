// cuBLAS's batched LU. libcublas (libcublas.so.13/.12, the one cuSOLVER itself needs) is
// loaded at run time like cuSOLVER: without it the ops raise a RuntimeError naming it.
#include "kiln/backend/cuda/solver_batched.h"

#include <cublas_api.h>
#include <dlfcn.h>

#include <array>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/dynlib.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/utils.h"

namespace kiln::gpu {

namespace {

// Measured on an H200 (benchmarks/gpu/linalg_fft_conv.py): the batched LU wins over a loop
// of cuSOLVER calls for every batch > 1 up to this size.
constexpr int64_t kBatchedLuMaxN = 256;

#define KILN_CUBLAS_FUNCTIONS(X)                                                             \
  X(cublasCreate_v2)                                                                         \
  X(cublasSetStream_v2) X(cublasSgetrfBatched) X(cublasDgetrfBatched) X(cublasSgetrsBatched) \
      X(cublasDgetrsBatched)

struct Cublas {
#define KILN_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUBLAS_FUNCTIONS(KILN_MEMBER)
#undef KILN_MEMBER
  std::string error;
};

const Cublas& lib() {
  static const Cublas* l = [] {
    auto* c = new Cublas;
    std::string why;
    void* h = open_library({"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
                           "KILN_CUBLAS_PATH", nvidia_wheel_lib_dirs("cublas"), why);
    if (!h) {
      c->error = "cuBLAS (libcublas.so) is not available: " + why;
      return c;
    }
#define KILN_RESOLVE(name) c->name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));
    KILN_CUBLAS_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE
    if (!c->cublasCreate_v2 || !c->cublasSgetrfBatched || !c->cublasSgetrsBatched)
      c->error = "libcublas.so lacks the batched LU routines";
    return c;
  }();
  if (!l->error.empty()) throw std::runtime_error("[linalg] " + l->error + ".");
  return *l;
}

void check(const char* call, cublasStatus_t st) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(
        msg("[", call, "] failed: cublasStatus_t ", static_cast<int>(st), "."));
  }
}
#define KILN_CUBLAS_CALL(fn, ...) check(#fn, lib().fn(__VA_ARGS__))

// The per-device handle bound to the calling stream; the returned lock guards its use.
std::pair<std::unique_lock<std::mutex>, cublasHandle_t> handle(DeviceStream& s) {
  struct PerDevice {
    std::mutex mu;
    cublasHandle_t h = nullptr;
  };
  static auto* all = new std::array<PerDevice, 64>;
  s.context().make_current();
  PerDevice& d = (*all)[s.context().index()];
  std::unique_lock lk(d.mu);
  if (!d.h) KILN_CUBLAS_CALL(cublasCreate_v2, &d.h);
  KILN_CUBLAS_CALL(cublasSetStream_v2, d.h, reinterpret_cast<cudaStream_t>(s.handle()));
  return {std::move(lk), d.h};
}

int batch_int(int64_t batch) {
  if (batch > 0x7fffffff)
    throw std::invalid_argument(msg("[linalg] A batch of ", batch, " matrices is too large."));
  return static_cast<int>(batch);
}

}  // namespace

CUdeviceptr device_pointer_array(CUdeviceptr base, int64_t stride, int64_t batch, DeviceStream& s) {
  std::vector<CUdeviceptr> host(batch);
  for (int64_t i = 0; i < batch; ++i) host[i] = base + i * stride;
  const CUdeviceptr dev = scratch(batch * sizeof(CUdeviceptr), s);
  // Pageable source: the copy is staged before the call returns, so `host` may go.
  KILN_CU(cuMemcpyHtoDAsync, dev, host.data(), batch * sizeof(CUdeviceptr), s.handle());
  return dev;
}

bool use_batched_lu(int64_t batch, int64_t n) {
  return batch > 1 && n <= kBatchedLuMaxN;
}

void getrf_batched(Dtype d, int n, CUdeviceptr a, int64_t batch, CUdeviceptr ipiv, CUdeviceptr info,
                   DeviceStream& s) {
  const CUdeviceptr ptrs = device_pointer_array(a, int64_t{n} * n * d.size, batch, s);
  auto [lk, h] = handle(s);
  if (d == float32) {
    KILN_CUBLAS_CALL(cublasSgetrfBatched, h, n, reinterpret_cast<float* const*>(ptrs), n,
                     reinterpret_cast<int*>(ipiv), reinterpret_cast<int*>(info), batch_int(batch));
  } else {
    KILN_CUBLAS_CALL(cublasDgetrfBatched, h, n, reinterpret_cast<double* const*>(ptrs), n,
                     reinterpret_cast<int*>(ipiv), reinterpret_cast<int*>(info), batch_int(batch));
  }
}

void getrs_batched(Dtype d, int n, int k, CUdeviceptr a, CUdeviceptr ipiv, CUdeviceptr b,
                   int64_t batch, DeviceStream& s) {
  const CUdeviceptr aptrs = device_pointer_array(a, int64_t{n} * n * d.size, batch, s);
  const CUdeviceptr bptrs = device_pointer_array(b, int64_t{n} * k * d.size, batch, s);
  auto [lk, h] = handle(s);
  int info = 0;  // host: only argument errors are reported here
  if (d == float32) {
    KILN_CUBLAS_CALL(cublasSgetrsBatched, h, CUBLAS_OP_N, n, k,
                     reinterpret_cast<const float* const*>(aptrs), n,
                     reinterpret_cast<const int*>(ipiv), reinterpret_cast<float* const*>(bptrs), n,
                     &info, batch_int(batch));
  } else {
    KILN_CUBLAS_CALL(cublasDgetrsBatched, h, CUBLAS_OP_N, n, k,
                     reinterpret_cast<const double* const*>(aptrs), n,
                     reinterpret_cast<const int*>(ipiv), reinterpret_cast<double* const*>(bptrs), n,
                     &info, batch_int(batch));
  }
  if (info != 0)
    throw std::runtime_error(msg("[linalg] cublasXgetrsBatched rejected argument ", -info, "."));
}

}  // namespace kiln::gpu
