// Matrix products: matmul, addmm, inner, outer against float64 loops, over every float
// dtype, 1-d operands, broadcast batches, non-contiguous views, empty shapes, errors, and
// the primitives' jvp, vjp and vmap.
#include <limits>

#include "kiln/primitives_linalg.h"
#include "test_utils.h"

using namespace kiln;

namespace {

constexpr Dtype kFloatTypes[] = {float32, float64, float16, bfloat16};

struct Ref {
  Shape shape;
  std::vector<double> values;
};

// Row-major index into `sub` (right-aligned, size-1 axes broadcast) of row-major element i
// of `full`.
size_t broadcast_index(size_t i, const Shape& full, const Shape& sub) {
  size_t idx = 0, mul = 1;
  for (int d = static_cast<int>(full.size()) - 1; d >= 0; --d) {
    size_t coord = i % full[d];
    i /= full[d];
    int sd = d - static_cast<int>(full.size() - sub.size());
    if (sd < 0) continue;
    if (sub[sd] != 1) idx += coord * mul;
    mul *= sub[sd];
  }
  return idx;
}

// NumPy matmul in float64: alpha * a @ b + beta * c (c optional, broadcast to the result).
Ref ref_product(const array& a, const array& b, const array* c = nullptr, double alpha = 1.0,
                double beta = 0.0) {
  auto av = test::to_double(a), bv = test::to_double(b);
  Shape as = a.shape(), bs = b.shape();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape ba(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  Shape batch = broadcast_shapes(ba, bb);
  Ref r;
  r.shape = batch;
  if (!a_vec) r.shape.push_back(M);
  if (!b_vec) r.shape.push_back(N);
  r.values.assign(shape_size(batch) * M * N, 0.0);
  for (size_t i = 0; i < shape_size(batch); ++i) {
    const double* pa = av.data() + broadcast_index(i, batch, ba) * M * K;
    const double* pb = bv.data() + broadcast_index(i, batch, bb) * K * N;
    for (int m = 0; m < M; ++m) {
      for (int n = 0; n < N; ++n) {
        double acc = 0;
        for (int k = 0; k < K; ++k) acc += pa[m * K + k] * pb[k * N + n];
        r.values[(i * M + m) * N + n] = alpha * acc;
      }
    }
  }
  if (c && beta != 0.0) {
    auto cv = test::to_double(*c);
    for (size_t i = 0; i < r.values.size(); ++i) {
      r.values[i] += beta * cv[broadcast_index(i, r.shape, c->shape())];
    }
  }
  return r;
}

// Relative tolerance for a product of K terms computed in `d` (accumulation in float32 for
// the half types, then one rounding).
double product_tolerance(Dtype d) {
  return d == float64 ? 1e-12 : test::tolerance(d) * 4;
}

void expect_matmul(const array& a, const array& b) {
  SCOPED_TRACE(testing::Message() << "a " << shape_str(a.shape()) << " b " << shape_str(b.shape())
                                  << " " << a.dtype());
  array out = matmul(a, b);
  auto ref = ref_product(a, b);
  EXPECT_EQ(out.dtype(), promote_types(a.dtype(), b.dtype()));
  test::expect_allclose(out, ref.shape, ref.values, product_tolerance(out.dtype()));
}

array rand(const Shape& shape, Dtype dtype = float32) {
  return test::random_array(shape, dtype);
}

}  // namespace

TEST(Matmul, MatricesOfEveryFloatType) {
  for (Dtype t : kFloatTypes) {
    expect_matmul(rand({5, 7}, t), rand({7, 3}, t));
    expect_matmul(rand({1, 1}, t), rand({1, 1}, t));
    expect_matmul(rand({33, 65}, t), rand({65, 17}, t));
  }
}

TEST(Matmul, LargeEnoughForThreadedBlas) {
  expect_matmul(rand({256, 192}), rand({192, 320}));
  expect_matmul(rand({130, 140}, float64), rand({140, 150}, float64));
}

TEST(Matmul, MixedDtypesPromote) {
  expect_matmul(rand({4, 6}, int32), rand({6, 5}, float32));
  expect_matmul(rand({4, 6}, float16), rand({6, 5}, float32));
  expect_matmul(rand({4, 6}, bfloat16), rand({6, 5}, float16));  // -> float32
  expect_matmul(rand({4, 6}, float32), rand({6, 5}, float64));
}

TEST(Matmul, VectorOperandsLoseTheirAddedAxis) {
  for (Dtype t : {float32, float16}) {
    expect_matmul(rand({7}, t), rand({7, 3}, t));     // (3,)
    expect_matmul(rand({5, 7}, t), rand({7}, t));     // (5,)
    expect_matmul(rand({7}, t), rand({7}, t));        // ()
    expect_matmul(rand({2, 3, 4}, t), rand({4}, t));  // (2, 3)
    expect_matmul(rand({4}, t), rand({2, 4, 3}, t));  // (2, 3)
  }
  EXPECT_EQ(matmul(rand({7}), rand({7})).ndim(), 0u);
}

TEST(Matmul, BatchAxesBroadcast) {
  for (Dtype t : kFloatTypes) {
    expect_matmul(rand({3, 4, 5}, t), rand({3, 5, 2}, t));
    expect_matmul(rand({2, 1, 3, 4}, t), rand({5, 4, 2}, t));  // (2, 5, 3, 2)
    expect_matmul(rand({3, 4, 5}, t), rand({5, 2}, t));        // batch folded into M
    expect_matmul(rand({4, 5}, t), rand({3, 5, 2}, t));        // a reused per batch
    expect_matmul(rand({1, 3, 4}, t), rand({6, 4, 2}, t));
    expect_matmul(rand({2, 3, 1, 4, 5}, t), rand({3, 2, 5, 3}, t));
  }
}

TEST(Matmul, ManySmallBatchesSpreadOverThreads) {
  expect_matmul(rand({256, 16, 16}), rand({256, 16, 16}));
  expect_matmul(rand({300, 3, 5}, float64), rand({1, 5, 4}, float64));
}

TEST(Matmul, TransposedViewsNeedNoCopy) {
  for (Dtype t : kFloatTypes) {
    array at = transpose(rand({7, 5}, t));  // (5, 7), column-major
    array bt = transpose(rand({3, 7}, t));  // (7, 3)
    expect_matmul(at, rand({7, 3}, t));
    expect_matmul(rand({5, 7}, t), bt);
    expect_matmul(at, bt);
    // Batched: swap the matrix axes of a 3-d array.
    expect_matmul(swapaxes(rand({4, 6, 5}, t), 1, 2), swapaxes(rand({4, 3, 6}, t), 1, 2));
    // Batch axis in the middle of the buffer: row stride > columns, batch stride small.
    expect_matmul(transpose(rand({5, 4, 6}, t), {1, 0, 2}), rand({4, 6, 2}, t));
  }
}

TEST(Matmul, LayoutsBlasCannotReadAreCopied) {
  for (Dtype t : {float32, float64, bfloat16}) {
    // Neither axis of the matrices has unit stride.
    array a = transpose(rand({5, 6, 2}, t), {2, 0, 1});  // (2, 5, 6), strides (1, 12, 2)
    expect_matmul(a, rand({2, 6, 3}, t));
    expect_matmul(rand({2, 4, 5}, t), a);
    // Rows broadcast (zero row stride).
    expect_matmul(broadcast_to(rand({1, 6}, t), {4, 6}), rand({6, 3}, t));
    expect_matmul(rand({4, 6}, t), broadcast_to(rand({6, 1}, t), {6, 3}));
    // A broadcast batch of a layout that must be copied stays one matrix.
    array m = broadcast_to(transpose(rand({6, 4, 2}, t), {2, 0, 1}), {3, 2, 6, 4});
    expect_matmul(m, rand({3, 1, 4, 5}, t));
  }
}

TEST(Matmul, StridedSlices) {
  array x = rand({8, 12});
  // Every second column: no unit stride, copied.
  expect_matmul(slice(x, {0, 0}, {8, 12}, {1, 2}), rand({6, 3}));
  // Every second row: a larger leading dimension, no copy.
  expect_matmul(slice(x, {0, 0}, {8, 12}, {2, 1}), rand({12, 5}));
  // Reversed rows: a negative stride.
  expect_matmul(slice(x, {7, 0}, {-9, 12}, {-1, 1}), rand({12, 2}));
}

TEST(Matmul, EmptyShapes) {
  for (Dtype t : kFloatTypes) {
    expect_matmul(rand({0, 3}, t), rand({3, 4}, t));
    expect_matmul(rand({3, 4}, t), rand({4, 0}, t));
    expect_matmul(rand({2, 0, 3, 4}, t), rand({4, 5}, t));
    // An empty sum is zero (the output is poisoned before the kernel runs).
    array z = matmul(rand({3, 0}, t), rand({0, 4}, t));
    test::expect_allclose(z, {3, 4}, std::vector<double>(12, 0.0));
    expect_matmul(rand({2, 3, 0}, t), rand({2, 0, 4}, t));
  }
}

TEST(Matmul, Errors) {
  auto expect_error = [](auto f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "no exception; expected " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error(
      [] {
        matmul(rand({4, 3}), rand({5, 2}));
      },
      "[matmul] Last dimension of a (4, 3) must match the second to last of b (5, 2).");
  expect_error(
      [] {
        matmul(rand({4, 3}), rand({5}));
      },
      "[matmul] Last dimension of a (4, 3) must match the length of b (5,).");
  expect_error([] { matmul(rand({2, 3, 4}), rand({3, 4, 5})); }, "[matmul] The batch dimensions");
  expect_error([] { matmul(array(1.0f), rand({3})); }, "[matmul] Operands must have at least");
  expect_error(
      [] {
        matmul(rand({2, 2}, int32), rand({2, 2}, int32));
      },
      "[matmul] Only floating-point and complex types are supported; got int32 and int32");
  expect_error([] { matmul(rand({2, 2}, bool_), rand({2, 2}, uint8)); }, "[matmul]");
  // Nothing was left broken: the next product works.
  expect_matmul(rand({2, 2}), rand({2, 2}));
}

TEST(AddMM, ScalesAndBroadcastsC) {
  for (Dtype t : kFloatTypes) {
    SCOPED_TRACE(t);
    array a = rand({5, 7}, t), b = rand({7, 3}, t);
    for (const array& c : {rand({5, 3}, t), rand({3}, t), rand({5, 1}, t), rand({}, t)}) {
      array out = addmm(c, a, b, 0.5f, 2.0f);
      auto ref = ref_product(a, b, &c, 0.5, 2.0);
      test::expect_allclose(out, ref.shape, ref.values, product_tolerance(t));
    }
    // Batched, with transposed operands and the batch folded into M.
    array ab = swapaxes(rand({2, 7, 5}, t), 1, 2), bt = transpose(rand({3, 7}, t));
    array c = rand({5, 3}, t);
    auto ref = ref_product(ab, bt, &c, -1.5, 0.25);
    test::expect_allclose(addmm(c, ab, bt, -1.5f, 0.25f), ref.shape, ref.values,
                          product_tolerance(t));
    // c with its own batch, against a batch of products.
    array bb = rand({2, 7, 3}, t), c3 = rand({2, 1, 3}, t);
    ref = ref_product(ab, bb, &c3, 1.0, 1.0);
    test::expect_allclose(addmm(c3, ab, bb), ref.shape, ref.values, product_tolerance(t));
  }
}

TEST(AddMM, VectorOperandsAndEmptySums) {
  array a = rand({7}), b = rand({7, 3}), c = rand({3});
  auto ref = ref_product(a, b, &c, 1.0, 1.0);
  test::expect_allclose(addmm(c, a, b), ref.shape, ref.values, product_tolerance(float32));
  // K = 0: the product is zero, so the result is beta * c.
  array c2 = rand({3, 4});
  array out = addmm(c2, rand({3, 0}), rand({0, 4}), 1.0f, 3.0f);
  test::expect_allclose(out, {3, 4},
                        test::map_ref(test::to_double(c2), [](double v) { return 3 * v; }));
}

TEST(AddMM, ZeroBetaIgnoresC) {
  array nan_c = full({4, 2}, std::numeric_limits<float>::quiet_NaN());
  array a = rand({4, 3}), b = rand({3, 2});
  auto ref = ref_product(a, b, nullptr, 2.0);
  test::expect_allclose(addmm(nan_c, a, b, 2.0f, 0.0f), ref.shape, ref.values,
                        product_tolerance(float32));
}

TEST(AddMM, Errors) {
  EXPECT_THROW(addmm(rand({2, 4, 3}), rand({4, 5}), rand({5, 3})), std::invalid_argument);
  try {
    addmm(rand({6}), rand({4, 5}), rand({5, 3}));
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[addmm] c of shape (6,)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(addmm(rand({3}), rand({4, 5}), rand({4, 3})), std::invalid_argument);
  EXPECT_THROW(addmm(rand({3}, int32), rand({4, 5}, int32), rand({5, 3}, int32)),
               std::invalid_argument);
}

TEST(Inner, SumsOverTheLastAxes) {
  for (Dtype t : {float32, float64, float16}) {
    array a = rand({2, 3, 4}, t), b = rand({5, 4}, t);
    array out = inner(a, b);
    auto ref = ref_product(reshape(a, {6, 4}), transpose(b));
    test::expect_allclose(out, {2, 3, 5}, ref.values, product_tolerance(t));
    array v = rand({6}, t), w = rand({6}, t);
    auto rv = ref_product(v, w);
    test::expect_allclose(inner(v, w), {}, rv.values, product_tolerance(t));
  }
  EXPECT_THROW(inner(rand({2, 3}), rand({2, 4})), std::invalid_argument);
  EXPECT_THROW(inner(rand({3}, int32), rand({3}, int32)), std::invalid_argument);
}

TEST(Inner, ScalarOperandMultiplies) {
  array a = rand({3, 2}), s(2.5f);
  test::expect_allclose(inner(a, s), {3, 2},
                        test::map_ref(test::to_double(a), [](double v) { return 2.5 * v; }));
}

TEST(Outer, FlattensBothOperands) {
  for (Dtype t : {float32, int32}) {
    array a = rand({2, 3}, t), b = rand({4}, t);
    auto av = test::to_double(a), bv = test::to_double(b);
    std::vector<double> ref;
    for (double x : av)
      for (double y : bv) ref.push_back(x * y);
    test::expect_allclose(outer(a, b), {6, 4}, ref);
  }
}

// ---------------------------------------------------------------- transforms of the primitives

namespace {

// The Matmul node of matmul(a, b) for 2-d operands (no reshape or broadcast around it).
std::pair<std::shared_ptr<Primitive>, std::vector<array>> node_of(const array& out) {
  return {out.primitive_ptr(), out.inputs()};
}

}  // namespace

TEST(MatmulTransforms, VjpIsTheProductWithTheOtherOperandTransposed) {
  for (Dtype t : {float32, float64}) {
    array a = rand({4, 6}, t), b = rand({6, 3}, t), cot = rand({4, 3}, t);
    array out = matmul(a, b);
    auto [prim, inputs] = node_of(out);
    ASSERT_STREQ(prim->name(), "Matmul");
    auto grads = prim->vjp(inputs, {cot}, {0, 1}, {out});
    auto ga = ref_product(cot, transpose(b)), gb = ref_product(transpose(a), cot);
    test::expect_allclose(grads[0], {4, 6}, ga.values, product_tolerance(t));
    test::expect_allclose(grads[1], {6, 3}, gb.values, product_tolerance(t));
    // Only the second argument.
    auto g1 = prim->vjp(inputs, {cot}, {1}, {out});
    ASSERT_EQ(g1.size(), 1u);
    test::expect_allclose(g1[0], {6, 3}, gb.values, product_tolerance(t));
  }
}

// nn.Linear's x @ W.T and addmm(bias, x, W.T): the gradient of W comes back row-contiguous
// (W's layout), and so does a's for W.T @ x; the values are the plain products'.
TEST(MatmulTransforms, GradientsOfTransposedViewsHaveTheParametersLayout) {
  for (Dtype t : {float32, float64}) {
    array x = rand({5, 4}, t), w = rand({3, 4}, t), bias = rand({3}, t), cot = rand({5, 3}, t);
    auto f = [](const std::vector<array>& in) {
      return std::vector<array>{matmul(in[0], transpose(in[1])),
                                addmm(in[2], in[0], transpose(in[1]), 0.5f, 1.0f)};
    };
    auto grads = vjp(f, {x, w, bias}, {cot, cot}).second;
    eval(grads);
    EXPECT_TRUE(grads[1].flags().row_contiguous) << t;
    // dW = 1.5 cot^T x and dx = 1.5 cot W (both products).
    auto ref = ref_product(transpose(cot), x, nullptr, 1.5);
    test::expect_allclose(grads[1], {3, 4}, ref.values, product_tolerance(t));
    auto rx = ref_product(cot, w, nullptr, 1.5);
    test::expect_allclose(grads[0], {5, 4}, rx.values, product_tolerance(t));

    // The first operand transposed: W.T @ y with W (6, 3): dW = y cot^T.
    array w2 = rand({6, 3}, t), y = rand({6, 2}, t), cot2 = rand({3, 2}, t);
    auto g = vjp(
                 [](const std::vector<array>& in) {
                   return std::vector<array>{matmul(transpose(in[0]), in[1])};
                 },
                 {w2, y}, {cot2})
                 .second;
    eval(g);
    EXPECT_TRUE(g[0].flags().row_contiguous) << t;
    auto r2 = ref_product(y, transpose(cot2));
    test::expect_allclose(g[0], {6, 3}, r2.values, product_tolerance(t));
  }
  // complex64 takes conjugates (MLX's convention): the same gradients as through a copy of W.T.
  array x = astype(rand({5, 4}), complex64) * array(std::complex<float>(0.5f, -1.0f));
  array w = astype(rand({3, 4}), complex64) * array(std::complex<float>(1.0f, 2.0f));
  array cot = astype(rand({5, 3}), complex64);
  auto through_view = vjp(
                          [](const std::vector<array>& in) {
                            return std::vector<array>{matmul(in[0], transpose(in[1]))};
                          },
                          {x, w}, {cot})
                          .second;
  auto through_copy = vjp(
                          [](const std::vector<array>& in) {
                            return std::vector<array>{matmul(in[0], copy(transpose(in[1])))};
                          },
                          {x, w}, {cot})
                          .second;
  for (int i = 0; i < 2; ++i)
    EXPECT_TRUE(allclose(through_view[i], through_copy[i], 1e-5, 1e-6).item<bool>()) << i;
}

TEST(MatmulTransforms, JvpIsTheProductRule) {
  array a = rand({4, 6}), b = rand({6, 3}), ta = rand({4, 6}), tb = rand({6, 3});
  array out = matmul(a, b);
  auto [prim, inputs] = node_of(out);
  auto t = prim->jvp(inputs, {ta, tb}, {0, 1});
  auto r1 = ref_product(ta, b), r2 = ref_product(a, tb);
  for (size_t i = 0; i < r1.values.size(); ++i) r1.values[i] += r2.values[i];
  test::expect_allclose(t[0], {4, 3}, r1.values, product_tolerance(float32));
  auto only_b = prim->jvp(inputs, {tb}, {1});
  test::expect_allclose(only_b[0], {4, 3}, r2.values, product_tolerance(float32));
}

TEST(MatmulTransforms, VmapOverEitherOperand) {
  array a = rand({4, 6}), b = rand({6, 3});
  auto [prim, inputs] = node_of(matmul(a, b));
  // a mapped along its axis 1: five (4, 6) matrices stored as (4, 5, 6).
  array as = rand({4, 5, 6});
  auto [outs, axes] = prim->vmap({as, b}, {1, -1});
  ASSERT_EQ(axes[0], 0);
  auto ref = ref_product(moveaxis(as, 1, 0), b);
  test::expect_allclose(outs[0], {5, 4, 3}, ref.values, product_tolerance(float32));
  // b mapped along axis 2, a not.
  array bs = rand({6, 3, 2});
  auto [outs2, axes2] = prim->vmap({a, bs}, {-1, 2});
  ASSERT_EQ(axes2[0], 0);
  ref = ref_product(a, moveaxis(bs, 2, 0));
  test::expect_allclose(outs2[0], {2, 4, 3}, ref.values, product_tolerance(float32));
  // Both mapped, along different axes.
  array bs5 = rand({6, 3, 5});
  auto [outs3, axes3] = prim->vmap({as, bs5}, {1, 2});
  ASSERT_EQ(axes3[0], 0);
  ref = ref_product(moveaxis(as, 1, 0), moveaxis(bs5, 2, 0));
  test::expect_allclose(outs3[0], {5, 4, 3}, ref.values, product_tolerance(float32));
  // Neither mapped.
  auto [outs4, axes4] = prim->vmap({a, b}, {-1, -1});
  EXPECT_EQ(axes4[0], -1);
  ref = ref_product(a, b);
  test::expect_allclose(outs4[0], {4, 3}, ref.values, product_tolerance(float32));
}

TEST(AddMMTransforms, GradientsScaleByAlphaAndBeta) {
  array c = rand({4, 3}), a = rand({4, 6}), b = rand({6, 3}), cot = rand({4, 3});
  array out = addmm(c, a, b, 2.0f, -0.5f);
  auto [prim, inputs] = node_of(out);
  ASSERT_STREQ(prim->name(), "AddMM");
  auto grads = prim->vjp(inputs, {cot}, {0, 1, 2}, {out});
  test::expect_allclose(grads[0], {4, 3},
                        test::map_ref(test::to_double(cot), [](double v) { return -0.5 * v; }));
  auto ga = ref_product(cot, transpose(b), nullptr, 2.0);
  auto gb = ref_product(transpose(a), cot, nullptr, 2.0);
  test::expect_allclose(grads[1], {4, 6}, ga.values, product_tolerance(float32));
  test::expect_allclose(grads[2], {6, 3}, gb.values, product_tolerance(float32));

  array tc = rand({4, 3}), ta = rand({4, 6});
  auto t = prim->jvp(inputs, {tc, ta}, {0, 1});
  auto r = ref_product(ta, b, &tc, 2.0, -0.5);
  test::expect_allclose(t[0], {4, 3}, r.values, product_tolerance(float32));
}

TEST(AddMMTransforms, VmapOverC) {
  array c = rand({4, 3}), a = rand({4, 6}), b = rand({6, 3});
  auto [prim, inputs] = node_of(addmm(c, a, b, 1.0f, 2.0f));
  array cs = rand({7, 4, 3});
  auto [outs, axes] = prim->vmap({cs, a, b}, {0, -1, -1});
  ASSERT_EQ(axes[0], 0);
  auto prod = ref_product(a, b);
  auto cv = test::to_double(cs);
  std::vector<double> ref(cv.size());
  for (size_t i = 0; i < cv.size(); ++i) ref[i] = prod.values[i % 12] + 2.0 * cv[i];
  test::expect_allclose(outs[0], {7, 4, 3}, ref, product_tolerance(float32));
}

TEST(Matmul, ViewsReachBlasWithoutCopies) {
  // Copying the transposed (2048, 256) operand would add 2 MiB to the peak; the result is
  // 8 KiB.
  array a = transpose(rand({2048, 256}));
  array b = rand({2048, 8});
  array bb = broadcast_to(rand({256, 8}), {64, 256, 8});  // a broadcast batch: 512 KiB if copied
  array a3 = rand({64, 32, 256});
  eval(a, b, bb, a3);
  synchronize();
  reset_peak_memory(Device::cpu);
  size_t base = get_active_memory(Device::cpu);
  array out = matmul(a, b, Device::cpu);  // CPU BLAS, whatever the default device
  out.eval();
  // The peak restarts at 0 (MLX): it may stay below the active bytes.
  auto growth = [&] { return std::max(get_peak_memory(Device::cpu), base) - base; };
  EXPECT_LT(growth(), 64u * 1024) << "the transposed view was copied";
  auto ref = ref_product(a, b);
  test::expect_allclose(out, ref.shape, ref.values, product_tolerance(float32));

  reset_peak_memory(Device::cpu);
  base = get_active_memory(Device::cpu);
  array out3 = matmul(a3, bb, Device::cpu);  // (64, 32, 8): 64 KiB
  out3.eval();
  EXPECT_LT(growth(), 160u * 1024) << "the broadcast batch was copied";
  ref = ref_product(a3, bb);
  test::expect_allclose(out3, ref.shape, ref.values, product_tolerance(float32));
}

TEST(MatmulTransforms, VjpSumsOverBroadcastBatches) {
  for (Dtype t : {float32, float64}) {
    // a's batch of 1 and b's missing batch axis both broadcast against the other's.
    array a = rand({1, 3, 4}, t), b = rand({2, 4, 5}, t), cot = rand({2, 3, 5}, t);
    auto f = [](const std::vector<array>& in) { return std::vector<array>{matmul(in[0], in[1])}; };
    auto [outs, grads] = vjp(f, {a, b}, {cot});
    ASSERT_EQ(grads[0].shape(), a.shape());
    ASSERT_EQ(grads[1].shape(), b.shape());
    // d a = sum over the batch of cot_i @ b_i^T; d b_i = a^T @ cot_i.
    auto per_batch = ref_product(cot, swapaxes(b, 1, 2));  // (2, 3, 4)
    std::vector<double> ga(12, 0.0);
    for (size_t i = 0; i < per_batch.values.size(); ++i) ga[i % 12] += per_batch.values[i];
    test::expect_allclose(grads[0], {1, 3, 4}, ga, product_tolerance(t));
    auto gb = ref_product(swapaxes(a, 1, 2), cot);
    test::expect_allclose(grads[1], {2, 4, 5}, gb.values, product_tolerance(t));

    // A plain matrix b against a batched a: its gradient is one product over the batch.
    array a3 = rand({3, 2, 4}, t), w = rand({4, 5}, t), cot3 = rand({3, 2, 5}, t);
    auto [o2, g2] = vjp(f, {a3, w}, {cot3});
    auto gw = ref_product(transpose(reshape(a3, {6, 4})), reshape(cot3, {6, 5}));
    test::expect_allclose(g2[1], {4, 5}, gw.values, product_tolerance(t));
  }
}

TEST(MatmulTransforms, VmapOfAFunctionUsingMatmul) {
  array xs = rand({5, 3, 4}), w = rand({4, 2});
  auto f = [&](const array& x) { return matmul(x, w); };
  array ys = vmap(f, 0, 1)(xs);  // outputs stacked along axis 1
  ASSERT_EQ(ys.shape(), (Shape{3, 5, 2}));
  auto ref = ref_product(xs, w);  // (5, 3, 2)
  test::expect_allclose(moveaxis(ys, 1, 0), {5, 3, 2}, ref.values, product_tolerance(float32));
}
