// cooperative_groups for CUDA bodies (MLX's generated translation unit includes
// <cooperative_groups.h> and aliases it as `cg`): kiln's own implementation over CUDA's
// built-ins, so one definition serves NVRTC and the CPU runtime (cuda_cpu.h provides the
// built-ins there, with exact block and warp semantics).
//
// Groups: this_grid() (thread_rank, size, block_rank, ...; sync() needs a cooperative
// launch, which custom kernels do not make: a compile error), this_thread_block(),
// tiled_partition<N>(parent) for N = 1, 2, 4, 8, 16, 32 (thread_block_tile: shfl,
// shfl_up/down/xor, any, all, ballot, match_any/all, sync), tiled_partition(parent, n) at
// run time, coalesced_threads(), this_thread(); reduce, inclusive_scan and exclusive_scan
// over tiles and coalesced groups with plus, less, greater, bit_and, bit_or, bit_xor or any
// functor; memcpy_async/wait (done synchronously). A tile whose lanes are not all in the
// block (the last warp of a block whose size is not a multiple of the tile) works on the
// lanes it has: reductions and scans then fold in lane order, as kiln's simd functions do.
//
// On the CPU every collective passes its caller's line to the runtime (KILN_CG_SITE), so
// that lanes meet at the same call of the body, as on the GPU.
#pragma once

#include "kiln/backend/kernels/metal/defines.h"

#ifdef __CUDACC__
#define KILN_CG_SITE_PARAMS
#define KILN_CG_SITE_PARAMS_ONLY
#define KILN_CG_SITE
#define KILN_CG_SITE_ONLY
#else
#define KILN_CG_SITE_PARAMS , KILN_SITE_PARAMS
#define KILN_CG_SITE_PARAMS_ONLY KILN_SITE_PARAMS
#define KILN_CG_SITE , kiln_site_file, kiln_site_line
#define KILN_CG_SITE_ONLY kiln_site_file, kiln_site_line
#endif

