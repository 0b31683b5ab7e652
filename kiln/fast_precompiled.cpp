// precompiled_cuda_kernel: PTX, cubin or fatbin bytes run as a node of the graph. The
// image is inspected at the call (backend/kernels/precompiled.h), so that a missing entry
// point, a wrong architecture or parameters that do not match are errors there.
#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "kiln/backend/kernels/precompiled.h"
#include "kiln/fast.h"
#include "kiln/primitives_custom.h"
#include "kiln/utils.h"

namespace kiln::fast {

namespace {

constexpr const char* kTag = "[precompiled_cuda_kernel]";

std::string triple_str(std::tuple<int, int, int> t) {
  return msg("(", std::get<0>(t), ", ", std::get<1>(t), ", ", std::get<2>(t), ")");
}

// The bytes and alignment of each argument the call passes, in order.
struct ArgBytes {
  size_t size, align;
  std::string what;
};

std::string describe(const std::vector<kernels::KernelParam>& params) {
  std::string s;
  for (size_t i = 0; i < params.size(); ++i)
    s += msg(i ? ", " : "", params[i].size, " bytes at ", params[i].offset);
  return s.empty() ? "none" : s;
}

// Definitions by image and name: a model calling the same kernel every step inspects it
// once.
std::shared_ptr<const PrecompiledDefinition> definition(const std::string& name,
                                                        const std::string& image,
                                                        const std::vector<ArgBytes>& args) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const PrecompiledDefinition>> defs;
  const std::string hash = msg(std::hash<std::string>{}(image), "_", image.size());
  std::string key = hash + "|" + name + "|";
  for (const auto& a : args) key += msg(a.size, ",");
  {
    std::lock_guard lk(mu);
    auto it = defs.find(key);
    if (it != defs.end()) return it->second;
  }
  const kernels::PrecompiledImage img = kernels::inspect_image(image);
  const char* kind = kernels::image_kind_name(img.kind);
  if (img.kind != kernels::PrecompiledImage::Kind::fatbin &&
      std::find(img.entries.begin(), img.entries.end(), name) == img.entries.end()) {
    std::string have;
    for (const auto& e : img.entries) have += (have.empty() ? "'" : ", '") + e + "'";
    throw std::invalid_argument(msg(kTag, " The ", kind, " has no kernel named '", name,
                                    "'; it has ", have.empty() ? "none" : have, "."));
  }
  auto def = std::make_shared<PrecompiledDefinition>();
  def->info = img;
  def->name = name;
  def->image = image;
  def->hash = hash;
  def->kind = kind;
  bool known = false;
  const auto params = kernels::kernel_params(image, img, name, known);
  if (known) {
    // Lay the call's arguments out as the kernel's parameter buffer would hold them.
    size_t offset = 0;
    std::vector<kernels::KernelParam> given;
    for (const auto& a : args) {
      offset = (offset + a.align - 1) / a.align * a.align;
      given.push_back({offset, a.size});
      offset += a.size;
    }
    bool match = params.size() >= given.size();
    for (size_t i = 0; match && i < given.size(); ++i)
      match = params[i].offset == given[i].offset &&
              (params[i].size == given[i].size ||
               (i + 1 == params.size() && params[i].size >= given[i].size));
    // Trailing 8-byte parameters (Triton's scratch pointers) are passed as null.
    for (size_t i = given.size(); match && i < params.size(); ++i)
      match = params[i].size == 8 || (i + 1 == params.size() && params[i].size >= 8);
    if (!match) {
      std::string passed;
      for (const auto& a : args) passed += (passed.empty() ? "" : ", ") + a.what;
      throw std::invalid_argument(
          msg(kTag, " Kernel '", name, "' takes ", params.size(), " parameter",
              params.size() == 1 ? "" : "s", " (", describe(params), "); the call passes ",
              args.size(), " (", passed.empty() ? "none" : passed,
              "): a pointer per input and output, then the scalars."));
    }
    def->null_pointers = static_cast<int>(params.size() - given.size());
  }
  // Checked against the GPU at the call below; kept for eval.
  std::lock_guard lk(mu);
  return defs.emplace(key, def).first->second;
}

}  // namespace

