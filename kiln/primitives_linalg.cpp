// Transformations and shapes of the linear-algebra primitives.
#include "kiln/primitives_linalg.h"

#include <algorithm>

#include "kiln/ops.h"
#include "kiln/primitives_common.h"
#include "kiln/primitives_layout.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

array mT(const array& x, const Stream& s) {
  return swapaxes(x, -1, -2, s);
}

array scaled(const array& x, float factor, const Stream& s) {
  return factor == 1.0f ? x : multiply(x, array(factor, x.dtype()), s);
}

// Whether `x` is a view of another array with its last two axes swapped (W.T).
bool is_transposed_matrix(const array& x) {
  if (!x.has_primitive()) return false;
  auto* t = dynamic_cast<const Transpose*>(&x.primitive());
  if (!t) return false;
  const std::vector<int>& ax = t->axes();
  const int n = static_cast<int>(ax.size());
  if (n < 2 || ax[n - 2] != n - 1 || ax[n - 1] != n - 2) return false;
  for (int i = 0; i < n - 2; ++i)
    if (ax[i] != i) return false;
  return true;
}

// Cotangents of a and b for out = alpha * (a @ b): cot @ b^H and a^H @ cot (the conjugate
// transposes for complex64, MLX's convention, docs/transforms.md). The primitive's inputs
// have equal batch axes, so the products have exactly their shapes; the Broadcast nodes
// the op inserted sum over broadcast batch axes in their own vjp.
//
// The gradient of an operand that is a transposed view (x @ W.T: nn.Linear's weight) is
// computed transposed, (cot^T conj(a))^T, so that the Transpose's own vjp hands back a
// row-contiguous gradient in the parameter's layout (PyTorch's gradient layout contract):
// optimizers, fused updates and all-reduces then read it without a copy. Same products.
array matmul_vjp(const array& a, const array& b, const array& cot, int arg, float alpha,
                 const Stream& s) {
  auto mH = [&](const array& x) { return conj_if_complex(mT(x, s), s); };
  if (arg == 1 && is_transposed_matrix(b))
    return scaled(mT(matmul(mT(cot, s), conj_if_complex(a, s), s), s), alpha, s);
  if (arg == 0 && is_transposed_matrix(a))
    return scaled(mT(matmul(conj_if_complex(b, s), mT(cot, s), s), s), alpha, s);
  return scaled(arg == 0 ? matmul(cot, mH(b), s) : matmul(mH(a), cot, s), alpha, s);
}

// Tangent of alpha * (a @ b) given tangents of the inputs listed (0: a, 1: b).
std::optional<array> matmul_jvp(const array& a, const array& b, const std::vector<array>& tangents,
                                const std::vector<int>& argnums, int first, float alpha,
                                const Stream& s) {
  std::optional<array> out;
  for (size_t i = 0; i < argnums.size(); ++i) {
    int arg = argnums[i] - first;
    if (arg < 0) continue;
    array t = arg == 0 ? matmul(tangents[i], b, s) : matmul(a, tangents[i], s);
    out = out ? add(*out, t, s) : t;
  }
  if (out) out = scaled(*out, alpha, s);
  return out;
}

// Mapped operands get their mapped axis in front; unmapped ones broadcast against it, as
// matmul prepends axes to the operand of lower rank.
array batch_first(const array& x, int axis, const Stream& s) {
  return axis >= 0 ? moveaxis(x, axis, 0, s) : x;
}

Shape product_shape(const array& a, const array& b) {
  // The op has checked its operands; a shapeless compile replay may bring others.
  const bool ok = a.ndim() == b.ndim() && a.ndim() >= 2 && a.shape(-1) == b.shape(-2) &&
                  std::equal(a.shape().begin(), a.shape().end() - 2, b.shape().begin());
  if (!ok) {
    throw std::invalid_argument(msg("[matmul] Operands of shapes ", shape_str(a.shape()), " and ",
                                    shape_str(b.shape()), " cannot be multiplied."));
  }
  Shape shape = a.shape();
  shape.back() = b.shape().back();
  return shape;
}

}  // namespace

// ---------------------------------------------------------------- Matmul
std::vector<Shape> Matmul::output_shapes(const std::vector<array>& inputs) {
  return {product_shape(inputs[0], inputs[1])};
}

std::vector<array> Matmul::jvp(const std::vector<array>& primals,
                               const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  return {*matmul_jvp(primals[0], primals[1], tangents, argnums, 0, 1.0f, stream())};
}

std::vector<array> Matmul::vjp(const std::vector<array>& primals,
                               const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> grads;
  for (int arg : argnums) {
    grads.push_back(matmul_vjp(primals[0], primals[1], cotangents[0], arg, 1.0f, stream()));
  }
  return grads;
}

std::pair<std::vector<array>, std::vector<int>> Matmul::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  const auto& s = stream();
  array out = matmul(batch_first(inputs[0], axes[0], s), batch_first(inputs[1], axes[1], s), s);
  return {{out}, {axes[0] >= 0 || axes[1] >= 0 ? 0 : -1}};
}

// ---------------------------------------------------------------- AddMM
bool AddMM::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const AddMM*>(&other);
  return o && o->alpha_ == alpha_ && o->beta_ == beta_;
}

void AddMM::print(std::ostream& os) {
  os << "AddMM(alpha=" << alpha_ << ", beta=" << beta_ << ")";
}

std::vector<Shape> AddMM::output_shapes(const std::vector<array>& inputs) {
  return {product_shape(inputs[1], inputs[2])};
}

std::vector<array> AddMM::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                              const std::vector<int>& argnums) {
  const auto& s = stream();
  auto out = matmul_jvp(primals[1], primals[2], tangents, argnums, 1, alpha_, s);
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] != 0) continue;
    array t = scaled(tangents[i], beta_, s);
    out = out ? add(*out, t, s) : t;
  }
  return {*out};
}

std::vector<array> AddMM::vjp(const std::vector<array>& primals,
                              const std::vector<array>& cotangents, const std::vector<int>& argnums,
                              const std::vector<array>&) {
  const auto& s = stream();
  std::vector<array> grads;
  for (int arg : argnums) {
    grads.push_back(arg == 0
                        ? scaled(cotangents[0], beta_, s)
                        : matmul_vjp(primals[1], primals[2], cotangents[0], arg - 1, alpha_, s));
  }
  return grads;
}

std::pair<std::vector<array>, std::vector<int>> AddMM::vmap(const std::vector<array>& inputs,
                                                            const std::vector<int>& axes) {
  const auto& s = stream();
  if (axes[0] < 0 && axes[1] < 0 && axes[2] < 0) {
    return {{addmm(inputs[0], inputs[1], inputs[2], alpha_, beta_, s)}, {-1}};
  }
  array c = batch_first(inputs[0], axes[0], s);
  array a = batch_first(inputs[1], axes[1], s);
  array b = batch_first(inputs[2], axes[2], s);
  if (axes[1] < 0 && axes[2] < 0) {
    // Only c is mapped: c may not enlarge the product, so give a the batch axis (a
    // zero-stride view; the product is computed once per batch element).
    Shape shape = a.shape();
    shape.insert(shape.begin(), c.shape(0));
    a = broadcast_to(expand_dims(a, 0, s), shape, s);
  }
  return {{addmm(c, a, b, alpha_, beta_, s)}, {0}};
}

}  // namespace kiln
