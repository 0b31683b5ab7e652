// GGUF load and save. Layout (version 2 and 3): "GGUF", u32 version, u64 tensor count,
// u64 metadata count, the metadata (key string, u32 type, value), the tensor infos (name,
// u32 n_dims, u64 dims in GGML order (fastest first), u32 type, u64 offset), padding to the
// alignment (general.alignment, default 32), then the tensor data.
#include <algorithm>
#include <bit>
#include <map>
#include <set>

#include "kiln/io/gguf.h"
#include "kiln/io/load_primitive.h"

namespace kiln {

namespace io::gguf {
namespace {

constexpr uint32_t kDefaultAlignment = 32;
// The GGUF spec allows 4 dimensions today; readers (gguflib, MLX) accept up to 8.
constexpr uint32_t kMaxDims = 8;

// Plain tensor types and their kiln dtypes.
struct Plain {
  uint32_t type;
  Dtype dtype;
};
constexpr Plain kPlain[] = {{F32, float32}, {F16, float16}, {BF16, bfloat16}, {F64, float64},
                            {I8, int8},     {I16, int16},   {I32, int32},     {I64, int64}};

// Metadata scalar types and their kiln dtypes (strings and arrays aside).
struct Meta {
  uint32_t type;
  Dtype dtype;
};
constexpr Meta kMeta[] = {{kU8, uint8},   {kI8, int8},   {kU16, uint16},  {kI16, int16},
                          {kU32, uint32}, {kI32, int32}, {kF32, float32}, {kBool, bool_},
                          {kU64, uint64}, {kI64, int64}, {kF64, float64}};

const Dtype* meta_dtype(uint32_t type) {
  for (const auto& m : kMeta) {
    if (m.type == type) return &m.dtype;
  }
  return nullptr;
}

// Forward reads of the header through a buffer, every read checked against the file size.
class Cursor {
 public:
  explicit Cursor(Reader& in) : in_(in), size_(in.size()) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  void bytes(char* dst, size_t n, const char* what) {
    if (n > remaining()) {
      corrupt("Truncated ", in_.label(), ": ", what, " at byte ", pos_, " needs ", n,
              " bytes but the file has ", size_, ".");
    }
    while (n > 0) {
      if (buf_pos_ == buf_.size()) refill();
      size_t k = std::min(n, buf_.size() - buf_pos_);
      std::memcpy(dst, buf_.data() + buf_pos_, k);
      dst += k;
      n -= k;
      buf_pos_ += k;
      pos_ += k;
    }
  }
  template <typename T>
  T get(const char* what) {
    char b[sizeof(T)];
    bytes(b, sizeof(T), what);
    return read_le<T>(b);
  }
  std::string string(const char* what) {
    uint64_t n = get<uint64_t>(what);
    if (n > remaining()) {
      corrupt("Truncated or corrupt ", in_.label(), ": ", what, " at byte ", pos_ - 8, " claims ",
              n, " bytes but ", remaining(), " remain.");
    }
    std::string s(n, '\0');
    bytes(s.data(), n, what);
    return s;
  }

 private:
  void refill() {
    size_t k = std::min<size_t>(remaining(), size_t(1) << 20);
    buf_.resize(k);
    in_.read(buf_.data(), k, pos_);
    buf_pos_ = 0;
  }

