// Gather and scatter kernels (Gather, Scatter, GatherAxis, ScatterAxis), in two steps as on
// the CPU: index arrays are first decoded into element offsets of the target (negative
// indices wrapped, bounds checked), then the data moves. The decoding is specialized on the
// index dtype only, the moves on the value type only.
//
// An out-of-range index is never followed: its offset becomes 0 (a valid element) and the
// smallest bad position goes to an error word the host reads after the launch, to raise the
// CPU's std::out_of_range.
#pragma once

#include "kiln/backend/cuda/device/indexing.cuh"
#include "kiln/backend/cuda/device/indexing_atomic.cuh"

namespace kiln {

/**
 * offsets[n] = (or += when `accumulate`) wrap(idx[n]) * mult for the `count` index positions
 * (row-major over `shape`, read through `strides`), where wrap adds `size` to a negative
 * index. A start must lie in [0, last]; otherwise atomicMin(bad, n). last < 0 (an empty
 * axis) rejects every index.
 */
template <typename I>
__global__ void index_decode(const I* __restrict__ idx, long long* __restrict__ offsets,
                             unsigned long long* __restrict__ bad,
                             const __grid_constant__ Dims<int> shape,
                             const __grid_constant__ Dims<long long> strides, int ndim,
                             long long count, long long size, long long last, long long mult,
                             bool accumulate) {
  const long long n = global_thread_x<long long>();
  if (n >= count) return;
  const I v = idx[elem_to_loc(n, shape, strides, ndim)];
  unsigned long long i;
  if constexpr (static_cast<I>(-1) < static_cast<I>(0)) {
    const long long s = static_cast<long long>(v);
    i = static_cast<unsigned long long>(s < 0 ? s + size : s);
  } else {
    i = static_cast<unsigned long long>(v);
  }
  long long off = 0;
  if (last < 0 || i > static_cast<unsigned long long>(last))
    atomicMin(bad, static_cast<unsigned long long>(n));
  else
    off = static_cast<long long>(i) * mult;
  offsets[n] = accumulate ? offsets[n] + off : off;
}

/** Parameters of gather (mirrored in backend/cuda/indexing.cpp): output element e, in the
 * order (outer slice element o < O, index position n < P, inner slice element i < I), reads
 * src[elem_to_loc(o, outer) + starts[n] + elem_to_loc(i, inner)]. */
struct GatherArgs {
  Dims<int> oshape;
  Dims<long long> osrc;
  Dims<int> ishape;
  Dims<long long> isrc;
  int ondim;
  int indim;
  long long O, P, I;
};

template <typename T>
__global__ void gather(const T* __restrict__ src, T* __restrict__ dst,
                       const long long* __restrict__ starts, const __grid_constant__ GatherArgs a) {
  const long long e = global_thread_x<long long>();
  if (e >= a.O * a.P * a.I) return;
  const long long row = e / a.I, i = e - row * a.I;
  const long long o = row / a.P, n = row - o * a.P;
  const long long inner =
      a.indim == 1 ? i * a.isrc.v[0] : elem_to_loc(i, a.ishape, a.isrc, a.indim);
  dst[e] = src[elem_to_loc(o, a.oshape, a.osrc, a.ondim) + starts[n] + inner];
}

/** Parameters of scatter (mirrored in backend/cuda/indexing.cpp): update element (o, n, i)
 * of upd (outer, position and inner strides) combines into out at elem_to_loc(o, outer) +
 * starts[n] + elem_to_loc(i, inner). */
struct ScatterArgs {
  Dims<int> oshape;
  Dims<long long> oupd;
  Dims<long long> oout;
  Dims<int> ishape;
  Dims<long long> iupd;
  Dims<long long> iout;
  Dims<int> pshape;
  Dims<long long> pupd;
  int ondim;
  int indim;
  int pndim;
  long long O, P, I;
};

/** Where update element e of a scatter comes from and goes to, and its index position. */
struct ScatterSite {
  long long n;    // index position (row of the indices)
  long long src;  // offset in upd
  long long dst;  // offset in out
};

__device__ inline ScatterSite scatter_site(long long e, const long long* __restrict__ starts,
                                           const ScatterArgs& a) {
  const long long row = e / a.I, i = e - row * a.I;
  const long long o = row / a.P, n = row - o * a.P;
  long long uo, oo, ui, oi;
  elem_to_loc2(o, a.oshape, a.oupd, a.oout, a.ondim, uo, oo);
  elem_to_loc2(i, a.ishape, a.iupd, a.iout, a.indim, ui, oi);
  const long long un = elem_to_loc(n, a.pshape, a.pupd, a.pndim);
  return {n, uo + un + ui, oo + starts[n] + oi};
}

/** Combines every update into its target. With a non-null `owner` (assignment with
 * repeated positions, see scatter_claim), only the position that owns the key stores. */
template <typename T, typename Op>
__global__ void scatter(const T* __restrict__ upd, T* __restrict__ out,
                        const long long* __restrict__ starts, const int* __restrict__ owner,
                        long long key_div, const __grid_constant__ ScatterArgs a) {
  const long long e = global_thread_x<long long>();
  if (e >= a.O * a.P * a.I) return;
  const ScatterSite s = scatter_site(e, starts, a);
  if (owner) {
    const long long key = key_div > 0 ? starts[s.n] / key_div : s.dst;
    if (owner[key] != static_cast<int>(s.n)) return;
  }
  Op::apply(out + s.dst, upd[s.src]);
}

/**
 * A sum-scatter of whole rows (an embedding's gradient: P rows of I contiguous elements,
 * position n's row at upd + n * upd_row, its target at out + starts[n]), with `order` listing
 * the positions by start. Block (x, y) takes features [x * blockDim.x, ...) of the sorted
 * positions [y * chunk, (y + 1) * chunk): each thread sums its feature over a run of equal
 * starts (in float, double for double) and adds once per run. A frequent row then costs one
 * atomic per chunk instead of one per position, where a hot address serializes.
 */
template <typename T>
__global__ void scatter_add_sorted(const T* __restrict__ upd, T* __restrict__ out,
                                   const long long* __restrict__ starts,
                                   const int* __restrict__ order, long long P, long long I,
                                   long long upd_row, int chunk) {
  using Acc = typename ComputeType<T>::type;  // float, or double for double
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= I) return;
  const long long p0 = static_cast<long long>(blockIdx.y) * chunk;
  const long long p1 = min(P, p0 + chunk);
  long long cur = starts[order[p0]];
  Acc acc = 0;
  for (long long p = p0; p < p1; ++p) {
    const long long n = order[p];
    const long long st = starts[n];
    if (st != cur) {
      ScatterSum::apply(out + cur + i, static_cast<T>(acc));
      cur = st;
      acc = 0;
    }
    acc += static_cast<Acc>(upd[n * upd_row + i]);
  }
  ScatterSum::apply(out + cur + i, static_cast<T>(acc));
}