std::vector<array> precompiled_cuda_kernel(
    const std::string& name, const std::string& compiled_source,
    const std::vector<array>& inputs, const std::vector<Shape>& output_shapes,
    const std::vector<Dtype>& output_dtypes, const std::vector<ScalarArg>& scalars,
    std::tuple<int, int, int> grid, std::tuple<int, int, int> threadgroup, int shared_memory,
    std::optional<float> init_value, bool ensure_row_contiguous, StreamOrDevice s) {
  if (output_shapes.size() != output_dtypes.size()) {
    throw std::invalid_argument(msg(kTag, " Kernel '", name, "' got ", output_shapes.size(),
                                    " output shapes and ", output_dtypes.size(),
                                    " output dtypes."));
  }
  if (output_shapes.empty()) {
    throw std::invalid_argument(msg(kTag, " Kernel '", name, "' needs at least one output."));
  }
  for (const Shape& shape : output_shapes) {
    for (int32_t d : shape) {
      if (d < 0) {
        throw std::invalid_argument(msg(kTag, " Output shapes of kernel '", name,
                                        "' must not be negative; got ", shape_str(shape), "."));
      }
    }
  }
  auto [gx, gy, gz] = grid;
  auto [tx, ty, tz] = threadgroup;
  if (gx <= 0 || gy <= 0 || gz <= 0) {
    throw std::invalid_argument(msg(kTag, " The grid of kernel '", name,
                                    "' must be positive in every dimension; got ",
                                    triple_str(grid), "."));
  }
  if (tx <= 0 || ty <= 0 || tz <= 0 || static_cast<int64_t>(tx) * ty * tz > 1024 || tz > 64) {
    throw std::invalid_argument(msg(kTag, " The threadgroup of kernel '", name, "', ",
                                    triple_str(threadgroup),
                                    ", must be positive with at most 1024 threads (64 in z)."));
  }
  if (shared_memory < 0) {
    throw std::invalid_argument(
        msg(kTag, " shared_memory must be >= 0; got ", shared_memory, " for kernel '", name, "'."));
  }
  std::vector<ArgBytes> args;
  for (size_t i = 0; i < inputs.size(); ++i) args.push_back({8, 8, msg("input ", i, " (pointer)")});
  for (size_t i = 0; i < output_shapes.size(); ++i)
    args.push_back({8, 8, msg("output ", i, " (pointer)")});
  for (const ScalarArg& v : scalars) {
    if (std::holds_alternative<bool>(v))
      args.push_back({1, 1, "bool"});
    else if (std::holds_alternative<int>(v))
      args.push_back({4, 4, "int32"});
    else
      args.push_back({4, 4, "float32"});
  }
  // The image first: its errors do not depend on the machine.
  auto def = definition(name, compiled_source, args);
  const Stream stream = to_stream(s);
  if (stream.device.type != Device::gpu) {
    throw std::invalid_argument(msg(kTag, " Kernel '", name,
                                    "' is compiled GPU code: it runs on GPU streams only; got ",
                                    "a CPU stream."));
  }
  // The image must run on the stream's GPU (when there is one to ask).
  const int cc = kernels::gpu_compute_capability(stream.device.index);
  if (cc) {
    const std::string why = kernels::arch_mismatch(def->info, cc);
    if (!why.empty()) {
      throw std::invalid_argument(msg(kTag, " Kernel '", name, "' cannot run on this GPU: ",
                                      why, "."));
    }
  }
  // The threadgroup is the kernel's block as given (a Triton kernel needs its own), unlike
  // metal_kernel's, which shrinks to the grid.
  auto prim = std::make_shared<PrecompiledKernel>(stream, std::move(def), scalars, grid, threadgroup,
                                                  shared_memory, init_value, ensure_row_contiguous,
                                                  output_shapes);
  return array::make_arrays(output_shapes, output_dtypes, prim, inputs);
}

}  // namespace kiln::fast
