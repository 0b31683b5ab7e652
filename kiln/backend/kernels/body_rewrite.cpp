// The text side of custom kernels: a small C++ lexer, the rewriting of Metal bodies into
// C++ (keywords, literals, conditional operators), the headers brought in on demand and the
// Metal features kiln does not support (see body_rewrite.h).
#include "kiln/backend/kernels/body_rewrite.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string_view>

#include "kiln/backend/kernels/embedded.h"
#include "kiln/utils.h"

namespace kiln::kernels::detail {

// ---------------------------------------------------------------- a small C++ lexer

static bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool ident_char(char c) {
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
static std::string rewrite_loop_pragma(std::string_view text) {
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
static std::string rewrite_metal_literal(std::string_view t) {
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
const std::vector<OnDemandHeader>& on_demand_headers() {
  static const std::vector<OnDemandHeader> headers = [] {
    std::vector<OnDemandHeader> out;
    const std::pair<const char*, int> list[] = {{"kiln/backend/kernels/metal/math_more.h", 0},
                                                {"kiln/backend/kernels/metal/packed.h", 0},
                                                {"kiln/backend/kernels/metal/gpu_quad.h", 0},
                                                {"kiln/backend/kernels/metal/logging.h", 0},
                                                {"kiln/backend/kernels/metal/type_traits.h", 0},
                                                {"kiln/backend/kernels/cuda/half.h", 1},
                                                {"kiln/backend/kernels/cuda/complex.h", 1},
                                                {"kiln/backend/kernels/cuda/half_limits.h", 1},
                                                {"kiln/backend/kernels/cuda/tuple.h", 2}};
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
    return w.find(std::string_view(pattern).substr(1, pattern.size() - 2)) !=
           std::string_view::npos;
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
static const UnsupportedFeature* unsupported_metal_name(std::string_view w) {
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
  static const UnsupportedFeature render{"render and mesh pipeline objects",
                                         "custom kernels are compute kernels"};
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
    throw fast::KernelCompileError(msg("[metal_kernel] Kernel '", spec.name, "' uses Metal ",
                                       f->feature, " (`", w, "` at ", part, " line ", line,
                                       "), which kiln does not support: ", f->why, "."));
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
  auto is = [&](size_t i, char c) { return toks[i].kind == Tok::punct && s[toks[i].begin] == c; };
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
             ")) : ::metal::detail::tern_cast" + types + "((" + emit(m_end + 1, l_end, flat) + "))";
      i = l_end - 1;
    }
    return out;
  };
  return emit(0, toks.size(), false);
}

}  // namespace kiln::kernels::detail
