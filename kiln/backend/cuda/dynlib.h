// Run-time loading of the optional CUDA libraries (cuSOLVER, cuFFT, cuDNN): they are never
// link dependencies of libkiln, so one build runs where they are missing, and using them
// there raises a RuntimeError naming the library instead of failing to load kiln.
#pragma once

#include <string>
#include <vector>

namespace kiln::gpu {

/**
 * dlopen's the first loadable of `names` (sonames or paths), trying first the directories
 * listed in the environment variable `env_dir` (a directory, or a path to the library,
 * when set) and then `extra_dirs`. Returns the handle, or null with `error` saying what was
 * tried. Never dlclose'd: function pointers outlive any scope.
 */
void* open_library(const std::vector<std::string>& names, const char* env_dir,
                   const std::vector<std::string>& extra_dirs, std::string& error);

/** Python site-packages directories where pip's NVIDIA wheels put their libraries
 * (<dir>/nvidia/<package>/lib), found from the usual prefixes and $VIRTUAL_ENV. */
std::vector<std::string> nvidia_wheel_lib_dirs(const std::string& package);

}  // namespace kiln::gpu