namespace cooperative_groups {

namespace details {

KILN_HD unsigned block_rank_in_grid() {
  return (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
}
KILN_HD unsigned thread_rank_in_block() {
  return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}
KILN_HD unsigned block_threads() {
  return blockDim.x * blockDim.y * blockDim.z;
}
KILN_HD unsigned lane() {
  return thread_rank_in_block() & 31u;
}
/** The lanes of this thread's warp that exist in the block. */
KILN_HD unsigned warp_lanes() {
  const unsigned base = thread_rank_in_block() & ~31u, n = block_threads() - base;
  return n >= 32u ? 0xffffffffu : (1u << n) - 1u;
}
KILN_HD int popc(unsigned x) {
#ifdef __CUDACC__
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}
/** The lane of the rank-th set bit of `mask`. */
KILN_HD unsigned nth_lane(unsigned mask, unsigned rank) {
  for (unsigned i = 0; i < rank; ++i) mask &= mask - 1u;
  return mask ? static_cast<unsigned>(__ffs(static_cast<int>(mask)) - 1) : 0u;
}

// Shuffles of any trivially copyable value: 32-bit words on the GPU, the value itself on
// the CPU (one exchange).
enum class shfl_kind { idx, up, down, bfly };
template <shfl_kind K, typename T>
KILN_HD T shfl(unsigned mask, const T& v, unsigned arg, int width KILN_CG_SITE_PARAMS) {
#ifdef __CUDACC__
  constexpr int n = (sizeof(T) + 3) / 4;
  uint32_t in[n] = {}, out[n];
  memcpy(in, &v, sizeof(T));
  for (int i = 0; i < n; ++i) {
    if constexpr (K == shfl_kind::idx)
      out[i] = __shfl_sync(mask, in[i], static_cast<int>(arg), width);
    else if constexpr (K == shfl_kind::up)
      out[i] = __shfl_up_sync(mask, in[i], arg, width);
    else if constexpr (K == shfl_kind::down)
      out[i] = __shfl_down_sync(mask, in[i], arg, width);
    else
      out[i] = __shfl_xor_sync(mask, in[i], static_cast<int>(arg), width);
  }
  T r;
  memcpy(&r, out, sizeof(T));
  return r;
#else
  if constexpr (K == shfl_kind::idx)
    return __shfl_sync(mask, v, static_cast<int>(arg), width KILN_CG_SITE);
  else if constexpr (K == shfl_kind::up)
    return __shfl_up_sync(mask, v, arg, width KILN_CG_SITE);
  else if constexpr (K == shfl_kind::down)
    return __shfl_down_sync(mask, v, arg, width KILN_CG_SITE);
  else
    return __shfl_xor_sync(mask, v, static_cast<int>(arg), width KILN_CG_SITE);
#endif
}

}  // namespace details

// ---------------------------------------------------------------- dims

/** dim3-like index and size triples (CUDA's dim3 converts to and from them). */
using details_dim3 = dim3;

// ---------------------------------------------------------------- grid

class grid_group {
 public:
  /** This thread's index in the whole grid (x fastest, blocks in order). */
  KILN_HD unsigned long long thread_rank() const {
    return static_cast<unsigned long long>(details::block_rank_in_grid()) *
               details::block_threads() +
           details::thread_rank_in_block();
  }
  KILN_HD unsigned long long num_threads() const {
    return static_cast<unsigned long long>(num_blocks()) * details::block_threads();
  }
  KILN_HD unsigned long long size() const { return num_threads(); }
  KILN_HD unsigned long long block_rank() const { return details::block_rank_in_grid(); }
  KILN_HD unsigned long long num_blocks() const {
    return static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z;
  }
  KILN_HD dim3 block_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  KILN_HD dim3 dim_blocks() const { return dim3(gridDim.x, gridDim.y, gridDim.z); }
  KILN_HD dim3 group_dim() const { return dim_blocks(); }
  KILN_HD dim3 thread_index() const {
    return dim3(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y,
                blockIdx.z * blockDim.z + threadIdx.z);
  }
  KILN_HD dim3 dim_threads() const {
    return dim3(gridDim.x * blockDim.x, gridDim.y * blockDim.y, gridDim.z * blockDim.z);
  }
  /** Grid-wide barriers need a cooperative launch. */
  KILN_HD bool is_valid() const { return false; }
  template <int kiln_unused = 0>
  KILN_HD void sync() const {
    static_assert(kiln_unused != 0,
                  "kiln: grid_group::sync() (a grid-wide barrier) is not supported in custom "
                  "kernels: it needs a cooperative launch. Split the kernel in two.");
  }
};

KILN_HD grid_group this_grid() {
  return grid_group();
}

// ---------------------------------------------------------------- block

class thread_block {
 public:
  KILN_HD void sync(KILN_CG_SITE_PARAMS_ONLY) const { __syncthreads(KILN_CG_SITE_ONLY); }
  KILN_HD unsigned thread_rank() const { return details::thread_rank_in_block(); }
  KILN_HD unsigned num_threads() const { return details::block_threads(); }
  KILN_HD unsigned size() const { return num_threads(); }
  KILN_HD dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  KILN_HD dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  KILN_HD dim3 dim_threads() const { return dim3(blockDim.x, blockDim.y, blockDim.z); }
  KILN_HD dim3 group_dim() const { return dim_threads(); }
};

KILN_HD thread_block this_thread_block() {
  return thread_block();
}

// ---------------------------------------------------------------- tiles

namespace details {

/** The lanes of a group of at most 32 threads: `mask` (lanes of the warp), `rank` of this
 * thread, `width` (the tile size: a power of two for tiles, 32 for coalesced groups). */
template <bool Coalesced>
struct warp_group_base {
  unsigned mask_;
  unsigned width_;

  KILN_HD unsigned lane_of(unsigned rank) const {
    if constexpr (Coalesced)
      return nth_lane(mask_, rank);
    else
      return (lane() & ~(width_ - 1u)) + rank;
  }
  KILN_HD unsigned rank_() const {
    if constexpr (Coalesced)
      return static_cast<unsigned>(popc(mask_ & ((1u << lane()) - 1u)));
    else
      return lane() & (width_ - 1u);
  }
  KILN_HD unsigned count_() const {
    return Coalesced ? static_cast<unsigned>(popc(mask_)) : width_;
  }
  /** Whether every lane of the group exists (the fast shuffle paths). */
  KILN_HD bool full_() const {
    return !Coalesced && static_cast<unsigned>(popc(mask_)) == width_;
  }
};

}  // namespace details

/** Shuffles, votes and synchronization of a group of at most one warp (tiles, coalesced
 * groups, run-time tiles of up to 32 threads). */
template <bool Coalesced>
class warp_group : protected details::warp_group_base<Coalesced> {
  typedef details::warp_group_base<Coalesced> base;

 public:
  KILN_HD warp_group(unsigned mask, unsigned width) : base{mask, width} {}

