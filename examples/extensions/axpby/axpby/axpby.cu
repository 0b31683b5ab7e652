// GPU kernels of the Axpby primitive: out = alpha * x + beta * y.
//
// Compiled at run time by kiln's JIT (NVRTC) for the GPU at hand: CMakeLists.txt embeds this
// file into the extension with kiln_add_kernel_sources, and Axpby::eval_gpu asks for a kernel
// by name. Device headers of kiln can be included by their repository path; they give the
// element types (kiln::float16, kiln::bfloat16, kiln::complex64) and the indexing helpers.
#include "kiln/backend/cuda/device/indexing.cuh"

using kiln::Dims;

// One element. Half types compute in float and round once; complex64 scales by real factors.
template <typename T>
__device__ inline T axpby_op(T x, T y, float alpha, float beta) {
  if constexpr (kiln::is_complex_v<T>) {
    return {alpha * x.re + beta * y.re, alpha * x.im + beta * y.im};
  } else {
    return T(alpha * static_cast<float>(x) + beta * static_cast<float>(y));
  }
}

// Any strides (broadcast, transposed, sliced inputs): one thread per output element, which is
// row-major. The host merges the dimensions along which both inputs are contiguous first.
template <typename T, typename IdxT>
__device__ inline void axpby_general(const T* x, const T* y, T* out, float alpha, float beta,
                                     const Dims<int>& shape, const Dims<long long>& x_strides,
                                     const Dims<long long>& y_strides, int ndim, IdxT size) {
  const IdxT index = kiln::global_thread_x<IdxT>();
  if (index >= size) {
    return;
  }
  // Convert linear indices to offsets in array
  IdxT x_offset, y_offset;
  kiln::elem_to_loc2(index, shape, x_strides, y_strides, ndim, x_offset, y_offset);
  // Do the operation and update the output
  out[index] = axpby_op(x[x_offset], y[y_offset], alpha, beta);
}

// Inputs contiguous in the same order (the output takes it too): each thread handles Width
// consecutive elements, 16 bytes of each operand, with vector loads when `vec` says that
// every pointer is 16-byte aligned.
template <typename T>
__device__ inline void axpby_contiguous(const T* __restrict__ x, const T* __restrict__ y,
                                        T* __restrict__ out, float alpha, float beta,
                                        long long size, bool vec) {
  constexpr int Width = 16 / sizeof(T);
  const long long i = kiln::global_thread_x<long long>() * Width;
  if (vec && i + Width <= size) {
    const auto a = kiln::load_vec<Width>(x + i);
    const auto b = kiln::load_vec<Width>(y + i);
    kiln::Vec<T, Width> z;
#pragma unroll
    for (int k = 0; k < Width; ++k) {
      z.v[k] = axpby_op(a.v[k], b.v[k], alpha, beta);
    }
    kiln::store_vec<Width>(out + i, z);
    return;
  }
  for (long long k = i; k < i + Width && k < size; ++k) {
    out[k] = axpby_op(x[k], y[k], alpha, beta);
  }
}

// We then instantiate the templates for all floating point types and give each instantiation
// a unique name, so that the host can pick the right kernel for each data type:
// axpby_general_float32, axpby_general_large_float32 (64-bit indices), axpby_contiguous_float32.
#define instantiate_axpby(type_name, type)                                                         \
  extern "C" __global__ void axpby_general_##type_name(                                            \
      const type* x, const type* y, type* out, float alpha, float beta,                            \
      const __grid_constant__ Dims<int> shape, const __grid_constant__ Dims<long long> x_strides,  \
      const __grid_constant__ Dims<long long> y_strides, int ndim, int size) {                     \
    axpby_general(x, y, out, alpha, beta, shape, x_strides, y_strides, ndim, size);                \
  }                                                                                                \
  extern "C" __global__ void axpby_general_large_##type_name(                                      \
      const type* x, const type* y, type* out, float alpha, float beta,                            \
      const __grid_constant__ Dims<int> shape, const __grid_constant__ Dims<long long> x_strides,  \
      const __grid_constant__ Dims<long long> y_strides, int ndim, long long size) {               \
    axpby_general(x, y, out, alpha, beta, shape, x_strides, y_strides, ndim, size);                \
  }                                                                                                \
  extern "C" __global__ void axpby_contiguous_##type_name(const type* x, const type* y, type* out, \
                                                          float alpha, float beta, long long size, \
                                                          bool vec) {                              \
    axpby_contiguous(x, y, out, alpha, beta, size, vec);                                           \
  }

instantiate_axpby(float32, float);
instantiate_axpby(float16, kiln::float16);
instantiate_axpby(bfloat16, kiln::bfloat16);
instantiate_axpby(complex64, kiln::complex64);
