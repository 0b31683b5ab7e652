// The transformation check table (test_grad_check_table.cpp): one row per op of kiln/ops.h
// (several for ops with variants) and the samplers of kiln/random.h, each a function building
// the op from inputs, the inputs' shapes and domains. test_grad_check.cpp checks every row.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "test_utils.h"

namespace grad_check {

using namespace kiln;

struct Input {
  Shape shape;
  Dtype dtype = float64;
  double lo = -2.0, hi = 2.0;  // domain of the random values; integers take [lo, hi)
};

struct Row {
  std::string op;       // the function of kiln/ops.h
  std::string variant;  // what tells rows of one op apart
  ArrayFn fn;
  std::vector<Input> inputs;
  double eps = 1e-6;        // finite-difference step
  double rtol = 1e-6;       // derivatives: |got - want| <= rtol * (1 + |want|)
  bool zero_grad = false;   // derivative zero by definition (stop_gradient)
  bool piecewise = false;   // piecewise linear: inputs near a kink or jump are drawn again
  std::string unique_name;  // test name, set when the table is built

  Row& fd(double step, double tol) {
    eps = step;
    rtol = tol;
    return *this;
  }
  Row& zero_derivative() {
    zero_grad = true;
    return *this;
  }
  // For piecewise linear (or constant) functions: random inputs put a kink (sort or max
  // ties, abs at 0) or a jump (floor) within the finite-difference step in 1e-6 to 2e-4 of
  // draws, where the difference quotient is no derivative; such draws are redrawn.
  Row& kinks() {
    piecewise = true;
    return *this;
  }
};

inline void PrintTo(const Row& r, std::ostream* os) {
  *os << r.unique_name;
}

/** Every row, each with its unique test name. */
const std::vector<Row>& all_rows();

}  // namespace grad_check
