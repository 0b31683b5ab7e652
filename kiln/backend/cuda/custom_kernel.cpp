// CustomKernel::eval_gpu: the generated source (backend/kernels/signature.h) compiled by
// NVRTC through the JIT's caches, and launched with CUDA's or Metal's dispatch semantics.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/backend/kernels/embedded.h"
#include "kiln/backend/kernels/signature_cpu.h"
#include "kiln/primitives_custom.h"
#include "kiln/scalar_cast.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

using kernels::GeneratedKernel;
using kernels::KernelProgram;
using kernels::Target;

// Metal bodies' helper functions carry no __device__: NVRTC treats them as device code.
// -minimal leaves out the CUDA runtime's device API, textures and surfaces (about 15% of a
// small kernel's compile time) unless the kernel names them or includes a header.
std::vector<std::string> options(const KernelProgram& p, const GeneratedKernel& g) {
  std::vector<std::string> o = {"-default-device"};
  if (!g.usage.runtime_names) o.push_back("-minimal");
  switch (p.spec().math_mode) {
    case fast::MathMode::safe:
      break;
    case fast::MathMode::relaxed:
      o.insert(o.end(), {"-ftz=true", "-prec-div=false", "-prec-sqrt=false"});
      break;
    case fast::MathMode::fast:
      o.push_back("--use_fast_math");
      break;
  }
  return o;
}

std::string module_name(const KernelProgram& p, const GeneratedKernel& g) {
  return "custom_kernel_" + p.spec().name + "_" + g.hash;
}

gpu::ModuleSource module_source(const KernelProgram& p, const GeneratedKernel& g) {
  gpu::ModuleSource src{module_name(p, g), g.source, {g.entry}, options(p, g)};
  for (const auto& h : kernels::gpu_kernel_headers())
    src.headers.emplace_back(std::string(h.path), std::string(h.text));
  return src;
}

// The module's kernel on this stream's device; compile errors become KernelCompileError.
CUfunction custom_function(const KernelProgram& p, gpu::DeviceStream& s) {
  const GeneratedKernel& g = p.generated(Target::gpu);
  try {
    return gpu::get_kernel(
        s.context().index(), module_name(p, g), [&] { return module_source(p, g); }, g.entry);
  } catch (const gpu::CompileError& e) {
    throw fast::KernelCompileError(
        kernels::compile_error_message(p, s.context().target(), e.log()));
  }
}

// ---------------------------------------------------------------- checking mode

bool check_mode() {
  const char* e = std::getenv("KILN_KERNEL_CHECK");
  return e && *e && std::string(e) != "0";
}

// The checking-mode module of a program (gpu_check.h): its kernel, its report, the names of
// its shared arrays.
struct CheckedKernel {
  CUfunction function = nullptr;
  CUdeviceptr report = 0;
  std::vector<std::string> shared_names;
};

CheckedKernel checked_function(const KernelProgram& p, gpu::DeviceStream& s) {
  const GeneratedKernel& g = p.generated(Target::gpu);
  kernels::GpuCheckedKernel c = kernels::gpu_check_translation_unit(g, p.spec());
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(c.source));
  const std::string name = "custom_kernel_" + p.spec().name + "_check_" + g.hash + hash;
  CheckedKernel k;
  try {
    const gpu::Module& mod = gpu::get_module(s.context().index(), name, [&] {
      gpu::ModuleSource src{name, c.source, {g.entry}, options(p, g)};
      for (const auto& h : kernels::gpu_kernel_headers())
        src.headers.emplace_back(std::string(h.path), std::string(h.text));
      return src;
    });
    k.function = mod.function(g.entry);
    k.report = mod.global("kiln_check_report");
  } catch (const gpu::CompileError& e) {
    throw fast::KernelCompileError(
        kernels::compile_error_message(p, s.context().target() + " (checking mode)", e.log()));
  }
  k.shared_names = std::move(c.shared_names);
  return k;
}

// gpu_check.h's Report.
struct CheckReport {
  uint32_t flag, array;
  int64_t index, lo, hi;
  uint32_t block[3], thread[3];
};

// A checked pointer as gpu_check.h's kiln_check::ptr lays it out.
struct CheckedPointer {
  CUdeviceptr p, base;
  int64_t begin, end;
  uint32_t id, pad;
};

