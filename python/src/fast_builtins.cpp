// kiln.core.fast's fused built-ins: rms_norm, fused_rms_silu, layer_norm, rope,
// scaled_dot_product_attention and cross_entropy, with MLX 0.32's signatures.
#include <pybind11/stl.h>

#include <variant>

#include "bindings.h"
#include "kiln/fast.h"
#include "kiln/fast_sdpa_backend.h"
#include "kiln/utils.h"

namespace kiln::python {

void init_fast_builtins(py::module_& f) {
  using OptArray = std::optional<array>;
  f.def(
      "rms_norm",
      [](const array& x, const OptArray& weight, float eps, StreamOrDevice s) {
        return fast::rms_norm(x, weight, eps, s);
      },
      py::arg("x"), py::arg("weight").none(true), py::arg("eps"), py::kw_only(),
      py::arg("stream") = py::none(),
      R"doc(
Root Mean Square normalization (RMS norm) over the last axis of ``x``:
``x * rsqrt(mean(x**2, -1) + eps) * weight``, accumulated in float32.

Args:
    x (array): Input array (at least 1-d, floating).
    weight (array, optional): One-dimensional scale of ``x.shape[-1]`` elements, or
      ``None`` for no scaling.
    eps (float): A small additive constant for numerical stability.

Returns:
    array: The normalized array, of the promoted dtype of ``x`` and ``weight``.
)doc");

  f.def(
      "fused_rms_silu",
      [](const array& x, const OptArray& weight, float eps, StreamOrDevice s) {
        return fast::fused_rms_silu(x, weight, eps, s);
      },
      py::arg("x"), py::arg("weight").none(true), py::arg("eps"), py::kw_only(),
      py::arg("stream") = py::none(),
      R"doc(
RMS normalization followed by SiLU, in one pass: ``h * sigmoid(h)`` with
``h = rms_norm(x, weight, eps)``, accumulated in float32 and rounded once.

Args:
    x (array): Input array (at least 1-d, floating).
    weight (array, optional): One-dimensional scale of ``x.shape[-1]`` elements, or
      ``None`` for no scaling.
    eps (float): A small additive constant for numerical stability.

Returns:
    array: The activated array, of the promoted dtype of ``x`` and ``weight``.
)doc");

  f.def(
      "layer_norm",
      [](const array& x, const OptArray& weight, const OptArray& bias, float eps,
         StreamOrDevice s) { return fast::layer_norm(x, weight, bias, eps, s); },
      py::arg("x"), py::arg("weight").none(true), py::arg("bias").none(true), py::arg("eps"),
      py::kw_only(), py::arg("stream") = py::none(),
      R"doc(
Layer normalization over the last axis of ``x``:
``(x - mean) * rsqrt(var + eps) * weight + bias``, accumulated in float32.

Args:
    x (array): Input array (at least 1-d, floating).
    weight (array, optional): One-dimensional scale of ``x.shape[-1]`` elements, or ``None``.
    bias (array, optional): One-dimensional offset of ``x.shape[-1]`` elements, or ``None``.
    eps (float): A small additive constant for numerical stability.

Returns:
    array: The normalized array.
)doc");

  f.def(
      "rope",
      [](const array& a, int dims, bool traditional, std::optional<float> base, float scale,
         const std::variant<int, array>& offset, const OptArray& freqs, StreamOrDevice s) {
        if (auto* i = std::get_if<int>(&offset))
          return fast::rope(a, dims, traditional, base, scale, *i, freqs, s);
        return fast::rope(a, dims, traditional, base, scale, std::get<array>(offset), freqs, s);
      },
      py::arg("a"), py::arg("dims"), py::kw_only(), py::arg("traditional"),
      py::arg("base").none(true), py::arg("scale"), py::arg("offset"),
      py::arg("freqs") = py::none(), py::arg("stream") = py::none(),
      R"doc(
Apply rotary positional encoding to the input.

The input is expected to be at least 3D with shape ``(B, *, T, D)`` where ``B`` is the
batch size, ``T`` the sequence length and ``D`` the feature dimension.

Args:
    a (array): The input array.
    dims (int): The feature dimensions to be rotated. If the input feature is larger than
      dims then the rest is left unchanged.
    traditional (bool): If ``True`` rotate consecutive dimensions (2i, 2i + 1), else the
      halves (i, i + dims / 2).
    base (float, optional): The base of the angular frequencies. Exactly one of ``base``
      and ``freqs`` must be ``None``.
    scale (float): The scale of the positions.
    offset (int or array): The position offset to start at: an int, or an integer array
      holding one offset or one per batch element.
    freqs (array, optional): The frequencies (``dims // 2`` of them) to use instead of
      ``base``. Default: ``None``.

Returns:
    array: The output array.
)doc");

  f.def(
      "scaled_dot_product_attention",
      [](const array& q, const array& k, const array& v, float scale,
         const std::variant<std::monostate, std::string, array>& mask, const OptArray& sinks,
         bool force_fused, StreamOrDevice s) {
        if (auto* m = std::get_if<std::string>(&mask)) {
          if (*m != "causal") {
            throw std::invalid_argument(msg("[scaled_dot_product_attention] invalid mask option '",
                                            *m, "'. Must be 'causal', or an array."));
          }
          return fast::scaled_dot_product_attention(q, k, v, scale, "causal", std::nullopt, sinks,
                                                    s);
        }
        if (auto* m = std::get_if<array>(&mask))
          return fast::scaled_dot_product_attention(q, k, v, scale, "", *m, sinks, s);
        return fast::scaled_dot_product_attention(q, k, v, scale, "", std::nullopt, sinks, s);
      },
      py::arg("q"), py::arg("k"), py::arg("v"), py::kw_only(), py::arg("scale"),
      py::arg("mask") = py::none(), py::arg("sinks") = py::none(), py::arg("force_fused") = false,
      py::arg("stream") = py::none(),
      R"doc(
Multi-head attention ``O = softmax(scale * Q @ K.T + mask, dim=-1) @ V``, fused
(FlashAttention-2 on the GPU); the softmax runs in float32.

Grouped- and multi-query attention take ``k`` and ``v`` with fewer heads, not tiled.

Args:
    q (array): Queries with shape ``[B, N_q, T_q, D]``.
    k (array): Keys with shape ``[B, N_kv, T_kv, D]``.
    v (array): Values with shape ``[B, N_kv, T_kv, D_v]``.
    scale (float): Scale for queries (typically ``1.0 / sqrt(q.shape(-1))``).
    mask (str or array, optional): ``"causal"`` (lower-right aligned: the last query
      aligns with the last key), or a boolean or additive array of at most 4 dimensions
      broadcast-compatible with ``[B, N_q, T_q, T_kv]``.
    sinks (array, optional): Attention sinks, one logit per query head. Default: ``None``.
    force_fused (bool, optional): Accepted for MLX compatibility; kiln always runs the
      fused kernel.

Returns:
    array: The output array ``[B, N_q, T_q, D_v]``.

On the GPU, the environment variable ``KILN_SDPA_BACKEND`` picks the implementation when
the call is made: ``kiln`` (kiln's kernels), ``cudnn`` (cuDNN's fused
attention wherever it computes the call exactly: float16 or bfloat16, head dims multiples
of 8 up to 128, no mask or ``"causal"`` with ``T_q <= T_kv``, no array mask, no sinks; kiln's
kernels elsewhere and where cuDNN rejects the problem) or ``auto`` (the default, also when
unset or empty: as ``cudnn``, but calls with at most 16 query rows per key/value head stay on
kiln's decode kernels). Any other
value raises ``ValueError``. The gradient follows the forward's implementation.
)doc");

  // Internal: the backend switch and what ran, for tests and benchmarks.
  f.def(
      "_sdpa_backend", [] { return std::string(fast::sdpa_backend_name(fast::sdpa_backend())); },
      "The attention backend new GPU nodes take: 'kiln', 'cudnn' or 'auto' (internal).");
  f.def(
      "_set_sdpa_backend",
      [](const std::optional<std::string>& name) {
        fast::set_sdpa_backend(name ? std::optional(fast::parse_sdpa_backend(*name))
                                    : std::nullopt);
      },
      py::arg("name").none(true),
      "Overrides KILN_SDPA_BACKEND ('kiln', 'cudnn', 'auto'; None restores it) (internal).");
  f.def(
      "_sdpa_cudnn_counts",
      [] {
        const auto c = fast::sdpa_cudnn_counts();
        py::dict d;
        d["forward"] = c.forward;
        d["backward"] = c.backward;
        d["forward_fallbacks"] = c.forward_fallbacks;
        d["backward_fallbacks"] = c.backward_fallbacks;
        return d;
      },
      "How often the cuDNN attention path ran, and fell back to kiln's kernels (internal).");
  f.def(
      "_sdpa_cudnn_status", [] { return fast::sdpa_cudnn_status(); },
      "'' when the cuDNN attention path can run here, else why not (internal).");

  f.def(
      "global_norm",
      [](const std::vector<array>& arrays, StreamOrDevice s) {
        return fast::global_norm(arrays, s);
      },
      py::arg("arrays"), py::kw_only(), py::arg("stream") = py::none(),
      R"doc(
The global L2 norm of several arrays (a kiln addition to MLX's API).

``sqrt(sum(sum(square(x)) for x in arrays))``, as if the arrays were flattened and
concatenated: the norm ``optimizers.clip_grad_norm`` clips by (optax's and TensorFlow's
``global_norm``). One pass over the arrays: on the GPU a launch per 160 arrays and one to
finish, instead of a square and a reduction per array. Accumulated in float64 on both
devices.

Args:
    arrays (list[array]): Floating arrays of any shapes (empty ones add nothing).

Returns:
    array: A 0-d float32 array (float64 when an input is float64). Differentiable: the
    gradient for each array is ``x / norm``.

Raises:
    ValueError: an array is not floating.
)doc");

  f.def(
      "cross_entropy",
      [](const array& logits, const array& targets, StreamOrDevice s) {
        return fast::cross_entropy(logits, targets, s);
      },
      py::arg("logits"), py::arg("targets"), py::kw_only(), py::arg("stream") = py::none(),
      R"doc(
Cross entropy loss with class indices as targets.

Computes ``logsumexp(logits, axis=-1) - logits[..., target]`` in a fused kernel with
accumulation in float32.

Args:
    logits (array): The unnormalized logits. The loss is computed over the last axis.
    targets (array): Integer class indices with the shape of ``logits`` without its last
      axis, in ``[0, logits.shape[-1])`` (negative ones count from the end).

Returns:
    array: The per-element loss in float32 (float64 for float64 logits), with the shape of
    ``targets``.
)doc");
}

}  // namespace kiln::python
