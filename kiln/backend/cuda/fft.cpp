// FFT::eval_gpu through cuFFT, loaded at run time (libcufft.so.12/.11; never linked: without
// it GPU transforms raise a RuntimeError naming the library).
//
// As on the CPU, an n-d transform is one 1-d transform per axis over a row-contiguous buffer:
// a plan (cufftMakePlanMany64, rank 1) covers all lines of an axis in one call when the axis
// is the innermost one (lines n apart) or the outermost (lines interleaved, stride = the
// inner size); otherwise one call per outer index. Plans are cached per (device, length,
// type, strides, distances, batch); their work areas come from kiln's allocator for each
// call (no cuFFT-owned memory); a plan is used by one call at a time (a lock per cache).
#include <cufft.h>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <tuple>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/dynlib.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_fft.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

#define KILN_CUFFT_FUNCTIONS(X)                                                          \
  X(cufftCreate)                                                                         \
  X(cufftSetAutoAllocation) X(cufftMakePlanMany64) X(cufftSetWorkArea) X(cufftSetStream) \
      X(cufftExecC2C) X(cufftExecR2C) X(cufftExecC2R)

struct Cufft {
#define KILN_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUFFT_FUNCTIONS(KILN_MEMBER)
#undef KILN_MEMBER
  std::string error;
};

const Cufft& lib() {
  static const Cufft* l = [] {
    auto* c = new Cufft;
    std::string why;
    void* h = gpu::open_library({"libcufft.so.12", "libcufft.so.11", "libcufft.so"},
                                "KILN_CUFFT_PATH", gpu::nvidia_wheel_lib_dirs("cufft"), why);
    if (!h) {
      c->error = "cuFFT (libcufft.so) is not available: " + why;
      return c;
    }
#define KILN_RESOLVE(name)                                        \
  c->name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name)); \
  if (!c->name && c->error.empty()) c->error = "libcufft.so lacks " #name;
    KILN_CUFFT_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE
    return c;
  }();
  if (!l->error.empty()) throw std::runtime_error("[fft] " + l->error + ".");
  return *l;
}

void check(const char* call, cufftResult r) {
  if (r != CUFFT_SUCCESS) {
    throw std::runtime_error(msg("[", call, "] failed: cufftResult ", static_cast<int>(r), "."));
  }
}
#define KILN_CUFFT(fn, ...) check(#fn, lib().fn(__VA_ARGS__))

enum class Kind { c2c, r2c, c2r };

struct Plan {
  cufftHandle handle = 0;
  size_t work = 0;
};

// A cached plan for `batch` lines of length n: input elements istride apart, lines idist
// apart (likewise for the output). The caller holds the returned lock while using it.
std::pair<const Plan*, std::unique_lock<std::mutex>> plan(int device, Kind kind, int64_t n,
                                                          int64_t istride, int64_t idist,
                                                          int64_t ostride, int64_t odist,
                                                          int64_t batch) {
  using Key = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
  static std::mutex mu;
  static auto* cache = new std::map<Key, Plan>();
  std::unique_lock lk(mu);
  Key key{device, static_cast<int>(kind), n, istride, idist, ostride, odist, batch};
  auto it = cache->find(key);
  if (it == cache->end()) {
    Plan p;
    KILN_CUFFT(cufftCreate, &p.handle);
    KILN_CUFFT(cufftSetAutoAllocation, p.handle, 0);
    long long len = n;
    long long inembed = kind == Kind::c2r ? n / 2 + 1 : n;
    long long onembed = kind == Kind::r2c ? n / 2 + 1 : n;
    const cufftType type = kind == Kind::c2c   ? CUFFT_C2C
                           : kind == Kind::r2c ? CUFFT_R2C
                                               : CUFFT_C2R;
    KILN_CUFFT(cufftMakePlanMany64, p.handle, 1, &len, &inembed, istride, idist, &onembed, ostride,
               odist, type, batch, &p.work);
    it = cache->emplace(key, p).first;
  }
  return {&it->second, std::move(lk)};
}

