// export_function / exporter / import_function (see export.h).
//
// File layout (little-endian; "str" is a u64 length and bytes, "shape" a u32 rank and i32
// dimensions, "dtype" a u8 code in Dtype::Val order):
//   header:  "KILNFUNC" | u32 format version | u64 n | n bytes [str kiln version,
//            u8 shapeless, str metadata] | u64 checksum of those n bytes | u32 trace count
//   trace:   u64 n | n bytes body | u64 checksum of the body, once per trace
//   body:    u32 positional count | u32 keyword count | str keyword names (sorted)
//            | inputs: shape, dtype each
//            | constants first stored here: u32 count, then u64 key, shape, dtype, u64 bytes,
//              data (row-major) each
//            | constants used: u32 count, u64 key each (numbered after the inputs)
//            | steps: u32 count, then str codec key, u8 device (0 the default device, 1 cpu,
//              2 gpu), state (u32 count of tagged values), u32 input count, u32 value each,
//              u32 output count, shape and dtype each
//            | outputs: u32 count, u32 value each
// Values are numbered: inputs, constants used, then each step's outputs in order. The
// checksum is 64-bit FNV-1a; the trace count is rewritten after each trace of an exporter.
#include "kiln/export.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kiln/compile.h"
#include "kiln/export_program.h"
#include "kiln/export_state.h"
#include "kiln/ops.h"
#include "kiln/primitives_compile.h"
#include "kiln/utils.h"

namespace kiln {

namespace {

static_assert(std::endian::native == std::endian::little,
              "export files are little-endian; add byte swaps for this platform");

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'F', 'U', 'N', 'C'};
constexpr uint32_t kFormatVersion = 1;

uint64_t fnv1a(const char* data, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

// ---------------------------------------------------------------- encoding

class Bytes {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const char* p = reinterpret_cast<const char*>(&v);
    buf_.append(p, sizeof(T));
  }
  void raw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    buf_.append(s);
  }
  void shape(const Shape& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    for (int32_t d : s) put<int32_t>(d);
  }
  void dtype(Dtype d) { put<uint8_t>(static_cast<uint8_t>(d.val)); }
  void state(const export_detail::State& st) {
    put<uint32_t>(static_cast<uint32_t>(st.size()));
    for (const auto& v : st) {
      put<uint8_t>(static_cast<uint8_t>(v.index()));
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, bool>) {
              put<uint8_t>(x);
            } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
              put<T>(x);
            } else if constexpr (std::is_same_v<T, std::string>) {
              str(x);
            } else if constexpr (std::is_same_v<T, Dtype>) {
              dtype(x);
            } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
              put<uint64_t>(x.size());
              for (int64_t i : x) put<int64_t>(i);
            } else {
              put<uint64_t>(x.size());
              for (const auto& s : x) str(s);
            }
          },
          v);
    }
  }
  const std::string& data() const { return buf_; }
  std::string& data() { return buf_; }

 private:
  std::string buf_;
};

// Reads a buffer, throwing on any read past its end.
class Cursor {
 public:
  Cursor(const char* p, size_t n, std::string file) : p_(p), n_(n), file_(std::move(file)) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  const char* raw(size_t n) {
    need(n);
    const char* p = p_ + pos_;
    pos_ += n;
    return p;
  }
  std::string str() {
    uint64_t n = get<uint64_t>();
    need(n);
    return std::string(raw(n), n);
  }
  uint32_t count(size_t min_bytes_each) {
    uint32_t c = get<uint32_t>();
    if (min_bytes_each && static_cast<uint64_t>(c) * min_bytes_each > n_ - pos_) corrupt("a count");
    return c;
  }
  Shape shape() {
    uint32_t r = count(4);
    Shape s;
    for (uint32_t i = 0; i < r; ++i) {
      int32_t d = get<int32_t>();
      if (d < 0) corrupt("a negative dimension");
      s.push_back(d);
    }
    return s;
  }
  Dtype dtype() {
    uint8_t c = get<uint8_t>();
    if (c >= Dtype::num_types) corrupt("a dtype code");
    return all_dtypes[c];
  }
  export_detail::State state() {
    export_detail::State st;
    uint32_t n = count(1);
    for (uint32_t i = 0; i < n; ++i) {
      switch (get<uint8_t>()) {
        case 0:
          st.emplace_back(get<uint8_t>() != 0);
          break;
        case 1:
          st.emplace_back(get<int64_t>());
          break;
        case 2:
          st.emplace_back(get<double>());
          break;
        case 3:
          st.emplace_back(str());
          break;
        case 4:
          st.emplace_back(dtype());
          break;
        case 5: {
          uint64_t k = get<uint64_t>();
          need(k * 8);
          std::vector<int64_t> v;
          for (uint64_t j = 0; j < k; ++j) v.push_back(get<int64_t>());
          st.emplace_back(std::move(v));
          break;
        }
        case 6: {
          uint64_t k = get<uint64_t>();
          need(k * 8);
          std::vector<std::string> v;
          for (uint64_t j = 0; j < k; ++j) v.push_back(str());
          st.emplace_back(std::move(v));
          break;
        }
        default:
          corrupt("a parameter tag");
      }
    }
    return st;
  }
  bool at_end() const { return pos_ == n_; }
  [[noreturn]] void corrupt(const std::string& what) const {
    throw std::runtime_error(msg("[import_function] ", file_, " is corrupt (", what, " at byte ",
                                 pos_, " of a record)."));
  }

