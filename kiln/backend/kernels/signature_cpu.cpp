// CPU rewrites of a generated translation unit: dynamic shared memory, and checking mode's
// checked pointers and arrays (see signature_cpu.h). They work on tokens, so comments and
// string literals are never touched, and keep every newline, so #line numbers stay right.
#include "kiln/backend/kernels/signature_cpu.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace kiln::kernels {

namespace {

struct Tok {
  enum Kind { ident, other, space, comment, literal, directive } kind;
  std::string_view text;
};

bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool ident_char(char c) {
  return ident_start(c) || (c >= '0' && c <= '9');
}

std::vector<Tok> lex(std::string_view s) {
  std::vector<Tok> out;
  size_t i = 0, n = s.size();
  bool line_start = true;
  while (i < n) {
    const size_t b = i;
    const char c = s[i];
    Tok::Kind kind = Tok::other;
    if (c == '\n' || c == ' ' || c == '\t' || c == '\r') {
      line_start = c == '\n' || line_start;
      ++i;
      out.push_back({Tok::space, s.substr(b, 1)});
      continue;
    }
    if (c == '#' && line_start) {  // a whole directive, continuation lines included
      while (i < n && s[i] != '\n') i += (s[i] == '\\' && i + 1 < n) ? 2 : 1;
      kind = Tok::directive;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
      kind = Tok::comment;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      i = e == std::string_view::npos ? n : e + 2;
      kind = Tok::comment;
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < n && s[i] != c && s[i] != '\n') i += s[i] == '\\' ? 2 : 1;
      i = std::min(n, i + 1);
      kind = Tok::literal;
    } else if (ident_start(c)) {
      while (i < n && ident_char(s[i])) ++i;
      kind = Tok::ident;
    } else if (c >= '0' && c <= '9') {
      while (i < n && (ident_char(s[i]) || s[i] == '.' || s[i] == '\'')) ++i;
    } else {
      ++i;
    }
    line_start = false;
    out.push_back({kind, s.substr(b, i - b)});
  }
  return out;
}

bool significant(const Tok& t) {
  return t.kind != Tok::space && t.kind != Tok::comment;
}

// A declaration `[extern] __shared__ [align] type name [dims...] ;` starting at token
// `first` (the __shared__), or nothing when the tokens do not have that form.
struct SharedDecl {
  size_t end = 0;     // index of the ';'
  std::string align;  // __align__(n), kept as written
  std::string type;
  std::string name;
  std::vector<std::string> dims;  // "" for []
};

bool parse_shared(const std::vector<Tok>& toks, size_t first, SharedDecl& d) {
  std::vector<size_t> sig;  // significant tokens up to the ';'
  int depth = 0;
  for (size_t j = first + 1; j < toks.size(); ++j) {
    if (!significant(toks[j])) continue;
    std::string_view t = toks[j].text;
    if (toks[j].kind == Tok::directive) return false;
    if (t == "(" || t == "[") ++depth;
    if (t == ")" || t == "]") --depth;
    if (depth == 0 && (t == "," || t == "=" || t == "{" || t == "}")) return false;
    if (depth == 0 && t == ";") {
      d.end = j;
      break;
    }
    sig.push_back(j);
  }
  if (d.end == 0 || sig.empty()) return false;
  size_t k = 0;
  if (toks[sig[0]].text == "__align__") {  // __align__ ( ... )
    size_t close = 1;
    for (int dd = 0; close < sig.size(); ++close) {
      if (toks[sig[close]].text == "(") ++dd;
      if (toks[sig[close]].text == ")" && --dd == 0) break;
    }
    for (size_t j = sig[0]; j <= sig[std::min(close, sig.size() - 1)]; ++j) d.align += toks[j].text;
    k = close + 1;
  }
  // The name is the identifier before the first '['.
  size_t bracket = k;
  while (bracket < sig.size() && toks[sig[bracket]].text != "[") ++bracket;
  if (bracket == sig.size() || bracket < k + 2 || toks[sig[bracket - 1]].kind != Tok::ident)
    return false;
  d.name = std::string(toks[sig[bracket - 1]].text);
  for (size_t j = k; j + 1 < bracket; ++j)
    d.type += std::string(j > k ? " " : "") + std::string(toks[sig[j]].text);
  // Dimensions: [expr][expr]...
  for (size_t j = bracket; j < sig.size();) {
    if (toks[sig[j]].text != "[") return false;
    int dd = 0;
    std::string expr;
    size_t e = j;
    for (; e < sig.size(); ++e) {
      std::string_view t = toks[sig[e]].text;
      if (t == "[" && dd++ == 0) continue;
      if (t == "]" && --dd == 0) break;
      expr += std::string(expr.empty() ? "" : " ") + std::string(t);
    }
    if (e == sig.size()) return false;
    d.dims.push_back(expr);
    j = e + 1;
  }
  return !d.dims.empty();
}

