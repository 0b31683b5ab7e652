// Inspection of PTX, cubins (CUDA ELF objects) and fatbins for precompiled_cuda_kernel.
//
// PTX: `.target sm_XY[a]` and each `.entry name(.param ... )` with its parameter types.
// Cubin: the SM architecture in the ELF header's flags (bits 8-15 from ELF ABI version 8 on,
// bits 0-7 before), kernels as function symbols marked as entries (st_other 0x10), and
// their parameter offsets in `.nv.info.<name>` (EIATTR_KPARAM_INFO records, with the
// parameter buffer's size in EIATTR_PARAM_CBANK).
#include "kiln/backend/kernels/precompiled.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "kiln/utils.h"

namespace kiln::kernels {

namespace {

constexpr const char* kTag = "[precompiled_cuda_kernel]";

bool is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '.';
}

// ---------------------------------------------------------------- PTX

// The PTX text without comments (so that commented-out entries do not count).
std::string strip_comments(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      out += '\n';
    } else if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      i = e == std::string::npos ? s.size() : e + 1;
      out += ' ';
    } else if (s[i] != '\0') {
      out += s[i];
    }
  }
  return out;
}

// Bytes of a PTX scalar type (.u64, .f32, .b8, .pred, ...).
size_t ptx_type_size(const std::string& t) {
  if (t == ".pred") return 1;
  if (t.size() < 3) return 0;
  const std::string bits = t.substr(2);
  if (bits == "8") return 1;
  if (bits == "16") return 2;
  if (bits == "32") return 4;
  if (bits == "64") return 8;
  if (t == ".f16x2" || t == ".bf16x2") return 4;
  return 0;
}

struct PtxEntry {
  std::string name;
  std::vector<KernelParam> params;
  bool params_known = true;
};