 private:
  void need(uint64_t n) const {
    if (n > n_ - pos_) corrupt("data past the end of a record");
  }
  const char* p_;
  size_t n_;
  size_t pos_ = 0;
  std::string file_;
};

// ---------------------------------------------------------------- streams

uint8_t device_code(const Stream& s, const Stream& default_stream) {
  if (s == default_stream) return 0;
  return s.device.type == Device::cpu ? 1 : 2;
}

Stream stream_of_code(uint8_t code, const std::string& prim, const std::string& path) {
  switch (code) {
    case 0:
      return to_stream(StreamOrDevice{});
    case 1:
      return default_stream(Device::cpu);
    case 2:
      if (!is_available(Device::gpu)) {
        throw std::runtime_error(msg("[import_function] ", path, " runs ", prim,
                                     " on the GPU, which is not available here."));
      }
      return default_stream(Device::gpu);
    default:
      throw std::runtime_error(msg("[import_function] ", path, " is corrupt (device code ",
                                   static_cast<int>(code), ")."));
  }
}

// ---------------------------------------------------------------- traces

struct TraceInputs {
  std::vector<array> arrays;          // positional, then keyword (sorted by name)
  std::vector<std::string> kw_names;  // sorted
  size_t n_args = 0;
};

TraceInputs flatten_inputs(const std::vector<array>& args, const Kwargs& kwargs) {
  TraceInputs t;
  t.arrays = args;
  t.n_args = args.size();
  for (const auto& [k, v] : kwargs) {
    t.kw_names.push_back(k);
    t.arrays.push_back(v);
  }
  return t;
}

ArrayFn flat_function(const KwargsFn& fun, size_t n_args, const std::vector<std::string>& names) {
  return [fun, n_args, names](const std::vector<array>& xs) {
    std::vector<array> args(xs.begin(), xs.begin() + n_args);
    Kwargs kw;
    for (size_t i = 0; i < names.size(); ++i) kw.emplace(names[i], xs[n_args + i]);
    auto outs = fun(args, kw);
    if (outs.empty()) {
      throw std::invalid_argument(
          "[export_function] The function returned no arrays; it must return at least one.");
    }
    return outs;
  };
}

ReplayProgram trace(const KwargsFn& fun, const TraceInputs& in, bool shapeless) {
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& a : in.arrays) {
    shapes.push_back(a.shape());
    dtypes.push_back(a.dtype());
  }
  return export_detail::trace_program(flat_function(fun, in.n_args, in.kw_names), shapes, dtypes,
                                      in.arrays, shapeless);
}

const export_detail::Codec& codec_of(const Primitive& p) {
  const auto* c = export_detail::registry().by_type(p);
  if (!c) {
    throw std::invalid_argument(msg("[export_function] The function uses primitive ", p.name(),
                                    ", which cannot be exported."));
  }
  return *c;
}

export_detail::State state_of(const Primitive& p, const export_detail::Codec& c) {
  export_detail::StateWriter w;
  c.save(p, w);
  return w.take();
}

// The bytes of an evaluated array, row-major.
void append_data(Bytes& b, const array& c) {
  array a = c;
  a.eval();
  if (!a.flags().row_contiguous || a.data_size() != a.size()) {
    a = copy(a);
    a.eval();
  }
  b.put<uint64_t>(a.nbytes());
  if (a.nbytes()) b.raw(a.data<char>(), a.nbytes());
}

}  // namespace

