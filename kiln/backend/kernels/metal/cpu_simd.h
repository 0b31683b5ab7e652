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
constexpr unsigned kAllLanes = 0xffffffffu;

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

// Quadgroups: four consecutive lanes.
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
T quad_shuffle_xor(T x, ushort mask, KILN_SITE_PARAMS) {
  auto v = detail::warp_exchange(detail::kAllLanes, x, KILN_SITE);
  return v.from(v.lane ^ (mask & 3u));
}

}  // namespace metal
