// Host helpers of the fused built-ins' GPU kernels (fast_*.cpp): dense inputs and the launch
// shape of the row kernels of device/norm/rows.cuh.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "kiln/array.h"
#include "kiln/backend/cuda/context.h"
#include "kiln/backend/cuda/copy.h"
#include "kiln/backend/cuda/elementwise.h"
#include "kiln/backend/cuda/indexing.h"
#include "kiln/backend/cuda/jit.h"
#include "kiln/backend/cuda/launch.h"
#include "kiln/backend/cuda/stream.h"

namespace kiln::gpu::fast {

/** Dtypes the fused built-ins run on. */
inline constexpr Dtype kFloatDtypes[] = {float16, bfloat16, float32, float64};

/** The device address of `a`'s elements in row-major order: `a` itself when row-contiguous,
 * else a row-contiguous copy in scratch memory of `s`. */
inline CUdeviceptr dense_address(const array& a, DeviceStream& s) {
  if (a.flags().row_contiguous) return device_address(a);
  const CUdeviceptr p = scratch(a.nbytes(), s);
  copy_to_row_contiguous(a, p, s);
  return p;
}

/** Dense strides for `shape` in `like`'s axis order when `like` is dense in another order with
 * its last axis innermost (a (B, L, H, D) buffer seen as (B, H, L, D)), else row-major
 * strides. `shape` has like's rank; an output laid out so follows its input's layout. */
inline Strides strides_like(const array& like, const Shape& shape) {
  const int nd = static_cast<int>(shape.size());
  if (!like.flags().contiguous || like.flags().row_contiguous || like.data_size() != like.size() ||
      like.ndim() != nd || nd == 0 || like.strides(-1) != 1) {
    return array::row_major_strides(shape);
  }
  std::vector<int> order(nd);
  for (int i = 0; i < nd; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return like.strides(a) > like.strides(b); });
  Strides st(nd);
  int64_t span = 1;
  for (int i = nd - 1; i >= 0; --i) {
    st[order[i]] = span;
    span *= shape[order[i]];
  }
  return st;
}

/** Allocates `out` densely in the layout strides_like(like, out.shape()) gives. */
inline void set_output_like(const array& like, array& out, DeviceStream& s) {
  Strides st = strides_like(like, out.shape());
  auto [flags, data_size] = array::layout(out.shape(), st);
  out.set_data(new_device_storage(out.nbytes(), s), data_size, std::move(st), flags);
}

inline bool aligned16(CUdeviceptr p) {
  return p % 16 == 0;
}

/** Elements per 16-byte vector of d. */
inline int vec_elems(Dtype d) {
  return 16 / static_cast<int>(d.size);
}

inline int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

/** How a row kernel covers rows of n elements: `group` threads per row holding `vpt`
 * vectors each, `block` threads per block; `looped` when the row does not fit in
 * registers (then vpt is 0 and the kernel loops over the row). */
struct RowPlan {
  int group;
  int vpt;
  int block;
  bool looped;
  int64_t rows_per_block() const { return block / group; }
};

/** The plan for rows of n elements of d with at most `max_vpt` vectors per thread: the
 * fewest threads that hold the row with max_vpt vectors each (at least a warp, at most
 * `max_group`), then the fewest vectors per thread (a power of two) that cover it. max_vpt 0
 * asks for the looped kernel: a warp for short rows, up to max_group threads for long ones. */
inline RowPlan plan_rows(int64_t n, Dtype d, int max_vpt, int max_group = 1024) {
  const int64_t nv = std::max<int64_t>(1, (n + vec_elems(d) - 1) / vec_elems(d));
  RowPlan p;
  if (nv > static_cast<int64_t>(max_group) * max_vpt) {
    p.group = static_cast<int>(std::clamp<int64_t>(next_pow2((nv + 7) / 8), 32, max_group));
    p.vpt = 0;
    p.looped = true;
  } else {
    p.group = static_cast<int>(
        std::clamp<int64_t>(next_pow2((nv + max_vpt - 1) / max_vpt), 32, max_group));
    p.vpt = static_cast<int>(next_pow2((nv + p.group - 1) / p.group));
    p.looped = false;
  }
  p.block = std::max(p.group, 256);
  return p;
}

/** Row tiles a staged kernel keeps in shared memory (mirrors device/norm/rows.cuh's
 * kStages). */
inline constexpr int kRowStages = 3;

/** Vectors per thread the staged kernels are compiled for (1, 2 and 4). */
inline constexpr int kStagedMaxVpt = 4;

/**
 * The dynamic shared memory of the staged kernel (device/norm/rows.cuh's RowRing, one row per
 * 1024-thread block) for rows planned as p, or 0 to keep the register kernel: staged when p
 * needs a whole 1024-thread block per row (one block per SM, whose memory traffic would
 * stop while it reduces), at most kStagedMaxVpt vectors per thread, and kRowStages rows of n
 * elements of d fit in a block's shared memory.
 */
inline size_t staged_smem(const RowPlan& p, int64_t n, Dtype d, DeviceStream& s) {
  if (p.looped || p.group < 1024 || p.vpt > kStagedMaxVpt) return 0;
  const size_t bytes = static_cast<size_t>(kRowStages) * static_cast<size_t>(n) * d.size;
  return bytes <= static_cast<size_t>(s.context().shared_per_block_optin()) ? bytes : 0;
}

/** Persistent blocks of a staged kernel f for `rows` rows, one row per block at a time: as
 * many as fit on the device at once with `smem` bytes each, at most one per row. */
inline Dim3 staged_grid(CUfunction f, size_t smem, int64_t rows, DeviceStream& s) {
  const int64_t blocks = std::min(rows, resident_blocks(s, f, 1024, smem));
  return {static_cast<uint32_t>(std::max<int64_t>(blocks, 1)), 1, 1};
}

/** Blocks for `rows` rows under plan p. */
inline Dim3 row_grid(int64_t rows, const RowPlan& p) {
  const int64_t blocks = std::max<int64_t>(1, (rows + p.rows_per_block() - 1) / p.rows_per_block());
  if (blocks > 0x7fffffff) throw std::runtime_error("[fast] Too many rows for one launch.");
  return {static_cast<uint32_t>(blocks), 1, 1};
}

}  // namespace kiln::gpu::fast