// ---------------------------------------------------------------- writing

namespace detail {

class ExportFile {
 public:
  ExportFile(const std::string& path, bool shapeless, const std::string& metadata)
      : path_(path), shapeless_(shapeless) {
    os_.open(path, std::ios::binary | std::ios::trunc);
    if (!os_) throw std::runtime_error(msg("[export_function] Failed to open ", path, "."));
    Bytes h;
    h.str(KILN_VERSION);
    h.put<uint8_t>(shapeless);
    h.str(metadata);
    Bytes out;
    out.raw(kMagic, sizeof(kMagic));
    out.put<uint32_t>(kFormatVersion);
    out.put<uint64_t>(h.data().size());
    out.raw(h.data().data(), h.data().size());
    out.put<uint64_t>(fnv1a(h.data().data(), h.data().size()));
    count_offset_ = out.data().size();
    out.put<uint32_t>(0);
    write(out.data());
  }

  bool is_open() const { return open_; }
  bool shapeless() const { return shapeless_; }

  void add_trace(const KwargsFn& fun, const std::vector<array>& args, const Kwargs& kwargs) {
    std::lock_guard lk(mu_);
    if (!open_) {
      throw std::runtime_error(
          msg("[export_function] The exporter of ", path_, " is closed; it takes no more traces."));
    }
    TraceInputs in = flatten_inputs(args, kwargs);
    ReplayProgram p = trace(fun, in, shapeless_);
    std::vector<std::pair<array, uint64_t>> added;
    Bytes body = encode(in, p, added);
    Bytes rec;
    rec.put<uint64_t>(body.data().size());
    rec.raw(body.data().data(), body.data().size());
    rec.put<uint64_t>(fnv1a(body.data().data(), body.data().size()));
    os_.seekp(0, std::ios::end);
    write(rec.data());
    ++count_;
    os_.seekp(static_cast<std::streamoff>(count_offset_));
    Bytes c;
    c.put<uint32_t>(count_);
    write(c.data());
    os_.flush();
    if (!os_) throw std::runtime_error(msg("[export_function] Failed to write ", path_, "."));
    for (auto& [a, key] : added) {
      key_of_.emplace(a.id(), key);
      constants_.push_back(std::move(a));
    }
  }

  void close() {
    std::lock_guard lk(mu_);
    if (!open_) return;
    open_ = false;
    os_.close();
    constants_.clear();
    key_of_.clear();
  }

 private:
  void write(const std::string& s) {
    os_.write(s.data(), static_cast<std::streamsize>(s.size()));
    if (!os_) throw std::runtime_error(msg("[export_function] Failed to write ", path_, "."));
  }

  Bytes encode(const TraceInputs& in, const ReplayProgram& p,
               std::vector<std::pair<array, uint64_t>>& added) {
    const Stream def = to_stream(StreamOrDevice{});
    // Codecs first: an unexportable primitive fails before anything is written.
    std::vector<const export_detail::Codec*> codecs;
    for (const auto& st : p.steps) codecs.push_back(&codec_of(*st.prim));

    Bytes b;
    b.put<uint32_t>(static_cast<uint32_t>(in.n_args));
    b.put<uint32_t>(static_cast<uint32_t>(in.kw_names.size()));
    for (const auto& k : in.kw_names) b.str(k);
    for (const auto& a : in.arrays) {
      b.shape(a.shape());
      b.dtype(a.dtype());
    }
    // Constants: stored once per file, by identity (the exporter keeps them alive).
    std::vector<uint64_t> keys;
    std::unordered_map<uintptr_t, uint64_t> fresh_keys;
    for (const auto& c : p.constants) {
      uint64_t key;
      if (auto it = key_of_.find(c.id()); it != key_of_.end()) {
        key = it->second;
      } else if (auto f = fresh_keys.find(c.id()); f != fresh_keys.end()) {
        key = f->second;
      } else {
        key = ++next_key_;
        fresh_keys.emplace(c.id(), key);
        added.emplace_back(c, key);
      }
      keys.push_back(key);
    }
    b.put<uint32_t>(static_cast<uint32_t>(added.size()));
    for (const auto& [c, key] : added) {
      b.put<uint64_t>(key);
      b.shape(c.shape());
      b.dtype(c.dtype());
      append_data(b, c);
    }
    b.put<uint32_t>(static_cast<uint32_t>(keys.size()));
    for (uint64_t k : keys) b.put<uint64_t>(k);
    b.put<uint32_t>(static_cast<uint32_t>(p.steps.size()));
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const auto& st = p.steps[i];
      b.str(codecs[i]->key);
      b.put<uint8_t>(device_code(st.prim->stream(), def));
      b.state(state_of(*st.prim, *codecs[i]));
      b.put<uint32_t>(static_cast<uint32_t>(st.in.size()));
      for (int v : st.in) b.put<uint32_t>(static_cast<uint32_t>(v));
      b.put<uint32_t>(static_cast<uint32_t>(st.shapes.size()));
      for (size_t o = 0; o < st.shapes.size(); ++o) {
        b.shape(st.shapes[o]);
        b.dtype(st.dtypes[o]);
      }
    }
    b.put<uint32_t>(static_cast<uint32_t>(p.outputs.size()));
    for (int v : p.outputs) b.put<uint32_t>(static_cast<uint32_t>(v));
    return b;
  }

