// The C++ API for extensions: operations and primitives built outside kiln, against its
// installed headers and CMake package (find_package(Kiln CONFIG), target `kiln`), with CPU
// code of their own (e.g. through BLAS) and GPU kernels from their own CUDA sources.
//
// An extension writes, as kiln's own ops do (see examples/extensions/axpby):
//   - an op that checks its arguments and returns `array(shape, dtype, primitive, inputs)`;
//   - a `UnaryPrimitive` (or `Primitive`) subclass with eval_cpu, eval_gpu, jvp, vjp and
//     vmap (the KILN_PRIMITIVE_* macros of kiln/primitive.h declare them; they name `array`
//     and `Shape` unqualified, so outside namespace kiln add `using kiln::array;` and
//     `using kiln::Shape;`, or write the declarations out as the example does);
//   - eval_cpu: allocate the output (`out.set_data(Storage::host(nbytes))`, or an explicit
//     layout), read inputs through their strides (`elem_to_loc`, `cpu::copy_inplace`), and
//     dispatch on the dtype (`dispatch_dtype`);
//   - eval_gpu (builds with CUDA only): allocate with `gpu::new_device_storage`, take a
//     kernel by name from the extension's CUDA sources (`ext::get_kernel`, sources embedded
//     by the CMake helper kiln_add_kernel_sources) and launch it on the primitive's stream
//     (`gpu::device_stream`, `gpu::launch_kernel`).
// BLAS: the CMake package's target Kiln::cblas links the BLAS kiln uses and adds cblas.h to
// the include path (one BLAS per process).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/allocator.h"            // Storage::host: output memory on the CPU
#include "kiln/array.h"                // set_data, copy_shared_buffer, flags
#include "kiln/backend/cpu/copy.h"     // cpu::copy_inplace, cpu::CopyType
#include "kiln/backend/cpu/strided.h"  // collapse_contiguous_dims
#include "kiln/backend/gpu.h"          // gpu::is_available
#include "kiln/dtype.h"                // dispatch_dtype, promote_types, type_to_name
#include "kiln/ops.h"
#include "kiln/primitive.h"
#include "kiln/transforms.h"
#include "kiln/utils.h"  // elem_to_loc, broadcast_shapes, msg

#ifdef KILN_WITH_CUDA
#include "kiln/backend/cuda/allocator.h"  // gpu::new_device_storage, gpu::device_ptr
#include "kiln/backend/cuda/jit.h"        // gpu::CompiledModule, gpu::CompileError
#include "kiln/backend/cuda/launch.h"     // gpu::launch_kernel, gpu::grid_1d
#include "kiln/backend/cuda/stream.h"     // gpu::device_stream: the CUstream of a stream
#endif

namespace kiln::ext {

// ---------------------------------------------------------------- kernel libraries
// kiln_add_kernel_sources(TARGET t [LIBRARY name] SOURCES a.cu ... [HEADERS b.cuh ...])
// embeds the files into target t and registers them, when t is loaded, as the kernel
// library `name` (default: t). The sources form one translation unit, compiled by kiln's JIT
// (NVRTC, memory and disk caches) once per kernel requested, for the GPU's architecture.

/** One embedded file: `name` as the sources #include it (for HEADERS: the path given to
 * kiln_add_kernel_sources), `path` on the machine that built it (in compiler messages). */
struct KernelFile {
  std::string name;
  std::string path;
  std::string text;
};

/** A library of CUDA sources. Sources may include kiln's device headers by their repository
 * path (#include "kiln/backend/cuda/device/indexing.cuh") and the library's headers by name. */
struct KernelLibrary {
  std::string name;
  std::vector<KernelFile> sources;
  std::vector<KernelFile> headers;
};

/** Registers `lib` (called by the code kiln_add_kernel_sources generates, at load time).
 * Registering the same library twice is harmless; two different libraries under one name
 * make every lookup of that name throw. Returns true. Never throws. */
bool register_kernel_library(KernelLibrary lib) noexcept;

/** Whether a library `name` is registered. */
bool has_kernel_library(std::string_view name);

/** The registered library names, sorted. */
std::vector<std::string> kernel_library_names();

/** What NVRTC compiles for a library: its sources as one translation unit and its headers
 * by include name, each file preceded by a #line directive naming its path, so that compiler
 * messages point at the extension's own files and lines. */
struct KernelLibrarySource {
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;
};

/** The sources of library `name`. Throws std::runtime_error tagged `[op]` when no such
 * library is registered (its sources were not embedded) or two different ones share the
 * name. */
KernelLibrarySource kernel_library_source(std::string_view name, std::string_view op);

#ifdef KILN_WITH_CUDA

/** Most dimensions a kernel parameter of type Dims<T> holds (the device headers' kMaxDims). */
constexpr int kMaxDims = 16;

/** Per-dimension values (a shape, strides) that a kernel takes by value: the host twin of
 * the device headers' kiln::Dims<T> (kiln/backend/cuda/device/indexing.cuh). Collapse
 * dimensions first (collapse_contiguous_dims); use entries 0 .. ndim - 1. */
template <typename T>
struct Dims {
  T v[kMaxDims];
};

/** The JIT module holding kernels `kernels` (NVRTC name expressions: names of extern "C"
 * __global__ functions, or template instantiations such as "scale<float>") of library
 * `library`, with extra NVRTC `options`. Errors as kernel_library_source. */
gpu::ModuleSource kernel_module(std::string_view library, const std::vector<std::string>& kernels,
                                std::string_view op, const std::vector<std::string>& options = {});

/**
 * Compiles kernels `kernels` of `library` in one NVRTC run for `target` ("sm_90",
 * "compute_90"), without a GPU and without the caches: what CI runs to check an extension's
 * kernels. Throws gpu::CompileError with NVRTC's log (file and line of the extension's
 * source) when the sources do not compile or lack one of the kernels; errors of
 * kernel_library_source.
 */
gpu::CompiledModule compile_kernels(std::string_view library,
                                    const std::vector<std::string>& kernels, std::string_view op,
                                    const std::string& target = "sm_90",
                                    const std::vector<std::string>& options = {});

/**
 * Kernel `kernel` of `library`, compiled for the GPU of stream `s` through kiln's JIT and its
 * caches (memory, then disk), as built-in kernels are; the first request of a kernel compiles
 * it (with the library's whole translation unit: keep libraries small, or name template
 * instantiations, which only compile when requested), later ones are a lookup. Call it from
 * eval_gpu. Throws gpu::CompileError (file and line of the extension's source in the log),
 * std::runtime_error tagged `[op]` for a missing library, std::invalid_argument when `s` is not a
 * GPU stream.
 */
CUfunction get_kernel(const Stream& s, std::string_view library, std::string_view kernel,
                      std::string_view op, const std::vector<std::string>& options = {});

#endif  // KILN_WITH_CUDA

}  // namespace kiln::ext
