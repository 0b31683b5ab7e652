// Compiles the kernel library "broken" with NVRTC (no GPU needed) and prints the error.
#include <iostream>

#include "kiln/extension.h"

int main() {
  try {
    kiln::ext::compile_kernels("broken", {"scale"}, "compile_broken", "sm_90");
  } catch (const kiln::gpu::CompileError& e) {
    std::cout << e.what() << "\n";
    return 0;
  }
  std::cout << "broken.cu compiled\n";
  return 1;
}
