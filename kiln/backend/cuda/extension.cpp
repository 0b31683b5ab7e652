// Extensions' kernels through the JIT: one module per (library, kernel, options), compiled
// on first use for the device like a built-in kernel and cached in memory and on disk. The
// registry of libraries is kiln/extension.cpp.
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kiln/backend/cuda/context.h"
#include "kiln/extension.h"

namespace kiln::ext {

namespace {

// FNV-1a over the sources: the module name must identify the source (get_module's
// contract), so that two different builds of a library never share a compiled module.
std::string digest(const gpu::ModuleSource& m) {
  uint64_t h = 1469598103934665603ull;
  auto add = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // separator: ("ab", "c") differs from ("a", "bc")
  };
  add(m.source);
  for (const auto& [name, text] : m.headers) add(name), add(text);
  for (const auto& o : m.options) add(o);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

struct Cache {
  std::mutex mu;
  std::unordered_map<std::string, CUfunction> kernels;
};

}  // namespace

gpu::ModuleSource kernel_module(std::string_view library, const std::vector<std::string>& kernels,
                                std::string_view op, const std::vector<std::string>& options) {
  auto lib = kernel_library_source(library, op);
  gpu::ModuleSource m;
  // NVRTC calls the program "<name>.cu"; the #line directives name the real files.
  m.name = std::string(library) + "/" + (kernels.size() == 1 ? kernels[0] : "*");
  m.source = std::move(lib.source);
  m.kernels = kernels;
  m.options = options;
  m.headers = std::move(lib.headers);
  return m;
}

gpu::CompiledModule compile_kernels(std::string_view library,
                                    const std::vector<std::string>& kernels, std::string_view op,
                                    const std::string& target,
                                    const std::vector<std::string>& options) {
  return gpu::compile(kernel_module(library, kernels, op, options), target);
}

CUfunction get_kernel(const Stream& s, std::string_view library, std::string_view kernel,
                      std::string_view op, const std::vector<std::string>& options) {
  const int device = gpu::device_stream(s).context().index();
  // Libraries do not change once loaded, so a kernel found once is found again by name,
  // without rebuilding its source: the cost of a launch stays that of a built-in kernel.
  std::string name =
      std::to_string(device) + '\0' + std::string(library) + '\0' + std::string(kernel);
  for (const auto& o : options) name += '\0' + o;
  static auto* cache = new Cache;  // never destroyed: eval_gpu may run during exit
  {
    std::lock_guard lock(cache->mu);
    if (auto it = cache->kernels.find(name); it != cache->kernels.end()) return it->second;
  }
  gpu::ModuleSource m = kernel_module(library, {std::string(kernel)}, op, options);
  const std::string key = "ext/" + m.name + "/" + digest(m);
  CUfunction f = gpu::get_kernel(
      device, key, [&] { return m; }, kernel);
  std::lock_guard lock(cache->mu);
  cache->kernels.emplace(std::move(name), f);
  return f;
}

}  // namespace kiln::ext
