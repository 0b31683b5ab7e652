// Transformations of the Load primitive and the lazy-load helpers of kiln/io/common.h.
#include "kiln/io/load_primitive.h"

#include <ostream>

#include "kiln/io/common.h"
#include "kiln/ops.h"

namespace kiln {

void Load::read(array& out) const {
  out.set_data(Storage::host(out.nbytes()));
  if (out.nbytes() == 0) return;
  char* dst = out.data<char>();
  reader_->read(dst, out.nbytes(), offset_);
  if (swap_) io::swap_endianness(dst, out.nbytes(), out.dtype());
}

void Load::print(std::ostream& os) {
  os << "Load(" << reader_->label() << ", offset " << offset_ << ")";
}

// No inputs, so no tangent or cotangent reaches a Load: a loaded array is a constant.
std::vector<array> Load::jvp(const std::vector<array>& primals, const std::vector<array>&,
                             const std::vector<int>&) {
  throw std::logic_error("[Load::jvp] A loaded array has no inputs; it has no jvp to take.");
}

std::vector<array> Load::vjp(const std::vector<array>&, const std::vector<array>&,
                             const std::vector<int>&, const std::vector<array>&) {
  return {};
}

std::pair<std::vector<array>, std::vector<int>> Load::vmap(const std::vector<array>&,
                                                           const std::vector<int>&) {
  throw std::logic_error("[Load::vmap] A loaded array has no inputs; it has nothing to batch.");
}

namespace io {

array lazy_load(std::shared_ptr<Reader> in, size_t offset, Shape shape, Dtype dtype, bool swap,
                const std::string& label, StreamOrDevice s) {
  size_t nbytes = shape_size(shape) * dtype.size;
  size_t have = in->size();
  if (offset > have || have - offset < nbytes) {
    corrupt("The data of ", label, " in ", in->label(), " needs ", nbytes, " bytes at offset ",
            offset, " but the file has ", have, " bytes; it is truncated or corrupt.");
  }
  // As MLX, loads default to the CPU (files are read by the host) whatever the default device.
  auto prim = std::make_shared<Load>(to_stream(s, Device::cpu), std::move(in), offset,
                                     swap && dtype.size > 1);
  return array(std::move(shape), dtype, std::move(prim), {});
}

}  // namespace io
}  // namespace kiln
