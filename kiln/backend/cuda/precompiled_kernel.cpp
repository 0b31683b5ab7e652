// PrecompiledKernel::eval_gpu: a PTX, cubin or fatbin image loaded by the driver (once per
// device), launched with CUDA's dispatch: ceil(grid / threadgroup) blocks.
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/backend/gpu.h"
#include "kiln/primitives_custom.h"
#include "kiln/utils.h"

namespace kiln {

namespace gpu {
// init_value's fill (backend/cuda/custom_kernel.cpp).
void fill_kernel_output(array& out, float value, DeviceStream& s);
}  // namespace gpu

namespace {

// Loaded images by device and image hash; a module lives until the process ends.
struct LoadedKernel {
  CUfunction function = nullptr;
  int max_threads = 0;
  int shared_set = 0;  // the dynamic shared memory the function was allowed so far
};

std::mutex& modules_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::map<std::pair<int, std::string>, CUmodule>& modules() {
  static auto* m = new std::map<std::pair<int, std::string>, CUmodule>;
  return *m;
}
std::map<std::tuple<int, std::string, std::string>, LoadedKernel>& functions() {
  static auto* m = new std::map<std::tuple<int, std::string, std::string>, LoadedKernel>;
  return *m;
}

LoadedKernel& load(const PrecompiledDefinition& def, gpu::DeviceStream& s) {
  const int dev = s.context().index();
  std::lock_guard lk(modules_mutex());
  auto fk = std::make_tuple(dev, def.hash, def.name);
  auto fit = functions().find(fk);
  if (fit != functions().end()) return fit->second;
  CUmodule& mod = modules()[{dev, def.hash}];
  if (!mod) {
    s.context().make_current();
    // The JIT's log says why PTX does not load (an ISA version the driver does not know...).
    char log[4096] = {0};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* vals[] = {log, reinterpret_cast<void*>(sizeof log)};
    CUresult r = gpu::driver().cuModuleLoadDataEx(&mod, def.image.c_str(), 2, opts, vals);
    if (r != CUDA_SUCCESS) {
      mod = nullptr;
      throw std::runtime_error(msg("[precompiled_cuda_kernel] The driver cannot load the ",
                                   def.kind, " of kernel '", def.name, "' on GPU ", dev, " (",
                                   s.context().name(), "): ", gpu::result_string(r),
                                   log[0] ? msg(". ", log) : std::string(), "."));
    }
  }
  LoadedKernel k;
  CUresult r = gpu::driver().cuModuleGetFunction(&k.function, mod, def.name.c_str());
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error(msg("[precompiled_cuda_kernel] The ", def.kind,
                                 " has no kernel named '", def.name,
                                 "' the driver can find: ", gpu::result_string(r), "."));
  }
  KILN_CU(cuFuncGetAttribute, &k.max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
          k.function);
  return functions().emplace(fk, k).first->second;
}

}  // namespace

void PrecompiledKernel::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  const PrecompiledDefinition& def = definition();
  LoadedKernel& k = load(def, s);
  const auto [gx, gy, gz] = grid();
  const auto [tx, ty, tz] = threadgroup();
  if (int64_t(tx) * ty * tz > k.max_threads) {
    throw std::invalid_argument(msg("[precompiled_cuda_kernel] Kernel '", def.name,
                                    "' can run at most ", k.max_threads,
                                    " threads per threadgroup; the threadgroup (", tx, ", ", ty,
                                    ", ", tz, ") has ", int64_t(tx) * ty * tz, "."));
  }
  if (shared_memory() > 48 * 1024 && shared_memory() > k.shared_set) {
    KILN_CU(cuFuncSetAttribute, k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            shared_memory());
    k.shared_set = shared_memory();
  }

  gpu::KernelArgs args;
  for (const array& in : inputs) {
    CUdeviceptr ptr = in.size() ? gpu::device_address(in) : 0;
    if (ensure_row_contiguous() && !in.flags().row_contiguous && in.size() > 0) {
      auto copy = gpu::new_device_storage(in.nbytes(), s);
      s.keep_alive(copy);
      ptr = reinterpret_cast<CUdeviceptr>(copy->device_copy()->ptr());
      Dtype bits = gpu::bits_dtype(in.dtype());
      gpu::unary_op_strided("Identity", in, ptr, bits, bits, s);
    }
    args.append(ptr);
  }
  for (array& out : outputs) {
    out.set_data(gpu::new_device_storage(out.nbytes(), s));
    if (init_value()) gpu::fill_kernel_output(out, *init_value(), s);
    args.append(out.size() ? gpu::device_address(out) : CUdeviceptr(0));
  }
  for (const fast::ScalarArg& v : scalars()) {
    if (const bool* b = std::get_if<bool>(&v))
      args.append(*b);
    else if (const int* i = std::get_if<int>(&v))
      args.append(*i);
    else
      args.append(std::get<float>(v));
  }
  for (int i = 0; i < def.null_pointers; ++i) args.append(CUdeviceptr(0));

  const gpu::Dim3 blocks{(uint32_t(gx) + tx - 1) / tx, (uint32_t(gy) + ty - 1) / ty,
                         (uint32_t(gz) + tz - 1) / tz};
  gpu::launch(k.function, blocks, {uint32_t(tx), uint32_t(ty), uint32_t(tz)},
              static_cast<size_t>(shared_memory()), s, args.params());
}

namespace kernels {

int gpu_compute_capability(int device) {
  if (!gpu::is_available() || device < 0 || device >= gpu::device_count()) return 0;
  return gpu::device_context(device).compute_capability();
}

}  // namespace kernels

}  // namespace kiln
