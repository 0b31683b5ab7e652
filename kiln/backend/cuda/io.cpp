// eval_gpu of the Load primitive: the host reads the file into the output's host buffer,
// which is then uploaded on this stream (and kept, mirrored, for host reads).
#include "kiln/backend/cuda/stream.h"
#include "kiln/io/load_primitive.h"

namespace kiln {

void Load::eval_gpu(const std::vector<array>&, array& out) {
  read(out);
  if (out.nbytes() > 0) gpu::make_resident(out, gpu::device_stream(stream()));
}

}  // namespace kiln
