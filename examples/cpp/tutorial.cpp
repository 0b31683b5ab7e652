// A first tour of kiln from C++: lazy evaluation, broadcasting, a reduction and a matmul.
#include <iostream>

#include "kiln/kiln.h"

using namespace kiln;

namespace {
void show(const char* label, array a) {
  a.eval();
  std::cout << label << " shape " << shape_str(a.shape()) << " " << a.dtype() << ": [";
  auto f = astype(reshape(a, {-1}), float64);
  f.eval();
  for (size_t i = 0; i < a.size() && i < 8; ++i) std::cout << (i ? ", " : "") << f.data<double>()[i];
  std::cout << (a.size() > 8 ? ", ...]" : "]") << "\n";
}
}  // namespace

int main() {
  std::cout << "kiln " << KILN_VERSION << " on " << default_device() << "\n\n";

  // 1. Ops build a graph; nothing is computed until eval.
  array x({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
  array y = exp(x) + x;
  std::cout << "y has a primitive before eval: " << std::boolalpha << y.has_primitive() << "\n";
  y.eval();
  std::cout << "... and after eval: " << y.has_primitive() << "\n";
  show("exp(x) + x", y);

  // 2. Broadcasting: a (2, 3) array plus a (3,) row.
  array row({10.0f, 20.0f, 30.0f});
  show("x + row", x + row);

  // 3. Reductions over any axes.
  show("sum(x, axis=1)", sum(x, 1));
  show("mean(x)", mean(x));

  // 4. Matrix products (BLAS on the CPU, cuBLASLt on the GPU).
  array w = transpose(x);  // (3, 2), a view
  show("x @ x.T", matmul(x, w));
  return 0;
}