  std::mutex mu_;
  std::string path_;
  bool shapeless_;
  std::ofstream os_;
  size_t count_offset_ = 0;
  uint32_t count_ = 0;
  bool open_ = true;
  uint64_t next_key_ = 0;
  // Constants already in the file, by array identity; kept alive so identities stay unique.
  std::vector<array> constants_;
  std::unordered_map<uintptr_t, uint64_t> key_of_;
};

std::shared_ptr<ExportFile> open_export_file(const std::string& path, bool shapeless,
                                             const std::string& metadata) {
  return std::make_shared<ExportFile>(path, shapeless, metadata);
}
void add_trace(ExportFile& file, const KwargsFn& fun, const std::vector<array>& args,
               const Kwargs& kwargs) {
  file.add_trace(fun, args, kwargs);
}
void close_export_file(ExportFile& file) {
  file.close();
}

}  // namespace detail

void export_function(const std::string& path, const KwargsFn& fun, const std::vector<array>& args,
                     const Kwargs& kwargs, bool shapeless, const std::string& metadata) {
  if (!fun) throw std::invalid_argument("[export_function] Cannot export an empty function.");
  detail::ExportFile f(path, shapeless, metadata);
  try {
    f.add_trace(fun, args, kwargs);
  } catch (...) {
    f.close();
    std::remove(path.c_str());  // no half-written file
    throw;
  }
  f.close();
}

void export_function(const std::string& path, const ArrayFn& fun, const std::vector<array>& args,
                     bool shapeless, const std::string& metadata) {
  if (!fun) throw std::invalid_argument("[export_function] Cannot export an empty function.");
  export_function(
      path, [fun](const std::vector<array>& a, const Kwargs&) { return fun(a); }, args, {},
      shapeless, metadata);
}

void export_function(const ExportCallback& callback, const KwargsFn& fun,
                     const std::vector<array>& args, const Kwargs& kwargs, bool shapeless) {
  if (!callback) throw std::invalid_argument("[export_function] The callback is empty.");
  if (!fun) throw std::invalid_argument("[export_function] Cannot export an empty function.");
  TraceInputs in = flatten_inputs(args, kwargs);
  ReplayProgram p = trace(fun, in, shapeless);
  const int n_in = static_cast<int>(in.arrays.size());
  const int n_const = static_cast<int>(p.constants.size());
  auto name = [&](int v) {
    if (v < n_in) return msg("input_", v);
    if (v < n_in + n_const) return msg("constant_", v - n_in);
    return msg("value_", v);
  };
  ExportCallbackInput e;
  e.type = "inputs";
  for (int i = 0; i < n_in; ++i)
    e.arrays.emplace_back(name(i), in.arrays[i].shape(), in.arrays[i].dtype());
  callback(e);
  e = {};
  e.type = "keyword_inputs";
  for (size_t i = 0; i < in.kw_names.size(); ++i)
    e.keywords.emplace_back(in.kw_names[i], name(static_cast<int>(in.n_args + i)));
  callback(e);
  e = {};
  e.type = "constants";
  for (int i = 0; i < n_const; ++i) e.constants.emplace_back(name(n_in + i), p.constants[i]);
  callback(e);
  int next = n_in + n_const;
  for (const auto& st : p.steps) {
    const auto& codec = codec_of(*st.prim);
    auto [prim_name, state] = export_detail::callback_view(*st.prim, state_of(*st.prim, codec));
    e = {};
    e.type = "primitive";
    e.name = prim_name;
    for (auto& v : state) e.arguments.push_back(std::move(v));
    for (int v : st.in) e.inputs.push_back(name(v));
    for (size_t o = 0; o < st.shapes.size(); ++o) e.outputs.push_back(name(next++));
    callback(e);
  }
  e = {};
  e.type = "outputs";
  for (int v : p.outputs) {
    Shape s;
    Dtype d = float32;
    if (v < n_in) {
      s = in.arrays[v].shape();
      d = in.arrays[v].dtype();
    } else {
      std::tie(s, d) = p.value_info(v);
    }
    e.arrays.emplace_back(name(v), s, d);
  }
  callback(e);
}

