// compile: trace a function of arrays once, simplify its graph, fuse elementwise work into
// generated kernels, and replay the result on later calls without running the function.
//
// MLX's semantics (mlx/compile.h):
// - The function runs once per cache key, on placeholder arrays (shapes and dtypes, no data):
//   the key is the function, the inputs' shapes and dtypes (only their ranks with
//   `shapeless`), the default stream and any constants the caller adds (Python puts the
//   arguments' tree structure and non-array values there). Later calls with the same key
//   build the recorded graph on the real inputs without calling the function.
// - The function must be pure in arrays: what it reads must be its inputs (or constants it
//   captured at trace time, which are frozen), what it changes must be its outputs.
//   Evaluating an array computed from the inputs during the trace (eval, item) throws.
// - Called with inputs that are traced by a transformation (grad, vjp, jvp, vmap, an outer
//   compile), the function runs as written, so transformations see its operations; compile
//   of a transformed function (compile(grad(f))) records the transformed graph.
// - The recorded graph is simplified (common subexpressions, equal constants, no-op casts
//   and copies) and its connected elementwise parts become Compiled nodes, each one
//   generated kernel (kiln/compile_fuse.cpp; code generation per backend in
//   backend/{cpu,cuda}/compiled.cpp). KILN_DEBUG_COMPILE=1 prints each kernel's source.
// - disable_compile() or the environment variable KILN_DISABLE_COMPILE (any value but ""
//   or "0") makes compile return the function itself.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "kiln/array.h"
#include "kiln/transforms.h"

namespace kiln {

/** What compile does (MLX's CompileMode): nothing, trace only, trace and simplify, or
 * everything (the default). */
enum class CompileMode { disabled, no_simplify, no_fuse, enabled };

/**
 * `fun` traced once per input shapes and dtypes (ranks with `shapeless`) and replayed from
 * its cached, simplified and fused graph. A shapeless trace serves any shapes of the traced
 * ranks; it throws std::invalid_argument on a call whose shapes the recorded operations
 * cannot take (e.g. a reshape to a fixed size that no longer matches). The cache entry
 * lives as long as the returned function (and its copies); for a plain function (not a
 * closure), compiles of it share one cache for the whole process.
 */
ArrayFn compile(ArrayFn fun, bool shapeless = false);

/** Makes compile return functions unchanged (and compiled ones run uncompiled). */
void disable_compile();
/** Undoes disable_compile (and KILN_DISABLE_COMPILE). */
void enable_compile();
void set_compile_mode(CompileMode mode);
CompileMode compile_mode();

struct ReplayProgram;  // kiln/primitives_compile.h

namespace detail {

/** The function and an opaque value the trace produced (the Python bindings keep the
 * structure of the outputs there, one per cache entry). */
using ArraysAndExtra = std::pair<std::vector<array>, std::shared_ptr<void>>;
using ArrayFnWithExtra = std::function<ArraysAndExtra(const std::vector<array>&)>;

/**
 * compile keyed by `fun_id` (the caller keeps it unique while the function lives and calls
 * compile_erase when it dies) and `constants` (added to the cache key). The result returns
 * the extra value of the trace that produced the replayed graph.
 */
ArrayFnWithExtra compile(ArrayFnWithExtra fun, std::uintptr_t fun_id, bool shapeless,
                         std::vector<uint64_t> constants = {});
ArrayFn compile(ArrayFn fun, std::uintptr_t fun_id, bool shapeless,
                std::vector<uint64_t> constants = {});

/** The traced, simplified (not fused) graph of `fun` on placeholders of `shapes` and
 * `dtypes`, as a replay program: what export_function saves (kiln/export.cpp). `originals`
 * are the arrays the caller holds for those inputs (the function must not read them other
 * than through its arguments). */
ReplayProgram trace_for_export(const ArrayFn& fun, const std::vector<Shape>& shapes,
                               const std::vector<Dtype>& dtypes,
                               const std::vector<array>& originals, bool shapeless);

/** Drops the cache entries of `fun_id`. */
void compile_erase(std::uintptr_t fun_id);
/** Drops every cache entry. */
void compile_clear_cache();

/** Whether this thread is tracing a function for compile, and whether shapelessly: ops whose
 * node would otherwise fix a shape the inputs determine (zeros_like, reshape with -1)
 * record how to recompute it. */
bool in_compile_trace();
bool in_shapeless_trace();
/** Whether this thread is tracing a function for export_function (not a compiled function
 * that it calls): its nodes are saved, never evaluated here. */
bool in_export_trace();

/** broadcast_to(x, like.shape()), which in a shapeless trace follows like's shape on
 * replays (for transforms that broadcast to a primal's shape, e.g. a reduction's vjp). */
array broadcast_like(const array& x, const array& like, StreamOrDevice s = {});

/** x (..., M, K) as the stack (B, M, K) of its matrices (B = 1 for a matrix). In a shapeless
 * trace M and K follow x's last two axes on replays and B is recomputed from x's size (a
 * plain reshape would keep the traced M and K). x needs at least two axes. */
array matrix_stack(const array& x, StreamOrDevice s = {});

/** Counters for tests and benchmarks: traces run, replays of a cached trace, and
 * evaluations of Compiled nodes by their generated kernel or by the unfused fallback. */
struct CompileStats {
  uint64_t traces = 0;
  uint64_t replays = 0;
  uint64_t fused_runs = 0;
  uint64_t fallback_runs = 0;
};
CompileStats compile_stats();
void reset_compile_stats();
/** Counts one evaluation of a Compiled node (the backends call it). */
void count_compiled_run(bool fallback);

}  // namespace detail

}  // namespace kiln
