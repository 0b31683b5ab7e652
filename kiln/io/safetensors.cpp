// Hugging Face's .safetensors: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "value"}}, then the raw row-major tensor bytes.
// JSON through nlohmann-json.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "kiln/io/common.h"

namespace kiln {

namespace {

using json = nlohmann::json;

// The safetensors library refuses headers over 100 MB; so does kiln.
constexpr uint64_t kMaxHeader = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";

struct StDtype {
  const char* name;
  Dtype dtype;
};
// F8_E4M3 has no kiln dtype: its bytes load as uint8, as MLX does (from_fp8 converts them).
constexpr StDtype kDtypes[] = {
    {"BOOL", bool_},    {"U8", uint8},    {"I8", int8},     {"U16", uint16},    {"I16", int16},
    {"U32", uint32},    {"I32", int32},   {"U64", uint64},  {"I64", int64},     {"F16", float16},
    {"BF16", bfloat16}, {"F32", float32}, {"F64", float64}, {"C64", complex64}, {"F8_E4M3", uint8}};

const char* st_name(Dtype d) {
  for (const auto& e : kDtypes) {
    if (e.dtype == d) return e.name;
  }
  throw std::invalid_argument(msg("[save_safetensors] Unsupported dtype ", d, "."));
}

}  // namespace

SafetensorsLoad load_safetensors(std::shared_ptr<io::Reader> in, StreamOrDevice s) {
  const std::string where = in->label();
  const size_t size = in->size();
  if (size < 8) {
    io::corrupt(where, " has ", size, " bytes, too few for a safetensors header length.");
  }
  uint64_t n = io::read_value<uint64_t>(*in, 0, "the header length");
  if (n > size - 8 || n > kMaxHeader) {
    io::corrupt("Invalid JSON header length ", n, " in ", where, ": the file has ", size - 8,
                " bytes after it (and headers are at most ", kMaxHeader, ").");
  }
  std::string text(n, '\0');
  if (n) in->read(text.data(), n, 8);
  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    // nlohmann quotes the bytes it stopped at, which need not be text.
    io::corrupt("The header of ", where, " is not valid JSON: ", io::printable(e.what(), 400));
  }
  if (!header.is_object()) io::corrupt("The header of ", where, " is not a JSON object.");

  const size_t data_start = 8 + n;
  const size_t data_size = size - data_start;
  SafetensorsLoad out;
  for (auto& [name, info] : header.items()) {
    const std::string tensor = "tensor '" + io::printable(name) + "'";
    if (name == kMetadataKey) {
      if (info.is_null()) continue;  // MLX writes "__metadata__": null when there is none
      if (!info.is_object()) io::corrupt("The __metadata__ of ", where, " is not a JSON object.");
      for (auto& [k, v] : info.items()) {
        if (!v.is_string()) {
          io::corrupt("Metadata '", io::printable(k), "' of ", where, " is ", v.type_name(),
                      ", not a string.");
        }
        out.second.emplace(k, v.get<std::string>());
      }
      continue;
    }
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
        !info.contains("data_offsets")) {
      io::corrupt(
          "The header entry of ", tensor, " in ", where,
          " needs \"dtype\", \"shape\" and \"data_offsets\": ", io::printable(info.dump(), 200));
    }
    const json& jd = info["dtype"];
    const json& js = info["shape"];
    const json& jo = info["data_offsets"];
    if (!jd.is_string()) io::corrupt("The dtype of ", tensor, " in ", where, " is not a string.");
    std::string dname = jd.get<std::string>();
    auto dt = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                           [&](const StDtype& e) { return dname == e.name; });
    if (dt == std::end(kDtypes)) {
      io::corrupt("Unsupported dtype '", io::printable(dname), "' of ", tensor, " in ", where,
                  "; kiln reads BOOL, U8-U64, I8-I64, F16, BF16, F32, F64, C64 and F8_E4M3.");
    }
    if (!js.is_array()) io::corrupt("The shape of ", tensor, " in ", where, " is not a list.");
    std::vector<int64_t> dims;
    for (const auto& d : js) {
      if (!d.is_number_integer()) {
        io::corrupt("The shape of ", tensor, " in ", where, " holds ", io::printable(d.dump()),
                    ", not an integer.");
      }
      dims.push_back(d.is_number_unsigned() && d.get<uint64_t>() > INT64_MAX ? -1
                                                                             : d.get<int64_t>());
    }
    size_t nbytes =
        io::checked_nbytes(dims, dt->dtype.size, "The shape of " + tensor + " in " + where);
    if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() ||
        !jo[1].is_number_unsigned()) {
      io::corrupt("The data_offsets of ", tensor, " in ", where, " are ", io::printable(jo.dump()),
                  ", not two non-negative integers.");
    }
    uint64_t begin = jo[0].get<uint64_t>(), end = jo[1].get<uint64_t>();
    if (begin > end || end - begin != nbytes) {
      io::corrupt("Tensor '", io::printable(name), "' of ", where, " has invalid data offsets (",
                  begin, ", ", end, "): its ", dt->name, " shape ",
                  shape_str(io::to_shape(dims, where)), " needs ", nbytes, " bytes.");
    }
    if (end > data_size) {
      io::corrupt("Tensor '", io::printable(name), "' of ", where, " has data offsets (", begin,
                  ", ", end, ") beyond the ", data_size,
                  " bytes of data in the file. Perhaps an incomplete download or a corrupt file?");
    }
    out.first.emplace(name, io::lazy_load(in, data_start + begin, io::to_shape(dims, where),
                                          dt->dtype, false, tensor, s));
  }
  return out;
}