FunctionExporter::FunctionExporter(const std::string& path, KwargsFn fun, bool shapeless,
                                   const std::string& metadata)
    : file_(std::make_shared<detail::ExportFile>(path, shapeless, metadata)), fun_(std::move(fun)) {
  if (!fun_) throw std::invalid_argument("[export_function] Cannot export an empty function.");
}

void FunctionExporter::operator()(const std::vector<array>& args) {
  (*this)(args, {});
}
void FunctionExporter::operator()(const Kwargs& kwargs) {
  (*this)({}, kwargs);
}
void FunctionExporter::operator()(const std::vector<array>& args, const Kwargs& kwargs) {
  file_->add_trace(fun_, args, kwargs);
}
void FunctionExporter::close() {
  file_->close();
}

FunctionExporter exporter(const std::string& path, KwargsFn fun, bool shapeless,
                          const std::string& metadata) {
  return FunctionExporter(path, std::move(fun), shapeless, metadata);
}

// ---------------------------------------------------------------- reading

namespace detail {

struct ImportedTrace {
  size_t n_args = 0;
  std::vector<std::string> kw_names;
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  std::shared_ptr<const ReplayProgram> program;
};

struct ImportedTraces {
  std::string path;
  std::string metadata;
  bool shapeless = false;
  std::vector<ImportedTrace> traces;
};

}  // namespace detail

