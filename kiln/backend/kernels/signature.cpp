// Source generation for custom kernels: which parameters a body uses, the Metal keyword
// rewriting, and the generated translation unit for either target (see signature.h).
#include "kiln/backend/kernels/signature.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string_view>

#include "kiln/backend/kernels/embedded.h"
#include "kiln/utils.h"

namespace kiln::kernels {

namespace {

// ---------------------------------------------------------------- a small C++ lexer

enum class Tok { identifier, number, string, comment, space, punct, directive };

struct Token {
  Tok kind;
  size_t begin, end;  // byte range in the text
};

bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool ident_char(char c) {
  return ident_start(c) || (c >= '0' && c <= '9');
}

// Splits `s` into tokens, enough to find identifiers outside comments and literals and to
// rewrite some of them. A preprocessor directive is one `directive` token when it is an
// #include or #pragma (rewritten as a whole), else lexed as ordinary tokens.
std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0, n = s.size();
  bool line_start = true;
  auto push = [&](Tok k, size_t b, size_t e) { out.push_back({k, b, e}); };
  while (i < n) {
    char c = s[i];
    size_t b = i;
    if (c == '\n') {
      ++i;
      line_start = true;
      push(Tok::space, b, i);
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v'))
        ++i;
      push(Tok::space, b, i);
      continue;
    }
    if (c == '#' && line_start) {
      size_t j = i + 1;
      while (j < n && (s[j] == ' ' || s[j] == '\t')) ++j;
      size_t w = j;
      while (w < n && ident_char(s[w])) ++w;
      std::string_view word = s.substr(j, w - j);
      if (word == "include" || word == "pragma") {
        // The whole directive, continuation lines included, up to (not with) its newline.
        size_t e = i;
        while (e < n && s[e] != '\n') {
          if (s[e] == '\\' && e + 1 < n && s[e + 1] == '\n') ++e;
          ++e;
        }
        push(Tok::directive, b, e);
        i = e;
        line_start = false;
        continue;
      }
    }
    line_start = false;
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
      push(Tok::comment, b, i);
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      i = e == std::string_view::npos ? n : e + 2;
      push(Tok::comment, b, i);
    } else if (c == 'R' && i + 1 < n && s[i + 1] == '"') {
      // Raw string R"delim( ... )delim"
      size_t open = s.find('(', i + 2);
      if (open == std::string_view::npos) {
        i = n;
      } else {
        std::string close = ")" + std::string(s.substr(i + 2, open - i - 2)) + "\"";
        size_t e = s.find(close, open + 1);
        i = e == std::string_view::npos ? n : e + close.size();
      }
      push(Tok::string, b, i);
    } else if (ident_start(c)) {
      while (i < n && ident_char(s[i])) ++i;
      push(Tok::identifier, b, i);
    } else if ((c >= '0' && c <= '9') ||
               (c == '.' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')) {
      ++i;
      while (i < n) {
        char d = s[i];
        if (ident_char(d) || d == '.' || d == '\'') {
          ++i;
        } else if ((d == '+' || d == '-') &&
                   (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P')) {
          ++i;
        } else {
          break;
        }
      }
      push(Tok::number, b, i);
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < n && s[i] != c && s[i] != '\n') i += s[i] == '\\' ? 2 : 1;
      i = std::min(n, i + 1);
      push(Tok::string, b, i);
    } else {
      ++i;
      push(Tok::punct, b, i);
    }
  }
  return out;
}

// The identifiers of `s`, outside comments and literals.
std::set<std::string, std::less<>> identifiers(std::string_view s) {
  std::set<std::string, std::less<>> ids;
  for (const Token& t : lex(s))
    if (t.kind == Tok::identifier) ids.emplace(s.substr(t.begin, t.end - t.begin));
  return ids;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !ident_start(s[0])) return false;
  return std::all_of(s.begin(), s.end(), ident_char);
}

// ---------------------------------------------------------------- Metal keyword rewriting

// Rewrites `#pragma clang loop unroll(...)` for NVRTC and the host compiler; "" drops it.
std::string rewrite_loop_pragma(std::string_view text) {
  auto arg = [&](std::string_view key) -> std::string {
    size_t p = text.find(key);
    if (p == std::string_view::npos) return "-";
    size_t open = p + key.size(), close = text.find(')', open);
    return std::string(text.substr(open, close == std::string_view::npos ? 0 : close - open));
  };
  std::string count = arg("unroll_count(");
  if (count != "-") return "unroll " + count;
  std::string mode = arg("unroll(");
  if (mode == "disable") return "unroll 1";
  if (mode != "-") return "unroll";
  return "";
}

// Metal's half and bfloat literals (1.5h, 0.25bf) as C++ expressions.
std::string rewrite_metal_literal(std::string_view t) {
  const bool hex = t.size() > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
  std::string_view num;
  const char* type = nullptr;
  if (!hex && t.size() > 2 && (t.ends_with("bf") || t.ends_with("BF"))) {
    num = t.substr(0, t.size() - 2), type = "::metal::bfloat";
  } else if (!hex && t.size() > 1 && (t.back() == 'h' || t.back() == 'H')) {
    num = t.substr(0, t.size() - 1), type = "::metal::half";
  } else {
    return std::string(t);
  }
  std::string f(num);
  if (f.find_first_of(".eE") == std::string::npos) f += ".0";
  return std::string(type) + "(" + f + "f)";
}

