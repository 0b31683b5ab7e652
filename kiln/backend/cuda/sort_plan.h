// The launch sequences of the sort family's radix kernels (device/radix_sort.cuh,
// device/radix_select.cuh, device/select_sampled.cuh, device/sort_search.cuh): which kernels
// run, in which order, on which buffers and grids.
//
// Written against a small Launcher interface and kernel names, without CUDA types, so that
// the same sequences drive the GPU (backend/cuda/sort.cpp, sort_ops.cpp) and, in the tests,
// the same kernels built by the host compiler on kiln's CPU kernel runtime
// (tests/test_sort_kernels.cpp): the algorithms are checked without a GPU.
//
// Buffers are device addresses (uint64_t). Rows are affine: element k of row r at
// base + (r * row_stride + k) elements.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::sortplan {

/** How the kernels see a dtype: its size and how its bits order (device/sort_keys.cuh). */
struct KeyType {
  int bytes = 4;
  int kind = 0;  // radix::Kind: 0 unsigned, 1 signed, 2 float, 3 float16, 4 bfloat16, 5 complex64

  bool is_float() const { return kind >= 2; }
  /** The device's unsigned type of this size. */
  const char* utype() const {
    switch (bytes) {
      case 1:
        return "unsigned char";
      case 2:
        return "unsigned short";
      case 4:
        return "unsigned int";
      default:
        return "unsigned long long";
    }
  }
  /** What a median writes: double for 64-bit floats, a complex64's bits for complex, else
   * float. */
  const char* median_type() const {
    return kind == 5 ? "unsigned long long" : kind == 2 && bytes == 8 ? "double" : "float";
  }
  std::string tag() const { return "u" + std::to_string(bytes) + "k" + std::to_string(kind); }
};

/** The kernel modules, one per family and key type. */
enum class Family { radix, select, search, unique };

// Mirrors of the device constants and structs (device/*.cuh).
constexpr int kRadixBlock = 256;
constexpr int kRadixBins = 256;
constexpr int kSelectBlock = 256;
constexpr int kSelectCacheBytes = 16384;
constexpr int kSampleBlock = 256;
constexpr int kSampleKeys = kSampleBlock;
constexpr double kSampleSpread = 2.5;
constexpr int kScanListsBlock = 256;
constexpr int kSearchBlock = 256;
constexpr int kUniqueBlock = 256;
constexpr int kRadixValues = 0, kRadixPairs = 1;
constexpr int kSelectPartition = 0, kSelectMedian = 1;

struct RadixLayout {
  int64_t n = 0;
  int64_t in_row_stride = 0;
  int64_t out_inner = 1;
  int64_t tiles_per_seg = 1;
  int64_t segs = 1;
};
static_assert(sizeof(RadixLayout) == 40);

struct SelectState {
  uint64_t prefix, mask;
  int64_t rank, less, count;
  uint64_t hi_key;
  int32_t nan, pad;
};
static_assert(sizeof(SelectState) == 56);

inline int radix_items(const KeyType& k) {
  return k.bytes <= 4 ? 16 : 8;
}
inline int64_t radix_tile(const KeyType& k) {
  return int64_t{kRadixBlock} * radix_items(k);
}
/** Elements select_sampled may gather per row (kSampleCandidates<U>). */
inline int sample_candidates(const KeyType& k) {
  return k.bytes <= 4 ? 4096 : 2048;
}

// ---------------------------------------------------------------- kernel names

