// Linear-algebra ops: matmul, addmm, inner, outer.
#include <memory>

#include "kiln/compile.h"
#include "kiln/ops.h"
#include "kiln/primitives_compile.h"
#include "kiln/primitives_linalg.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

int64_t product(Shape::const_iterator begin, Shape::const_iterator end) {
  int64_t n = 1;
  for (auto it = begin; it != end; ++it) n *= *it;
  return n;
}

void check_floating(const char* op, Dtype out, const std::vector<Dtype>& inputs) {
  if (is_inexact(out)) return;
  std::string names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names +=
        (i ? (i + 1 == inputs.size() ? " and " : ", ") : "") + std::string(dtype_name(inputs[i]));
  }
  throw std::invalid_argument(msg("[", op,
                                  "] Only floating-point and complex types are supported; got ",
                                  names, ", which promote to ", out, "."));
}

// The operands of a product, shaped for the primitive, and how to shape its result.
struct Product {
  array a, b;
  Shape prim_shape;  // the primitive's output: batch + (M, N)
  Shape out_shape;   // the op's result (axes added for 1-d operands removed)
};

// NumPy matmul semantics: 1-d operands become matrices, batch axes broadcast. A batched a
// times a plain matrix b folds the batch into M (a reshape), so one gemm serves and the
// gradient of b is one gemm too instead of a batch of them summed afterwards.
Product prepare_product(const char* op, array a, array b, Dtype dtype, const Stream& s) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    throw std::invalid_argument(msg("[", op, "] Operands must have at least one dimension; got ",
                                    shape_str(a.shape()), " and ", shape_str(b.shape()), "."));
  }
  const int k_b = b.ndim() == 1 ? b.shape(0) : b.shape(-2);
  if (a.shape(-1) != k_b) {
    throw std::invalid_argument(msg("[", op, "] Last dimension of a ", shape_str(a.shape()),
                                    " must match the ", b.ndim() == 1 ? "length" : "second to last",
                                    " of b ", shape_str(b.shape()), "."));
  }
  const bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
  const Shape a_orig = a.shape(), b_orig = b.shape();
  a = astype(a, dtype, s);
  b = astype(b, dtype, s);
  if (a_vec) a = reshape(a, {1, a.shape(0)}, s);
  if (b_vec) b = reshape(b, {b.shape(0), 1}, s);
  const int M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);

  Shape batch;
  // A shapeless compile trace keeps the batch axes following the inputs: no flattening of a's
  // batch into its rows, and batch broadcasts to the other operand's batch (BroadcastLike).
  const bool shapeless = detail::in_shapeless_trace();
  if (b.ndim() == 2 && a.ndim() > 2 && !shapeless) {
    batch.assign(a.shape().begin(), a.shape().end() - 2);
    a = reshape(a, {static_cast<int32_t>(product(batch.begin(), batch.end()) * M), K}, s);
  } else {
    Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
    try {
      batch = broadcast_shapes(ba, bb, op);
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(msg("[", op, "] The batch dimensions of a ", shape_str(a_orig),
                                      " and b ", shape_str(b_orig), " cannot be broadcast."));
    }
    Shape sa = batch, sb = batch;
    sa.insert(sa.end(), {M, K});
    sb.insert(sb.end(), {K, N});
    if (shapeless) {
      auto like = [&](const array& x, const array& other, const Shape& shape) {
        if (x.shape() == shape) return x;
        return array(shape, x.dtype(), std::make_shared<BroadcastLike>(s, 2),
                     {x, stop_gradient(other, s)});
      };
      array a0 = a;
      a = like(a, b, sa);
      b = like(b, a0, sb);
    } else {
      a = broadcast_to(a, sa, s);
      b = broadcast_to(b, sb, s);
    }
  }
  Shape prim_shape = a.shape();
  prim_shape.back() = N;
  Shape out_shape = batch;
  if (!a_vec) out_shape.push_back(M);
  if (!b_vec) out_shape.push_back(N);
  return {std::move(a), std::move(b), std::move(prim_shape), std::move(out_shape)};
}

array finish(array out, const Shape& shape, const Stream& s) {
  return out.shape() == shape ? out : reshape(out, shape, s);
}

}  // namespace

array matmul(const array& a, const array& b, StreamOrDevice s) {
  auto stream = to_stream(s);
  Dtype dtype = promote_types(a.dtype(), b.dtype());
  check_floating("matmul", dtype, {a.dtype(), b.dtype()});
  auto p = prepare_product("matmul", a, b, dtype, stream);
  array out(p.prim_shape, dtype, std::make_shared<Matmul>(stream), {p.a, p.b});
  return finish(std::move(out), p.out_shape, stream);
}

array addmm(array c, array a, array b, float alpha, float beta, StreamOrDevice s) {
  auto stream = to_stream(s);
  Dtype dtype = promote_types(promote_types(a.dtype(), b.dtype()), c.dtype());
  check_floating("addmm", dtype, {c.dtype(), a.dtype(), b.dtype()});
  auto p = prepare_product("addmm", a, b, dtype, stream);
  // c broadcasts to the product's shape (NumPy's c + a @ b, without enlarging the result).
  bool fits = c.ndim() <= p.out_shape.size();
  for (size_t i = 1; fits && i <= c.ndim(); ++i) {
    int dc = c.shape()[c.ndim() - i], dp = p.out_shape[p.out_shape.size() - i];
    fits = dc == dp || dc == 1;
  }
  if (!fits) {
    throw std::invalid_argument(msg("[addmm] c of shape ", shape_str(c.shape()),
                                    " cannot be broadcast to the product's shape ",
                                    shape_str(p.out_shape), "."));
  }
  c = broadcast_to(astype(c, dtype, stream), p.out_shape, stream);
  if (c.shape() != p.prim_shape) c = reshape(c, p.prim_shape, stream);
  array out(p.prim_shape, dtype, std::make_shared<AddMM>(stream, alpha, beta),
            {std::move(c), std::move(p.a), std::move(p.b)});
  return finish(std::move(out), p.out_shape, stream);
}

array inner(const array& a, const array& b, StreamOrDevice s) {
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b, s);
  auto stream = to_stream(s);
  if (a.shape(-1) != b.shape(-1)) {
    throw std::invalid_argument(msg("[inner] The last dimensions of a ", shape_str(a.shape()),
                                    " and b ", shape_str(b.shape()), " must match."));
  }
  Dtype dtype = promote_types(a.dtype(), b.dtype());
  check_floating("inner", dtype, {a.dtype(), b.dtype()});
  const int K = a.shape(-1);
  const auto ma = static_cast<int32_t>(product(a.shape().begin(), a.shape().end() - 1));
  const auto mb = static_cast<int32_t>(product(b.shape().begin(), b.shape().end() - 1));
  array prod =
      matmul(reshape(a, {ma, K}, stream), transpose(reshape(b, {mb, K}, stream), stream), stream);
  Shape shape(a.shape().begin(), a.shape().end() - 1);
  shape.insert(shape.end(), b.shape().begin(), b.shape().end() - 1);
  return finish(std::move(prod), shape, stream);
}

array outer(const array& a, const array& b, StreamOrDevice s) {
  auto stream = to_stream(s);
  return multiply(reshape(a, {static_cast<int32_t>(a.size()), 1}, stream),
                  reshape(b, {1, static_cast<int32_t>(b.size())}, stream), stream);
}

}  // namespace kiln
