// Metal's simdgroup functions on the CPU: each is one warp exchange through the kernel
// runtime (the lanes that reach the same call take part, so partial simdgroups and lanes
// that returned early behave as on the GPU), and every lane computes the result from the
// values of the others with the same operation order as metal/gpu_simd.h: the shuffle tree
// for a full simdgroup, lane order otherwise.
#pragma once

#include "kiln/backend/kernels/cuda_cpu_runtime.h"
#include "kiln/backend/kernels/metal/math.h"
#include "kiln/backend/kernels/metal/vec.h"

namespace metal {

namespace detail {

using kiln::cpu_rt::warp_exchange;
// The lanes that reach the call (mask 0: Metal's active lanes, not a named set).
constexpr unsigned kAllLanes = 0u;

struct SimdSum {
  template <typename T>
  T operator()(const T& a, const T& b) const {
    return a + b;
  }
};
struct SimdProd {
  template <typename T>
  T operator()(const T& a, const T& b) const {
    return a * b;
  }
};
struct SimdMax {
  template <typename T>
  T operator()(const T& a, const T& b) const {
    return metal::max(a, b);
  }
};
struct SimdMin {
  template <typename T>
  T operator()(const T& a, const T& b) const {
    return metal::min(a, b);
  }
};
struct SimdAnd {
  template <typename T>
  T operator()(const T& a, const T& b) const {
    return a & b;
  }
};
struct SimdOr {
  template <typename T>
  T operator()(const T& a, const T& b) const {
    return a | b;
  }
};
struct SimdXor {
  template <typename T>
  T operator()(const T& a, const T& b) const {
    return a ^ b;
  }
};

inline uint simd_lane() {
  return kiln::cpu_rt::self().linear % 32u;
}

}  // namespace detail

/** Metal's ballot result: a mask of lanes (convertible to an integer). */
struct simd_vote {
  typedef uint64_t vote_t;
  vote_t v;
  uint32_t active_ = 0;  // the lanes that took part in the vote
  explicit constexpr simd_vote(vote_t x = 0, uint32_t active = 0) : v(x), active_(active) {}
  explicit constexpr operator vote_t() const { return v; }
  bool all() const { return static_cast<uint32_t>(v) == active_; }
  bool any() const { return v != 0; }
};

#define KILN_SIMD_REDUCE(NAME, OP)                                                           \
  template <typename T>                                                                      \
  T NAME(T x, KILN_SITE_PARAMS) {                                                            \
    return kiln::cpu_rt::warp_reduce(detail::warp_exchange(detail::kAllLanes, x, KILN_SITE), \
                                     detail::OP{});                                          \
  }
KILN_SIMD_REDUCE(simd_sum, SimdSum)
KILN_SIMD_REDUCE(simd_product, SimdProd)
KILN_SIMD_REDUCE(simd_max, SimdMax)
KILN_SIMD_REDUCE(simd_min, SimdMin)
KILN_SIMD_REDUCE(simd_and, SimdAnd)
KILN_SIMD_REDUCE(simd_or, SimdOr)
KILN_SIMD_REDUCE(simd_xor, SimdXor)
#undef KILN_SIMD_REDUCE

template <typename T>
T simd_prefix_inclusive_sum(T x, KILN_SITE_PARAMS) {
  return kiln::cpu_rt::warp_inclusive_scan(detail::warp_exchange(detail::kAllLanes, x, KILN_SITE),
                                           detail::SimdSum{});
}
template <typename T>
T simd_prefix_exclusive_sum(T x, KILN_SITE_PARAMS) {
  return kiln::cpu_rt::warp_exclusive_scan(detail::warp_exchange(detail::kAllLanes, x, KILN_SITE),
                                           detail::SimdSum{}, T(0));
}
template <typename T>
T simd_prefix_inclusive_product(T x, KILN_SITE_PARAMS) {
  return kiln::cpu_rt::warp_inclusive_scan(detail::warp_exchange(detail::kAllLanes, x, KILN_SITE),
                                           detail::SimdProd{});
}
template <typename T>
T simd_prefix_exclusive_product(T x, KILN_SITE_PARAMS) {
  return kiln::cpu_rt::warp_exclusive_scan(detail::warp_exchange(detail::kAllLanes, x, KILN_SITE),
                                           detail::SimdProd{}, T(1));
}

/** The value of `x` in lane `lane` (its own when that lane does not take part). */
template <typename T>
T simd_shuffle(T x, ushort lane, KILN_SITE_PARAMS) {
  return detail::warp_exchange(detail::kAllLanes, x, KILN_SITE).from(lane);
}
template <typename T>
T simd_broadcast(T x, ushort lane, KILN_SITE_PARAMS) {
  return detail::warp_exchange(detail::kAllLanes, x, KILN_SITE).from(lane);
}
/** The value of the first lane that takes part. */
template <typename T>
T simd_broadcast_first(T x, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return v[static_cast<uint32_t>(__builtin_ctz(v.lanes))];
}
/** The value of lane (this lane - delta); the lowest `delta` lanes keep their own. */
template <typename T>
T simd_shuffle_up(T x, ushort delta, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return v.lane >= delta ? v.from(v.lane - delta) : x;
}
/** The value of lane (this lane + delta); the highest `delta` lanes keep their own. */
template <typename T>
T simd_shuffle_down(T x, ushort delta, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return v.lane + delta < 32u ? v.from(v.lane + delta) : x;
}
template <typename T>
T simd_shuffle_xor(T x, ushort mask, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  const uint32_t src = v.lane ^ mask;
  return src < 32u ? v.from(src) : x;
}
/** Shifts that wrap around the simdgroup. */
template <typename T>
T simd_shuffle_rotate_down(T x, ushort delta, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return v.from((v.lane + delta) & 31u);
}
template <typename T>
T simd_shuffle_rotate_up(T x, ushort delta, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return v.from((v.lane - delta) & 31u);
}

inline simd_vote simd_ballot(bool p, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, p, KILN_SITE);
  uint32_t bits = 0;
  for (uint32_t i = 0; i < 32; ++i) bits |= (v.has(i) && v[i]) ? 1u << i : 0u;
  return simd_vote(bits, v.lanes);
}
inline bool simd_all(bool p, KILN_SITE_PARAMS) {
  simd_vote b = simd_ballot(p, KILN_SITE);
  return b.all();
}
inline bool simd_any(bool p, KILN_SITE_PARAMS) {
  return simd_ballot(p, KILN_SITE).any();
}
inline simd_vote simd_active_threads_mask(KILN_SITE_PARAMS) {
  uint32_t lanes = kiln::cpu_rt::warp_sync(detail::kAllLanes, KILN_SITE);
  return simd_vote(lanes, lanes);
}
/** True in the first lane that takes part. */
inline bool simd_is_first(KILN_SITE_PARAMS) {
  uint32_t lanes = kiln::cpu_rt::warp_sync(detail::kAllLanes, KILN_SITE);
  return detail::simd_lane() == static_cast<uint32_t>(__builtin_ctz(lanes));
}

