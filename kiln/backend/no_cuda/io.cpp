// Loads read files on the host: the Load primitive only ever runs on CPU streams
// (io::load_stream), and a GPU stream gets the loaded array copied to it.
#include "kiln/backend/no_cuda/no_gpu.h"
#include "kiln/io/load_primitive.h"

namespace kiln {

KILN_NO_GPU(Load)

}  // namespace kiln
