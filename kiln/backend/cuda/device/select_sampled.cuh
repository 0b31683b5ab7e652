// Sample select for topk with small k: the k largest of each row from one read of it. The
// select family's module includes this header; outputs are radix_select.cuh's, bit for bit.
//
// A radix select does a few operations per element on every pass, and on long rows those
// passes, not memory, bound it. Here each row (one block) first sorts a sample of
// kSampleKeys keys, whose rank kth * kSampleKeys / n less kSampleSpread standard deviations
// (and two) gives a key `lo` below the answer. One pass over the row then counts the
// elements below lo and gathers the others, in row order, into shared memory (warp w owns a
// contiguous run of the row and its own part of the list); the key of rank kth comes from a
// radix select of the gathered elements, and the output from them too (every element at or
// above that key was gathered). When lo is above the answer or a warp's part overflows, the
// row is flagged in `missed` and select_rows, launched next, does it.
//
// Sample sort: Frazer and McKellar (1970); for GPU selection, e.g. Monroe et al.,
// "Randomized selection on the GPU" (2011).
#pragma once

#include "kiln/backend/cuda/device/radix_select.cuh"

namespace kiln {

constexpr int kSampleBlock = 256;
/** Keys sampled per row: one per thread (a power of two: bitonic sort). */
constexpr int kSampleKeys = kSampleBlock;
/** Elements a row of U may gather (static shared memory stays under 48 KiB), an equal part
 * per warp (host mirror: sortplan::sample_candidates). */
template <typename U>
constexpr int kSampleCandidates = sizeof(U) <= 4 ? 4096 : 2048;
/** Standard deviations of the sample rank below kth's at which lo is taken (the host's
 * sortplan::select_sampled_fits uses the same). */
constexpr float kSampleSpread = 2.5f;

namespace radix {

/** Sum over the lanes of a warp (every lane gets it). */
__device__ __forceinline__ unsigned int warp_sum(unsigned int x) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) x += __shfl_xor_sync(0xffffffffu, x, d);
  return x;
}

/** Sorts the block's keys, one per thread, ascending into keys[0, BLOCK) of shared memory
 * (bitonic: pairs closer than a warp exchange by shuffles, the others through `keys`). */
template <typename U, int BLOCK>
__device__ __forceinline__ void block_bitonic_sort(U key, U* keys) {
  using W = unsigned long long;  // a shuffle's type for every U
  const unsigned int t = threadIdx.x;
  for (unsigned int size = 2; size <= BLOCK; size *= 2) {
    for (unsigned int stride = size / 2; stride > 0; stride /= 2) {
      U other;
      if (stride >= 32) {
        keys[t] = key;
        __syncthreads();
        other = keys[t ^ stride];
        __syncthreads();
      } else {
        other = static_cast<U>(__shfl_xor_sync(0xffffffffu, static_cast<W>(key), stride));
      }
      // The lower thread of a pair keeps the smaller key in an ascending run.
      const bool keep_min = ((t & stride) == 0) == ((t & size) == 0);
      key = keep_min == (other < key) ? other : key;
    }
  }
  keys[t] = key;
  __syncthreads();
}

/** The value compared for an element of key kind KIND: float32 and float64 as themselves,
 * other kinds as their bits (compared by key). */
template <typename U, int KIND>
__device__ __forceinline__ auto value_of(U bits) {
  if constexpr (KIND == kFloat && sizeof(U) == 4) {
    return __uint_as_float(static_cast<unsigned int>(bits));
  } else if constexpr (KIND == kFloat && sizeof(U) == 8) {
    return __longlong_as_double(static_cast<long long>(bits));
  } else {
    return bits;
  }
}

}  // namespace radix

/**
 * One block of kSampleBlock threads per row (row r is in[r * row_stride + 0 .. n), n >= 4096):
 * positions [kth, n) of the stable partition around the element of rank kth (topk: the
 * partition's tail, written at r * (n - kth) of out_values / out_indices, either of which may
 * be null). missed[r] becomes 1 when the row was left to select_rows, else 0.
 */
