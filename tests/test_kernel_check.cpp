// Checking mode of CPU custom kernels (KILN_KERNEL_CHECK=1): out-of-bounds reads and writes
// of inputs, outputs and shared memory, and barriers that not every thread of a block
// reaches, each stop the launch with an error naming the kernel, the array, the index, and
// the block and thread; the process and other arrays stay usable.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kiln/fast.h"
#include "test_utils.h"

namespace kiln {
namespace {

const Device kCpu = Device::cpu;

std::tuple<int, int, int> d1(int n) {
  return {n, 1, 1};
}

class KernelCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* o = std::getenv("KILN_KERNEL_CHECK")) old_ = o;
    setenv("KILN_KERNEL_CHECK", "1", 1);
  }
  void TearDown() override {
    if (old_)
      setenv("KILN_KERNEL_CHECK", old_->c_str(), 1);
    else
      unsetenv("KILN_KERNEL_CHECK");
  }

  // Evaluates the first output and returns the error message ("" when none).
  static std::string error_of(std::vector<array> outs) {
    try {
      outs[0].eval();
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }

  std::optional<std::string> old_;
};

void expect_contains(const std::string& m, const std::vector<std::string>& parts) {
  EXPECT_FALSE(m.empty()) << "expected an error";
  for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' in: " << m;
}

TEST_F(KernelCheck, OutOfBoundsWriteOfAnOutput) {
  auto k = fast::metal_kernel("check_oob_write", {"inp"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    out[i + 1] = inp[i];
  )");
  array x = test::random_array({64}, float32);
  std::string m =
      error_of(k({x}, {{64}}, {float32}, d1(64), d1(32), {}, std::nullopt, false, kCpu));
  expect_contains(m, {"[metal_kernel]", "check_oob_write", "'out'", "index 64", "64 elements",
                      "block (1, 0, 0)", "thread (31, 0, 0)"});
}

TEST_F(KernelCheck, OutOfBoundsReadOfSharedMemory) {
  auto k = fast::cuda_kernel("check_oob_shared", {"x"}, {"out"}, R"(
    __shared__ float tile[32];
    const int t = threadIdx.x;
    tile[t] = x[blockIdx.x * 32 + t];
    __syncthreads();
    out[blockIdx.x * 32 + t] = tile[t + 1];
  )");
  // One block: with several, any block's thread 31 may be the first to report (blocks run
  // in parallel).
  array x = test::random_array({32}, float32);
  std::string m =
      error_of(k({x}, {{32}}, {float32}, d1(32), d1(32), {}, std::nullopt, false, kCpu));
  expect_contains(m, {"[cuda_kernel]", "check_oob_shared", "shared array 'tile'", "index 32",
                      "block (0, 0, 0)", "thread (31, 0, 0)"});
}

TEST_F(KernelCheck, OutOfBoundsThroughAVectorCast) {
  auto k = fast::cuda_kernel("check_oob_float4", {"x"}, {"out"}, R"(
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = reinterpret_cast<const float4*>(x)[i];
    out[i] = v.x + v.y + v.z + v.w;
  )");
  array x = test::random_array({32}, float32);  // 8 float4s; the grid reads 9
  std::string m = error_of(k({x}, {{9}}, {float32}, d1(9), d1(9), {}, std::nullopt, false, kCpu));
  expect_contains(m, {"check_oob_float4", "'x'", "index 8", "thread (8, 0, 0)"});
}

TEST_F(KernelCheck, OutOfBoundsAtomicOnAnAtomicOutput) {
  auto k = fast::metal_kernel("check_oob_atomic", {"x"}, {"hist"}, R"(
    uint i = thread_position_in_grid.x;
    atomic_fetch_add_explicit(hist + x[i], 1, memory_order_relaxed);
  )",
                              "", true, true);
  array x = array({0, 3, 7, 8}, int32);
  std::string m = error_of(k({x}, {{8}}, {int32}, d1(4), d1(4), {}, 0.0f, false, kCpu));
  expect_contains(m, {"check_oob_atomic", "'hist'", "index 8", "thread (3, 0, 0)"});
}

TEST_F(KernelCheck, ThreadThatReturnsBeforeABarrier) {
  auto k = fast::metal_kernel("check_barrier_exit", {"x"}, {"out"}, R"(
    uint t = thread_index_in_threadgroup;
    if (t >= 16) return;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = x[t];
  )");
  array x = test::random_array({32}, float32);
  std::string m =
      error_of(k({x}, {{32}}, {float32}, d1(32), d1(32), {}, std::nullopt, false, kCpu));
  expect_contains(m, {"check_barrier_exit", "divergent barrier", "16 thread(s)", "source:4",
                      "thread (16, 0, 0) returned"});
}

TEST_F(KernelCheck, ThreadsAtDifferentBarriers) {
  auto k = fast::cuda_kernel("check_barrier_split", {"x"}, {"out"}, R"(
    const int t = threadIdx.x;
    if (t % 2 == 0) {
      __syncthreads();
    } else {
      __syncthreads();
    }
    out[t] = x[t];
  )");
  array x = test::random_array({8}, float32);
  std::string m = error_of(k({x}, {{8}}, {float32}, d1(8), d1(8), {}, std::nullopt, false, kCpu));
  expect_contains(
      m, {"check_barrier_split", "divergent barrier", "source:4", "source:6", "thread (1, 0, 0)"});
}

TEST_F(KernelCheck, CorrectKernelsRunAndOtherArraysStayUsable) {
  array x = test::random_array({64}, float32);
  array kept = exp(x, kCpu);
  kept.eval();
  auto bad = fast::metal_kernel("check_oob_write", {"inp"}, {"out"}, R"(
    uint i = thread_position_in_grid.x;
    out[i + 1] = inp[i];
  )");
  EXPECT_FALSE(
      error_of(bad({x}, {{64}}, {float32}, d1(64), d1(32), {}, std::nullopt, false, kCpu)).empty());

  // A correct kernel with shared memory, barriers, strided input and dynamic shared memory
  // passes the checks and gives the right result.
  auto good = fast::cuda_kernel("check_good", {"x"}, {"out"}, R"(
    __shared__ float tile[32];
    extern __shared__ float scratch[];
    const int t = threadIdx.x, i = blockIdx.x * 32 + t;
    const int64_t loc = elem_to_loc(i, x_shape, x_strides, x_ndim);
    tile[t] = x[loc];
    scratch[t] = 1.0f;
    __syncthreads();
    out[i] = tile[31 - t] + scratch[(t + 1) % 32];
  )",
                                "", false, false, 32 * 4);
  array base = test::random_array({128}, float32);
  array strided = slice(base, {0}, {128}, {2}, kCpu);
  auto out = good({strided}, {{64}}, {float32}, d1(64), d1(32), {}, std::nullopt, false, kCpu)[0];
  auto bv = test::to_double(base);
  std::vector<double> ref(64);
  for (int i = 0; i < 64; ++i) ref[i] = bv[2 * ((i / 32) * 32 + 31 - i % 32)] + 1.0;
  test::expect_allclose(out, {64}, ref);
  test::expect_allclose(kept, {64},
                        test::map_ref(test::to_double(x), [](double v) { return std::exp(v); }));
}

}  // namespace
}  // namespace kiln
