// The host C++ compiler, found and run at run time: CPU custom kernels are compiled with it
// into shared objects.
//
// The compiler is $KILN_CXX (a program name or path, optionally followed by arguments, e.g.
// "ccache g++"), else the first of c++, g++, clang++ on PATH.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kiln::kernels {

struct HostCompiler {
  std::vector<std::string> command;  // the program (absolute path) and leading arguments
  std::string identity;              // path, arguments and `--version` line: part of cache keys
};

/**
 * The host compiler (found once; KILN_CXX changes are seen on the next call). Throws
 * fast::KernelCompileError naming what to install or set when there is none, or when it
 * does not run.
 */
HostCompiler host_compiler();

/** What a compilation produced. */
struct HostCompileResult {
  bool ok = false;
  std::string log;     // the compiler's messages (warnings or errors)
  std::string object;  // the shared object's bytes when ok
};

/**
 * Compiles `source` (written as `<name>.cpp`, with `headers` as (relative path, text) files
 * under one include directory) into a shared object with `flags`, in a private temporary
 * directory that is removed afterwards. Throws std::runtime_error when the compiler cannot
 * be started; a source that does not compile returns ok = false with the log.
 */
HostCompileResult compile_shared_object(
    const HostCompiler& cc, const std::string& name, const std::string& source,
    const std::vector<std::pair<std::string, std::string>>& headers,
    const std::vector<std::string>& flags);

}  // namespace kiln::kernels