inline const char* b(bool v) {
  return v ? "true" : "false";
}
inline std::string targs(const KeyType& k) {
  return std::string(k.utype()) + ", " + std::to_string(k.kind);
}
inline std::string upsweep_name(const KeyType& k, int mode, bool first) {
  return "kiln::radix_upsweep<" + targs(k) + ", " + std::to_string(mode) + ", " + b(first) + ">";
}
inline std::string downsweep_name(const KeyType& k, int mode, bool first, bool last) {
  return "kiln::radix_downsweep<" + targs(k) + ", " + std::to_string(mode) + ", " + b(first) +
         ", " + b(last) + ">";
}
inline std::string row_hist_name(const KeyType& k, int mode) {
  return "kiln::radix_row_hist<" + targs(k) + ", " + std::to_string(mode) + ">";
}
inline std::string scan_lists_name() {
  return "kiln::scan_lists";
}
inline std::string select_rows_name(const KeyType& k, int mode) {
  return "kiln::select_rows<" + targs(k) + ", " + std::to_string(mode) + ", " +
         (mode == kSelectMedian ? k.median_type() : "float") + ">";
}
inline std::string select_sampled_name(const KeyType& k) {
  return "kiln::select_sampled<" + targs(k) + ">";
}
inline std::string select_hist_name(const KeyType& k, int mode) {
  return "kiln::select_hist<" + targs(k) + ", " + std::to_string(mode) + ">";
}
inline std::string select_pick_name(const KeyType& k) {
  return std::string("kiln::select_pick<") + k.utype() + ">";
}
inline std::string select_min_above_name(const KeyType& k) {
  return "kiln::select_min_above<" + targs(k) + ">";
}
inline std::string select_median_finish_name(const KeyType& k) {
  return "kiln::select_median_finish<" + targs(k) + ", " + k.median_type() + ">";
}
inline std::string select_count_name(const KeyType& k) {
  return "kiln::select_count<" + targs(k) + ">";
}
inline std::string select_write_name(const KeyType& k) {
  return "kiln::select_write<" + targs(k) + ">";
}
inline std::string searchsorted_name(const KeyType& k, bool right) {
  return "kiln::searchsorted<" + targs(k) + ", " + b(right) + ">";
}
inline std::string unique_flags_name(const KeyType& k) {
  return "kiln::unique_flags<" + targs(k) + ">";
}
inline std::string unique_write_name(const KeyType& k) {
  return "kiln::unique_write<" + targs(k) + ">";
}
inline std::string unique_finish_name(const KeyType& k) {
  return std::string("kiln::unique_finish<") + k.utype() + ">";
}

/** The device header a family's module includes. */
inline const char* family_header(Family f) {
  switch (f) {
    case Family::radix:
      return "kiln/backend/cuda/device/radix_sort.cuh";
    case Family::select:
      return "kiln/backend/cuda/device/select_sampled.cuh";
    default:
      return "kiln/backend/cuda/device/sort_search.cuh";
  }
}

inline const char* family_name(Family f) {
  switch (f) {
    case Family::radix:
      return "radix_sort";
    case Family::select:
      return "radix_select";
    case Family::search:
      return "searchsorted";
    default:
      return "unique";
  }
}

/** Every kernel a family's sequences may launch for key type `k`. */
inline std::vector<std::string> family_kernels(Family f, const KeyType& k) {
  std::vector<std::string> out = {scan_lists_name()};
  switch (f) {
    case Family::radix:
      for (int mode : {kRadixValues, kRadixPairs}) {
        out.push_back(row_hist_name(k, mode));
        for (bool first : {false, true}) {
          out.push_back(upsweep_name(k, mode, first));
          for (bool last : {false, true}) out.push_back(downsweep_name(k, mode, first, last));
        }
      }
      break;
    case Family::select:
      for (int mode : {kSelectPartition, kSelectMedian}) {
        out.push_back(select_rows_name(k, mode));
        out.push_back(select_hist_name(k, mode));
      }
      out.push_back(select_sampled_name(k));
      out.push_back(select_pick_name(k));
      out.push_back(select_min_above_name(k));
      out.push_back(select_median_finish_name(k));
      out.push_back(select_count_name(k));
      out.push_back(select_write_name(k));
      break;
    case Family::search:
      out = {searchsorted_name(k, false), searchsorted_name(k, true)};
      break;
    case Family::unique:
      out.push_back(unique_flags_name(k));
      out.push_back(unique_write_name(k));
      out.push_back(unique_finish_name(k));
      break;
  }
  return out;
}

// ---------------------------------------------------------------- the launcher

/** Runs kernels of one key type in order on one queue (a GPU stream, or the CPU runtime). */
class Launcher {
 public:
  virtual ~Launcher() = default;
  /** Launches `kernel` of family `f`'s module on a 1-D grid; `params` as cuLaunchKernel's. */
  virtual void launch(Family f, const std::string& kernel, int64_t blocks, uint32_t threads,
                      void** params) = 0;
  /** A temporary buffer of `bytes`, valid until the queued work completes. */
  virtual uint64_t scratch(size_t bytes) = 0;
  /** Zeroes `bytes` at `ptr`, in queue order. */
  virtual void zero(uint64_t ptr, size_t bytes) = 0;
  /** Multiprocessors of the device (sizes grids). */
  virtual int multiprocessors() const = 0;