// Metal's address-space keywords become what CUDA C++ (and the CPU prelude) understand:
// `device` and `thread` go, `constant` is `const`, and `threadgroup` is `__shared__` on a
// declaration of threadgroup storage but goes on a pointer or reference to it. Line
// structure is kept, so #line numbers stay right.
std::string rewrite_metal(std::string_view s) {
  std::vector<Token> toks = lex(s);
  auto text = [&](size_t i) { return s.substr(toks[i].begin, toks[i].end - toks[i].begin); };
  auto significant = [&](size_t i) {
    return toks[i].kind != Tok::space && toks[i].kind != Tok::comment;
  };
  auto prev_sig = [&](size_t i) -> long {
    for (long j = static_cast<long>(i) - 1; j >= 0; --j)
      if (significant(j)) return j;
    return -1;
  };
  auto next_sig = [&](size_t i) -> size_t {
    for (size_t j = i + 1; j < toks.size(); ++j)
      if (significant(j)) return j;
    return toks.size();
  };
  // A member (`a.device`) or qualified name (`x::thread`) is not a keyword.
  auto is_keyword_use = [&](size_t i) {
    long p = prev_sig(i);
    if (p < 0) return true;
    std::string_view t = text(p);
    if (t == ".") return false;
    if (t == ">" && p > 0 && text(p - 1) == "-") return false;
    if (t == ":" && p > 0 && text(p - 1) == ":") return false;
    return true;
  };
  // After `threadgroup`: a `*` or `&` before the declarator ends means a pointer or a
  // reference (including casts), anything else declares storage.
  auto declares_storage = [&](size_t i) {
    int angle = 0;
    for (size_t j = i + 1; j < toks.size(); ++j) {
      if (toks[j].kind != Tok::punct) continue;
      char c = s[toks[j].begin];
      if (c == '<') ++angle;
      if (c == '>') --angle;
      if (c == '*' || c == '&') return false;
      if (c == ';' || c == '[' || c == '=' || c == '{' || c == ')' || c == '(' ||
          (c == ',' && angle <= 0))
        return true;
    }
    return true;
  };

  std::string out;
  out.reserve(s.size() + 64);
  int parens = 0;  // inside parentheses (parameters, casts) `threadgroup` never declares storage
  for (size_t i = 0; i < toks.size(); ++i) {
    std::string_view t = text(i);
    if (toks[i].kind == Tok::punct) parens += t == "(" ? 1 : t == ")" ? -1 : 0;
    if (toks[i].kind == Tok::directive) {
      std::string line(t);
      if (line.find("clang") != std::string::npos && line.find("loop") != std::string::npos &&
          line.find("pragma") != std::string::npos) {
        std::string p = rewrite_loop_pragma(t);
        out += p.empty() ? "" : "#pragma " + p;
      } else if (line.find("include") != std::string::npos &&
                 (line.find("<metal_") != std::string::npos ||
                  line.find("mlx/backend/metal/kernels/") != std::string::npos)) {
        // Metal's and MLX's own headers: the prelude already has what they declare.
      } else {
        out += line;
      }
      // Keep continuation newlines so later lines keep their numbers.
      out.append(std::count(line.begin(), line.end(), '\n'), '\n');
      continue;
    }
    if (toks[i].kind == Tok::string && t.find("clang loop") != std::string_view::npos) {
      long p = prev_sig(i);
      long pp = p >= 0 ? prev_sig(p) : -1;
      if (p >= 0 && text(p) == "(" && pp >= 0 && text(pp) == "_Pragma") {
        std::string r = rewrite_loop_pragma(t);
        out += "\"" + (r.empty() ? std::string("message(\"\")") : r) + "\"";
        continue;
      }
    }
    if (toks[i].kind == Tok::identifier && is_keyword_use(i)) {
      if (t == "device" || t == "thread") continue;
      if (t == "constant") {
        long p = prev_sig(i);
        size_t nx = next_sig(i);
        bool next_const = nx < toks.size() && text(nx) == "const";
        bool prev_const = p >= 0 && text(p) == "const";
        if (!next_const && !prev_const) out += "const";
        continue;
      }
      if (t == "threadgroup") {
        if (parens <= 0 && declares_storage(i)) out += "__shared__";
        continue;
      }
    }
    if (toks[i].kind == Tok::number) {
      out += rewrite_metal_literal(t);
      continue;
    }
    // os_log's log*("format", ...) prints one line: the newline joins the literal.
    if (toks[i].kind == Tok::string && t.size() >= 2 && t.front() == '"' && t.back() == '"') {
      long p = prev_sig(i);
      long f = p >= 0 ? prev_sig(p) : -1;
      long dot = f >= 0 ? prev_sig(f) : -1;
      if (p >= 0 && text(p) == "(" && f >= 0 &&
          (text(f) == "log" || text(f) == "log_info" || text(f) == "log_debug" ||
           text(f) == "log_error" || text(f) == "log_fault") &&
          dot >= 0 && (text(dot) == "." || text(dot) == ">")) {
        out += std::string(t.substr(0, t.size() - 1)) + "\\n\"";
        continue;
      }
    }
    out += t;
  }
  return out;
}

// Whether a Metal text names a half type (or writes a half or bfloat literal).
bool mentions_half_types(std::string_view s) {
  for (const Token& t : lex(s)) {
    std::string_view w = s.substr(t.begin, t.end - t.begin);
    if (t.kind == Tok::identifier &&
        (w.find("half") != w.npos || w.find("bfloat") != w.npos || w == "float16_t"))
      return true;
    if (t.kind == Tok::number && rewrite_metal_literal(w) != w) return true;
  }
  return false;
}

// ---------------------------------------------------------------- headers on demand

// Parts of the GPU preludes that few kernels use come in only when the body or header names
// them, which keeps NVRTC's parsing (most of a small kernel's compile time) small. Each such
// header says what brings it in on a line "// kiln-on-demand: name prefix* *infix* ...".
struct OnDemandHeader {
  std::string path;
  std::vector<std::string> patterns;
  int kind;  // 0: needs the Metal layer (Metal bodies, CUDA bodies with the full prelude);
             // 1: the CUDA flavour's full prelude; 2: any CUDA prelude
};