/** Lanes in groups of `modulo`: the value of `data` from the lane `delta` above in this
 * group, or, past the group's end, of `filling` from the start of the group. */
template <typename T>
T simd_shuffle_and_fill_down(T data, T filling, ushort delta, ushort modulo = 32,
                             KILN_SITE_PARAMS) {
  struct Pair {
    T d, f;
  };
  auto v = detail::warp_exchange(detail::kAllLanes, Pair{data, filling}, KILN_SITE);
  const uint32_t g = v.lane - v.lane % modulo, src = v.lane % modulo + delta;
  return src < modulo ? v.from(g + src).d : v.from(g + src - modulo).f;
}
template <typename T>
T simd_shuffle_and_fill_up(T data, T filling, ushort delta, ushort modulo = 32,
                           KILN_SITE_PARAMS) {
  struct Pair {
    T d, f;
  };
  auto v = detail::warp_exchange(detail::kAllLanes, Pair{data, filling}, KILN_SITE);
  const uint32_t g = v.lane - v.lane % modulo, p = v.lane % modulo;
  return p >= delta ? v.from(g + p - delta).d : v.from(g + p + modulo - delta).f;
}

// Quadgroups: four consecutive lanes. Reductions and scans fold the quad's lanes that take
// part in lane order (as metal/gpu_simd.h does).
namespace detail {
template <typename Op, typename T>
T quad_fold(const kiln::cpu_rt::WarpValues<T>& v, bool prefix, bool inclusive, bool& any) {
  const uint32_t base = v.lane & ~3u;
  Op op;
  T acc = v[v.lane];
  any = false;
  for (uint32_t k = 0; k < 4; ++k) {
    const uint32_t l = base + k;
    if (!v.has(l) || (prefix && (l > v.lane || (!inclusive && l == v.lane)))) continue;
    acc = any ? op(acc, v[l]) : v[l];
    any = true;
  }
  return acc;
}
}  // namespace detail

#define KILN_QUAD_REDUCE(NAME, OP)                                                          \
  template <typename T>                                                                     \
  T NAME(T x, KILN_SITE_PARAMS) {                                                           \
    bool any;                                                                               \
    return detail::quad_fold<detail::OP>(detail::warp_exchange(detail::kAllLanes, x, KILN_SITE), \
                                         false, true, any);                                 \
  }
