// Helpers of the standalone kernel harnesses (benchmarks/gpu/*_kernels.cu, built with nvcc
// alone): CUDA error checks, bfloat16 conversions on the host, CUDA-event medians.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e = (x);                                                       \
    if (e != cudaSuccess) {                                                    \
      printf("CUDA %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

inline uint16_t f2bf(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1);
  return x >> 16;
}
inline float bf2f(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

template <class F>
inline double time_us(F f, int iters = 100) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 10; ++i) f();
  std::vector<double> v;
  for (int r = 0; r < 9; ++r) {
    cudaEventRecord(a);
    for (int i = 0; i < iters; ++i) f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    v.push_back(ms * 1000.0 / iters);
  }
  CK(cudaGetLastError());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The device copy bandwidth (GB/s): 1 GiB device-to-device, bytes read + written; printed.
inline double copy_bandwidth() {
  const size_t nb = size_t(1) << 30;
  void *p, *q;
  CK(cudaMalloc(&p, nb));
  CK(cudaMalloc(&q, nb));
  const double us = time_us([&] { cudaMemcpyAsync(q, p, nb, cudaMemcpyDeviceToDevice); }, 10);
  const double bw = 2.0 * nb / us * 1e-3;
  printf("copy bandwidth %.0f GB/s\n", bw);
  cudaFree(p);
  cudaFree(q);
  return bw;
}

// Prints the device's name and SM count.
inline void print_device() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
}
