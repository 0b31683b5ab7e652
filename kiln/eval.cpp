// eval / async_eval: an iterative topological sort of the unevaluated graph, then
// submission to the per-stream executors.
#include <algorithm>
#include <queue>
#include <unordered_map>

#include "kiln/eval_order.h"
#include "kiln/primitive.h"
#include "kiln/primitives_custom.h"
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
    if (std::none_of(ins.begin(), ins.end(),
                     [](const array& in) { return in.status() == array::Status::unscheduled; })) {
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

// With work on several streams, a task whose output another stream waits for is moved up
// to just after its inputs, with the tasks that feed only it, and a task that waits for
// another stream is moved down to when nothing else is ready. A gradient bucket's
// all-reduce on a communication stream then overlaps the rest of the backward pass instead
// of following it (PyTorch DDP's bucket order, Li et al., VLDB 2020). The other tasks keep
// their order.
void issue_cross_stream_work_early(std::vector<scheduler::Task>& tape) {
  const size_t n = tape.size();
  auto stream_of = [&](size_t i) { return tape[i].arr.primitive().stream().index; };
  bool several = false;
  for (size_t i = 1; i < n && !several; ++i) several = stream_of(i) != stream_of(0);
  if (!several) return;

  std::unordered_map<const void*, uint32_t> task_of;  // by graph node: a primitive may be shared
  task_of.reserve(n);
  for (size_t i = 0; i < n; ++i) task_of.emplace(tape[i].arr.graph_node(), i);
  std::vector<std::vector<uint32_t>> consumers(n);
  std::vector<uint32_t> pending(n, 0);  // inputs not yet placed, per task
  std::vector<char> waits(n, 0);        // reads an output of another stream
  for (size_t i = 0; i < n; ++i) {
    for (const auto& in : tape[i].arr.inputs()) {
      if (!in.has_primitive()) continue;
      auto it = task_of.find(in.graph_node());
      if (it == task_of.end()) continue;  // computed or scheduled before
      consumers[it->second].push_back(i);
      ++pending[i];
      waits[i] |= stream_of(it->second) != stream_of(i);
    }
  }
  // Consumers come after producers in the DFS tape, so one backward sweep decides it.
  std::vector<char> early(n, 0);
  for (size_t i = n; i-- > 0;) {
    const auto& cs = consumers[i];
    bool crosses =
        std::any_of(cs.begin(), cs.end(), [&](uint32_t c) { return stream_of(c) != stream_of(i); });
    bool feeds_only_early =
        !cs.empty() && std::all_of(cs.begin(), cs.end(), [&](uint32_t c) { return early[c]; });
    early[i] = crosses || feeds_only_early;
  }
  // Kahn's sort, ready tasks by (early, other, waiting; then tape position).
  using Key = std::pair<int, uint32_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  auto key = [&](uint32_t i) { return Key{early[i] ? 0 : waits[i] ? 2 : 1, i}; };
  for (uint32_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(key(i));
  std::vector<scheduler::Task> order;
  order.reserve(n);
  while (!ready.empty()) {
    uint32_t i = ready.top().second;
    ready.pop();
    order.push_back(std::move(tape[i]));
    for (uint32_t c : consumers[i])
      if (--pending[c] == 0) ready.push(key(c));
  }
  tape = std::move(order);
}

}  // namespace

namespace detail {

std::vector<scheduler::Task> eval_order(const std::vector<array>& outputs) {
  auto tape = build_tape(outputs);
  issue_cross_stream_work_early(tape);
  return tape;
}

}  // namespace detail

void async_eval(std::vector<array> outputs) {
  // A traced graph must be kept whole for the transformation (as MLX refuses it too).
  for (const auto& out : outputs) {
    if (out.is_tracer()) {
      throw std::invalid_argument(
          "[async_eval] Not allowed inside a function transformation (grad, vjp, jvp, vmap).");
    }
  }
  auto tape = detail::eval_order(outputs);
  kernels::compile_ahead(tape);  // custom kernels not compiled yet: all at once
  scheduler::submit(std::move(tape), /*run_inline=*/false);
}

void eval(std::vector<array> outputs) {
  auto tape = detail::eval_order(outputs);
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