  KILN_HD unsigned thread_rank() const { return this->rank_(); }
  KILN_HD unsigned num_threads() const { return this->count_(); }
  KILN_HD unsigned size() const { return this->count_(); }
  /** This tile's index among the tiles of its parent, and their number. */
  KILN_HD unsigned meta_group_rank() const {
    return Coalesced ? 0u : details::thread_rank_in_block() / this->width_;
  }
  KILN_HD unsigned meta_group_size() const {
    return Coalesced ? 1u : (details::block_threads() + this->width_ - 1u) / this->width_;
  }
  KILN_HD unsigned lane_mask() const { return this->mask_; }
  /** Whether the group is a tile whose lanes all exist (reductions take the shuffle tree). */
  KILN_HD bool full_tile() const { return this->full_(); }
  /** Whether the thread of rank `r` exists (a tile cut by the block's size lacks some). */
  KILN_HD bool has_rank(unsigned r) const {
    return r < this->count_() && ((this->mask_ >> this->lane_of(r)) & 1u);
  }

  KILN_HD void sync(KILN_CG_SITE_PARAMS_ONLY) const { __syncwarp(this->mask_ KILN_CG_SITE); }

  /** The value of the thread of rank `src` (modulo the group's size). */
  template <typename T>
  KILN_HD T shfl(T v, unsigned src KILN_CG_SITE_PARAMS) const {
    const unsigned n = this->count_();
    if constexpr (Coalesced) {
      return details::shfl<details::shfl_kind::idx>(this->mask_, v, this->lane_of(src % n), 32
                                                    KILN_CG_SITE);
    } else {
      return details::shfl<details::shfl_kind::idx>(this->mask_, v, src % n,
                                                    static_cast<int>(this->width_) KILN_CG_SITE);
    }
  }
  /** The value of rank - delta (a rank below delta keeps its own). */
  template <typename T>
  KILN_HD T shfl_up(T v, unsigned delta KILN_CG_SITE_PARAMS) const {
    if constexpr (Coalesced) {
      const unsigned r = this->rank_();
      const T w = details::shfl<details::shfl_kind::idx>(
          this->mask_, v, this->lane_of(r >= delta ? r - delta : r), 32 KILN_CG_SITE);
      return r >= delta ? w : v;
    } else {
      return details::shfl<details::shfl_kind::up>(this->mask_, v, delta,
                                                   static_cast<int>(this->width_) KILN_CG_SITE);
    }
  }
  /** The value of rank + delta (the last delta ranks keep their own). */
  template <typename T>
  KILN_HD T shfl_down(T v, unsigned delta KILN_CG_SITE_PARAMS) const {
    if constexpr (Coalesced) {
      const unsigned r = this->rank_(), n = this->count_();
      const T w = details::shfl<details::shfl_kind::idx>(
          this->mask_, v, this->lane_of(r + delta < n ? r + delta : r), 32 KILN_CG_SITE);
      return r + delta < n ? w : v;
    } else {
      return details::shfl<details::shfl_kind::down>(this->mask_, v, delta,
                                                     static_cast<int>(this->width_) KILN_CG_SITE);
    }
  }
  template <typename T>
  KILN_HD T shfl_xor(T v, unsigned lane_mask KILN_CG_SITE_PARAMS) const {
    if constexpr (Coalesced) {
      const unsigned r = this->rank_() ^ lane_mask;
      const bool in = r < this->count_();
      const T w = details::shfl<details::shfl_kind::idx>(
          this->mask_, v, this->lane_of(in ? r : this->rank_()), 32 KILN_CG_SITE);
      return in ? w : v;
    } else {
      return details::shfl<details::shfl_kind::bfly>(this->mask_, v, lane_mask,
                                                     static_cast<int>(this->width_) KILN_CG_SITE);
    }
  }

  /** The group's votes, bit i for the thread of rank i. */
  KILN_HD unsigned ballot(int predicate KILN_CG_SITE_PARAMS) const {
    const unsigned b = __ballot_sync(this->mask_, predicate KILN_CG_SITE);
    return compact(b);
  }
  KILN_HD int any(int predicate KILN_CG_SITE_PARAMS) const {
    return __ballot_sync(this->mask_, predicate KILN_CG_SITE) != 0;
  }
  KILN_HD int all(int predicate KILN_CG_SITE_PARAMS) const {
    return __ballot_sync(this->mask_, predicate KILN_CG_SITE) == this->mask_;
  }
  /** The ranks whose `value` equals this thread's. */
  template <typename T>
  KILN_HD unsigned match_any(T value KILN_CG_SITE_PARAMS) const {
    return compact(__match_any_sync(this->mask_, value KILN_CG_SITE));
  }
  /** All ranks when every value is equal (and pred = 1), else 0. */
  template <typename T>
  KILN_HD unsigned match_all(T value, int& pred KILN_CG_SITE_PARAMS) const {
    return compact(__match_all_sync(this->mask_, value, &pred KILN_CG_SITE));
  }