const std::vector<OnDemandHeader>& on_demand_headers() {
  static const std::vector<OnDemandHeader> headers = [] {
    std::vector<OnDemandHeader> out;
    const std::pair<const char*, int> list[] = {
        {"kiln/backend/kernels/metal/math_more.h", 0}, {"kiln/backend/kernels/metal/packed.h", 0},
        {"kiln/backend/kernels/metal/gpu_quad.h", 0},  {"kiln/backend/kernels/metal/logging.h", 0},
        {"kiln/backend/kernels/metal/type_traits.h", 0},
        {"kiln/backend/kernels/cuda/half.h", 1},       {"kiln/backend/kernels/cuda/complex.h", 1},
        {"kiln/backend/kernels/cuda/half_limits.h", 1}, {"kiln/backend/kernels/cuda/tuple.h", 2}};
    for (const auto& [path, kind] : list) {
      OnDemandHeader h{path, {}, kind};
      if (const EmbeddedHeader* e = find_embedded_header(path)) {
        const std::string_view t = e->text;
        const size_t at = t.find("// kiln-on-demand:");
        if (at != std::string_view::npos) {
          std::string line(t.substr(at + 18, t.find('\n', at) - at - 18));
          std::string w;
          for (char c : line + " ") {
            if (c == ' ') {
              if (!w.empty()) h.patterns.push_back(w);
              w.clear();
            } else {
              w += c;
            }
          }
        }
      }
      out.push_back(std::move(h));
    }
    return out;
  }();
  return headers;
}

bool matches(std::string_view w, const std::string& pattern) {
  const bool lead = pattern.front() == '*', trail = pattern.back() == '*';
  if (lead && trail && pattern.size() > 2)
    return w.find(std::string_view(pattern).substr(1, pattern.size() - 2)) != std::string_view::npos;
  if (trail) return w.starts_with(std::string_view(pattern).substr(0, pattern.size() - 1));
  if (lead) return w.ends_with(std::string_view(pattern).substr(1));
  return w == pattern;
}

// ---------------------------------------------------------------- unsupported Metal features

// Metal types a compute body may name that kiln cannot offer (resources other than buffers,
// render and ray-tracing objects), by feature. A name counts where it is used as a type:
// followed by `<` (texture2d<float>) or by a declarator (sampler s).
struct UnsupportedFeature {
  const char* feature;
  const char* why;
};
const UnsupportedFeature* unsupported_metal_name(std::string_view w) {
  static const UnsupportedFeature textures{
      "textures", "custom kernels take buffers (arrays) only; pass the texels as an array"};
  static const UnsupportedFeature samplers{
      "samplers", "custom kernels take buffers (arrays) only; filter by hand from an array"};
  static const UnsupportedFeature imageblocks{
      "imageblocks and raster order groups",
      "they belong to tile shading on Apple GPUs; use threadgroup memory"};
  static const UnsupportedFeature raytracing{
      "ray tracing (acceleration structures, intersectors, intersection functions)",
      "NVIDIA's ray tracing cores are not reachable from CUDA C++ kernels"};
  static const UnsupportedFeature tables{
      "function tables and indirect command buffers",
      "custom kernels are single functions compiled from source"};
  static const UnsupportedFeature render{
      "render and mesh pipeline objects", "custom kernels are compute kernels"};
  if (w.starts_with("texture") &&
      (w == "texture_buffer" || w.find("1d") != w.npos || w.find("2d") != w.npos ||
       w.find("3d") != w.npos || w.find("cube") != w.npos))
    return &textures;
  if (w.starts_with("depth") && (w.find("2d") != w.npos || w.find("cube") != w.npos))
    return &textures;
  if (w == "sampler") return &samplers;
  if (w == "imageblock" || w == "raster_order_group") return &imageblocks;
  if (w == "acceleration_structure" || w == "primitive_acceleration_structure" ||
      w == "instance_acceleration_structure" || w == "intersector" ||
      w == "intersection_function_table" || w == "intersection_result")
    return &raytracing;
  if (w == "visible_function_table" || w == "indirect_command_buffer" ||
      w == "render_pipeline_state" || w == "compute_pipeline_state")
    return &tables;
  if (w == "mesh_grid_properties" || w == "patch_control_point" || w == "render_command" ||
      w == "compute_command")
    return &render;
  return nullptr;
}

// Throws KernelCompileError when `text` ("source" or "header") uses a Metal feature kiln does
// not support, naming it, its line, and why.
void check_metal_features(const KernelSpec& spec, std::string_view text, const char* part) {
  std::vector<Token> toks = lex(text);
  auto sig = [&](size_t i) {
    for (size_t j = i + 1; j < toks.size(); ++j)
      if (toks[j].kind != Tok::space && toks[j].kind != Tok::comment) return j;
    return toks.size();
  };
  for (size_t i = 0; i < toks.size(); ++i) {
    if (toks[i].kind != Tok::identifier) continue;
    std::string_view w = text.substr(toks[i].begin, toks[i].end - toks[i].begin);
    const UnsupportedFeature* f = unsupported_metal_name(w);
    if (!f) continue;
    const size_t n = sig(i);
    const bool as_type =
        n < toks.size() && (toks[n].kind == Tok::identifier ||
                            (toks[n].kind == Tok::punct && text[toks[n].begin] == '<'));
    if (!as_type) continue;
    const size_t line = 1 + std::count(text.begin(), text.begin() + toks[i].begin, '\n');
    throw fast::KernelCompileError(
        msg("[metal_kernel] Kernel '", spec.name, "' uses Metal ", f->feature, " (`", w, "` at ",
            part, " line ", line, "), which kiln does not support: ", f->why, "."));
  }
}

// ---------------------------------------------------------------- Metal's conditional operator

