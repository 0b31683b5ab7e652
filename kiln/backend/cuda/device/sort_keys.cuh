// Radix keys and block-wide building blocks of the sort family's radix kernels
// (radix_sort.cuh, radix_select.cuh, sort_search.cuh).
//
// Elements travel as their raw bits (an unsigned integer U of the element's size), so one
// kernel serves every dtype of a size and the values written out keep their exact bits. A
// key is the bits mapped to an unsigned integer whose order is the sort order, NaN last:
// unsigned integers as they are, signed ones with the sign bit flipped, floats with the sign
// bit flipped when positive and every bit flipped when negative; every NaN becomes the
// largest key. With CANON, -0.0 becomes +0.0 as well, so that keys are equal exactly when
// the values compare equal (what stable ordering, partitions and unique need).
//
// Self-contained (no other header, no toolkit): kiln's tests also build these kernels with
// the host compiler and run them on the CPU kernel runtime, against the CPU backend.
#pragma once

namespace kiln {
namespace radix {

/** How an element's bits order. */
enum Kind : int {
  kUnsigned = 0,  // unsigned integers and bool
  kSigned = 1,    // two's complement integers
  kFloat = 2,     // IEEE binary32 / binary64 (by the size of U)
  kHalf = 3,      // IEEE binary16
  kBFloat = 4,    // bfloat16
  kComplex = 5,   // complex64 as 64 bits: the real part's binary32 low, the imaginary high;
                  // ordered by real part, then imaginary part (MLX's order)
};

template <int KIND>
inline constexpr bool is_float_kind = KIND >= kFloat&& KIND != kComplex;

template <typename U>
inline constexpr int kBits = 8 * static_cast<int>(sizeof(U));

template <typename U>
inline constexpr U kTopBit = static_cast<U>(static_cast<U>(1) << (kBits<U> - 1));

/** The bits of +infinity (the largest non-NaN magnitude) of a float kind. */
template <typename U, int KIND>
inline constexpr U kInfBits = KIND == kHalf     ? static_cast<U>(0x7c00u)
                              : KIND == kBFloat ? static_cast<U>(0x7f80u)
                              : sizeof(U) == 4  ? static_cast<U>(0x7f800000u)
                                                : static_cast<U>(0x7ff0000000000000ull);

/** Whether `bits` are a NaN (always false for integer kinds). */
template <typename U, int KIND>
__device__ __forceinline__ bool is_nan_bits(U bits) {
  if constexpr (KIND == kComplex) {
    return is_nan_bits<unsigned int, kFloat>(static_cast<unsigned int>(bits)) ||
           is_nan_bits<unsigned int, kFloat>(static_cast<unsigned int>(bits >> 32));
  } else if constexpr (is_float_kind<KIND>) {
    return static_cast<U>(bits & static_cast<U>(~kTopBit<U>)) > kInfBits<U, KIND>;
  } else {
    return false;
  }
}

/** The order-preserving key of `bits` (see the file comment). */
template <typename U, int KIND, bool CANON>
__device__ __forceinline__ U to_key(U bits) {
  if constexpr (KIND == kComplex) {
    const U re = to_key<unsigned int, kFloat, CANON>(static_cast<unsigned int>(bits));
    const U im = to_key<unsigned int, kFloat, CANON>(static_cast<unsigned int>(bits >> 32));
    return static_cast<U>(re << 32 | im);
  } else if constexpr (KIND == kUnsigned) {
    return bits;
  } else if constexpr (KIND == kSigned) {
    return static_cast<U>(bits ^ kTopBit<U>);
  } else {
    const U magnitude = static_cast<U>(bits & static_cast<U>(~kTopBit<U>));
    if (magnitude > kInfBits<U, KIND>) return static_cast<U>(~static_cast<U>(0));
    if (CANON && magnitude == 0) return kTopBit<U>;
    return (bits & kTopBit<U>) ? static_cast<U>(~bits) : static_cast<U>(bits | kTopBit<U>);
  }
}

/** The bits of the element whose key is `key` (NaN comes back as the positive quiet NaN
 * NumPy and the CPU write, and with CANON keys -0.0 as +0.0). */
template <typename U, int KIND>
__device__ __forceinline__ U from_key(U key) {
  if constexpr (KIND == kComplex) {
    const U re = from_key<unsigned int, kFloat>(static_cast<unsigned int>(key >> 32));
    const U im = from_key<unsigned int, kFloat>(static_cast<unsigned int>(key));
    return static_cast<U>(im << 32 | re);
  } else if constexpr (KIND == kUnsigned) {
    return key;
  } else if constexpr (KIND == kSigned) {
    return static_cast<U>(key ^ kTopBit<U>);
  } else {
    constexpr U inf = kInfBits<U, KIND>;
    constexpr U quiet_nan = static_cast<U>(inf | ((inf & static_cast<U>(~(inf << 1))) >> 1));
    if (key == static_cast<U>(~static_cast<U>(0))) return quiet_nan;
    return (key & kTopBit<U>) ? static_cast<U>(key & static_cast<U>(~kTopBit<U>))
                              : static_cast<U>(~key);
  }
}

/** Whether `key` is the key of a NaN (for complex: of either part). */
template <typename U, int KIND>
__device__ __forceinline__ bool is_nan_key(U key) {
  if constexpr (KIND == kComplex) {
    return static_cast<unsigned int>(key >> 32) == ~0u || static_cast<unsigned int>(key) == ~0u;
  } else {
    return is_float_kind<KIND> && key == static_cast<U>(~static_cast<U>(0));
  }
}

/** The value of the element with bits `bits`, exactly, as a double. */
template <typename U, int KIND>
__device__ __forceinline__ double bits_to_double(U bits) {
  if constexpr (KIND == kUnsigned) {
    return static_cast<double>(bits);
  } else if constexpr (KIND == kSigned) {
    if constexpr (sizeof(U) == 1) return static_cast<double>(static_cast<signed char>(bits));
    if constexpr (sizeof(U) == 2) return static_cast<double>(static_cast<short>(bits));
    if constexpr (sizeof(U) == 4) return static_cast<double>(static_cast<int>(bits));
    if constexpr (sizeof(U) == 8) return static_cast<double>(static_cast<long long>(bits));
  } else if constexpr (KIND == kFloat && sizeof(U) == 4) {
    return static_cast<double>(__uint_as_float(static_cast<unsigned int>(bits)));
  } else if constexpr (KIND == kFloat) {
    return __longlong_as_double(static_cast<long long>(bits));
  } else if constexpr (KIND == kBFloat) {
    return static_cast<double>(__uint_as_float(static_cast<unsigned int>(bits) << 16));
  } else {
    // binary16 -> binary32 by its fields (exact): subnormals scale, the rest rebias.
    const unsigned int h = bits, sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float f;
    if (e == 0) {
      f = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24
      if (sign) f = -f;
    } else if (e == 31) {
      f = __uint_as_float(sign | 0x7f800000u | (m << 13));
    } else {
      f = __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
    }
    return static_cast<double>(f);
  }
  return 0.0;
}

// ---------------------------------------------------------------- block-wide scans

/** Warp-inclusive sum by shuffles. */
template <typename T>
__device__ __forceinline__ T warp_inclusive_sum(T x) {
  const unsigned lane = threadIdx.x & 31u;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const T y = __shfl_up_sync(0xffffffffu, x, d);
    if (lane >= static_cast<unsigned>(d)) x += y;
  }
  return x;
}

/**
 * Exclusive prefix sum of `x` over the threads of a block of BLOCK threads (a multiple of
 * 32), in thread order; `total` receives the block's sum. Every thread must call it;
 * `warp_sums` is shared scratch of BLOCK / 32 + 1 entries. Ends with a barrier, so the
 * scratch may be reused at once.
 */
template <int BLOCK, typename T>
__device__ __forceinline__ T block_exclusive_sum(T x, T* warp_sums, T& total) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be whole warps");
  constexpr int kWarps = BLOCK / 32;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const T inclusive = warp_inclusive_sum(x);
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    T w = lane < static_cast<unsigned>(kWarps) ? warp_sums[lane] : T(0);
    const T wi = warp_inclusive_sum(w);
    if (lane < static_cast<unsigned>(kWarps)) warp_sums[lane] = wi - w;  // exclusive
    if (lane == kWarps - 1) warp_sums[kWarps] = wi;
  }
  __syncthreads();
  const T result = warp_sums[warp] + inclusive - x;
  total = warp_sums[kWarps];
  __syncthreads();
  return result;
}

