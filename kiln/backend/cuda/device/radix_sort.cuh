// Least-significant-digit radix sort of rows, for Sort, ArgSort and unique (host side:
// backend/cuda/sort.cpp, plan: backend/cuda/sort_plan.h). Reference: Merrill & Grimshaw,
// "High Performance and Scalable Radix Sorting" (2011): per pass of 8 key bits, an upsweep
// counts each block's digits, a scan turns the counts into each block's output offsets, and
// a downsweep ranks its elements stably and scatters them.
//
// Rows are split into segments of whole tiles, one block each (many for a long row, one
// for short rows, so many rows sort in one launch). Within a tile, each warp ranks its
// elements in order with __match_any_sync (a warp-level multisplit, as in Onesweep: Adinets
// & Merrill 2022), the warps' counts are scanned per digit, and the tile is reordered in
// shared memory so that the writes to each digit's run are coalesced.
//
// Keys are sort_keys.cuh's: exact ones for values-only sorts (kRadixValues: keys only, the
// sorted bits are the output; -0.0 orders before +0.0), canonical ones with the positions as
// payload for argsort (kRadixPairs: equal values keep their order, as the CPU's stable sort).
#pragma once

#include "kiln/backend/cuda/device/sort_keys.cuh"

namespace kiln {

constexpr int kRadixBlock = 256;
constexpr int kRadixWarps = kRadixBlock / 32;
constexpr int kRadixBins = 256;  // 8-bit digits

/** Keys per thread in a tile: 16 (4096-key tiles) up to 32 bits, 8 for 64-bit keys. */
template <typename U>
inline constexpr int kRadixItems = sizeof(U) <= 4 ? 16 : 8;

enum RadixMode : int { kRadixValues = 0, kRadixPairs = 1 };

/** Geometry of a sort (mirrored in backend/cuda/sort_plan.h). */
struct RadixLayout {
  long long n;              // row length
  long long in_row_stride;  // first pass: row r of the input starts at r * in_row_stride
  long long out_inner;      // last pass: element k of row r goes to
                            // (r / inner) * n * inner + r % inner + k * inner
  long long tiles_per_seg;  // tiles of kRadixBlock * kRadixItems keys per segment
  long long segs;           // segments per row (blocks per row)
};

/**
 * Counts the digits (bits shift .. shift + 8 of the key) of each segment into
 * counts[(row * 256 + digit) * segs + seg]. Block b: segment b % segs of row b / segs. With
 * FIRST, `keys` is the input (elements' bits, row r at r * in_row_stride); otherwise the keys
 * of the previous pass (row r at r * n).
 */
template <typename U, int KIND, int MODE, bool FIRST>
__global__ void __launch_bounds__(kRadixBlock)
    radix_upsweep(const U* __restrict__ keys, const RadixLayout L, int shift,
                  unsigned int* __restrict__ counts) {
  constexpr long long kTile = static_cast<long long>(kRadixBlock) * kRadixItems<U>;
  constexpr int kUnroll = 4;
  __shared__ unsigned int hist[kRadixBins];
  const long long row = blockIdx.x / L.segs, seg = blockIdx.x - row * L.segs;
  const long long begin = seg * L.tiles_per_seg * kTile;
  const long long end =
      begin + L.tiles_per_seg * kTile < L.n ? begin + L.tiles_per_seg * kTile : L.n;
  const U* x = keys + row * (FIRST ? L.in_row_stride : L.n);
  hist[threadIdx.x] = 0;
  __syncthreads();
  const unsigned int lane = threadIdx.x & 31u;
  for (long long base = begin; base < end; base += static_cast<long long>(kRadixBlock) * kUnroll) {
    U k[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const long long i = base + j * kRadixBlock + threadIdx.x;
      k[j] = i < end ? x[i] : static_cast<U>(0);
    }
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const long long i = base + j * kRadixBlock + threadIdx.x;
      unsigned int d = kRadixBins;  // no element
      if (i < end) {
        const U key = FIRST ? radix::to_key<U, KIND, MODE == kRadixPairs>(k[j]) : k[j];
        d = static_cast<unsigned int>(key >> shift) & (kRadixBins - 1);
      }
      // A warp whose digits all agree (the high digits of small numbers) adds once.
      const unsigned int d0 = __shfl_sync(0xffffffffu, d, 0);
      if (__all_sync(0xffffffffu, d == d0)) {
        if (lane == 0 && d0 < kRadixBins) atomicAdd(&hist[d0], 32u);
      } else if (d < kRadixBins) {
        atomicAdd(&hist[d], 1u);
      }
    }
  }
  __syncthreads();
  counts[(row * kRadixBins + threadIdx.x) * L.segs + seg] = hist[threadIdx.x];
}