size_t newlines(const std::vector<Tok>& toks, size_t from, size_t to) {
  size_t n = 0;
  for (size_t j = from; j <= to && j < toks.size(); ++j)
    n += std::count(toks[j].text.begin(), toks[j].text.end(), '\n');
  return n;
}

// How a checking-mode rewrite names things for its target: on the CPU, shared arrays carry
// their names (a C++20 string template argument); on the GPU, an id (NVRTC compiles C++17),
// collected in `shared_names` and counted from `first_id`.
struct CheckTarget {
  bool gpu = false;
  std::vector<std::string>* shared_names = nullptr;
  unsigned first_id = 0;
  int dynamic_bytes = 0;
  unsigned id_of(const std::string& name) {
    shared_names->push_back(name);
    return first_id + static_cast<unsigned>(shared_names->size() - 1);
  }
};

std::string rewrite(std::string_view src, bool check, CheckTarget* gpu = nullptr) {
  const std::vector<Tok> toks = lex(src);
  auto prev_sig = [&](size_t i) -> long {
    for (long j = static_cast<long>(i) - 1; j >= 0; --j)
      if (significant(toks[j])) return j;
    return -1;
  };
  std::string out;
  out.reserve(src.size() + 256);
  for (size_t i = 0; i < toks.size(); ++i) {
    const Tok& t = toks[i];
    if (t.kind == Tok::ident && t.text == "extern") {
      size_t j = i + 1;
      while (j < toks.size() && !significant(toks[j])) ++j;
      SharedDecl d;
      if (gpu && j < toks.size() && toks[j].text == "__shared__" && parse_shared(toks, j, d) &&
          d.dims.size() == 1 && d.dims[0].empty()) {
        // The GPU keeps CUDA's extern array under another name and checks a pointer to it.
        const std::string raw = "kiln_dyn_" + d.name;
        out += "extern __shared__ " + d.align + (d.align.empty() ? "" : " ") + d.type + " " + raw +
               "[]; ::kiln_check::ptr<" + d.type + "> " + d.name + "{" + raw + ", " + raw +
               ", 0, " + std::to_string(gpu->dynamic_bytes) + ", " +
               std::to_string(gpu->id_of(d.name)) + "u, 0};";
        out.append(newlines(toks, i, d.end), '\n');
        i = d.end;
        continue;
      }
      if (!gpu && j < toks.size() && toks[j].text == "__shared__" && parse_shared(toks, j, d) &&
          d.dims.size() == 1 && d.dims[0].empty()) {
        // The block's dynamic shared memory (16-byte aligned), as CUDA's extern array.
        const std::string mem = "::kiln::cpu_rt::self().dynamic_shared";
        const std::string cast = "reinterpret_cast<" + d.type + "*>(" + mem + ")";
        if (check) {
          out += "::kiln::cpu_rt::checked_ptr<" + d.type + "> " + d.name + "(" + cast + ", " + mem +
                 ", 0, ::kiln::cpu_rt::self().launch->dynamic_shared, \"" + d.name + "\");";
        } else {
          out += d.type + "* const " + d.name + " = " + cast + ";";
        }
        out.append(newlines(toks, i, d.end), '\n');
        i = d.end;
        continue;
      }
    }
    if (check && t.kind == Tok::ident && t.text == "__shared__") {
      SharedDecl d;
      if (parse_shared(toks, i, d) &&
          std::none_of(d.dims.begin(), d.dims.end(), [](auto& e) { return e.empty(); })) {
        std::string type = d.type;
        const std::string id = gpu ? std::to_string(gpu->id_of(d.name)) + "u" : "";
        for (size_t k = d.dims.size(); k-- > 0;) {
          type = gpu ? "::kiln_check::array<" + type + ", (" + d.dims[k] + "), " + id + ">"
                     : "::kiln::cpu_rt::checked_array<" + type + ", (" + d.dims[k] + "), \"" +
                           d.name + "\">";
        }
        out += "__shared__ " + d.align + (d.align.empty() ? "" : " ") + type + " " + d.name + ";";
        out.append(newlines(toks, i, d.end), '\n');
        i = d.end;
        continue;
      }
    }
    if (check && t.kind == Tok::ident && t.text == "reinterpret_cast") {
      long p = prev_sig(i);
      bool qualified = p >= 0 && (toks[p].text == ":" || toks[p].text == ".");
      if (!qualified) {
        out += gpu ? "::kiln_check::reinterpret" : "::kiln::cpu_rt::checked_reinterpret_cast";
        continue;
      }
    }
    out += t.text;
  }
  return out;
}