/** The smallest `x` over a block of BLOCK threads (every thread gets it); `scratch` is
 * shared scratch of BLOCK / 32 + 1 entries. T: a 32- or 64-bit integer. */
template <int BLOCK, typename T>
__device__ __forceinline__ T block_min(T x, T* scratch) {
  constexpr int kWarps = BLOCK / 32;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
    const T y = __shfl_down_sync(0xffffffffu, x, d);
    x = y < x ? y : x;
  }
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
    T m = scratch[0];
    for (int w = 1; w < kWarps; ++w) m = scratch[w] < m ? scratch[w] : m;
    scratch[kWarps] = m;
  }
  __syncthreads();
  const T result = scratch[kWarps];
  __syncthreads();
  return result;
}

/**
 * The bin of `hist` (`bins` counters in shared memory) that holds the element of rank `rank`
 * (0-based) when the bins are concatenated in order: `bin`, the count of all earlier bins
 * (`before`) and the bin's own count (`count`). Every thread of the block must call it and
 * gets the answer. `warp_sums` is shared scratch of BLOCK / 32 + 1 entries, `answer` of 3.
 */
template <int BLOCK>
__device__ __forceinline__ void find_rank_bin(const unsigned int* hist, int bins, long long rank,
                                              unsigned long long* warp_sums,
                                              unsigned long long* answer, unsigned int& bin,
                                              long long& before, long long& count) {
  // Each thread owns a run of consecutive bins; a scan of the runs' sums finds the run.
  const int per = (bins + BLOCK - 1) / BLOCK;
  const int first = static_cast<int>(threadIdx.x) * per;
  unsigned long long mine = 0;
  for (int i = 0; i < per && first + i < bins; ++i) mine += hist[first + i];
  unsigned long long total;
  unsigned long long start = block_exclusive_sum<BLOCK>(mine, warp_sums, total);
  const unsigned long long r = static_cast<unsigned long long>(rank);
  if (r >= start && r < start + mine) {
    for (int i = 0; i < per && first + i < bins; ++i) {
      const unsigned long long c = hist[first + i];
      if (r < start + c) {
        answer[0] = static_cast<unsigned long long>(first + i);
        answer[1] = start;
        answer[2] = c;
        break;
      }
      start += c;
    }
  }
  __syncthreads();
  bin = static_cast<unsigned int>(answer[0]);
  before = static_cast<long long>(answer[1]);
  count = static_cast<long long>(answer[2]);
  __syncthreads();
}

}  // namespace radix
}  // namespace kiln

namespace kiln {

/** Block size of scan_lists. */
constexpr int kScanListsBlock = 256;

/**
 * Replaces each of the lists data[l * len .. (l + 1) * len) (one block per list, grid.x
 * lists) by its exclusive prefix sums, and writes the list's sum to totals[l] (when not
 * null). Sums must fit in 32 bits.
 */
__global__ void __launch_bounds__(kScanListsBlock)
    scan_lists(unsigned int* __restrict__ data, long long len, unsigned int* __restrict__ totals) {
  __shared__ unsigned long long warp_sums[kScanListsBlock / 32 + 1];
  unsigned int* list = data + static_cast<long long>(blockIdx.x) * len;
  unsigned long long run = 0;
  for (long long base = 0; base < len; base += kScanListsBlock) {
    const long long i = base + threadIdx.x;
    const unsigned long long x = i < len ? list[i] : 0ull;
    unsigned long long total;
    const unsigned long long excl =
        radix::block_exclusive_sum<kScanListsBlock>(x, warp_sums, total);
    if (i < len) list[i] = static_cast<unsigned int>(run + excl);
    run += total;
  }
  if (totals && threadIdx.x == 0) totals[blockIdx.x] = static_cast<unsigned int>(run);
}

}  // namespace kiln
