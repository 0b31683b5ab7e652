// Evaluation and function transformations.
//
// The transformations follow MLX's C++ API: they take functions of arrays and return
// arrays or new functions. Conventions shared by all of them:
// - They never evaluate anything themselves; what they return is lazy like any array.
//   The function may evaluate inside vjp/jvp/grad (eval, item): arrays computed from the
//   traced inputs keep their graph until the transformation is done (then they release it).
//   Inside vmap, evaluating an array that depends on a mapped input throws.
// - Only floating-point and complex arrays carry derivatives. Integer and bool arrays (an
//   integer input, the output of argmax, a cast to int) have zero tangents and cotangents,
//   so derivatives do not flow through them.
// - Gradients have the dtype of what they differentiate: a float16 or bfloat16 input gets a
//   gradient of its own dtype, accumulated in that dtype as in MLX (no float32 master copy).
//   Cast inputs to float32 inside the function when more precision is needed.
// - Nesting works in any order: grad of grad, vmap of grad, grad of vmap, jvp of vjp, ...
// - User mistakes throw std::invalid_argument tagged [vjp], [jvp], [grad], [vmap] or
//   [custom_function], naming the argument and the shapes involved.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "kiln/array.h"

namespace kiln {

/** Evaluates `outputs` and blocks until their data is available. Rethrows the first error
 * raised while computing any of them; other arrays stay usable. */
void eval(std::vector<array> outputs);

/** Submits `outputs` for evaluation and returns at once; `array::wait`, `eval` or
 * `synchronize` wait for them. */
void async_eval(std::vector<array> outputs);

// clang-format 14 mangles requires-clauses.
// clang-format off
template <typename... Arrays>
  requires(std::is_same_v<std::decay_t<Arrays>, array> && ...)
void eval(Arrays&&... outputs) {
  eval(std::vector<array>{std::forward<Arrays>(outputs)...});
}

template <typename... Arrays>
  requires(std::is_same_v<std::decay_t<Arrays>, array> && ...)
void async_eval(Arrays&&... outputs) {
  async_eval(std::vector<array>{std::forward<Arrays>(outputs)...});
}
// clang-format on

// ---------------------------------------------------------------- function types

/** A function of several arrays returning several arrays: what transformations take. */
using ArrayFn = std::function<std::vector<array>(const std::vector<array>&)>;
/** A function of several arrays returning one (a loss, for grad). */
using ScalarFn = std::function<array(const std::vector<array>&)>;
/** A function of one array returning one array. */
using UnaryFn = std::function<array(const array&)>;
/** (outputs, gradients): the value of the function and its gradients w.r.t. argnums. */
using ValueAndGradFn =
    std::function<std::pair<std::vector<array>, std::vector<array>>(const std::vector<array>&)>;
using SimpleValueAndGradFn =
    std::function<std::pair<array, std::vector<array>>(const std::vector<array>&)>;

// ---------------------------------------------------------------- vjp and jvp

/**
 * Reverse mode: `fun(primals)` and the vector-Jacobian product of each primal, sum over outputs j
 * of cotangents[j]^T d fun_j / d primal. Returns (outputs, vjps) with `vjps[i]` of `primals[i]`'s
 * shape and dtype (zeros when the outputs do not depend on it, and for integer or bool primals).
 * Throws [vjp] unless there is one cotangent per output with the output's shape and dtype.
 */
std::pair<std::vector<array>, std::vector<array>> vjp(const ArrayFn& fun,
                                                      const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents);
/** vjp of a function of one array. */
std::pair<array, array> vjp(const UnaryFn& fun, const array& primal, const array& cotangent);

/**
 * Forward mode: `fun(primals)` and the Jacobian-vector product of each output,
 * sum over i of d fun_j / d primal_i tangents[i]. Returns (outputs, jvps) with `jvps[j]` of
 * output j's shape and dtype (zeros for outputs that do not depend on the primals, and
 * for integer or bool outputs). Throws [jvp] unless there is one tangent per primal with
 * the primal's shape and dtype.
 */
std::pair<std::vector<array>, std::vector<array>> jvp(const ArrayFn& fun,
                                                      const std::vector<array>& primals,
                                                      const std::vector<array>& tangents);
/** jvp of a function of one array. */
std::pair<array, array> jvp(const UnaryFn& fun, const array& primal, const array& tangent);

// ---------------------------------------------------------------- grad and value_and_grad

/**
 * Returns a function computing `fun`'s outputs and the gradient of its first output, which
 * must hold a single element of a floating-point or complex dtype (the loss), with respect
 * to the arguments in `argnums` (negative counts from the end), in the order of `argnums`.
 * Further outputs are returned as values but not differentiated (auxiliary outputs).
 * Throws [grad] for empty or repeated argnums, an argnum out of range or selecting an
 * integer or bool argument, and a first output that is not a floating scalar.
 */
ValueAndGradFn value_and_grad(const ArrayFn& fun, const std::vector<int>& argnums);
ValueAndGradFn value_and_grad(const ArrayFn& fun, int argnum = 0);
/** value_and_grad of a function returning only its loss. */
SimpleValueAndGradFn value_and_grad(const ScalarFn& fun, const std::vector<int>& argnums);
SimpleValueAndGradFn value_and_grad(const ScalarFn& fun, int argnum = 0);
/** value_and_grad of a function of one array: (loss, gradient). */
std::function<std::pair<array, array>(const array&)> value_and_grad(const UnaryFn& fun);

/** The gradients only of value_and_grad (same rules and errors). */
ArrayFn grad(const ScalarFn& fun, const std::vector<int>& argnums);
ArrayFn grad(const ScalarFn& fun, int argnum = 0);
UnaryFn grad(const UnaryFn& fun);

// ---------------------------------------------------------------- vmap

/**
 * Vectorizes `fun` over a mapped axis of its inputs: input i is mapped along axis
 * `in_axes[i]` (0 <= axis < ndim), or not mapped when it is -1 (passed whole to every
 * call); every output gets the mapped axis at `out_axes[j]` (0 <= axis <= the output's
 * ndim). Empty in_axes / out_axes mean 0 for all. The result equals stacking fun over the
 * slices, computed by each primitive's batched rule instead of a loop; outputs that do not
 * depend on a mapped input are broadcast along the mapped axis.
 * Throws [vmap] when in_axes or out_axes have the wrong length or an axis out of range,
 * when no input is mapped, and when mapped sizes differ.
 */
ArrayFn vmap(const ArrayFn& fun, const std::vector<int>& in_axes = {},
             const std::vector<int>& out_axes = {});
/** vmap of a function of two arrays. */
std::function<array(const array&, const array&)> vmap(
    const std::function<array(const array&, const array&)>& fun, int in_axis_a = 0,
    int in_axis_b = 0, int out_axis = 0);
/** vmap of a function of one array. */
UnaryFn vmap(const UnaryFn& fun, int in_axis = 0, int out_axis = 0);

// ---------------------------------------------------------------- custom transforms

/** vjp rule: (primals, cotangents of the outputs, outputs) -> one cotangent per primal. */
using CustomVjpFn = std::function<std::vector<array>(const std::vector<array>& primals,
                                                     const std::vector<array>& cotangents,
                                                     const std::vector<array>& outputs)>;
/** jvp rule: (primals, tangents of primals[argnums[i]], argnums) -> one tangent per
 * output. */
using CustomJvpFn = std::function<std::vector<array>(const std::vector<array>& primals,
                                                     const std::vector<array>& tangents,
                                                     const std::vector<int>& argnums)>;
/** vmap rule: (inputs, mapped axis of each or -1) -> (outputs, mapped axis of each). */
using CustomVmapFn = std::function<std::pair<std::vector<array>, std::vector<int>>(
    const std::vector<array>& inputs, const std::vector<int>& axes)>;

/**
 * Returns `fun` with user-defined transforms: the function computes as `fun`, and vjp /
 * jvp / vmap of it call the given rules instead of differentiating or batching `fun`'s
 * own graph. A rule left out falls back to transforming `fun` (the vjp recomputes it).
 * This is how opaque computations such as custom kernels become differentiable. Rules
 * must return arrays of the shapes of the primals (vjp) or outputs (jvp); other dtypes are
 * cast. Throws [custom_function] when a rule returns the wrong number or shape of arrays.
 */
ArrayFn custom_function(ArrayFn fun, std::optional<CustomVjpFn> fun_vjp = std::nullopt,
                        std::optional<CustomJvpFn> fun_jvp = std::nullopt,
                        std::optional<CustomVmapFn> fun_vmap = std::nullopt);
/** custom_function with a vjp rule only. */
ArrayFn custom_vjp(ArrayFn fun, CustomVjpFn fun_vjp);

/**
 * Gradient checkpointing: the same function, whose intermediate arrays are not kept for
 * the backward pass but recomputed there from the inputs (after the forward outputs are
 * computed). Trades one more forward computation for the memory of the intermediates.
 */
ArrayFn checkpoint(ArrayFn fun);

}  // namespace kiln
