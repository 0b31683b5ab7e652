// What MLX's generated CUDA translation unit gives a cuda_kernel body, written anew for
// kiln (names and signatures as in MLX's mlx/backend/cuda/device/utils.cuh and config.h, so
// MLX bodies compile unchanged): MAX_NDIM and WARP_SIZE, the Shape and Strides parameter
// types, elem_to_loc and friends (with tuple forms for two and three arrays; offsets are
// signed, see metal/utils_core.h; the tuple forms are in cuda/tuple.h), vectorized loads and stores
// (AlignedVector), Limits<T> and LoopedElemToLoc, and MLX's `inf`.
//
// Limits<T>::max etc. are constants that are also callable (Limits<T>::max()): MLX's CUDA
// backend spells them as functions, its Metal utilities (and earlier kiln bodies) as values.
#pragma once

#include "kiln/backend/kernels/cuda/std.h"
#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/utils_core.h"

#ifndef MAX_NDIM
#define MAX_NDIM 10
#endif
#ifndef WARP_SIZE
#define WARP_SIZE 32
#endif

namespace kiln_cuda {

/** Shapes and strides as MLX passes them: fixed-size arrays (`x_shape.data()`, `x_shape[i]`)
 * that also convert to the pointer kiln's own bodies pass around. */
template <typename T>
struct dims : cuda::std::array<T, MAX_NDIM> {
  KILN_HD operator const T*() const { return this->elems_; }
};
typedef dims<int32_t> Shape;
typedef dims<int64_t> Strides;

/** A 0-d input of a CUDA body: its value (`scale * x`), or, as in MLX where such inputs are
 * pointers, `scale[0]` and `*scale`. */
template <typename T>
struct scalar_input {
  const T* p_;
  KILN_HD operator const T&() const { return *p_; }
  template <typename I>
  KILN_HD const T& operator[](I i) const {
    return p_[i];
  }
  KILN_HD const T& operator*() const { return *p_; }
  KILN_HD const T* operator->() const { return p_; }
};

/** MLX's `inf` (a macro there): float infinity. */
constexpr float inf = __builtin_bit_cast(float, 0x7f800000u);

// ---------------------------------------------------------------- vectorized loads, stores

template <typename T, int N>
struct alignas(sizeof(T) * N) AlignedVector {
  T val[N];
  KILN_HD T& operator[](int i) { return val[i]; }
  KILN_HD T operator[](int i) const { return val[i]; }
};

template <int N, typename T>
KILN_HD bool is_aligned(T* x) {
  return (reinterpret_cast<uintptr_t>(x) % (N * sizeof(T))) == 0;
}

template <int N, typename T>
KILN_HD AlignedVector<T, N> unsafe_load_vector(const T* ptr, uint32_t offset) {
  return reinterpret_cast<const AlignedVector<T, N>*>(ptr)[offset];
}

template <int N, typename T>
KILN_HD AlignedVector<T, N> load_vector(const T* ptr, uint32_t offset) {
  if (is_aligned<N>(ptr)) return reinterpret_cast<const AlignedVector<T, N>*>(ptr)[offset];
  AlignedVector<T, N> v;
  for (int i = 0; i < N; ++i) v[i] = ptr[offset * N + i];
  return v;
}

/** Elements at or past `size` read as `fallback`. */
template <int N, typename T, typename SizeT>
KILN_HD AlignedVector<T, N> load_vector(const T* ptr, uint32_t offset, SizeT size, T fallback) {
  if (is_aligned<N>(ptr) && (offset + 1) * N <= size)
    return reinterpret_cast<const AlignedVector<T, N>*>(ptr)[offset];
  AlignedVector<T, N> v;
  for (int i = 0; i < N; ++i) v[i] = (N * offset + i) < size ? ptr[offset * N + i] : fallback;
  return v;
}

/** The same over elements `stride` apart. */
template <int N, typename T, typename SizeT>
KILN_HD AlignedVector<T, N> load_vector(const T* ptr, uint32_t offset, SizeT size, int64_t stride,
                                        T fallback) {
  if (is_aligned<N>(ptr) && stride == 1 && (offset + 1) * N <= size)
    return reinterpret_cast<const AlignedVector<T, N>*>(ptr)[offset];
  AlignedVector<T, N> v;
  for (int i = 0; i < N; ++i)
    v[i] = (N * offset + i) < size ? ptr[stride * (offset * N + i)] : fallback;
  return v;
}

template <int N, typename T>
KILN_HD void unsafe_store_vector(T* ptr, uint32_t offset, const AlignedVector<T, N>& vec) {
  reinterpret_cast<AlignedVector<T, N>*>(ptr)[offset] = vec;
}

template <int N, typename T>
KILN_HD void store_vector(T* ptr, uint32_t offset, const AlignedVector<T, N>& vec) {
  if (is_aligned<N>(ptr)) {
    reinterpret_cast<AlignedVector<T, N>*>(ptr)[offset] = vec;
    return;
  }
  for (int i = 0; i < N; ++i) ptr[offset * N + i] = vec[i];
}

/** Only the elements below `size` are written. */
template <int N, typename T, typename SizeT>
KILN_HD void store_vector(T* ptr, uint32_t offset, const AlignedVector<T, N>& vec, SizeT size) {
  if (is_aligned<N>(ptr) && (offset + 1) * N <= size) {
    reinterpret_cast<AlignedVector<T, N>*>(ptr)[offset] = vec;
    return;
  }
  for (int i = 0; (offset * N + i) < size && i < N; ++i) ptr[offset * N + i] = vec[i];
}

template <int N, typename T, typename SizeT>
KILN_HD void store_vector(T* ptr, uint32_t offset, const AlignedVector<T, N>& vec, SizeT size,
                          int64_t stride) {
  if (is_aligned<N>(ptr) && (offset + 1) * N <= size && stride == 1) {
    reinterpret_cast<AlignedVector<T, N>*>(ptr)[offset] = vec;
    return;
  }
  for (int i = 0; (offset * N + i) < size && i < N; ++i) ptr[stride * (offset * N + i)] = vec[i];
}

// ---------------------------------------------------------------- Limits

/** A limit: usable as a value (`Limits<T>::max > x`) and as MLX's CUDA function
 * (`Limits<T>::max()`). */
template <typename T>
struct limit {
  T v;
  KILN_HD constexpr operator T() const { return v; }
  KILN_HD constexpr T operator()() const { return v; }
};

template <typename T, typename = void>
struct Limits {
  static constexpr limit<T> max{cuda::std::numeric_limits<T>::max()};
  static constexpr limit<T> min{cuda::std::numeric_limits<T>::min()};
  static constexpr limit<T> finite_max{cuda::std::numeric_limits<T>::max()};
  static constexpr limit<T> finite_min{cuda::std::numeric_limits<T>::min()};
};
/** Floating types: max and min are the infinities. */
template <typename T>
struct Limits<T, cuda::std::enable_if_t<cuda::std::is_floating_point_v<T>>> {
  static constexpr limit<T> max{cuda::std::numeric_limits<T>::infinity()};
  static constexpr limit<T> min{-cuda::std::numeric_limits<T>::infinity()};
  static constexpr limit<T> finite_max{cuda::std::numeric_limits<T>::max()};
  static constexpr limit<T> finite_min{cuda::std::numeric_limits<T>::lowest()};
};

// ---------------------------------------------------------------- indexing

// elem_to_loc(elem, shape, strides, ndim) and elem_to_loc_nd<NDIM>(elem, shape, strides) are
// kiln_utils' (metal/utils_core.h), shared with the Metal flavour.
using kiln_utils::elem_to_loc;
using kiln_utils::elem_to_loc_nd;

/** MLX's CUDA LoopedElemToLoc (parameters DIM, General, OffsetT; kiln_utils has it). */
template <int DIM, bool General = true, typename OffsetT = size_t>
using LoopedElemToLoc = kiln_utils::LoopedElemToLocImpl<DIM, General, OffsetT, int>;

}  // namespace kiln_cuda
