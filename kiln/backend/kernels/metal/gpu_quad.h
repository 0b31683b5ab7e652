// Metal's quadgroup functions (quad_sum, quad_prefix_*, quad_shuffle_up/down/rotate,
// quad_ballot, ...) and simd_shuffle_and_fill_up/down on NVIDIA warps, included on demand:
// the generator adds this header on the GPU when a body or header names one of them (the
// CPU's are in cpu_simd.h).
// kiln-on-demand: quad_* simd_shuffle_and_fill_*
#pragma once

#include "kiln/backend/kernels/metal/gpu_simd.h"

namespace metal {

/** Lanes in groups of `modulo`: the value of `data` from the lane `delta` above in this
 * group, or, past the group's end, of `filling` from the start of the group. */
template <typename T>
KILN_HD T simd_shuffle_and_fill_down(T data, T filling, ushort delta, ushort modulo = 32) {
  const unsigned mask = __activemask(), lane = detail::lane_id();
  const unsigned g = lane - lane % modulo, src = lane % modulo + delta;
  const T d = detail::shuffle<detail::Shfl::idx>(mask, data, src < modulo ? g + src : lane);
  const T f = detail::shuffle<detail::Shfl::idx>(mask, filling,
                                                 src >= modulo ? g + src - modulo : lane);
  return src < modulo ? d : f;
}
/** The value of `data` from the lane `delta` below in this group of `modulo`, or, before
 * the group's start, of `filling` from the end of the group. */
template <typename T>
KILN_HD T simd_shuffle_and_fill_up(T data, T filling, ushort delta, ushort modulo = 32) {
  const unsigned mask = __activemask(), lane = detail::lane_id();
  const unsigned g = lane - lane % modulo, p = lane % modulo;
  const bool own = p >= delta;
  const T d = detail::shuffle<detail::Shfl::idx>(mask, data, own ? g + p - delta : lane);
  const T f = detail::shuffle<detail::Shfl::idx>(mask, filling, own ? lane : g + p + modulo - delta);
  return own ? d : f;
}

// Quadgroups: four consecutive lanes. Reductions and scans fold the quad's active lanes in
// lane order (as metal/cpu_simd.h does).
namespace detail {
template <typename Op, typename T>
KILN_HD T quad_fold(T x, bool prefix, bool inclusive, bool& any) {
  const unsigned mask = __activemask(), lane = lane_id(), base = lane & ~3u;
  Op op;
  T acc = x;
  any = false;
  for (unsigned k = 0; k < 4; ++k) {
    const unsigned l = base + k;
    const bool active = (mask >> l) & 1u;
    const T y = shuffle<Shfl::idx>(mask, x, active ? l : lane);
    const bool take = active && (!prefix || l < lane || (inclusive && l == lane));
    if (take) {
      acc = any ? op(acc, y) : y;
      any = true;
    }
  }
  return acc;
}
}  // namespace detail

#define KILN_QUAD_REDUCE(NAME, OP)           \
  template <typename T>                      \
  KILN_HD T NAME(T x) {                      \
    bool any;                                \
    return detail::quad_fold<detail::OP>(x, false, true, any); \
  }
KILN_QUAD_REDUCE(quad_sum, Sum)
KILN_QUAD_REDUCE(quad_product, Prod)
KILN_QUAD_REDUCE(quad_max, Max)
KILN_QUAD_REDUCE(quad_min, Min)
KILN_QUAD_REDUCE(quad_and, And)
KILN_QUAD_REDUCE(quad_or, Or)
KILN_QUAD_REDUCE(quad_xor, Xor)
#undef KILN_QUAD_REDUCE
template <typename T>
KILN_HD T quad_prefix_inclusive_sum(T x) {
  bool any;
  return detail::quad_fold<detail::Sum>(x, true, true, any);
}
template <typename T>
KILN_HD T quad_prefix_exclusive_sum(T x) {
  bool any;
  const T r = detail::quad_fold<detail::Sum>(x, true, false, any);
  return any ? r : T(0);
}
template <typename T>
KILN_HD T quad_prefix_inclusive_product(T x) {
  bool any;
  return detail::quad_fold<detail::Prod>(x, true, true, any);
}
template <typename T>
KILN_HD T quad_prefix_exclusive_product(T x) {
  bool any;
  const T r = detail::quad_fold<detail::Prod>(x, true, false, any);
  return any ? r : T(1);
}

template <typename T>
KILN_HD T quad_broadcast_first(T x) {
  const unsigned mask = __activemask(), base = detail::lane_id() & ~3u;
  const unsigned q = (mask >> base) & 15u;
  return detail::shuffle<detail::Shfl::idx>(mask, x, base + (__ffs(q) - 1));
}
/** Within the quad: the lower `delta` (upper, for down) lanes keep their own value. */
template <typename T>
KILN_HD T quad_shuffle_up(T x, ushort delta) {
  const unsigned lane = detail::lane_id(), p = lane & 3u;
  const T y = detail::shuffle<detail::Shfl::idx>(__activemask(), x, p >= delta ? lane - delta : lane);
  return p >= delta ? y : x;
}
template <typename T>
KILN_HD T quad_shuffle_down(T x, ushort delta) {
  const unsigned lane = detail::lane_id(), p = lane & 3u;
  const T y =
      detail::shuffle<detail::Shfl::idx>(__activemask(), x, p + delta < 4u ? lane + delta : lane);
  return p + delta < 4u ? y : x;
}
template <typename T>
KILN_HD T quad_shuffle_rotate_down(T x, ushort delta) {
  const unsigned lane = detail::lane_id();
  return detail::shuffle<detail::Shfl::idx>(__activemask(), x, (lane & ~3u) | ((lane + delta) & 3u));
}
template <typename T>
KILN_HD T quad_shuffle_rotate_up(T x, ushort delta) {
  const unsigned lane = detail::lane_id();
  return detail::shuffle<detail::Shfl::idx>(__activemask(), x, (lane & ~3u) | ((lane - delta) & 3u));
}
template <typename T>
KILN_HD T quad_shuffle_and_fill_down(T data, T filling, ushort delta, ushort modulo = 4) {
  return simd_shuffle_and_fill_down(data, filling, delta, modulo);
}
template <typename T>
KILN_HD T quad_shuffle_and_fill_up(T data, T filling, ushort delta, ushort modulo = 4) {
  return simd_shuffle_and_fill_up(data, filling, delta, modulo);
}

/** Metal's quad ballot: a mask of the quad's lanes (bit i for quad lane i). */
struct quad_vote {
  typedef ushort vote_t;
  vote_t v;
  ushort active_;
  KILN_HD explicit constexpr quad_vote(vote_t x = 0, ushort active = 15) : v(x), active_(active) {}
  KILN_HD explicit constexpr operator vote_t() const { return v; }
  KILN_HD bool all() const { return v == active_; }
  KILN_HD bool any() const { return v != 0; }
};
KILN_HD quad_vote quad_ballot(bool p) {
  const unsigned mask = __activemask(), base = detail::lane_id() & ~3u;
  return quad_vote(static_cast<ushort>((__ballot_sync(mask, p) >> base) & 15u),
                   static_cast<ushort>((mask >> base) & 15u));
}
KILN_HD quad_vote quad_active_threads_mask() {
  const unsigned base = detail::lane_id() & ~3u;
  const ushort m = static_cast<ushort>((__activemask() >> base) & 15u);
  return quad_vote(m, m);
}
KILN_HD bool quad_all(bool p) {
  return quad_ballot(p).all();
}
KILN_HD bool quad_any(bool p) {
  return quad_ballot(p).any();
}
KILN_HD bool quad_is_first() {
  const unsigned lane = detail::lane_id(), base = lane & ~3u;
  const unsigned q = (__activemask() >> base) & 15u;
  return lane == base + static_cast<unsigned>(__ffs(q) - 1);
}

}  // namespace metal