// Metal's usual arithmetic conversions apply to `c ? x : y`: with a half (or bfloat) x and a
// float or int y, the result is float (int: half), where C++ finds the class type half
// convertible both ways and rejects the expression. Each operand is cast to the type Metal
// would give the expression (metal::detail::tern_cast, a no-op unless a half type meets
// another type); the middle operand ends at its `:`, the last one where the conditional
// expression ends (a `,`, `;`, closing bracket, an enclosing conditional's `:`, or the end
// of a directive line). A conditional with `<` or `>` in its last operand is left alone:
// it may close a template argument list.
std::string rewrite_conditionals(std::string_view s) {
  std::vector<Token> toks = lex(s);
  auto text = [&](size_t i) { return s.substr(toks[i].begin, toks[i].end - toks[i].begin); };
  auto is = [&](size_t i, char c) {
    return toks[i].kind == Tok::punct && s[toks[i].begin] == c;
  };
  // A ':' that is half of '::'.
  auto scope_colon = [&](size_t i) {
    return (i > 0 && is(i - 1, ':')) || (i + 1 < toks.size() && is(i + 1, ':'));
  };
  // Directive lines end at their newline (the lexer keeps #define bodies as tokens).
  std::vector<char> in_directive(toks.size(), 0);
  for (size_t i = 0, line_start = 1; i < toks.size(); ++i) {
    if (is(i, '#') && line_start) {
      size_t j = i;
      while (j < toks.size() && !(toks[j].kind == Tok::space && text(j) == "\n")) {
        in_directive[j] = 1;
        ++j;
      }
      i = j;
      line_start = 1;
      continue;
    }
    if (toks[i].kind == Tok::space && text(i) == "\n")
      line_start = 1;
    else if (toks[i].kind != Tok::space && toks[i].kind != Tok::comment)
      line_start = 0;
  }
  // The end (exclusive) of the middle operand starting at `b`, or npos.
  auto middle_end = [&](size_t b) -> size_t {
    int depth = 0, nested = 0;
    for (size_t j = b; j < toks.size(); ++j) {
      if (in_directive[j] != in_directive[b]) return std::string::npos;
      if (is(j, '(') || is(j, '[') || is(j, '{')) ++depth;
      if (is(j, ')') || is(j, ']') || is(j, '}')) {
        if (--depth < 0) return std::string::npos;
      }
      if (depth == 0 && (is(j, ';'))) return std::string::npos;
      if (depth == 0 && is(j, '?')) ++nested;
      if (depth == 0 && is(j, ':') && !scope_colon(j)) {
        if (nested == 0) return j;
        --nested;
      }
    }
    return std::string::npos;
  };
  // The end (exclusive) of the last operand starting at `c`; `safe` turns false on < or >.
  auto last_end = [&](size_t c, bool& safe) -> size_t {
    int depth = 0, nested = 0;
    size_t j = c;
    for (; j < toks.size(); ++j) {
      if (in_directive[c] && !in_directive[j]) break;
      if (is(j, '(') || is(j, '[') || is(j, '{')) ++depth;
      if (is(j, ')') || is(j, ']') || is(j, '}')) {
        if (depth == 0) break;
        --depth;
      }
      if (depth > 0) continue;
      if (is(j, ';') || is(j, ',')) break;
      if (is(j, '<') || is(j, '>')) safe = false;
      if (is(j, '?')) ++nested;
      if (is(j, ':') && !scope_colon(j)) {
        if (nested == 0) break;
        --nested;
      }
    }
    // Trailing spaces and comments stay outside.
    while (j > c && (toks[j - 1].kind == Tok::space || toks[j - 1].kind == Tok::comment)) --j;
    return j;
  };
  // `flat`: for the copies inside decltype, on one line (the #line numbering stays right).
  std::function<std::string(size_t, size_t, bool)> emit = [&](size_t a, size_t b,
                                                             bool flat) -> std::string {
    std::string out;
    for (size_t i = a; i < b; ++i) {
      if (!is(i, '?')) {
        if (flat && (toks[i].kind == Tok::comment || toks[i].kind == Tok::space))
          out += ' ';
        else
          out += text(i);
        continue;
      }
      size_t m_end = middle_end(i + 1);
      bool safe = true;
      size_t l_end = m_end == std::string::npos ? m_end : last_end(m_end + 1, safe);
      if (m_end == std::string::npos || l_end > b || !safe || l_end <= m_end + 1) {
        out += text(i);
        continue;
      }
      const std::string types = "<decltype((" + emit(i + 1, m_end, true) + ")), decltype((" +
                                emit(m_end + 1, l_end, true) + "))>";
      out += "? ::metal::detail::tern_cast" + types + "((" + emit(i + 1, m_end, flat) +
             ")) : ::metal::detail::tern_cast" + types + "((" + emit(m_end + 1, l_end, flat) +
             "))";
      i = l_end - 1;
    }
    return out;
  };
  return emit(0, toks.size(), false);
}

// ---------------------------------------------------------------- types and names

// The C++ spelling of a dtype in generated code (inside namespace kiln_user).
std::string type_name(Dtype d) {
  switch (d.val) {
    case Dtype::Val::bool_:
      return "bool";
    case Dtype::Val::uint8:
      return "uint8_t";
    case Dtype::Val::uint16:
      return "uint16_t";
    case Dtype::Val::uint32:
      return "uint32_t";
    case Dtype::Val::uint64:
      return "uint64_t";
    case Dtype::Val::int8:
      return "int8_t";
    case Dtype::Val::int16:
      return "int16_t";
    case Dtype::Val::int32:
      return "int32_t";
    case Dtype::Val::int64:
      return "int64_t";
    case Dtype::Val::float16:
      return "float16_t";
    case Dtype::Val::bfloat16:
      return "bfloat16_t";
    case Dtype::Val::float32:
      return "float";
    case Dtype::Val::float64:
      return "double";
    case Dtype::Val::complex64:
      return "complex64_t";
  }
  return "void";
}

// The same type named from the global namespace (for name expressions).
std::string qualified_type_name(Dtype d) {
  std::string t = type_name(d);
  if (d == float16 || d == bfloat16 || d == complex64) return "kiln_user::" + t;
  return t;
}

std::string template_value(const fast::TemplateArg& v, bool qualified) {
  if (const int* i = std::get_if<int>(&v)) {
    // INT_MIN as a literal would be the negation of a too-large int.
    if (*i == -2147483647 - 1) return "(-2147483647 - 1)";
    return std::to_string(*i);
  }
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  Dtype d = std::get<Dtype>(v);
  return qualified ? qualified_type_name(d) : type_name(d);
}

const char* template_kind(const fast::TemplateArg& v) {
  if (std::holds_alternative<int>(v)) return "int";
  if (std::holds_alternative<bool>(v)) return "bool";
  return "typename";
}

const char* op_tag(fast::KernelFlavour f) {
  return f == fast::KernelFlavour::metal ? "metal_kernel" : "cuda_kernel";
}