/**
 * Rows of one segment each (segs == 1): one block per row reads the input once and counts the
 * digits of every pass, counts[(pass * rows + row) * 256 + digit]; the downsweeps then need
 * no upsweep (a row's digit counts do not depend on its order).
 */
template <typename U, int KIND, int MODE>
__global__ void __launch_bounds__(kRadixBlock)
    radix_row_hist(const U* __restrict__ in, const RadixLayout L, long long rows,
                   unsigned int* __restrict__ counts) {
  constexpr int kPasses = static_cast<int>(sizeof(U));
  constexpr int kUnroll = 4;
  __shared__ unsigned int hist[kPasses][kRadixBins];
  const long long row = blockIdx.x;
  const U* x = in + row * L.in_row_stride;
#pragma unroll
  for (int p = 0; p < kPasses; ++p) hist[p][threadIdx.x] = 0;
  __syncthreads();
  const unsigned int lane = threadIdx.x & 31u;
  for (long long base = 0; base < L.n; base += static_cast<long long>(kRadixBlock) * kUnroll) {
    U k[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const long long i = base + j * kRadixBlock + threadIdx.x;
      k[j] = i < L.n ? radix::to_key<U, KIND, MODE == kRadixPairs>(x[i]) : static_cast<U>(0);
    }
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const bool valid = base + j * kRadixBlock + threadIdx.x < L.n;
#pragma unroll
      for (int p = 0; p < kPasses; ++p) {
        const unsigned int d =
            valid ? static_cast<unsigned int>(k[j] >> (8 * p)) & (kRadixBins - 1) : kRadixBins;
        const unsigned int d0 = __shfl_sync(0xffffffffu, d, 0);
        if (__all_sync(0xffffffffu, d == d0)) {
          if (lane == 0 && d0 < kRadixBins) atomicAdd(&hist[p][d0], 32u);
        } else if (d < kRadixBins) {
          atomicAdd(&hist[p][d], 1u);
        }
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    counts[(p * rows + row) * kRadixBins + threadIdx.x] = hist[p][threadIdx.x];
  }
}

/**
 * Scatters each segment's keys (and, for kRadixPairs, their positions) to their places by
 * the digit at `shift`, stably. The offsets: with segs == 1, `counts` holds each row's digit
 * counts (unscanned) and `totals` is unused; otherwise `counts` holds the scanned per-segment
 * counts and `totals` each row's digit counts (scan_lists over counts). FIRST reads the
 * input (positions start as 0 .. n - 1); LAST writes the final outputs (out_values: the
 * elements' bits, out_indices: positions; either may be null) at the layout's output
 * places, else keys_out / vals_out (row r at r * n).
 */
template <typename U, int KIND, int MODE, bool FIRST, bool LAST>
__global__ void __launch_bounds__(kRadixBlock)
    radix_downsweep(const U* __restrict__ keys_in, const unsigned int* __restrict__ vals_in,
                    U* __restrict__ keys_out, unsigned int* __restrict__ vals_out,
                    U* __restrict__ out_values, unsigned int* __restrict__ out_indices,
                    const RadixLayout L, int shift, const unsigned int* __restrict__ counts,
                    const unsigned int* __restrict__ totals) {
  constexpr int kItems = kRadixItems<U>;
  constexpr int kTile = kRadixBlock * kItems;
  constexpr bool kPairs = MODE == kRadixPairs;
  __shared__ U skeys[kTile];
  __shared__ unsigned int svals[kPairs ? kTile : 1];
  __shared__ unsigned int whist[kRadixWarps][kRadixBins];
  __shared__ unsigned int digit_base[kRadixBins];
  __shared__ unsigned int tile_start[kRadixBins];
  __shared__ unsigned int scan[kRadixWarps + 1];

  const long long row = blockIdx.x / L.segs, seg = blockIdx.x - row * L.segs;
  const unsigned int t = threadIdx.x, lane = t & 31u, warp = t >> 5;
  {
    // Where this segment's elements of digit t start within the row.
    const unsigned int row_count =
        L.segs == 1 ? counts[row * kRadixBins + t] : totals[row * kRadixBins + t];
    unsigned int all;
    const unsigned int before = radix::block_exclusive_sum<kRadixBlock>(row_count, scan, all);
    digit_base[t] = before + (L.segs == 1 ? 0u : counts[(row * kRadixBins + t) * L.segs + seg]);
  }
  const long long begin = seg * L.tiles_per_seg * kTile;
  const long long end =
      begin + L.tiles_per_seg * kTile < L.n ? begin + L.tiles_per_seg * kTile : L.n;
  const U* kin = keys_in + row * (FIRST ? L.in_row_stride : L.n);
  const unsigned int* vin = vals_in + row * L.n;
  const long long o_row = (row / L.out_inner) * L.n * L.out_inner + row % L.out_inner;
  __syncthreads();

  for (long long tile = begin; tile < end; tile += kTile) {
#pragma unroll
    for (int w = 0; w < kRadixWarps; ++w) whist[w][t] = 0;
    // Warp w ranks elements tile + w * 32 * kItems + j * 32 + lane, in order of j then lane.
    const long long wbase = tile + static_cast<long long>(warp) * 32 * kItems;
    U k[kItems];
    unsigned int v[kItems], rank[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const long long i = wbase + j * 32 + lane;
      k[j] = 0;
      v[j] = 0;
      rank[j] = 0;
      if (i < end) {
        k[j] = FIRST ? radix::to_key<U, KIND, kPairs>(kin[i]) : kin[i];
        if constexpr (kPairs) v[j] = FIRST ? static_cast<unsigned int>(i) : vin[i];
      }
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const long long i = wbase + j * 32 + lane;
      const bool valid = i < end;
      const unsigned int members = __ballot_sync(0xffffffffu, valid);
      unsigned int d = 0, peers = 0, r = 0, b = 0;
      if (valid) {
        d = static_cast<unsigned int>(k[j] >> shift) & (kRadixBins - 1);
        peers = __match_any_sync(members, d);
        r = __popc(peers & ((1u << lane) - 1u));
        b = whist[warp][d];
        rank[j] = b + r;
      }
      __syncwarp();
      if (valid && r == 0) whist[warp][d] = b + __popc(peers);
      __syncwarp();
    }
    __syncthreads();
    // Per digit t: the warps' counts become offsets, the tile's count is their sum.
    unsigned int tile_count = 0;
#pragma unroll
    for (int w = 0; w < kRadixWarps; ++w) {
      const unsigned int c = whist[w][t];
      whist[w][t] = tile_count;
      tile_count += c;
    }
    unsigned int tile_total;
    tile_start[t] = radix::block_exclusive_sum<kRadixBlock>(tile_count, scan, tile_total);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const long long i = wbase + j * 32 + lane;
      if (i < end) {
        const unsigned int d = static_cast<unsigned int>(k[j] >> shift) & (kRadixBins - 1);
        const unsigned int local = tile_start[d] + whist[warp][d] + rank[j];
        skeys[local] = k[j];
        if constexpr (kPairs) svals[local] = v[j];
      }
    }
    __syncthreads();
    const int count = static_cast<int>(end - tile < kTile ? end - tile : kTile);
    for (int p = static_cast<int>(t); p < count; p += kRadixBlock) {
      const U key = skeys[p];
      const unsigned int d = static_cast<unsigned int>(key >> shift) & (kRadixBins - 1);
      const long long dest = digit_base[d] + static_cast<unsigned int>(p) - tile_start[d];
      if constexpr (LAST) {
        const long long o = o_row + dest * L.out_inner;
        if (out_values) out_values[o] = radix::from_key<U, KIND>(key);
        if constexpr (kPairs) {
          if (out_indices) out_indices[o] = svals[p];
        }
      } else {
        keys_out[row * L.n + dest] = key;
        if constexpr (kPairs) vals_out[row * L.n + dest] = svals[p];
      }
    }
    __syncthreads();
    digit_base[t] += tile_count;
    __syncthreads();
  }
}

}  // namespace kiln
