// The CUDA driver API, loaded at run time from libcuda.so.1.
//
// kiln never links libcuda, so one build runs on machines with and without an NVIDIA
// driver. Each entry point is resolved once through cuGetProcAddress with the ABI version
// of the toolkit's cuda.h, whose prototypes (and types) the table uses. Every call goes
// through `check`, which throws std::runtime_error naming the call and its result code.
#pragma once

#include <cuda.h>

#include <string>

namespace kiln::gpu {

// The entry points kiln uses: X(name) for each. Adding one here is all it takes.
#define KILN_CU_FUNCTIONS(X)                     \
  X(cuInit)                                      \
  X(cuDriverGetVersion)                          \
  X(cuGetErrorName)                              \
  X(cuGetErrorString)                            \
  X(cuDeviceGetCount)                            \
  X(cuDeviceGet)                                 \
  X(cuDeviceGetName)                             \
  X(cuDeviceGetAttribute)                        \
  X(cuDeviceTotalMem)                            \
  X(cuDevicePrimaryCtxRetain)                    \
  X(cuCtxSetCurrent)                             \
  X(cuCtxGetCurrent)                             \
  X(cuCtxSynchronize)                            \
  X(cuStreamCreate)                              \
  X(cuStreamSynchronize)                         \
  X(cuStreamWaitEvent)                           \
  X(cuEventCreate)                               \
  X(cuEventDestroy)                              \
  X(cuEventRecord)                               \
  X(cuEventQuery)                                \
  X(cuEventSynchronize)                          \
  X(cuEventElapsedTime)                          \
  X(cuMemAlloc)                                  \
  X(cuMemFree)                                   \
  X(cuMemGetInfo)                                \
  X(cuMemHostAlloc)                              \
  X(cuMemcpyHtoD)                                \
  X(cuMemcpyHtoDAsync)                           \
  X(cuMemcpyDtoH)                                \
  X(cuMemcpyDtoHAsync)                           \
  X(cuMemcpyDtoDAsync)                           \
  X(cuMemsetD8Async)                             \
  X(cuModuleLoadData)                            \
  X(cuModuleLoadDataEx)                          \
  X(cuModuleUnload)                              \
  X(cuModuleGetFunction)                         \
  X(cuModuleGetGlobal)                           \
  X(cuFuncSetAttribute)                          \
  X(cuFuncGetAttribute)                          \
  X(cuFuncGetName)                               \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuLaunchKernel)                              \
  X(cuStreamBeginCapture)                        \
  X(cuStreamEndCapture)                          \
  X(cuGraphInstantiateWithFlags)                 \
  X(cuGraphLaunch)                               \
  X(cuGraphDestroy)                              \
  X(cuGraphExecDestroy)

/** Pointers to the driver's entry points, with cuda.h's prototypes. */
struct DriverApi {
#define KILN_CU_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CU_FUNCTIONS(KILN_CU_MEMBER)
#undef KILN_CU_MEMBER
  int version = 0;  // cuDriverGetVersion, e.g. 13000
};

/** Loads the driver and calls cuInit on first use. Returns null when no usable driver is
 * present, with the reason in `driver_error()`. Never throws. Thread-safe. */
const DriverApi* try_driver();
/** Why `try_driver()` returned null ("" when it did not). */
const std::string& driver_error();
/** The driver, or std::runtime_error with the reason when there is none. */
const DriverApi& driver();

/** "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for `result`. */
std::string result_string(CUresult result);

/** Throws std::runtime_error "[<call>] failed: <CUDA_ERROR_...> (<description>)". */
[[noreturn]] void throw_driver_error(const char* call, CUresult result);

inline void check(const char* call, CUresult result) {
  if (result != CUDA_SUCCESS) [[unlikely]]
    throw_driver_error(call, result);
}

}  // namespace kiln::gpu

/** Calls driver entry point `fn` and throws if it fails: KILN_CU(cuMemAlloc, &p, n). */
#define KILN_CU(fn, ...) ::kiln::gpu::check(#fn, ::kiln::gpu::driver().fn(__VA_ARGS__))
