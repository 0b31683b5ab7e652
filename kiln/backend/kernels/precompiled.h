// Inspection of precompiled GPU kernels (precompiled_cuda_kernel's PTX or cubin bytes), so
// that a wrong architecture, a missing entry point or a parameter list that does not match
// the call is a clear error at the call, before the driver sees the image. Needs no GPU.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kiln::kernels {

/** What an image is and what it holds. */
struct PrecompiledImage {
  enum class Kind { ptx, cubin, fatbin };
  Kind kind = Kind::ptx;
  /** The SM architecture it targets (PTX: `.target sm_XY`; cubin: the ELF header), e.g. 90;
   * 0 when unknown (fatbins hold several). */
  int arch = 0;
  /** PTX with an arch-specific target (sm_90a): runs only on that exact architecture. */
  bool arch_specific = false;
  /** The kernels (entry points) it defines. */
  std::vector<std::string> entries;
};

/** One parameter of a kernel: its byte offset and size in the parameter buffer. */
struct KernelParam {
  size_t offset = 0, size = 0;
};

/** "PTX", "cubin" or "fatbin". */
const char* image_kind_name(PrecompiledImage::Kind k);

/** Inspects `bytes`; throws std::invalid_argument ("[precompiled_cuda_kernel] ...") when
 * they are neither PTX text, a CUDA ELF (cubin) nor a fatbin. */
PrecompiledImage inspect_image(const std::string& bytes);

/** The parameters of kernel `name` in order, when the image says (PTX parameter lists,
 * cubin .nv.info attributes); empty with `known` false otherwise. */
std::vector<KernelParam> kernel_params(const std::string& bytes, const PrecompiledImage& image,
                                       const std::string& name, bool& known);

/**
 * Whether an image for `image.arch` runs on a device of compute capability `device_arch`
 * (major * 10 + minor): a cubin needs the same major version and a minor one no newer; PTX
 * needs an architecture no newer (an arch-specific one, exactly the device's). "" when it
 * runs, else why not.
 */
std::string arch_mismatch(const PrecompiledImage& image, int device_arch);

}  // namespace kiln::kernels