// The bytes of `a`'s buffer around its first element, [begin, end).
std::pair<int64_t, int64_t> span_around(const array& a) {
  if (!a.has_storage()) return {0, 0};
  const int64_t total = static_cast<int64_t>(a.storage().nbytes());
  return {-static_cast<int64_t>(a.offset()), total - static_cast<int64_t>(a.offset())};
}

// Waits for the launch and throws the error of its first out-of-bounds access, if any.
// `offset` is the launch's first threadgroup (Metal edge launches).
void check_report(const CustomKernel& k, const CheckedKernel& c, gpu::DeviceStream& s,
                  const uint32_t offset[3]) {
  KILN_CU(cuStreamSynchronize, s.handle());
  CheckReport r{};
  KILN_CU(cuMemcpyDtoH, &r, c.report, sizeof r);
  if (r.flag != 1) return;
  const auto& sp = k.spec();
  const size_t nargs = sp.input_names.size() + sp.output_names.size();
  std::string array_name = "?", what = "access to";
  if (r.array < sp.input_names.size()) {
    array_name = sp.input_names[r.array];
  } else if (r.array < nargs) {
    array_name = sp.output_names[r.array - sp.input_names.size()];
  } else if (r.array - nargs < c.shared_names.size()) {
    array_name = c.shared_names[r.array - nargs];
    what = "access to shared array";
  }
  std::string range =
      r.lo == 0 ? msg("; it has ", r.hi, " element", r.hi == 1 ? "" : "s", " (valid indices 0 to ",
                      r.hi - 1, ")")
                : msg(" (valid indices ", r.lo, " to ", r.hi - 1, ")");
  throw std::runtime_error(msg(k.tag(), " Kernel '", sp.name, "', block (", r.block[0] + offset[0],
                               ", ", r.block[1] + offset[1], ", ", r.block[2] + offset[2],
                               "), thread (", r.thread[0], ", ", r.thread[1], ", ", r.thread[2],
                               "): out-of-bounds ", what, " '", array_name, "' at index ",
                               r.index, range, "."));
}

// ---------------------------------------------------------------- init_value

const char* kFillSource = R"(
template <typename T>
__global__ void fill(T* p, T v, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    p[i] = v;
}
)";
const char* kFillKernels[] = {"fill<unsigned short>", "fill<unsigned int>",
                              "fill<unsigned long long>"};

gpu::ModuleSource fill_module() {
  return {"custom_kernel_fill", kFillSource, {kFillKernels[0], kFillKernels[1], kFillKernels[2]}};
}

// Fills `out` with `value` converted to its dtype: a byte memset when every byte of the
// pattern is equal (zeros, for one), else a grid-stride fill kernel.
void fill_output(array& out, float value, gpu::DeviceStream& s) {
  if (out.size() == 0) return;
  uint64_t bits = 0;
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T v = scalar_cast<T>(value);
    std::memcpy(&bits, &v, sizeof(T));
  });
  const size_t size = out.itemsize();
  bool uniform = true;
  for (size_t b = 1; b < size; ++b)
    uniform = uniform && ((bits >> (8 * b)) & 0xff) == (bits & 0xff);
  const CUdeviceptr dst = gpu::device_address(out);
  if (uniform) {
    KILN_CU(cuMemsetD8Async, dst, static_cast<unsigned char>(bits & 0xff), out.nbytes(),
            s.handle());
    return;
  }
  const gpu::Module& mod =
      gpu::get_module(s.context().index(), "custom_kernel_fill", [] { return fill_module(); });
  const uint32_t block = 256;
  const uint64_t n = out.size();
  gpu::Dim3 grid =
      gpu::grid_1d(std::min<int64_t>(n, int64_t(block) * s.context().sm_count() * 8), block);
  if (size == 2) {
    gpu::launch_kernel(mod.function(kFillKernels[0]), grid, {block}, 0, s, dst,
                       static_cast<uint16_t>(bits), n);
  } else if (size == 4) {
    gpu::launch_kernel(mod.function(kFillKernels[1]), grid, {block}, 0, s, dst,
                       static_cast<uint32_t>(bits), n);
  } else {
    gpu::launch_kernel(mod.function(kFillKernels[2]), grid, {block}, 0, s, dst,
                       static_cast<unsigned long long>(bits), n);
  }
}

