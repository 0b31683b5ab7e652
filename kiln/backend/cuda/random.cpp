// eval_gpu of the random primitives: Threefry blocks written straight into the output, and
// the mapping of bits to uniform values. Kernels: device/random.cuh, which ports the
// functions of kiln/primitives_random.h, so a key gives the CPU's numbers bit for bit.
#include <algorithm>
#include <string>

#include "kiln/backend/cpu/strided.h"
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
constexpr Dtype kUniformDtypes[] = {float16, bfloat16, float32, float64, uint8, uint16,
                                    uint32,  uint64,   int8,    int16,   int32, int64};

std::string bits_kernel(int align) {
  return "kiln::random_bits<" + std::to_string(align) + ">";
}

/** BitsToUniform reads 32-bit words for float32 and the half types, 64-bit ones otherwise. */
Dtype uniform_bits(Dtype out) {
  return out == float32 || out == float16 || out == bfloat16 ? uint32 : uint64;
}

std::string uniform_kernel(Dtype out) {
  return "kiln::bits_to_uniform<" + gpu::device_type(out) + ", " +
         gpu::device_type(uniform_bits(out)) + ">";
}

gpu::ModuleSource random_module() {
  gpu::ModuleSource m{"random", "#include \"kiln/backend/cuda/device/random.cuh\"\n", {}};
  for (int align : {8, 4, 1}) m.kernels.push_back(bits_kernel(align));
  for (Dtype d : kUniformDtypes) m.kernels.push_back(uniform_kernel(d));
  return m;
}

}  // namespace

void RandomBits::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  const array& keys = inputs[0];
  const int64_t num_keys = static_cast<int64_t>(keys.size() / 2);
  const int64_t key_bytes = static_cast<int64_t>(shape_size(shape_)) * width_;
  if (num_keys == 0 || key_bytes == 0) return;
  // The keys as contiguous (k0, k1) pairs.
  CUdeviceptr k = gpu::device_address(keys);
  if (!keys.flags().row_contiguous) {
    k = gpu::scratch(keys.nbytes(), s);
    gpu::copy_to_row_contiguous(keys, k, s);
  }
  const int64_t blocks_per_key = (key_bytes + 7) / 8;
  const int align = key_bytes % 8 == 0 ? 8 : key_bytes % 4 == 0 ? 4 : 1;
  CUfunction f = gpu::get_kernel(s.context().index(), "random", random_module, bits_kernel(align));
  gpu::launch_kernel(f, gpu::grid_1d(num_keys * blocks_per_key, kBlock), {kBlock}, 0, s, k,
                     gpu::device_address(out), num_keys, key_bytes, blocks_per_key);
}

void BitsToUniform::eval_gpu(const std::vector<array>& inputs, array& out) {
  const array &bits = inputs[0], &low = inputs[1], &high = inputs[2];
  const Dtype d = out.dtype();
  if (std::find(std::begin(kUniformDtypes), std::end(kUniformDtypes), d) ==
      std::end(kUniformDtypes)) {
    throw std::invalid_argument(msg("[BitsToUniform::eval_gpu] Unsupported dtype ", d, "."));
  }
  if (bits.dtype() != uniform_bits(d)) {
    throw std::invalid_argument(msg("[BitsToUniform::eval_gpu] Expected ", uniform_bits(d),
                                    " bits for ", d, "; got ", bits.dtype(), "."));
  }
  auto& s = gpu::device_stream(stream());
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  auto [shape, st] =
      collapse_contiguous_dims<3>(out.shape(), {bits.strides(), low.strides(), high.strides()});
  CUfunction f = gpu::get_kernel(s.context().index(), "random", random_module, uniform_kernel(d));
  const int64_t size = static_cast<int64_t>(out.size());
  gpu::launch_kernel(f, gpu::grid_1d(size, kBlock), {kBlock}, 0, s, gpu::device_address(bits),
                     gpu::device_address(low), gpu::device_address(high), gpu::device_address(out),
                     gpu::dims_arg(shape, "uniform"), gpu::dims_arg(st[0], "uniform"),
                     gpu::dims_arg(st[1], "uniform"), gpu::dims_arg(st[2], "uniform"),
                     static_cast<int32_t>(shape.size()), size);
}

KILN_GPU_MODULE_CATALOG(random,
                        [](const gpu::ModuleSink& sink) { sink("random", random_module()); });

}  // namespace kiln
