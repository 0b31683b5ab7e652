// The rows of the cross-device table (test_gpu_ops.cpp; the rows themselves are in
// test_gpu_ops_table.cpp): per op of kiln/ops.h and sampler of kiln/random.h, a function of
// the inputs and of the case's dtype, the inputs' shapes, domains and layouts, and the dtypes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "test_utils.h"

namespace gpu_ops {

using namespace kiln;

using Arrays = std::vector<array>;
using Fn = std::function<Arrays(const Arrays& x, Dtype t)>;

/** How an input is stored: the same values, read through different strides. */
enum class Layout {
  row,         // row-contiguous
  transposed,  // contiguous, reversed axes
  strided,     // every other element of the last axis of a larger array (an offset view)
  broadcast,   // a size-1 first axis broadcast
};

struct Input {
  Shape shape;
  std::optional<Dtype> dtype;  // the case's dtype when absent
  double lo = -2.0, hi = 2.0;  // domain of the random values (unsigned types clip lo to 0)
  Layout layout = Layout::row;
};

struct Row {
  std::string op;       // the function of kiln/ops.h (or random::<sampler>)
  std::string variant;  // what tells rows of one op apart
  Fn fn;
  std::vector<Input> inputs;
  std::vector<Dtype> dtypes = {float32};
  double rtol = -1;  // |gpu - cpu| <= rtol * (1 + |cpu|); by default the output dtype's

  Row& types(std::vector<Dtype> d) {
    dtypes = std::move(d);
    return *this;
  }
  Row& tol(double r) {
    rtol = r;
    return *this;
  }
};

/** Every row, family by family. */
const std::vector<Row>& all_rows();

}  // namespace gpu_ops