// Transforms along `axis` of the row-contiguous `shape`: input at `in` (shape with length
// n_in on the axis), output at `out` (n_out on the axis); n is the transform length.
void transform_axis(gpu::DeviceStream& s, Kind kind, bool inverse, CUdeviceptr in, CUdeviceptr out,
                    const Shape& shape, int axis, int64_t n) {
  const int64_t n_in = kind == Kind::c2r ? n / 2 + 1 : n;
  const int64_t n_out = kind == Kind::r2c ? n / 2 + 1 : n;
  int64_t inner = 1, outer = 1;
  for (int i = axis + 1; i < static_cast<int>(shape.size()); ++i) inner *= shape[i];
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  if (inner * outer == 0 || n == 0) return;
  const size_t ies = kind == Kind::r2c ? 4 : 8, oes = kind == Kind::c2r ? 4 : 8;
  // Lines n apart (innermost axis) in one call; else interleaved lines per outer index.
  const bool innermost = inner == 1;
  const int64_t batch = innermost ? outer : inner;
  const int64_t calls = innermost ? 1 : outer;
  s.context().make_current();
  auto [p, lk] = plan(s.context().index(), kind, n, innermost ? 1 : inner, innermost ? n_in : 1,
                      innermost ? 1 : inner, innermost ? n_out : 1, batch);
  KILN_CUFFT(cufftSetStream, p->handle, reinterpret_cast<cudaStream_t>(s.handle()));
  if (p->work) {
    KILN_CUFFT(cufftSetWorkArea, p->handle, reinterpret_cast<void*>(gpu::scratch(p->work, s)));
  }
  // cuFFT refuses real data not aligned as complex (CUFFT_INVALID_VALUE): slabs of an odd
  // number of floats go through an aligned staging buffer.
  const size_t in_bytes = n_in * inner * ies, out_bytes = n_out * inner * oes;
  const bool stage =
      calls > 1 && ((kind == Kind::r2c && in_bytes % 8) || (kind == Kind::c2r && out_bytes % 8));
  const CUdeviceptr staging = stage ? gpu::scratch(std::max(in_bytes, out_bytes), s) : 0;
  for (int64_t o = 0; o < calls; ++o) {
    CUdeviceptr i_ptr = in + o * in_bytes, o_ptr = out + o * out_bytes;
    const CUdeviceptr o_final = o_ptr;
    if (stage && kind == Kind::r2c && i_ptr % 8) {
      KILN_CU(cuMemcpyDtoDAsync, staging, i_ptr, in_bytes, s.handle());
      i_ptr = staging;
    }
    if (stage && kind == Kind::c2r && o_ptr % 8) o_ptr = staging;
    switch (kind) {
      case Kind::c2c:
        KILN_CUFFT(cufftExecC2C, p->handle, reinterpret_cast<cufftComplex*>(i_ptr),
                   reinterpret_cast<cufftComplex*>(o_ptr), inverse ? CUFFT_INVERSE : CUFFT_FORWARD);
        break;
      case Kind::r2c:
        KILN_CUFFT(cufftExecR2C, p->handle, reinterpret_cast<cufftReal*>(i_ptr),
                   reinterpret_cast<cufftComplex*>(o_ptr));
        break;
      case Kind::c2r:
        KILN_CUFFT(cufftExecC2R, p->handle, reinterpret_cast<cufftComplex*>(i_ptr),
                   reinterpret_cast<cufftReal*>(o_ptr));
        break;
    }
    if (o_ptr != o_final) KILN_CU(cuMemcpyDtoDAsync, o_final, o_ptr, out_bytes, s.handle());
  }
}

gpu::ModuleSource scale_module() {
  return {
      "fft_scale", "#include \"kiln/backend/cuda/device/linalg.cuh\"\n", {"kiln::scale_floats"}};
}

}  // namespace

void FFT::eval_gpu(const std::vector<array>& inputs, array& out) {
  auto& s = gpu::device_stream(stream());
  const array& in = inputs[0];
  out.set_data(gpu::new_device_storage(out.nbytes(), s));
  if (out.size() == 0) return;
  const CUdeviceptr dst = gpu::device_address(out);
  const int last = axes_.back();
  const std::vector<int> others(axes_.begin(), axes_.end() - 1);
  if (!real_) {
    gpu::copy_to_row_contiguous(in, dst, s);
    for (int ax : axes_) {
      transform_axis(s, Kind::c2c, inverse_, dst, dst, out.shape(), ax, out.shape(ax));
    }
  } else if (!inverse_) {
    const CUdeviceptr x = gpu::scratch(in.nbytes(), s);
    gpu::copy_to_row_contiguous(in, x, s);
    // R2C lines: the axis lengths differ between input and output but the inner sizes agree.
    transform_axis(s, Kind::r2c, false, x, dst, in.shape(), last, in.shape(last));
    for (int ax : others)
      transform_axis(s, Kind::c2c, false, dst, dst, out.shape(), ax, out.shape(ax));
  } else {
    const CUdeviceptr z = gpu::scratch(in.nbytes(), s);
    gpu::copy_to_row_contiguous(in, z, s);
    for (int ax : others) transform_axis(s, Kind::c2c, true, z, z, in.shape(), ax, in.shape(ax));
    transform_axis(s, Kind::c2r, true, z, dst, out.shape(), last, n_last_);
  }
  if (scale_ != 1.0) {
    const int64_t count = static_cast<int64_t>(out.size()) * (out.dtype() == complex64 ? 2 : 1);
    CUfunction f =
        gpu::get_kernel(s.context().index(), "fft_scale", scale_module, "kiln::scale_floats");
    gpu::launch_kernel(f, gpu::grid_1d(count, gpu::kElementwiseBlock), {gpu::kElementwiseBlock}, 0,
                       s, dst, count, static_cast<float>(scale_));
  }
}

KILN_GPU_MODULE_CATALOG(fft,
                        [](const gpu::ModuleSink& sink) { sink("fft_scale", scale_module()); });

}  // namespace kiln