 private:
  // Lane bits to rank bits.
  KILN_HD unsigned compact(unsigned lanes) const {
    if constexpr (Coalesced) {
      unsigned out = 0, r = 0;
      for (unsigned m = this->mask_; m; m &= m - 1u, ++r) {
        const unsigned l = static_cast<unsigned>(__ffs(static_cast<int>(m)) - 1);
        out |= ((lanes >> l) & 1u) << r;
      }
      return out;
    } else {
      return (lanes >> (details::lane() & ~(this->width_ - 1u))) &
             (this->width_ == 32u ? 0xffffffffu : (1u << this->width_) - 1u);
    }
  }
};

/** A tile of Size threads (a power of two up to 32). */
template <unsigned Size, typename ParentT = void>
class thread_block_tile : public warp_group<false> {
  static_assert(Size == 1 || Size == 2 || Size == 4 || Size == 8 || Size == 16 || Size == 32,
                "kiln: thread_block_tile sizes are 1, 2, 4, 8, 16 and 32 in custom kernels "
                "(larger tiles are not supported).");

 public:
  KILN_HD thread_block_tile()
      : warp_group<false>(
            (Size == 32 ? 0xffffffffu : ((1u << Size) - 1u) << (details::lane() & ~(Size - 1u))) &
                details::warp_lanes(),
            Size) {}
  /** A tile converts to the parent-less type, as in CUDA. */
  template <typename P>
  KILN_HD thread_block_tile(const thread_block_tile<Size, P>&) : thread_block_tile() {}
  static constexpr unsigned num_threads_v = Size;
};

/** A group of threads formed at run time (tiled_partition(parent, n)). */
class thread_group : public warp_group<false> {
 public:
  KILN_HD thread_group(unsigned mask, unsigned width, bool block)
      : warp_group<false>(mask, width), whole_block_(block) {}
  /** Any group converts to thread_group, as in CUDA. */
  KILN_HD thread_group(const thread_block&) : warp_group<false>(0u, 0u), whole_block_(true) {}
  template <unsigned Size, typename P>
  KILN_HD thread_group(const thread_block_tile<Size, P>& t)
      : warp_group<false>(t.lane_mask(), Size), whole_block_(false) {}
  KILN_HD void sync(KILN_CG_SITE_PARAMS_ONLY) const {
    if (whole_block_)
      __syncthreads(KILN_CG_SITE_ONLY);
    else
      __syncwarp(this->mask_ KILN_CG_SITE);
  }
  KILN_HD unsigned thread_rank() const {
    return whole_block_ ? details::thread_rank_in_block() : warp_group<false>::thread_rank();
  }
  KILN_HD unsigned num_threads() const {
    return whole_block_ ? details::block_threads() : this->width_;
  }
  KILN_HD unsigned size() const { return num_threads(); }
  KILN_HD bool full_tile() const { return !whole_block_ && this->full_(); }

