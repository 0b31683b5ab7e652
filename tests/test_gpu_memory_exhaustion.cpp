// Device memory exhaustion (GPU only): filling the GPU until an allocation fails gives a clear
// out-of-memory error after the cache was freed and the allocation retried; the arrays
// made before stay intact, the allocator's statistics are right, and once memory is
// released the process computes as before.
#include <gtest/gtest.h>
#include <cstdlib>
#include <string>

#include <vector>

#include "kiln/backend/gpu.h"
#include "test_utils.h"

using namespace kiln;

namespace {

constexpr Device kGpu = Device::gpu;

TEST(GpuMemoryExhaustion, FillingTheGpuGivesAClearErrorAndRecovers) {
  if (!gpu::is_available()) GTEST_SKIP() << "no GPU: " << gpu::unavailable_reason();
  // Filling the whole GPU starves every other process on it (the parallel shards of
  // scripts/gpu-check): it runs alone, when asked.
  const char* fill = std::getenv("KILN_TEST_FILL_GPU");
  if (!fill || std::string(fill) != "1") GTEST_SKIP() << "set KILN_TEST_FILL_GPU=1 (run alone)";
  synchronize();
  const size_t old_limit = set_memory_limit(kGpu, ~size_t(0));  // the device is the limit
  // float32 elements: 1 GiB per array.
  const int chunk = 1 << 28;
  array probe = test::random_array({1000}, float32);
  array kept = multiply(probe, array(3.0f), kGpu);
  kept.eval();
  synchronize();
  const size_t base = get_active_memory(kGpu);

  std::vector<array> held;
  std::string error;
  for (int i = 0; i < 4096 && error.empty(); ++i) {  // bounded: 4 TiB of 1 GiB chunks
    try {
      array a = full({chunk}, array(float(i)), kGpu);
      a.eval();
      held.push_back(a);
      // A cached block must not hide memory: free one now and then so the cache holds some.
      if (i % 8 == 7) held.pop_back();
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
  }
  ASSERT_FALSE(error.empty()) << "never ran out after " << held.size() << " GiB";
  EXPECT_NE(error.find("out of memory"), std::string::npos) << error;
  EXPECT_NE(error.find(std::to_string(size_t(chunk) * 4)), std::string::npos) << error;
  // The failed allocation did not count; the cache was emptied before giving up.
  synchronize();
  EXPECT_GE(get_active_memory(kGpu), base + held.size() * size_t(chunk) * 4);
  // Blocks freed while the error unwinds may be cached again; less than one chunk stays.
  EXPECT_LT(get_cache_memory(kGpu), size_t(chunk) * 4);
  EXPECT_GE(get_peak_memory(kGpu), get_active_memory(kGpu));

  // Everything made before is intact.
  auto k = test::to_double(kept);
  auto p = test::to_double(probe);
  for (size_t i = 0; i < k.size(); ++i) ASSERT_EQ(k[i], double(3.0f * static_cast<float>(p[i])));
  if (!held.empty()) {
    array s = sum(slice(held.back(), {chunk - 16}, {chunk}, kGpu), false, kGpu);
    EXPECT_GE(s.item<float>(), 0.0f);
  }

  // Released memory is usable again, and the statistics come back to where they started.
  held.clear();
  synchronize();
  clear_cache(kGpu);
  EXPECT_EQ(get_active_memory(kGpu), base);
  array x = test::random_array({1 << 20}, float32);
  array y = add(x, x, kGpu);
  auto xs = test::to_double(x), ys = test::to_double(y);
  for (size_t i = 0; i < xs.size(); i += 4099) ASSERT_EQ(ys[i], 2 * xs[i]);
  array big = full({chunk}, array(1.0f), kGpu);
  EXPECT_EQ(sum(big, false, kGpu).item<float>(), float(chunk));
  set_memory_limit(kGpu, old_limit);
}

}  // namespace