// Content hash naming modules: two FNV-1a lanes with different offsets (128 bits). Only a
// name: the JIT's cache key is a SHA-256 over the same source.
std::string content_hash(std::string_view s) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (unsigned char c : s) {
    a = (a ^ c) * 0x100000001b3ull;
    b = (b ^ c) * 0x100000001b3ull;
    b ^= b >> 29;
  }
  static const char* hex = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[i] = hex[(a >> (60 - 4 * i)) & 15];
    out[16 + i] = hex[(b >> (60 - 4 * i)) & 15];
  }
  return out;
}

std::string ensure_newline(std::string s) {
  if (!s.empty() && s.back() != '\n') s += '\n';
  return s;
}

size_t count_lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

// Words that mark block synchronization or warp collectives (they make the CPU path run
// threads as fibers).
bool is_barrier_word(std::string_view w) {
  return w == "threadgroup_barrier" || w == "__syncthreads" || w == "__syncthreads_count" ||
         w == "__syncthreads_and" || w == "__syncthreads_or" || w == "__barrier_sync";
}
bool is_warp_word(std::string_view w) {
  static const char* exact[] = {"__ballot_sync",
                                "__any_sync",
                                "__all_sync",
                                "__activemask",
                                "__syncwarp",
                                "__match_any_sync",
                                "__match_all_sync",
                                "__uni_sync",
                                "simdgroup_barrier",
                                "simdgroup_load",
                                "simdgroup_store",
                                "simdgroup_multiply",
                                "simdgroup_multiply_accumulate"};
  for (const char* e : exact)
    if (w == e) return true;
  return w.starts_with("simd_") || w.starts_with("quad_") || w.starts_with("__shfl") ||
         w.starts_with("__reduce_");
}

// Names that only the CUDA flavour's full prelude (Metal layer, half and complex types)
// provides; a kernel that uses none of them, and no half or complex dtype, gets the light
// prelude.
bool is_metal_layer_word(std::string_view w) {
  static const char* exact[] = {"metal",        "float16_t",      "bfloat16_t",
                                "complex64_t",  "elem_to_loc_2",  "elem_to_loc_3",
                                "elem_to_loc_2_nd", "elem_to_loc_3_nd", "half",
                                "half2",        "nv_bfloat16",    "nv_bfloat162",
                                "hexp",         "hexp2",          "hlog",
                                "hlog2",        "hlog10",         "hsqrt",
                                "hrsqrt",       "hrcp",           "hsin",
                                "hcos",         "hfloor",         "hceil",
                                "htrunc",       "hrint",          "complex"};
  for (const char* e : exact)
    if (w == e) return true;
  // cuda_fp16.h / cuda_bf16.h names: __half, __hadd, __float2half, __nv_bfloat16, ...
  return w.starts_with("__h") || w.starts_with("__nv_bfloat") || w.find("half") != w.npos ||
         w.find("bfloat16") != w.npos;
}

// cooperative_groups' names that make threads meet (barriers, shuffles, votes): a CPU kernel
// that uses them runs its threads as fibers. this_grid().thread_rank() alone does not.
bool is_cg_collective_word(std::string_view w) {
  static const char* exact[] = {"this_thread_block", "thread_block",     "tiled_partition",
                                "thread_block_tile", "coalesced_threads", "coalesced_group",
                                "thread_group",      "sync",              "reduce",
                                "inclusive_scan",    "exclusive_scan",    "memcpy_async",
                                "wait",              "wait_prior"};
  for (const char* e : exact)
    if (w == e) return true;
  return false;
}

// Headers a CUDA body may include whose declarations kiln's CUDA prelude already provides
// (cooperative groups, libcu++, half types, MLX's device utilities): their #include goes.
bool is_provided_cuda_include(std::string_view line) {
  for (std::string_view h : {"<cooperative_groups", "\"cooperative_groups", "<cuda/std/",
                             "\"cuda/std/", "<cuda_fp16.h>", "<cuda_bf16.h>", "\"cuda_fp16.h\"",
                             "\"cuda_bf16.h\"", "mlx/backend/cuda/device/"}) {
    if (line.find(h) != std::string_view::npos) return true;
  }
  return false;
}

// What NVRTC's -minimal leaves out: the CUDA runtime's device API and types (cuda*), texture
// and surface functions; an included header may need any of them.
bool is_runtime_word(std::string_view w) {
  if (w.starts_with("cuda")) return true;
  for (std::string_view p : {"tex", "surf"}) {
    if (!w.starts_with(p)) continue;
    std::string_view rest = w.substr(p.size());
    if (rest.starts_with("1D") || rest.starts_with("2D") || rest.starts_with("3D") ||
        rest.starts_with("Cubemap"))
      return true;
  }
  return false;
}
bool has_include(std::string_view s) {
  for (const Token& t : lex(s)) {
    if (t.kind != Tok::directive) continue;
    std::string_view d = s.substr(t.begin + 1, t.end - t.begin - 1);
    d.remove_prefix(std::min(d.find_first_not_of(" \t"), d.size()));
    if (d.starts_with("include") && !is_provided_cuda_include(d) &&
        d.find("<metal_") == std::string_view::npos &&
        d.find("mlx/backend/metal/kernels/") == std::string_view::npos)
      return true;
  }
  return false;
}

// The CUDA flavour's source with the #include lines of headers kiln provides dropped (their
// newlines kept, so #line numbers stay right).
std::string drop_provided_includes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t done = 0;
  for (const Token& t : lex(s)) {
    if (t.kind != Tok::directive) continue;
    std::string_view line = s.substr(t.begin, t.end - t.begin);
    if (line.find("include") == std::string_view::npos || !is_provided_cuda_include(line)) continue;
    out.append(s.substr(done, t.begin - done));
    out.append(std::count(line.begin(), line.end(), '\n'), '\n');
    done = t.end;
  }
  out.append(s.substr(done));
  return out;
}

bool is_half_or_complex(Dtype d) {
  return d == float16 || d == bfloat16 || d == complex64;
}