  /** Launches with C++ arguments of exactly the kernel's parameter types (int64_t for long
   * long, uint64_t for pointers). Empty grids launch nothing. */
  template <typename... Args>
  void run(Family f, const std::string& kernel, int64_t blocks, uint32_t threads,
           const Args&... args) {
    if (blocks <= 0) return;
    if (blocks > 0x7fffffff) throw std::runtime_error("[sort] " + kernel + ": grid too large.");
    void* params[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
    launch(f, kernel, blocks, threads, params);
  }
};

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// ---------------------------------------------------------------- radix sort

/** A radix sort of `rows` rows of `n` elements. */
struct RadixSortJob {
  KeyType key;
  bool pairs = false;  // argsort (canonical keys, positions) vs values only (exact keys)
  int64_t rows = 0, n = 0;
  uint64_t in = 0;  // the input's bits, row r at in + r * in_row_stride elements
  int64_t in_row_stride = 0;
  // Final outputs (either may be 0), element k of row r at (r / out_inner) * n * out_inner +
  // r % out_inner + k * out_inner. When both are 0, the sorted keys and positions stay in
  // scratch (see RadixSortResult).
  uint64_t out_values = 0, out_indices = 0;
  int64_t out_inner = 1;
};

/** Where the sorted keys (and positions, for pairs) of a job without outputs are: row r at
 * r * n. */
struct RadixSortResult {
  uint64_t keys = 0, positions = 0;
};

inline RadixSortResult radix_sort(Launcher& L, const RadixSortJob& j) {
  RadixSortResult res;
  if (j.rows == 0 || j.n == 0) return res;
  const KeyType& k = j.key;
  const int64_t tile = radix_tile(k), tiles = ceil_div(j.n, tile);
  const int64_t target = int64_t{4} * L.multiprocessors();
  int64_t segs = std::clamp<int64_t>(ceil_div(target, j.rows), 1, tiles);
  RadixLayout lay;
  lay.n = j.n;
  lay.in_row_stride = j.in_row_stride;
  lay.out_inner = j.out_inner;
  lay.tiles_per_seg = ceil_div(tiles, segs);
  lay.segs = segs = ceil_div(tiles, lay.tiles_per_seg);
  const int mode = j.pairs ? kRadixPairs : kRadixValues;
  const bool write_out = j.out_values || j.out_indices;

  const size_t total = static_cast<size_t>(j.rows * j.n);
  uint64_t keys[2] = {L.scratch(total * k.bytes), L.scratch(total * k.bytes)};
  uint64_t vals[2] = {0, 0};
  if (j.pairs) vals[0] = L.scratch(total * 4), vals[1] = L.scratch(total * 4);
  const int passes = k.bytes;  // 8-bit digits
  // One segment per row: every pass's digit counts from one read of the input. Otherwise
  // each pass counts per segment (an upsweep) and scans the counts.
  const size_t per_pass = static_cast<size_t>(j.rows * kRadixBins * segs);
  const uint64_t counts = L.scratch(per_pass * 4 * (segs == 1 ? passes : 1));
  const uint64_t totals = segs > 1 ? L.scratch(static_cast<size_t>(j.rows * kRadixBins) * 4) : 0;
  if (segs == 1) {
    L.run(Family::radix, row_hist_name(k, mode), j.rows, kRadixBlock, j.in, lay, j.rows, counts);
  }
  int cur = 0;
  for (int p = 0; p < passes; ++p) {
    const bool first = p == 0, last = p == passes - 1 && write_out;
    const int shift = 8 * p;
    const uint64_t src = first ? j.in : keys[cur];
    uint64_t pass_counts = counts;
    if (segs == 1) {
      pass_counts += static_cast<uint64_t>(p) * per_pass * 4;
    } else {
      L.run(Family::radix, upsweep_name(k, mode, first), j.rows * segs, kRadixBlock, src, lay,
            shift, counts);
      L.run(Family::radix, scan_lists_name(), j.rows * kRadixBins, kScanListsBlock, counts, segs,
            totals);
    }
    L.run(Family::radix, downsweep_name(k, mode, first, last), j.rows * segs, kRadixBlock, src,
          vals[cur], keys[cur ^ 1], vals[cur ^ 1], j.out_values, j.out_indices, lay, shift,
          pass_counts, totals);
    cur ^= 1;
  }
  res.keys = keys[cur];
  res.positions = vals[cur];
  return res;
}

// ---------------------------------------------------------------- selection

/** Selection in `rows` rows of `n` > 0 elements: the stable partition around rank `kth`,
 * positions [w0, n) of each row to out_values / out_indices (row r at r * (n - w0); either
 * may be 0); or, with `median`, each row's median to out_median (kth is then ignored). */
struct SelectJob {
  KeyType key;
  bool median = false;
  int64_t rows = 0, n = 0, kth = 0, w0 = 0;
  uint64_t in = 0;
  int64_t row_stride = 0;
  uint64_t out_values = 0, out_indices = 0, out_median = 0;
};

/** Whether a job spreads each row over many blocks: too few rows to keep every
 * multiprocessor's memory pipe full with one block per row, and rows long enough to split. */
inline bool select_multiblock(const SelectJob& j, int multiprocessors) {
  return j.rows < int64_t{4} * multiprocessors && j.n > 65536;
}

/** Whether select_sampled should take a one-block-per-row job: topk (w0 == kth) of rows of
 * at least 4096 elements where the elements it is expected to gather (device/
 * select_sampled.cuh) fill at most 3/4 of its room, so that a row rarely falls back. */
inline bool select_sampled_fits(const SelectJob& j) {
  if (j.median || j.n < 4096 || j.w0 == 0 || j.w0 != j.kth) return false;
  const double s = kSampleKeys, r = static_cast<double>(j.kth) * s / static_cast<double>(j.n);
  const double m = kSampleSpread * std::sqrt(r * (s - r) / s) + 2;
  return (s - (r - m)) * static_cast<double>(j.n) / s <= 0.75 * sample_candidates(j.key);
}

inline void select(Launcher& L, const SelectJob& j) {
  if (j.rows == 0 || j.n == 0) return;
  const KeyType& k = j.key;
  const int mode = j.median ? kSelectMedian : kSelectPartition;
  const int64_t kth = j.median ? (j.n - 1) / 2 : j.kth;
  if (!select_multiblock(j, L.multiprocessors())) {
    uint64_t missed = 0;  // after a sample select, select_rows takes the rows it missed
    if (select_sampled_fits(j)) {
      missed = L.scratch(static_cast<size_t>(j.rows) * 4);
      L.run(Family::select, select_sampled_name(k), j.rows, kSampleBlock, j.in, j.row_stride, j.n,
            kth, j.out_values, j.out_indices, missed);
    }
    L.run(Family::select, select_rows_name(k, mode), j.rows, kSelectBlock, j.in, j.row_stride, j.n,
          kth, j.w0, j.out_values, j.out_indices, j.out_median, missed);
    return;
  }
  // Chunks of whole output tiles (2048 elements), about four blocks per multiprocessor.
  const int64_t target = int64_t{4} * L.multiprocessors();
  int64_t chunk = std::max<int64_t>(16384, ceil_div(j.n * j.rows, target));
  chunk = ceil_div(chunk, 2048) * 2048;
  const int64_t chunks = ceil_div(j.n, chunk);
  const int64_t blocks = j.rows * chunks;
  const uint64_t st = L.scratch(static_cast<size_t>(j.rows) * sizeof(SelectState));
  const uint64_t ghist = L.scratch(static_cast<size_t>(j.rows) * 256 * 4);
  L.zero(st, static_cast<size_t>(j.rows) * sizeof(SelectState));
  L.zero(ghist, static_cast<size_t>(j.rows) * 256 * 4);
  for (int shift = 8 * k.bytes - 8, first = 1; shift >= 0; shift -= 8, first = 0) {
    L.run(Family::select, select_hist_name(k, mode), blocks, kSelectBlock, j.in, j.row_stride, j.n,
          chunk, chunks, st, ghist, shift, first);
    L.run(Family::select, select_pick_name(k), j.rows, kSelectBlock, st, ghist, shift, first, kth);
  }
  if (j.median) {
    if (j.n % 2 == 0) {
      L.run(Family::select, select_min_above_name(k), blocks, kSelectBlock, j.in, j.row_stride, j.n,
            chunk, chunks, st, j.n / 2);
    }
    L.run(Family::select, select_median_finish_name(k), ceil_div(j.rows, 256), 256, st, j.rows, j.n,
          j.out_median);
    return;
  }
  const uint64_t counts = L.scratch(static_cast<size_t>(j.rows * 3 * chunks) * 4);
  L.run(Family::select, select_count_name(k), blocks, kSelectBlock, j.in, j.row_stride, j.n, chunk,
        chunks, st, counts);
  L.run(Family::select, scan_lists_name(), j.rows * 3, kScanListsBlock, counts, chunks,
        uint64_t{0});
  L.run(Family::select, select_write_name(k), blocks, kSelectBlock, j.in, j.row_stride, j.n, chunk,
        chunks, st, counts, j.w0, j.out_values, j.out_indices);
}

// ---------------------------------------------------------------- searchsorted, unique

/** out[i] = insertion point of values[i] (count of them, contiguous) in the sorted sequence
 * (n elements, seq_stride apart). */
struct SearchJob {
  KeyType key;
  bool right = false;
  uint64_t seq = 0;
  int64_t seq_stride = 1, n = 0;
  uint64_t values = 0;
  int64_t count = 0;
  uint64_t out = 0;
};

inline void searchsorted(Launcher& L, const SearchJob& j) {
  L.run(Family::search, searchsorted_name(j.key, j.right), ceil_div(j.count, kSearchBlock),
        kSearchBlock, j.seq, j.seq_stride, j.n, j.values, j.count, j.out);
}

/** unique of each of `rows` rows of `n` elements (row r at in + r * row_stride): outputs of
 * `size` entries per row (values: the elements' bits; index; counts: int32) and inverse
 * (rows * n). `fill`: the padding's bits (row r's at fill + r * fill_stride elements), or 0
 * to pad with each row's first entry. */
struct UniqueJob {
  KeyType key;
  int64_t rows = 0, n = 0, size = 0;
  uint64_t in = 0;
  int64_t row_stride = 0;
  uint64_t fill = 0;
  int64_t fill_stride = 0;
  uint64_t values = 0, index = 0, inverse = 0, counts = 0;
};

inline void unique(Launcher& L, const UniqueJob& j) {
  if (j.rows == 0) return;
  const KeyType& k = j.key;
  const uint64_t groups = L.scratch(static_cast<size_t>(j.rows) * 4);
  const uint64_t starts = L.scratch(static_cast<size_t>(j.rows * (j.size + 1)) * 4);
  if (j.n == 0) {
    L.zero(groups, static_cast<size_t>(j.rows) * 4);
  } else {
    RadixSortJob sj;
    sj.key = k;
    sj.pairs = true;
    sj.rows = j.rows;
    sj.n = j.n;
    sj.in = j.in;
    sj.in_row_stride = j.row_stride;
    const RadixSortResult sorted = radix_sort(L, sj);
    const int64_t chunk = 16384, chunks = ceil_div(j.n, chunk);
    const uint64_t first_group = L.scratch(static_cast<size_t>(j.rows * chunks) * 4);
    L.run(Family::unique, unique_flags_name(k), j.rows * chunks, kUniqueBlock, sorted.keys, j.n,
          chunk, chunks, first_group);
    L.run(Family::unique, scan_lists_name(), j.rows, kScanListsBlock, first_group, chunks, groups);
    L.run(Family::unique, unique_write_name(k), j.rows * chunks, kUniqueBlock, j.in, j.row_stride,
          sorted.keys, sorted.positions, j.n, chunk, chunks, first_group, j.size, j.values, j.index,
          j.inverse, starts);
  }
  L.run(Family::unique, unique_finish_name(k), ceil_div(j.rows * j.size, kUniqueBlock),
        kUniqueBlock, j.values, j.index, j.counts, starts, groups, j.rows, j.n, j.size, j.fill,
        j.fill_stride);
}

}  // namespace kiln::sortplan
