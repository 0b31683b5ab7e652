// Per-stream executors. Each stream runs its tasks in submission order on its own worker
// thread (a blocking eval of a single-stream graph runs them on the calling thread instead).
// A task waits for inputs produced on other streams before it runs.
#pragma once

#include <cstdint>
#include <exception>
#include <vector>

#include "kiln/array.h"
#include "kiln/device.h"

namespace kiln::scheduler {

/** One node to evaluate: `arr` (any output of the node) and the cross-stream events it
 * must wait for. */
struct Task {
  array arr;
  std::vector<Event> deps;
};

/**
 * Submits a topologically ordered list of tasks. Assigns each its stream and sequence
 * number, marks the outputs scheduled with their events, and hands them to the
 * executors. If `run_inline` is set and all tasks are on one idle CPU stream, they run on
 * the calling thread before this returns.
 */
void submit(std::vector<Task>&& tasks, bool run_inline);

/** Blocks until `stream` has finished the work up to `value`. */
void wait(const Stream& stream, uint64_t value);
bool is_done(const Stream& stream, uint64_t value);
/** The value of the last work submitted to `stream`. */
uint64_t last_value(const Stream& stream);

/** The first error a task of `stream` raised (its own, not one passed on from an input)
 * since the last call or since the error reached the caller through an array; cleared.
 * synchronize() raises it, as MLX raises the errors of async_eval there. */
std::exception_ptr take_error(const Stream& stream);
/** Forgets `err` as a pending error of every stream (it was raised to the caller). */
void forget_error(const std::exception_ptr& err);

/** Registers a new stream (called by `new_stream`). */
void add_stream(const Stream& stream);

}  // namespace kiln::scheduler
