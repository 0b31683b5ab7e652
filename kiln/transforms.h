// Evaluation and function transformations.
#pragma once

#include <vector>

#include "kiln/array.h"

namespace kiln {

/** Evaluates `outputs` and blocks until their data is available. Rethrows the first error
 * raised while computing any of them; other arrays stay usable. */
void eval(std::vector<array> outputs);

/** Submits `outputs` for evaluation and returns at once; `array::wait`, `eval` or
 * `synchronize` wait for them. */
void async_eval(std::vector<array> outputs);

template <typename... Arrays>
  requires(std::is_same_v<std::decay_t<Arrays>, array> && ...)
void eval(Arrays&&... outputs) {
  eval(std::vector<array>{std::forward<Arrays>(outputs)...});
}

template <typename... Arrays>
  requires(std::is_same_v<std::decay_t<Arrays>, array> && ...)
void async_eval(Arrays&&... outputs) {
  async_eval(std::vector<array>{std::forward<Arrays>(outputs)...});
}

}  // namespace kiln