constexpr int kMaxNdim = fast::kMaxNdim;

}  // namespace

// ---------------------------------------------------------------- public functions

const std::vector<std::pair<std::string, std::string>>& metal_attributes() {
  static const std::vector<std::pair<std::string, std::string>> attrs = {
      {"dispatch_quadgroups_per_threadgroup", "uint"},
      {"dispatch_simdgroups_per_threadgroup", "uint"},
      {"dispatch_threads_per_threadgroup", "uint3"},
      {"grid_origin", "uint3"},
      {"grid_size", "uint3"},
      {"quadgroup_index_in_threadgroup", "uint"},
      {"quadgroups_per_threadgroup", "uint"},
      {"simdgroup_index_in_threadgroup", "uint"},
      {"simdgroups_per_threadgroup", "uint"},
      {"thread_execution_width", "uint"},
      {"thread_index_in_quadgroup", "uint"},
      {"thread_index_in_simdgroup", "uint"},
      {"thread_index_in_threadgroup", "uint"},
      {"thread_position_in_grid", "uint3"},
      {"thread_position_in_threadgroup", "uint3"},
      {"threadgroup_position_in_grid", "uint3"},
      {"threadgroups_per_grid", "uint3"},
      {"threads_per_grid", "uint3"},
      {"threads_per_simdgroup", "uint"},
      {"threads_per_threadgroup", "uint3"},
  };
  return attrs;
}

void check_spec(const KernelSpec& spec, const char* op) {
  if (!is_identifier(spec.name)) {
    throw std::invalid_argument(msg("[", op, "] The kernel name '", spec.name,
                                    "' must be an identifier (letters, digits, _)."));
  }
  std::set<std::string> seen;
  auto check = [&](const std::string& n, const char* what) {
    if (!is_identifier(n)) {
      throw std::invalid_argument(msg("[", op, "] The ", what, " name '", n, "' of kernel '",
                                      spec.name, "' must be an identifier (letters, digits, _)."));
    }
    if (n.starts_with("kiln_")) {
      throw std::invalid_argument(msg("[", op, "] The ", what, " name '", n, "' of kernel '",
                                      spec.name, "' uses the reserved prefix 'kiln_'."));
    }
    if (!seen.insert(n).second) {
      throw std::invalid_argument(
          msg("[", op, "] The name '", n, "' is used twice in kernel '", spec.name, "'."));
    }
  };
  for (const auto& n : spec.input_names) check(n, "input");
  for (const auto& n : spec.output_names) check(n, "output");
  if (spec.output_names.empty()) {
    throw std::invalid_argument(
        msg("[", op, "] Kernel '", spec.name, "' needs at least one output name."));
  }
  if (spec.shared_memory < 0) {
    throw std::invalid_argument(msg("[", op, "] shared_memory must be >= 0; got ",
                                    spec.shared_memory, " for kernel '", spec.name, "'."));
  }
}

BodyUsage analyze(const KernelSpec& spec) {
  BodyUsage u;
  const auto ids = identifiers(spec.source);
  for (const auto& n : spec.input_names) {
    u.input_shape.push_back(ids.count(n + "_shape") > 0);
    u.input_strides.push_back(ids.count(n + "_strides") > 0);
    u.input_ndim.push_back(ids.count(n + "_ndim") > 0);
  }
  if (spec.flavour == fast::KernelFlavour::metal) {
    for (const auto& [attr, type] : metal_attributes())
      if (ids.count(attr)) u.attributes.push_back(attr);
  }
  bool cg_collectives = false;
  for (const std::string* text : {&spec.source, &spec.header}) {
    for (const auto& w : text == &spec.source ? ids : identifiers(*text)) {
      u.barriers = u.barriers || is_barrier_word(w);
      u.warp_ops = u.warp_ops || is_warp_word(w);
      u.metal_names = u.metal_names || is_metal_layer_word(w);
      u.runtime_names = u.runtime_names || is_runtime_word(w);
      u.cooperative_groups = u.cooperative_groups || w == "cooperative_groups" || w == "cg";
      cg_collectives = cg_collectives || is_cg_collective_word(w);
      u.prints = u.prints || w == "printf" || w == "os_log" || w == "os_log_default";
    }
    u.runtime_names = u.runtime_names || has_include(*text);
  }
  if (spec.flavour != fast::KernelFlavour::cuda) u.cooperative_groups = false;
  if (u.cooperative_groups && cg_collectives) u.barriers = u.warp_ops = true;
  return u;
}

