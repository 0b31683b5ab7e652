// Every primitive has a GPU implementation (issue 4: a CPU primitive is not done until its GPU
// side is). In a CUDA build the throwing stubs of kiln/backend/no_cuda are weak definitions
// that a real eval_gpu in kiln/backend/cuda replaces at link time, so a stub still in use is a
// weak `kiln::X::eval_gpu` symbol in libkiln.so. The test reads the library's dynamic symbol
// table (ELF, no external tools) and lists those. Needs no GPU.
#include <gtest/gtest.h>

#include <cxxabi.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Symbol {
  std::string name;  // demangled
  bool weak;
};

// Path of the loaded libkiln shared object.
std::string kiln_library_path() {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("libkiln.so") != std::string::npos) {
          *static_cast<std::string*>(data) = name;
          return 1;
        }
        return 0;
      },
      &path);
  return path;
}

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(mangled);
}

// The functions a 64-bit ELF shared object defines in its dynamic symbol table.
std::vector<Symbol> defined_functions(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<Symbol> out;
  if (bytes.size() < sizeof(Elf64_Ehdr)) return out;
  const char* base = bytes.data();
  auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
    return out;
  auto* sections = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_DYNSYM) continue;
    const Elf64_Shdr& strtab = sections[sections[i].sh_link];
    auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sections[i].sh_offset);
    const size_t count = sections[i].sh_size / sizeof(Elf64_Sym);
    for (size_t k = 0; k < count; ++k) {
      const Elf64_Sym& s = syms[k];
      if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) != STT_FUNC) continue;
      const char* name = base + strtab.sh_offset + s.st_name;
      out.push_back({demangle(name), ELF64_ST_BIND(s.st_info) == STB_WEAK});
    }
  }
  return out;
}

// "Foo" for "kiln::Foo::eval_gpu(...)", else "".
std::string primitive_of(const std::string& demangled) {
  const std::string tail = "::eval_gpu(";
  const size_t at = demangled.find(tail);
  if (!demangled.starts_with("kiln::") || at == std::string::npos) return "";
  return demangled.substr(6, at - 6);
}

}  // namespace

TEST(GpuKernels, EveryPrimitiveHasEvalGpu) {
#ifndef KILN_WITH_CUDA
  GTEST_SKIP() << "kiln was built without CUDA: every eval_gpu is the throwing stub";
#else
  const std::string path = kiln_library_path();
  ASSERT_FALSE(path.empty()) << "libkiln.so is not loaded";
  const auto symbols = defined_functions(path);
  std::vector<std::string> stubs, real;
  for (const auto& s : symbols) {
    const std::string prim = primitive_of(s.name);
    // The base class's inline forwarding overload is weak as every inline function is.
    if (prim.empty() || prim == "UnaryPrimitive") continue;
    (s.weak ? stubs : real).push_back(prim);
  }
  std::sort(stubs.begin(), stubs.end());
  // The scan works: the GPU primitives of every family are found as strong definitions.
  for (const char* p : {"Reduce", "Matmul", "RandomBits", "Gather", "Exp", "Add"}) {
    EXPECT_NE(std::find(real.begin(), real.end(), p), real.end())
        << p << "::eval_gpu is not a strong definition in " << path;
  }
  std::string list;
  for (const auto& s : stubs) list += "  " + s + "::eval_gpu\n";
  EXPECT_TRUE(stubs.empty()) << stubs.size()
                             << " primitives still use the throwing stub of kiln/backend/no_cuda:\n"
                             << list;
#endif
}
