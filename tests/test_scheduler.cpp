// The evaluation machinery: deep graphs, multi-output nodes, memory release, errors,
// async evaluation and concurrent evaluation from several threads.
#include <atomic>
#include <thread>

#include "kiln/compile.h"
#include "kiln/eval_order.h"
#include "kiln/primitive.h"
#include "test_utils.h"

using namespace kiln;

namespace {

// A two-output primitive for the tests: (x + 1, x * 2), float32 on the CPU.
class PlusOneTimesTwo : public Primitive {
 public:
  explicit PlusOneTimesTwo(Stream s) : Primitive(s) {}
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    ++evaluations;
    const array& x = inputs[0];
    for (auto& o : outputs) o.set_data(Storage::host(o.nbytes()));
    auto px = x.data<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      outputs[0].data<float>()[i] = px[elem_to_loc(i, x.shape(), x.strides())] + 1;
      outputs[1].data<float>()[i] = px[elem_to_loc(i, x.shape(), x.strides())] * 2;
    }
  }
  void eval_gpu(const std::vector<array>&, std::vector<array>&) override {
    throw std::runtime_error("cpu only");
  }
  const char* name() const override { return "PlusOneTimesTwo"; }
  static inline std::atomic<int> evaluations{0};
};

// A primitive whose evaluation throws.
class Fails : public UnaryPrimitive {
 public:
  explicit Fails(Stream s) : UnaryPrimitive(s) {}
  void eval_cpu(const std::vector<array>&, array&) override {
    throw std::runtime_error("[Fails] deliberate failure");
  }
  void eval_gpu(const std::vector<array>&, array&) override {}
  const char* name() const override { return "Fails"; }
};

std::vector<array> plus_one_times_two(const array& x) {
  return array::make_arrays({x.shape(), x.shape()}, {float32, float32},
                            std::make_shared<PlusOneTimesTwo>(default_stream(Device::cpu)), {x});
}

}  // namespace

TEST(Scheduler, DeepChainDoesNotOverflowTheStack) {
  array x(0.0f);
  array y = x;
  for (int i = 0; i < 100000; ++i) y = add(y, array(1.0f), Device::cpu);
  EXPECT_EQ(y.item<float>(), 100000.0f);
  EXPECT_FALSE(y.has_primitive());  // evaluated arrays drop their graph
}

TEST(Scheduler, DroppingALongUnevaluatedChainIsIterative) {
  array y(0.0f);
  for (int i = 0; i < 200000; ++i) y = add(y, array(1.0f), Device::cpu);
  y = array(0.0f);  // destroys the chain without recursion
  SUCCEED();
}

TEST(Scheduler, ChainMemoryStaysAtAFewArrays) {
  const int n = 1 << 20;  // 4 MiB per float32 array
  array x = test::random_array({n}, float32);
  x.eval();
  synchronize();
  reset_peak_memory(Device::cpu);
  size_t base = get_active_memory(Device::cpu);
  array y = x;
  for (int i = 0; i < 200; ++i) y = exp(add(y, array(-1.0f), Device::cpu), Device::cpu);
  y.eval();
  size_t peak = get_peak_memory(Device::cpu) - base;
  // 400 intermediates of 4 MiB each would be 1.6 GB; a few arrays is at most ~16 MiB.
  EXPECT_LE(peak, 4u * n * sizeof(float)) << "peak " << peak;
}

// Small host blocks are reused from per-size free lists; the cache shows in
// get_cache_memory and clear_cache / set_cache_limit(0) empty it.
TEST(Scheduler, SmallHostBlocksAreCachedAndCleared) {
  clear_cache(Device::cpu);
  size_t before = get_cache_memory(Device::cpu);
  EXPECT_EQ(before, 0u);
  void* p = allocator::host_malloc(100);  // rounds to 128 bytes
  allocator::host_free(p, 100);
  EXPECT_EQ(get_cache_memory(Device::cpu), 128u);
  void* q = allocator::host_malloc(128);
  EXPECT_EQ(q, p) << "a freed block of the same size class is reused";
  EXPECT_EQ(get_cache_memory(Device::cpu), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 64, 0u);
  allocator::host_free(q, 128);
  clear_cache(Device::cpu);
  EXPECT_EQ(get_cache_memory(Device::cpu), 0u);

  size_t old = set_cache_limit(Device::cpu, 0);
  p = allocator::host_malloc(64);
  allocator::host_free(p, 64);
  EXPECT_EQ(get_cache_memory(Device::cpu), 0u) << "cache limit 0 keeps nothing";
  set_cache_limit(Device::cpu, old);
  for (int i = 0; i < 3; ++i) {  // arrays go through the same path, values intact
    array x = add(array({1.0f, 2.0f}), array(1.0f), Device::cpu);
    x.eval();
    EXPECT_EQ(x.data<float>()[1], 3.0f);
  }
}

