// NumPy's .npz: a zip archive of .npy members (numpy.savez / savez_compressed / load).
#include <set>

#include "kiln/io/npy.h"
#include "kiln/io/zip.h"

namespace kiln {

std::unordered_map<std::string, array> load_npz(std::shared_ptr<io::Reader> in, StreamOrDevice s) {
  std::unordered_map<std::string, array> out;
  for (auto& entry : io::read_zip_directory(*in)) {
    std::string key = entry.name;
    if (io::ends_with(key, ".npy")) key.resize(key.size() - 4);
    auto member = std::make_shared<io::ZipEntryReader>(in, entry);
    io::NpyHeader h = io::read_npy_header(*member);
    if (h.nbytes > member->size() - h.data_offset) {
      io::corrupt("The array of ", member->label(), " needs ", h.nbytes, " bytes after its ",
                  h.data_offset, "-byte header but the member has ", member->size(), ".");
    }
    std::vector<int64_t> dims = h.shape;
    if (h.fortran_order) std::reverse(dims.begin(), dims.end());
    Shape shape = io::to_shape(dims, member->label());
    // Straight into the array's own buffer; the member's CRC is checked before it is used.
    auto storage = Storage::host(h.nbytes);
    if (h.nbytes > 0) {
      member->read(static_cast<char*>(storage->host_ptr()), h.nbytes, h.data_offset);
    }
    member->finish();
    if (h.big_endian)
      io::swap_endianness(static_cast<char*>(storage->host_ptr()), h.nbytes, h.dtype);
    // The first of duplicate names wins, as with MLX.
    out.emplace(key, io::npy_array(h, array(std::move(storage), std::move(shape), h.dtype), s));
  }
  return out;
}

std::unordered_map<std::string, array> load_npz(std::string file, StreamOrDevice s) {
  return load_npz(io::open_file(std::move(file), /*missing_is_invalid=*/true), s);
}

namespace {
std::vector<std::pair<std::string, array>> prepared(
    const std::vector<std::pair<std::string, array>>& arrays) {
  std::set<std::string> seen;
  std::vector<std::pair<std::string, array>> out;
  for (const auto& [name, a] : arrays) {
    if (!seen.insert(name).second) {
      throw std::invalid_argument("[savez] The name '" + name + "' is used twice.");
    }
    out.emplace_back(name, io::contiguous_for_save(a, /*allow_col=*/true));
  }
  return out;
}
}  // namespace

void savez(std::shared_ptr<io::Writer> out,
           const std::vector<std::pair<std::string, array>>& arrays, bool compressed) {
  auto ready = prepared(arrays);
  io::ZipWriter zip(*out, "savez");
  for (const auto& [name, a] : ready) {
    std::string header = io::npy_header(a, !a.flags().row_contiguous);
    std::string_view data(a.nbytes() ? a.data<char>() : "", a.nbytes());
    zip.add(name + ".npy", {header, data}, compressed);
  }
  zip.finish();
  out->commit();
}

void savez(std::string file, const std::vector<std::pair<std::string, array>>& arrays,
           bool compressed) {
  file = io::with_extension(std::move(file), ".npz");
  auto ready = prepared(arrays);  // evaluated before the file is opened
  savez(std::make_shared<io::FileWriter>(std::move(file), "savez"), ready, compressed);
}

}  // namespace kiln
