// Selection and search primitives of the sort family: Partition (partition, topk),
// ArgPartition, Median, SearchSorted and Unique. Each works along the last axis of its
// input (the ops move the axis there), whose other axes are independent rows.
//
// Order conventions, shared by the CPU and GPU backends so that they agree exactly: keys
// order as sort does (NaN last, -0.0 equal to 0.0; complex numbers by real part, then
// imaginary part, as MLX); a partition around the element of rank kth is stable and
// three-way (smaller elements in their order, then the equal ones, then the larger ones).
#pragma once

#include <string>
#include <vector>

#include "kiln/primitive.h"

namespace kiln {

/**
 * Positions [start, n) of the stable partition of each row (last axis, n elements) around
 * its element of rank `kth` (0 <= kth < n, start <= kth when start < n): partition uses
 * start = 0, topk start = kth = n - k. Output: the input's shape with n - start along the
 * last axis, its dtype.
 */
class Partition : public UnaryPrimitive {
 public:
  Partition(Stream stream, int64_t kth, int64_t start)
      : UnaryPrimitive(stream), kth_(kth), start_(start) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Partition)
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  int64_t kth() const { return kth_; }
  int64_t start() const { return start_; }

 private:
  int64_t kth_, start_;
};

/** The positions (uint32) of Partition's outputs in their rows. Integer output: zero
 * gradient. */
class ArgPartition : public UnaryPrimitive {
 public:
  ArgPartition(Stream stream, int64_t kth, int64_t start)
      : UnaryPrimitive(stream), kth_(kth), start_(start) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(ArgPartition)
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  int64_t kth() const { return kth_; }
  int64_t start() const { return start_; }

 private:
  int64_t kth_, start_;
};

/**
 * The median of each row (last axis, n > 0 elements): the element of rank (n - 1) / 2 and,
 * for even n, the mean with the element of rank n / 2; NaN for a row holding a NaN. Output:
 * the input's shape without the last axis, of output_dtype (the op rounds to float16 or
 * bfloat16 for those inputs).
 */
class Median : public UnaryPrimitive {
 public:
  explicit Median(Stream stream) : UnaryPrimitive(stream) {}
  /** float64 and complex64 for those inputs, float32 for the others. */
  static Dtype output_dtype(Dtype input) {
    return input == float64 || input == complex64 ? input : float32;
  }
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Median)
  KILN_PRIMITIVE_DEFAULT_EQUIVALENT()
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
};

/**
 * Inputs: a 1-D sorted sequence and values of any shape, of one dtype. Output (uint32,
 * values' shape): each value's insertion point, "left" (elements ordering before it) or
 * "right" (elements not ordering after it). Integer output: zero gradient.
 */
class SearchSorted : public UnaryPrimitive {
 public:
  SearchSorted(Stream stream, bool right) : UnaryPrimitive(stream), right_(right) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(SearchSorted)
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override {
    return {inputs[1].shape()};
  }
  bool right() const { return right_; }

 private:
  bool right_;
};

/**
 * Unique values of each row (last axis, n elements), sorted, in `size` entries. Inputs: the
 * rows and, when `has_fill`, the fill value of their dtype: 0-d (every row's), or of the rows'
 * batch shape (one per row, from vmap). Outputs: values
 * (rows' dtype, size per row), index (uint32: each entry's first position), inverse (uint32,
 * the input's shape: each element's entry, clamped to size - 1; 0 when size is 0) and counts
 * (int32). Entries past the last group: the fill (or the row's first entry), the first
 * entry's index, count 0.
 */
class Unique : public Primitive {
 public:
  Unique(Stream stream, int64_t size, bool has_fill)
      : Primitive(stream), size_(size), has_fill_(has_fill) {}
  KILN_PRIMITIVE_EVAL_MULTI()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Unique)
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  int64_t size() const { return size_; }
  bool has_fill() const { return has_fill_; }

 private:
  int64_t size_;
  bool has_fill_;
};

}  // namespace kiln