std::vector<PtxEntry> ptx_entries(const std::string& text) {
  std::vector<PtxEntry> out;
  for (size_t pos = text.find(".entry"); pos != std::string::npos;
       pos = text.find(".entry", pos + 6)) {
    size_t i = pos + 6;
    if (i < text.size() && is_ident(text[i])) continue;  // .entry_something
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
    size_t b = i;
    while (i < text.size() && is_ident(text[i])) ++i;
    PtxEntry e;
    e.name = text.substr(b, i - b);
    if (e.name.empty()) continue;
    size_t open = text.find_first_not_of(" \t\r\n", i);
    if (open != std::string::npos && text[open] == '(') {
      size_t close = text.find(')', open);
      std::string list = text.substr(open + 1, close == std::string::npos ? 0 : close - open - 1);
      size_t offset = 0;
      size_t start = 0;
      while (start < list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        std::string decl = list.substr(start, comma - start);
        start = comma + 1;
        if (decl.find(".param") == std::string::npos) continue;
        // Tokens: .param [.align N] .type [.ptr ...] name[N]
        size_t align = 0, size = 0, count = 1;
        std::vector<std::string> words;
        std::string w;
        for (char c : decl + " ") {
          if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (!w.empty()) words.push_back(w);
            w.clear();
          } else {
            w += c;
          }
        }
        for (size_t k = 0; k < words.size(); ++k) {
          const std::string& t = words[k];
          if (t == ".align" && k + 1 < words.size()) {
            align = std::strtoul(words[k + 1].c_str(), nullptr, 10);
            ++k;
          } else if (t == ".ptr") {
            // .ptr .space .align N: the pointee's alignment, not the parameter's.
            while (k + 1 < words.size() && words[k + 1][0] == '.') {
              if (words[k + 1] == ".align") ++k;
              ++k;
            }
            if (k + 1 < words.size() && std::isdigit(static_cast<unsigned char>(words[k + 1][0])))
              ++k;
          } else if (t[0] == '.' && t != ".param" && size == 0) {
            size = ptx_type_size(t);
          } else if (t[0] != '.') {
            size_t br = t.find('[');
            if (br != std::string::npos) count = std::strtoul(t.c_str() + br + 1, nullptr, 10);
          }
        }
        if (size == 0) {
          e.params_known = false;
          break;
        }
        if (align == 0) align = size;
        offset = (offset + align - 1) / align * align;
        e.params.push_back({offset, size * count});
        offset += size * count;
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

// ---------------------------------------------------------------- ELF (cubin)

template <typename T>
bool read_at(const std::string& b, size_t off, T& v) {
  if (off + sizeof(T) > b.size()) return false;
  std::memcpy(&v, b.data() + off, sizeof(T));
  return true;
}

struct Section {
  uint32_t name, type;
  uint64_t offset, size;
  uint32_t link;
  uint64_t entsize;
};

struct Elf {
  std::vector<Section> sections;
  std::vector<std::string> names;  // section names
  bool ok = false;
};

Elf parse_elf(const std::string& b) {
  Elf e;
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (!read_at(b, 0x28, shoff) || !read_at(b, 0x3a, shentsize) || !read_at(b, 0x3c, shnum) ||
      !read_at(b, 0x3e, shstrndx) || shentsize < 64 || shstrndx >= shnum)
    return e;
  for (uint16_t i = 0; i < shnum; ++i) {
    const size_t o = shoff + static_cast<size_t>(i) * shentsize;
    Section s{};
    if (!read_at(b, o, s.name) || !read_at(b, o + 4, s.type) || !read_at(b, o + 24, s.offset) ||
        !read_at(b, o + 32, s.size) || !read_at(b, o + 40, s.link) ||
        !read_at(b, o + 56, s.entsize))
      return e;
    if (s.offset + s.size > b.size() && s.type != 8) return e;  // 8: NOBITS
    e.sections.push_back(s);
  }
  const Section& strs = e.sections[shstrndx];
  for (const Section& s : e.sections) {
    const size_t o = strs.offset + s.name;
    const size_t end = o < b.size() ? b.find('\0', o) : std::string::npos;
    e.names.push_back(end == std::string::npos ? "" : b.substr(o, end - o));
  }
  e.ok = true;
  return e;
}

std::vector<std::string> elf_entries(const std::string& b, const Elf& e) {
  std::vector<std::string> out;
  for (const Section& s : e.sections) {
    if (s.type != 2 || s.entsize < 24 || s.link >= e.sections.size()) continue;  // SYMTAB
    const Section& strtab = e.sections[s.link];
    for (uint64_t k = 0; k < s.size / s.entsize; ++k) {
      const size_t o = s.offset + k * s.entsize;
      uint32_t name = 0;
      uint8_t info = 0, other = 0;
      if (!read_at(b, o, name) || !read_at(b, o + 4, info) || !read_at(b, o + 5, other)) break;
      // A function marked as a kernel entry.
      if ((info & 0xf) != 2 || !(other & 0x10)) continue;
      const size_t so = strtab.offset + name;
      const size_t end = so < b.size() ? b.find('\0', so) : std::string::npos;
      if (end != std::string::npos) out.push_back(b.substr(so, end - so));
    }
  }
  return out;
}

std::vector<KernelParam> elf_params(const std::string& b, const Elf& e, const std::string& name,
                                    bool& known) {
  known = false;
  const std::string want = ".nv.info." + name;
  for (size_t i = 0; i < e.sections.size(); ++i) {
    if (e.names[i] != want) continue;
    const Section& s = e.sections[i];
    std::vector<std::pair<uint16_t, uint16_t>> ordinal_offset;
    uint32_t total = 0;
    bool have_total = false;
    for (size_t p = s.offset; p + 2 <= s.offset + s.size;) {
      const uint8_t fmt = static_cast<uint8_t>(b[p]), attr = static_cast<uint8_t>(b[p + 1]);
      size_t payload = p + 2, len = 0;
      if (fmt == 4) {  // EIFMT_SVAL: u16 size, then the value
        uint16_t n = 0;
        if (!read_at(b, p + 2, n)) return {};
        payload = p + 4, len = n;
      } else if (fmt == 2 || fmt == 3) {  // EIFMT_BVAL, EIFMT_HVAL
        len = 2;
      } else if (fmt != 1) {  // EIFMT_NVAL has no value
        return {};
      }
      if (attr == 0x17 && len >= 12) {  // EIATTR_KPARAM_INFO
        uint16_t ordinal = 0, offset = 0;
        read_at(b, payload + 4, ordinal);
        read_at(b, payload + 6, offset);
        ordinal_offset.emplace_back(ordinal, offset);
      } else if (attr == 0x0a && len >= 8) {  // EIATTR_PARAM_CBANK: symbol, offset, size
        uint16_t size = 0;
        read_at(b, payload + 6, size);
        total = size, have_total = true;
      }
      p = payload + len;
    }
    std::sort(ordinal_offset.begin(), ordinal_offset.end());
    std::vector<KernelParam> out;
    for (size_t k = 0; k < ordinal_offset.size(); ++k) {
      const size_t off = ordinal_offset[k].second;
      const size_t next = k + 1 < ordinal_offset.size() ? ordinal_offset[k + 1].second : total;
      out.push_back({off, next > off ? next - off : 0});
    }
    known = have_total || ordinal_offset.empty();
    return out;
  }
  return {};
}

}  // namespace

const char* image_kind_name(PrecompiledImage::Kind k) {
  switch (k) {
    case PrecompiledImage::Kind::ptx:
      return "PTX";
    case PrecompiledImage::Kind::cubin:
      return "cubin";
    case PrecompiledImage::Kind::fatbin:
      return "fatbin";
  }
  return "image";
}

PrecompiledImage inspect_image(const std::string& bytes) {
  PrecompiledImage img;
  if (bytes.size() >= 4 && static_cast<uint8_t>(bytes[0]) == 0x7f && bytes[1] == 'E' &&
      bytes[2] == 'L' && bytes[3] == 'F') {
    uint16_t machine = 0;
    uint32_t flags = 0;
    if (bytes.size() < 64 || bytes[4] != 2 || !read_at(bytes, 18, machine) ||
        !read_at(bytes, 48, flags)) {
      throw std::invalid_argument(msg(kTag, " The compiled source is an ELF file but not a "
                                            "64-bit one; expected a cubin."));
    }
    if (machine != 190) {  // EM_CUDA
      throw std::invalid_argument(msg(kTag, " The compiled source is an ELF file for machine ",
                                      machine, ", not a CUDA cubin (machine 190)."));
    }
    img.kind = PrecompiledImage::Kind::cubin;
    const uint8_t abi_version = static_cast<uint8_t>(bytes[8]);
    img.arch = abi_version >= 8 ? static_cast<int>((flags >> 8) & 0xff) : static_cast<int>(flags & 0xff);
    Elf elf = parse_elf(bytes);
    if (!elf.ok) {
      throw std::invalid_argument(msg(kTag, " The cubin is truncated or malformed (",
                                      bytes.size(), " bytes)."));
    }
    img.entries = elf_entries(bytes, elf);
    return img;
  }
  uint32_t magic = 0;
  if (read_at(bytes, 0, magic) && magic == 0xba55ed50u) {
    img.kind = PrecompiledImage::Kind::fatbin;
    return img;
  }
  const std::string text = strip_comments(bytes);
  const size_t target = text.find(".target");
  if (text.find(".version") == std::string::npos || target == std::string::npos) {
    throw std::invalid_argument(
        msg(kTag, " The compiled source is neither PTX (no .version and .target directives), a "
                  "cubin (ELF) nor a fatbin (", bytes.size(), " bytes)."));
  }
  img.kind = PrecompiledImage::Kind::ptx;
  size_t sm = text.find("sm_", target);
  if (sm != std::string::npos && sm < text.find('\n', target)) {
    img.arch = std::atoi(text.c_str() + sm + 3);
    size_t e = sm + 3;
    while (e < text.size() && std::isdigit(static_cast<unsigned char>(text[e]))) ++e;
    img.arch_specific = e < text.size() && (text[e] == 'a' || text[e] == 'f');
  }
  for (const PtxEntry& e : ptx_entries(text)) img.entries.push_back(e.name);
  return img;
}

std::vector<KernelParam> kernel_params(const std::string& bytes, const PrecompiledImage& image,
                                       const std::string& name, bool& known) {
  known = false;
  if (image.kind == PrecompiledImage::Kind::ptx) {
    for (const PtxEntry& e : ptx_entries(strip_comments(bytes))) {
      if (e.name == name) {
        known = e.params_known;
        return e.params;
      }
    }
    return {};
  }
  if (image.kind == PrecompiledImage::Kind::cubin) {
    Elf elf = parse_elf(bytes);
    if (elf.ok) return elf_params(bytes, elf, name, known);
  }
  return {};
}

std::string arch_mismatch(const PrecompiledImage& image, int device_arch) {
  if (image.arch == 0 || device_arch == 0) return "";
  const std::string dev = msg("sm_", device_arch);
  if (image.kind == PrecompiledImage::Kind::cubin) {
    if (image.arch / 10 != device_arch / 10 || image.arch % 10 > device_arch % 10) {
      return msg("the cubin was built for sm_", image.arch,
                 " and a cubin runs only on its own major architecture (with a minor version no "
                 "newer); this GPU is ",
                 dev, ". Compile for ", dev, " or pass PTX");
    }
    return "";
  }
  if (image.arch_specific && image.arch != device_arch) {
    return msg("the PTX targets the architecture-specific sm_", image.arch,
               "a, which runs only on that architecture; this GPU is ", dev);
  }
  if (image.arch > device_arch) {
    return msg("the PTX targets sm_", image.arch, ", newer than this GPU (", dev, ")");
  }
  return "";
}

}  // namespace kiln::kernels