// ---------------------------------------------------------------- launch geometry

// One dimension of a Metal grid: `count` threadgroups of `size` threads starting at
// threadgroup `offset`.
struct Part {
  uint32_t count, size, offset;
};

// A Metal grid dimension as full threadgroups plus the ragged edge (when there is one).
std::vector<Part> metal_parts(uint32_t grid, uint32_t tg) {
  std::vector<Part> parts;
  if (grid / tg) parts.push_back({grid / tg, tg, 0});
  if (grid % tg) parts.push_back({1, grid % tg, grid / tg});
  return parts;
}

}  // namespace

namespace gpu {
void fill_kernel_output(array& out, float value, DeviceStream& s) {
  fill_output(out, value, s);
}
}  // namespace gpu

void CustomKernel::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  const KernelProgram& p = program();
  const kernels::KernelSpec& sp = spec();
  const bool check = check_mode();
  CheckedKernel checked;
  const KernelProgram::GpuFunction* loaded = nullptr;
  KernelProgram::GpuFunction fresh;
  if (check) {
    checked = checked_function(p, s);
    fresh.function = checked.function;
    KILN_CU(cuFuncGetAttribute, &fresh.max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            checked.function);
    loaded = &fresh;
  } else {
    loaded = p.gpu_function(s.context().index());
  }
  if (!loaded) {
    fresh.function = custom_function(p, s);
    KILN_CU(cuFuncGetAttribute, &fresh.max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            static_cast<CUfunction>(fresh.function));
    loaded = p.set_gpu_function(s.context().index(), fresh);
    if (!loaded) loaded = &fresh;  // a device beyond the cache's slots
  }
  CUfunction f = static_cast<CUfunction>(loaded->function);
  const int max_threads = loaded->max_threads;
  if (p.usage().prints) s.note_device_printf();

  const auto [gx, gy, gz] = grid_;
  const auto [tx, ty, tz] = threadgroup_;
  if (int64_t(tx) * ty * tz > max_threads) {
    throw std::invalid_argument(msg(tag(), " Kernel '", sp.name, "' can run at most ", max_threads,
                                    " threads per threadgroup on this GPU (its register use); "
                                    "the threadgroup (",
                                    tx, ", ", ty, ", ", tz, ") has ", int64_t(tx) * ty * tz, "."));
  }

  // Inputs, copied to row-contiguous buffers when the kernel asks for them.
  gpu::KernelArgs args;
  std::vector<Shape> shapes;
  std::vector<Strides> strides;
  // Checking mode: pointers carry their bounds (gpu_check.h's kiln_check::ptr); 0-d inputs
  // stay plain pointers.
  uint32_t arg_id = 0;
  auto append_pointer = [&](CUdeviceptr ptr, std::pair<int64_t, int64_t> span, bool scalar) {
    if (check && !scalar) {
      CheckedPointer c{ptr, ptr, span.first, span.second, arg_id, 0};
      args.append(c);
    } else {
      args.append(ptr);
    }
    ++arg_id;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const array& in = inputs[i];
    CUdeviceptr ptr = in.size() ? gpu::device_address(in) : 0;
    Strides st = in.strides();
    std::pair<int64_t, int64_t> span = span_around(in);
    if (sp.ensure_row_contiguous && !in.flags().row_contiguous && in.size() > 0) {
      auto copy = gpu::new_device_storage(in.nbytes(), s);
      s.keep_alive(copy);
      ptr = reinterpret_cast<CUdeviceptr>(copy->device_copy()->ptr());
      Dtype bits = gpu::bits_dtype(in.dtype());
      gpu::unary_op_strided("Identity", in, ptr, bits, bits, s);
      st = array::row_major_strides(in.shape());
      span = {0, static_cast<int64_t>(in.nbytes())};
    }
    append_pointer(ptr, span, p.instance().input_scalar[i]);
    shapes.push_back(in.shape());
    strides.push_back(std::move(st));
  }
  for (array& out : outputs) {
    out.set_data(gpu::new_device_storage(out.nbytes(), s));
    if (init_value_) gpu::fill_kernel_output(out, *init_value_, s);
    append_pointer(out.size() ? gpu::device_address(out) : CUdeviceptr(0),
                   {0, static_cast<int64_t>(out.nbytes())}, false);
  }
  auto before_launch = [&] {
    if (check && checked.report) {
      KILN_CU(cuMemsetD8Async, checked.report, 0, sizeof(CheckReport), s.handle());
    }
  };
  auto after_launch = [&](uint32_t ox, uint32_t oy, uint32_t oz) {
    const uint32_t offset[3] = {ox, oy, oz};
    if (check && checked.report) check_report(*this, checked, s, offset);
  };

  kernels::LaunchGeometry geo;
  const uint32_t g3[3] = {uint32_t(gx), uint32_t(gy), uint32_t(gz)};
  const uint32_t t3[3] = {uint32_t(tx), uint32_t(ty), uint32_t(tz)};
  std::memcpy(geo.grid, g3, sizeof g3);
  std::memcpy(geo.threadgroup, t3, sizeof t3);
  kernels::ParamBlock params(p.usage(), shapes, strides, geo);

  if (sp.flavour == fast::KernelFlavour::cuda) {
    // CUDA's dispatch: ceil(grid / threadgroup) blocks, every thread runs.
    args.append_bytes(params.data(), params.size(), 8);
    gpu::Dim3 blocks{(g3[0] + t3[0] - 1) / t3[0], (g3[1] + t3[1] - 1) / t3[1],
                     (g3[2] + t3[2] - 1) / t3[2]};
    before_launch();
    gpu::launch(f, blocks, {t3[0], t3[1], t3[2]}, static_cast<size_t>(sp.shared_memory), s,
                args.params());
    after_launch(0, 0, 0);
    return;
  }
  // Metal's dispatch: only threads inside the grid exist. Full threadgroups and each ragged
  // edge run as separate launches whose blocks have the real sizes (up to 8 in 3-D).
  for (const Part& px : metal_parts(g3[0], t3[0])) {
    for (const Part& py : metal_parts(g3[1], t3[1])) {
      for (const Part& pz : metal_parts(g3[2], t3[2])) {
        params.set_block_offset(px.offset, py.offset, pz.offset);
        gpu::KernelArgs launch_args = args;
        launch_args.append_bytes(params.data(), params.size(), 8);
        before_launch();
        gpu::launch(f, {px.count, py.count, pz.count}, {px.size, py.size, pz.size}, 0, s,
                    launch_args.params());
        after_launch(px.offset, py.offset, pz.offset);
      }
    }
  }
}

