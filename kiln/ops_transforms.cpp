// Ops of the transformation family: stop_gradient.
#include <memory>

#include "kiln/ops.h"
#include "kiln/primitives_transforms.h"

namespace kiln {

array stop_gradient(const array& a, StreamOrDevice s) {
  auto shape = a.shape();
  return array(std::move(shape), a.dtype(), std::make_shared<StopGradient>(to_stream(s)), {a});
}

}  // namespace kiln
