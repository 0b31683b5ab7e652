#include "kiln/backend/cuda/driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <stdexcept>

namespace kiln::gpu {

namespace {

// The signature of cuGetProcAddress in CUDA 12+ (exported as cuGetProcAddress_v2).
using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

struct Loaded {
  DriverApi api;
  std::string error;  // empty on success
};

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    out.error = std::string("no NVIDIA driver: cannot load libcuda.so.1 (") +
                (why ? why : "not found") + ")";
    return out;
  }
  // Never dlclose: function pointers and CUDA objects outlive any scope we could pick.
  auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    out.error =
        "the NVIDIA driver is too old (libcuda.so.1 has no cuGetProcAddress_v2; "
        "CUDA 12 or newer is required)";
    return out;
  }
  DriverApi& api = out.api;
  auto resolve = [&](const char* name, void** fn, int version) {
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = get_proc(name, fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !*fn) {
      *fn = nullptr;
      out.error =
          std::string("the NVIDIA driver lacks ") + name +
          (status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? " (driver too old for this build)"
                                                                : "");
      return false;
    }
    return true;
  };
  // The driver version first, so no symbol is requested at an ABI newer than the driver.
  if (!resolve("cuDriverGetVersion", reinterpret_cast<void**>(&api.cuDriverGetVersion),
               CUDA_VERSION)) {
    return out;
  }
  if (api.cuDriverGetVersion(&api.version) != CUDA_SUCCESS) {
    out.error = "cuDriverGetVersion failed";
    return out;
  }
  if (api.version / 1000 < CUDA_VERSION / 1000) {
    out.error = "the NVIDIA driver supports CUDA " + std::to_string(api.version / 1000) + "." +
                std::to_string(api.version % 1000 / 10) + ", but kiln was built with CUDA " +
                std::to_string(CUDA_VERSION / 1000) + ".x; update the driver";
    return out;
  }
  const int abi = std::min(api.version, CUDA_VERSION);
#define KILN_CU_RESOLVE(name) \
  if (!resolve(#name, reinterpret_cast<void**>(&api.name), abi)) return out;
  KILN_CU_FUNCTIONS(KILN_CU_RESOLVE)
#undef KILN_CU_RESOLVE

  CUresult r = api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    api.cuGetErrorName(r, &name);
    out.error = std::string("cuInit failed: ") + (name ? name : std::to_string(r).c_str());
    if (r == CUDA_ERROR_NO_DEVICE)
      out.error = "no CUDA device found (cuInit: CUDA_ERROR_NO_DEVICE)";
    return out;
  }
  return out;
}

const Loaded& loaded() {
  static const Loaded* l = new Loaded(load());  // never destroyed: used until process exit
  return *l;
}

}  // namespace

const DriverApi* try_driver() {
  const Loaded& l = loaded();
  return l.error.empty() ? &l.api : nullptr;
}

const std::string& driver_error() {
  return loaded().error;
}

const DriverApi& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw std::runtime_error("[gpu] " + l.error + ".");
  return l.api;
}

std::string result_string(CUresult result) {
  const DriverApi* api = try_driver();
  const char* name = nullptr;
  const char* desc = nullptr;
  if (api) {
    api->cuGetErrorName(result, &name);
    api->cuGetErrorString(result, &desc);
  }
  std::string s = name ? name : "CUresult " + std::to_string(static_cast<int>(result));
  if (desc) s += std::string(" (") + desc + ")";
  return s;
}

void throw_driver_error(const char* call, CUresult result) {
  throw std::runtime_error(std::string("[") + call + "] failed: " + result_string(result) + ".");
}

}  // namespace kiln::gpu
