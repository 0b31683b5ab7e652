// KernelProgram (one compiled instance of a custom kernel, its generated sources and GPU
// functions) and ParamBlock (the packed parameters of a launch); see signature.h.
#include <atomic>
#include <cstring>
#include <mutex>

#include "kiln/backend/kernels/signature.h"

namespace kiln::kernels {

// ---------------------------------------------------------------- KernelProgram

struct KernelProgram::Cache {
  std::mutex mu;
  std::unique_ptr<GeneratedKernel> by_target[2];
};

namespace {
std::atomic<int64_t>& uncompiled_count() {
  static std::atomic<int64_t> n{0};
  return n;
}
}  // namespace

KernelProgram::KernelProgram(std::shared_ptr<const KernelSpec> spec,
                             std::shared_ptr<const BodyUsage> usage, KernelInstance instance)
    : spec_(std::move(spec)),
      usage_(std::move(usage)),
      instance_(std::move(instance)),
      cache_(std::make_unique<Cache>()) {
  uncompiled_count().fetch_add(1, std::memory_order_relaxed);
}

KernelProgram::~KernelProgram() {
  for (auto& f : gpu_functions_) delete f.load(std::memory_order_relaxed);
  if (!compiled_once_.load(std::memory_order_relaxed))
    uncompiled_count().fetch_sub(1, std::memory_order_relaxed);
}

void KernelProgram::note_compiled() const {
  if (!compiled_once_.exchange(true, std::memory_order_acq_rel))
    uncompiled_count().fetch_sub(1, std::memory_order_relaxed);
}

void KernelProgram::set_cpu_ready() const {
  cpu_ready_.store(true, std::memory_order_release);
  note_compiled();
}

int64_t KernelProgram::uncompiled_programs() {
  return uncompiled_count().load(std::memory_order_relaxed);
}

const KernelProgram::GpuFunction* KernelProgram::gpu_function(int device) const {
  if (device < 0 || device >= kMaxGpuDevices) return nullptr;
  return gpu_functions_[device].load(std::memory_order_acquire);
}

const KernelProgram::GpuFunction* KernelProgram::set_gpu_function(int device, GpuFunction f) const {
  if (device < 0 || device >= kMaxGpuDevices) return nullptr;
  note_compiled();
  auto* mine = new GpuFunction(f);
  GpuFunction* expected = nullptr;
  if (gpu_functions_[device].compare_exchange_strong(expected, mine, std::memory_order_acq_rel))
    return mine;
  delete mine;
  return expected;
}

const GeneratedKernel& KernelProgram::generated(Target target) const {
  std::lock_guard lk(cache_->mu);
  auto& slot = cache_->by_target[target == Target::gpu ? 0 : 1];
  if (!slot) slot = std::make_unique<GeneratedKernel>(generate(*spec_, instance_, target));
  return *slot;
}

// ---------------------------------------------------------------- ParamBlock

namespace {
constexpr size_t kGeometryBytes = 40;  // grid, threadgroup, block_offset, reserved_
}

size_t param_block_size(const BodyUsage& u) {
  size_t n = kGeometryBytes;
  for (bool s : u.input_strides) n += s ? 8 * fast::kMaxNdim : 0;
  for (bool s : u.input_shape) n += s ? 4 * fast::kMaxNdim : 0;
  for (bool s : u.input_ndim) n += s ? 4 : 0;
  return (n + 7) / 8 * 8;
}

ParamBlock::ParamBlock(const BodyUsage& u, const std::vector<Shape>& shapes,
                       const std::vector<Strides>& strides, const LaunchGeometry& geo) {
  size_ = param_block_size(u);
  words_.assign(size_ / 8, 0);
  char* base = reinterpret_cast<char*>(words_.data());
  std::memcpy(base, geo.grid, 12);
  std::memcpy(base + 12, geo.threadgroup, 12);
  std::memcpy(base + 24, geo.block_offset, 12);
  size_t off = kGeometryBytes;
  // Same order as the generated struct: strides, then shapes, then ndims.
  for (size_t i = 0; i < u.input_strides.size(); ++i) {
    if (!u.input_strides[i]) continue;
    int64_t v[fast::kMaxNdim] = {};
    for (size_t d = 0; d < strides[i].size() && d < fast::kMaxNdim; ++d) v[d] = strides[i][d];
    std::memcpy(base + off, v, sizeof v);
    off += sizeof v;
  }
  for (size_t i = 0; i < u.input_shape.size(); ++i) {
    if (!u.input_shape[i]) continue;
    int32_t v[fast::kMaxNdim] = {};
    for (size_t d = 0; d < shapes[i].size() && d < fast::kMaxNdim; ++d) v[d] = shapes[i][d];
    std::memcpy(base + off, v, sizeof v);
    off += sizeof v;
  }
  for (size_t i = 0; i < u.input_ndim.size(); ++i) {
    if (!u.input_ndim[i]) continue;
    int32_t v = static_cast<int32_t>(shapes[i].size());
    std::memcpy(base + off, &v, sizeof v);
    off += sizeof v;
  }
}

void ParamBlock::set_block_offset(uint32_t x, uint32_t y, uint32_t z) {
  uint32_t v[3] = {x, y, z};
  std::memcpy(reinterpret_cast<char*>(words_.data()) + 24, v, 12);
}

}  // namespace kiln::kernels