// Checking mode's parameter types: `const T* __restrict__ name,` and `atomic<T>* name,`
// lines of the generated signature become checked_ptr<...> (0-d inputs, kiln_in_*, stay).
std::string checked_signature(const std::string& sig, bool gpu) {
  std::string out;
  size_t pos = 0;
  while (pos < sig.size()) {
    size_t eol = sig.find('\n', pos);
    if (eol == std::string::npos) eol = sig.size();
    std::string line = sig.substr(pos, eol - pos);
    pos = eol + 1;
    const bool param = line.size() > 4 && line.compare(0, 4, "    ") == 0 && line.back() == ',';
    size_t star = line.rfind('*');
    if (param && star != std::string::npos && line.find("kiln_in_") == std::string::npos) {
      std::string type = line.substr(4, star - 4);
      std::string rest = line.substr(star + 1, line.size() - star - 2);
      const std::string restrict_kw = " __restrict__";
      if (rest.compare(0, restrict_kw.size(), restrict_kw) == 0) rest.erase(0, restrict_kw.size());
      while (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      while (!type.empty() && type.back() == ' ') type.pop_back();
      line = (gpu ? "    ::kiln_check::ptr<" : "    ::kiln::cpu_rt::checked_ptr<") + type + "> " +
             rest + ",";
    }
    out += line;
    if (eol < sig.size()) out += '\n';
  }
  return out;
}

}  // namespace

std::string cpu_translation_unit(const GeneratedKernel& g, bool check) {
  std::string src = g.source;
  if (check && !g.signature.empty()) {
    size_t at = src.find(g.signature);
    if (at != std::string::npos)
      src.replace(at, g.signature.size(), checked_signature(g.signature, false));
  }
  return rewrite(src, check);
}

GpuCheckedKernel gpu_check_translation_unit(const GeneratedKernel& g, const KernelSpec& spec) {
  GpuCheckedKernel out;
  std::string src = g.source;
  // The checking types come right after the prelude.
  size_t eol = src.find('\n', src.find("#include \""));
  if (eol != std::string::npos)
    src.insert(eol + 1, "#include \"kiln/backend/kernels/gpu_check.h\"\n");
  if (!g.signature.empty()) {
    size_t at = src.find(g.signature);
    if (at != std::string::npos)
      src.replace(at, g.signature.size(), checked_signature(g.signature, true));
  }
  // The body is rewritten: its shared arrays, extern shared array and reinterpret_casts.
  // The header stays as written (its namespace-scope declarations cannot become objects
  // with constructors on the GPU).
  CheckTarget target;
  target.gpu = true;
  target.shared_names = &out.shared_names;
  target.first_id = static_cast<unsigned>(spec.input_names.size() + spec.output_names.size());
  target.dynamic_bytes = spec.shared_memory;
  const size_t body = src.find("#line 1 \"source\"\n");
  const size_t body_end = body == std::string::npos ? body : src.find("#line ", body + 1);
  if (body == std::string::npos || body_end == std::string::npos) {
    out.source = src;
  } else {
    out.source = src.substr(0, body) +
                 rewrite(std::string_view(src).substr(body, body_end - body), true, &target) +
                 src.substr(body_end);
  }
  return out;
}

}  // namespace kiln::kernels