  Reader& in_;
  size_t size_;
  size_t pos_ = 0;
  std::string buf_;
  size_t buf_pos_ = 0;
};

// `n` values of metadata type `type` as a 1-d array (or 0-d when `scalar`).
array read_meta_array(Cursor& c, uint32_t type, uint64_t n, bool scalar, const std::string& key) {
  Dtype d = *meta_dtype(type);
  if (n > c.remaining() / d.size) {
    corrupt("Metadata '", printable(key), "' claims ", n, " values of ", d.size,
            " bytes but the file has ", c.remaining(), " bytes left.");
  }
  if (n > static_cast<uint64_t>(INT32_MAX))
    corrupt("Metadata '", printable(key), "' has ", n, " values.");
  auto storage = Storage::host(n * d.size);
  char* p = static_cast<char*>(storage->host_ptr());
  if (n) c.bytes(p, n * d.size, "a metadata value");
  if (d == bool_) {
    for (uint64_t i = 0; i < n; ++i) p[i] = p[i] != 0;  // GGUF bools are bytes: keep 0/1
  }
  return array(std::move(storage), scalar ? Shape{} : Shape{static_cast<int32_t>(n)}, d);
}

GGUFMetaData read_meta_value(Cursor& c, uint32_t type, const std::string& key) {
  if (type == kString) return c.string("a metadata string");
  if (meta_dtype(type)) return read_meta_array(c, type, 1, true, key);
  if (type != kArray) {
    corrupt("Metadata '", printable(key), "' has unknown value type ", type, ".");
  }
  uint32_t elem = c.get<uint32_t>("a metadata array type");
  uint64_t n = c.get<uint64_t>("a metadata array length");
  if (elem == kString) {
    if (n > c.remaining() / 8) {
      corrupt("Metadata '", printable(key), "' claims ", n, " strings but the file has ",
              c.remaining(), " bytes left.");
    }
    std::vector<std::string> v;
    v.reserve(n);
    for (uint64_t i = 0; i < n; ++i) v.push_back(c.string("a metadata string"));
    return v;
  }
  if (elem == kArray) {
    corrupt("Metadata '", printable(key), "' is an array of arrays, which kiln does not load.");
  }
  if (!meta_dtype(elem)) {
    corrupt("Metadata '", printable(key), "' is an array of unknown value type ", elem, ".");
  }
  return read_meta_array(c, elem, n, false, key);
}

uint32_t meta_type_of(Dtype d) {
  for (const auto& m : kMeta) {
    if (m.dtype == d) return m.type;
  }
  throw std::invalid_argument(msg("[save_gguf] array type ", d, " not supported for metadata."));
}

uint32_t tensor_type_of(Dtype d) {
  for (const auto& p : kPlain) {
    if (p.dtype == d) return p.type;
  }
  throw std::runtime_error(msg("[save_gguf] dtype ", d, " is not supported"));
}

void put_string(std::string& out, const std::string& s) {
  put_le<uint64_t>(out, s.size());
  out += s;
}

}  // namespace
}  // namespace io::gguf

GGUFLoad load_gguf(std::shared_ptr<io::Reader> in, StreamOrDevice s) {
  using namespace io::gguf;
  const std::string where = in->label();
  io::gguf::Cursor c(*in);
  char magic[4];
  c.bytes(magic, 4, "the GGUF magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) io::corrupt(where, " is not a GGUF file (bad magic).");
  uint32_t version = c.get<uint32_t>("the version");
  if (version != 2 && version != 3) {
    if (__builtin_bswap32(version) == 2 || __builtin_bswap32(version) == 3) {
      io::corrupt(where, " is a big-endian GGUF file, which kiln does not read.");
    }
    io::corrupt("Unsupported GGUF version ", version, " in ", where, " (kiln reads 2 and 3).");
  }
  uint64_t n_tensors = c.get<uint64_t>("the tensor count");
  uint64_t n_kv = c.get<uint64_t>("the metadata count");
  // A key-value pair takes at least 13 bytes and a tensor info 24.
  if (n_kv > c.remaining() / 13 || n_tensors > c.remaining() / 24) {
    io::corrupt(where, " claims ", n_tensors, " tensors and ", n_kv,
                " metadata entries, more than its ", in->size(), " bytes can hold.");
  }

  GGUFLoad out;
  uint32_t alignment = kDefaultAlignment;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.string("a metadata key");
    uint32_t type = c.get<uint32_t>("a metadata type");
    GGUFMetaData v = read_meta_value(c, type, key);
    if (key == "general.alignment") {
      auto* a = std::get_if<array>(&v);
      if (!a || type != kU32) io::corrupt("general.alignment of ", where, " is not a uint32.");
      alignment = a->item<uint32_t>();
      if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        io::corrupt("general.alignment of ", where, " is ", alignment, ", not a power of two.");
      }
    }
    if (!out.second.emplace(key, std::move(v)).second) {
      io::corrupt("Metadata key '", io::printable(key), "' appears twice in ", where, ".");
    }
  }

