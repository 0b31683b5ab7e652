// Test helper: an environment variable set for one scope (a death test's child inherits it).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace kiln::test {

/** Sets environment variable `name` to `value` until the end of the scope, then restores the
 * previous value (or unsets it). */
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const std::string& n, const std::string& v) : name(n) {
    if (const char* o = std::getenv(n.c_str())) old = o;
    setenv(n.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old)
      setenv(name.c_str(), old->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

}  // namespace kiln::test
