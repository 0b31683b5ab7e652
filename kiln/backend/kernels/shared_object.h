// Loading a shared object the host compiler produced from its bytes (already verified by the
// caller): generated CPU code (compile's fused kernels) is cached as bytes and loaded here.
#pragma once

#include <string>

namespace kiln::kernels {

/**
 * dlopen()s the shared object `bytes` and returns its handle (never closed: code from it may
 * run until the process ends). Each load gets a file name never used before in this process,
 * in a private temporary directory, unlinked once loaded (or an anonymous memory file where no
 * temporary file can be made), so that nothing can change it after the caller checked it.
 * Throws std::runtime_error naming `what` when it cannot be loaded.
 */
void* load_shared_object(const std::string& bytes, const std::string& what);

}  // namespace kiln::kernels
