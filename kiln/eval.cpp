// eval / async_eval: an iterative topological sort of the unevaluated graph, then
// submission to the per-stream executors.
#include <algorithm>

#include "kiln/primitive.h"
#include "kiln/primitives_custom.h"
#include "kiln/scheduler.h"
#include "kiln/transforms.h"

namespace kiln {

namespace {

// Post-order DFS with an explicit stack, so a chain of 10^5 ops cannot overflow the
// call stack. Each graph node (shared by sibling outputs) becomes one task.
std::vector<scheduler::Task> build_tape(const std::vector<array>& outputs) {
  std::vector<scheduler::Task> tape;
  // One op over computed (or scheduled) inputs, the eager-style call: no traversal.
  if (outputs.size() == 1 && outputs[0].status() == array::Status::unscheduled) {
    const auto& ins = outputs[0].inputs();
    if (std::none_of(ins.begin(), ins.end(), [](const array& in) {
          return in.status() == array::Status::unscheduled;
        })) {
      tape.push_back(scheduler::Task{outputs[0], {}});
      return tape;
    }
  }
  const uint64_t mark = array::new_visit_mark();
  std::vector<std::pair<array, size_t>> stack;
  for (const auto& out : outputs) {
    if (out.status() != array::Status::unscheduled) continue;
    if (!out.mark_visited(mark)) continue;
    stack.emplace_back(out, 0);
    while (!stack.empty()) {
      auto& [a, next] = stack.back();
      auto& ins = a.inputs();
      if (next < ins.size()) {
        const array& in = ins[next++];
        if (in.status() == array::Status::unscheduled && in.mark_visited(mark)) {
          array child = in;  // copy before push_back invalidates references
          stack.emplace_back(std::move(child), 0);
        }
      } else {
        tape.push_back(scheduler::Task{std::move(a), {}});
        stack.pop_back();
      }
    }
  }
  return tape;
}

}  // namespace

void async_eval(std::vector<array> outputs) {
  // A traced graph must be kept whole for the transformation (as MLX refuses it too).
  for (const auto& out : outputs) {
    if (out.is_tracer()) {
      throw std::invalid_argument(
          "[async_eval] Not allowed inside a function transformation (grad, vjp, jvp, vmap).");
    }
  }
  auto tape = build_tape(outputs);
  kernels::compile_ahead(tape);  // custom kernels not compiled yet: all at once
  scheduler::submit(std::move(tape), /*run_inline=*/false);
}

void eval(std::vector<array> outputs) {
  auto tape = build_tape(outputs);
  kernels::compile_ahead(tape);  // custom kernels not compiled yet: all at once
  scheduler::submit(std::move(tape), /*run_inline=*/true);
  // Wait for every output before reporting the first error, so the others are usable.
  std::exception_ptr first;
  for (auto& out : outputs) {
    try {
      out.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace kiln