KILN_QUAD_REDUCE(quad_sum, SimdSum)
KILN_QUAD_REDUCE(quad_product, SimdProd)
KILN_QUAD_REDUCE(quad_max, SimdMax)
KILN_QUAD_REDUCE(quad_min, SimdMin)
KILN_QUAD_REDUCE(quad_and, SimdAnd)
KILN_QUAD_REDUCE(quad_or, SimdOr)
KILN_QUAD_REDUCE(quad_xor, SimdXor)
#undef KILN_QUAD_REDUCE
template <typename T>
T quad_prefix_inclusive_sum(T x, KILN_SITE_PARAMS) {
  bool any;
  return detail::quad_fold<detail::SimdSum>(detail::warp_exchange(detail::kAllLanes, x, KILN_SITE),
                                            true, true, any);
}
template <typename T>
T quad_prefix_exclusive_sum(T x, KILN_SITE_PARAMS) {
  bool any;
  const T r = detail::quad_fold<detail::SimdSum>(
      detail::warp_exchange(detail::kAllLanes, x, KILN_SITE), true, false, any);
  return any ? r : T(0);
}
template <typename T>
T quad_prefix_inclusive_product(T x, KILN_SITE_PARAMS) {
  bool any;
  return detail::quad_fold<detail::SimdProd>(
      detail::warp_exchange(detail::kAllLanes, x, KILN_SITE), true, true, any);
}
template <typename T>
T quad_prefix_exclusive_product(T x, KILN_SITE_PARAMS) {
  bool any;
  const T r = detail::quad_fold<detail::SimdProd>(
      detail::warp_exchange(detail::kAllLanes, x, KILN_SITE), true, false, any);
  return any ? r : T(1);
}

template <typename T>
T quad_shuffle(T x, ushort lane, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return v.from((v.lane & ~3u) | (lane & 3u));
}
template <typename T>
T quad_broadcast(T x, ushort lane, KILN_SITE_PARAMS) {
  return quad_shuffle(x, lane, KILN_SITE);
}
template <typename T>
T quad_broadcast_first(T x, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  const uint32_t base = v.lane & ~3u, q = (v.lanes >> base) & 15u;
  return v[base + static_cast<uint32_t>(__builtin_ctz(q))];
}
template <typename T>
T quad_shuffle_xor(T x, ushort mask, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return v.from(v.lane ^ (mask & 3u));
}
template <typename T>
T quad_shuffle_up(T x, ushort delta, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return (v.lane & 3u) >= delta ? v.from(v.lane - delta) : x;
}
template <typename T>
T quad_shuffle_down(T x, ushort delta, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return (v.lane & 3u) + delta < 4u ? v.from(v.lane + delta) : x;
}
template <typename T>
T quad_shuffle_rotate_down(T x, ushort delta, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return v.from((v.lane & ~3u) | ((v.lane + delta) & 3u));
}
template <typename T>
T quad_shuffle_rotate_up(T x, ushort delta, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return v.from((v.lane & ~3u) | ((v.lane - delta) & 3u));
}
template <typename T>
T quad_shuffle_and_fill_down(T data, T filling, ushort delta, ushort modulo = 4,
                             KILN_SITE_PARAMS) {
  return simd_shuffle_and_fill_down(data, filling, delta, modulo, KILN_SITE);
}
template <typename T>
T quad_shuffle_and_fill_up(T data, T filling, ushort delta, ushort modulo = 4, KILN_SITE_PARAMS) {
  return simd_shuffle_and_fill_up(data, filling, delta, modulo, KILN_SITE);
}

/** Metal's quad ballot: a mask of the quad's lanes (bit i for quad lane i). */
struct quad_vote {
  typedef ushort vote_t;
  vote_t v;
  ushort active_;
  explicit constexpr quad_vote(vote_t x = 0, ushort active = 15) : v(x), active_(active) {}
  explicit constexpr operator vote_t() const { return v; }
  bool all() const { return v == active_; }
  bool any() const { return v != 0; }
};
inline quad_vote quad_ballot(bool p, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, p, KILN_SITE);
  const uint32_t base = v.lane & ~3u;
  ushort bits = 0;
  for (uint32_t k = 0; k < 4; ++k) bits |= (v.has(base + k) && v[base + k]) ? 1u << k : 0u;
  return quad_vote(bits, static_cast<ushort>((v.lanes >> base) & 15u));
}
inline quad_vote quad_active_threads_mask(KILN_SITE_PARAMS) {
  const uint32_t lanes = kiln::cpu_rt::warp_sync(detail::kAllLanes, KILN_SITE);
  const ushort m = static_cast<ushort>((lanes >> (detail::simd_lane() & ~3u)) & 15u);
  return quad_vote(m, m);
}
inline bool quad_all(bool p, KILN_SITE_PARAMS) {
  return quad_ballot(p, KILN_SITE).all();
}
inline bool quad_any(bool p, KILN_SITE_PARAMS) {
  return quad_ballot(p, KILN_SITE).any();
}
inline bool quad_is_first(KILN_SITE_PARAMS) {
  const uint32_t lanes = kiln::cpu_rt::warp_sync(detail::kAllLanes, KILN_SITE);
  const uint32_t base = detail::simd_lane() & ~3u, q = (lanes >> base) & 15u;
  return detail::simd_lane() == base + static_cast<uint32_t>(__builtin_ctz(q));
}

}  // namespace metal
