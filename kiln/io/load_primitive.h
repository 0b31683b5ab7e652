// The Load primitive: an array whose data is read from a file when it is evaluated.
#pragma once

#include <memory>

#include "kiln/io.h"
#include "kiln/primitive.h"

namespace kiln {

/**
 * Reads the output's nbytes() at `offset` of `reader` into a fresh row-major host buffer
 * (one copy: from the file straight into the array's memory), byte-swapping each element
 * when `swap` is set. On a GPU stream the buffer is then uploaded on that stream (files
 * are read by the host either way). No inputs: nothing to differentiate or batch.
 */
class Load : public UnaryPrimitive {
 public:
  Load(Stream stream, std::shared_ptr<io::Reader> reader, size_t offset, bool swap)
      : UnaryPrimitive(stream), reader_(std::move(reader)), offset_(offset), swap_(swap) {}
  KILN_PRIMITIVE_EVAL_UNARY()
  KILN_PRIMITIVE_GRADS()
  KILN_PRIMITIVE_VMAP()
  KILN_PRIMITIVE_NAME(Load)
  void print(std::ostream& os) override;
  /** Allocates `out`'s host buffer and fills it from the file (both eval_* use it). */
  void read(array& out) const;

 private:
  std::shared_ptr<io::Reader> reader_;
  size_t offset_;
  bool swap_;
};

}  // namespace kiln
