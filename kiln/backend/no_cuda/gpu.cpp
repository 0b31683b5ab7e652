// The GPU interface when kiln is built without CUDA: no GPU is ever available, and every
// other call throws (the core never makes them, since no GPU stream can exist).
#include <stdexcept>

#include "kiln/backend/gpu.h"

namespace kiln::gpu {

namespace {
[[noreturn]] void no_gpu(const char* what) {
  throw std::runtime_error(std::string("[") + what + "] kiln was built without CUDA support.");
}
}  // namespace

bool is_available() { return false; }
std::string unavailable_reason() { return "kiln was built without CUDA (KILN_CUDA=OFF)."; }
int device_count() { return 0; }
void new_stream(const Stream&) { no_gpu("new_stream"); }
void eval(array&) { no_gpu("eval_gpu"); }
void commit(const Stream&, uint64_t) { no_gpu("commit"); }
void wait(const Stream&, uint64_t) { no_gpu("wait"); }
bool is_done(const Stream&, uint64_t) { no_gpu("is_done"); }
void wait_on_stream(const Stream&, const Stream&, uint64_t) { no_gpu("wait_on_stream"); }
size_t get_active_memory(int) { no_gpu("get_active_memory"); }
size_t get_peak_memory(int) { no_gpu("get_peak_memory"); }
void reset_peak_memory(int) { no_gpu("reset_peak_memory"); }
size_t get_cache_memory(int) { no_gpu("get_cache_memory"); }
size_t set_memory_limit(int, size_t) { no_gpu("set_memory_limit"); }
size_t get_memory_limit(int) { no_gpu("get_memory_limit"); }
size_t set_cache_limit(int, size_t) { no_gpu("set_cache_limit"); }
void clear_cache(int) { no_gpu("clear_cache"); }
uint64_t kernel_launches() { return 0; }

}  // namespace kiln::gpu
