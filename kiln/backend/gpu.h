// The interface between the core and the GPU backend. Implemented by backend/cuda when
// kiln is built with CUDA, and by backend/no_cuda (every call throws) otherwise.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln::gpu {

/** Whether a usable GPU is present (driver loaded, device found). Never throws. */
bool is_available();
/** Why `is_available()` is false, for messages ("no libcuda.so.1", ...). */
std::string unavailable_reason();
/** Number of usable GPUs. */
int device_count();

/** Creates the backend state of a new GPU stream. */
void new_stream(const Stream& s);
/** Runs `arr`'s primitive (`eval_gpu`) on its stream, from any host thread (a blocking
 * eval runs it on the calling thread): makes the inputs device-resident,
 * launches, and keeps every buffer the launch touches alive until it completes. */
void eval(array& arr);
/** Marks the end of work up to `value` on `s` (called after the last task of a batch). */
void commit(const Stream& s, uint64_t value);
/** Blocks the host until the GPU has finished `s`'s work up to a committed `value`. */
void wait(const Stream& s, uint64_t value);
bool is_done(const Stream& s, uint64_t value);
/** Makes the GPU stream `s` wait (without blocking the host) for `value` on GPU stream `on`. */
void wait_on_stream(const Stream& s, const Stream& on, uint64_t value);

// Memory of GPU `index` (see kiln/allocator.h for the meaning of each).
size_t get_active_memory(int index);
size_t get_peak_memory(int index);
void reset_peak_memory(int index);
size_t get_cache_memory(int index);
size_t set_memory_limit(int index, size_t limit);
size_t get_memory_limit(int index);
size_t set_cache_limit(int index, size_t limit);
void clear_cache(int index);

/** GPU kernels launched by this process so far (0 without CUDA): tests and benchmarks count
 * the kernels of a computation with it (e.g. one for a fused chain). */
uint64_t kernel_launches();

}  // namespace kiln::gpu