// Assignment with repeated indices, deterministic as NumPy and the CPU: the last index
// position wins. Writers that can meet share a key; `owner[key]` (uninitialized scratch)
// first gets some writer's position (kLast false), then the largest (kLast true), and only
// the owner stores. Keys no writer touches are never read.
//
// key_div > 0: every indexed axis takes one element, so two positions meet exactly where
// their starts are equal, and the key is starts[n] / key_div (the indexed strides' greatest
// common divisor, which divides every start); one thread per position. key_div == 0: the
// key is the target element; one thread per update element.
/** A writer's claim on its key: any writer first, then the largest position. */
template <bool kLast>
__device__ inline void claim(int* slot, long long who) {
  if constexpr (kLast)
    atomicMax(slot, static_cast<int>(who));
  else
    *slot = static_cast<int>(who);
}

template <bool kLast>
__global__ void scatter_claim(const long long* __restrict__ starts, int* __restrict__ owner,
                              long long key_div, const __grid_constant__ ScatterArgs a) {
  const long long e = global_thread_x<long long>();
  if (e >= (key_div > 0 ? a.P : a.O * a.P * a.I)) return;
  long long n = e, key;
  if (key_div > 0) {
    key = starts[n] / key_div;
  } else {
    const ScatterSite s = scatter_site(e, starts, a);
    n = s.n;
    key = s.dst;
  }
  claim<kLast>(owner + key, n);
}

/** take_along_axis: out[e] (row-major over the index shape) = src[elem_to_loc(e, shape,
 * src_strides) + offsets[e]], where src_strides is 0 along the axis and offsets hold the
 * decoded indices times the source's stride along it. */
template <typename T>
__global__ void gather_axis(const T* __restrict__ src, T* __restrict__ dst,
                            const long long* __restrict__ offsets,
                            const __grid_constant__ Dims<int> shape,
                            const __grid_constant__ Dims<long long> src_strides, int ndim,
                            long long size) {
  const long long e = global_thread_x<long long>();
  if (e >= size) return;
  dst[e] = src[elem_to_loc(e, shape, src_strides, ndim) + offsets[e]];
}

/** put_along_axis: combines vals[elem_to_loc(e, shape, val_strides)] into out at
 * elem_to_loc(e, shape, out_strides) + offsets[e] (out_strides 0 along the axis). With a
 * non-null `owner` (assignment with repeated indices, see scatter_axis_claim), only the
 * index element that owns the target stores. */
template <typename T, typename Op>
__global__ void scatter_axis(const T* __restrict__ vals, T* __restrict__ out,
                             const long long* __restrict__ offsets, const int* __restrict__ owner,
                             const __grid_constant__ Dims<int> shape,
                             const __grid_constant__ Dims<long long> val_strides,
                             const __grid_constant__ Dims<long long> out_strides, int ndim,
                             long long size) {
  const long long e = global_thread_x<long long>();
  if (e >= size) return;
  long long vo, oo;
  elem_to_loc2(e, shape, val_strides, out_strides, ndim, vo, oo);
  const long long dst = oo + offsets[e];
  if (owner && owner[dst] != static_cast<int>(e)) return;
  Op::apply(out + dst, vals[vo]);
}

/** put_along_axis's assignment with repeated indices: the last index element (row-major)
 * wins, through `owner` keyed by the target element as in scatter_claim. */
template <bool kLast>
__global__ void scatter_axis_claim(const long long* __restrict__ offsets, int* __restrict__ owner,
                                   const __grid_constant__ Dims<int> shape,
                                   const __grid_constant__ Dims<long long> out_strides, int ndim,
                                   long long size) {
  const long long e = global_thread_x<long long>();
  if (e >= size) return;
  const long long key = elem_to_loc(e, shape, out_strides, ndim) + offsets[e];
  claim<kLast>(owner + key, e);
}

}  // namespace kiln