GeneratedKernel generate(const KernelSpec& spec, const KernelInstance& inst, Target target) {
  const char* op = op_tag(spec.flavour);
  const bool metal = spec.flavour == fast::KernelFlavour::metal;
  const size_t nin = spec.input_names.size(), nout = spec.output_names.size();
  if (inst.input_dtypes.size() != nin || inst.input_scalar.size() != nin ||
      inst.output_dtypes.size() != nout) {
    throw std::invalid_argument(msg("[", op, "] Kernel '", spec.name, "' has ", nin, " inputs and ",
                                    nout, " outputs; got ", inst.input_dtypes.size(),
                                    " input dtypes and ", inst.output_dtypes.size(),
                                    " output dtypes."));
  }
  std::set<std::string> names(spec.input_names.begin(), spec.input_names.end());
  names.insert(spec.output_names.begin(), spec.output_names.end());
  for (const auto& [tname, value] : inst.template_args) {
    if (!is_identifier(tname) || tname.starts_with("kiln_")) {
      throw std::invalid_argument(msg("[", op, "] The template argument name '", tname,
                                      "' of kernel '", spec.name,
                                      "' must be an identifier without the prefix 'kiln_'."));
    }
    if (!names.insert(tname).second) {
      throw std::invalid_argument(msg("[", op, "] The template argument name '", tname,
                                      "' of kernel '", spec.name,
                                      "' repeats another template argument, input or output."));
    }
  }

  if (metal) {
    check_metal_features(spec, spec.header, "header");
    check_metal_features(spec, spec.source, "source");
  }

  GeneratedKernel g;
  g.usage = analyze(spec);
  const BodyUsage& u = g.usage;
  const std::string kernel = "custom_kernel_" + spec.name;
  // NVRTC spends most of a small kernel's compile time parsing the Metal layer; a CUDA body
  // that cannot name any of it on the GPU is compiled without it.
  bool light = !metal && target == Target::gpu && !u.metal_names;
  for (Dtype d : inst.input_dtypes) light = light && !is_half_or_complex(d);
  for (Dtype d : inst.output_dtypes) light = light && !is_half_or_complex(d);
  for (const auto& [tname, value] : inst.template_args)
    light = light &&
            !(std::holds_alternative<Dtype>(value) && is_half_or_complex(std::get<Dtype>(value)));
  const std::string flavour_header =
      target == Target::gpu
          ? (metal   ? "kiln/backend/kernels/metal/gpu.h"
             : light ? "kiln/backend/kernels/cuda_gpu_lite.h"
                     : "kiln/backend/kernels/cuda_gpu.h")
          : (metal ? "kiln/backend/kernels/metal/cpu.h" : "kiln/backend/kernels/cuda_cpu.h");

  // Metal bodies: conditionals follow Metal's conversions where a half type may meet another
  // type (the rewrite costs compile time, so only then).
  bool halves = false;
  if (metal) {
    for (Dtype d : inst.input_dtypes) halves = halves || d == float16 || d == bfloat16;
    for (Dtype d : inst.output_dtypes) halves = halves || d == float16 || d == bfloat16;
    for (const auto& [tname, value] : inst.template_args) {
      halves = halves || (std::holds_alternative<Dtype>(value) &&
                          (std::get<Dtype>(value) == float16 || std::get<Dtype>(value) == bfloat16));
    }
    halves = halves || mentions_half_types(spec.source) || mentions_half_types(spec.header);
  }
  auto metal_text = [&](const std::string& t) {
    std::string r = rewrite_metal(t);
    return halves ? rewrite_conditionals(r) : r;
  };

  std::string src;
  src += "// Generated by kiln for the custom kernel '" + spec.name + "' (" +
         (metal ? "Metal" : "CUDA") + " flavour, " + (target == Target::gpu ? "GPU" : "CPU") +
         "): do not edit.\n";
  // The math mode changes the compiler's flags, not the source: naming it here gives each
  // mode its own module name and cache entries.
  if (spec.math_mode != fast::MathMode::safe)
    src += std::string("// math mode: ") + fast::math_mode_name(spec.math_mode) + "\n";
  src += "#include \"" + flavour_header + "\"\n";
  if (u.cooperative_groups) src += "#include \"kiln/backend/kernels/cuda/cg.h\"\n";
  if (target == Target::gpu) {
    // What the body and header name brings in the parts of the prelude they need.
    auto ids = identifiers(spec.source);
    for (const auto& w : identifiers(spec.header)) ids.insert(w);
    bool complex_dtype = false;
    for (Dtype d : inst.input_dtypes) complex_dtype = complex_dtype || d == complex64;
    for (Dtype d : inst.output_dtypes) complex_dtype = complex_dtype || d == complex64;
    for (const auto& [tname, value] : inst.template_args)
      complex_dtype = complex_dtype ||
                      (std::holds_alternative<Dtype>(value) && std::get<Dtype>(value) == complex64);
    for (const OnDemandHeader& h : on_demand_headers()) {
      if ((h.kind != 0 && metal) || (h.kind != 2 && light)) continue;
      bool needed = !metal && complex_dtype && h.path.ends_with("cuda/complex.h");
      for (const auto& w : ids) {
        for (const auto& p : h.patterns) needed = needed || matches(w, p);
        if (needed) break;
      }
      if (needed) src += "#include \"" + h.path + "\"\n";
    }
  }
  src += "\n";
  src += "namespace kiln_user {\n";
  src += metal ? "KILN_METAL_USING\n" : "KILN_CUDA_USING\n";
  if (u.cooperative_groups) src += "namespace cg = cooperative_groups;\n";
  if (!spec.header.empty()) {
    src += "#line 1 \"header\"\n";
    src += ensure_newline(metal ? metal_text(spec.header) : drop_provided_includes(spec.header));
  }
  src += "#line " + std::to_string(count_lines(src) + 2) + " \"generated\"\n";

  // The parameter struct.
  std::string params = "struct alignas(8) kiln_params {\n";
  params += "  uint32_t grid[3];\n  uint32_t threadgroup[3];\n  uint32_t block_offset[3];\n";
  params += "  uint32_t reserved_;\n";
  const std::string maxd = std::to_string(kMaxNdim);
  // MLX's CUDA bodies get shapes and strides as arrays (x_shape.data(), x_shape[i]) that
  // also convert to pointers; Metal bodies get pointers, as in MLX.
  for (size_t i = 0; i < nin; ++i) {
    if (!u.input_strides[i]) continue;
    params += metal ? "  int64_t " + spec.input_names[i] + "_strides[" + maxd + "];\n"
                    : "  kiln_cuda::Strides " + spec.input_names[i] + "_strides;\n";
  }
  for (size_t i = 0; i < nin; ++i) {
    if (!u.input_shape[i]) continue;
    params += metal ? "  int32_t " + spec.input_names[i] + "_shape[" + maxd + "];\n"
                    : "  kiln_cuda::Shape " + spec.input_names[i] + "_shape;\n";
  }
  for (size_t i = 0; i < nin; ++i)
    if (u.input_ndim[i]) params += "  int32_t " + spec.input_names[i] + "_ndim;\n";
  params += "};\n";
  params += "static_assert(sizeof(kiln_params) == " + std::to_string(param_block_size(u)) +
            ", \"kiln_params must match the host's layout\");\n\n";
  src += params;

  // The signature.
  std::string sig;
  if (!inst.template_args.empty()) {
    sig += "template <";
    for (size_t i = 0; i < inst.template_args.size(); ++i) {
      const auto& [tname, value] = inst.template_args[i];
      sig += std::string(i ? ", " : "") + template_kind(value) + " " + tname;
    }
    sig += ">\n";
  }
  sig += "__global__ void " + kernel + "(\n";
  std::string prologue;
  for (size_t i = 0; i < nin; ++i) {
    const std::string& n = spec.input_names[i];
    const std::string t = type_name(inst.input_dtypes[i]);
    if (inst.input_scalar[i]) {
      sig += "    const " + t + "* __restrict__ kiln_in_" + n + ",\n";
      // CUDA: a value that also indexes as MLX's pointer (n[0]); Metal: a reference.
      prologue += metal ? "  const " + t + "& " + n + " = *kiln_in_" + n + ";\n"
                        : "  const kiln_cuda::scalar_input<" + t + "> " + n + "{kiln_in_" + n +
                              "};\n";
    } else {
      sig += "    const " + t + "* __restrict__ " + n + ",\n";
    }
  }
  for (size_t i = 0; i < nout; ++i) {
    const std::string t = type_name(inst.output_dtypes[i]);
    if (spec.atomic_outputs)
      sig += "    " + (metal ? "atomic<" + t + ">" : t) + "* " + spec.output_names[i] + ",\n";
    else
      sig += "    " + t + "* __restrict__ " + spec.output_names[i] + ",\n";
  }
  sig += "    const __grid_constant__ kiln_params kiln_p) {\n";
  for (const auto& attr : u.attributes) {
    for (const auto& [name, type] : metal_attributes())
      if (name == attr)
        prologue += "  " + type + " " + attr + " = kiln_attr::" + attr + "(kiln_p);\n";
  }
  for (size_t i = 0; i < nin; ++i) {
    const std::string& n = spec.input_names[i];
    if (u.input_shape[i]) {
      prologue += metal ? "  const int32_t* " + n + "_shape = kiln_p." + n + "_shape;\n"
                        : "  const kiln_cuda::Shape& " + n + "_shape = kiln_p." + n + "_shape;\n";
    }
    if (u.input_strides[i]) {
      prologue += metal
                      ? "  const int64_t* " + n + "_strides = kiln_p." + n + "_strides;\n"
                      : "  const kiln_cuda::Strides& " + n + "_strides = kiln_p." + n + "_strides;\n";
    }
    if (u.input_ndim[i]) prologue += "  const int " + n + "_ndim = kiln_p." + n + "_ndim;\n";
  }
  sig += prologue;
  g.signature = sig;

  src += sig;
  src += "#line 1 \"source\"\n";
  src += ensure_newline(metal ? metal_text(spec.source) : drop_provided_includes(spec.source));
  src += "#line " + std::to_string(count_lines(src) + 2) + " \"generated\"\n";
  src += "}\n";

  std::string targs;
  for (size_t i = 0; i < inst.template_args.size(); ++i)
    targs += std::string(i ? ", " : "") + template_value(inst.template_args[i].second, true);
  const std::string instantiation = kernel + (targs.empty() ? "" : "<" + targs + ">");

  if (target == Target::gpu) {
    src += "\n}  // namespace kiln_user\n";
    g.entry = "kiln_user::" + instantiation;
  } else {
    // One call of the kernel for the current thread, from the runtime's argument arrays.
    src += "\ninline void kiln_invoke(void* const* kiln_args, const void* kiln_params_ptr) {\n";
    src += "  " + instantiation + "(\n";
    for (size_t i = 0; i < nin; ++i)
      src += "      static_cast<const " + type_name(inst.input_dtypes[i]) + "*>(kiln_args[" +
             std::to_string(i) + "]),\n";
    for (size_t i = 0; i < nout; ++i) {
      std::string t = type_name(inst.output_dtypes[i]);
      if (spec.atomic_outputs && metal) t = "atomic<" + t + ">";
      src += "      static_cast<" + t + "*>(kiln_args[" + std::to_string(nin + i) + "]),\n";
    }
    src += "      *static_cast<const kiln_params*>(kiln_params_ptr));\n}\n";
    src += "\n}  // namespace kiln_user\n\n";
    src += "KILN_CPU_ENTRY(kiln_user::kiln_invoke)\n";
    g.entry = "kiln_user::kiln_invoke";
  }
  g.source = std::move(src);
  // The entry takes part: on the GPU, instances that differ only in template arguments share
  // the source but not the kernel a module is built with.
  g.hash = content_hash(g.source + '\n' + g.entry);
  (void)op;
  return g;
}

