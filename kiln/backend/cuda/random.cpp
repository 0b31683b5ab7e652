// eval_gpu of the random primitives: Threefry blocks written straight into the output in
// MLX's layout, and the single-precision erf and erfinv. Kernels: device/random.cuh, which
// ports the functions of kiln/primitives_random.h, so a key gives the CPU's bits.
#include <string>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_random.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

constexpr uint32_t kBlock = 256;
constexpr Dtype kErfDtypes[] = {float32, float16, bfloat16};

std::string bits_kernel(bool aligned) {
  return std::string("kiln::random_bits<") + (aligned ? "true" : "false") + ">";
}

std::string erf_kernel(Dtype d, bool inverse) {
  return "kiln::erf_f32_map<" + gpu::device_type(d) + ", " + (inverse ? "true" : "false") + ">";
}

gpu::ModuleSource random_module() {
  gpu::ModuleSource m{"random", "#include \"kiln/backend/cuda/device/random.cuh\"\n", {}};
  for (bool aligned : {true, false}) m.kernels.push_back(bits_kernel(aligned));
  for (Dtype d : kErfDtypes) {
    for (bool inverse : {false, true}) m.kernels.push_back(erf_kernel(d, inverse));
  }
  return m;
}

// The input as a contiguous device buffer (a scratch copy when it is not row-contiguous).
CUdeviceptr row_contiguous(const array& a, gpu::DeviceStream& s) {
  if (a.flags().row_contiguous) return gpu::device_address(a);
  CUdeviceptr p = gpu::scratch(a.nbytes(), s);
  gpu::copy_to_row_contiguous(a, p, s);
  return p;
}

void erf_map(const char* name, const array& in, array& out, bool inverse, const Stream& stream) {
  const Dtype d = in.dtype();
  if (d != float32 && d != float16 && d != bfloat16) {
    throw std::invalid_argument(
        msg("[", name, "::eval_gpu] Expected float32, float16 or bfloat16; got ", d, "."));
  }
  auto& s = gpu::device_stream(stream);
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  CUdeviceptr src = row_contiguous(in, s);
  CUfunction f =
      gpu::get_kernel(s.context().index(), "random", random_module, erf_kernel(d, inverse));
  const int64_t size = static_cast<int64_t>(out.size());
  gpu::launch_kernel(f, gpu::grid_1d(size, kBlock), {kBlock}, 0, s, src, gpu::device_address(out),
                     size);
}

}  // namespace

void RandomBits::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  const array& keys = inputs[0];
  const int64_t num_keys = static_cast<int64_t>(keys.size() / 2);
  const int64_t key_bytes = static_cast<int64_t>(shape_size(shape_)) * width_;
  if (num_keys == 0 || key_bytes == 0) return;
  const random_impl::StreamLayout layout(static_cast<uint64_t>(key_bytes));
  const int64_t half = static_cast<int64_t>(layout.half), odd = static_cast<int64_t>(layout.odd);
  const bool aligned = key_bytes % 4 == 0;
  CUfunction f =
      gpu::get_kernel(s.context().index(), "random", random_module, bits_kernel(aligned));
  gpu::launch_kernel(f, gpu::grid_1d(num_keys * (half + odd), kBlock), {kBlock}, 0, s,
                     row_contiguous(keys, s), gpu::device_address(out), num_keys, key_bytes, half,
                     odd);
}

void ErfF32::eval_gpu(const std::vector<array>& inputs, array& out) {
  erf_map("ErfF32", inputs[0], out, false, stream());
}

void ErfInvF32::eval_gpu(const std::vector<array>& inputs, array& out) {
  erf_map("ErfInvF32", inputs[0], out, true, stream());
}

KILN_GPU_MODULE_CATALOG(random,
                        [](const gpu::ModuleSink& sink) { sink("random", random_module()); });

}  // namespace kiln