SafetensorsLoad load_safetensors(const std::string& file, StreamOrDevice s) {
  return load_safetensors(std::make_shared<io::FileReader>(file), s);
}

void save_safetensors(std::shared_ptr<io::Writer> out,
                      std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata) {
  std::vector<std::pair<std::string, array>> order;
  for (auto& [name, a] : arrays) {
    if (name == kMetadataKey) {
      throw std::invalid_argument(
          "[save_safetensors] The name \"__metadata__\" is reserved for the metadata; rename the "
          "array.");
    }
    st_name(a.dtype());
    order.emplace_back(name, io::contiguous_for_save(a));
  }
  // As the safetensors library: larger items first, then by name, so each tensor starts at a
  // multiple of its item size (the header is padded to 8 bytes).
  std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    if (x.second.itemsize() != y.second.itemsize())
      return x.second.itemsize() > y.second.itemsize();
    return x.first < y.first;
  });
  json header = json::object();
  if (!metadata.empty()) {
    json m = json::object();
    for (auto& [k, v] : metadata) m[k] = v;
    header[kMetadataKey] = std::move(m);
  }
  uint64_t offset = 0;
  for (const auto& [name, a] : order) {
    std::vector<int64_t> shape(a.shape().begin(), a.shape().end());
    header[name] = {{"dtype", st_name(a.dtype())},
                    {"shape", shape},
                    {"data_offsets", {offset, offset + a.nbytes()}}};
    offset += a.nbytes();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {  // e.g. a name or value that is not valid UTF-8
    throw std::invalid_argument(std::string("[save_safetensors] ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string len;
  io::put_le<uint64_t>(len, text.size());
  out->write(len.data(), len.size());
  out->write(text.data(), text.size());
  for (const auto& [name, a] : order) {
    if (a.nbytes()) out->write(a.data<char>(), a.nbytes());
  }
  out->commit();
}

void save_safetensors(std::string file, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata) {
  file = io::with_extension(std::move(file), ".safetensors");
  for (auto& [name, a] : arrays) a = io::contiguous_for_save(a);  // before the file is opened
  save_safetensors(std::make_shared<io::FileWriter>(std::move(file), "save_safetensors"),
                   std::move(arrays), std::move(metadata));
}

}  // namespace kiln