TEST(Scheduler, MultiOutputPrimitiveRunsOnceForAllOutputs) {
  array x({1.0f, 2.0f, 3.0f});
  PlusOneTimesTwo::evaluations = 0;
  auto outs = plus_one_times_two(x);
  EXPECT_EQ(outs[0].siblings().size(), 1u);
  EXPECT_EQ(outs[1].sibling_position(), 1u);
  eval(outs);
  EXPECT_EQ(PlusOneTimesTwo::evaluations.load(), 1);
  EXPECT_EQ(outs[0].data<float>()[2], 4.0f);
  EXPECT_EQ(outs[1].data<float>()[2], 6.0f);
}

TEST(Scheduler, DroppedSiblingIsStillComputed) {
  array x({1.0f, 2.0f});
  array first = plus_one_times_two(x)[0];  // the second output is dropped at once
  EXPECT_EQ(first.siblings().size(), 1u);  // recreated on demand
  first.eval();
  EXPECT_EQ(first.data<float>()[1], 3.0f);
}

TEST(Scheduler, AsyncEvalThenWait) {
  array x = test::random_array({1000}, float32);
  array y = exp(x, Device::cpu);
  async_eval(y);
  EXPECT_NE(y.status(), array::Status::unscheduled);
  y.wait();
  EXPECT_TRUE(y.is_available());
  auto xs = test::to_double(x);
  test::expect_allclose(y, {1000}, test::map_ref(xs, [](double v) { return std::exp(v); }));
}

TEST(Scheduler, ErrorsPropagateAndLeaveOtherArraysUsable) {
  array x({1.0f, 2.0f});
  array bad(x.shape(), float32, std::make_shared<Fails>(default_stream(Device::cpu)), {x});
  array downstream = add(bad, array(1.0f), Device::cpu);
  array fine = add(x, array(1.0f), Device::cpu);
  EXPECT_THROW(eval(downstream, fine), std::runtime_error);
  EXPECT_EQ(fine.data<float>()[0], 2.0f);  // evaluated in the same graph, unaffected
  EXPECT_THROW(downstream.eval(), std::runtime_error);
  // The stream still works.
  EXPECT_THROW(add(x, x, Device::cpu).data<float>(), std::invalid_argument);  // not evaluated
  EXPECT_EQ(add(array(1.0f), array(2.0f), Device::cpu).item<float>(), 3.0f);
}

// As MLX: an error of work that async_eval submitted surfaces in synchronize, once; one
// that an array already raised does not surface again.
TEST(Scheduler, SynchronizeRaisesAsyncErrorsOnce) {
  const Stream cpu = default_stream(Device::cpu);
  synchronize(cpu);  // nothing pending
  array x({1.0f, 2.0f});
  array bad(x.shape(), float32, std::make_shared<Fails>(cpu), {x});
  array downstream = add(bad, array(1.0f), Device::cpu);
  async_eval(downstream);
  try {
    synchronize(cpu);
    ADD_FAILURE() << "synchronize did not raise the failed task's error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("[Fails]"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(synchronize(cpu));                           // raised once
  EXPECT_THROW(downstream.eval(), std::runtime_error);         // the array keeps its error
  EXPECT_EQ(sum(add(x, x, Device::cpu)).item<float>(), 6.0f);  // the stream still works

  // Raised through the array first: synchronize has nothing left to raise.
  array bad2(x.shape(), float32, std::make_shared<Fails>(cpu), {x});
  async_eval(bad2);
  EXPECT_THROW(bad2.wait(), std::runtime_error);
  EXPECT_NO_THROW(synchronize(cpu));
  EXPECT_NO_THROW(synchronize());

  // synchronize() over every stream raises it too.
  array bad3(x.shape(), float32, std::make_shared<Fails>(cpu), {x});
  async_eval(bad3);
  EXPECT_THROW(synchronize(), std::runtime_error);
  EXPECT_NO_THROW(synchronize());
}

TEST(Scheduler, TwoThreadsOnIndependentGraphs) {
  std::atomic<int> failures{0};
  auto work = [&](float start) {
    for (int round = 0; round < 50; ++round) {
      array y(start);
      for (int i = 0; i < 200; ++i) y = add(y, array(1.0f), Device::cpu);
      if (round % 2) async_eval(y);
      if (y.item<float>() != start + 200.0f) ++failures;
    }
  };
  std::thread t1(work, 0.0f), t2(work, 1000.0f);
  t1.join();
  t2.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Scheduler, TwoStreamsWithCrossDependencies) {
  Stream s1 = new_stream(Device::cpu), s2 = new_stream(Device::cpu);
  array x({1.0f, 2.0f, 3.0f});
  array a = add(x, array(1.0f), s1);
  array b = add(a, a, s2);  // depends on s1
  array c = add(b, a, s1);  // depends on s2
  for (int i = 0; i < 100; ++i) c = add(c, b, i % 2 ? s1 : s2);
  eval(c);
  // a = x+1, b = 2a, c = 3a + 100 * 2a = 203a
  auto got = test::to_double(c);
  EXPECT_EQ(got[0], 203.0 * 2);
  EXPECT_EQ(got[2], 203.0 * 4);
  synchronize();
}

namespace {

// Where `a`'s node lies in a submission order.
size_t position(const std::vector<scheduler::Task>& order, const array& a) {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i].arr.graph_node() == a.graph_node()) return i;
  ADD_FAILURE() << "node not in the order";
  return order.size();
}

}  // namespace

