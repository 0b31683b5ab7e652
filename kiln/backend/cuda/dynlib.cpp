#include "kiln/backend/cuda/dynlib.h"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>

namespace kiln::gpu {

void* open_library(const std::vector<std::string>& names, const char* env_dir,
                   const std::vector<std::string>& extra_dirs, std::string& error) {
  std::vector<std::string> tried;
  auto attempt = [&](const std::string& path) -> void* {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* why = dlerror();
      tried.push_back(path + (why ? std::string(" (") + why + ")" : ""));
    }
    return h;
  };
  std::vector<std::string> dirs;
  if (const char* env = env_dir ? std::getenv(env_dir) : nullptr; env && *env) {
    std::string e(env);
    if (e.size() > 3 && e.find(".so") != std::string::npos) {
      if (void* h = attempt(e)) return h;
    } else {
      dirs.push_back(e);
    }
  }
  dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
  for (const auto& n : names) {
    if (void* h = attempt(n)) return h;
    for (const auto& d : dirs) {
      if (void* h = attempt(d + "/" + n)) return h;
    }
  }
  error = "tried";
  for (size_t i = 0; i < tried.size() && i < 6; ++i) error += (i ? "; " : " ") + tried[i];
  if (tried.size() > 6) error += "; ...";
  return nullptr;
}

std::vector<std::string> nvidia_wheel_lib_dirs(const std::string& package) {
  std::vector<std::string> patterns;
  if (const char* venv = std::getenv("VIRTUAL_ENV")) {
    patterns.push_back(std::string(venv) + "/lib/python3*/site-packages");
  }
  if (const char* home = std::getenv("HOME")) {
    patterns.push_back(std::string(home) + "/.local/lib/python3*/site-packages");
  }
  for (const char* p : {"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
                        "/usr/lib/python3/dist-packages", "/usr/lib/python3*/site-packages",
                        "/opt/conda/lib/python3*/site-packages"}) {
    patterns.push_back(p);
  }
  std::vector<std::string> out;
  for (const auto& pat : patterns) {
    glob_t g{};
    if (glob((pat + "/nvidia/" + package + "/lib").c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
  }
  return out;
}

}  // namespace kiln::gpu
