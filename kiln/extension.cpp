// The registry of extensions' kernel libraries (kiln_add_kernel_sources). The GPU half,
// compiling and loading their kernels, is in backend/cuda/extension.cpp.
#include "kiln/extension.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>

namespace kiln::ext {

namespace {

struct Entry {
  KernelLibrary lib;
  std::string conflict;  // the path of a different library registered under the same name
};

struct Registry {
  std::mutex mu;
  std::map<std::string, Entry, std::less<>> libraries;
};

// Never destroyed: extensions register from static initializers and may look up from
// destructors, in any order relative to this file's statics.
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

bool same_files(const std::vector<KernelFile>& a, const std::vector<KernelFile>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.name == y.name && x.path == y.path && x.text == y.text;
  });
}

std::string first_path(const KernelLibrary& lib) {
  return lib.sources.empty() ? std::string("(no sources)") : lib.sources.front().path;
}

std::string names_locked(const Registry& r) {
  std::string names;
  for (const auto& [name, entry] : r.libraries) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

// A #line directive's file name is a string literal: escape what would end or break it.
std::string quoted(const std::string& path) {
  std::string q = "\"";
  for (char c : path) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

}  // namespace

bool register_kernel_library(KernelLibrary lib) noexcept {
  try {
    auto& r = registry();
    std::lock_guard lock(r.mu);
    auto [it, inserted] = r.libraries.try_emplace(lib.name, Entry{lib, {}});
    if (!inserted && it->second.conflict.empty() &&
        !(same_files(it->second.lib.sources, lib.sources) &&
          same_files(it->second.lib.headers, lib.headers))) {
      it->second.conflict = first_path(lib);
    }
  } catch (...) {
    // Out of memory at load time: the library stays unregistered and lookups say so.
  }
  return true;
}

bool has_kernel_library(std::string_view name) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  return r.libraries.find(name) != r.libraries.end();
}

std::vector<std::string> kernel_library_names() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, entry] : r.libraries) names.push_back(name);
  return names;
}

KernelLibrarySource kernel_library_source(std::string_view name, std::string_view op) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.libraries.find(name);
  if (it == r.libraries.end()) {
    throw std::runtime_error(
        msg("[", op, "] No CUDA kernel library '", name,
            "' is registered: embed its sources into the extension with kiln_add_kernel_sources("
            "TARGET <target> LIBRARY ",
            name, " SOURCES ...) in its CMakeLists.txt. Registered: ", names_locked(r), "."));
  }
  const Entry& e = it->second;
  if (!e.conflict.empty()) {
    throw std::runtime_error(
        msg("[", op, "] Two different CUDA kernel libraries are registered as '", name, "' (",
            first_path(e.lib), " and ", e.conflict, "); give one of them another LIBRARY name."));
  }
  auto with_line = [](const KernelFile& f) {
    std::string text = "#line 1 " + quoted(f.path) + "\n" + f.text;
    if (!text.empty() && text.back() != '\n') text += '\n';
    return text;
  };
  KernelLibrarySource out;
  for (const auto& f : e.lib.sources) out.source += with_line(f);
  for (const auto& f : e.lib.headers) out.headers.emplace_back(f.name, with_line(f));
  return out;
}

}  // namespace kiln::ext
