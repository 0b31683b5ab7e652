// The text side of custom kernels, used by signature.cpp's source generation: a small C++
// lexer, the rewriting of Metal kernel bodies into C++, the headers brought in on demand and
// the check for Metal features kiln does not support. Internal to kiln::kernels.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/backend/kernels/signature.h"

namespace kiln::kernels::detail {

enum class Tok { identifier, number, string, comment, space, punct, directive };

struct Token {
  Tok kind;
  size_t begin, end;  // byte range in the text
};

/** The tokens of C++ (or Metal) text `s`: identifiers, numbers, string and character
 * literals, comments, whitespace, punctuation, preprocessor directives. */
std::vector<Token> lex(std::string_view s);

/** Every identifier `s` names outside comments and literals. */
std::set<std::string, std::less<>> identifiers(std::string_view s);

/** Whether `s` is a C++ identifier. */
bool is_identifier(const std::string& s);

/** A Metal body or header rewritten as C++: address-space keywords (`device` and `thread`
 * go, `constant` is `const`, `threadgroup` is `__shared__` on storage), loop pragmas and
 * half/bfloat literal suffixes; line structure kept, so #line numbers stay right. */
std::string rewrite_metal(std::string_view s);

/** Metal's `cond ? a : b` with half/bfloat operands against other types, made unambiguous
 * for C++ (Metal promotes where C++ finds two conversions). */
std::string rewrite_conditionals(std::string_view s);

/** Whether a Metal text names a half type (or writes a half or bfloat literal). */
bool mentions_half_types(std::string_view s);

/** A prelude header that comes in only when a body names one of its patterns. */
struct OnDemandHeader {
  std::string path;
  std::vector<std::string> patterns;
  int kind;  // 0: needs the Metal layer (Metal bodies, CUDA bodies with the full prelude);
             // 1: the CUDA flavour's full prelude; 2: any CUDA prelude
};
const std::vector<OnDemandHeader>& on_demand_headers();

/** Whether identifier `w` matches `pattern` (name, prefix*, *suffix or *infix*). */
bool matches(std::string_view w, const std::string& pattern);

/** Throws fast::KernelCompileError when `text` (`part`: "source" or "header") uses a Metal
 * feature kiln does not support, naming it, its line, and why. */
void check_metal_features(const KernelSpec& spec, std::string_view text, const char* part);

}  // namespace kiln::kernels::detail
