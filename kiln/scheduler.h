// Per-stream executors. Each stream runs its tasks in submission order on its own worker
// thread (a blocking eval of a single-stream graph runs them on the calling thread instead).
// A task waits for inputs produced on other streams before it runs.
#pragma once

#include <cstdint>
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

/** Registers a new stream (called by `new_stream`). */
void add_stream(const Stream& stream);

}  // namespace kiln::scheduler