namespace kernels {

void compile_gpu(const KernelProgram& program, const std::string& target) {
  const GeneratedKernel& g = program.generated(Target::gpu);
  try {
    gpu::compile_cached(module_source(program, g), target);
  } catch (const gpu::CompileError& e) {
    throw fast::KernelCompileError(compile_error_message(program, target, e.log()));
  }
}

bool needs_gpu_compile(const KernelProgram& program, const Stream& stream) {
  auto& s = gpu::device_stream(stream);
  return check_mode() || !program.gpu_function(s.context().index());
}

void prefetch_gpu(const KernelProgram& program, const Stream& stream) {
  auto& s = gpu::device_stream(stream);
  if (check_mode())
    checked_function(program, s);
  else
    custom_function(program, s);
}

std::string compile_gpu_checked(const KernelProgram& program, const std::string& target) {
  const GeneratedKernel& g = program.generated(Target::gpu);
  GpuCheckedKernel c = gpu_check_translation_unit(g, program.spec());
  gpu::ModuleSource src{"custom_kernel_" + program.spec().name + "_check", c.source, {g.entry},
                        options(program, g)};
  for (const auto& h : gpu_kernel_headers())
    src.headers.emplace_back(std::string(h.path), std::string(h.text));
  try {
    gpu::compile_cached(src, target);
  } catch (const gpu::CompileError& e) {
    throw fast::KernelCompileError(
        compile_error_message(program, target + " (checking mode)", e.log()));
  }
  return c.source;
}

}  // namespace kernels

KILN_GPU_MODULE_CATALOG(custom_kernel, [](const gpu::ModuleSink& sink) {
  sink("custom_kernel_fill", fill_module());
});

}  // namespace kiln
