// Helpers of the GPU runtime tests (test_gpu_runtime.cpp, test_gpu_streams.cpp): a GPU-only
// primitive running a lambda, a kernel that keeps a stream busy, and GPU-against-CPU checks.
#pragma once

#ifdef KILN_WITH_CUDA

#include <gtest/gtest.h>

#include <complex>
#include <functional>

#include "kiln/backend/cuda/allocator.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"
#include "kiln/backend/gpu.h"
#include "kiln/primitives.h"
#include "test_utils.h"

#define REQUIRE_GPU()                                              \
  if (!kiln::gpu::is_available()) {                                \
    GTEST_SKIP() << "no GPU: " << kiln::gpu::unavailable_reason(); \
  }

namespace gpu_test {

using namespace kiln;

constexpr Device kGpu = Device::gpu;
constexpr Device kCpu = Device::cpu;

// A GPU-only primitive running `fn` as its eval_gpu: lets tests drive the backend's helpers
// (kernels, GEMM, stream bookkeeping) exactly as a primitive would.
class GpuLambda : public UnaryPrimitive {
 public:
  using Fn = std::function<void(const std::vector<array>&, array&, gpu::DeviceStream&)>;
  GpuLambda(Stream s, Fn fn) : UnaryPrimitive(s), fn_(std::move(fn)) {}
  void eval_cpu(const std::vector<array>&, array&) override {
    throw std::runtime_error("[GpuLambda] GPU only");
  }
  void eval_gpu(const std::vector<array>& inputs, array& out) override {
    fn_(inputs, out, gpu::device_stream(stream()));
  }
  const char* name() const override { return "GpuLambda"; }

 private:
  Fn fn_;
};

inline array gpu_lambda(Shape shape, Dtype dtype, std::vector<array> inputs, GpuLambda::Fn fn,
                        Stream s) {
  return array(std::move(shape), dtype, std::make_shared<GpuLambda>(s, std::move(fn)),
               std::move(inputs));
}

// A primitive that keeps GPU stream `s` busy for `ms` milliseconds (a one-thread kernel
// spinning on the global timer), so that later work on `s` runs that much later.
inline array gpu_sleep(int ms, Stream s) {
  return gpu_lambda(
      {}, int32, {},
      [ms](auto&, array& out, gpu::DeviceStream& ds) {
        out.set_data(gpu::new_device_storage(4, ds));
        CUfunction f = gpu::get_kernel(
            ds.context().index(), "test_spin",
            [] {
              return gpu::ModuleSource{
                  "test_spin",
                  "__global__ void spin(unsigned long long ns, int* out) {\n"
                  "  unsigned long long t0, t;\n"
                  "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
                  "  do {\n"
                  "    asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n"
                  "  } while (t - t0 < ns);\n"
                  "  out[0] = 1;\n"
                  "}\n",
                  {"spin"}};
            },
            "spin");
        unsigned long long ns = static_cast<unsigned long long>(ms) * 1000000ull;
        gpu::launch_kernel(f, {1}, {1}, 0, ds, ns, gpu::device_address(out));
      },
      s);
}

// Expects `gpu_result` (computed on the GPU) to equal `cpu_result` within `dtype`'s tolerance.
inline void expect_same(const array& gpu_result, const array& cpu_result, double rtol = -1) {
  ASSERT_EQ(gpu_result.dtype(), cpu_result.dtype());
  if (gpu_result.dtype() == complex64) {
    auto g = test::to_complex(gpu_result), c = test::to_complex(cpu_result);
    ASSERT_EQ(g.size(), c.size());
    double tol = rtol < 0 ? test::tolerance(complex64) : rtol;
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_LE(std::abs(g[i] - c[i]), tol * (1 + std::abs(c[i]))) << "element " << i;
    }
    return;
  }
  test::expect_allclose(gpu_result, cpu_result.shape(), test::to_double(cpu_result), rtol);
}

// The same op on both devices: f(device) builds the graph.
inline void expect_gpu_matches_cpu(const std::function<array(Device)>& f, double rtol = -1) {
  array g = f(kGpu), c = f(kCpu);
  eval(g, c);
  expect_same(g, c, rtol);
}

}  // namespace gpu_test

#endif  // KILN_WITH_CUDA