  struct Info {
    std::string name;
    std::vector<int64_t> dims;  // kiln order
    uint32_t type;
    uint64_t offset;
  };
  std::vector<Info> infos;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Info t;
    t.name = c.string("a tensor name");
    uint32_t n_dims = c.get<uint32_t>("a tensor's dimension count");
    if (n_dims > kMaxDims) {
      io::corrupt("Tensor '", io::printable(t.name), "' of ", where, " has ", n_dims,
                  " dimensions; GGUF holds at most ", kMaxDims, ".");
    }
    t.dims.resize(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t v = c.get<uint64_t>("a tensor dimension");
      t.dims[n_dims - 1 - d] = v > static_cast<uint64_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v);
    }
    t.type = c.get<uint32_t>("a tensor type");
    t.offset = c.get<uint64_t>("a tensor offset");
    infos.push_back(std::move(t));
  }
  const size_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
  const size_t size = in->size();
  const size_t data_size = size >= data_start ? size - data_start : 0;

  for (const auto& t : infos) {
    const std::string tensor = "tensor '" + io::printable(t.name) + "'";
    const std::string what = "The shape of " + tensor + " in " + where;
    auto plain = std::find_if(std::begin(kPlain), std::end(kPlain),
                              [&](const Plain& p) { return p.type == t.type; });
    QuantInfo q = quant_info(t.type);
    if (plain == std::end(kPlain) && q.block == 0) {
      io::corrupt("Tensor '", io::printable(t.name), "' of ", where, " has GGML type ",
                  tensor_type_name(t.type), " (", t.type,
                  "), which kiln does not load (it loads F32, F16, BF16, F64, I8, I16, I32, I64, "
                  "Q4_0, Q4_1, Q4_K and Q8_0).");
    }
    size_t nbytes;
    if (plain != std::end(kPlain)) {
      nbytes = io::checked_nbytes(t.dims, plain->dtype.size, what);
    } else {
      size_t numel = io::checked_nbytes(t.dims, 1, what);
      int64_t last = t.dims.empty() ? 1 : t.dims.back();
      if (t.dims.empty() || last % q.block != 0) {
        io::corrupt("Tensor '", io::printable(t.name), "' of ", where, " has type ",
                    tensor_type_name(t.type), " but its last dimension ", last,
                    " is not a multiple of the block size ", q.block, ".");
      }
      nbytes = numel / q.block * q.block_bytes;
    }
    if (t.offset % alignment != 0 || t.offset > data_size || data_size - t.offset < nbytes) {
      io::corrupt("Tensor '", io::printable(t.name), "' of ", where, " has its ", nbytes,
                  " bytes at data offset ", t.offset, ", outside the ", data_size,
                  " bytes of data (or not ", alignment,
                  "-byte aligned). The file is truncated or corrupt.");
    }
    Shape shape = io::to_shape(t.dims, where);
    auto insert = [&](const std::string& name, array a) {
      if (!out.first.emplace(name, std::move(a)).second) {
        io::corrupt("Duplicate tensor name '", io::printable(name), "' in ", where,
                    " (quantized tensors also add <name>.scales and <name>.biases).");
      }
    };
    if (plain != std::end(kPlain)) {
      insert(t.name, io::lazy_load(in, data_start + t.offset, std::move(shape), plain->dtype, false,
                                   tensor, s));
      continue;
    }
    // Quantized: unpacked now into MLX's layout (weights, scales, biases).
    std::string blocks(nbytes, '\0');
    in->read(blocks.data(), nbytes, data_start + t.offset);
    array w(0.0f), sc(0.0f), bi(0.0f);
    unpack_quantized(t.type, blocks.data(), shape, w, sc, bi);
    // MLX's rule: the name less its last 7 characters (".weight") prefixes the others.
    std::string prefix = t.name.size() >= 7 ? t.name.substr(0, t.name.size() - 7) : t.name;
    insert(t.name, w);
    insert(prefix + ".scales", sc);
    insert(prefix + ".biases", bi);
  }
  return out;
}

GGUFLoad load_gguf(const std::string& file, StreamOrDevice s) {
  return load_gguf(io::open_file(file, /*missing_is_invalid=*/true), s);
}