namespace {

class FileReader {
 public:
  explicit FileReader(const std::string& path) : path_(path) {
    is_.open(path, std::ios::binary);
    if (!is_) throw std::runtime_error(msg("[import_function] Failed to open ", path, "."));
    is_.seekg(0, std::ios::end);
    size_ = static_cast<uint64_t>(is_.tellg());
    is_.seekg(0);
  }
  std::string read(uint64_t n, const char* what) {
    if (n > size_ - pos_) {
      throw std::runtime_error(msg("[import_function] ", path_, " is truncated (", what, " needs ",
                                   n, " bytes at byte ", pos_, " of ", size_, ")."));
    }
    std::string s(n, '\0');
    is_.read(s.data(), static_cast<std::streamsize>(n));
    if (!is_) throw std::runtime_error(msg("[import_function] Failed to read ", path_, "."));
    pos_ += n;
    return s;
  }
  template <typename T>
  T get(const char* what) {
    std::string s = read(sizeof(T), what);
    T v;
    std::memcpy(&v, s.data(), sizeof(T));
    return v;
  }
  // A length-prefixed block followed by its checksum.
  std::string block(const char* what) {
    uint64_t n = get<uint64_t>(what);
    std::string b = read(n, what);
    uint64_t sum = get<uint64_t>(what);
    if (sum != fnv1a(b.data(), b.size())) {
      throw std::runtime_error(
          msg("[import_function] ", path_, " is corrupt (the checksum of ", what, " differs)."));
    }
    return b;
  }
  bool at_end() const { return pos_ == size_; }
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  std::ifstream is_;
  uint64_t size_ = 0, pos_ = 0;
};

detail::ImportedTrace decode_trace(const std::string& body, const std::string& path, bool shapeless,
                                   std::unordered_map<uint64_t, array>& constants) {
  Cursor c(body.data(), body.size(), path);
  detail::ImportedTrace t;
  t.n_args = c.count(0);
  uint32_t n_kw = c.count(8);
  for (uint32_t i = 0; i < n_kw; ++i) t.kw_names.push_back(c.str());
  const size_t n_in = t.n_args + n_kw;
  for (size_t i = 0; i < n_in; ++i) {
    t.shapes.push_back(c.shape());
    t.dtypes.push_back(c.dtype());
  }
  uint32_t n_new = c.count(8);
  for (uint32_t i = 0; i < n_new; ++i) {
    uint64_t key = c.get<uint64_t>();
    Shape shape = c.shape();
    Dtype dtype = c.dtype();
    uint64_t nbytes = c.get<uint64_t>();
    uint64_t expect = dtype.size;
    for (int32_t d : shape) {
      if (d && expect > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
        c.corrupt("a constant's size");
      expect *= static_cast<uint64_t>(d);
    }
    if (nbytes != expect) c.corrupt("a constant's size");
    const char* data = c.raw(nbytes);
    auto storage = Storage::host(nbytes);
    if (nbytes) std::memcpy(storage->host_ptr(), data, nbytes);
    constants.insert_or_assign(key, array(std::move(storage), std::move(shape), dtype));
  }
  auto program = std::make_shared<ReplayProgram>();
  program->num_inputs = static_cast<int>(n_in);
  program->shapeless = shapeless;
  uint32_t n_used = c.count(8);
  for (uint32_t i = 0; i < n_used; ++i) {
    auto it = constants.find(c.get<uint64_t>());
    if (it == constants.end()) c.corrupt("a constant that was never stored");
    program->constants.push_back(it->second);
  }
  size_t n_values = n_in + n_used;
  // Shapes and dtypes of the values so far (for primitives rebuilt through their op).
  std::vector<Shape> value_shapes = t.shapes;
  std::vector<Dtype> value_dtypes = t.dtypes;
  for (const auto& k : program->constants) {
    value_shapes.push_back(k.shape());
    value_dtypes.push_back(k.dtype());
  }
  uint32_t n_steps = c.count(8);
  for (uint32_t i = 0; i < n_steps; ++i) {
    std::string key = c.str();
    uint8_t device = c.get<uint8_t>();
    export_detail::State state = c.state();
    const auto* codec = export_detail::registry().by_key(key);
    if (!codec) {
      throw std::invalid_argument(msg("[import_function] ", path, " uses primitive ", key,
                                      ", which this kiln (", KILN_VERSION, ") does not have."));
    }
    const Stream stream = stream_of_code(device, key, path);
    ReplayProgram::Step st{nullptr, {}, {}, {}};
    std::vector<Shape> in_shapes;
    std::vector<Dtype> in_dtypes;
    uint32_t n_args = c.count(4);
    for (uint32_t j = 0; j < n_args; ++j) {
      uint32_t v = c.get<uint32_t>();
      if (v >= n_values) c.corrupt("a step input that is not yet computed");
      st.in.push_back(static_cast<int>(v));
      in_shapes.push_back(value_shapes[v]);
      in_dtypes.push_back(value_dtypes[v]);
    }
    uint32_t n_out = c.count(5);
    if (n_out == 0) c.corrupt("a step without outputs");
    for (uint32_t j = 0; j < n_out; ++j) {
      st.shapes.push_back(c.shape());
      st.dtypes.push_back(c.dtype());
      value_shapes.push_back(st.shapes.back());
      value_dtypes.push_back(st.dtypes.back());
    }
    export_detail::StateReader reader(state, key);
    st.prim = codec->load ? codec->load(reader, stream)
                          : codec->load_inputs(reader, stream, in_shapes, in_dtypes);
    reader.done();
    n_values += n_out;
    program->steps.push_back(std::move(st));
  }
  uint32_t n_out = c.count(4);
  if (n_out == 0) c.corrupt("a function without outputs");
  for (uint32_t j = 0; j < n_out; ++j) {
    uint32_t v = c.get<uint32_t>();
    if (v >= n_values) c.corrupt("an output that is never computed");
    program->outputs.push_back(static_cast<int>(v));
  }
  if (!c.at_end()) c.corrupt("trailing bytes");
  t.program = std::move(program);
  return t;
}

std::string describe(const std::vector<Shape>& shapes, const std::vector<Dtype>& dtypes,
                     size_t n_args, const std::vector<std::string>& kw_names) {
  std::ostringstream os;
  for (size_t i = 0; i < shapes.size(); ++i) {
    os << "\n   ";
    if (i < n_args)
      os << i + 1;
    else
      os << '"' << kw_names[i - n_args] << '"';
    os << ": " << shape_str(shapes[i]) << " " << dtype_name(dtypes[i]);
  }
  return os.str();
}

}  // namespace

ImportedFunction import_function(const std::string& path) {
  FileReader r(path);
  const size_t head = std::min<uint64_t>(sizeof(kMagic), r.size());
  std::string magic = r.read(head, "the header");
  if (std::memcmp(magic.data(), kMagic, head) != 0 || head == 0) {
    throw std::runtime_error(msg("[import_function] ", path,
                                 " is not a function exported by kiln (no KILNFUNC header)."));
  }
  if (head < sizeof(kMagic)) {
    throw std::runtime_error(
        msg("[import_function] ", path, " is truncated (", head, " bytes: less than its header)."));
  }
  uint32_t version = r.get<uint32_t>("the header");
  if (version != kFormatVersion) {
    throw std::runtime_error(msg("[import_function] ", path, " has export format version ", version,
                                 "; this kiln (", KILN_VERSION, ") reads version ", kFormatVersion,
                                 "."));
  }
  auto traces = std::make_shared<detail::ImportedTraces>();
  traces->path = path;
  {
    std::string h = r.block("the header");
    Cursor c(h.data(), h.size(), path);
    c.str();  // the kiln version that wrote it (informational)
    traces->shapeless = c.get<uint8_t>() != 0;
    traces->metadata = c.str();
    if (!c.at_end()) c.corrupt("trailing header bytes");
  }
  uint32_t count = r.get<uint32_t>("the trace count");
  if (count == 0) {
    throw std::runtime_error(msg("[import_function] ", path, " holds no traced function."));
  }
  std::unordered_map<uint64_t, array> constants;
  for (uint32_t i = 0; i < count; ++i) {
    std::string body = r.block("a trace");
    traces->traces.push_back(decode_trace(body, path, traces->shapeless, constants));
  }
  if (!r.at_end()) {
    throw std::runtime_error(
        msg("[import_function] ", path, " is corrupt (bytes after its ", count, " traces)."));
  }
  return ImportedFunction(std::move(traces));
}

ImportedFunction::ImportedFunction(std::shared_ptr<const detail::ImportedTraces> traces)
    : traces_(std::move(traces)) {}

std::vector<array> ImportedFunction::operator()(const std::vector<array>& args) const {
  return (*this)(args, {});
}
std::vector<array> ImportedFunction::operator()(const Kwargs& kwargs) const {
  return (*this)({}, kwargs);
}

std::vector<array> ImportedFunction::operator()(const std::vector<array>& args,
                                                const Kwargs& kwargs) const {
  TraceInputs in = flatten_inputs(args, kwargs);
  const bool shapeless = traces_->shapeless;
  for (const auto& t : traces_->traces) {
    if (t.n_args != in.n_args || t.kw_names != in.kw_names) continue;
    bool match = true;
    for (size_t i = 0; match && i < in.arrays.size(); ++i) {
      const array& a = in.arrays[i];
      match = a.dtype() == t.dtypes[i] &&
              (shapeless ? a.ndim() == t.shapes[i].size() : a.shape() == t.shapes[i]);
    }
    if (match) return t.program->build(in.arrays);
  }
  std::ostringstream os;
  os << "[import_function] No function in " << traces_->path
     << " matches the given positional and keyword arguments. It has:";
  int k = 0;
  for (const auto& t : traces_->traces) {
    os << "\n " << ++k << ". Function with " << t.n_args << " positional inputs and "
       << t.kw_names.size()
       << " keyword inputs:" << describe(t.shapes, t.dtypes, t.n_args, t.kw_names);
  }
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& a : in.arrays) {
    shapes.push_back(a.shape());
    dtypes.push_back(a.dtype());
  }
  os << "\nCalled with " << in.n_args << " positional inputs and " << in.kw_names.size()
     << " keyword inputs:" << describe(shapes, dtypes, in.n_args, in.kw_names);
  if (shapeless) os << "\n(shapeless: ranks and dtypes must match)";
  throw std::invalid_argument(os.str());
}

const std::string& ImportedFunction::metadata() const {
  return traces_->metadata;
}
size_t ImportedFunction::num_traces() const {
  return traces_->traces.size();
}
bool ImportedFunction::shapeless() const {
  return traces_->shapeless;
}

}  // namespace kiln