 private:
  bool whole_block_;
};

/** The threads of the warp that reach this call together. */
class coalesced_group : public warp_group<true> {
 public:
  KILN_HD explicit coalesced_group(unsigned mask) : warp_group<true>(mask, 32u) {}
};

KILN_HD coalesced_group coalesced_threads(KILN_CG_SITE_PARAMS_ONLY) {
  return coalesced_group(__activemask(KILN_CG_SITE_ONLY));
}

template <unsigned Size, typename ParentT>
KILN_HD thread_block_tile<Size, ParentT> tiled_partition(const ParentT&) {
  return thread_block_tile<Size, ParentT>();
}

/** Tiles of `n` threads (a power of two up to 32, or the whole block). */
KILN_HD thread_group tiled_partition(const thread_block&, unsigned n) {
  if (n >= details::block_threads()) return thread_group(0u, n, true);
  if (n == 0 || n > 32u || (n & (n - 1u))) {
#ifdef __CUDACC__
    __trap();
#else
    kiln::cpu_rt::trap("tiled_partition(block, n): n must be a power of two up to 32 or the "
                       "block size.");
#endif
  }
  const unsigned m = n == 32u ? 0xffffffffu : ((1u << n) - 1u) << (details::lane() & ~(n - 1u));
  return thread_group(m & details::warp_lanes(), n, false);
}
template <unsigned Size, typename P>
KILN_HD thread_group tiled_partition(const thread_block_tile<Size, P>&, unsigned n) {
  const unsigned m = n == 32u ? 0xffffffffu : ((1u << n) - 1u) << (details::lane() & ~(n - 1u));
  return thread_group(m & details::warp_lanes(), n, false);
}

/** This thread alone. */
KILN_HD thread_block_tile<1, void> this_thread() {
  return thread_block_tile<1, void>();
}

template <typename Group>
KILN_HD void sync(const Group& g KILN_CG_SITE_PARAMS) {
  g.sync(KILN_CG_SITE_ONLY);
}

// ---------------------------------------------------------------- reductions and scans

template <typename T>
struct plus {
  KILN_HD T operator()(const T& a, const T& b) const { return a + b; }
};
template <typename T>
struct less {
  KILN_HD T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <typename T>
struct greater {
  KILN_HD T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <typename T>
struct bit_and {
  KILN_HD T operator()(const T& a, const T& b) const { return a & b; }
};
template <typename T>
struct bit_or {
  KILN_HD T operator()(const T& a, const T& b) const { return a | b; }
};
template <typename T>
struct bit_xor {
  KILN_HD T operator()(const T& a, const T& b) const { return a ^ b; }
};

/** `op` folded over the group's values; every thread gets the result. A full tile folds as
 * the shuffle tree (xor size/2, ..., 1); a partial or coalesced group in rank order. */
template <typename Group, typename T, typename Op>
KILN_HD T reduce(const Group& g, T value, Op op KILN_CG_SITE_PARAMS) {
  const unsigned n = g.num_threads();
  if (g.full_tile()) {
    for (unsigned d = n / 2; d > 0; d /= 2) value = op(value, g.shfl_xor(value, d KILN_CG_SITE));
    return value;
  }
  T acc = value;
  bool first = true;
  for (unsigned r = 0; r < n; ++r) {
    if (!g.has_rank(r)) continue;
    const T y = g.shfl(value, r KILN_CG_SITE);
    acc = first ? y : op(acc, y);
    first = false;
  }
  return acc;
}

/** The fold of the values of ranks 0..thread_rank(). */
template <typename Group, typename T, typename Op = plus<T>>
KILN_HD T inclusive_scan(const Group& g, T value, Op op = Op() KILN_CG_SITE_PARAMS) {
  const unsigned n = g.num_threads(), r = g.thread_rank();
  if (g.full_tile()) {
    for (unsigned d = 1; d < n; d *= 2) {
      const T y = g.shfl_up(value, d KILN_CG_SITE);
      if (r >= d) value = op(y, value);
    }
    return value;
  }
  T acc = value;
  bool first = true;
  for (unsigned i = 0; i < n; ++i) {
    if (!g.has_rank(i)) continue;
    const T y = g.shfl(value, i KILN_CG_SITE);
    if (i <= r) {
      acc = first ? y : op(acc, y);
      first = false;
    }
  }
  return acc;
}

/** The fold of the values of ranks below thread_rank(); rank 0 gets T() (CUDA leaves it
 * undefined for operations other than plus). */
template <typename Group, typename T, typename Op = plus<T>>
KILN_HD T exclusive_scan(const Group& g, T value, Op op = Op() KILN_CG_SITE_PARAMS) {
  const T inc = inclusive_scan(g, value, op KILN_CG_SITE);
  const unsigned r = g.thread_rank();
  const T prev = g.shfl(inc, r > 0 ? r - 1 : 0u KILN_CG_SITE);
  return r > 0 ? prev : T();
}

// ---------------------------------------------------------------- memcpy_async

/** Copies `bytes` from `src` to `dst` with the threads of `g` (synchronously: the data is
 * there after wait(g), as with CUDA's asynchronous copy). */
template <typename Group>
KILN_HD void memcpy_async(const Group& g, void* dst, const void* src, size_t bytes) {
  const unsigned n = g.num_threads(), r = g.thread_rank();
  if (bytes % 4 == 0 && reinterpret_cast<uintptr_t>(dst) % 4 == 0 &&
      reinterpret_cast<uintptr_t>(src) % 4 == 0) {
    for (size_t i = r; i < bytes / 4; i += n)
      static_cast<uint32_t*>(dst)[i] = static_cast<const uint32_t*>(src)[i];
  } else {
    for (size_t i = r; i < bytes; i += n)
      static_cast<unsigned char*>(dst)[i] = static_cast<const unsigned char*>(src)[i];
  }
}
template <typename Group>
KILN_HD void wait(const Group& g KILN_CG_SITE_PARAMS) {
  g.sync(KILN_CG_SITE_ONLY);
}
template <unsigned N, typename Group>
KILN_HD void wait_prior(const Group& g KILN_CG_SITE_PARAMS) {
  g.sync(KILN_CG_SITE_ONLY);
}

}  // namespace cooperative_groups