// The shape of a data-parallel step: a long chain (the backward pass), an early branch that
// another stream needs (a gradient bucket for the all-reduce) and a task reading that
// stream's result (the averaged gradient). The depth-first walk reaches the branch after
// the chain; with two streams it goes first, and the reader after the chain.
TEST(Scheduler, WorkForAnotherStreamIsSubmittedFirstAndItsReadersLast) {
  Stream s1 = new_stream(Device::cpu), s2 = new_stream(Device::cpu);
  array x({1.0f, 2.0f, 3.0f});
  auto build = [&](Stream other) {
    std::vector<array> chain{x};
    for (int i = 0; i < 20; ++i) chain.push_back(multiply(chain.back(), array(2.0f), s1));
    array bucket = add(x, array(1.0f), s1);            // x + 1
    array packed = multiply(bucket, array(3.0f), s1);  // feeds only the other stream
    array reduced = add(packed, packed, other);        // 6x + 6
    array read = multiply(reduced, array(0.5f), s1);   // 3x + 3
    array out = add(read, chain.back(), s1);           // read first: depth-first visits it first
    return std::tuple{chain, bucket, packed, reduced, read, out};
  };
  {
    auto [chain, bucket, packed, reduced, read, out] = build(s2);
    auto order = detail::eval_order({out});  // also holds the scalars' broadcasts
    EXPECT_LT(position(order, bucket), position(order, packed));
    EXPECT_LT(position(order, packed), position(order, reduced));
    EXPECT_LT(position(order, reduced), position(order, chain[1]));
    for (int i = 1; i < 20; ++i) {
      EXPECT_LT(position(order, chain[i]), position(order, chain[i + 1])) << "chain " << i;
    }
    EXPECT_GT(position(order, read), position(order, chain[20]));
    EXPECT_EQ(position(order, out), order.size() - 1);
  }
  {  // One stream: the depth-first order, reader and its branch before the chain.
    auto [chain, bucket, packed, reduced, read, out] = build(s1);
    auto order = detail::eval_order({out});
    EXPECT_LT(position(order, read), position(order, chain[1]));
  }
  auto [chain, bucket, packed, reduced, read, out] = build(s2);
  eval(out);
  auto got = test::to_double(out);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i], 3.0 * (i + 1) + 3 + (i + 1) * 1048576.0);
  synchronize();
}

// A compiled function replays its recorded primitives, so two calls in one graph give nodes
// that share primitive objects; the order must tell the nodes apart (it once took them for
// one task and ran a reader before its input existed).
TEST(Scheduler, ReplayedNodesOnTwoStreamsKeepTheirOrder) {
  Stream s1 = new_stream(Device::cpu), s2 = new_stream(Device::cpu);
  auto step = compile([&](const std::vector<array>& in) {
    array sent = multiply(add(in[0], array(1.0f), s1), array(2.0f), s2);  // 2(x + 1)
    return std::vector<array>{subtract(sent, in[0], s1)};                 // x + 2
  });
  array x({1.0f, 2.0f, 3.0f});
  array y = x;
  for (int i = 0; i < 8; ++i) y = step({y})[0];
  eval(y);
  auto got = test::to_double(y);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i], i + 1 + 16.0);
  synchronize();
}
