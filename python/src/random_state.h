// mx.random.state as MLX 0.32 has it: one object shared by all threads (`_RandomState`)
// whose single element is the calling thread's random key. Samplers called without a key
// read and advance the calling thread's key; seed() resets it; compile's inputs= and
// outputs= capture it like a list holding one array.
#pragma once

#include <pybind11/pybind11.h>

#include "kiln/array.h"

namespace py = pybind11;

namespace kiln::python {

/** The calling thread's key (uint32, shape (2,)); a thread's first use seeds it from the
 * clock in milliseconds, as MLX does. It may be lazy or, inside a compile trace, a tracer. */
array thread_random_key();
/** Replaces the calling thread's key. */
void set_thread_random_key(array key);

/** Whether `h` is the `kiln.core.random.state` object. */
bool is_random_state(py::handle h);

/** Creates `random.state` in module `random` and installs the thread keys as kiln's key store
 * (kiln/random.h's KeyStore). */
void init_random_state(py::module_& random);

}  // namespace kiln::python