// ---------------------------------------------------------------- KernelInstance

bool KernelInstance::operator==(const KernelInstance& o) const {
  return input_dtypes == o.input_dtypes && input_scalar == o.input_scalar &&
         output_dtypes == o.output_dtypes && template_args == o.template_args;
}

std::string KernelInstance::key() const {
  std::string k;
  for (size_t i = 0; i < input_dtypes.size(); ++i) {
    k += type_to_name(input_dtypes[i]);
    k += input_scalar[i] ? "& " : " ";
  }
  k += "->";
  for (Dtype d : output_dtypes) k += " " + std::string(type_to_name(d));
  for (const auto& [n, v] : template_args) {
    k += " " + n + "=";
    k += std::holds_alternative<Dtype>(v)
             ? std::string("t:") + std::string(type_to_name(std::get<Dtype>(v)))
             : template_value(v, false);
  }
  return k;
}

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

const KernelProgram::GpuFunction* KernelProgram::set_gpu_function(int device,
                                                                  GpuFunction f) const {
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
  for (bool s : u.input_strides) n += s ? 8 * kMaxNdim : 0;
  for (bool s : u.input_shape) n += s ? 4 * kMaxNdim : 0;
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
    int64_t v[kMaxNdim] = {};
    for (size_t d = 0; d < strides[i].size() && d < kMaxNdim; ++d) v[d] = strides[i][d];
    std::memcpy(base + off, v, sizeof v);
    off += sizeof v;
  }
  for (size_t i = 0; i < u.input_shape.size(); ++i) {
    if (!u.input_shape[i]) continue;
    int32_t v[kMaxNdim] = {};
    for (size_t d = 0; d < shapes[i].size() && d < kMaxNdim; ++d) v[d] = shapes[i][d];
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
