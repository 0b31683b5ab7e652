// CompiledGraph::eval_gpu: a compiled function's GPU work captured into a CUDA graph and
// replayed (kiln/primitives_compile.h).
//
// The first call runs the steps one by one (which also compiles and loads every kernel they
// use). The second captures them: the function's inputs are staged into buffers the graph
// owns, the steps run under stream capture (relaxed mode: their allocations are the graph's
// buffers from then on), and the graph is instantiated. Every later call stages its inputs
// (a copy each), launches the graph, and copies the outputs out of the graph's buffers into
// fresh ones, so arrays handed to the user never change. Buffers, shapes and addresses are
// the graph's own: nothing the allocator does later can invalidate it. A step the capture
// cannot take (a host synchronization, an unsupported call) ends the capture with an error:
// the node then runs uncaptured for good, with a note under KILN_DEBUG_COMPILE.
#include <cstdio>
#include <memory>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/driver.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/primitives_compile.h"

namespace kiln {

namespace {

struct Captured {
  CUgraphExec exec = nullptr;
  std::vector<array> staged;  // the function's inputs, row-contiguous, owned by the graph
  std::vector<array> values;  // every value of the captured run: the graph's buffers
  ~Captured() {
    if (exec && gpu::try_driver()) gpu::try_driver()->cuGraphExecDestroy(exec);
  }
};

struct GraphState {
  int calls = 0;
  bool disabled = false;
  std::unique_ptr<Captured> captured;
};

void stage(const std::vector<array>& inputs, const std::vector<array>& staged,
           gpu::DeviceStream& s) {
  for (size_t i = 0; i < staged.size(); ++i) {
    if (inputs[i].size() == 0) continue;
    gpu::copy_to_row_contiguous(inputs[i], gpu::device_address(staged[i]), s);
  }
}

std::unique_ptr<Captured> capture(const CompiledGraph& node, const std::vector<array>& inputs,
                                  gpu::DeviceStream& s) {
  const ReplayProgram& p = node.program();
  auto c = std::make_unique<Captured>();
  for (int i = 0; i < p.num_inputs; ++i) {
    const array& in = inputs[i];
    c->staged.emplace_back(gpu::new_device_storage(in.nbytes(), s), in.shape(), in.dtype());
  }
  stage(inputs, c->staged, s);
  std::vector<array> vals = c->staged;
  vals.insert(vals.end(), inputs.begin() + p.num_inputs, inputs.end());  // the constants
  KILN_CU(cuStreamBeginCapture, s.handle(), CU_STREAM_CAPTURE_MODE_RELAXED);
  try {
    c->values = p.run_now(std::move(vals), true);
  } catch (...) {
    CUgraph g = nullptr;
    gpu::driver().cuStreamEndCapture(s.handle(), &g);
    if (g) gpu::driver().cuGraphDestroy(g);
    throw;
  }
  CUgraph graph = nullptr;
  KILN_CU(cuStreamEndCapture, s.handle(), &graph);
  CUresult r = gpu::driver().cuGraphInstantiateWithFlags(&c->exec, graph, 0);
  gpu::driver().cuGraphDestroy(graph);
  gpu::check("cuGraphInstantiateWithFlags", r);
  for (int v : node.output_values()) {
    const array& o = c->values[v];
    for (auto st : o.strides()) {
      if (st < 0) throw std::runtime_error("an output with negative strides");
    }
  }
  return c;
}

}  // namespace

void CompiledGraph::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto& s = gpu::device_stream(stream());
  std::lock_guard lk(mutex());
  if (!gpu_state()) gpu_state() = std::make_shared<GraphState>();
  auto* st = static_cast<GraphState*>(gpu_state().get());
  auto uncaptured = [&] {
    auto vals = program().run_now(inputs, true, [&](const array& a) {
      if (a.has_storage()) s.keep_alive(a.storage_ptr());
    });
    for (size_t i = 0; i < outputs.size(); ++i)
      outputs[i].copy_shared_buffer(vals[output_values()[i]]);
  };
  if (st->disabled || st->calls++ == 0) return uncaptured();
  if (!st->captured) {
    try {
      st->captured = capture(*this, inputs, s);
    } catch (const std::exception& e) {
      st->disabled = true;
      if (detail::compile_debug())
        std::fprintf(stderr, "[kiln compile] no CUDA graph for this function: %s\n", e.what());
      return uncaptured();
    }
  } else {
    stage(inputs, st->captured->staged, s);
  }
  KILN_CU(cuGraphLaunch, st->captured->exec, s.handle());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const array& src = st->captured->values[output_values()[i]];
    array& out = outputs[i];
    const size_t bytes = src.data_size() * src.itemsize();
    out.set_data(gpu::new_device_storage(bytes, s), src.data_size(), src.strides(), src.flags());
    if (bytes) {
      KILN_CU(cuMemcpyDtoDAsync, gpu::device_address(out), gpu::device_address(src), bytes,
              s.handle());
    }
  }
}

}  // namespace kiln