void save_gguf(std::shared_ptr<io::Writer> out, std::unordered_map<std::string, array> arrays,
               std::unordered_map<std::string, GGUFMetaData> metadata) {
  using namespace io::gguf;
  // Checked and evaluated before anything is written.
  std::map<std::string, array> tensors;
  for (auto& [name, a] : arrays) {
    tensor_type_of(a.dtype());
    tensors.emplace(name, io::contiguous_for_save(a));
  }
  std::string kv;
  std::map<std::string, const GGUFMetaData*> keys;
  for (const auto& [k, v] : metadata) keys.emplace(k, &v);
  for (const auto& [key, value] : keys) {
    io::gguf::put_string(kv, key);
    if (auto* str = std::get_if<std::string>(value)) {
      io::put_le<uint32_t>(kv, kString);
      io::gguf::put_string(kv, *str);
    } else if (auto* strs = std::get_if<std::vector<std::string>>(value)) {
      io::put_le<uint32_t>(kv, kArray);
      io::put_le<uint32_t>(kv, kString);
      io::put_le<uint64_t>(kv, strs->size());
      for (const auto& s : *strs) io::gguf::put_string(kv, s);
    } else if (auto* arr = std::get_if<array>(value)) {
      if (arr->ndim() > 1) {
        throw std::runtime_error(msg("[save_gguf] Cannot save metadata '", key, "' of shape ",
                                     shape_str(arr->shape()), ": arrays must be 0-d or 1-d."));
      }
      uint32_t type = meta_type_of(arr->dtype());
      array a = io::contiguous_for_save(*arr);
      if (a.ndim() == 1) {
        io::put_le<uint32_t>(kv, kArray);
        io::put_le<uint32_t>(kv, type);
        io::put_le<uint64_t>(kv, a.size());
      } else {
        io::put_le<uint32_t>(kv, type);
      }
      if (a.nbytes()) kv.append(a.data<char>(), a.nbytes());
    } else {
      throw std::invalid_argument("[save_gguf] Metadata '" + key + "' has no value.");
    }
  }

  std::string head("GGUF", 4);
  io::put_le<uint32_t>(head, 3);
  io::put_le<uint64_t>(head, tensors.size());
  io::put_le<uint64_t>(head, keys.size());
  head += kv;
  uint64_t offset = 0;
  std::vector<uint64_t> offsets;
  for (const auto& [name, a] : tensors) {
    if (a.ndim() > kMaxDims) {
      throw std::invalid_argument(msg("[save_gguf] Array '", name, "' has ", a.ndim(),
                                      " dimensions; GGUF holds at most ", kMaxDims, "."));
    }
    io::gguf::put_string(head, name);
    io::put_le<uint32_t>(head, static_cast<uint32_t>(a.ndim()));
    for (size_t d = a.ndim(); d-- > 0;)
      io::put_le<uint64_t>(head, static_cast<uint64_t>(a.shape()[d]));
    io::put_le<uint32_t>(head, tensor_type_of(a.dtype()));
    io::put_le<uint64_t>(head, offset);
    offsets.push_back(offset);
    offset += (a.nbytes() + kDefaultAlignment - 1) / kDefaultAlignment * kDefaultAlignment;
  }
  head.append((kDefaultAlignment - head.size() % kDefaultAlignment) % kDefaultAlignment, '\0');
  out->write(head.data(), head.size());
  static const char zeros[kDefaultAlignment] = {};
  for (const auto& [name, a] : tensors) {
    if (a.nbytes()) out->write(a.data<char>(), a.nbytes());
    out->write(zeros, (kDefaultAlignment - a.nbytes() % kDefaultAlignment) % kDefaultAlignment);
  }
  out->commit();
}

void save_gguf(std::string file, std::unordered_map<std::string, array> arrays,
               std::unordered_map<std::string, GGUFMetaData> metadata) {
  file = io::with_extension(std::move(file), ".gguf");
  for (auto& [name, a] : arrays) {
    io::gguf::tensor_type_of(a.dtype());
    a = io::contiguous_for_save(a);  // before the file is opened
  }
  save_gguf(std::make_shared<io::FileWriter>(std::move(file), "save_gguf"), std::move(arrays),
            std::move(metadata));
}

}  // namespace kiln
