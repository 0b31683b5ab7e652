// Metal's simdgroup functions on NVIDIA warps: reductions (simd_sum, simd_max, ...), scans
// (simd_prefix_*), shuffles, broadcasts and votes, for scalars, half types and vectors
// (componentwise); the quad and shuffle-and-fill functions are in gpu_quad.h.
//
// They act on the lanes that call them, as Metal's do: a simdgroup may be partial (the
// last warp of a threadgroup whose size is not a multiple of 32) or have lanes that
// returned early. A full warp takes the shuffle tree; otherwise an exact path visits the
// active lanes (__activemask) in order, so every lane gets the same, well-defined result.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"
#include "kiln/backend/kernels/metal/math.h"
#include "kiln/backend/kernels/metal/vec.h"

namespace metal {

namespace detail {

constexpr unsigned kFullWarp = 0xffffffffu;

KILN_HD unsigned lane_id() {
  unsigned l;
  asm("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

// Any trivially copyable value crosses lanes as 32-bit words.
template <typename T>
struct Words {
  static constexpr int n = (sizeof(T) + 3) / 4;
  uint32_t w[n];
};

enum class Shfl { idx, up, down, bfly };

template <Shfl K, typename T>
KILN_HD T shuffle(unsigned mask, const T& x, unsigned arg) {
  Words<T> in = {}, out;
  memcpy(&in, &x, sizeof(T));
  for (int i = 0; i < Words<T>::n; ++i) {
    if constexpr (K == Shfl::idx)
      out.w[i] = __shfl_sync(mask, in.w[i], arg);
    else if constexpr (K == Shfl::up)
      out.w[i] = __shfl_up_sync(mask, in.w[i], arg);
    else if constexpr (K == Shfl::down)
      out.w[i] = __shfl_down_sync(mask, in.w[i], arg);
    else
      out.w[i] = __shfl_xor_sync(mask, in.w[i], arg);
  }
  T r;
  memcpy(&r, &out, sizeof(T));
  return r;
}

// Binary operations of the reductions and scans, on scalars and (componentwise) vectors.
struct Sum {
  template <typename T>
  KILN_HD T operator()(const T& a, const T& b) const {
    return a + b;
  }
};
struct Prod {
  template <typename T>
  KILN_HD T operator()(const T& a, const T& b) const {
    return a * b;
  }
};
struct Max {
  template <typename T>
  KILN_HD T operator()(const T& a, const T& b) const {
    return metal::max(a, b);
  }
};
struct Min {
  template <typename T>
  KILN_HD T operator()(const T& a, const T& b) const {
    return metal::min(a, b);
  }
};
struct And {
  template <typename T>
  KILN_HD T operator()(const T& a, const T& b) const {
    return a & b;
  }
};
struct Or {
  template <typename T>
  KILN_HD T operator()(const T& a, const T& b) const {
    return a | b;
  }
};
struct Xor {
  template <typename T>
  KILN_HD T operator()(const T& a, const T& b) const {
    return a ^ b;
  }
};

template <typename Op, typename T>
KILN_HD T reduce(T x) {
  const unsigned mask = __activemask();
  Op op;
  if (mask == kFullWarp) {
    for (unsigned d = 16; d > 0; d >>= 1) x = op(x, shuffle<Shfl::bfly>(mask, x, d));
    return x;
  }
  // Partial: fold the active lanes in lane order; every lane computes the same value.
  unsigned m = mask;
  T acc = shuffle<Shfl::idx>(mask, x, __ffs(m) - 1);
  for (m &= m - 1; m; m &= m - 1) acc = op(acc, shuffle<Shfl::idx>(mask, x, __ffs(m) - 1));
  return acc;
}

// Inclusive scan over the active lanes in lane order.
template <typename Op, typename T>
KILN_HD T inclusive_scan(T x) {
  const unsigned mask = __activemask();
  const unsigned lane = lane_id();
  Op op;
  if (mask == kFullWarp) {
    for (unsigned d = 1; d < 32; d <<= 1) {
      T y = shuffle<Shfl::up>(mask, x, d);
      if (lane >= d) x = op(y, x);
    }
    return x;
  }
  T acc = x;
  bool first = true;
  for (unsigned m = mask; m; m &= m - 1) {
    unsigned src = __ffs(m) - 1;
    T y = shuffle<Shfl::idx>(mask, x, src);
    if (src <= lane) {
      acc = first ? y : op(acc, y);
      first = false;
    }
  }
  return acc;
}

// Exclusive scan: the inclusive scan of the previous active lane (`identity` on the first).
template <typename Op, typename T>
KILN_HD T exclusive_scan(T x, T identity) {
  const unsigned mask = __activemask();
  const unsigned lane = lane_id();
  T inc = inclusive_scan<Op>(x);
  unsigned below = mask & ((1u << lane) - 1u);
  unsigned prev = below ? 31u - __clz(below) : lane;
  T y = shuffle<Shfl::idx>(mask, inc, prev);
  return below ? y : identity;
}

}  // namespace detail

/** Metal's ballot result: a mask of lanes (convertible to an integer). */
struct simd_vote {
  typedef uint64_t vote_t;
  vote_t v;
  KILN_HD explicit constexpr simd_vote(vote_t x = 0) : v(x) {}
  KILN_HD explicit constexpr operator vote_t() const { return v; }
  KILN_HD bool all() const { return static_cast<uint32_t>(v) == __activemask(); }
  KILN_HD bool any() const { return v != 0; }
};

template <typename T>
KILN_HD T simd_sum(T x) {
  return detail::reduce<detail::Sum>(x);
}
template <typename T>
KILN_HD T simd_product(T x) {
  return detail::reduce<detail::Prod>(x);
}
template <typename T>
KILN_HD T simd_max(T x) {
  return detail::reduce<detail::Max>(x);
}
template <typename T>
KILN_HD T simd_min(T x) {
  return detail::reduce<detail::Min>(x);
}
template <typename T>
KILN_HD T simd_and(T x) {
  return detail::reduce<detail::And>(x);
}
template <typename T>
KILN_HD T simd_or(T x) {
  return detail::reduce<detail::Or>(x);
}
template <typename T>
KILN_HD T simd_xor(T x) {
  return detail::reduce<detail::Xor>(x);
}

template <typename T>
KILN_HD T simd_prefix_inclusive_sum(T x) {
  return detail::inclusive_scan<detail::Sum>(x);
}
template <typename T>
KILN_HD T simd_prefix_exclusive_sum(T x) {
  return detail::exclusive_scan<detail::Sum>(x, T(0));
}
template <typename T>
KILN_HD T simd_prefix_inclusive_product(T x) {
  return detail::inclusive_scan<detail::Prod>(x);
}
template <typename T>
KILN_HD T simd_prefix_exclusive_product(T x) {
  return detail::exclusive_scan<detail::Prod>(x, T(1));
}

/** The value of `x` in lane `lane` (which must be active). */
template <typename T>
KILN_HD T simd_shuffle(T x, ushort lane) {
  return detail::shuffle<detail::Shfl::idx>(__activemask(), x, lane);
}
/** As simd_shuffle, with `lane` the same for every lane. */
template <typename T>
KILN_HD T simd_broadcast(T x, ushort lane) {
  return detail::shuffle<detail::Shfl::idx>(__activemask(), x, lane);
}
/** The value of the first active lane. */
template <typename T>
KILN_HD T simd_broadcast_first(T x) {
  const unsigned mask = __activemask();
  return detail::shuffle<detail::Shfl::idx>(mask, x, __ffs(mask) - 1);
}
/** The value of lane (this lane - delta); the lowest `delta` lanes keep their own. */
template <typename T>
KILN_HD T simd_shuffle_up(T x, ushort delta) {
  return detail::shuffle<detail::Shfl::up>(__activemask(), x, delta);
}
/** The value of lane (this lane + delta); the highest `delta` lanes keep their own. */
template <typename T>
KILN_HD T simd_shuffle_down(T x, ushort delta) {
  return detail::shuffle<detail::Shfl::down>(__activemask(), x, delta);
}
template <typename T>
KILN_HD T simd_shuffle_xor(T x, ushort mask) {
  return detail::shuffle<detail::Shfl::bfly>(__activemask(), x, mask);
}
/** Shifts that wrap around the simdgroup. */
template <typename T>
KILN_HD T simd_shuffle_rotate_down(T x, ushort delta) {
  return detail::shuffle<detail::Shfl::idx>(__activemask(), x, (detail::lane_id() + delta) & 31u);
}
template <typename T>
KILN_HD T simd_shuffle_rotate_up(T x, ushort delta) {
  return detail::shuffle<detail::Shfl::idx>(__activemask(), x, (detail::lane_id() - delta) & 31u);
}

KILN_HD bool simd_all(bool p) {
  return __all_sync(__activemask(), p);
}
KILN_HD bool simd_any(bool p) {
  return __any_sync(__activemask(), p);
}
KILN_HD simd_vote simd_ballot(bool p) {
  return simd_vote(__ballot_sync(__activemask(), p));
}
KILN_HD simd_vote simd_active_threads_mask() {
  return simd_vote(__activemask());
}
/** True in the first active lane. */
KILN_HD bool simd_is_first() {
  return detail::lane_id() == static_cast<unsigned>(__ffs(__activemask()) - 1);
}

// Quadgroups: four consecutive lanes (the rest of the quad functions are in gpu_quad.h).
template <typename T>
KILN_HD T quad_shuffle(T x, ushort lane) {
  return detail::shuffle<detail::Shfl::idx>(__activemask(), x,
                                            (detail::lane_id() & ~3u) | (lane & 3u));
}
template <typename T>
KILN_HD T quad_broadcast(T x, ushort lane) {
  return quad_shuffle(x, lane);
}
template <typename T>
KILN_HD T quad_shuffle_xor(T x, ushort mask) {
  return detail::shuffle<detail::Shfl::bfly>(__activemask(), x, mask & 3u);
}
}  // namespace metal