template <typename U, int KIND>
__global__ void __launch_bounds__(kSampleBlock, 4)
    select_sampled(const U* __restrict__ in, long long row_stride, long long n, long long kth,
                   U* __restrict__ out_values, unsigned int* __restrict__ out_indices,
                   unsigned int* __restrict__ missed) {
  using namespace radix;
  constexpr int kB = kSampleBlock, kWarps = kB / 32, kCap = kSampleCandidates<U> / kWarps;
  constexpr int kV = 16 / static_cast<int>(sizeof(U));
  constexpr int kGroup = 32 / static_cast<int>(sizeof(U));  // a 32-byte sector's elements
  __shared__ U skey[kSampleKeys];
  __shared__ U cand[kSampleCandidates<U>];
  __shared__ unsigned int cpos[kSampleCandidates<U>];
  __shared__ unsigned int hist[256];
  __shared__ unsigned long long scan[kWarps + 1];
  __shared__ unsigned long long answer[3];
  __shared__ unsigned int w_count[kWarps], w_below[kWarps], w_eq[kWarps], w_gt[kWarps];
  __shared__ int overflowed;
  const unsigned int lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const long long row = blockIdx.x;
  const U* x = in + row * row_stride;

  // 1. The sample: groups of kGroup consecutive elements (one sector each), evenly spread.
  static_assert(kSampleKeys == kB, "one sampled key per thread");
  if (threadIdx.x == 0) overflowed = 0;
  {
    const long long step = n / (kSampleKeys / kGroup);
    const int i = threadIdx.x;
    block_bitonic_sort<U, kB>(to_key<U, KIND, true>(x[(i / kGroup) * step + i % kGroup]), skey);
  }
  const float r = static_cast<float>(kth) * kSampleKeys / static_cast<float>(n);
  const float m = kSampleSpread * sqrtf(r * (kSampleKeys - r) / kSampleKeys) + 2.0f;
  const int lo_rank = static_cast<int>(floorf(r - m));
  const U lo = lo_rank <= 0 ? static_cast<U>(0) : skey[lo_rank];  // 0: no lower bound
  // float32/float64 compare values instead of keys (cheaper): -0.0 == 0.0 as their keys are,
  // NaN above all. The key 0 (no bound) is a NaN's bits.
  const auto lo_value = value_of<U, KIND>(from_key<U, KIND>(lo));
  const bool lo_nan = is_nan_key<U, KIND>(lo);

  // 2. One pass: warp w takes a contiguous run of 16-byte vectors (warp 0 also the elements
  // before the first 16-byte boundary, the last warp those after the last vector).
  const long long a =
      static_cast<long long>(reinterpret_cast<unsigned long long>(x) / sizeof(U) % kV);
  const long long head = (kV - a) % kV < n ? (kV - a) % kV : n;
  const long long vectors = (n - head) / kV;
  const long long tail = head + vectors * kV;
  const long long per_warp = (vectors + kWarps - 1) / kWarps;
  const long long v_begin = warp * per_warp < vectors ? warp * per_warp : vectors;
  const long long v_end = v_begin + per_warp < vectors ? v_begin + per_warp : vectors;
  const unsigned int mine = warp * kCap;  // this warp's part of cand / cpos
  unsigned int count = 0;                 // gathered by this warp (the same on every lane)
  unsigned int below = 0;                 // this lane's elements below lo
  bool overflow = false;
  // Appends, in order over the lanes, the elements of this lane flagged in `flagged` (bit e:
  // element p0 + e, bits vals[e]). Every lane of the warp calls it.
  auto offer = [&](unsigned int flagged, long long p0, const U(&vals)[kV]) {
    const unsigned int c = __popc(flagged);
    const unsigned int any = __ballot_sync(0xffffffffu, c != 0u);
    if (any == 0u) return;
    unsigned int incl, total;
    if (__ballot_sync(0xffffffffu, c > 1u) == 0u) {  // at most one per lane: the usual case
      incl = __popc(any & ((2u << lane) - 1u));
      total = __popc(any);
    } else {
      incl = warp_inclusive_sum(c);
      total = __shfl_sync(0xffffffffu, incl, 31);
    }
    if (count + total > static_cast<unsigned int>(kCap)) {
      overflow = true;
    } else {
      unsigned int at = count + incl - c;
#pragma unroll
      for (int e = 0; e < kV; ++e) {
        if (flagged >> e & 1u) {
          cand[mine + at] = vals[e];
          cpos[mine + at++] = static_cast<unsigned int>(p0 + e);
        }
      }
    }
    count += total;
  };
  // Whether an element is at or above lo.
  auto in_bracket = [&](U bits) {
    if constexpr (KIND == kFloat) {
      // NaN is not below any lo; with no lower bound lo_value is NaN and nothing is below.
      const auto f = value_of<U, KIND>(bits);
      return lo_nan ? f != f : !(f < lo_value);
    } else {
      return to_key<U, KIND, true>(bits) >= lo;
    }
  };
  // One element (valid or not) offered alone, counted below lo or gathered.
  auto single = [&](bool valid, long long p, U bits) {
    const bool in = valid && in_bracket(bits);
    below += valid && !in;
    const U b[kV] = {bits};
    offer(in ? 1u : 0u, p, b);
  };
  // kSelectUnroll vectors per lane from `base` on; `whole`: all of them before v_end.
  const uint4* xv = reinterpret_cast<const uint4*>(x + head);
  auto vectors_from = [&](long long base, bool whole) {
    uint4 w[kSelectUnroll];
#pragma unroll
    for (int j = 0; j < kSelectUnroll; ++j) {
      const long long v = base + j * 32 + lane;
      if (whole || v < v_end) w[j] = xv[v];
    }
#pragma unroll
    for (int j = 0; j < kSelectUnroll; ++j) {
      const long long v = base + j * 32 + lane;
      const bool valid = whole || v < v_end;
      U b[kV];
      unsigned int flagged = 0;
#pragma unroll
      for (int e = 0; e < kV; ++e) {
        b[e] = vector_element<U>(w[j], e);
        const bool in = in_bracket(b[e]);
        below += valid && !in;
        flagged |= valid && in ? 1u << e : 0u;
      }
      offer(flagged, head + v * kV, b);
    }
  };
  if (warp == 0) single(lane < head, lane, lane < head ? x[lane] : static_cast<U>(0));
  constexpr long long kStep = 32 * kSelectUnroll;
  const long long whole_end = v_begin + (v_end - v_begin) / kStep * kStep;
  for (long long base = v_begin; base < whole_end; base += kStep) vectors_from(base, true);
  if (whole_end < v_end) vectors_from(whole_end, false);
  if (warp == kWarps - 1) {
    single(tail + lane < n, tail + lane, tail + lane < n ? x[tail + lane] : static_cast<U>(0));
  }
  below = warp_sum(below);
  if (lane == 0) {
    w_count[warp] = count;
    w_below[warp] = below;
    if (overflow) overflowed = 1;
  }
  __syncthreads();

  long long less = 0, gathered = 0;
  for (int w = 0; w < kWarps; ++w) less += w_below[w], gathered += w_count[w];
  const bool hit = !overflowed && less <= kth;  // every element from rank kth on was gathered
  if (threadIdx.x == 0) missed[row] = hit ? 0u : 1u;
  if (!hit) return;

  // 3. The key of rank kth among the gathered elements, 8 bits at a time.
  U prefix = 0, mask = 0;
  long long rank = kth - less, count_eq = gathered;
  for (int shift = kBits<U> - 8; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += kB) hist[i] = 0;
    __syncthreads();
    // Each warp its own part. The gathered keys share their top bits: a warp's equal bins add
    // up before the atomic.
    for (unsigned int base = 0; base < count; base += 32) {
      const unsigned int i = base + lane;
      const U k = i < count ? to_key<U, KIND, true>(cand[mine + i]) : static_cast<U>(0);
      const bool counts = i < count && static_cast<U>(k & mask) == prefix;
      const unsigned int bin = counts ? static_cast<unsigned int>(k >> shift) & 255u : 256u;
      const unsigned int peers = __match_any_sync(0xffffffffu, bin);
      if (counts && (peers & ((1u << lane) - 1u)) == 0u) atomicAdd(&hist[bin], __popc(peers));
    }
    __syncthreads();
    unsigned int bin;
    long long before;
    find_rank_bin<kB>(hist, 256, rank, scan, answer, bin, before, count_eq);
    less += before;
    rank -= before;
    prefix = static_cast<U>(prefix | static_cast<U>(static_cast<U>(bin) << shift));
    mask = static_cast<U>(mask | static_cast<U>(static_cast<U>(255u) << shift));
  }
  const U v = prefix;

  // 4. Every element equal to or above v was gathered, in row order per warp. The
  // equal ones go from `less` on, the larger ones after all the equal ones.
  unsigned int eq = 0, gt = 0;
  for (unsigned int i = lane; i < count; i += 32) {
    const U k = to_key<U, KIND, true>(cand[mine + i]);
    eq += k == v;
    gt += k > v;
  }
  eq = warp_sum(eq);
  gt = warp_sum(gt);
  if (lane == 0) w_eq[warp] = eq, w_gt[warp] = gt;
  __syncthreads();
  long long o_eq = less, o_gt = less + count_eq;
  for (unsigned int w = 0; w < warp; ++w) o_eq += w_eq[w], o_gt += w_gt[w];
  const long long out_n = n - kth;
  U* values = out_values ? out_values + row * out_n : nullptr;
  unsigned int* indices = out_indices ? out_indices + row * out_n : nullptr;
  const unsigned int lower = (1u << lane) - 1u;
  for (unsigned int base = 0; base < count; base += 32) {
    const unsigned int i = base + lane;
    const U b = i < count ? cand[mine + i] : static_cast<U>(0);
    const U k = to_key<U, KIND, true>(b);
    const bool is_eq = i < count && k == v, is_gt = i < count && k > v;
    const unsigned int m_eq = __ballot_sync(0xffffffffu, is_eq);
    const unsigned int m_gt = __ballot_sync(0xffffffffu, is_gt);
    const long long dest = is_eq   ? o_eq + __popc(m_eq & lower)
                           : is_gt ? o_gt + __popc(m_gt & lower)
                                   : -1;
    if (dest >= kth) {
      if (values) values[dest - kth] = b;
      if (indices) indices[dest - kth] = cpos[mine + i];
    }
    o_eq += __popc(m_eq);
    o_gt += __popc(m_gt);
  }
}

}  // namespace kiln
